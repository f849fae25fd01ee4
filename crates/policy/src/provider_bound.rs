//! What each provider's own release brings, which bounds what its bundle may reach (issue 46): the API
//! groups of its CRDs, the resources its admission acts on, and the provider label its Services select
//! on. Judged per provider, whether or not the provider it would reach is installed: the other
//! providers of the round ([`super::Among`]) only sharpen the message.
//!
//! - **CRD groups**: each provider's CRDs only in the groups its own release defines ([`CRD_GROUPS`]);
//!   a provider the release ships nothing for, in any family group but core's own ([`CORE_GROUPS`]).
//! - **CRD names**: within the groups providers share (`infrastructure.cluster.x-k8s.io`), each
//!   provider's CRDs only under the prefixes its own release's kinds carry ([`CRD_NAME_PREFIXES`], [`crd_name`]); a
//!   provider the release ships nothing for, under none of theirs. So no provider defines (and then
//!   holds, and acts on by admission) a CRD another provider's release defines, installed or not.
//! - **Admission**: webhooks and admission policies act only on resources of the bundle's own CRDs
//!   (plus [`ADMISSION_BEYOND_CRDS`], what real bundles write besides).
//! - **Services and pods**: a Service selects on its own provider's label, so it reaches no other
//!   provider's pods; a pod carries no other provider's label, so no other provider's Service reaches
//!   it; and no pod carries labels a Service of the release selects ([`RELEASE_SELECTORS`]).

use serde_json::Value;

use super::report::FAMILY_GROUP;

/// The label by which Cluster API tells providers' objects apart; its value is the provider's
/// clusterctl name (`cluster-api`, `infrastructure-aws`).
pub const PROVIDER_LABEL: &str = "cluster.x-k8s.io/provider";

const INFRASTRUCTURE: &str = "infrastructure.cluster.x-k8s.io";

/// The API groups of each provider's CRDs, by its provider label: what its real bundles define
/// (`../shared/fixtures`; `tests/policy_fixtures.rs` checks every one is here) and the groups its
/// upstream module adds, which `make demo` installs (core's `runtime`, aws's EKS `bootstrap` and
/// `controlplane`).
pub const CRD_GROUPS: [(&str, &[&str]); 7] = [
    (
        "cluster-api",
        &[
            "addons.cluster.x-k8s.io",
            "cluster.x-k8s.io",
            "ipam.cluster.x-k8s.io",
            "runtime.cluster.x-k8s.io",
        ],
    ),
    (
        "infrastructure-aws",
        &[
            "bootstrap.cluster.x-k8s.io",
            "controlplane.cluster.x-k8s.io",
            INFRASTRUCTURE,
        ],
    ),
    ("infrastructure-azure", &[INFRASTRUCTURE]),
    (
        "infrastructure-gcp",
        &["bootstrap.cluster.x-k8s.io", INFRASTRUCTURE],
    ),
    ("infrastructure-ibmcloud", &[INFRASTRUCTURE]),
    ("infrastructure-openstack", &[INFRASTRUCTURE]),
    ("infrastructure-vsphere", &[INFRASTRUCTURE]),
];

/// The prefixes of each provider's CRD names (`spec.names.plural`), by its provider label: what the
/// kinds of its real bundles and of its upstream module (`make demo`'s aws: `eks…`, `rosa…`) begin
/// with. `tests/policy_fixtures.rs` checks every real CRD against it. Core's own groups are core's
/// alone ([`CORE_GROUPS`]); in the IPAM group it shares, its kinds are `IPAddress…`.
pub const CRD_NAME_PREFIXES: [(&str, &[&str]); 7] = [
    ("cluster-api", &["ipaddress"]),
    ("infrastructure-aws", &["aws", "eks", "rosa"]),
    ("infrastructure-azure", &["azure"]),
    ("infrastructure-gcp", &["gcp", "gke"]),
    ("infrastructure-ibmcloud", &["ibm"]),
    ("infrastructure-openstack", &["openstack"]),
    ("infrastructure-vsphere", &["vsphere"]),
];

/// Core's own groups: the Cluster API itself, its add-ons and its runtime extensions. A provider the
/// release ships no groups for may use any other family group (IPAM providers define their pools in
/// `ipam.cluster.x-k8s.io`, beside core's claims).
pub const CORE_GROUPS: [&str; 3] = [
    "addons.cluster.x-k8s.io",
    "cluster.x-k8s.io",
    "runtime.cluster.x-k8s.io",
];

/// Resources real bundles' admission names without defining a CRD for them: (provider, group,
/// resource), none of which any API serves. aws's webhooks for EKS's bootstrap kinds are written in
/// the singular; the protection policy generated for every provider names `<provider>clusters`, for
/// core a resource no provider defines.
pub const ADMISSION_BEYOND_CRDS: [(&str, &str, &str); 3] = [
    ("cluster-api", INFRASTRUCTURE, "cluster-apiclusters"),
    (
        "infrastructure-aws",
        "bootstrap.cluster.x-k8s.io",
        "eksconfig",
    ),
    (
        "infrastructure-aws",
        "bootstrap.cluster.x-k8s.io",
        "eksconfigtemplate",
    ),
];

/// The Services the release ships in the providers' namespace, with their selectors: a provider's pod
/// these select would receive the release's traffic. `tests/manifests.rs` checks them against
/// `manifests/`.
pub const RELEASE_SELECTORS: [(&str, &[(&str, &str)]); 2] = [
    (
        "capi-controllers-metrics",
        &[("k8s-app", "capi-controllers")],
    ),
    (
        "capi-controllers-webhook",
        &[("k8s-app", "capi-controllers")],
    ),
];

