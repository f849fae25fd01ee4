//! Inventory: what was applied per owner, kept in a ConfigMap so prune survives restarts.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use serde::{Deserialize, Serialize};

use crate::key::ObjectKey;
use crate::ownership::Recorded;
use crate::plan::{Phase, Plan};
use crate::prune::PruneTarget;
use crate::resolve::KindResolver;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Entry {
    #[serde(flatten)]
    key: ObjectKey,
    phase: Phase,
    /// It existed before we first applied it (we adopted it): prune releases it, never deletes it.
    /// Absent in what earlier versions stored: those objects are treated as created by us.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    adopted: bool,
    /// Recorded to be created, and not yet seen written by us: see [`Inventory::pending`].
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pending: bool,
    /// The UID of the object our last write answered with: see [`Inventory::uids`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    uid: Option<String>,
}

/// The objects an owner (an arbitrary string id, e.g. a provider name) has applied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inventory {
    pub owner: String,
    pub entries: BTreeMap<ObjectKey, Phase>,
    /// The entries that existed before the owner first applied them (adopted, not created): prune
    /// releases them instead of deleting them. A subset of `entries`' keys.
    pub adopted: BTreeSet<ObjectKey>,
    /// The entries recorded to be created (the intent, saved before the first write) whose creation
    /// by us is not confirmed yet: an object found under such a name is ours only if our own apply
    /// created it ([`crate::OwnershipPolicy::created_by_us`]), not whoever created it between our
    /// check and our write. A subset of `entries`' keys.
    pub pending: BTreeSet<ObjectKey>,
    /// The UID of each object as our last write of it answered (absent for what earlier versions
    /// stored, until the next write): an object found under a recorded name with another UID was
    /// deleted and created again since, and is ours only if our own apply created it
    /// ([`Recorded::Replaced`]), not whoever re-created it first. Keys are among `entries`' keys.
    pub uids: BTreeMap<ObjectKey, String>,
    /// The caller's own structured state, stored with the inventory and opaque to the engine (e.g.
    /// what the owner last rolled out, so that it survives a restart). `None` stores nothing.
    pub record: Option<serde_json::Value>,
}

/// The stored form of one owner: the objects, and the caller's record when there is one.
#[derive(Serialize, Deserialize)]
struct Stored {
    objects: Vec<Entry>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    record: Option<serde_json::Value>,
}

/// Earlier versions stored the bare list of objects; they are still read.
#[derive(Deserialize)]
#[serde(untagged)]
enum AnyStored {
    Current(Stored),
    Objects(Vec<Entry>),
}

impl Inventory {
    pub fn new(owner: impl Into<String>) -> Self {
        Inventory {
            owner: owner.into(),
            entries: BTreeMap::new(),
            adopted: BTreeSet::new(),
            pending: BTreeSet::new(),
            uids: BTreeMap::new(),
            record: None,
        }
    }

    /// Everything in `plan`.
    pub fn from_plan(owner: impl Into<String>, plan: &Plan) -> Self {
        let mut inv = Self::new(owner);
        for p in &plan.phases {
            for o in &p.objects {
                inv.insert(o.key.clone(), p.phase);
            }
        }
        inv
    }

    /// Records `key`, replacing an entry for the same object: the stored version follows the plan (a
    /// map keeps an equal key's first version, and an inventory that kept `v1alpha1` after the plan
    /// moved to `v1beta1` would resolve the object with a version that may no longer be served).
    pub fn insert(&mut self, key: ObjectKey, phase: Phase) {
        self.entries.remove(&key);
        if self.adopted.remove(&key) {
            self.adopted.insert(key.clone());
        }
        if self.pending.remove(&key) {
            self.pending.insert(key.clone());
        }
        if let Some(uid) = self.uids.remove(&key) {
            self.uids.insert(key.clone(), uid);
        }
        self.entries.insert(key, phase);
    }

    /// Marks `key` (an entry) as recorded to be created, not yet confirmed: see [`Self::pending`].
    pub fn mark_pending(&mut self, key: &ObjectKey) {
        if let Some((k, _)) = self.entries.get_key_value(key) {
            self.pending.replace(k.clone());
        }
    }

