//! `capi-installer`: the installer process (`run`) and its admin commands.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use capi_installer_controller::{Installer, InstallerConfig, Metrics, user_agent};
use clap::{Parser, Subcommand, ValueEnum};
use prometheus_client::registry::Registry;

mod leader;
mod render_cmd;
mod status_cmd;

#[derive(Parser)]
#[command(
    name = "capi-installer",
    version,
    about = "Installs Cluster API providers from transport ConfigMaps"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the installer controller against a cluster.
    Run(RunArgs),
    /// Print the ordered plan (and, with --output yaml, the rendered objects) of a platform, offline.
    Render(render_cmd::RenderArgs),
    /// Show what is installed: providers, versions, state, objects ready, and the ClusterOperator.
    Status(status_cmd::StatusArgs),
}

#[derive(Clone, Copy, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(clap::Args)]
struct RunArgs {
    /// Kubeconfig file; default: in-cluster configuration or $KUBECONFIG.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// The namespace of the transport ConfigMaps and of every namespaced provider object.
    #[arg(long, default_value = "openshift-cluster-api")]
    namespace: String,
    /// JSON object of release image references: key → image.
    #[arg(long)]
    images_json: PathBuf,
    /// YAML or JSON map of variables for `${VAR}` substitution in the components. The process
    /// environment is never used.
    #[arg(long)]
    substitutions: Option<PathBuf>,
    /// Reported as versions[operator] on the ClusterOperator.
    #[arg(long, env = "RELEASE_VERSION")]
    release_version: Option<String>,
    /// Seconds a Deployment may take to become Available before the provider counts as failing.
    #[arg(long, default_value_t = 300)]
    deployment_timeout: u64,
    /// Seconds a CRD may take to become Established.
    #[arg(long, default_value_t = 60)]
    crd_timeout: u64,
    /// Seconds between reconciles when no event arrives.
    #[arg(long, default_value_t = 600)]
    resync: u64,
    /// Field managers whose objects may be adopted (repeatable).
    #[arg(
        long = "adopt-from-manager",
        default_value = "cluster-version-operator"
    )]
    adopt_from_managers: Vec<String>,
    /// Address of the /healthz, /readyz and /metrics endpoints.
    #[arg(long, default_value = "0.0.0.0:9440")]
    http_addr: SocketAddr,
    #[arg(long, value_enum, default_value = "text")]
    log_format: LogFormat,
    /// Name of this replica (for Events and as the leader election identity); usually the pod name.
    #[arg(long, env = "POD_NAME")]
    instance: Option<String>,
    /// Take part in leader election on Lease `capi-installer-leader`: only the holder reconciles.
    /// `--leader-elect=false` only where a single replica runs (tests, debugging).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    leader_elect: bool,
    /// Namespace of the Lease; default: --namespace.
    #[arg(long)]
    leader_elect_namespace: Option<String>,
}

#[tokio::main]
async fn main() -> Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Run(args) => run(args).await,
        Command::Render(args) => render_cmd::main(args),
        Command::Status(args) => status_cmd::main(args).await,
    }
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,kube=warn"));
    // Colours only on a terminal: logs in files (and log collectors) must stay greppable.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

pub(crate) fn read_map(path: &Path, what: &str) -> Result<BTreeMap<String, String>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading {what} {}", path.display()))?;
    serde_saphyr::from_str(&text).with_context(|| {
        format!(
            "{what} {}: expected a map of strings to strings",
            path.display()
        )
    })
}

/// A client whose every request carries the installer's user agent.
pub(crate) async fn client(kubeconfig: Option<&Path>) -> Result<kube::Client> {
    let mut config = match kubeconfig {
        Some(path) => {
            let kc = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kc, &Default::default()).await?
        }
        None => kube::Config::infer()
            .await
            .context("no kubeconfig given and none could be inferred")?,
    };
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_str(&user_agent()).expect("user agent is a valid header"),
    ));
    Ok(kube::Client::try_from(config)?)
}

