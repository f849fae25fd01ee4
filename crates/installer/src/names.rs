//! The names the installer uses in the cluster, one definition each. The leader election Lease is the
//! bundle policy's to protect ([`crate::policy::LEADER_LEASE`]).

pub const FIELD_MANAGER: &str = "capi-installer";
/// "Ours": the value of [`capi_openshift::MANAGED_BY_LABEL`] the apply engine stamps on every object the
/// installer applies (see the README on ownership). Which provider an object belongs to is the separate
/// `cluster.x-k8s.io/provider` label.
pub(crate) const OWNERSHIP_LABEL_VALUE: &str = "capi-installer";
/// The inventory ConfigMap (see [`crate::inventory`]): the bundle policy protects it, so it is defined
/// beside it.
pub use capi_bundle::names::INVENTORY_CONFIGMAP;

/// What "ours" means for the installer's apply engine: the ownership label, the managers whose
/// objects may be adopted, those it replaces for good (`retired`: the reference's, with
/// `--take-over-reference`), and one owner per object (the provider named by
/// `cluster.x-k8s.io/provider`). A reconcile and `diff` decide alike.
pub fn ownership(adoptable_managers: &[String], retired: &[String]) -> capi_apply::OwnershipPolicy {
    capi_apply::OwnershipPolicy::new(capi_openshift::MANAGED_BY_LABEL, OWNERSHIP_LABEL_VALUE)
        .adoptable(adoptable_managers.iter().cloned())
        .retire(retired.iter().cloned())
        .owner_label(capi_manifests::customize::LABEL_CLUSTERCTL_PROVIDER)
}

/// From now on source `id`'s writes are provider `label`'s identity's, ServiceAccount
/// [`capi_bundle::names::provider_identity`] of `installer_namespace`. A reconcile and `diff` write
/// (or dry-run) alike.
pub fn act_as(
    identities: &capi_apply::Identities,
    installer_namespace: &str,
    id: &crate::source::SourceId,
    label: &str,
) {
    identities.assign(
        &id.inventory_key(),
        &capi_bundle::names::provider_user(installer_namespace, label),
    );
}

/// The user agent of every request: the audit log tells the installer's writes apart by it.
pub fn user_agent() -> String {
    format!("capi-installer/{}", env!("CARGO_PKG_VERSION"))
}

/// The Service in front of the controllers pod's admission webhooks (in the providers' namespace,
/// `0000_31_capi-controllers_03_webhook.yaml`), and its port.
pub(crate) const WEBHOOK_SERVICE: &str = "capi-controllers-webhook";
pub(crate) const WEBHOOK_PORT: u16 = 443;
