//! The life of a controller process: serve health and metrics, campaign for the Lease, run the
//! controller while holding it, hand the Lease back on SIGTERM, and exit at once when it is lost.

use std::future::Future;
use std::sync::Arc;

use prometheus_client::registry::Registry;
use tokio::sync::{oneshot, watch};

use crate::Error;
use crate::args::{HttpArgs, LeaderElectionArgs};
use crate::http::{self, Readiness};
use crate::leader::{Elector, Timing};
use crate::metrics::ProcessMetrics;

/// Everything [`run`] needs besides the controller.
pub struct Runtime {
    /// The binary's client configuration (with its user agent, [`crate::process::config`]): for the
    /// Lease and to check /metrics callers.
    pub config: kube::Config,
    /// The namespace the binary works in: the Lease's namespace unless `--leader-elect-namespace`.
    pub namespace: String,
    /// The Lease's name, one per binary (`capi-installer-leader`, ...).
    pub lease_name: String,
    pub leader: LeaderElectionArgs,
    pub http: HttpArgs,
    /// What /metrics serves: the controller's own series, registered by the binary.
    pub registry: Arc<Registry>,
    /// The process's own series in that registry ([`ProcessMetrics::register`]).
    pub process: ProcessMetrics,
    /// When to stop: [`Shutdown::on_signal`], made first thing in the binary.
    pub shutdown: Shutdown,
}

/// Resolves once the process is asked to stop (SIGTERM, Ctrl-C). Cheap to clone.
#[derive(Clone, Debug)]
pub struct Shutdown(watch::Receiver<bool>);

impl Shutdown {
    /// A shutdown that happens on SIGTERM or SIGINT, the handler installed now. A binary calls this
    /// first, before it reads its inputs or reaches the API server: until then a SIGTERM is lost (see
    /// `process::shutdown_signal`), and on a node short of CPU the kubelet's probes gave up on a
    /// process, and sent it SIGTERM, before it had logged its first line.
    pub fn on_signal() -> Shutdown {
        let (stop, stopped) = watch::channel(false);
        let signal = crate::process::shutdown_signal();
        tokio::spawn(async move {
            signal.await;
            let _ = stop.send(true);
        });
        Shutdown(stopped)
    }

    /// A shutdown triggered by the returned sender.
    #[cfg(test)]
    pub(crate) fn manual() -> (watch::Sender<bool>, Shutdown) {
        let (stop, stopped) = watch::channel(false);
        (stop, Shutdown(stopped))
    }

    /// Resolves when shutdown was asked for (at once if it already was).
    pub async fn requested(mut self) {
        // An error means the sender is gone, which only happens after it sent: shut down either way.
        let _ = self.0.wait_for(|stop| *stop).await;
    }
}

/// How long a controller may go on after SIGTERM before it is dropped mid-pass: half the Deployments'
/// `terminationGracePeriodSeconds` (60), leaving the other half for handing the Lease back. A pass
/// usually finishes in well under a second, but on a starved node (the pods ask for `cpu: 10m`) one
/// took longer than the whole grace period, the kubelet killed the process with the Lease still held,
/// and the standby waited out the Lease's 137 s. Dropping a pass is safe: every write is a server-side
/// apply that the next leader's pass makes again, and a process killed mid-pass is no different.
pub(crate) const STOP_WITHIN: std::time::Duration = std::time::Duration::from_secs(30);

/// Runs `controller` to its end; once `shutdown` is requested, gives it `bound` more to return, then
/// drops it (a warning says so) and returns `Ok`.
async fn stop_within<E>(
    bound: std::time::Duration,
    shutdown: Shutdown,
    controller: impl Future<Output = Result<(), E>>,
) -> Result<(), E> {
    tokio::pin!(controller);
    tokio::select! {
        result = &mut controller => return result,
        _ = shutdown.requested() => {}
    }
    match tokio::time::timeout(bound, controller).await {
        Ok(result) => result,
        Err(_) => {
            tracing::warn!(
                waited = %crate::duration::format_duration(bound),
                "the controller did not stop in time after SIGTERM; stopping it mid-pass"
            );
            Ok(())
        }
    }
}

