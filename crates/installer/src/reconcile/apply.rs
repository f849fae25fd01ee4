//! Applying one phase of a provider: server-side apply of every object that changed, one Event per kind
//! of write.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use capi_apply::{ApplyAction, ApplyError, Inventory, ObjectKey, PlannedPhase};
use kube::api::DynamicObject;
use kube::runtime::events::EventType;

use super::Reconciler;
use crate::error::ProviderError;
use crate::source::Target;

impl Reconciler {
    /// Applies every object of `phase` (continuing past failures, so one bad object does not hide the
    /// others) as the provider's `record` allows (its inventory, with this version's intent recorded);
    /// returns the objects each write answered with (newer than the cache, for the gate). In `record`,
    /// each object applied is confirmed as ours with the UID its write answered
    /// ([`Inventory::uids`]), and each one someone else created meanwhile stays (or becomes)
    /// pending, never ours ([`Inventory::pending`]): the caller saves it.
    pub(super) async fn apply_phase(
        &self,
        target: &Target,
        phase: &PlannedPhase,
        record: &mut Inventory,
    ) -> Result<HashMap<ObjectKey, DynamicObject>, ProviderError> {
        for (resource, namespaced) in phase.resources() {
            self.cache.ensure_watched(&resource, namespaced);
        }
        if !self.cache.wait_synced(Duration::from_secs(10)).await {
            tracing::debug!(
                "watch caches not synced yet; unseen objects are read before they are written"
            );
        }
        let started = Instant::now();
        let outcome = self
            .applier
            .apply_phase(phase, |key| self.cache.get(key), record)
            .await;
        for applied in &outcome.outcomes {
            record.confirm(&applied.key);
            record.set_uid(&applied.key, applied.object.metadata.uid.as_deref());
        }
        for error in &outcome.errors {
            if let ApplyError::Preempted { key, .. } = error {
                record.mark_pending(key);
            }
        }
        self.metrics.observe_phase(phase.phase, started.elapsed());
        let mut fresh = HashMap::new();
        // One Event per phase and kind of write (Created, Configured, Adopted), not one per object: a
        // cold install would otherwise write as many Events as objects.
        let mut written: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
        for applied in outcome.outcomes {
            if let Some(verb) = verb(applied.action) {
                self.metrics.count_applied(applied.action);
                tracing::info!(source = %target.source.id, object = %applied.key, action = verb, phase = ?phase.phase, "applied");
                written
                    .entry(verb)
                    .or_default()
                    .push(applied.key.to_string());
            }
            fresh.insert(applied.key, applied.object);
        }
        for (verb, keys) in &written {
            self.events
                .publish(
                    EventType::Normal,
                    verb,
                    &format!("Apply{:?}", phase.phase),
                    Some(self.events.source_reference(&target.source.id)),
                    format!(
                        "{}, phase {:?}: {} {}: {}",
                        target.source.id,
                        phase.phase,
                        verb.to_lowercase(),
                        keys.len(),
                        keys.join(", ")
                    ),
                )
                .await;
        }
        // A failure is reported (log, metric, Warning Event) once, where every failure is: at the end
        // of the provider's reconcile.
        if outcome.errors.is_empty() {
            Ok(fresh)
        } else {
            Err(ProviderError::Apply(outcome.errors))
        }
    }
}

/// The Event reason of a write; `None` when nothing was written.
fn verb(action: ApplyAction) -> Option<&'static str> {
    match action {
        ApplyAction::Created => Some("Created"),
        ApplyAction::Configured => Some("Configured"),
        ApplyAction::Adopted => Some("Adopted"),
        ApplyAction::Unchanged => None,
    }
}
