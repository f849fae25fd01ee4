//! One provider's reconcile, as a pipeline. Each step is its own function; what a step costs:
//!
//! | step | function | requests |
//! |---|---|---|
//! | read | the source's payload (from a watch cache, by the caller) and the inventory | 0 (cached) |
//! | prepare | [`crate::prepare::prepare`]: render, validate, plan — pure | discovery once, again for a new kind |
//! | unmanaged | [`Reconciler::take_unmanaged`]: CRDs `ClusterAPI/cluster` leaves to others out of the plan, the live ones checked | a GET per unmanaged CRD of the provider (none without) |
//! | revision | [`Reconciler::revision_step`]: the source's content or, while a rollback holds, a recorded revision; recorded before the first write, marked once rolled out, rolled back when its Deployments time out | 0–2 writes, only when it changes |
//! | inventory | memory, else the watched ConfigMap, else rebuilt from labelled live objects | 0 (+ a write when rebuilt) |
//! | ownership | no object of the plan in another provider's inventory | 0 |
//! | preflight | [`Reconciler::preflight`]: ownership, CRD safety and a server-side dry-run of every object that would be written, before the first write (objects of kinds only the new CRDs define: once those are Established) | 0 when unchanged, else a dry-run PATCH per object |
//! | record intent | inventory ∪ plan saved *before* the first write | 0–1 |
//! | apply | [`Reconciler::apply_phase`], phase by phase | 0 when unchanged, else one SSA PATCH per object |
//! | gate | [`Reconciler::gate`]: readiness from the watch cache; a timer per version and phase | 0 |
//! | prune | [`Reconciler::prune`]: what the new version dropped, with fresh discovery, then the inventory | discovery + GET + DELETE per object |
//! | record | the provider's record (state, rolled-out version, failure series) | a write only on change |
//!
//! The pure steps that cost CPU (prepare, compressing a new revision, replaying a recorded one; decoding
//! the payload, in the controller) run on tokio's blocking pool (`compute.rs`), never on a worker
//! thread of the async runtime, where they would hold up the watches and the health probes.
//!
//! The result is an [`Outcome`], the only input to status. Errors are [`ProviderError`]s, mapped to
//! status reasons in one place ([`ProviderError::reason`]).
//!
//! Phases of one provider run in order. Independent phases of different providers (e.g. every
//! provider's CRDs together, to shorten a cold install) would be a scheduler over these same step
//! functions in the controller; nothing here assumes one provider at a time except the history lock.

mod apply;
mod finish;
mod gate;
mod inventory;
mod preflight;
mod prune;
mod revisions;
mod uninstall;
mod unmanaged;

pub use uninstall::Removal;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use capi_apply::{
    Applier, Inventory, InventoryStore, KindResolver, LiveCache, Namespaces, ObjectKey, Phase,
};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::runtime::reflector;

use crate::compute::{self, Step};
use crate::config::{FIELD_MANAGER, INVENTORY_CONFIGMAP, InstallerConfig};
use crate::error::ProviderError;
use crate::events::Events;
use crate::history::History;
use crate::inventory::Inventories;
use crate::metrics::Metrics;
use crate::outcome::{Outcome, ProviderState};
use crate::prepare::{self, Prepared, RenderContext};
use crate::revision::Stored;
use crate::revision::store::Revisions;
use crate::source::{Payload, SourceError, SourceId, Target};
use crate::unmanaged::{Unmanaged, UnmanagedError};

/// What one reconcile of all providers shares: which sources are selected now, and which CRDs are
/// unmanaged (an unreadable `ClusterAPI/cluster` fails every provider: no CRD may be written then).
#[derive(Clone, Debug)]
pub struct Round {
    pub selected: BTreeSet<SourceId>,
    pub unmanaged: Result<Unmanaged, UnmanagedError>,
    /// For a provider that waits for another: how far it may go meanwhile.
    pub hold: Option<Hold>,
    /// The `${VAR}` values of this pass: the administrator's over the cluster's TLS profile (see
    /// [`crate::tls::with_cluster_profile`]), and the variables that have none.
    pub substitutions: BTreeMap<String, String>,
    pub unavailable: BTreeMap<String, String>,
}

impl Default for Round {
    fn default() -> Self {
        Round {
            selected: BTreeSet::new(),
            unmanaged: Ok(Unmanaged::default()),
            hold: None,
            substitutions: BTreeMap::new(),
            unavailable: BTreeMap::new(),
        }
    }
}

