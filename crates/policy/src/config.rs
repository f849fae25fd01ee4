//! What the policy allows beyond its defaults ([`PolicyConfig`]): the namespace, the RBAC ceiling and
//! field bound, what an administrator added.

use std::collections::BTreeSet;

use super::report::in_family;
use super::{Ceiling, FieldBound, Protected};

/// The installer's leader-election Lease (also covered by the `capi-installer` name prefix).
pub const LEADER_LEASE: &str = "capi-installer-leader";

/// What the policy allows beyond its defaults. Explicit and empty by default: every real provider
/// bundle passes without any of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyConfig {
    /// The installer's namespace: the only one for namespaced objects, binding subjects and webhook
    /// Services.
    pub namespace: String,
    /// API groups, beyond `cluster.x-k8s.io` and its subdomains, that CRDs, `*`-resource RBAC rules and
    /// admission rules may use.
    pub extra_groups: BTreeSet<String>,
    /// Roles outside the bundle that a binding may reference: (`ClusterRole` | `Role`, name).
    pub extra_roles: BTreeSet<(String, String)>,
    pub protected: Protected,
    /// What a bundle's roles may grant (the release's, plus what the administrator added).
    pub ceiling: Ceiling,
    /// The fields and sensitive values a bundle's objects may have (the release's, plus what the
    /// administrator added).
    pub fields: FieldBound,
    /// `false` judges nothing: tests only, to show what the API server refuses on its own (each
    /// provider's identity, docs/design/ownership.md). No flag or setting of the installer sets it.
    pub enforce: bool,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        PolicyConfig::installer(capi_manifests::TARGET_NAMESPACE)
    }
}

impl PolicyConfig {
    pub fn new(namespace: impl Into<String>, protected: Protected) -> Self {
        PolicyConfig {
            namespace: namespace.into(),
            extra_groups: BTreeSet::new(),
            extra_roles: BTreeSet::new(),
            protected,
            ceiling: Ceiling::release(),
            fields: FieldBound::release(),
            enforce: true,
        }
    }

    /// This policy for provider `label` (its `cluster.x-k8s.io/provider` value): its own RBAC ceiling
    /// ([`Ceiling::of`]), not every provider's.
    pub fn for_provider(&self, label: &str) -> PolicyConfig {
        PolicyConfig {
            ceiling: self.ceiling.of(label),
            ..self.clone()
        }
    }

    /// The installer's policy in `namespace`: nothing allowed beyond the defaults, and every object of
    /// the installer and its controllers protected (its run-time objects included, by name in
    /// `namespace`, the only one a bundle may write, where an earlier release kept them; in the
    /// installer's own namespace no bundle object may be at all).
    pub fn installer(namespace: &str) -> Self {
        PolicyConfig::new(
            namespace,
            Protected::installer(namespace, crate::names::INVENTORY_CONFIGMAP, LEADER_LEASE),
        )
    }

    /// Whether `group` belongs to the provider family (or was allowed explicitly).
    pub fn family_group(&self, group: &str) -> bool {
        in_family(group) || self.extra_groups.contains(group)
    }
}