    /// Confirms that `key` is ours as written (our apply created it, or wrote it after finding it
    /// ours); `true` when it was pending.
    pub fn confirm(&mut self, key: &ObjectKey) -> bool {
        self.pending.remove(key)
    }

    /// Records `uid` as the UID our write of `key` (an entry) answered with: see [`Self::uids`].
    pub fn set_uid(&mut self, key: &ObjectKey, uid: Option<&str>) {
        if let (Some((k, _)), Some(uid)) = (self.entries.get_key_value(key), uid) {
            self.uids.insert(k.clone(), uid.to_string());
        }
    }

    /// Carries over from `old` the UIDs of `self`'s entries.
    pub fn uids_from(&mut self, old: &Inventory) {
        for (key, uid) in &old.uids {
            self.set_uid(key, Some(uid));
        }
    }

    /// Every entry of `self` that `old` does not hold, marked pending: what this version will create.
    /// Entries `old` holds keep what `old` says (still pending if they were).
    pub fn pending_from(&mut self, old: &Inventory) {
        let keys: Vec<ObjectKey> = self
            .entries
            .keys()
            .filter(|k| {
                !self.adopted.contains(*k) && (!old.contains(k) || old.pending.contains(*k))
            })
            .cloned()
            .collect();
        for key in &keys {
            self.mark_pending(key);
        }
    }

    /// Marks `key` (an entry) as adopted: see [`Self::adopted`].
    pub fn mark_adopted(&mut self, key: &ObjectKey) {
        if let Some((k, _)) = self.entries.get_key_value(key) {
            self.adopted.replace(k.clone());
        }
    }

    /// Whether `key` was adopted (see [`Self::adopted`]).
    pub fn is_adopted(&self, key: &ObjectKey) -> bool {
        self.adopted.contains(key)
    }

    /// Carries over from `old` which of `self`'s entries were adopted: an object stays adopted for as
    /// long as it is in the inventory, whichever version applies it.
    pub fn adopted_from(&mut self, old: &Inventory) {
        let keys: Vec<ObjectKey> = self
            .entries
            .keys()
            .filter(|k| old.is_adopted(k))
            .cloned()
            .collect();
        for key in &keys {
            self.mark_adopted(key);
        }
    }

    pub fn contains(&self, key: &ObjectKey) -> bool {
        self.entries.contains_key(key)
    }

    /// What this record says of `key`, found live with `live_uid` (`None`: not found, or not known):
    /// what the owner may write is decided by it ([`crate::OwnershipPolicy::check`]).
    pub fn recorded(&self, key: &ObjectKey, live_uid: Option<&str>) -> Recorded {
        match (self.contains(key), self.is_adopted(key)) {
            (false, _) => Recorded::No,
            (true, true) => Recorded::Adopted,
            (true, false) if self.pending.contains(key) => Recorded::Intended,
            (true, false) => match (self.uids.get(key), live_uid) {
                (Some(ours), Some(live)) if ours != live => Recorded::Replaced,
                _ => Recorded::Created,
            },
        }
    }

    /// `self − new`: what this inventory has and `new` does not, in prune order (reverse phase order,
    /// reverse apply order inside a phase).
    pub fn stale(&self, new: &Inventory) -> Vec<(ObjectKey, Phase)> {
        let mut out: Vec<(ObjectKey, Phase)> = self
            .entries
            .iter()
            .filter(|(k, _)| !new.contains(k))
            .map(|(k, p)| (k.clone(), *p))
            .collect();
        crate::prune::sort_for_prune(&mut out);
        out
    }

