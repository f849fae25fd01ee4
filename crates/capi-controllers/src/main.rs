//! `capi-controllers`: the Cluster API controllers pod (InfraCluster, core Cluster, kubeconfig and
//! user-data sync, crate `capi-cluster-controllers`) on the process runtime every binary of the
//! project shares (`capi-runtime`: leader election, /healthz, /readyz, /metrics, logging, signals),
//! and, on every replica, the admission webhooks of the CRD compatibility requirements
//! (`capi-admission`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Result;
use capi_cluster_controllers::kubeconfig::Settings;
use capi_cluster_controllers::{Config, Controllers, Metrics, names, user_agent};
use capi_runtime::args::{HttpArgs, KubeArgs, LeaderElectionArgs, LogArgs};
use capi_runtime::report::{exit, finish};
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use prometheus_client::registry::Registry;

#[derive(Parser)]
#[command(
    name = "capi-controllers",
    version,
    about = "Makes the OpenShift cluster its own Cluster API workload cluster: InfraCluster, Cluster, kubeconfig and user data"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the controllers against a cluster.
    Run(Box<RunArgs>),
}

#[derive(clap::Args)]
struct RunArgs {
    #[command(flatten)]
    kube: KubeArgs,
    /// Namespace of the Cluster API objects the controllers keep (InfraCluster, Cluster, the kubeconfig
    /// and user-data Secrets, the kubeconfig's ServiceAccount) and of the leader Lease.
    #[arg(short, long, default_value = names::CAPI_NAMESPACE, value_name = "NS")]
    namespace: String,
    #[command(flatten)]
    leader: LeaderElectionArgs,
    #[command(flatten)]
    http: HttpArgs,
    /// Address of the admission webhooks of the CRD compatibility requirements (HTTPS), served by
    /// every replica; none without it (the shipped Deployment passes 0.0.0.0:9443, behind Service
    /// capi-controllers-webhook, which is where the API server calls them).
    #[arg(long, value_name = "ADDR")]
    webhook_addr: Option<SocketAddr>,
    /// PEM certificate of the webhooks, e.g. the service-ca serving certificate `tls.crt` (read again
    /// when it changes). Default: a self-signed certificate, which the API server does not trust.
    #[arg(long, value_name = "PATH", requires = "webhook_key_file")]
    webhook_cert_file: Option<PathBuf>,
    /// PEM private key of --webhook-cert-file (`tls.key`).
    #[arg(long, value_name = "PATH", requires = "webhook_cert_file")]
    webhook_key_file: Option<PathBuf>,
    #[command(flatten)]
    log: LogArgs,
}

/// The controllers pod's health and metrics addresses: not the installer's (9440, 8443), so that both
/// run on one host (a developer's machine, host networking) without flags.
const HTTP_ADDR: &str = "0.0.0.0:9441";
const METRICS_ADDR: &str = "0.0.0.0:8444";

#[tokio::main]
async fn main() -> ExitCode {
    let command = HttpArgs::with_defaults(Cli::command(), "run", HTTP_ADDR, METRICS_ADDR);
    let cli = Cli::from_arg_matches_mut(&mut command.get_matches()).unwrap_or_else(|e| e.exit());
    match cli.command {
        Command::Run(args) => finish(run(*args).await.map(|()| ExitCode::SUCCESS), exit::ERROR),
    }
}

async fn run(args: RunArgs) -> Result<()> {
    // First: a SIGTERM that comes before the handler is lost (the process is its container's PID 1).
    let shutdown = capi_runtime::Shutdown::on_signal();
    capi_runtime::process::init_logging(args.log.log_format);
    let loaded = capi_runtime::process::config(&args.kube, &user_agent()).await?;
    // The kubeconfig for Cluster API points where this pod's own client points, with the same CA.
    let settings = Settings::from_client_config(&loaded.config).map_err(|e| {
        anyhow::anyhow!(
            "{}: {e}; the kubeconfig this pod writes for Cluster API needs the CA that signed the API server's certificate: add certificate-authority-data (or certificate-authority: FILE) to that cluster, or run in the cluster, where the ServiceAccount's CA is used",
            loaded.source
        )
    })?;
    let config = loaded.config;
    let client = kube::Client::try_from(config.clone())?;
    let mut controllers = Config::new(settings);
    controllers.namespace = args.namespace.clone();
    let mut registry = Registry::default();
    let metrics = Arc::new(Metrics::register(&mut registry));
    tracing::info!(version = env!("CARGO_PKG_VERSION"), namespace = %args.namespace, "starting controllers");
    // Every replica answers admission, the leader or not: the API server calls whichever the Service
    // picks.
    let _requirements_watch = match args.webhook_addr {
        Some(addr) => {
            let (requirements, watch) = capi_admission::Requirements::watch(client.clone());
            let certificate = args
                .webhook_cert_file
                .as_deref()
                .zip(args.webhook_key_file.as_deref());
            capi_runtime::serve_tls(
                addr,
                certificate,
                capi_admission::router(requirements),
                "the CompatibilityRequirements' admission webhooks (HTTPS)",
            )
            .await?;
            Some(watch)
        }
        None => None,
    };
    let runtime = capi_runtime::Runtime {
        config,
        namespace: args.namespace,
        lease_name: names::LEASE.into(),
        leader: args.leader,
        http: args.http,
        registry: Arc::new(registry),
        process: metrics.process.clone(),
        shutdown,
    };
    capi_runtime::run(runtime, |shutdown| async move {
        // Built only now: a standby keeps no watches open.
        Controllers::new(client, controllers, metrics)
            .run(shutdown.requested())
            .await;
        Ok::<(), std::convert::Infallible>(())
    })
    .await?;
    Ok(())
}
