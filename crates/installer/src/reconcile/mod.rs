//! One provider's reconcile, as a pipeline. Each step is its own function; what a step costs:
//!
//! | step | function | requests |
//! |---|---|---|
//! | read | the source's payload (from a watch cache, by the caller) and the inventory | 0 (cached) |
//! | prepare | [`Reconciler::prepare`]: the round's [`Planner::plan`] (render, validate, plan — pure) with the API server's kinds and those of the providers planned before it; every provider of a pass is planned before the first is applied; a text parsed before is recalled from the context's `ParseMemo` | discovery once, again for a new kind |
//! | unmanaged | [`Reconciler::take_unmanaged`]: CRDs `ClusterAPI/cluster` leaves to others out of the plan, the live ones checked | a GET per unmanaged CRD of the provider (none without) |
//! | revision | [`Reconciler::revision_step`]: the source's content or, while a rollback holds, a recorded revision; recorded before the first write, marked once rolled out, rolled back when its Deployments time out | 0–2 writes, only when it changes |
//! | inventory | memory, else the watched ConfigMap, else rebuilt from labelled live objects | 0 (+ a write when rebuilt) |
//! | ownership | no object of the plan in another provider's inventory | 0 |
//! | preflight | [`Reconciler::preflight`]: ownership, CRD safety and a server-side dry-run of every object that would be written, before the first write (objects of kinds only the new CRDs define: once those are Established) | 0 when unchanged, else a dry-run PATCH per object |
//! | record intent | inventory ∪ plan saved *before* the first write (with the records staged since the last write), each new name pending ([`Inventory::pending`]) | 0–1, no read |
//! | apply | [`Reconciler::apply_phase`], phase by phase; each object written confirms its name, each created meanwhile by someone else stays pending | 0 when unchanged, else one SSA PATCH per object |
//! | confirm | [`Reconciler::save_confirmed`]: when the pass ends before its prune, the confirmations (and new UIDs) saved | 0–1, only when a name was confirmed or an object created again |
//! | gate | [`Reconciler::gate`]: readiness from the watch cache; a timer per version and phase | 0 |
//! | prune | [`Reconciler::prune`]: what the new version dropped, with fresh discovery, then the inventory (staged) | discovery + GET + DELETE per object |
//! | record | [`Reconciler::finish`]: the provider's record (state, rolled-out version, failure series), staged, then the [`Outcome`], built once | 0: every provider's records go out in one write per pass, only on change, before the status ([`crate::controller`]) |
//!
//! Per-pass state (the selection, the protected sources, the cluster's RBAC ceiling, the unmanaged CRDs) is the caller's
//! [`Round`], and how far a provider may go while another rolls out its [`Until`]
//! ([`crate::order`]); the reconciler keeps only what outlives a pass (caches, failure history).
//!
//! The pure steps that cost CPU (prepare, compressing a new revision, replaying a recorded one; decoding
//! the payload, in the controller) run on tokio's blocking pool (`compute.rs`), never on a worker
//! thread of the async runtime, where they would hold up the watches and the health probes.
//!
//! The result is an [`Outcome`], the only input to status. Errors are [`ProviderError`]s, mapped to
//! status reasons in one place ([`ProviderError::reason`]).
//!
//! Phases of one provider run in order. Providers run at once: the controller reconciles every
//! infrastructure provider's chain concurrently once core's outcome is known ([`crate::order::chains`]);
//! what they share is either per provider (history, revisions, gates' timers: keyed by source) or
//! serialized where it is one object (the inventory ConfigMap's writes, [`Inventories`]; discovery).

mod apply;
mod finish;
mod gate;
mod inventory;
mod preflight;
mod prune;
mod revisions;
mod run;
mod uninstall;
mod unmanaged;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use capi_apply::{
    Applier, CrdNames, Inventory, InventoryStore, KindResolver, LiveCache, Namespaces, ObjectKey,
    Phase, Plan,
};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::ApiResource;
use kube::runtime::reflector;

use crate::compute::{self, Step};
use crate::config::InstallerConfig;
use crate::error::ProviderError;
use crate::events::Events;
use crate::history::History;
use crate::inventory::{Inventories, ProviderRecord};
use crate::metrics::Metrics;
use crate::names::{FIELD_MANAGER, INVENTORY_CONFIGMAP};
use crate::order::Until;
use crate::outcome::{Outcome, ProviderState};
use crate::prepare::{Prepared, RenderContext, RenderError};
use crate::revision::store::Revisions;
use crate::revision::{Choice, Stored};
use crate::round::{Planner, Round};
use crate::source::{Payload, SourceError, SourceId, Target};
use run::Run;

