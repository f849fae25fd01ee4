//! What "ours" means, and who may be taken over (see the crate docs, "Ownership"): the one policy
//! apply, the watch cache and prune all decide by.

use std::collections::{BTreeMap, BTreeSet};

use kube::api::DynamicObject;

use crate::key::ObjectKey;

/// Default annotation carrying the hash of the desired object: part of what marks an object as ours
/// (the applier stamps it, a release removes it), so it lives with the ownership rules.
pub const DEFAULT_HASH_ANNOTATION: &str = "capi-installer.openshift.io/desired-hash";

/// Default annotation with which an administrator allows adoption of an existing object.
pub const DEFAULT_ADOPT_ANNOTATION: &str = "capi-installer.openshift.io/adopt";

/// Who may be taken over. See the crate docs, "Ownership".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnershipPolicy {
    /// Label stamped on every object we apply; its presence (with this value) means "ours".
    pub(crate) label_key: String,
    pub(crate) label_value: String,
    /// Field managers whose objects we may adopt (e.g. `cluster-version-operator`, `kubectl`).
    pub adoptable_managers: BTreeSet<String>,
    /// An annotation with value `"true"` on an existing object allows adopting it regardless of managers.
    pub(crate) adopt_annotation: String,
    /// A label naming which of our owners (e.g. which provider) holds each of our objects. With it, an
    /// object of ours that carries another owner's value is neither taken over by apply nor deleted by
    /// prune: one owner per object.
    pub owner_label: Option<String>,
    /// Field managers that only fill in fields derived from other objects: they never own an object,
    /// so they never make one foreign (default [`DERIVING_MANAGERS`]).
    pub(crate) deriving_managers: BTreeSet<String>,
    /// Field managers we replace for good (an installer we take over from): their objects are adopted,
    /// and their field ownership moves to us before our first apply ([`crate::takeover`]), so what
    /// they set and we do not goes instead of staying behind.
    pub retired_managers: BTreeSet<String>,
}

/// Managers that write fields computed from other objects, never an owner's intent: Kubernetes'
/// `clusterrole-aggregation-controller` fills an aggregated ClusterRole's `rules` from the roles it
/// selects (the installer leaves those rules out of what it applies).
pub(crate) const DERIVING_MANAGERS: &[&str] = &["clusterrole-aggregation-controller"];

impl OwnershipPolicy {
    pub fn new(label_key: impl Into<String>, label_value: impl Into<String>) -> Self {
        OwnershipPolicy {
            label_key: label_key.into(),
            label_value: label_value.into(),
            adoptable_managers: BTreeSet::new(),
            adopt_annotation: DEFAULT_ADOPT_ANNOTATION.to_owned(),
            owner_label: None,
            deriving_managers: DERIVING_MANAGERS.iter().map(|m| m.to_string()).collect(),
            retired_managers: BTreeSet::new(),
        }
    }

    /// See [`OwnershipPolicy::retired_managers`].
    pub fn retire<I, S>(mut self, managers: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.retired_managers
            .extend(managers.into_iter().map(Into::into));
        self
    }

    /// See [`OwnershipPolicy::owner_label`].
    pub fn owner_label(mut self, key: impl Into<String>) -> Self {
        self.owner_label = Some(key.into());
        self
    }

