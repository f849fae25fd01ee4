//! What every controller's pass does in the project's one loop ([`capi_runtime::pace`]): reconcile
//! from the caches, turn the outcome into the controller's two conditions, write them only when they
//! changed, and say when to look again (its resync, its recheck, or a backoff after a failure).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use capi_runtime::pace::{self, Coalesce, Pass, Woken};
use tokio::sync::Notify;

use crate::config::ControllerKind;
use crate::context::{Context, Exit, Outcome};
use crate::error::ControllerError;
use crate::names::CLUSTER_OPERATOR_NAME;
use crate::status::{self, State};
use crate::watch::{Kind, WatchKey};

/// A controller: one reconcile of its whole (singleton) job.
pub(crate) trait Reconcile: Send + 'static {
    const KIND: ControllerKind;

    /// Reads the caches (registering the watches it needs with `wake`), writes what differs, and
    /// concludes.
    fn reconcile(
        &mut self,
        ctx: &Context,
        wake: &Arc<Notify>,
    ) -> impl Future<Output = Result<Outcome, Exit>> + Send;
}

/// A transient error degrades a controller only after this many consecutive failures.
const DEGRADED_AFTER_FAILURES: u32 = 3;
/// How soon to look again while a cache has not finished its first list.
const SYNC_POLL: Duration = Duration::from_millis(500);
/// Events arrive in bursts (our own write echoes back, several objects change together): wait this
/// long after a wake-up so that one reconcile sees them all.
const COALESCE: Coalesce = Coalesce {
    quiet: Duration::from_millis(100),
    at_most: Duration::from_millis(100),
};

/// Runs `controller` until `shutdown` resolves, in the project's one loop ([`capi_runtime::pace`]).
pub(crate) async fn run<R: Reconcile>(
    ctx: Arc<Context>,
    controller: R,
    shutdown: impl Future<Output = ()>,
) {
    let wake = Arc::new(Notify::new());
    let runner = Runner {
        ctx,
        controller,
        wake: wake.clone(),
        failures: 0,
        last: None,
    };
    pace::run(&[&wake], COALESCE, shutdown, runner).await;
    tracing::info!(controller = R::KIND.name(), "stopped");
}

/// A controller with what its passes remember: its failures in a row, the state it reported last.
struct Runner<R> {
    ctx: Arc<Context>,
    controller: R,
    /// Rung by the watches the controller registers.
    wake: Arc<Notify>,
    failures: u32,
    last: Option<State>,
}

impl<R: Reconcile> Pass for Runner<R> {
    async fn pass(&mut self, _: Woken) -> Duration {
        let ctx = &self.ctx;
        let name = R::KIND.name();
        let result = match self.controller.reconcile(ctx, &self.wake).await {
            Ok(o) | Err(Exit::Outcome(o)) => Ok(o),
            Err(Exit::Error(e)) => Err(e),
        };
        let (state, delay) = match result {
            Ok(Outcome::Syncing) => return SYNC_POLL,
            Ok(Outcome::Report { state, recheck }) => {
                ctx.metrics.reconciled(name, true);
                self.failures = 0;
                (state, recheck.unwrap_or(ctx.config.resync))
            }
            Err(e) => {
                ctx.metrics.reconciled(name, false);
                self.failures += 1;
                let delay = backoff(ctx, self.failures);
                tracing::warn!(controller = name, error = %e, attempt = self.failures, retry_in = ?delay, "reconcile failed");
                if !degrades(&e, self.failures) {
                    return delay;
                }
                (State::failed(&e), delay)
            }
        };
        if self.last.as_ref() != Some(&state) {
            log_state(name, &state);
        }
        match write_status(ctx, R::KIND, &state, &self.wake) {
            Ok(None) => {}
            Ok(Some(body)) => {
                if let Err(e) = status::write(&ctx.client, R::KIND.field_manager(), &body).await {
                    tracing::warn!(controller = name, error = %e, "cannot write conditions; retrying");
                    return delay.min(Duration::from_secs(5));
                }
                ctx.metrics.wrote_status(name);
            }
            Err(waiting) => {
                if self.last.as_ref() != Some(&state) {
                    tracing::info!(controller = name, "{waiting}");
                }
            }
        }
        self.last = Some(state);
        delay
    }
}

fn degrades(e: &ControllerError, failures: u32) -> bool {
    !e.is_transient() || failures >= DEGRADED_AFTER_FAILURES
}

fn backoff(ctx: &Context, failures: u32) -> Duration {
    let exp = failures.saturating_sub(1).min(16);
    ctx.config
        .backoff_min
        .saturating_mul(1 << exp)
        .min(ctx.config.backoff_max)
}

fn log_state(name: &str, state: &State) {
    match state {
        State::Done { message } => tracing::info!(controller = name, %message, "done"),
        State::PlatformNotSupported { message } => {
            tracing::info!(controller = name, %message, "nothing to do")
        }
        State::ExternallyManaged { message } => {
            tracing::warn!(controller = name, %message, "left alone")
        }
        State::Waiting { wait, message } => {
            tracing::info!(controller = name, reason = wait.reason(), %message, "waiting")
        }
        State::Failed { reason, message } => {
            tracing::warn!(controller = name, reason = reason.as_str(), %message, "degraded")
        }
    }
}

/// The status patch for `state`, `Ok(None)` when the ClusterOperator already shows it, `Err` when it
/// cannot be written yet (the ClusterOperator does not exist: the release payload or the installer
/// creates it; its watch wakes us when it appears).
fn write_status(
    ctx: &Context,
    kind: ControllerKind,
    state: &State,
    wake: &Arc<Notify>,
) -> Result<Option<serde_json::Value>, String> {
    let watch = ctx.watches.watch(
        &WatchKey::object(Kind::cluster_operator(), None, CLUSTER_OPERATOR_NAME),
        wake,
    );
    if !watch.is_ready() {
        return Err(format!(
            "waiting for the ClusterOperator {CLUSTER_OPERATOR_NAME} cache"
        ));
    }
    let Some(co) = watch.get(CLUSTER_OPERATOR_NAME) else {
        return Err(format!(
            "ClusterOperator {CLUSTER_OPERATOR_NAME} does not exist yet; conditions are written once it does"
        ));
    };
    let conditions = status::conditions(kind.name(), state);
    Ok(status::patch(
        &conditions,
        co.data.get("status"),
        &capi_openshift::time::now_rfc3339(),
    ))
}
