//! A control plane per test, waiting for conditions, clients that tell their requests apart, and
//! controllers run as tasks of the test.

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use control_plane::{AuditEvent, ControlPlane, ControlPlaneOptions};
use kube::Client;

/// A real control plane (etcd, kube-apiserver with RBAC and an audit log, the OpenShift config CRDs)
/// and a cluster-admin client of it.
pub struct Env {
    pub cp: ControlPlane,
    pub admin: Client,
}

impl Env {
    /// Starts a fresh control plane; `with_workloads` adds controller-manager, scheduler and KWOK (a
    /// fake node: Deployments become Available without containers).
    pub async fn start(with_workloads: bool) -> Env {
        init_logging();
        let cp = ControlPlane::start(ControlPlaneOptions {
            with_workloads,
            ..Default::default()
        })
        .await
        .expect("control plane starts");
        let admin = cp.admin_client().await.expect("admin client");
        Env { cp, admin }
    }

    /// A control plane with workloads, `Infrastructure/cluster` on AWS and the release payload of
    /// `configmaps` ([`crate::load_payload`]), before any installer runs. Call `require_fixture!` first.
    pub async fn on_aws(configmaps: &[&str]) -> Env {
        let env = Env::start(true).await;
        crate::set_platform(&env.admin, "AWS").await;
        crate::load_payload(&env.admin, configmaps)
            .await
            .expect("fixtures present");
        env
    }

    pub fn audit(&self) -> Vec<AuditEvent> {
        self.cp.audit_events().expect("audit log readable")
    }

    /// The client configuration of ServiceAccount `namespace/name` (created when missing; it gets no
    /// permissions here).
    pub async fn service_account_config(&self, namespace: &str, name: &str) -> kube::Config {
        self.cp
            .service_account_config(namespace, name)
            .await
            .unwrap_or_else(|e| panic!("ServiceAccount {namespace}/{name}: {e}"))
    }
}

/// The log of the code under test, shown with a failing test's output (`RUST_LOG` filters it).
pub fn init_logging() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
                tracing_subscriber::EnvFilter::new("info,kube=warn,kube_client=off")
            }),
        )
        .with_test_writer()
        .try_init();
}

/// A client of `config` whose every request carries `user_agent`: kube-rs sends none of its own, and
/// the audit-log assertions tell the writers apart by it.
pub fn with_user_agent(mut config: kube::Config, user_agent: &str) -> Client {
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_str(user_agent).expect("a valid user agent"),
    ));
    Client::try_from(config).expect("client")
}

/// The last `n` lines of `text`, for a failure message.
pub fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Polls `check` until it returns `Some`, or panics with `what` after `timeout`.
pub async fn eventually<T, F, Fut>(timeout: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        if Instant::now() > deadline {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// What a controller's `run` is given to stop on.
pub type StopSignal = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A controller running as a task of the test; abandoned at once when dropped (as a killed process:
/// mid-flight work is not finished, nothing is cleaned up).
pub struct InProcess {
    task: tokio::task::JoinHandle<()>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl InProcess {
    /// Spawns `run(stop)`, where `stop` resolves on [`InProcess::stop`].
    pub fn spawn<F, Fut>(run: F) -> InProcess
    where
        F: FnOnce(StopSignal) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(run(Box::pin(async {
            let _ = stopped.await;
        })));
        InProcess {
            task,
            stop: Some(stop),
        }
    }

    /// Graceful stop: the controller finishes what it is doing (at most `grace`).
    pub async fn stop(mut self, grace: Duration) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        let _ = tokio::time::timeout(grace, &mut self.task).await;
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        self.task.abort();
    }
}
