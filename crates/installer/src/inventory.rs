//! What each provider applied (the apply engine's inventory, one key per source in ConfigMap
//! `capi-installer-inventory`) and, stored with it, the provider's record: where it stands, structured,
//! so that `capi-installer status` reads it instead of parsing condition messages.

use std::collections::HashMap;
use std::sync::Mutex;

use capi_apply::{Inventory, InventoryError, InventoryStore};
use serde::{Deserialize, Serialize};

use crate::outcome::{Outcome, ProviderState};
use crate::source::SourceId;

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
    /// The version label of the content last reconciled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// `Installed`, `Progressing`, `Blocked` or `Failed`.
    pub state: String,
    /// The phase a Progressing provider waits in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// The last failure, while the provider fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<FailureRecord>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FailureRecord {
    pub reason: String,
    pub message: String,
    pub attempts: u32,
}

impl ProviderRecord {
    pub fn of(outcome: &Outcome) -> Self {
        let source = &outcome.target.source;
        ProviderRecord {
            provider: source.name.clone(),
            provider_type: source.provider_type.label().to_string(),
            source: source.id.to_string(),
            version: source.version.clone(),
            state: outcome.state.name().to_string(),
            phase: match &outcome.state {
                ProviderState::Progressing { phase, .. } => Some(phase.to_string()),
                _ => None,
            },
            failure: match &outcome.state {
                ProviderState::Failed {
                    error, attempts, ..
                } => Some(FailureRecord {
                    reason: error.reason().to_string(),
                    message: error.to_string(),
                    attempts: *attempts,
                }),
                _ => None,
            },
        }
    }

    /// The record stored in `inventory`, if it has a readable one.
    pub fn read(inventory: &Inventory) -> Option<Self> {
        serde_json::from_value(inventory.record.clone()?).ok()
    }
}

/// The inventories of every provider, as last loaded or saved (the installer is their only writer).
pub struct Inventories {
    store: InventoryStore,
    cache: Mutex<HashMap<String, Inventory>>,
}

impl Inventories {
    pub fn new(store: InventoryStore) -> Self {
        Inventories {
            store,
            cache: Mutex::default(),
        }
    }

    pub async fn load(&self, id: &SourceId) -> Result<Inventory, InventoryError> {
        let key = id.inventory_key();
        if let Some(inv) = self.cache.lock().expect("inventories").get(&key) {
            return Ok(inv.clone());
        }
        let inv = self.store.load(&key).await?;
        self.cache
            .lock()
            .expect("inventories")
            .insert(key, inv.clone());
        Ok(inv)
    }

    /// Stores `inv` (written only when it differs from what is stored).
    pub async fn save(&self, inv: &Inventory) -> Result<(), InventoryError> {
        if self.store.save(inv).await? {
            tracing::info!(owner = %inv.owner, objects = inv.entries.len(), "inventory recorded");
        }
        self.cache
            .lock()
            .expect("inventories")
            .insert(inv.owner.clone(), inv.clone());
        Ok(())
    }

    /// Stores a provider's record with its inventory, when it changed.
    pub async fn save_record(
        &self,
        id: &SourceId,
        record: &ProviderRecord,
    ) -> Result<(), InventoryError> {
        let mut inv = self.load(id).await?;
        let value = serde_json::to_value(record).expect("a record serializes");
        if inv.record.as_ref() == Some(&value) {
            return Ok(());
        }
        inv.record = Some(value);
        self.save(&inv).await
    }
}
