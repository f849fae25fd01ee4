//! The revision step, after prepare: which content to apply — the source's, or a recorded revision
//! while a rollback holds (see [`crate::revision`]) — recorded before the first write and marked
//! once fully rolled out. A new revision whose Deployments do not become Available in time is marked
//! failed and a rollback to the last good one recorded (a hold): the next pass, which that record
//! wakes and which reconciles this provider because its hold is one of its inputs, applies it. One
//! install per call.

use std::collections::btree_map::Entry;

use capi_apply::Phase;
use capi_openshift::time::now_rfc3339;
use kube::runtime::events::EventType;
use serde_json::Value;

use super::context::Context;
use super::install::{Installation, install, save_revisions};
use super::run::Run;
use super::unmanaged::take_unmanaged;
use crate::compute::{self, Step};
use crate::error::ProviderError;
use crate::order::Until;
use crate::outcome::ProviderState;
use crate::prepare::{Prepared, Rendered};
use crate::revision::{self, Hold, Stored};
use crate::round::Round;
use crate::source::Target;

/// Applies the source's content as a revision (a new one when its content is new). The refusal
/// when the content was refused before its first write (nothing of it was applied).
pub(super) async fn roll_forward(
    cx: &Context,
    target: &Target,
    prepared: Prepared,
    mut stored: Stored,
    round: &Round,
    until: Option<&Until>,
) -> Result<Run, ProviderError> {
    let id = &target.source.id;
    let related = prepared.related_objects(&cx.config.namespace);
    let now = now_rfc3339();
    let version = target.source.version.as_deref();
    let n = stored.log.begin(&prepared.digest, version, &now);
    let mut prepared = prepared;
    if let Entry::Vacant(slot) = stored.contents.entry(n) {
        let (returned, content) = compute::run(&cx.metrics, Step::Compress, move || {
            let content = revision::compress(prepared.plan.objects().map(|o| &o.object));
            (prepared, content)
        })
        .await;
        prepared = returned;
        slot.insert(content);
    }
    // After the revision keeps the rendered objects: the checks, the dry-run and the apply that
    // follow borrow the stamped objects instead of stamping a copy of each.
    cx.applier.stamp_plan(&mut prepared.plan);
    // Recorded before the first write (by `install`), as the inventory: a revision that was applied
    // is always recorded.
    let installation = install(cx, target, &prepared, round, until, Some(&mut stored)).await;
    let installation = match installation {
        Installation {
            refused: true,
            result: Err(refusal),
            ..
        } => return Err(refusal),
        installation => installation,
    };
    if installation.rolled_out {
        stored.log.rolled_out(n, &now);
        if let Err(e) = save_revisions(cx, target, &mut stored).await {
            tracing::warn!(source = %id, error = %e, "cannot record the rolled-out revision");
        }
    }
    let timed_out = matches!(
        &installation.result,
        Err(ProviderError::GateTimeout {
            phase: Phase::Workloads,
            ..
        })
    );
    if timed_out {
        let cause = installation
            .result
            .as_ref()
            .err()
            .map(ToString::to_string)
            .unwrap_or_default();
        if let Some(hold) = stored.log.failed(n, &cause, &now) {
            if let Err(e) = save_revisions(cx, target, &mut stored).await {
                return Ok(Run::failed(target, e, related));
            }
            rolling_back(cx, target, &hold, &cause).await;
            // The rollback is the next pass's choice (`RevisionLog::choose` serves the hold): the
            // hold is one of the provider's inputs, so that pass, which the revisions' write
            // wakes, reconciles this provider again at once. Until then the rollout is reported as
            // what it still is, one that has not come through: not yet as failed.
            let pending = match installation.result {
                Err(ProviderError::GateTimeout { pending, .. }) => pending,
                _ => Vec::new(),
            };
            return Ok(Run {
                target: target.clone(),
                result: Ok(ProviderState::Progressing {
                    phase: Phase::Workloads,
                    pending,
                }),
                rolled_out: None,
                related,
                held: None,
                content_id: None,
                dropped_short_names: prepared.dropped_short_names,
            });
        }
    }
    Ok(Run {
        target: target.clone(),
        result: installation.result,
        rolled_out: installation.rolled_out.then_some(prepared.digest),
        related,
        held: None,
        content_id: None,
        dropped_short_names: prepared.dropped_short_names,
    })
}

/// Applies revision `hold.serving` instead of the source's content (up to `until`, as any
/// content).
pub(super) async fn serve(
    cx: &Context,
    target: &Target,
    stored: &mut Stored,
    hold: Hold,
    round: &Round,
    until: Option<&Until>,
) -> Run {
    let revision = stored.log.get(hold.serving).cloned();
    let mut served = target.clone();
    served.source.version = revision.as_ref().and_then(|r| r.version.clone());
    let mut replay = match replay(cx, target, stored, &hold, round).await {
        Ok(replay) => replay,
        Err(e) => return Run::failed(target, e, Vec::new()),
    };
    cx.applier.stamp_plan(&mut replay.plan);
    let installation = install(cx, &served, &replay, round, until, None).await;
    if installation.rolled_out {
        stored.log.served(&hold);
        if let Err(e) = save_revisions(cx, target, stored).await {
            tracing::warn!(source = %target.source.id, error = %e, "cannot record the rollback");
        }
    }
    let version = |n: Option<u32>| {
        n.and_then(|n| stored.log.get(n))
            .and_then(|r| r.version.clone())
            .unwrap_or_else(|| "no version label".into())
    };
    let result = match (installation.result, hold.failed) {
        (Ok(ProviderState::Installed), Some(failed)) => Err(ProviderError::RolledBack {
            failed,
            failed_version: version(Some(failed)),
            serving: hold.serving,
            serving_version: version(Some(hold.serving)),
            cause: stored
                .log
                .get(failed)
                .and_then(|r| r.message.clone())
                .unwrap_or_default(),
        }),
        (result, _) => result,
    };
    Run {
        target: served,
        result,
        rolled_out: installation.rolled_out.then_some(replay.digest.clone()),
        related: replay.related_objects(&cx.config.namespace),
        held: hold.failed.is_none().then_some(hold.serving),
        content_id: None,
        dropped_short_names: replay.dropped_short_names,
    }
}

