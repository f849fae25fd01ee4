//! One provider's reconcile, as a pipeline of free functions over a [`Context`] (what every
//! provider's reconcile shares: the client, the applier and its watch cache, the records, Events,
//! metrics). Each step is its own function, in its own module; what a step costs:
//!
//! | step | function | requests |
//! |---|---|---|
//! | read | the source's payload (from a watch cache, by the caller) and the inventory | 0 (cached) |
//! | prepare | [`prepare`]: the round's [`Planner::plan`] (render, validate, plan — pure) with the API server's kinds and those of the providers planned before it; every provider of a pass is planned before the first is applied; a text parsed before is recalled from the context's `ParseMemo` | discovery once, again for a new kind |
//! | unmanaged | `unmanaged::take_unmanaged`: CRDs `ClusterAPI/cluster` leaves to others out of the plan, the live ones checked | a GET per unmanaged CRD of the provider (none without) |
//! | content | [`reconcile`]: the source's content or, while a rollback holds, a recorded revision; recorded before the first write (`revisions::roll_forward`), marked once rolled out; when its Deployments time out, a rollback recorded for the next pass; a content refused before its first write leaves the last good one reconciled (`revisions::keep_last_good`) | 0–2 writes, only when it changes |
//! | inventory | memory, else the watched ConfigMap, else rebuilt from labelled live objects | 0 (+ a write when rebuilt) |
//! | ownership | `install::unclaimed`: no object of the plan in another provider's inventory | 0 |
//! | preflight | `preflight::preflight`: ownership, CRD safety and a server-side dry-run of every object that would be written, before the first write (objects of kinds only the new CRDs define: once those are Established) | 0 when unchanged, else a dry-run PATCH per object |
//! | record intent | inventory ∪ plan saved *before* the first write (with the records staged since the last write), each new name pending ([`Inventory::pending`]) | 0–1, no read |
//! | apply | `install::install`, phase by phase (`install::apply_phase`: one Event per kind of write); each object written confirms its name, each created meanwhile by someone else stays pending | 0 when unchanged, else one SSA PATCH per object |
//! | confirm | `install::save_confirmed`: when the pass ends before its prune, the confirmations (and new UIDs) saved | 0–1, only when a name was confirmed or an object created again |
//! | gate | `gate::gate`: readiness from the watch cache; a timer per version and phase | 0 |
//! | prune | `prune::prune`: what the new version dropped, with fresh discovery, then the inventory (staged) | discovery + GET + DELETE per object |
//! | record | `finish::finish`: the provider's record (state, rolled-out version, failure series), staged, then the [`Outcome`], built once | 0: every provider's records go out in one write per pass, only on change, before the status ([`crate::controller`]) |
//!
//! Per-pass state (the selection, the protected sources, the cluster's RBAC ceiling, the unmanaged CRDs) is the caller's
//! [`Round`], and how far a provider may go while another rolls out its [`Until`]
//! ([`crate::order`]); the [`Context`] keeps only what outlives a pass (caches, failure history).
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

mod context;
mod finish;
mod gate;
mod install;
mod inventory;
mod preflight;
mod prune;
mod revisions;
mod run;
mod uninstall;
mod unmanaged;

use capi_apply::KindResolver;

use crate::compute::{self, Step};
use crate::error::ProviderError;
use crate::order::Until;
use crate::outcome::{Outcome, ProviderState};
use crate::prepare::{Prepared, RenderError};
use crate::revision::Choice;
use crate::round::{Planner, Round};
use crate::source::{Payload, SourceError, Target};
pub(crate) use context::Context;
use finish::finish;
use revisions::{keep_last_good, roll_forward, serve};
use run::Run;
pub(crate) use uninstall::uninstall;
use unmanaged::take_unmanaged;

/// Renders, validates and plans one provider of `planner`'s round with the API server's kinds
/// (pure but for discovery: once, and again, once, for a kind served by a CRD created since), off
/// the async runtime.
pub(crate) async fn prepare(
    cx: &Context,
    planner: &mut Planner,
    target: &Target,
    payload: Result<Payload, SourceError>,
) -> Result<Prepared, ProviderError> {
    let payload = payload?;
    cx.metrics.count_plan(&target.source.id.to_string());
    let resolver = cx.resolver(false).await?;
    let (payload, prepared) = plan_off_runtime(cx, planner, target, payload, resolver).await;
    let prepared = match prepared {
        Err(e) if e.unknown_kind() => {
            let resolver = cx.resolver(true).await?;
            plan_off_runtime(cx, planner, target, payload, resolver)
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
    cx: &Context,
    planner: &mut Planner,
    target: &Target,
    payload: Payload,
    resolver: KindResolver,
) -> (Payload, Result<Prepared, RenderError>) {
    let mut moved = planner.clone();
    let target = target.clone();
    let (moved, payload, prepared) = compute::run(&cx.metrics, Step::Prepare, move || {
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
    cx: &Context,
    target: &Target,
    prepared: Result<Prepared, ProviderError>,
    round: &Round,
    until: Option<&Until>,
) -> Outcome {
    cx.act_as(&target.source.id, &target.clusterctl_label);
    let prepared = match prepared {
        Ok(mut p) => take_unmanaged(cx, &mut p, round).await.map(|()| p),
        Err(e) => Err(e),
    };
    let content_id = prepared
        .as_ref()
        .ok()
        .map(|p| p.revision_part().to_string());
    let mut run = match prepared {
        // Refused before anything of it was written: the last good version stays reconciled.
        Err(e) => keep_last_good(cx, target, e, round, until).await,
        // The source's content, or a recorded revision while a rollback holds.
        Ok(prepared) => {
            let id = &target.source.id;
            let mut stored = cx.revisions.load(id, &id.to_string(), &target.source.name);
            match stored.log.choose(&prepared.digest, stored.request.as_ref()) {
                Ok(Choice::Source) => {
                    match roll_forward(cx, target, prepared, stored, round, until).await {
                        Ok(run) => run,
                        // Refused before its first write: as a content that does not render.
                        Err(refusal) => keep_last_good(cx, target, refusal, round, until).await,
                    }
                }
                Ok(Choice::Serve(hold)) => serve(cx, target, &mut stored, hold, round, until).await,
                Err(e) => Run::failed(
                    target,
                    e.into(),
                    prepared.related_objects(&cx.config.namespace),
                ),
            }
        }
    };
    run.content_id = content_id;
    finish(cx, run).await
}

/// The outcome of a provider that is not reconciled this time: blocked behind another, or refused
/// before anything is read.
pub(crate) async fn not_reconciled(
    cx: &Context,
    target: &Target,
    result: Result<ProviderState, ProviderError>,
) -> Outcome {
    finish(
        cx,
        Run {
            target: target.clone(),
            result,
            rolled_out: None,
            related: Vec::new(),
            held: None,
            content_id: None,
            dropped_short_names: Vec::new(),
        },
    )
    .await
}