/// How far an install got, and whether every gate passed (the version is fully rolled out) even when a
/// later step (prune) failed.
struct Installation {
    result: Result<ProviderState, ProviderError>,
    rolled_out: bool,
    /// Refused before its first write (ownership, CRD safety, dry-run): nothing of it was applied.
    refused: bool,
}

/// Reconciles providers, several at a time; holds what every provider's reconcile shares.
pub(crate) struct Reconciler {
    client: Client,
    config: InstallerConfig,
    context: RenderContext,
    applier: Applier,
    cache: LiveCache,
    inventories: Inventories,
    revisions: Revisions,
    resolver: tokio::sync::Mutex<Option<KindResolver>>,
    events: Events,
    metrics: Arc<Metrics>,
    history: Mutex<History>,
}

impl Reconciler {
    /// `inventory` is a watch of ConfigMap `capi-installer-inventory`, `revisions` of the revisions
    /// ConfigMaps (the caller runs them).
    pub(crate) fn new(
        client: Client,
        config: InstallerConfig,
        metrics: Arc<Metrics>,
        inventory: reflector::Store<ConfigMap>,
        revisions: reflector::Store<ConfigMap>,
    ) -> Self {
        // One owner per object: the provider named by `cluster.x-k8s.io/provider`.
        let ownership =
            crate::names::ownership(&config.adoptable_managers, &config.retired_managers);
        let mut applier = Applier::new(client.clone(), FIELD_MANAGER, ownership);
        if let Some(identities) = &config.identities {
            applier = applier.with_identities(identities.clone());
        }
        let cache = LiveCache::new(
            client.clone(),
            &applier,
            Namespaces::Only(vec![config.namespace.clone()]),
        );
        let records = &config.installer_namespace;
        let store =
            InventoryStore::new(client.clone(), records, INVENTORY_CONFIGMAP, FIELD_MANAGER);
        Reconciler {
            applier: applier.with_cache(cache.clone()),
            cache,
            inventories: Inventories::new(store, inventory, records, INVENTORY_CONFIGMAP),
            revisions: Revisions::new(client.clone(), records, revisions),
            resolver: tokio::sync::Mutex::new(None),
            events: Events::new(client.clone(), config.instance.clone(), &config.namespace),
            context: RenderContext {
                namespace: config.namespace.clone(),
                images: config.images.clone(),
                // Per pass: the round's, from the settings and the cluster's TLS profile.
                substitutions: Default::default(),
                unavailable: Default::default(),
                policy: config.policy.clone(),
                // Shared by every pass's context (a clone of this one): a provider's text is parsed
                // once, not at every pass that plans it.
                parsed: Default::default(),
                // Per pass: the round's, from `Proxy/cluster` and the `CompatibilityRequirement`s.
                proxy: Default::default(),
                requirements: Vec::new(),
            },
            client,
            config,
            metrics,
            history: Mutex::default(),
        }
    }

    /// What rendering needs, from the settings; a [`Round`] adds what this pass knows.
    pub(crate) fn context(&self) -> &RenderContext {
        &self.context
    }

    /// The watches of every applied object; their changes should trigger a reconcile.
    pub(crate) fn cache(&self) -> &LiveCache {
        &self.cache
    }

    pub(crate) fn inventories(&self) -> &Inventories {
        &self.inventories
    }

    pub(crate) fn revisions(&self) -> &Revisions {
        &self.revisions
    }

    /// Renders, validates and plans one provider of `planner`'s round with the API server's kinds
    /// (pure but for discovery: once, and again, once, for a kind served by a CRD created since), off
    /// the async runtime.
    pub(crate) async fn prepare(
        &self,
        planner: &mut Planner,
        target: &Target,
        payload: Result<Payload, SourceError>,
    ) -> Result<Prepared, ProviderError> {
        let payload = payload?;
        self.metrics.count_plan(&target.source.id.to_string());
        let resolver = self.resolver(false).await?;
        let (payload, prepared) = self
            .plan_off_runtime(planner, target, payload, resolver)
            .await;
        let prepared = match prepared {
            Err(e) if e.unknown_kind() => {
                let resolver = self.resolver(true).await?;
                self.plan_off_runtime(planner, target, payload, resolver)
                    .await
                    .1
            }
            other => other,
        }?;
        for warning in &prepared.compatibility_warnings {
            tracing::warn!(source = %target.source.id, %warning,
                "applied although it breaks a compatibility requirement whose action is Warn");
        }
        if !prepared.stripped.is_empty() {
            tracing::debug!(source = %target.source.id, fields = ?prepared.stripped,
                "removed fields that other controllers own (service-ca, clusterrole aggregation) and narrowed CRD writes");
        }
        Ok(prepared)
    }

