// Package aws names the one ROSA type the AWS provider's non-ROSA code refers to.
package aws

// Creator is the AWS identity that creates a ROSA cluster.
type Creator struct {
	ARN       string
	AccountID string
	IsSTS     bool
}
