//! The end of every provider's reconcile: its state, its failure series, whether it serves, its record
//! and, for a failed attempt, a Warning Event.

use std::time::{Duration, Instant};

use capi_apply::{Availability, Phase, availability};
use capi_openshift::time::now_rfc3339;
use kube::runtime::events::EventType;

use super::context::Context;
use super::run::Run;
use crate::error::ProviderError;
use crate::inventory::ProviderRecord;
use crate::outcome::{Outcome, ProviderState, Unavailable};
use crate::source::{SourceId, Target};

/// Records the run (only what changed is written), reports a failed attempt, and builds the
/// outcome, once, from all of it.
pub(super) async fn finish(cx: &Context, run: Run) -> Outcome {
    let Run {
        target,
        result,
        rolled_out,
        related,
        held,
        content_id,
        dropped_short_names,
    } = run;
    let id = &target.source.id;
    let previous = ProviderRecord::read(&cx.inventories.current(id));
    seed_history(cx, id, previous.as_ref());
    let state = match result {
        Ok(state) => {
            if !matches!(state, ProviderState::Blocked { .. }) {
                cx.history.lock().expect("history").succeeded(id);
            }
            state
        }
        Err(error) => failed(cx, &target, error).await,
    };
    let record = ProviderRecord::next(
        previous.as_ref(),
        &target,
        &state,
        rolled_out.as_deref(),
        &now_rfc3339(),
    );
    let rolled_out = record
        .rolled_out
        .as_ref()
        .map(|r| r.version.clone().unwrap_or_default());
    let unavailable = match rolled_out {
        Some(_) => unavailable_workloads(cx, id).await,
        None => Vec::new(),
    };
    let serving = rolled_out.is_some() && unavailable.is_empty();
    // Stored with the pass's other records, before its status write (the controller flushes).
    cx.inventories.stage_record(id, &record);
    Outcome {
        target,
        state,
        serving,
        unavailable,
        rolled_out,
        related,
        held,
        content_id,
        dropped_short_names,
    }
}

/// A process that has not seen this provider fail continues the series its record holds, so that a
/// restart or a new leader does not reset `Degraded`.
fn seed_history(cx: &Context, id: &SourceId, previous: Option<&ProviderRecord>) {
    let mut history = cx.history.lock().expect("history");
    if history.failing(id) {
        return;
    }
    let Some(failure) = previous.and_then(|p| p.failure.as_ref()) else {
        return;
    };
    let failing_for = failure
        .since
        .parse::<k8s_openapi::jiff::Timestamp>()
        .map(|since| {
            let secs = k8s_openapi::jiff::Timestamp::now().as_second() - since.as_second();
            Duration::from_secs(secs.max(0) as u64)
        })
        .unwrap_or_default();
    history.seed(id, failure.attempts, failing_for, Instant::now());
}

/// Counts a failed attempt; an attempt that counts (spaced from the previous one) is logged, counted
/// in the metrics and reported as a Warning Event whose reason is the status reason.
async fn failed(cx: &Context, target: &Target, error: ProviderError) -> ProviderState {
    let id = &target.source.id;
    let (attempts, counted, failing_for) = cx
        .history
        .lock()
        .expect("history")
        .failed(id, Instant::now());
    if counted {
        let reason = error.reason();
        cx.metrics.count_error(reason.as_str());
        tracing::warn!(source = %id, %reason, attempts, %error, "provider failed");
        cx.events
            .publish(
                EventType::Warning,
                reason.as_str(),
                "Reconcile",
                Some(cx.events.source_reference(id)),
                format!("{id}: {error} (attempt {attempts})"),
            )
            .await;
    }
    ProviderState::Failed {
        error,
        attempts,
        failing_for,
    }
}

/// The workloads the provider's inventory records that are not Available now (a Deployment by its
/// `Available` condition, whatever its rollout; other kinds by kstatus). Read from the watch cache,
/// whose Deployment watch also wakes the installer when one of them changes; an object it does not
/// have counts as unavailable.
async fn unavailable_workloads(cx: &Context, id: &SourceId) -> Vec<Unavailable> {
    let inventory = cx.inventories.current(id);
    let workloads: Vec<_> = inventory
        .entries
        .iter()
        .filter(|(_, phase)| **phase == Phase::Workloads)
        .map(|(key, _)| key.clone())
        .collect();
    if workloads.is_empty() {
        return Vec::new();
    }
    if let Ok(resolver) = cx.resolver(false).await {
        for key in &workloads {
            if let Some(kind) = resolver
                .resolve_key(key)
                .or_else(|| resolver.resolve_any_version(&key.group, &key.kind))
            {
                cx.cache.ensure_watched(&kind.resource, kind.namespaced);
            }
        }
    }
    cx.cache.wait_synced(Duration::from_secs(5)).await;
    let now = k8s_openapi::jiff::Timestamp::now();
    let mut history = cx.history.lock().expect("history");
    workloads
        .into_iter()
        .filter_map(|key| {
            let found = match cx.cache.get(&key) {
                Some(live) => availability(&key.group, &key.kind, &live),
                None => Availability::Unavailable {
                    status: "not found".into(),
                    since: None,
                },
            };
            let Availability::Unavailable { status, since } = found else {
                history.available(&key);
                return None;
            };
            // The workload's own record of when it stopped serving survives a restart of the
            // installer; without one, since when this process has seen it so.
            let recorded = since
                .and_then(|t| t.parse::<k8s_openapi::jiff::Timestamp>().ok())
                .map(|t| Duration::from_secs((now.as_second() - t.as_second()).max(0) as u64));
            let lasted = recorded.unwrap_or_else(|| history.unavailable_for(&key, Instant::now()));
            Some(Unavailable {
                key,
                status,
                lasted,
                tolerated: cx.config.deployment_timeout,
            })
        })
        .collect()
}