    /// [`Planner::plan`] on the blocking pool; the planner and the payload come back for another try.
    async fn plan_off_runtime(
        &self,
        planner: &mut Planner,
        target: &Target,
        payload: Payload,
        resolver: KindResolver,
    ) -> (Payload, Result<Prepared, RenderError>) {
        let mut moved = planner.clone();
        let target = target.clone();
        let (moved, payload, prepared) = compute::run(&self.metrics, Step::Prepare, move || {
            let prepared = moved.plan(&target, &payload, &resolver);
            (moved, payload, prepared)
        })
        .await;
        *planner = moved;
        (payload, prepared)
    }

    /// Reconciles one provider of `round` from its plan (or why it has none), up to `until` when it
    /// goes ahead of a provider it waits for.
    pub(crate) async fn reconcile(
        &self,
        target: &Target,
        prepared: Result<Prepared, ProviderError>,
        round: &Round,
        until: Option<&Until>,
    ) -> Outcome {
        self.act_as(&target.source.id, &target.clusterctl_label);
        let prepared = match prepared {
            Ok(mut p) => self.take_unmanaged(&mut p, round).await.map(|()| p),
            Err(e) => Err(e),
        };
        let content_id = prepared
            .as_ref()
            .ok()
            .map(|p| p.revision_part().to_string());
        let mut run = match prepared {
            // Refused before anything of it was written: the last good version stays reconciled.
            Err(e) => self.keep_last_good(target, e, round, until).await,
            // The source's content, or a recorded revision while a rollback holds.
            Ok(prepared) => {
                let id = &target.source.id;
                let mut stored = self
                    .revisions
                    .load(id, &id.to_string(), &target.source.name);
                match stored.log.choose(&prepared.digest, stored.request.as_ref()) {
                    Ok(Choice::Source) => {
                        match self
                            .roll_forward(target, prepared, stored, round, until)
                            .await
                        {
                            Ok(run) => run,
                            // Refused before its first write: as a content that does not render.
                            Err(refusal) => {
                                self.keep_last_good(target, refusal, round, until).await
                            }
                        }
                    }
                    Ok(Choice::Serve(hold)) => {
                        self.serve(target, &mut stored, hold, round, until).await
                    }
                    Err(e) => Run::failed(
                        target,
                        e.into(),
                        prepared.related_objects(&self.config.namespace),
                    ),
                }
            }
        };
        run.content_id = content_id;
        self.finish(run).await
    }

    /// From now on the writes of source `id` are provider `label`'s identity's (when the installer
    /// writes as the providers, [`InstallerConfig::identities`]).
    pub(crate) fn act_as(&self, id: &SourceId, label: &str) {
        if let Some(identities) = self.applier.identities() {
            crate::names::act_as(identities, &self.config.installer_namespace, id, label);
        }
    }

    /// The outcome of a provider that is not reconciled this time: blocked behind another, or refused
    /// before anything is read.
    pub(crate) async fn not_reconciled(
        &self,
        target: &Target,
        result: Result<ProviderState, ProviderError>,
    ) -> Outcome {
        self.finish(Run {
            target: target.clone(),
            result,
            rolled_out: None,
            related: Vec::new(),
            held: None,
            content_id: None,
            dropped_short_names: Vec::new(),
        })
        .await
    }