/// Runs a controller as the project's binaries do:
///
/// 0. fixes malloc's thresholds ([`crate::memory::tune`]);
/// 1. serves /healthz and /readyz ([`http::serve_health`]) and /metrics ([`http::serve_metrics`]);
/// 2. with `--leader-elect` (the default), campaigns for the Lease; a standby opens nothing else, and
///    stops quietly on SIGTERM;
/// 3. calls `controller` (only now: a standby keeps no watches open) and runs its future while the
///    Lease is renewed on a thread of its own, with its own runtime and client ([`Election`]): what the
///    controller computes or sends never delays a renewal;
/// 4. when the controller returns (it should on [`Shutdown`], once its pass in progress is done — or
///    after [`STOP_WITHIN`], dropped mid-pass), releases the Lease so that a standby takes over at once,
///    and returns the controller's result;
/// 5. when the Lease is lost (taken over, or not renewed within the renew deadline), logs
///    `lost leadership; exiting` and **exits the process with code 1** at once from the election's
///    thread, even mid-reconcile or mid-computation: a replica that may no longer be the leader must
///    not write another object, and tasks the controller spawned would outlive a mere return. The
///    Deployment restarts it as a standby.
pub async fn run<F, Fut, E>(runtime: Runtime, controller: F) -> Result<(), Error>
where
    F: FnOnce(Shutdown) -> Fut,
    Fut: Future<Output = Result<(), E>>,
    E: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let Runtime {
        config,
        namespace,
        lease_name,
        leader,
        http: http_args,
        registry,
        process,
        shutdown,
    } = runtime;
    crate::memory::tune();
    let timing = leader.timing();
    if leader.leader_elect {
        timing.validate()?;
    }
    let client = kube::Client::try_from(config.clone()).map_err(Error::Client)?;
    crate::responsiveness::watch(process.clone());
    let ready = Readiness::default();
    http::serve_health(http_args.http_addr, ready.clone()).await?;
    http::serve_metrics(&http_args, registry, client.clone()).await?;
    let finish = |result: Result<(), E>| result.map_err(|e| Error::Controller(e.into()));

    if !leader.leader_elect {
        tracing::info!("leader election disabled: running as the only replica");
        ready.set(true);
        return finish(stop_within(STOP_WITHIN, shutdown.clone(), controller(shutdown)).await);
    }

    let identity = leader.identity();
    let lease_namespace = leader.leader_elect_namespace.unwrap_or(namespace);
    tracing::info!(
        lease = %format!("{lease_namespace}/{lease_name}"),
        %identity,
        lease_duration = %crate::duration::format_duration(timing.lease_duration),
        renew_deadline = %crate::duration::format_duration(timing.renew_deadline),
        retry_period = %crate::duration::format_duration(timing.retry_period),
        "campaigning for leadership"
    );
    let lease = Lease {
        namespace: lease_namespace,
        name: lease_name,
        identity,
        timing,
    };
    let mut election = Election::start(config, lease, ready.clone(), process)?;
    tokio::select! {
        acquired = election.acquired() => acquired?,
        _ = shutdown.clone().requested() => {
            tracing::info!("stopped while standing by");
            return Ok(());
        }
    }

    ready.set(true);
    let result = stop_within(STOP_WITHIN, shutdown.clone(), controller(shutdown)).await;
    ready.set(false);
    election.release().await;
    finish(result)
}

/// The election on a thread of its own, with a single-threaded runtime and a client — so a
/// connection — of its own: a renewal never waits for a worker thread that the controller keeps busy,
/// nor behind the controller's requests to the API server. The thread also exits the process when the
/// Lease is lost, so that a controller in the middle of a computation stops at once too.
struct Election {
    acquired: oneshot::Receiver<Result<(), Error>>,
    /// Sent to hand the Lease back (with where to say it is done); dropped to stop campaigning.
    release: Option<oneshot::Sender<oneshot::Sender<()>>>,
}

/// Which Lease, as whom, how often.
struct Lease {
    namespace: String,
    name: String,
    identity: String,
    timing: Timing,
}

