//! Installing one content of a provider: its inventory found, its claims and preflight checked
//! before the first write, the intent recorded, then phase by phase applied and gated, and what it
//! dropped pruned. A phase is applied by server-side apply of every object that changed, with one
//! Event per kind of write.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use capi_apply::{ApplyAction, ApplyError, Inventory, ObjectKey, Phase, Plan, PlannedPhase};
use kube::api::DynamicObject;
use kube::runtime::events::EventType;

use super::context::Context;
use super::gate;
use super::inventory::inventory;
use super::preflight::preflight;
use super::prune::prune;
use super::unmanaged::release_unmanaged;
use crate::error::ProviderError;
use crate::inventory::ProviderRecord;
use crate::order::Until;
use crate::outcome::ProviderState;
use crate::prepare::Prepared;
use crate::revision::{self, Stored};
use crate::round::Round;
use crate::source::{SourceId, Target};

/// How far an install got, and whether every gate passed (the version is fully rolled out) even when a
/// later step (prune) failed.
pub(super) struct Installation {
    pub(super) result: Result<ProviderState, ProviderError>,
    pub(super) rolled_out: bool,
    /// Refused before its first write (ownership, CRD safety, dry-run): nothing of it was applied.
    pub(super) refused: bool,
}

/// Applies a prepared version phase by phase, then prunes what it dropped. `revision`, a new
/// revision to record, is stored once the version passed every check, right before its first write:
/// a version refused whole was never applied, and is not a revision.
pub(super) async fn install(
    cx: &Context,
    target: &Target,
    prepared: &Prepared,
    round: &Round,
    until: Option<&Until>,
    revision: Option<&mut Stored>,
) -> Installation {
    let mut rolled_out = false;
    let mut writing = false;
    let result = async {
        let old = inventory(cx, target, prepared, round).await?;
        // A version that was fully rolled out serves already: its workloads are not waited for
        // again. A lost pod is a provider that does not serve (reported from `finish`), not a
        // rollout to wait for, time out and roll back; later phases are repaired meanwhile.
        let serves_already = ProviderRecord::read(&old)
            .and_then(|r| r.rolled_out)
            .is_some_and(|r| r.digest == prepared.digest);
        let old = release_unmanaged(cx, old, round).await?;
        let claims =
            cx.inventories
                .claims(&target.source.id, &target.clusterctl_label, &round.selected);
        unclaimed(&prepared.plan, &claims)?;
        // No half-applied version: everything the API server can judge now is judged before the
        // first write; objects of kinds only the new CRDs define, once those are Established.
        let served = cx.resolver(false).await?;
        let (now, mut later) = prepared.plan.split_by_served(&served);
        let adopted = preflight(cx, target, now, &old, &prepared.stored).await?;
        writing = true;
        if let Some(stored) = revision {
            save_revisions(cx, target, stored).await?;
        }
        let mut new = record_intent(cx, target, &old, prepared, &adopted).await?;
        let mut saved = new.clone();
        // `Some` when the pass ends before its prune (blocked, progressing, failed).
        let ended: Result<Option<ProviderState>, ProviderError> = async {
            for phase in &prepared.plan.phases {
                if let Some(until) = until.filter(|u| phase.phase >= u.before) {
                    return Ok(Some(ProviderState::Blocked {
                        behind: until.behind.clone(),
                    }));
                }
                let fresh = apply_phase(cx, target, phase, &mut new).await?;
                if phase.phase == Phase::Workloads && serves_already {
                    continue;
                }
                let gate = {
                    let gates = gate::Gates {
                        history: &mut cx.history.lock().expect("history"),
                        crd_timeout: cx.config.crd_timeout,
                        deployment_timeout: cx.config.deployment_timeout,
                    };
                    let live = |key: &ObjectKey| cx.cache.get(key);
                    let (id, digest) = (&target.source.id, &prepared.digest);
                    gate::gate(gates, id, digest, phase, live, &fresh, Instant::now())
                };
                if let Some(pending) = gate? {
                    return Ok(Some(ProviderState::Progressing {
                        phase: phase.phase,
                        pending,
                    }));
                }
                if phase.phase == Phase::CustomResourceDefinitions && !later.is_empty() {
                    let adopted = preflight(
                        cx,
                        target,
                        std::mem::take(&mut later),
                        &old,
                        &prepared.stored,
                    )
                    .await?;
                    if !adopted.is_empty() {
                        for key in &adopted {
                            new.mark_adopted(key);
                        }
                        save_intent(cx, &old, &new).await?;
                    }
                }
            }
            Ok(None)
        }
        .await;
        if !matches!(ended, Ok(None)) {
            // What this pass confirmed stays confirmed, whatever ended it.
            save_confirmed(cx, &old, &new, &mut saved).await?;
        }
        if let Some(state) = ended? {
            return Ok(state);
        }
        rolled_out = true;
        prune(cx, target, &old, new).await?;
        Ok(ProviderState::Installed)
    }
    .await;
    Installation {
        refused: result.is_err() && !writing,
        result,
        rolled_out,
    }
}

