// Stands in for github.com/openshift/rosa, which the Go module proxy does not serve: the AWS
// provider's controllers package links its ROSA reconciler, which names these types. Nothing here
// works; every call fails, and ../main.go refuses the ROSA feature gate, so none is ever made.
module github.com/openshift/rosa

go 1.24.0

require (
	github.com/openshift-online/ocm-sdk-go v0.1.476
	github.com/sirupsen/logrus v1.9.3
)