impl Election {
    fn start(
        config: kube::Config,
        lease: Lease,
        ready: Readiness,
        process: ProcessMetrics,
    ) -> Result<Election, Error> {
        let (acquired_tx, acquired) = oneshot::channel();
        let (release, mut release_rx) = oneshot::channel::<oneshot::Sender<()>>();
        let thread = move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(e) => {
                    let _ = acquired_tx.send(Err(Error::Election(e)));
                    return;
                }
            };
            runtime.block_on(async move {
                // Built on this thread's runtime, so that its connections are served here.
                let client = match kube::Client::try_from(config) {
                    Ok(client) => client,
                    Err(e) => {
                        let _ = acquired_tx.send(Err(Error::Client(e)));
                        return;
                    }
                };
                let mut elector = Elector::new(
                    client,
                    &lease.namespace,
                    &lease.name,
                    &lease.identity,
                    lease.timing,
                );
                tokio::select! {
                    _ = elector.acquire(|reached| ready.set(reached)) => {}
                    // Stopped while standing by.
                    _ = &mut release_rx => return,
                }
                if acquired_tx.send(Ok(())).is_err() {
                    // Stopped while the lease was being acquired.
                    let _ = elector.release().await;
                    return;
                }
                tokio::select! {
                    lost = elector.hold(|took| process.observe_renewal(took)) => {
                        tracing::error!(error = %lost, "lost leadership; exiting");
                        std::process::exit(i32::from(crate::report::exit::FAILED));
                    }
                    done = &mut release_rx => {
                        if let Err(e) = elector.release().await {
                            tracing::warn!(error = %e, "cannot release the lease; a standby takes over once it expires");
                        }
                        if let Ok(done) = done {
                            let _ = done.send(());
                        }
                    }
                }
            });
        };
        std::thread::Builder::new()
            .name("leader-election".into())
            .spawn(thread)
            .map_err(Error::Election)?;
        Ok(Election {
            acquired,
            release: Some(release),
        })
    }

    /// Resolves once this replica holds the Lease.
    async fn acquired(&mut self) -> Result<(), Error> {
        (&mut self.acquired).await.unwrap_or_else(|_| {
            Err(Error::Election(std::io::Error::other(
                "the leader election thread ended",
            )))
        })
    }

    /// Hands the Lease back (best effort, bounded by the retry period) and returns once done.
    async fn release(mut self) {
        let (done, finished) = oneshot::channel();
        if let Some(release) = self.release.take()
            && release.send(done).is_ok()
        {
            let _ = finished.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// A controller that returns on shutdown (its pass finished) gives its own result.
    #[tokio::test(start_paused = true)]
    async fn a_controller_that_stops_in_time_gives_its_result() {
        let (stop, shutdown) = Shutdown::manual();
        let controller = {
            let shutdown = shutdown.clone();
            async move {
                shutdown.requested().await;
                tokio::time::sleep(Duration::from_secs(5)).await;
                Err::<(), &str>("its own error")
            }
        };
        stop.send(true).unwrap();
        let started = tokio::time::Instant::now();
        assert_eq!(
            stop_within(STOP_WITHIN, shutdown, controller).await,
            Err("its own error")
        );
        assert_eq!(started.elapsed(), Duration::from_secs(5));
    }

    /// A controller stuck in a pass is dropped once the bound after shutdown has passed, not before.
    #[tokio::test(start_paused = true)]
    async fn a_controller_stuck_after_shutdown_is_dropped_after_the_bound() {
        let (stop, shutdown) = Shutdown::manual();
        let dropped = Arc::new(std::sync::atomic::AtomicBool::new(false));
        struct OnDrop(Arc<std::sync::atomic::AtomicBool>);
        impl Drop for OnDrop {
            fn drop(&mut self) {
                self.0.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
        let guard = OnDrop(dropped.clone());
        let controller = async move {
            let _guard = guard;
            std::future::pending::<Result<(), &str>>().await
        };
        let started = tokio::time::Instant::now();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(100)).await;
            stop.send(true).unwrap();
        });
        assert_eq!(stop_within(STOP_WITHIN, shutdown, controller).await, Ok(()));
        assert_eq!(started.elapsed(), Duration::from_secs(100) + STOP_WITHIN);
        assert!(dropped.load(std::sync::atomic::Ordering::SeqCst));
    }

    /// Without a shutdown, a controller that returns on its own is not bounded.
    #[tokio::test(start_paused = true)]
    async fn a_controller_that_returns_by_itself_is_not_bounded() {
        let (_stop, shutdown) = Shutdown::manual();
        let controller = async {
            tokio::time::sleep(STOP_WITHIN * 10).await;
            Ok::<(), &str>(())
        };
        let started = tokio::time::Instant::now();
        assert_eq!(stop_within(STOP_WITHIN, shutdown, controller).await, Ok(()));
        assert_eq!(started.elapsed(), STOP_WITHIN * 10);
    }
}

#[cfg(test)]
mod signal_tests {
    use std::time::Duration;

    use super::Shutdown;

    /// A SIGTERM that comes right after [`Shutdown::on_signal`], before the runtime has run anything
    /// (a current-thread runtime runs the spawned listener only when this test yields), is seen. Were
    /// the handler installed only when the listener first ran, the signal's default action would end
    /// this test process (and a container's PID 1 would drop it).
    #[tokio::test(flavor = "current_thread")]
    async fn a_sigterm_right_after_on_signal_is_not_lost() {
        let shutdown = Shutdown::on_signal();
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &std::process::id().to_string()])
            .status()
            .expect("kill runs");
        assert!(sent.success());
        tokio::time::timeout(Duration::from_secs(30), shutdown.requested())
            .await
            .expect("the SIGTERM is seen");
    }
}
