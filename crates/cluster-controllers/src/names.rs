//! Names this pod reads and writes. One definition each (those the installer shares come from
//! `capi-openshift`); the manifests in `manifests/` and the README use the same values.

/// Where the Cluster API objects of the OpenShift cluster live (InfraCluster, Cluster, kubeconfig and
/// user-data Secrets), and where this pod runs.
pub const CAPI_NAMESPACE: &str = capi_manifests::TARGET_NAMESPACE;
/// The Machine API namespace: control-plane Machines, the ControlPlaneMachineSet and the source of the
/// worker user data.
pub(crate) const MAPI_NAMESPACE: &str = "openshift-machine-api";
/// Where the vSphere credentials of the cluster are kept.
pub(crate) const KUBE_SYSTEM_NAMESPACE: &str = "kube-system";

pub(crate) use capi_openshift::{CLUSTER_OPERATOR_NAME, INFRASTRUCTURE_NAME, MANAGED_BY_LABEL};

/// Objects this pod creates carry [`MANAGED_BY_LABEL`] with this value (the installer uses the same key
/// with its own value): it is what "ours" means for every object except the InfraCluster (see
/// [`MANAGED_BY_ANNOTATION`]).
pub(crate) const OWNERSHIP_LABEL_VALUE: &str = "capi-controllers";

/// Cluster API's "externally managed" marker: a provider leaves an InfraCluster carrying it alone. Its
/// value says who manages it; ours is the reference's value, so an InfraCluster created by the
/// reference implementation keeps being managed after a switch to this one.
pub(crate) const MANAGED_BY_ANNOTATION: &str = "cluster.x-k8s.io/managed-by";
pub(crate) const MANAGED_BY_VALUE: &str = "cluster-capi-operator-infracluster-controller";

/// Label Cluster API uses to tie a Secret to its Cluster.
pub(crate) const CLUSTER_NAME_LABEL: &str = "cluster.x-k8s.io/cluster-name";

/// The user data the Machine API's worker machines boot with, mirrored for Cluster API's machines.
pub(crate) const USER_DATA_SECRET: &str = "worker-user-data";

/// The ServiceAccount whose tokens the kubeconfig Secret carries (its RBAC is what Cluster API may do
/// in the cluster through that kubeconfig; see `manifests/`).
pub(crate) const KUBECONFIG_SERVICE_ACCOUNT: &str = "capi-controllers-kubeconfig";
/// When the kubeconfig Secret's token was issued (RFC 3339); the reference's annotation key.
pub(crate) const TOKEN_REFRESH_ANNOTATION: &str = "cluster-api.openshift.io/last-token-refresh";

/// Lease of the pod's leader election.
pub const LEASE: &str = "capi-controllers-leader";

/// Every request of this pod carries this user agent: the audit log tells its writes apart by it.
pub fn user_agent() -> String {
    format!("capi-controllers/{}", env!("CARGO_PKG_VERSION"))
}