async fn run(args: RunArgs) -> Result<()> {
    init_logging(args.log_format);
    let images = read_map(&args.images_json, "images file")?;
    let substitutions = match &args.substitutions {
        Some(path) => read_map(path, "substitutions file")?,
        None => BTreeMap::new(),
    };
    let config = InstallerConfig {
        namespace: args.namespace,
        images,
        substitutions,
        release_version: args.release_version,
        deployment_timeout: Duration::from_secs(args.deployment_timeout),
        crd_timeout: Duration::from_secs(args.crd_timeout),
        resync: Duration::from_secs(args.resync),
        adoptable_managers: args.adopt_from_managers,
        instance: args.instance,
    };
    let client = client(args.kubeconfig.as_deref()).await?;
    let mut registry = Registry::default();
    let metrics = Arc::new(Metrics::register(&mut registry));
    let registry = Arc::new(registry);
    let ready = Arc::new(AtomicBool::new(false));
    http::serve(args.http_addr, registry, ready.clone()).await?;

    let (stop, stopped) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown_signal().await;
        let _ = stop.send(true);
    });
    let shutdown = |mut stopped: tokio::sync::watch::Receiver<bool>| async move {
        let _ = stopped.wait_for(|s| *s).await;
    };

    tracing::info!(version = env!("CARGO_PKG_VERSION"), namespace = %config.namespace, "starting installer");
    if !args.leader_elect {
        tracing::info!("leader election disabled: reconciling as the only replica");
        let installer = Installer::new(client, config, metrics);
        ready.store(true, Ordering::Relaxed);
        installer.run(shutdown(stopped)).await;
        return Ok(());
    }

    let lease_namespace = args
        .leader_elect_namespace
        .unwrap_or_else(|| config.namespace.clone());
    let identity = leader::default_identity(config.instance.as_deref());
    let mut elector = leader::Elector::new(
        client.clone(),
        &lease_namespace,
        &identity,
        leader::Timing::default(),
    );
    tracing::info!(lease = %format!("{lease_namespace}/{}", leader::LEASE_NAME), %identity, "campaigning for leadership");
    tokio::select! {
        _ = elector.acquire(|reached| ready.store(reached, Ordering::Relaxed)) => {}
        _ = shutdown(stopped.clone()) => {
            tracing::info!("stopped while standing by");
            return Ok(());
        }
    }

    // Constructed only now: a standby keeps no watches open.
    let installer = Installer::new(client, config, metrics);
    ready.store(true, Ordering::Relaxed);
    let lost = tokio::select! {
        _ = installer.run(shutdown(stopped)) => None,
        lost = elector.hold() => Some(lost),
    };
    match lost {
        None => {
            ready.store(false, Ordering::Relaxed);
            if let Err(e) = elector.release().await {
                tracing::warn!(error = %e, "cannot release the lease; a standby takes over once it expires");
            }
            Ok(())
        }
        Some(lost) => {
            // A replica that may no longer be the leader must not write another object: exit at once,
            // mid-reconcile if need be (every step is idempotent), and let the Deployment restart it as a
            // standby.
            tracing::error!(error = %lost, "lost leadership; exiting");
            std::process::exit(1);
        }
    }
}

async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("SIGTERM handler installs");
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM: shutting down"),
        _ = tokio::signal::ctrl_c() => tracing::info!("interrupted: shutting down"),
    }
}

mod http {
    pub use axum::http::{HeaderValue, header};

    use std::net::SocketAddr;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use anyhow::{Context, Result};
    use axum::Router;
    use axum::routing::get;
    use prometheus_client::registry::Registry;

    /// Serves /healthz, /readyz and /metrics in the background.
    ///
    /// /healthz (liveness) answers as long as the process serves requests. /readyz answers 200 once this
    /// replica either runs the installer loop (leader) or stands by having reached the API server
    /// (standby): a standby counts as ready so that a rolling update of the Deployment can proceed; 503
    /// while starting, when a standby cannot reach the API server, and while shutting down.
    pub async fn serve(
        addr: SocketAddr,
        registry: Arc<Registry>,
        ready: Arc<AtomicBool>,
    ) -> Result<()> {
        let app = Router::new()
            .route("/healthz", get(|| async { "ok" }))
            .route(
                "/readyz",
                get(move || {
                    let ready = ready.load(Ordering::Relaxed);
                    async move {
                        if ready {
                            (axum::http::StatusCode::OK, "ok")
                        } else {
                            (axum::http::StatusCode::SERVICE_UNAVAILABLE, "not ready")
                        }
                    }
                }),
            )
            .route(
                "/metrics",
                get(move || {
                    let registry = registry.clone();
                    async move {
                        let mut body = String::new();
                        prometheus_client::encoding::text::encode(&mut body, &registry)
                            .map(|_| {
                                (
                                    [(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")],
                                    body,
                                )
                            })
                            .map_err(|_| axum::http::StatusCode::INTERNAL_SERVER_ERROR)
                    }
                }),
            );
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("binding {addr}"))?;
        tracing::info!(addr = %listener.local_addr()?, "serving /healthz, /readyz and /metrics");
        tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::error!(error = %e, "HTTP server stopped");
            }
        });
        Ok(())
    }
}