/// Records what is about to be created before creating it: an installer killed in the middle of a
/// phase must still know, after a restart, every object it may have left behind. Returns the
/// inventory of the new version.
/// `adopted`: what the preflight found the apply will adopt; with what `old` says was adopted,
/// recorded as adopted (released, never deleted, when a later version drops it).
async fn record_intent(
    cx: &Context,
    target: &Target,
    old: &Inventory,
    prepared: &Prepared,
    adopted: &[ObjectKey],
) -> Result<Inventory, ProviderError> {
    let mut new = Inventory::from_plan(target.source.id.inventory_key(), &prepared.plan);
    new.record = old.record.clone();
    new.adopted_from(old);
    new.uids_from(old);
    for key in adopted {
        new.mark_adopted(key);
    }
    new.pending_from(old);
    save_intent(cx, old, &new).await?;
    Ok(new)
}

/// Saves what the writes since the last save confirmed (or found someone else's) when a pass ends
/// before its prune, which saves the new inventory itself: a name recorded to be created stays
/// pending until a saved record says our apply wrote it ([`Inventory::pending`]), and an object
/// our write created again is told from someone else's by the UID saved ([`Inventory::uids`]).
/// `saved` is the record as last stored; nothing is sent when it did not change.
async fn save_confirmed(
    cx: &Context,
    old: &Inventory,
    new: &Inventory,
    saved: &mut Inventory,
) -> Result<(), ProviderError> {
    if *new != *saved {
        save_intent(cx, old, new).await?;
        saved.clone_from(new);
    }
    Ok(())
}

/// Stores `old ∪ new` (what may exist until the prune), with what `new` marks as adopted.
async fn save_intent(cx: &Context, old: &Inventory, new: &Inventory) -> Result<(), ProviderError> {
    let mut union = old.clone();
    for (key, phase) in &new.entries {
        union.insert(key.clone(), *phase);
    }
    for key in &new.adopted {
        union.mark_adopted(key);
    }
    for (key, uid) in &new.uids {
        union.set_uid(key, Some(uid));
    }
    // For the objects `new` holds, `new` says whether they are still to be confirmed.
    union.pending.retain(|k| !new.entries.contains_key(k));
    union.pending.extend(new.pending.iter().cloned());
    // Sent only when the stored inventory differs (with the records staged since the last write).
    cx.inventories.save(&union).await?;
    Ok(())
}