    /// The value of the owner label on `obj`, when the policy has one and `obj` carries it.
    pub fn owner_of<'a>(&self, obj: &'a DynamicObject) -> Option<&'a str> {
        let key = self.owner_label.as_ref()?;
        obj.metadata.labels.as_ref()?.get(key).map(String::as_str)
    }

    pub fn adoptable<I, S>(mut self, managers: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.adoptable_managers
            .extend(managers.into_iter().map(Into::into));
        self
    }

    /// `key=value`, for list/watch label selectors.
    pub fn selector(&self) -> String {
        format!("{}={}", self.label_key, self.label_value)
    }

    /// Whether `obj` carries our ownership label.
    pub fn owns(&self, obj: &DynamicObject) -> bool {
        obj.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(&self.label_key))
            .is_some_and(|v| *v == self.label_value)
    }

    /// The decision for an existing object that we are about to apply. `our_manager` (the applier's
    /// own field manager) always counts as adoptable: it only appears on objects we wrote before.
    pub fn check(&self, live: &DynamicObject, our_manager: &str) -> Ownership {
        if self.owns(live) {
            return Ownership::Owned;
        }
        let annotated = live
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(&self.adopt_annotation))
            .is_some_and(|v| v == "true");
        let managers: Vec<String> = spec_managers(live)
            .into_iter()
            .filter(|m| !self.deriving_managers.contains(m))
            .collect();
        let foreign: Vec<String> = managers
            .iter()
            .filter(|m| {
                *m != our_manager
                    && !self.adoptable_managers.contains(*m)
                    && !self.retired_managers.contains(*m)
            })
            .cloned()
            .collect();
        // An object without any managedFields tells us nothing about its owner: not adoptable by the
        // manager rule, only by the explicit annotation.
        if annotated || (!managers.is_empty() && foreign.is_empty()) {
            Ownership::Adoptable
        } else {
            Ownership::Foreign { managers }
        }
    }
}

/// The label the API server puts on the objects it creates at start-up (the bootstrap RBAC roles and
/// bindings, the priority classes): built in, never a provider's to take over.
pub const BOOTSTRAPPING_LABEL: &str = "kubernetes.io/bootstrapping";

/// Objects Kubernetes or OpenShift create in every namespace or in the cluster, by (kind, name): the
/// namespace's CA bundles (kube-controller-manager's, service-ca's), its `default` ServiceAccounts,
/// the cluster's own namespaces.
const WELL_KNOWN: &[(&str, &str)] = &[
    ("ConfigMap", "kube-root-ca.crt"),
    ("ConfigMap", "openshift-service-ca.crt"),
    ("ServiceAccount", "default"),
    ("ServiceAccount", "builder"),
    ("ServiceAccount", "deployer"),
    ("Namespace", "default"),
    ("Namespace", "kube-system"),
    ("Namespace", "kube-public"),
    ("Namespace", "kube-node-lease"),
];

/// What makes `key` (with `labels`) a built-in object, or `None`: a `system:` name, the bootstrapping
/// label, or one of the objects the cluster creates itself. Never adopted, never deleted.
pub fn built_in(key: &ObjectKey, labels: Option<&BTreeMap<String, String>>) -> Option<String> {
    if key.name.starts_with("system:") {
        return Some(format!(
            "a built-in object (name {:?}, the system: prefix)",
            key.name
        ));
    }
    if let Some(value) = labels.and_then(|l| l.get(BOOTSTRAPPING_LABEL)) {
        return Some(format!(
            "a built-in object (label {BOOTSTRAPPING_LABEL}={value})"
        ));
    }
    WELL_KNOWN
        .contains(&(key.kind.as_str(), key.name.as_str()))
        .then(|| {
            format!(
                "a built-in object ({} {}, which the cluster creates and its controllers write)",
                key.kind, key.name
            )
        })
}

/// Why an adoption of `live` is refused, or `None`: the bound on taking over objects that exist
/// without our label. `desired_owner` is the owner label value our object would carry, and
/// `take_over` whether the bundle asks to take it over whoever manages it (the reference's
/// `adopt-existing: always`); `managers` are its field managers. Never a built-in object
/// ([`built_in`]) nor another owner's (its owner label); and a take-over beyond the adoptable
/// managers only of a CRD (a provider's own, the reference's one use of it) or of an object an earlier
/// version of the same owner installed (it carries that owner's label).
pub fn adoption_refusal(
    policy: &OwnershipPolicy,
    key: &ObjectKey,
    live: &DynamicObject,
    desired_owner: Option<&str>,
    take_over: bool,
    managers: &[String],
) -> Option<String> {
    if let Some(why) = built_in(key, live.metadata.labels.as_ref()) {
        return Some(format!("{why} is never adopted"));
    }
    let theirs = policy.owner_of(live);
    if let Some(theirs) = theirs
        && Some(theirs) != desired_owner
    {
        let key = policy.owner_label.as_deref().unwrap_or_default();
        return Some(format!(
            "another owner's object ({key}={theirs}) is never adopted"
        ));
    }
    if !take_over {
        return None;
    }
    let crd = key.group == "apiextensions.k8s.io" && key.kind == "CustomResourceDefinition";
    if crd || (theirs.is_some() && theirs == desired_owner) {
        return None;
    }
    Some(format!(
        "adopt-existing takes over only a provider's own CRDs and objects an earlier version of it installed (its owner label); this one is written by [{}]",
        managers.join(", ")
    ))
}

