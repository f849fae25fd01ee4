//! What a bundle may ask of ownership, as far as its text tells: what it may adopt, and what it may
//! create.
//!
//! - [`Rule::Adoption`]: `capi-operator.openshift.io/adopt-existing: always`
//!   (`capi_bundle::reference::ADOPT_EXISTING`) only on an object the release itself ships for that
//!   provider: any object of a profile read from a release image pinned by digest, else only
//!   [`SHIPPED_ADOPTIONS`] (the core profile's IPAM CRDs, which the release payload applied before an
//!   installer managed Cluster API, and which are taken over whether or not the manifest marks them:
//!   the first generation's transport ConfigMaps carry no marks); never on a built-in object. Taking over anything else (a `system:`
//!   ClusterRole bound to every user, the namespace's `kube-root-ca.crt`, an administrator's CRD) would
//!   hand what it grants, or what it holds, to whoever writes the bundle. What only the live object
//!   tells (whether the release's own managers wrote it) the apply engine checks before the first
//!   write ([`capi_apply::OwnershipPolicy::check`]).
//! - [`Rule::Reserved`]: no object is created under a name or with a label that others give meaning
//!   to (a built-in name, the bootstrapping label, another provider's `cluster.x-k8s.io/provider`
//!   value, the labels that extend the policy itself): prune deletes only what carries its own
//!   provider's label, so such an object, once created, would never be removed, and the policy's
//!   labels would let a bundle widen its own bounds.

use capi_apply::ownership::built_in;
use capi_apply::{ObjectKey, PlanInput};
use capi_manifests::customize::LABEL_CLUSTERCTL_PROVIDER;
use kube_core::DynamicObject;

use super::report::{Origin, Rule, Violation};

/// The objects a provider's bundle may adopt when it is no release image, by (provider label, CRD
/// name): the IPAM CRDs that the release payload applied before the core provider's installer existed
/// (the reference's `0000_30_cluster-api_04_crd.core-cluster-api.yaml`), which the core profile marks
/// `adopt-existing: always`.
pub const SHIPPED_ADOPTIONS: &[(&str, &str)] = &[
    ("cluster-api", "ipaddresses.ipam.cluster.x-k8s.io"),
    ("cluster-api", "ipaddressclaims.ipam.cluster.x-k8s.io"),
];

/// Whether the release ships `key` for `provider` as an object that exists before it
/// ([`SHIPPED_ADOPTIONS`]): taken over in place, marked or not.
pub fn shipped(provider: &str, key: &ObjectKey) -> bool {
    key.group == "apiextensions.k8s.io"
        && key.kind == "CustomResourceDefinition"
        && SHIPPED_ADOPTIONS.contains(&(provider, key.name.as_str()))
}

/// Labels whose objects the policy reads as its own extensions (the administrator's ceiling
/// ClusterRoles, the field bound's ConfigMaps): a bundle object carrying one would widen its own bound.
const POLICY_LABELS: [&str; 2] = [super::ceiling::LABEL, super::fields::LABEL];

/// One violation per object of `inputs` (with their origins) of `provider` (its
/// `cluster.x-k8s.io/provider` value) that asks to be taken over and may not be, or that reserves what
/// it may not. `release_image`: the bundle is a profile read from a release image pinned by digest.
pub fn check<'a>(
    inputs: impl IntoIterator<Item = (&'a PlanInput, &'a Origin)>,
    provider: &str,
    release_image: bool,
) -> Vec<Violation> {
    let mut out = Vec::new();
    for (input, origin) in inputs {
        let Some(key) = capi_apply::key_of(&input.object) else {
            continue;
        };
        let mut report = |rule: Rule, detail: String| {
            out.push(Violation {
                origin: origin.clone(),
                object: key.clone(),
                rule,
                detail,
            })
        };
        if input.take_over {
            if let Some(detail) = refusal(&key, &input.object, provider, release_image) {
                report(Rule::Adoption, detail);
            }
        } else {
            for detail in reserved(&key, &input.object, provider) {
                report(Rule::Reserved, detail);
            }
        }
    }
    out
}

/// Why `object`, asked to be taken over, may not be, or `None`.
pub fn refusal(
    key: &ObjectKey,
    object: &DynamicObject,
    provider: &str,
    release_image: bool,
) -> Option<String> {
    if let Some(why) = built_in(key, object.metadata.labels.as_ref()) {
        return Some(format!("adopt-existing on {why}: never taken over"));
    }
    if release_image || shipped(provider, key) {
        return None;
    }
    let mut shipped: Vec<String> = SHIPPED_ADOPTIONS
        .iter()
        .filter(|(p, _)| *p == provider)
        .map(|(_, name)| format!("CustomResourceDefinition {name}"))
        .collect();
    if shipped.is_empty() {
        shipped.push("nothing else".into());
    }
    Some(format!(
        "adopt-existing only on what the release ships for {provider} (a release image's profile, or {}); not this object",
        shipped.join(", ")
    ))
}