/// A version refused before its first write (it does not decode or render, breaks the bundle policy,
/// or fails the dry-run, CRD safety or ownership checks) changes nothing: the revision that serves
/// (the last one rolled out, or the one a rollback holds) is reconciled as before (up to `until`, as
/// any content), drift repaired, and the provider fails with the refusal. Its status and related
/// objects stay those of the serving revision; only the reason is new. Without a serving revision
/// (a first install), nothing is applied.
pub(super) async fn keep_last_good(
    cx: &Context,
    target: &Target,
    refusal: ProviderError,
    round: &Round,
    until: Option<&Until>,
) -> Run {
    let id = &target.source.id;
    let stored = cx.revisions.load(id, &id.to_string(), &target.source.name);
    let Some(serving) = stored.log.last_good() else {
        return Run::failed(target, refusal, Vec::new());
    };
    let hold = Hold {
        digest: String::new(),
        serving,
        failed: None,
        since: now_rfc3339(),
    };
    let mut served = target.clone();
    served.source.version = stored.log.get(serving).and_then(|r| r.version.clone());
    let mut replay = match replay(cx, target, &stored, &hold, round).await {
        Ok(replay) => replay,
        Err(e) => {
            tracing::warn!(source = %id, revision = serving, error = %e,
                "cannot apply the serving revision again while a new version is refused");
            return Run::failed(target, refusal, Vec::new());
        }
    };
    cx.applier.stamp_plan(&mut replay.plan);
    let installation = install(cx, &served, &replay, round, until, None).await;
    if let Err(e) = &installation.result {
        tracing::warn!(source = %id, revision = serving, error = %e,
            "the serving revision did not apply while a new version is refused");
    }
    Run {
        target: served,
        result: Err(refusal),
        rolled_out: installation.rolled_out.then_some(replay.digest.clone()),
        related: replay.related_objects(&cx.config.namespace),
        held: None,
        content_id: None,
        dropped_short_names: replay.dropped_short_names,
    }
}

/// The plan of a rollback: the revision's objects, with the newest revision's CRDs (see
/// [`revision::rollback_objects`]), through the same checks as a fresh render.
async fn replay(
    cx: &Context,
    target: &Target,
    stored: &Stored,
    hold: &Hold,
    round: &Round,
) -> Result<Prepared, ProviderError> {
    let id = target.source.id.clone();
    let content = |n: u32| -> Result<(u32, Vec<u8>), ProviderError> {
        stored.log.servable(n)?;
        let bytes = stored
            .contents
            .get(&n)
            .ok_or_else(|| revision::RevisionError::NoContent {
                source_name: id.to_string(),
                revision: n,
            })?;
        Ok((n, bytes.clone()))
    };
    let newest = stored.log.newest().map_or(hold.serving, |r| r.revision);
    let newer = (newest != hold.serving)
        .then(|| content(newest))
        .transpose()?;
    let serving = content(hold.serving)?;
    let resolver = cx.resolver(false).await?;
    let mut planner = round.planner();
    let replanned = target.clone();
    // Decompressing and planning a whole revision again is a render's work: off the runtime.
    let mut replay = compute::run(&cx.metrics, Step::Replay, move || {
        let read = |(n, bytes): &(u32, Vec<u8>)| -> Result<Vec<Value>, ProviderError> {
            let origin = format!("revision {n} of {id}");
            revision::decompress(&origin, bytes).map_err(|message| {
                ProviderError::Revision(revision::RevisionError::Stored {
                    configmap: revision::configmap_name(&id),
                    key: revision::content_key(*n),
                    message,
                })
            })
        };
        let newest_objects = match &newer {
            Some(newer) => read(newer)?,
            None => Vec::new(),
        };
        let objects = revision::rollback_objects(read(&serving)?, &newest_objects);
        let origin = format!("revision {} of {id}", serving.0);
        Ok::<_, ProviderError>(planner.replan(
            &replanned,
            Rendered::stored(&origin, objects)?,
            &resolver,
        )?)
    })
    .await?;
    take_unmanaged(cx, &mut replay, round).await?;
    Ok(replay)
}

async fn rolling_back(cx: &Context, target: &Target, hold: &Hold, cause: &str) {
    let id = &target.source.id;
    let failed = hold.failed.unwrap_or_default();
    tracing::warn!(source = %id, failed, to = hold.serving, %cause, "rolling back");
    cx.events
        .publish(
            EventType::Warning,
            "RevisionRolledBack",
            "Rollback",
            Some(cx.events.source_reference(id)),
            format!(
                "{id}: revision {failed} did not become Available ({cause}); applying revision {} again",
                hold.serving
            ),
        )
        .await;
}
