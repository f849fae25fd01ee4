//! What each provider applied (the apply engine's inventory, one key per source in ConfigMap
//! `capi-installer-inventory`) and, stored with it, the provider's record: where it stands, what was
//! last fully rolled out, and its failure series — structured, durable across restarts and leader
//! changes, and read by `capi-installer status` instead of condition messages.
//!
//! The ConfigMap is watched. The installer is its only writer and keeps what it wrote in memory: a key
//! that is deleted or edited while it runs is written back from memory; a key that is missing or
//! unreadable when a process first needs it is rebuilt from the provider's labelled live objects (see
//! [`crate::reconcile`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;

use capi_apply::{Inventory, InventoryError, InventoryStore, ObjectKey};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::runtime::reflector;
use serde::{Deserialize, Serialize};

use crate::outcome::ProviderState;
use crate::source::{SourceId, Target};

/// A provider's state as last reported, kept with its inventory. Written only when it changes, so a
/// steady state writes nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderRecord {
    /// `provider.cluster.x-k8s.io/name` of the source.
    pub provider: String,
    /// `core` or `infrastructure`.
    #[serde(rename = "type")]
    pub provider_type: String,
    /// The source as status names it, e.g. `ConfigMap aws`.
    pub source: String,
    /// The `cluster.x-k8s.io/provider` value of its objects: which provider owns them.
    #[serde(default)]
    pub label: String,
    /// The version label of the content last reconciled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// `Installed`, `Progressing`, `Blocked` or `Failed`.
    pub state: String,
    /// The phase a Progressing provider waits in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// The last version that was fully rolled out: every object applied and ready, every Deployment
    /// Available at its current generation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolled_out: Option<RolledOut>,
    /// The current failure series, while the provider fails (kept while it is blocked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<FailureRecord>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RolledOut {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) version: Option<String>,
    /// The content digest of that version (rendered objects).
    pub(crate) digest: String,
    /// When it was first seen fully rolled out (RFC 3339).
    pub(crate) at: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FailureRecord {
    pub reason: String,
    pub message: String,
    /// Attempts counted towards `Degraded`.
    pub attempts: u32,
    /// When the series began (RFC 3339).
    pub since: String,
}

impl ProviderRecord {
    /// The record after a reconcile of `target` that ended in `state`, continuing `previous`.
    /// `rolled_out` is the content digest of the version reconciled when it has just been seen fully
    /// rolled out; `now` is RFC 3339.
    pub(crate) fn next(
        previous: Option<&ProviderRecord>,
        target: &Target,
        state: &ProviderState,
        rolled_out: Option<&str>,
        now: &str,
    ) -> Self {
        let source = &target.source;
        let rolled_out = match rolled_out {
            Some(digest) => Some(RolledOut {
                version: source.version.clone(),
                digest: digest.to_string(),
                at: previous
                    .and_then(|p| p.rolled_out.as_ref())
                    .filter(|r| r.digest == digest)
                    .map_or_else(|| now.to_string(), |r| r.at.clone()),
            }),
            _ => previous.and_then(|p| p.rolled_out.clone()),
        };
        let previous_failure = previous.and_then(|p| p.failure.clone());
        let failure = match state {
            ProviderState::Failed {
                error, attempts, ..
            } => Some(FailureRecord {
                reason: error.reason().to_string(),
                message: error.to_string(),
                attempts: *attempts,
                since: previous_failure.map_or_else(|| now.to_string(), |f| f.since),
            }),
            ProviderState::Blocked { .. } => previous_failure,
            _ => None,
        };
        ProviderRecord {
            provider: source.name.clone(),
            provider_type: source.provider_type.label().to_string(),
            source: source.id.to_string(),
            label: target.clusterctl_label.clone(),
            version: source.version.clone(),
            state: state.name().to_string(),
            phase: match state {
                ProviderState::Progressing { phase, .. } => Some(phase.to_string()),
                _ => None,
            },
            rolled_out,
            failure,
        }
    }

    /// The record stored in `inventory`, if it has a readable one.
    pub fn read(inventory: &Inventory) -> Option<Self> {
        serde_json::from_value(inventory.record.clone()?).ok()
    }
}

fn handed_over(
    owner: &SourceId,
    inv: &Inventory,
    label: &str,
    selected: &BTreeSet<SourceId>,
) -> bool {
    !selected.contains(owner) && ProviderRecord::read(inv).is_some_and(|r| r.label == label)
}

/// What the inventory ConfigMap holds for one source.
#[derive(Debug)]
pub(crate) enum Stored {
    Missing,
    Unreadable(String),
    Found(Inventory),
}

