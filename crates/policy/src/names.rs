//! The names of the installer's own objects in the cluster that the bundle policy protects, one
//! definition each (the installer library uses them from here).

/// One ConfigMap in the installer's namespace, one key per provider source: what was applied, and the
/// provider's record.
pub const INVENTORY_CONFIGMAP: &str = "capi-installer-inventory";
/// The installer's Deployment (the reference's name): applied by the deployer, protected by the bundle
/// policy.
pub const DEPLOYMENT: &str = "capi-installer";

/// The prefix of the ServiceAccounts, in the installer's namespace, whose identities the installer's
/// writes of each provider impersonate: `capi-provider-<cluster.x-k8s.io/provider value>`.
pub const PROVIDER_IDENTITY_PREFIX: &str = "capi-provider-";

/// The ServiceAccount that provider `label` (its `cluster.x-k8s.io/provider` value, e.g.
/// `infrastructure-aws`) is written as.
pub fn provider_identity(label: &str) -> String {
    format!("{PROVIDER_IDENTITY_PREFIX}{label}")
}

/// The user name of [`provider_identity`] in `namespace` (the installer's), as the API server
/// authenticates a ServiceAccount.
pub fn provider_user(namespace: &str, label: &str) -> String {
    format!(
        "system:serviceaccount:{namespace}:{}",
        provider_identity(label)
    )
}