/// How far a provider may go while one it depends on rolls out: the phases before `before` need
/// nothing of it (an infrastructure provider's CRDs and base objects while core's Deployments roll
/// out, SPEC §4); at `before` the provider stops, `Blocked` behind `behind`.
#[derive(Clone, Debug)]
pub struct Hold {
    pub before: Phase,
    pub behind: String,
}

/// How far an install got, and whether every gate passed (the version is fully rolled out) even when a
/// later step (prune) failed.
struct Installation {
    result: Result<ProviderState, ProviderError>,
    rolled_out: bool,
    /// Refused before its first write (ownership, CRD safety, dry-run): nothing of it was applied.
    refused: bool,
}

/// Reconciles providers one at a time; holds what every provider's reconcile shares.
pub struct Reconciler {
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
    /// Objects no bundle may contain that are known only at run time: the transport ConfigMaps.
    protected_sources: Mutex<Vec<ObjectKey>>,
    /// The provider RBAC ceiling as the cluster has it (the administrator's extensions), beyond the
    /// release's.
    ceiling: Mutex<crate::policy::Ceiling>,
}

impl Reconciler {
    /// `inventory` is a watch of ConfigMap `capi-installer-inventory`, `revisions` of the revisions
    /// ConfigMaps (the caller runs them).
    pub fn new(
        client: Client,
        config: InstallerConfig,
        metrics: Arc<Metrics>,
        inventory: reflector::Store<ConfigMap>,
        revisions: reflector::Store<ConfigMap>,
    ) -> Self {
        // One owner per object: the provider named by `cluster.x-k8s.io/provider`.
        let ownership =
            crate::config::ownership(&config.adoptable_managers, &config.retired_managers);
        let applier = Applier::new(client.clone(), FIELD_MANAGER, ownership);
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
                // Per pass, from the round.
                substitutions: BTreeMap::new(),
                unavailable: BTreeMap::new(),
                policy: config.policy.clone(),
            },
            client,
            config,
            metrics,
            history: Mutex::default(),
            protected_sources: Mutex::default(),
            ceiling: Mutex::default(),
        }
    }

    /// Sets the transport ConfigMaps present now: no bundle may write them (by name, whatever labels
    /// the bundle's object carries).
    pub fn protect_sources(&self, keys: Vec<ObjectKey>) {
        *self.protected_sources.lock().expect("protected sources") = keys;
    }

    /// Sets the ceiling ClusterRoles present now (read from the cluster): the policy allows what they
    /// grant too.
    pub fn extend_ceiling(&self, ceiling: crate::policy::Ceiling) {
        *self.ceiling.lock().expect("ceiling") = ceiling;
    }

    /// The render context with the protected sources and the ceiling of this moment.
    fn context(&self) -> RenderContext {
        let mut ctx = self.context.clone();
        ctx.policy.ceiling = ctx
            .policy
            .ceiling
            .with(&self.ceiling.lock().expect("ceiling"));
        for key in self
            .protected_sources
            .lock()
            .expect("protected sources")
            .iter()
        {
            ctx.policy.protected = ctx.policy.protected.with(key.clone());
        }
        ctx
    }

    /// The watches of every applied object; their changes should trigger a reconcile.
    pub fn cache(&self) -> &LiveCache {
        &self.cache
    }

    pub fn inventories(&self) -> &Inventories {
        &self.inventories
    }

    pub fn events(&self) -> &Events {
        &self.events
    }

    pub fn revisions(&self) -> &Revisions {
        &self.revisions
    }

    /// Reconciles one provider from its payload (or the error reading it).
    pub async fn reconcile(
        &self,
        target: &Target,
        payload: Result<Payload, SourceError>,
        round: &Round,
    ) -> Outcome {
        let target = &match &payload {
            Ok(p) if p.version != target.source.version => {
                let mut read = target.clone();
                read.source.version = p.version.clone();
                read
            }
            _ => target.clone(),
        };
        let prepared = match payload {
            Ok(payload) => self.prepare(target, payload, round).await,
            Err(e) => Err(e.into()),
        };
        let prepared = match prepared {
            Ok(mut p) => self.take_unmanaged(&mut p, round).await.map(|()| p),
            Err(e) => Err(e),
        };
        let digest = prepared.as_ref().ok().map(|p| p.digest.clone());
        let run = match prepared {
            Ok(prepared) => self.revision_step(target, prepared, round).await,
            // Refused before anything of it was written: the last good version stays reconciled.
            Err(e) => self.keep_last_good(target, e, round).await,
        };
        let mut outcome = self
            .finish(
                &run.target,
                run.result,
                run.rolled_out.as_deref(),
                run.related,
            )
            .await;
        outcome.held = run.held;
        outcome.digest = digest;
        outcome
    }

    /// The outcome of a provider that is not reconciled this time: blocked behind another, or refused
    /// before anything is read.
    pub async fn hold(
        &self,
        target: &Target,
        result: Result<ProviderState, ProviderError>,
    ) -> Outcome {
        self.finish(target, result, None, Vec::new()).await
    }

    /// Render, validate and plan (pure, off the async runtime), with the API server's kinds.
    async fn prepare(
        &self,
        target: &Target,
        payload: Payload,
        round: &Round,
    ) -> Result<Prepared, ProviderError> {
        let resolver = self.resolver(false).await?;
        let (payload, prepared) = self.prepare_with(target, payload, resolver, round).await;
        let prepared = match prepared {
            // A kind served by a CRD created since the last discovery: discover again, once.
            Err(e) if e.unknown_kind() => {
                let resolver = self.resolver(true).await?;
                self.prepare_with(target, payload, resolver, round).await.1
            }
            other => other,
        }?;
        if !prepared.stripped.is_empty() {
            tracing::debug!(source = %target.source.id, fields = ?prepared.stripped,
                "removed fields that other controllers own (service-ca, clusterrole aggregation)");
        }
        Ok(prepared)
    }

    /// [`prepare::prepare`] on the blocking pool; the payload comes back for another try.
    async fn prepare_with(
        &self,
        target: &Target,
        payload: Payload,
        resolver: KindResolver,
        round: &Round,
    ) -> (Payload, Result<Prepared, prepare::RenderError>) {
        let target = target.clone();
        let mut ctx = self.context();
        ctx.substitutions = round.substitutions.clone();
        ctx.unavailable = round.unavailable.clone();
        compute::run(&self.metrics, Step::Prepare, move || {
            let prepared = prepare::prepare(&payload, &target, &ctx, &resolver);
            (payload, prepared)
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
        revision: Option<&mut Stored>,
    ) -> Installation {
        let mut rolled_out = false;
        let mut writing = false;
        let result = async {
            let old = self.inventory(target, prepared, round).await?;
            let old = self.release_unmanaged(old, round).await?;
            self.check_claims(target, prepared, round)?;
            // No half-applied version: everything the API server can judge now is judged before the
            // first write; objects of kinds only the new CRDs define, once those are Established.
            let served = self.resolver(false).await?;
            let (now, mut later) = prepared.plan.split_by_served(&served);
            self.preflight(target, now).await?;
            writing = true;
            if let Some(stored) = revision {
                self.save_revisions(target, stored).await?;
            }
            let new = self.record_intent(target, &old, prepared).await?;
            for phase in &prepared.plan.phases {
                if let Some(hold) = round.hold.as_ref().filter(|h| phase.phase >= h.before) {
                    return Ok(ProviderState::Blocked {
                        behind: hold.behind.clone(),
                    });
                }
                let fresh = self.apply_phase(target, phase).await?;
                if let Some(pending) = self.gate(target, &prepared.digest, phase, &fresh)? {
                    return Ok(ProviderState::Progressing {
                        phase: phase.phase,
                        pending,
                    });
                }
                if phase.phase == Phase::CustomResourceDefinitions && !later.is_empty() {
                    self.preflight(target, std::mem::take(&mut later)).await?;
                }
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

    /// Refuses a plan that contains an object another provider's inventory holds: one owner per
    /// object, the first to record it, so two providers never write the same object in turn.
    fn check_claims(
        &self,
        target: &Target,
        prepared: &Prepared,
        round: &Round,
    ) -> Result<(), ProviderError> {
        let claims =
            self.inventories
                .claims(&target.source.id, &target.clusterctl_label, &round.selected);
        match prepared.plan.objects().find_map(|o| {
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

    /// Records what is about to be created before creating it: an installer killed in the middle of a
    /// phase must still know, after a restart, every object it may have left behind. Returns the
    /// inventory of the new version.
    async fn record_intent(
        &self,
        target: &Target,
        old: &Inventory,
        prepared: &Prepared,
    ) -> Result<Inventory, ProviderError> {
        let mut new = Inventory::from_plan(target.source.id.inventory_key(), &prepared.plan);
        new.record = old.record.clone();
        let mut union = old.clone();
        for (key, phase) in &new.entries {
            union.insert(key.clone(), *phase);
        }
        if union.to_json() != old.to_json()
            || self.inventories.remembered(&target.source.id).is_none()
        {
            self.inventories.save(&union).await?;
        }
        Ok(new)
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