/// What `object` (of `provider`) reserves that others give meaning to: one message each.
pub fn reserved(key: &ObjectKey, object: &DynamicObject, provider: &str) -> Vec<String> {
    let labels = object.metadata.labels.as_ref();
    let mut out = Vec::new();
    if let Some(why) = built_in(key, labels) {
        out.push(format!(
            "{why}: never created from a bundle (prune would never remove it)"
        ));
    }
    if let Some(theirs) = labels.and_then(|l| l.get(LABEL_CLUSTERCTL_PROVIDER))
        && theirs != provider
    {
        out.push(format!(
            "label {LABEL_CLUSTERCTL_PROVIDER}={theirs} names another provider; this bundle's objects are {provider}'s (prune would never remove it)"
        ));
    }
    for label in POLICY_LABELS {
        if labels.is_some_and(|l| l.contains_key(label)) {
            out.push(format!(
                "label {label} marks the bundle policy's own extensions: never set from a bundle"
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(yaml: &str) -> (ObjectKey, DynamicObject) {
        let o: DynamicObject = serde_saphyr::from_str(yaml).unwrap();
        (capi_apply::key_of(&o).unwrap(), o)
    }

    const BUILT_IN: [(&str, &str); 4] = [
        (
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: 'system:public-info-viewer'}\n",
            "the system: prefix",
        ),
        (
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: viewer, labels: {kubernetes.io/bootstrapping: rbac-defaults}}\n",
            "label kubernetes.io/bootstrapping=rbac-defaults",
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kube-root-ca.crt, namespace: openshift-cluster-api}\n",
            "ConfigMap kube-root-ca.crt, which the cluster creates",
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: openshift-service-ca.crt, namespace: openshift-cluster-api}\n",
            "ConfigMap openshift-service-ca.crt",
        ),
    ];

    #[test]
    fn built_in_objects_are_never_taken_over_nor_created() {
        for (yaml, expect) in BUILT_IN {
            let (key, o) = object(yaml);
            for release_image in [false, true] {
                let why = refusal(&key, &o, "cluster-api", release_image)
                    .unwrap_or_else(|| panic!("{key} taken over"));
                assert!(why.contains(expect), "{why}");
            }
            let why = reserved(&key, &o, "infrastructure-aws");
            assert_eq!(why.len(), 1, "{why:?}");
            assert!(why[0].contains(expect), "{why:?}");
            assert!(why[0].contains("never created from a bundle"), "{why:?}");
        }
    }

    /// Outside a release image, only what the release ships for that provider: core's IPAM CRDs for
    /// core, nothing for aws (not even core's CRDs, nor a CRD of its own group that exists already).
    #[test]
    fn adopt_existing_only_on_what_the_release_ships_for_the_provider() {
        let ipam = object(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: ipaddresses.ipam.cluster.x-k8s.io}\n",
        );
        let widgets = object(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.infrastructure.cluster.x-k8s.io}\n",
        );
        let settings = object(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: capa-settings, namespace: openshift-cluster-api}\n",
        );
        assert_eq!(refusal(&ipam.0, &ipam.1, "cluster-api", false), None);
        let why = refusal(&ipam.0, &ipam.1, "infrastructure-aws", false).unwrap();
        assert_eq!(
            why,
            "adopt-existing only on what the release ships for infrastructure-aws (a release image's profile, or nothing else); not this object"
        );
        for (key, o) in [&widgets, &settings] {
            let why = refusal(key, o, "cluster-api", false).unwrap();
            assert!(
                why.contains("(a release image's profile, or CustomResourceDefinition ipaddresses.ipam.cluster.x-k8s.io, CustomResourceDefinition ipaddressclaims.ipam.cluster.x-k8s.io)"),
                "{why}"
            );
            // A release image's profile is the release shipping it.
            assert_eq!(refusal(key, o, "infrastructure-aws", true), None, "{key}");
        }
    }

    #[test]
    fn another_providers_label_and_the_policys_labels_are_never_created() {
        let (key, o) = object(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: capa-extra, labels: {cluster.x-k8s.io/provider: cluster-api, capi-installer.openshift.io/provider-ceiling: cluster, capi-installer.openshift.io/provider-fields: 'true'}}\n",
        );
        assert_eq!(
            reserved(&key, &o, "infrastructure-aws"),
            [
                "label cluster.x-k8s.io/provider=cluster-api names another provider; this bundle's objects are infrastructure-aws's (prune would never remove it)",
                "label capi-installer.openshift.io/provider-ceiling marks the bundle policy's own extensions: never set from a bundle",
                "label capi-installer.openshift.io/provider-fields marks the bundle policy's own extensions: never set from a bundle",
            ]
        );
        let (key, own) = object(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: capa-manager-role, labels: {cluster.x-k8s.io/provider: infrastructure-aws}}\n",
        );
        assert!(reserved(&key, &own, "infrastructure-aws").is_empty());
    }

    /// `check` reports the adoption rule for what asks to be taken over, the reserved rule for the rest.
    #[test]
    fn check_names_the_rule() {
        let origin = Origin {
            source: "ConfigMap openshift-cluster-api/aws".into(),
            document: 3,
        };
        let (_, role) = object(BUILT_IN[0].0);
        let created = PlanInput::new(role.clone(), "x");
        let adopted = PlanInput::new(role, "x").take_over(true);
        let v = check(
            [(&created, &origin), (&adopted, &origin)],
            "infrastructure-aws",
            false,
        );
        let rules: Vec<Rule> = v.iter().map(|v| v.rule).collect();
        assert_eq!(rules, [Rule::Reserved, Rule::Adoption]);
    }
}