/// Applies every object of `phase` (continuing past failures, so one bad object does not hide the
/// others) as the provider's `record` allows (its inventory, with this version's intent recorded);
/// returns the objects each write answered with (newer than the cache, for the gate). In `record`,
/// each object applied is confirmed as ours with the UID its write answered
/// ([`Inventory::uids`]), and each one someone else created meanwhile stays (or becomes)
/// pending, never ours ([`Inventory::pending`]): the caller saves it.
async fn apply_phase(
    cx: &Context,
    target: &Target,
    phase: &PlannedPhase,
    record: &mut Inventory,
) -> Result<HashMap<ObjectKey, DynamicObject>, ProviderError> {
    for (resource, namespaced) in phase.resources() {
        cx.cache.ensure_watched(&resource, namespaced);
    }
    if !cx.cache.wait_synced(Duration::from_secs(10)).await {
        tracing::debug!(
            "watch caches not synced yet; unseen objects are read before they are written"
        );
    }
    let started = Instant::now();
    let outcome = cx
        .applier
        .apply_phase(phase, |key| cx.cache.get(key), record)
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
    cx.metrics.observe_phase(phase.phase, started.elapsed());
    let mut fresh = HashMap::new();
    // One Event per phase and kind of write (Created, Configured, Adopted), not one per object: a
    // cold install would otherwise write as many Events as objects.
    let mut written: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    for applied in outcome.outcomes {
        if let Some(verb) = verb(applied.action) {
            cx.metrics.count_applied(applied.action);
            tracing::info!(source = %target.source.id, object = %applied.key, action = verb, phase = ?phase.phase, "applied");
            written
                .entry(verb)
                .or_default()
                .push(applied.key.to_string());
        }
        fresh.insert(applied.key, applied.object);
    }
    for (verb, keys) in &written {
        cx.events
            .publish(
                EventType::Normal,
                verb,
                &format!("Apply{:?}", phase.phase),
                Some(cx.events.source_reference(&target.source.id)),
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

/// The Event reason of a write; `None` when nothing was written.
fn verb(action: ApplyAction) -> Option<&'static str> {
    match action {
        ApplyAction::Created => Some("Created"),
        ApplyAction::Configured => Some("Configured"),
        ApplyAction::Adopted => Some("Adopted"),
        ApplyAction::Unchanged => None,
    }
}

pub(super) async fn save_revisions(
    cx: &Context,
    target: &Target,
    stored: &mut Stored,
) -> Result<(), ProviderError> {
    let id = &target.source.id;
    cx.revisions
        .save(id, stored)
        .await
        .map_err(|source| ProviderError::Request {
            what: format!(
                "recording the revisions of {id} in ConfigMap {}",
                revision::configmap_name(id)
            ),
            source,
        })
}

/// Refuses a plan that contains an object another provider's inventory holds (`claims`: each such
/// object, with its owner): one owner per object, the first to record it, so two providers never
/// write the same object in turn.
fn unclaimed(plan: &Plan, claims: &HashMap<ObjectKey, SourceId>) -> Result<(), ProviderError> {
    match plan.objects().find_map(|o| {
        claims
            .get(&o.key)
            .map(|owner| (o.key.clone(), owner.clone()))
    }) {
        Some((key, owner)) => Err(ProviderError::Claimed {
            key: Box::new(key),
            owner,
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use capi_apply::KindResolver;

    use super::*;

    #[test]
    fn a_plan_holding_another_providers_object_is_refused_naming_both() {
        let object = |kind: &str, name: &str| -> kube::api::DynamicObject {
            serde_saphyr::from_str(&format!(
                "apiVersion: rbac.authorization.k8s.io/v1\nkind: {kind}\nmetadata: {{name: {name}}}\n"
            ))
            .unwrap()
        };
        let plan = capi_apply::plan(
            vec![
                object("ClusterRole", "capa-manager"),
                object("ClusterRoleBinding", "capa-manager"),
            ],
            &KindResolver::builtin(),
        )
        .unwrap();
        let binding = ObjectKey::new(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRoleBinding",
            None,
            "capa-manager",
        );
        let core = SourceId::ConfigMap("cluster-api".into());
        assert!(unclaimed(&plan, &HashMap::new()).is_ok());
        let unrelated = ObjectKey::new(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRole",
            None,
            "capi-manager",
        );
        assert!(unclaimed(&plan, &HashMap::from([(unrelated, core.clone())])).is_ok());
        match unclaimed(&plan, &HashMap::from([(binding.clone(), core.clone())])) {
            Err(ProviderError::Claimed { key, owner }) => {
                assert_eq!((*key, owner), (binding, core));
            }
            other => panic!("expected Claimed, got {other:?}"),
        }
    }
}