/// Outcome of [`OwnershipPolicy::check`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ownership {
    Owned,
    Adoptable,
    Foreign { managers: Vec<String> },
}

/// Distinct field managers in `managedFields`, sorted.
pub fn field_managers(obj: &DynamicObject) -> Vec<String> {
    let set: BTreeSet<String> = obj
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|m| m.manager.clone())
        .collect();
    set.into_iter().collect()
}

/// Field managers that own more than status: writers of the `status` subresource (the API server on
/// a CRD, a controller on its Deployment) report on an object, they do not own it, so they never make
/// an object foreign.
pub(crate) fn spec_managers(obj: &DynamicObject) -> Vec<String> {
    let set: BTreeSet<String> = obj
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter(|m| m.subresource.as_deref() != Some("status"))
        .filter_map(|m| m.manager.clone())
        .collect();
    set.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(yaml: &str) -> (ObjectKey, DynamicObject) {
        let o: DynamicObject = serde_saphyr::from_str(yaml).unwrap();
        (crate::key_of(&o).unwrap(), o)
    }

    fn policy() -> OwnershipPolicy {
        OwnershipPolicy::new("app.kubernetes.io/managed-by", "capi-installer")
            .owner_label("cluster.x-k8s.io/provider")
    }

    #[test]
    fn built_in_and_other_owners_objects_are_never_adopted() {
        let p = policy();
        let aws = Some("infrastructure-aws");
        for (yaml, expect) in [
            (
                "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: 'system:public-info-viewer', labels: {kubernetes.io/bootstrapping: rbac-defaults}}\n",
                "the system: prefix",
            ),
            (
                "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: admin, labels: {kubernetes.io/bootstrapping: rbac-defaults}}\n",
                "label kubernetes.io/bootstrapping=rbac-defaults",
            ),
            (
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kube-root-ca.crt, namespace: ns}\n",
                "ConfigMap kube-root-ca.crt",
            ),
            (
                "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: gcpclusters.infrastructure.cluster.x-k8s.io, labels: {cluster.x-k8s.io/provider: infrastructure-gcp}}\n",
                "another owner's object (cluster.x-k8s.io/provider=infrastructure-gcp)",
            ),
        ] {
            let (key, o) = live(yaml);
            for take_over in [true, false] {
                let why = adoption_refusal(&p, &key, &o, aws, take_over, &[])
                    .unwrap_or_else(|| panic!("{key} adopted"));
                assert!(why.contains(expect), "{why}");
            }
        }
    }

    #[test]
    fn adopt_existing_takes_over_only_own_crds_and_earlier_versions_objects() {
        let p = policy();
        let aws = Some("infrastructure-aws");
        let kcm = ["kube-controller-manager".to_string()];
        let (crd, o) = live(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: ipaddresses.ipam.cluster.x-k8s.io}\n",
        );
        assert_eq!(adoption_refusal(&p, &crd, &o, aws, true, &kcm), None);
        let (key, o) = live(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: capa-controller-manager, namespace: ns, labels: {cluster.x-k8s.io/provider: infrastructure-aws}}\n",
        );
        assert_eq!(adoption_refusal(&p, &key, &o, aws, true, &kcm), None);
        let (key, o) =
            live("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: ns}\n");
        let why = adoption_refusal(&p, &key, &o, aws, true, &kcm).unwrap();
        assert!(
            why.contains("written by [kube-controller-manager]"),
            "{why}"
        );
        // Without adopt-existing, the manager rules decide (this object's managers are adoptable).
        assert_eq!(adoption_refusal(&p, &key, &o, aws, false, &[]), None);
    }
}