/// Whether provider `provider`'s CRDs may be in family group `group` (groups outside the family are
/// judged elsewhere: the administrator's extra groups, a release image's own group).
pub fn crd_group_allowed(provider: &str, group: &str) -> bool {
    match CRD_GROUPS.iter().find(|(p, _)| *p == provider) {
        Some((_, groups)) => groups.contains(&group),
        None => !CORE_GROUPS.contains(&group),
    }
}

/// The groups `provider`'s CRDs may be in, for messages.
pub fn crd_groups_of(provider: &str) -> String {
    match CRD_GROUPS.iter().find(|(p, _)| *p == provider) {
        Some((_, groups)) => groups.join(", "),
        None => format!(
            "any {FAMILY_GROUP} group but core's ({})",
            CORE_GROUPS.join(", ")
        ),
    }
}

/// Whose a CRD name is, for a provider that would define it ([`crd_name`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrdName {
    /// The provider's own (or the group decides: core's own groups).
    Own,
    /// Another provider's release names its CRDs so.
    Others(&'static str),
    /// Nobody's, but not among the names the provider's own release uses.
    NotOwn,
}

/// Whose CRD name `plural` in family group `group` is, for `provider`: in core's own groups the
/// group decides ([`crd_group_allowed`]); elsewhere another provider's when it carries that provider's
/// prefix, and not its own when `provider` is one the release ships CRDs for and `plural` carries none
/// of its prefixes.
pub fn crd_name(provider: &str, group: &str, plural: &str) -> CrdName {
    if CORE_GROUPS.contains(&group) {
        return CrdName::Own;
    }
    let owner = CRD_NAME_PREFIXES
        .iter()
        .find(|(_, prefixes)| prefixes.iter().any(|p| plural.starts_with(p)))
        .map(|(owner, _)| *owner);
    match owner {
        Some(owner) if owner == provider => CrdName::Own,
        Some(owner) => CrdName::Others(owner),
        None if CRD_NAME_PREFIXES.iter().any(|(p, _)| *p == provider) => CrdName::NotOwn,
        None => CrdName::Own,
    }
}

/// The prefixes `provider`'s CRD names carry, for messages.
pub fn crd_name_prefixes_of(provider: &str) -> String {
    CRD_NAME_PREFIXES
        .iter()
        .find(|(p, _)| *p == provider)
        .map(|(_, prefixes)| {
            prefixes
                .iter()
                .map(|p| format!("{p}…"))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

/// Whether `provider`'s admission may name `resource` of `group` without a CRD of its own.
pub fn admission_beyond_crds(provider: &str, group: &str, resource: &str) -> bool {
    ADMISSION_BEYOND_CRDS
        .iter()
        .any(|(p, g, r)| *p == provider && *g == group && *r == resource)
}

/// The provider label in a selector or a label map, when present.
pub fn provider_of(labels: Option<&Value>) -> Option<&str> {
    labels?.get(PROVIDER_LABEL)?.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_provider_keeps_to_its_groups_and_a_new_one_to_any_but_cores() {
        assert!(crd_group_allowed("cluster-api", "addons.cluster.x-k8s.io"));
        assert!(!crd_group_allowed(
            "infrastructure-aws",
            "addons.cluster.x-k8s.io"
        ));
        assert!(!crd_group_allowed(
            "infrastructure-azure",
            "bootstrap.cluster.x-k8s.io"
        ));
        assert!(crd_group_allowed(
            "ipam-in-cluster",
            "ipam.cluster.x-k8s.io"
        ));
        assert!(!crd_group_allowed("ipam-in-cluster", "cluster.x-k8s.io"));
        assert!(crd_groups_of("ipam-in-cluster").contains("but core's"));
    }

    #[test]
    fn each_provider_keeps_to_its_crd_names_and_a_new_one_to_none_of_theirs() {
        assert_eq!(
            crd_name("infrastructure-aws", INFRASTRUCTURE, "rosaclusters"),
            CrdName::Own
        );
        assert_eq!(
            crd_name("infrastructure-aws", INFRASTRUCTURE, "gcpclusters"),
            CrdName::Others("infrastructure-gcp")
        );
        // A name no provider's release uses is still not aws's.
        assert_eq!(
            crd_name("infrastructure-aws", INFRASTRUCTURE, "metal3clusters"),
            CrdName::NotOwn
        );
        assert_eq!(
            crd_name("infrastructure-metal3", INFRASTRUCTURE, "metal3clusters"),
            CrdName::Own
        );
        assert_eq!(
            crd_name("infrastructure-metal3", INFRASTRUCTURE, "vsphereclusters"),
            CrdName::Others("infrastructure-vsphere")
        );
        assert_eq!(
            crd_name(
                "ipam-in-cluster",
                "ipam.cluster.x-k8s.io",
                "ipaddressclaims"
            ),
            CrdName::Others("cluster-api")
        );
        assert_eq!(
            crd_name(
                "ipam-in-cluster",
                "ipam.cluster.x-k8s.io",
                "inclusterippools"
            ),
            CrdName::Own
        );
        assert_eq!(
            crd_name("cluster-api", "cluster.x-k8s.io", "clusters"),
            CrdName::Own
        );
        assert_eq!(crd_name_prefixes_of("infrastructure-gcp"), "gcp…, gke…");
    }
}