/// The inventories of every provider: what this process holds (memory, authoritative while it runs)
/// over what the watched ConfigMap holds.
///
/// A change is either saved at once ([`Self::save`]: what must be stored before the next write to the
/// cluster, e.g. the objects about to be created) or staged ([`Self::stage`]: a record, an inventory
/// that only shrank) and stored with the next save or [`Self::flush`] — the controller flushes once per
/// pass, before its status write. Either way every key that changed goes out in one merge patch, and
/// no request reads the ConfigMap first: what is stored is known from this process's own writes and,
/// for keys it has not written yet, from the watch.
pub(crate) struct Inventories {
    store: InventoryStore,
    live: reflector::Store<ConfigMap>,
    name: String,
    namespace: String,
    memory: Mutex<Memory>,
    /// Held from choosing what changed until the write is remembered: providers reconciled at once
    /// must not send one key's older text after another's newer one (each write carries every staged
    /// change), nor both create the ConfigMap.
    writing: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct Memory {
    /// The current inventory of every key this process saved or staged.
    inventories: HashMap<String, Inventory>,
    /// The text this process last stored (or found stored) under each key.
    stored: HashMap<String, String>,
}

impl Inventories {
    pub(crate) fn new(
        store: InventoryStore,
        live: reflector::Store<ConfigMap>,
        namespace: &str,
        name: &str,
    ) -> Self {
        Inventories {
            store,
            live,
            name: name.to_string(),
            namespace: namespace.to_string(),
            memory: Mutex::default(),
            writing: tokio::sync::Mutex::default(),
        }
    }

    fn object_ref(&self) -> reflector::ObjectRef<ConfigMap> {
        reflector::ObjectRef::new(&self.name).within(&self.namespace)
    }

    fn live_data(&self) -> BTreeMap<String, String> {
        self.live
            .get(&self.object_ref())
            .and_then(|cm| cm.data.clone())
            .unwrap_or_default()
    }

    /// What this process last loaded or saved for `id`.
    pub(crate) fn remembered(&self, id: &SourceId) -> Option<Inventory> {
        self.memory
            .lock()
            .expect("inventories")
            .inventories
            .get(&id.inventory_key())
            .cloned()
    }

    /// What the watched ConfigMap holds for `id` (no request).
    pub(crate) fn stored(&self, id: &SourceId) -> Stored {
        let key = id.inventory_key();
        match self.live_data().get(&key) {
            None => Stored::Missing,
            Some(json) => match Inventory::from_json(&key, json) {
                Ok(inv) => Stored::Found(inv),
                Err(e) => Stored::Unreadable(e.to_string()),
            },
        }
    }

    /// The inventory of `id` as this process knows it: memory, else a readable stored one, else empty.
    pub(crate) fn current(&self, id: &SourceId) -> Inventory {
        if let Some(inv) = self.remembered(id) {
            return inv;
        }
        match self.stored(id) {
            Stored::Found(inv) => inv,
            _ => Inventory::new(id.inventory_key()),
        }
    }

    /// Every inventory with objects: memory over the stored ones (unreadable ones left out).
    pub(crate) fn all(&self) -> Vec<(SourceId, Inventory)> {
        let mut all: BTreeMap<String, Inventory> = self
            .live_data()
            .iter()
            .filter_map(|(k, json)| Some((k.clone(), Inventory::from_json(k, json).ok()?)))
            .collect();
        for (k, inv) in self.memory.lock().expect("inventories").inventories.iter() {
            all.insert(k.clone(), inv.clone());
        }
        all.into_iter()
            .filter(|(_, inv)| !inv.entries.is_empty())
            .filter_map(|(k, inv)| Some((SourceId::from_inventory_key(&k)?, inv)))
            .collect()
    }

    /// Which other source's inventory holds each object. Left out: `id`'s own, and those `id` takes over
    /// ([`Self::handed_over`]).
    pub(crate) fn claims(
        &self,
        id: &SourceId,
        label: &str,
        selected: &BTreeSet<SourceId>,
    ) -> HashMap<ObjectKey, SourceId> {
        let mut claims = HashMap::new();
        for (owner, inv) in self.all() {
            if owner == *id || handed_over(&owner, &inv, label, selected) {
                continue;
            }
            for key in inv.entries.keys() {
                claims.insert(key.clone(), owner.clone());
            }
        }
        claims
    }

    /// The inventories a source of provider `label` takes over: those of sources that are no longer
    /// selected and whose objects belong to the same provider (a transport ConfigMap renamed, say).
    pub(crate) fn handed_over(
        &self,
        id: &SourceId,
        label: &str,
        selected: &BTreeSet<SourceId>,
    ) -> Vec<(SourceId, Inventory)> {
        self.all()
            .into_iter()
            .filter(|(owner, inv)| owner != id && handed_over(owner, inv, label, selected))
            .collect()
    }

