//! Waiting for readiness, bounded by a timeout: a phase gate never hangs.

use std::fmt;
use std::time::Duration;

use kube::Client;
use kube::api::ApiResource;
use tokio::time::Instant;

use crate::key::ObjectKey;
use crate::key::api_for;
use crate::plan::PlannedPhase;
use crate::readiness::{Readiness, readiness};

/// An object to wait for.
#[derive(Debug, Clone)]
pub struct WaitTarget {
    pub key: ObjectKey,
    pub resource: ApiResource,
}

impl PlannedPhase {
    /// Every object of the phase as a [`WaitTarget`].
    pub fn wait_targets(&self) -> Vec<WaitTarget> {
        self.objects
            .iter()
            .map(|o| WaitTarget {
                key: o.key.clone(),
                resource: o.resource.clone(),
            })
            .collect()
    }
}

/// Objects that were not Current when the wait ended, with their last readiness.
#[derive(Debug, Clone, thiserror::Error)]
pub struct WaitError {
    pub not_ready: Vec<(ObjectKey, Readiness)>,
    /// True when the wait ended because every remaining object had Failed (before the timeout).
    pub failed: bool,
}

impl fmt::Display for WaitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.failed {
            "failed: "
        } else {
            "not ready in time: "
        })?;
        for (i, (key, r)) in self.not_ready.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{key}: {r}")?;
        }
        Ok(())
    }
}

/// GETs each object every `interval` until all are Current. Returns early (with `failed: true`) as
/// soon as every object that is not Current has Failed, and with `failed: false` after `timeout`.
/// A request error counts as InProgress for that round (logged), so a blip does not end the wait.
pub async fn wait_ready(
    client: &Client,
    objects: &[WaitTarget],
    timeout: Duration,
    interval: Duration,
) -> Result<(), WaitError> {
    let deadline = Instant::now() + timeout;
    let mut pending: Vec<(&WaitTarget, Readiness)> = objects
        .iter()
        .map(|t| (t, Readiness::InProgress("not checked yet".into())))
        .collect();
    loop {
        for (target, state) in pending.iter_mut() {
            let api = api_for(client, &target.resource, &target.key);
            *state = match api.get_opt(&target.key.name).await {
                Ok(Some(obj)) => readiness(&target.key.group, &target.key.kind, &obj),
                Ok(None) => Readiness::NotFound,
                Err(e) => {
                    tracing::warn!(object = %target.key, error = %e, "readiness check failed");
                    Readiness::InProgress(format!("cannot read: {e}"))
                }
            };
        }
        pending.retain(|(_, r)| !r.is_current());
        if pending.is_empty() {
            return Ok(());
        }
        let all_failed = pending
            .iter()
            .all(|(_, r)| matches!(r, Readiness::Failed(_)));
        let now = Instant::now();
        if all_failed || now >= deadline {
            return Err(WaitError {
                not_ready: pending
                    .into_iter()
                    .map(|(t, r)| (t.key.clone(), r))
                    .collect(),
                failed: all_failed,
            });
        }
        tokio::time::sleep(interval.min(deadline - now)).await;
    }
}
