//! The names of the installer's own objects in the cluster that the bundle policy protects, one
//! definition each (the installer library uses them from here).

/// One ConfigMap in the installer's namespace, one key per provider source: what was applied, and the
/// provider's record.
pub const INVENTORY_CONFIGMAP: &str = "capi-installer-inventory";
/// The installer's Deployment (the reference's name): applied by the deployer, protected by the bundle
/// policy.
pub const DEPLOYMENT: &str = "capi-installer";