    /// Applies a prepared version phase by phase, then prunes what it dropped. `revision`, a new
    /// revision to record, is stored once the version passed every check, right before its first write:
    /// a version refused whole was never applied, and is not a revision.
    async fn install(
        &self,
        target: &Target,
        prepared: &Prepared,
        round: &Round,
        until: Option<&Until>,
        revision: Option<&mut Stored>,
    ) -> Installation {
        let mut rolled_out = false;
        let mut writing = false;
        let result = async {
            let old = self.inventory(target, prepared, round).await?;
            // A version that was fully rolled out serves already: its workloads are not waited for
            // again. A lost pod is a provider that does not serve (reported from `finish`), not a
            // rollout to wait for, time out and roll back; later phases are repaired meanwhile.
            let serves_already = ProviderRecord::read(&old)
                .and_then(|r| r.rolled_out)
                .is_some_and(|r| r.digest == prepared.digest);
            let old = self.release_unmanaged(old, round).await?;
            let claims = self.inventories.claims(
                &target.source.id,
                &target.clusterctl_label,
                &round.selected,
            );
            unclaimed(&prepared.plan, &claims)?;
            // No half-applied version: everything the API server can judge now is judged before the
            // first write; objects of kinds only the new CRDs define, once those are Established.
            let served = self.resolver(false).await?;
            let (now, mut later) = prepared.plan.split_by_served(&served);
            let adopted = self.preflight(target, now, &old, &prepared.stored).await?;
            writing = true;
            if let Some(stored) = revision {
                self.save_revisions(target, stored).await?;
            }
            let mut new = self.record_intent(target, &old, prepared, &adopted).await?;
            let mut saved = new.clone();
            // `Some` when the pass ends before its prune (blocked, progressing, failed).
            let ended: Result<Option<ProviderState>, ProviderError> = async {
                for phase in &prepared.plan.phases {
                    if let Some(until) = until.filter(|u| phase.phase >= u.before) {
                        return Ok(Some(ProviderState::Blocked {
                            behind: until.behind.clone(),
                        }));
                    }
                    let fresh = self.apply_phase(target, phase, &mut new).await?;
                    if phase.phase == Phase::Workloads && serves_already {
                        continue;
                    }
                    let gate = {
                        let gates = gate::Gates {
                            history: &mut self.history.lock().expect("history"),
                            crd_timeout: self.config.crd_timeout,
                            deployment_timeout: self.config.deployment_timeout,
                        };
                        let live = |key: &ObjectKey| self.cache.get(key);
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
                        let adopted = self
                            .preflight(target, std::mem::take(&mut later), &old, &prepared.stored)
                            .await?;
                        if !adopted.is_empty() {
                            for key in &adopted {
                                new.mark_adopted(key);
                            }
                            self.save_intent(&old, &new).await?;
                        }
                    }
                }
                Ok(None)
            }
            .await;
            if !matches!(ended, Ok(None)) {
                // What this pass confirmed stays confirmed, whatever ended it.
                self.save_confirmed(&old, &new, &mut saved).await?;
            }
            if let Some(state) = ended? {
                return Ok(state);
            }
            rolled_out = true;
            self.prune(target, &old, new).await?;
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
        &self,
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
        self.save_intent(old, &new).await?;
        Ok(new)
    }

    /// Saves what the writes since the last save confirmed (or found someone else's) when a pass ends
    /// before its prune, which saves the new inventory itself: a name recorded to be created stays
    /// pending until a saved record says our apply wrote it ([`Inventory::pending`]), and an object
    /// our write created again is told from someone else's by the UID saved ([`Inventory::uids`]).
    /// `saved` is the record as last stored; nothing is sent when it did not change.
    async fn save_confirmed(
        &self,
        old: &Inventory,
        new: &Inventory,
        saved: &mut Inventory,
    ) -> Result<(), ProviderError> {
        if *new != *saved {
            self.save_intent(old, new).await?;
            saved.clone_from(new);
        }
        Ok(())
    }

    /// Stores `old ∪ new` (what may exist until the prune), with what `new` marks as adopted.
    async fn save_intent(&self, old: &Inventory, new: &Inventory) -> Result<(), ProviderError> {
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
        self.inventories.save(&union).await?;
        Ok(())
    }

    /// The CRDs on the cluster, ours and others', with their accepted names and, for ours, the
    /// provider that installed them: what a round's plans claim names after ([`Round::with_live_crds`]).
    /// From the watch cache (one watch of every CRD, which the applier needs anyway); when it has not
    /// listed within a few seconds, what it has (a name the API server then refuses is found again in
    /// the next pass, once it has).
    pub(crate) async fn live_crds(&self) -> Vec<(String, CrdNames, Option<String>)> {
        let (group, kind) = ("apiextensions.k8s.io", "CustomResourceDefinition");
        self.cache
            .ensure_watched(&ApiResource::erase::<CustomResourceDefinition>(&()), false);
        if !self.cache.is_kind_synced(group, kind)
            && !self.cache.wait_synced(Duration::from_secs(10)).await
        {
            tracing::warn!(
                "the CustomResourceDefinition watch has not listed yet; CRD names are checked against what it has"
            );
        }
        let ownership = self.applier.ownership();
        self.cache
            .every(group, kind)
            .into_iter()
            .filter_map(|(crd, ours)| {
                let name = crd.metadata.name.clone()?;
                let owner = ours
                    .then(|| ownership.owner_of(&crd).map(str::to_string))
                    .flatten();
                Some((name, CrdNames::accepted(&crd.data), owner))
            })
            .collect()
    }

    async fn resolver(&self, refresh: bool) -> Result<KindResolver, ProviderError> {
        let mut cached = self.resolver.lock().await;
        if refresh || cached.is_none() {
            *cached = Some(
                KindResolver::discover(&self.client)
                    .await
                    .map_err(ProviderError::Discovery)?,
            );
        }
        Ok(cached.clone().expect("resolver set"))
    }
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