    /// [`Self::stale`] as prune targets, each resolved with `resolver`, which must be fresh (discovery
    /// run after the new version's CRDs were applied): the recorded version when it is still served,
    /// else any served version of the same kind (the object is the same in every version). A kind that
    /// is not served at all resolves to `None`, which prune counts as deleted: no such object can exist.
    pub fn prune_targets(&self, new: &Inventory, resolver: &KindResolver) -> Vec<PruneTarget> {
        self.stale(new)
            .into_iter()
            .map(|(key, phase)| PruneTarget {
                adopted: self.is_adopted(&key),
                pending: self.pending.contains(&key),
                uid: self.uids.get(&key).cloned(),
                resource: resolver
                    .resolve_key(&key)
                    .or_else(|| resolver.resolve_any_version(&key.group, &key.kind))
                    .map(|r| r.resource.clone()),
                key,
                phase,
            })
            .collect()
    }

    /// Copies `keys` (with their phases) from `old` into `self`: what a prune kept and must retry
    /// (see [`crate::PruneReport::retry_keys`]) stays in the stored inventory.
    pub fn retain_from<'a>(
        &mut self,
        old: &Inventory,
        keys: impl IntoIterator<Item = &'a ObjectKey>,
    ) {
        for key in keys {
            if let Some((k, phase)) = old.entries.get_key_value(key) {
                self.entries.insert(k.clone(), *phase);
                if old.is_adopted(k) {
                    self.adopted.replace(k.clone());
                }
                if old.pending.contains(k) {
                    self.pending.replace(k.clone());
                }
                if let Some(uid) = old.uids.get(k) {
                    self.uids.insert(k.clone(), uid.clone());
                }
            }
        }
    }

    /// Canonical JSON, `{"objects": [...], "record": ...}`: objects sorted by phase, then apply order.
    pub fn to_json(&self) -> String {
        let mut entries: Vec<Entry> = self
            .entries
            .iter()
            .map(|(key, phase)| Entry {
                key: key.clone(),
                phase: *phase,
                adopted: self.adopted.contains(key),
                pending: self.pending.contains(key),
                uid: self.uids.get(key).cloned(),
            })
            .collect();
        entries.sort_by(|a, b| {
            a.phase
                .cmp(&b.phase)
                .then_with(|| crate::plan::apply_order(&a.key, &b.key))
        });
        let stored = Stored {
            objects: entries,
            record: self.record.clone(),
        };
        serde_json::to_string_pretty(&stored).expect("inventory entries serialize")
    }

    /// Reads [`Self::to_json`]'s form, or the bare list of objects earlier versions stored.
    pub fn from_json(owner: impl Into<String>, json: &str) -> Result<Self, serde_json::Error> {
        let (entries, record) = match serde_json::from_str(json)? {
            AnyStored::Current(s) => (s.objects, s.record),
            AnyStored::Objects(entries) => (entries, None),
        };
        let flagged = |flag: fn(&Entry) -> bool| {
            entries
                .iter()
                .filter(|e| flag(e))
                .map(|e| e.key.clone())
                .collect()
        };
        let (adopted, pending) = (flagged(|e| e.adopted), flagged(|e| e.pending));
        let uids = entries
            .iter()
            .filter_map(|e| Some((e.key.clone(), e.uid.clone()?)))
            .collect();
        Ok(Inventory {
            owner: owner.into(),
            uids,
            entries: entries.into_iter().map(|e| (e.key, e.phase)).collect(),
            adopted,
            pending,
            record,
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum InventoryError {
    #[error("ConfigMap {namespace}/{name}: {source}")]
    Api {
        namespace: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("ConfigMap {namespace}/{name}: key {owner:?} is not a valid inventory: {source}")]
    Decode {
        namespace: String,
        name: String,
        owner: String,
        #[source]
        source: serde_json::Error,
    },
}

/// Where inventories live: one ConfigMap, one data key per owner.
#[derive(Clone)]
pub struct InventoryStore {
    client: Client,
    namespace: String,
    name: String,
    field_manager: String,
}

impl InventoryStore {
    pub fn new(
        client: Client,
        namespace: impl Into<String>,
        name: impl Into<String>,
        field_manager: impl Into<String>,
    ) -> Self {
        InventoryStore {
            client,
            namespace: namespace.into(),
            name: name.into(),
            field_manager: field_manager.into(),
        }
    }

    fn api(&self) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    fn err(&self, source: kube::Error) -> InventoryError {
        InventoryError::Api {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            source,
        }
    }

    /// The stored inventory of `owner`; an empty one when the ConfigMap or key does not exist.
    pub async fn load(&self, owner: &str) -> Result<Inventory, InventoryError> {
        let cm = self
            .api()
            .get_opt(&self.name)
            .await
            .map_err(|e| self.err(e))?;
        match cm.and_then(|cm| cm.data).and_then(|mut d| d.remove(owner)) {
            None => Ok(Inventory::new(owner)),
            Some(json) => {
                Inventory::from_json(owner, &json).map_err(|source| InventoryError::Decode {
                    namespace: self.namespace.clone(),
                    name: self.name.clone(),
                    owner: owner.to_owned(),
                    source,
                })
            }
        }
    }

    /// Every key the ConfigMap holds (the stored inventories, as text); empty when it does not exist.
    pub async fn data(&self) -> Result<BTreeMap<String, String>, InventoryError> {
        let cm = self
            .api()
            .get_opt(&self.name)
            .await
            .map_err(|e| self.err(e))?;
        Ok(cm.and_then(|cm| cm.data).unwrap_or_default())
    }

    /// Stores `inv` under its owner's key. Writes only when the stored text differs (read first);
    /// returns whether it wrote. Other owners' keys are left alone.
    pub async fn save(&self, inv: &Inventory) -> Result<bool, InventoryError> {
        let current = self
            .api()
            .get_opt(&self.name)
            .await
            .map_err(|e| self.err(e))?;
        let json = inv.to_json();
        if current
            .as_ref()
            .and_then(|cm| cm.data.as_ref())
            .and_then(|d| d.get(&inv.owner))
            == Some(&json)
        {
            return Ok(false);
        }
        self.write(&[inv], &[], current.is_some()).await?;
        Ok(true)
    }

    /// Stores each of `inventories` under its owner's key and removes the keys `removed`, in one
    /// request, without reading the ConfigMap first: for a caller that knows what is stored (from a
    /// watch of it and its own writes) and has decided these keys must change. Other owners' keys are
    /// left alone (a merge patch). `exists` is whether the caller believes the ConfigMap exists: when
    /// not, it is created first (and patched when it does exist after all), else patched first (and
    /// created when it does not).
    pub async fn write(
        &self,
        inventories: &[&Inventory],
        removed: &[&str],
        exists: bool,
    ) -> Result<(), InventoryError> {
        if inventories.is_empty() && removed.is_empty() {
            return Ok(());
        }
        if !exists && !inventories.is_empty() && self.create(inventories).await? {
            return Ok(());
        }
        let mut data = serde_json::Map::new();
        for inv in inventories {
            data.insert(inv.owner.clone(), inv.to_json().into());
        }
        for owner in removed {
            data.insert((*owner).to_string(), serde_json::Value::Null);
        }
        let params = PatchParams {
            field_manager: Some(self.field_manager.clone()),
            ..Default::default()
        };
        let patch = serde_json::json!({ "data": data });
        match self
            .api()
            .patch(&self.name, &params, &Patch::Merge(&patch))
            .await
        {
            Ok(_) => Ok(()),
            // No ConfigMap: nothing to remove from it; the keys to store create it (deleted and
            // created again between the two requests, it is an error the caller retries).
            Err(kube::Error::Api(s)) if s.code == 404 => {
                if !inventories.is_empty() && !self.create(inventories).await? {
                    return Err(self.err(kube::Error::Api(s)));
                }
                Ok(())
            }
            Err(e) => Err(self.err(e)),
        }
    }

    /// Creates the ConfigMap with `inventories`; `false` when it exists already.
    async fn create(&self, inventories: &[&Inventory]) -> Result<bool, InventoryError> {
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                namespace: Some(self.namespace.clone()),
                ..Default::default()
            },
            data: Some(
                inventories
                    .iter()
                    .map(|inv| (inv.owner.clone(), inv.to_json()))
                    .collect(),
            ),
            ..Default::default()
        };
        let params = PostParams {
            field_manager: Some(self.field_manager.clone()),
            ..Default::default()
        };
        match self.api().create(&params, &cm).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(e) => Err(self.err(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(group: &str, kind: &str, ns: Option<&str>, name: &str) -> ObjectKey {
        ObjectKey::new(group, "v1", kind, ns, name)
    }

    fn inv(entries: &[(ObjectKey, Phase)]) -> Inventory {
        let mut i = Inventory::new("aws");
        for (key, phase) in entries {
            i.insert(key.clone(), *phase);
        }
        i
    }

    #[test]
    fn stale_is_old_minus_new_in_prune_order() {
        let crd = k(
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            None,
            "widgets.example.io",
        );
        let widget = k("example.io", "Widget", Some("ns"), "w");
        let ns = k("", "Namespace", None, "ns");
        let cm = k("", "ConfigMap", Some("ns"), "c");
        let sa = k("", "ServiceAccount", Some("ns"), "sa");
        let dep = k("apps", "Deployment", Some("ns"), "d");
        let vwc = k(
            "admissionregistration.k8s.io",
            "ValidatingWebhookConfiguration",
            None,
            "v",
        );
        let old = inv(&[
            (crd.clone(), Phase::CustomResourceDefinitions),
            (widget.clone(), Phase::Base),
            (ns.clone(), Phase::Base),
            (cm.clone(), Phase::Base),
            (sa.clone(), Phase::Base),
            (dep.clone(), Phase::Workloads),
            (vwc.clone(), Phase::Admission),
        ]);
        let new = inv(&[(cm.clone(), Phase::Base)]);
        let stale: Vec<String> = old
            .stale(&new)
            .iter()
            .map(|(k, p)| format!("{p} {k}"))
            .collect();
        assert_eq!(
            stale,
            vec![
                "Admission ValidatingWebhookConfiguration v",
                "Workloads Deployment ns/d",
                "Base Widget ns/w",
                "Base ServiceAccount ns/sa",
                "Base Namespace ns",
                "CustomResourceDefinitions CustomResourceDefinition widgets.example.io",
            ]
        );
        assert!(new.stale(&old).is_empty());
        assert!(old.stale(&old).is_empty());
    }

    #[test]
    fn kept_objects_are_retained_with_their_phase() {
        let crd = k(
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            None,
            "widgets.example.io",
        );
        let old = inv(&[
            (crd.clone(), Phase::CustomResourceDefinitions),
            (k("", "ConfigMap", Some("ns"), "c"), Phase::Base),
        ]);
        let mut new = inv(&[]);
        new.retain_from(&old, [&crd, &k("", "Secret", Some("ns"), "not-in-old")]);
        assert_eq!(
            new.entries.into_iter().collect::<Vec<_>>(),
            vec![(crd, Phase::CustomResourceDefinitions)]
        );
    }

    #[test]
    fn prune_targets_resolve_kinds() {
        let old = inv(&[
            (k("", "ConfigMap", Some("ns"), "c"), Phase::Base),
            (k("gone.io", "Thing", None, "t"), Phase::Base),
        ]);
        let targets = old.prune_targets(&inv(&[]), &crate::testutil::resolver());
        let got: Vec<(String, Option<String>)> = targets
            .iter()
            .map(|t| {
                (
                    t.key.to_string(),
                    t.resource.as_ref().map(|r| r.plural.clone()),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("Thing t".to_owned(), None),
                ("ConfigMap ns/c".to_owned(), Some("configmaps".to_owned()))
            ]
        );
    }

    #[test]
    fn a_version_change_is_recorded_and_prune_finds_any_served_version() {
        let mut inv = inv(&[(
            ObjectKey::new("example.io", "v1alpha1", "Widget", None, "w"),
            Phase::Base,
        )]);
        inv.insert(
            ObjectKey::new("example.io", "v1beta1", "Widget", None, "w"),
            Phase::Base,
        );
        let stored: Vec<&str> = inv.entries.keys().map(|k| k.version.as_str()).collect();
        assert_eq!(stored, ["v1beta1"]);

        // The recorded version is no longer served; another version of the kind is.
        let old = Inventory {
            owner: "aws".into(),
            entries: [(
                ObjectKey::new("apps", "v1beta2", "Deployment", Some("ns"), "d"),
                Phase::Workloads,
            )]
            .into_iter()
            .collect(),
            adopted: Default::default(),
            pending: Default::default(),
            uids: Default::default(),
            record: None,
        };
        let targets = old.prune_targets(&Inventory::new("aws"), &crate::testutil::resolver());
        let resource = targets[0].resource.as_ref().expect("resolved");
        assert_eq!(
            (resource.version.as_str(), resource.plural.as_str()),
            ("v1", "deployments")
        );
    }

    #[test]
    fn a_version_change_is_not_stale() {
        let old = inv(&[(
            ObjectKey::new("example.io", "v1beta1", "Widget", None, "w"),
            Phase::Base,
        )]);
        let new = inv(&[(
            ObjectKey::new("example.io", "v1", "Widget", None, "w"),
            Phase::Base,
        )]);
        assert!(old.stale(&new).is_empty());
    }

    #[test]
    fn json_round_trip_is_sorted_and_stable() {
        let a = inv(&[
            (k("apps", "Deployment", Some("ns"), "d"), Phase::Workloads),
            (k("", "Namespace", None, "ns"), Phase::Base),
            (k("", "ConfigMap", Some("ns"), "c"), Phase::Base),
        ]);
        let json = a.to_json();
        let parsed: serde_json::Value = serde_json::from_str(&json).unwrap();
        let objects = serde_json::json!([
            {"group": "", "version": "v1", "kind": "Namespace", "name": "ns", "phase": "Base"},
            {"group": "", "version": "v1", "kind": "ConfigMap", "namespace": "ns", "name": "c", "phase": "Base"},
            {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "ns", "name": "d", "phase": "Workloads"},
        ]);
        assert_eq!(parsed, serde_json::json!({ "objects": objects }));
        let back = Inventory::from_json("aws", &json).unwrap();
        assert_eq!(back, a);
        assert_eq!(back.to_json(), json);
        assert!(Inventory::from_json("aws", "{not json").is_err());

        // The caller's record round-trips; the bare list of earlier versions is still read.
        let mut with_record = a.clone();
        with_record.record = Some(serde_json::json!({"state": "Installed"}));
        let back = Inventory::from_json("aws", &with_record.to_json()).unwrap();
        assert_eq!(back, with_record);
        let legacy = Inventory::from_json("aws", &objects.to_string()).unwrap();
        assert_eq!(legacy, a);
    }

    /// What a version will create is pending until confirmed; what the old record held keeps its
    /// state; the mark is stored, read back, and absent from earlier records (confirmed).
    #[test]
    fn names_to_create_are_pending_until_confirmed() {
        let cm = k("", "ConfigMap", Some("ns"), "c");
        let created = k("", "ConfigMap", Some("ns"), "created-before");
        let unconfirmed = k("", "ConfigMap", Some("ns"), "left-pending");
        let mut old = inv(&[
            (created.clone(), Phase::Base),
            (unconfirmed.clone(), Phase::Base),
        ]);
        old.mark_pending(&unconfirmed);
        let mut new = inv(&[
            (cm.clone(), Phase::Base),
            (created.clone(), Phase::Base),
            (unconfirmed.clone(), Phase::Base),
        ]);
        new.pending_from(&old);
        assert_eq!(
            new.pending,
            BTreeSet::from([cm.clone(), unconfirmed.clone()])
        );
        assert_eq!(new.recorded(&cm, None), Recorded::Intended);
        assert_eq!(new.recorded(&created, None), Recorded::Created);
        let json = new.to_json();
        assert_eq!(Inventory::from_json("aws", &json).unwrap(), new);
        assert!(new.confirm(&cm));
        assert!(!new.confirm(&cm));
        assert_eq!(new.recorded(&cm, None), Recorded::Created);
        let targets = new.prune_targets(&inv(&[]), &crate::testutil::resolver());
        let pending: Vec<(String, bool)> = targets
            .iter()
            .map(|t| (t.key.name.clone(), t.pending))
            .collect();
        assert_eq!(
            pending,
            [
                ("left-pending".into(), true),
                ("created-before".into(), false),
                ("c".into(), false)
            ]
        );
    }

    /// The UID of each object as our write answered is stored, carried to the next version and to
    /// what a prune keeps; another UID under a recorded name says the object was created again.
    #[test]
    fn uids_are_recorded_carried_over_and_tell_a_re_created_object() {
        let cm = k("", "ConfigMap", Some("ns"), "c");
        let older = k("", "ConfigMap", Some("ns"), "from-an-earlier-version");
        let mut old = inv(&[(cm.clone(), Phase::Base), (older.clone(), Phase::Base)]);
        old.set_uid(&cm, Some("u-1"));
        old.set_uid(&k("", "Secret", Some("ns"), "not-an-entry"), Some("u-2"));
        assert_eq!(old.uids.len(), 1);
        let json = old.to_json();
        let parsed: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(parsed["objects"][0]["uid"], "u-1", "{json}");
        assert_eq!(parsed["objects"][1].get("uid"), None, "{json}");
        assert_eq!(Inventory::from_json("aws", &json).unwrap(), old);

        assert_eq!(old.recorded(&cm, Some("u-1")), Recorded::Created);
        assert_eq!(old.recorded(&cm, Some("u-9")), Recorded::Replaced);
        assert_eq!(old.recorded(&cm, None), Recorded::Created);
        // Stored before UIDs were: as before, until the next write records one.
        assert_eq!(old.recorded(&older, Some("u-9")), Recorded::Created);

        let mut new = inv(&[(cm.clone(), Phase::Base)]);
        new.uids_from(&old);
        assert_eq!(new.recorded(&cm, Some("u-9")), Recorded::Replaced);
        let targets = old.prune_targets(&inv(&[]), &crate::testutil::resolver());
        assert_eq!(
            targets.iter().find(|t| t.key == cm).unwrap().uid.as_deref(),
            Some("u-1")
        );
        let mut kept = inv(&[]);
        kept.retain_from(&old, [&cm]);
        assert_eq!(kept.uids.get(&cm).map(String::as_str), Some("u-1"));
    }

    #[test]
    fn adoptions_are_recorded_carried_over_and_absent_from_earlier_records() {
        let crd = k(
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            None,
            "widgets.example.io",
        );
        let cm = k("", "ConfigMap", Some("ns"), "c");
        let mut old = inv(&[
            (crd.clone(), Phase::CustomResourceDefinitions),
            (cm.clone(), Phase::Base),
        ]);
        old.mark_adopted(&crd);
        old.mark_adopted(&k("", "Secret", Some("ns"), "not-an-entry"));
        assert_eq!(old.adopted.iter().collect::<Vec<_>>(), [&crd]);
        let json = old.to_json();
        let parsed: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(parsed["objects"][0]["adopted"], true, "{json}");
        assert_eq!(parsed["objects"][1].get("adopted"), None, "{json}");
        assert_eq!(Inventory::from_json("aws", &json).unwrap(), old);

        // A later version keeps the mark while it holds the object; prune releases what it drops.
        let mut new = inv(&[(crd.clone(), Phase::CustomResourceDefinitions)]);
        new.adopted_from(&old);
        assert!(new.is_adopted(&crd));
        let targets = old.prune_targets(&inv(&[]), &crate::testutil::resolver());
        let adopted: Vec<(String, bool)> = targets
            .iter()
            .map(|t| (t.key.name.clone(), t.adopted))
            .collect();
        assert_eq!(
            adopted,
            [("c".into(), false), ("widgets.example.io".into(), true)]
        );
        let mut kept = inv(&[]);
        kept.retain_from(&old, [&crd]);
        assert!(kept.is_adopted(&crd));

        // What earlier versions stored has no mark: created, so pruned as before.
        let legacy = r#"{"objects": [{"group": "", "version": "v1", "kind": "ConfigMap", "namespace": "ns", "name": "c", "phase": "Base"}]}"#;
        assert!(
            Inventory::from_json("aws", legacy)
                .unwrap()
                .adopted
                .is_empty()
        );
    }
}
