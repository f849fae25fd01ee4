// Package ocm has the shape of ROSA's OCM client as the AWS provider calls it; every call fails.
package ocm

import (
	"errors"

	v1 "github.com/openshift-online/ocm-sdk-go/clustersmgmt/v1"
	"github.com/sirupsen/logrus"

	"github.com/openshift/rosa/pkg/aws"
	"github.com/openshift/rosa/pkg/config"
)

// ErrNotBuilt is what every call returns.
var ErrNotBuilt = errors.New("ROSA is not built into this manager (github.com/openshift/rosa is not served by the Go module proxy)")

const Production = "production"

var URLAliases = map[string]string{Production: "https://api.openshift.com"}

// Spec is a ROSA cluster's specification (no field is read here).
type Spec struct{}

type Client struct{}

type ClientBuilder struct{}

func NewClient() *ClientBuilder                                        { return &ClientBuilder{} }
func (b *ClientBuilder) Logger(*logrus.Logger) *ClientBuilder          { return b }
func (b *ClientBuilder) Config(*config.Config) *ClientBuilder          { return b }
func (b *ClientBuilder) Build() (*Client, error)                       { return nil, ErrNotBuilt }
func GetRawVersionId(id string) string                                 { return id }
func (c *Client) AckVersionGate(string, string) error                  { return ErrNotBuilt }
func (c *Client) AddHTPasswdUser(string, string, string, string) error { return ErrNotBuilt }
func (c *Client) CreateNodePool(string, *v1.NodePool) (*v1.NodePool, error) {
	return nil, ErrNotBuilt
}
func (c *Client) CreateIdentityProvider(string, *v1.IdentityProvider) (*v1.IdentityProvider, error) {
	return nil, ErrNotBuilt
}
func (c *Client) CreateCluster(Spec) (*v1.Cluster, error)               { return nil, ErrNotBuilt }
func (c *Client) CreateUser(string, string, *v1.User) (*v1.User, error) { return nil, ErrNotBuilt }
func (c *Client) DeleteCluster(string, bool, *aws.Creator) (*v1.Cluster, error) {
	return nil, ErrNotBuilt
}
func (c *Client) DeleteNodePool(string, string) error                  { return ErrNotBuilt }
func (c *Client) DeleteUser(string, string, string) error              { return ErrNotBuilt }
func (c *Client) GetCluster(string, *aws.Creator) (*v1.Cluster, error) { return nil, ErrNotBuilt }
func (c *Client) GetControlPlaneUpgradePolicies(string) ([]*v1.ControlPlaneUpgradePolicy, error) {
	return nil, ErrNotBuilt
}
func (c *Client) GetHTPasswdUserList(string, string) (*v1.HTPasswdUserList, error) {
	return nil, ErrNotBuilt
}
func (c *Client) GetHypershiftNodePoolUpgrade(string, string, string) (*v1.NodePool, *v1.NodePoolUpgradePolicy, error) {
	return nil, nil, ErrNotBuilt
}
func (c *Client) GetIdentityProviders(string) ([]*v1.IdentityProvider, error) {
	return nil, ErrNotBuilt
}
func (c *Client) GetMissingGateAgreementsHypershift(string, *v1.ControlPlaneUpgradePolicy) ([]*v1.VersionGate, error) {
	return nil, ErrNotBuilt
}
func (c *Client) GetNodePool(string, string) (*v1.NodePool, bool, error) {
	return nil, false, ErrNotBuilt
}
func (c *Client) GetNodePools(string) ([]*v1.NodePool, error) { return nil, ErrNotBuilt }
func (c *Client) GetPolicies(string) (map[string]*v1.AWSSTSPolicy, error) {
	return nil, ErrNotBuilt
}
func (c *Client) GetUser(string, string, string) (*v1.User, error) { return nil, ErrNotBuilt }
func (c *Client) ScheduleHypershiftControlPlaneUpgrade(string, *v1.ControlPlaneUpgradePolicy) (*v1.ControlPlaneUpgradePolicy, error) {
	return nil, ErrNotBuilt
}
func (c *Client) ScheduleNodePoolUpgrade(string, string, *v1.NodePoolUpgradePolicy) (*v1.NodePoolUpgradePolicy, error) {
	return nil, ErrNotBuilt
}
func (c *Client) UpdateNodePool(string, *v1.NodePool) (*v1.NodePool, error) { return nil, ErrNotBuilt }
func (c *Client) UpdateCluster(string, *aws.Creator, Spec) error            { return ErrNotBuilt }
func (c *Client) ValidateHypershiftVersion(string, string) (bool, error)    { return false, ErrNotBuilt }
func (c *Client) GetConnectionURL() string                                  { return "" }
