//! Who owns an object, and who may be taken over (see the crate docs, "Ownership"): the one policy
//! apply, the watch cache and prune all decide by. Ownership is read from the owner's own record (its
//! inventory, which only we write), never from what the live object says of itself: its name, labels
//! and field managers are written by whoever writes the object.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use kube::api::DynamicObject;

use crate::key::ObjectKey;

/// Default annotation carrying the hash of the desired object: part of what marks an object as ours
/// (the applier stamps it, a release removes it), so it lives with the ownership rules.
pub const DEFAULT_HASH_ANNOTATION: &str = "capi-installer.openshift.io/desired-hash";

/// Who may be taken over. See the crate docs, "Ownership".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnershipPolicy {
    /// Label stamped on every object we apply. It marks our writes for the watches and for prune; it
    /// never decides an object is ours to write (anyone can set a label): the owner's record does.
    pub(crate) label_key: String,
    pub(crate) label_value: String,
    /// Field managers that apply the release itself (e.g. `cluster-version-operator`): an object only
    /// they wrote is "as the release ships it", the one kind an owner's `take_over` may adopt.
    pub adoptable_managers: BTreeSet<String>,
    /// A label naming which of our owners (e.g. which provider) holds each of our objects. With it, an
    /// object that carries another owner's value is never adopted, and prune deletes only objects that
    /// carry the pruned owner's value: one owner per object.
    pub owner_label: Option<String>,
    /// Field managers that only fill in fields derived from other objects: they never own an object,
    /// so they never make one foreign (default [`DERIVING_MANAGERS`]).
    pub(crate) deriving_managers: BTreeSet<String>,
    /// Field managers we replace for good (an installer we take over from): their objects are adopted,
    /// and their field ownership moves to us before our first apply ([`crate::takeover`]), so what
    /// they set and we do not goes instead of staying behind.
    pub retired_managers: BTreeSet<String>,
    /// Our own field manager (set by [`crate::Applier::new`]): what tells an object our apply created
    /// from one someone else created under a name we recorded ([`OwnershipPolicy::created_by_us`]).
    pub(crate) field_manager: String,
}

/// Managers that write fields computed from other objects, never an owner's intent: Kubernetes'
/// `clusterrole-aggregation-controller` fills an aggregated ClusterRole's `rules` from the roles it
/// selects (the installer leaves those rules out of what it applies).
pub(crate) const DERIVING_MANAGERS: &[&str] = &["clusterrole-aggregation-controller"];

/// What the owner's record (its [`crate::Inventory`]) says of an object before a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    /// We created it for this owner: ours to update and, once dropped, to delete.
    Created,
    /// We adopted it for this owner: ours to update; released as found, never deleted.
    Adopted,
    /// Recorded to be created for this owner, not yet confirmed ([`crate::Inventory::pending`]): an
    /// existing object is ours only if our own apply created it.
    Intended,
    /// We created it for this owner, but the object under its name is another one (another UID,
    /// [`crate::Inventory::uids`]): deleted and created again since our last write, ours only if our
    /// own apply re-created it.
    Replaced,
    /// Not this owner's: an existing object is written only if it may be adopted now.
    No,
}

/// The decision for an existing object that we are about to apply ([`OwnershipPolicy::check`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ownership {
    /// The owner's record holds it, and it carries our label: ours to update.
    Owned,
    /// Taken now: an adoption the record holds whose first write is this one, or one `check` allows.
    Adoptable,
    /// Not the owner's, and not to be adopted: `managers` wrote it.
    Foreign { managers: Vec<String> },
    /// Asked to be taken over (`take_over`), or another owner's, and not to be: why.
    Refused { reason: String },
}

impl OwnershipPolicy {
    pub fn new(label_key: impl Into<String>, label_value: impl Into<String>) -> Self {
        OwnershipPolicy {
            label_key: label_key.into(),
            label_value: label_value.into(),
            adoptable_managers: BTreeSet::new(),
            owner_label: None,
            deriving_managers: DERIVING_MANAGERS.iter().map(|m| m.to_string()).collect(),
            retired_managers: BTreeSet::new(),
            field_manager: String::new(),
        }
    }

