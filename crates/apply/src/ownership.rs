//! What "ours" means, and who may be taken over (see the crate docs, "Ownership"): the one policy
//! apply, the watch cache and prune all decide by.

use std::collections::BTreeSet;

use kube::api::DynamicObject;

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

    pub fn adopt_annotation(mut self, key: impl Into<String>) -> Self {
        self.adopt_annotation = key.into();
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
fn spec_managers(obj: &DynamicObject) -> Vec<String> {
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