    /// Removes a source's inventory (after another source of the same provider took it over), with
    /// every staged change.
    pub(crate) async fn remove(&self, id: &SourceId) -> Result<(), InventoryError> {
        let key = id.inventory_key();
        let present = {
            let mut memory = self.memory.lock().expect("inventories");
            memory.inventories.remove(&key);
            memory.stored.remove(&key).is_some() || self.live_data().contains_key(&key)
        };
        self.write_changes(present.then_some(key.as_str())).await
    }

    /// Stores `inv` now, with every staged change (nothing is sent when all of it is stored already),
    /// and remembers it.
    pub(crate) async fn save(&self, inv: &Inventory) -> Result<(), InventoryError> {
        self.stage(inv);
        self.write_changes(None).await
    }

    /// Remembers `inv` as the owner's current inventory, to be stored with the next [`Self::save`] or
    /// [`Self::flush`]: for changes whose loss in a crash is safe — the stored inventory still names
    /// everything that may exist (a restart prunes again what it names), and a record loses at most
    /// the pass it was staged in (its rolled-out revision is in the revision log too).
    pub(crate) fn stage(&self, inv: &Inventory) {
        self.memory
            .lock()
            .expect("inventories")
            .inventories
            .insert(inv.owner.clone(), inv.clone());
    }

    /// Stores every staged change, in one write (none when nothing changed).
    pub(crate) async fn flush(&self) -> Result<(), InventoryError> {
        self.write_changes(None).await
    }

    /// Stages a provider's record with its inventory (see [`Self::stage`]).
    pub(crate) fn stage_record(&self, id: &SourceId, record: &ProviderRecord) {
        let mut inv = self.current(id);
        inv.record = Some(serde_json::to_value(record).expect("a record serializes"));
        self.stage(&inv);
    }

    /// Writes every remembered inventory whose text differs from what this process last stored (or,
    /// for a key it has not stored, from what the watch shows), and removes `removed`: one merge
    /// patch.
    async fn write_changes(&self, removed: Option<&str>) -> Result<(), InventoryError> {
        let _writing = self.writing.lock().await;
        let live = self.live.get(&self.object_ref());
        let live_data = live
            .as_ref()
            .and_then(|cm| cm.data.clone())
            .unwrap_or_default();
        let (changed, exists): (Vec<(Inventory, String)>, bool) = {
            let mut memory = self.memory.lock().expect("inventories");
            // This process stored something there, or the watch shows it: patched first.
            let exists = live.is_some() || !memory.stored.is_empty();
            let Memory {
                inventories,
                stored,
            } = &mut *memory;
            let changed = inventories
                .values()
                .filter_map(|inv| {
                    let json = inv.to_json();
                    let known = stored.get(&inv.owner).or_else(|| live_data.get(&inv.owner));
                    if known == Some(&json) {
                        stored.insert(inv.owner.clone(), json);
                        return None;
                    }
                    Some((inv.clone(), json))
                })
                .collect();
            (changed, exists)
        };
        if changed.is_empty() && removed.is_none() {
            return Ok(());
        }
        let inventories: Vec<&Inventory> = changed.iter().map(|(inv, _)| inv).collect();
        self.store
            .write(&inventories, removed.as_slice(), exists)
            .await?;
        let mut memory = self.memory.lock().expect("inventories");
        for (inv, json) in changed {
            tracing::info!(owner = %inv.owner, objects = inv.entries.len(), "inventory recorded");
            memory.stored.insert(inv.owner, json);
        }
        Ok(())
    }

    /// Writes back every inventory this process holds whose stored copy was deleted or changed by
    /// someone else since (prune-retry entries and records included), with every staged change.
    /// Returns the keys written back. The watch may not show this process's latest write yet: a key it
    /// shows changed is read once to tell the two apart.
    pub(crate) async fn repair(&self) -> Vec<String> {
        let live = self.live_data();
        let suspects: Vec<(String, String)> = {
            let memory = self.memory.lock().expect("inventories");
            memory
                .inventories
                .values()
                .filter_map(|inv| {
                    let json = inv.to_json();
                    (live.get(&inv.owner) != Some(&json)
                        && memory.stored.get(&inv.owner) == Some(&json))
                    .then(|| (inv.owner.clone(), json))
                })
                .collect()
        };
        let mut changed = Vec::new();
        if !suspects.is_empty() {
            let stored = match self.store.data().await {
                Ok(stored) => stored,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read the inventory to repair it");
                    return Vec::new();
                }
            };
            let mut memory = self.memory.lock().expect("inventories");
            for (owner, json) in suspects {
                if stored.get(&owner) != Some(&json) {
                    memory.stored.remove(&owner);
                    changed.push(owner);
                }
            }
        }
        match self.write_changes(None).await {
            Ok(()) => {
                for owner in &changed {
                    tracing::warn!(%owner, "inventory was deleted or changed by someone else; written back");
                }
                changed
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot write the inventory back");
                Vec::new()
            }
        }
    }
}