    /// Whether our apply created `live`: our manager's apply entry carries the object's creation time
    /// (to the second the API server keeps, give or take one: it takes the two readings of its clock
    /// apart). A create records the creating manager's entry at the creation time; a later write of ours to
    /// an object someone else created records a later time (or shares its second and is caught by the
    /// applier's check of the create's answer, [`preempted_by`]). Someone applying under our
    /// manager's name makes its fields ours, and our next apply removes what we do not write.
    pub fn created_by_us(&self, live: &DynamicObject) -> bool {
        let Some(created) = live.metadata.creation_timestamp.as_ref() else {
            return false;
        };
        self.our_applies(live).any(|m| {
            m.time
                .as_ref()
                .is_some_and(|t| (t.0.as_second() - created.0.as_second()).abs() <= 1)
        })
    }

    /// Whether our apply owns fields of `live` (whenever it wrote them): what a rebuilt record asks
    /// besides our labels. Anyone may set a label; to look applied by us, one must apply under our
    /// manager's name.
    pub fn applied_by_us(&self, live: &DynamicObject) -> bool {
        self.our_applies(live).next().is_some()
    }

    /// Our manager's apply entries of `live`'s own fields (not a subresource's).
    fn our_applies<'a>(
        &'a self,
        live: &'a DynamicObject,
    ) -> impl Iterator<Item = &'a ManagedFieldsEntry> + 'a {
        live.metadata.managed_fields.iter().flatten().filter(|m| {
            !self.field_manager.is_empty()
                && m.manager.as_deref() == Some(self.field_manager.as_str())
                && m.operation.as_deref() == Some("Apply")
                && m.subresource.is_none()
        })
    }

    /// Who else wrote `after`, the answer to our apply that was to create it: empty when our apply
    /// created it. Someone who created the object between our check and our write shows here.
    pub fn preempted_by(&self, after: &DynamicObject) -> Vec<String> {
        spec_managers(after)
            .into_iter()
            .filter(|m| *m != self.field_manager && !self.deriving_managers.contains(m))
            .collect()
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

    /// See [`OwnershipPolicy::adoptable_managers`].
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

    /// Whether `obj` carries our ownership label: one of our writes (the watches and prune go by it;
    /// whether we may write it is [`Self::check`]'s).
    pub fn owns(&self, obj: &DynamicObject) -> bool {
        obj.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(&self.label_key))
            .is_some_and(|v| *v == self.label_value)
    }

    /// The decision for `live`, an existing object at `key` that an owner is about to apply, from what
    /// the owner's record says of it. Recorded, it is the owner's (an adoption recorded but not yet
    /// written is taken now). Not recorded, it is never written, whoever manages it, except:
    /// - `take_over` (the owner's manifest asks for it, and its policy allowed that for this object):
    ///   adopted when the live object is as the release ships it, written by the release's own
    ///   managers ([`Self::adoptable_managers`]) or by a retired installer, and by nobody else;
    /// - an object of a retired installer ([`Self::retired_managers`]: the same providers' objects,
    ///   taken over on purpose), written by nobody else.
    ///
    /// Never a built-in object ([`built_in`]) nor one carrying another owner's label. `desired_owner` is
    /// the owner label value our object would carry.
    pub fn check(
        &self,
        key: &ObjectKey,
        live: &DynamicObject,
        recorded: Recorded,
        take_over: bool,
        desired_owner: Option<&str>,
    ) -> Ownership {
        match recorded {
            Recorded::Created => return Ownership::Owned,
            Recorded::Adopted if self.owns(live) => return Ownership::Owned,
            Recorded::Adopted => return Ownership::Adoptable,
            Recorded::Intended | Recorded::Replaced if self.created_by_us(live) => {
                return Ownership::Owned;
            }
            Recorded::Intended => {
                return Ownership::Refused {
                    reason: format!(
                        "recorded to be created, but created by [{}], not by the installer's apply (between its check and its write, or while it was stopped)",
                        spec_managers(live).join(", ")
                    ),
                };
            }
            Recorded::Replaced => {
                return Ownership::Refused {
                    reason: format!(
                        "the installer created it, but it was deleted and created again by [{}], not by the installer's apply (another UID than the installer's record)",
                        spec_managers(live).join(", ")
                    ),
                };
            }
            Recorded::No => {}
        }
        if let Some(why) = built_in(key, live.metadata.labels.as_ref()) {
            return Ownership::Refused {
                reason: format!("{why} is never adopted"),
            };
        }
        if let Some(theirs) = self.owner_of(live)
            && Some(theirs) != desired_owner
        {
            let label = self.owner_label.as_deref().unwrap_or_default();
            return Ownership::Refused {
                reason: format!("another owner's object ({label}={theirs}) is never adopted"),
            };
        }
        let managers: Vec<String> = spec_managers(live)
            .into_iter()
            .filter(|m| !self.deriving_managers.contains(m))
            .collect();
        let released =
            |m: &String| self.adoptable_managers.contains(m) || self.retired_managers.contains(m);
        // An object without any managedFields tells nothing of who wrote it: never as released.
        let as_released = !managers.is_empty() && managers.iter().all(released);
        let retired = managers.iter().any(|m| self.retired_managers.contains(m));
        if as_released && (take_over || retired) {
            return Ownership::Adoptable;
        }
        if !take_over {
            return Ownership::Foreign { managers };
        }
        let release: Vec<&str> = self
            .adoptable_managers
            .iter()
            .chain(&self.retired_managers)
            .map(String::as_str)
            .collect();
        Ownership::Refused {
            reason: format!(
                "adopt-existing takes over only an object as the release applied it (written by [{}] alone); this one is written by [{}]",
                release.join(", "),
                managers.join(", ")
            ),
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
            .adoptable(["cluster-version-operator"])
    }

    /// A ConfigMap with `labels` (inline YAML) whose spec fields `managers` wrote.
    fn written_by(labels: &str, managers: &[&str]) -> (ObjectKey, DynamicObject) {
        let mf: Vec<String> = managers
            .iter()
            .map(|m| format!("{{manager: {m}, operation: Update}}"))
            .collect();
        live(&format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c, namespace: ns, labels: {{{labels}}}, managedFields: [{}]}}\n",
            mf.join(", ")
        ))
    }

    const AWS: Option<&str> = Some("infrastructure-aws");

    /// A ConfigMap created at 10:00:00 whose field managers are `entries`: (manager, operation, time).
    fn created(entries: &[(&str, &str, &str)]) -> (ObjectKey, DynamicObject) {
        let mf: Vec<String> = entries
            .iter()
            .map(|(m, op, t)| format!("{{manager: {m}, operation: {op}, time: '2026-12-06T{t}Z'}}"))
            .collect();
        live(&format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c, namespace: ns, creationTimestamp: '2026-12-06T10:00:00Z', managedFields: [{}]}}\n",
            mf.join(", ")
        ))
    }

    /// A name recorded to be created and not confirmed is ours only if our apply created the object:
    /// our apply entry at its creation time. Someone who created it first (whatever they call
    /// themselves afterwards), or whose create we merely followed, keeps it.
    #[test]
    fn an_intended_object_is_ours_only_if_our_apply_created_it() {
        let mut p = policy();
        p.field_manager = "capi-installer".into();
        let ours = [
            // Created by our apply, then written by a controller (a Deployment's revision).
            vec![
                ("capi-installer", "Apply", "10:00:00"),
                ("kube-controller-manager", "Update", "10:00:00"),
            ],
            vec![("capi-installer", "Apply", "10:00:00")],
            // The API server's two clock readings across a second boundary.
            vec![("capi-installer", "Apply", "10:00:01")],
        ];
        for entries in ours {
            let (key, live) = created(&entries);
            assert!(p.created_by_us(&live), "{entries:?}");
            assert_eq!(
                p.check(&key, &live, Recorded::Intended, false, AWS),
                Ownership::Owned
            );
        }
        let theirs = [
            // Created by someone else; our apply came later.
            vec![
                ("helm", "Update", "10:00:00"),
                ("capi-installer", "Apply", "10:00:05"),
            ],
            // Created by someone else under our name, with a create (not our apply).
            vec![("capi-installer", "Update", "10:00:00")],
            vec![("helm", "Apply", "10:00:00")],
        ];
        for entries in theirs {
            let (key, live) = created(&entries);
            assert!(!p.created_by_us(&live), "{entries:?}");
            match p.check(&key, &live, Recorded::Intended, false, AWS) {
                Ownership::Refused { reason } => {
                    assert!(
                        reason.starts_with("recorded to be created, but created by ["),
                        "{reason}"
                    )
                }
                other => panic!("{entries:?}: {other:?}"),
            }
        }
        // Without our manager's name (an applier sets it), nothing is created by us.
        let (_, live) = created(&[("capi-installer", "Apply", "10:00:00")]);
        assert!(!policy().created_by_us(&live));
        // The answer to our create: empty when we created it; else who did.
        let (_, mixed) = created(&[
            ("helm", "Update", "10:00:00"),
            ("capi-installer", "Apply", "10:00:00"),
            ("clusterrole-aggregation-controller", "Apply", "10:00:00"),
        ]);
        assert_eq!(p.preempted_by(&mixed), ["helm"]);
        let (_, alone) = created(&[("capi-installer", "Apply", "10:00:00")]);
        assert!(p.preempted_by(&alone).is_empty());
    }

    /// An object we created, found under its name with another UID, was re-created since: ours only
    /// if our apply re-created it (a write of ours the record did not see, before a restart).
    #[test]
    fn a_replaced_object_is_ours_only_if_our_apply_created_it_again() {
        let mut p = policy();
        p.field_manager = "capi-installer".into();
        let (key, again) = created(&[("capi-installer", "Apply", "10:00:00")]);
        assert_eq!(
            p.check(&key, &again, Recorded::Replaced, false, AWS),
            Ownership::Owned
        );
        let (_, theirs) = created(&[
            ("kubectl", "Update", "10:00:00"),
            ("capi-installer", "Apply", "10:03:00"),
        ]);
        match p.check(&key, &theirs, Recorded::Replaced, false, AWS) {
            Ownership::Refused { reason } => assert!(
                reason.contains("deleted and created again by [capi-installer, kubectl]")
                    || reason.contains("deleted and created again by [kubectl, capi-installer]"),
                "{reason}"
            ),
            other => panic!("{other:?}"),
        }
    }

    /// The record decides: a recorded object is the owner's whoever wrote it last; an unrecorded one is
    /// never written on the strength of what it says of itself (our label, our manager's name, the
    /// release's manager, an annotation).
    #[test]
    fn the_owners_record_decides_never_the_live_object() {
        let p = policy();
        let (key, ours) = written_by("app.kubernetes.io/managed-by: capi-installer", &["someone"]);
        assert_eq!(
            p.check(&key, &ours, Recorded::Created, false, AWS),
            Ownership::Owned
        );
        assert_eq!(
            p.check(&key, &ours, Recorded::Adopted, false, AWS),
            Ownership::Owned
        );
        // An adoption recorded before its first write: taken now.
        let (_, cvo) = written_by("", &["cluster-version-operator"]);
        assert_eq!(
            p.check(&key, &cvo, Recorded::Adopted, false, AWS),
            Ownership::Adoptable
        );
        for (labels, managers) in [
            (
                "app.kubernetes.io/managed-by: capi-installer",
                vec!["capi-installer"],
            ),
            (
                "app.kubernetes.io/managed-by: capi-installer, cluster.x-k8s.io/provider: infrastructure-aws",
                vec!["capi-installer"],
            ),
            ("", vec!["cluster-version-operator"]),
            ("", vec!["cluster-version-operator", "capi-installer"]),
            ("", vec!["helm"]),
        ] {
            let (key, o) = written_by(labels, &managers);
            let mut managers: Vec<String> = managers.iter().map(|m| m.to_string()).collect();
            managers.sort();
            assert_eq!(
                p.check(&key, &o, Recorded::No, false, AWS),
                Ownership::Foreign { managers },
                "{labels} {o:?}"
            );
        }
        // Nothing in managedFields tells nothing: not even a take-over.
        let (key, bare) = written_by("", &[]);
        assert!(matches!(
            p.check(&key, &bare, Recorded::No, true, AWS),
            Ownership::Refused { .. }
        ));
    }

    #[test]
    fn built_in_and_other_owners_objects_are_never_adopted() {
        let p = policy();
        for (yaml, expect) in [
            (
                "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: 'system:public-info-viewer', labels: {kubernetes.io/bootstrapping: rbac-defaults}, managedFields: [{manager: cluster-version-operator, operation: Update}]}\n",
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
                "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: gcpclusters.infrastructure.cluster.x-k8s.io, labels: {cluster.x-k8s.io/provider: infrastructure-gcp}, managedFields: [{manager: cluster-version-operator, operation: Update}]}\n",
                "another owner's object (cluster.x-k8s.io/provider=infrastructure-gcp)",
            ),
        ] {
            let (key, o) = live(yaml);
            match p.check(&key, &o, Recorded::No, true, AWS) {
                Ownership::Refused { reason } => assert!(reason.contains(expect), "{reason}"),
                other => panic!("{key}: {other:?}"),
            }
        }
    }

    /// `take_over` adopts only what the release's managers (or a retired installer) wrote alone;
    /// status writers and deriving managers do not count; a retired installer's object is adopted
    /// without it.
    #[test]
    fn a_take_over_adopts_only_an_object_as_the_release_applied_it() {
        let p = policy().retire(["cluster-capi-operator"]);
        let crd = |managers: &str| {
            live(&format!(
                "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: ipaddresses.ipam.cluster.x-k8s.io, managedFields: [{managers}]}}\n"
            ))
        };
        let (key, released) = crd(
            "{manager: cluster-version-operator, operation: Apply}, {manager: kube-apiserver, operation: Update, subresource: status}",
        );
        assert_eq!(
            p.check(&key, &released, Recorded::No, true, AWS),
            Ownership::Adoptable
        );
        // Without take_over, the release's object stays the release's.
        assert!(matches!(
            p.check(&key, &released, Recorded::No, false, AWS),
            Ownership::Foreign { .. }
        ));
        let (_, edited) = crd(
            "{manager: cluster-version-operator, operation: Apply}, {manager: kube-apiserver, operation: Update}",
        );
        match p.check(&key, &edited, Recorded::No, true, AWS) {
            Ownership::Refused { reason } => assert!(
                reason.contains("written by [cluster-version-operator, kube-apiserver]"),
                "{reason}"
            ),
            other => panic!("{other:?}"),
        }
        let (_, aggregated) = crd(
            "{manager: cluster-version-operator, operation: Apply}, {manager: clusterrole-aggregation-controller, operation: Update}",
        );
        assert_eq!(
            p.check(&key, &aggregated, Recorded::No, true, AWS),
            Ownership::Adoptable
        );
        let (_, reference) = crd("{manager: cluster-capi-operator, operation: Apply}");
        assert_eq!(
            p.check(&key, &reference, Recorded::No, false, AWS),
            Ownership::Adoptable
        );
        let (_, admins) = crd("{manager: kubectl, operation: Apply}");
        assert!(matches!(
            p.check(&key, &admins, Recorded::No, true, AWS),
            Ownership::Refused { .. }
        ));
    }
}
