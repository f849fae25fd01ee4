//! `capi-installer deployer`: keeps the installer's Deployment, with an image volume per provider
//! image of the release and of the revisions still kept ([`capi_deployer`]).

use std::sync::Arc;

use anyhow::Result;
use capi_deployer::DeployerConfig;
use capi_installer_controller::user_agent;
use capi_runtime::args::{HttpArgs, KubeArgs, LeaderElectionArgs, LogArgs};
use prometheus_client::registry::Registry;

#[derive(clap::Args)]
pub struct DeployerArgs {
    #[command(flatten)]
    kube: KubeArgs,
    #[command(flatten)]
    namespace: crate::args::namespace::InstallerNamespaceArg,
    /// The installer's image, set in the Deployment (the release tooling rewrites it in the
    /// deployer's manifest).
    #[arg(long, value_name = "IMAGE")]
    installer_image: String,
    /// The release, passed on as the installer's RELEASE_VERSION.
    #[arg(long, env = "RELEASE_VERSION", value_name = "VERSION")]
    release_version: Option<String>,
    /// Mount no provider image: for nodes whose container runtime cannot mount image volumes
    /// (containerd before 2.1); the installer then reads transport ConfigMaps only.
    #[arg(long)]
    without_image_volumes: bool,
    /// One more argument of the installer's `capi-installer run` (repeatable), after the template's:
    /// e.g. `--installer-arg=--take-over-reference`. Edits of the installer's Deployment itself are
    /// undone.
    #[arg(long = "installer-arg", value_name = "ARG", allow_hyphen_values = true)]
    installer_args: Vec<String>,
    #[command(flatten)]
    leader: LeaderElectionArgs,
    #[command(flatten)]
    http: HttpArgs,
    #[command(flatten)]
    log: LogArgs,
}

pub async fn main(args: DeployerArgs) -> Result<()> {
    // First: a SIGTERM that comes before the handler is lost (the process is its container's PID 1).
    let shutdown = capi_runtime::Shutdown::on_signal();
    capi_runtime::process::init_logging(args.log.log_format);
    capi_manifests::image::parse(&args.installer_image)
        .map_err(|e| anyhow::anyhow!("--installer-image: {e}"))?;
    let config = DeployerConfig {
        namespace: args.namespace.installer_namespace.clone(),
        installer_image: args.installer_image,
        release_version: args.release_version,
        image_volumes: !args.without_image_volumes,
        installer_args: args.installer_args,
    };
    let kube_config = capi_runtime::process::config(&args.kube, &user_agent())
        .await?
        .config;
    let client = kube::Client::try_from(kube_config.clone())?;
    let mut registry = Registry::default();
    let process = {
        let mut series = capi_runtime::metrics::component(
            &mut registry,
            "capi_installer_deployer",
            env!("CARGO_PKG_VERSION"),
        );
        capi_runtime::metrics::ProcessMetrics::register(&mut series)
    };
    tracing::info!(version = env!("CARGO_PKG_VERSION"), namespace = %config.namespace, "starting deployer");
    let runtime = capi_runtime::Runtime {
        config: kube_config,
        namespace: config.namespace.clone(),
        lease_name: capi_deployer::LEADER_LEASE.into(),
        leader: args.leader,
        http: args.http,
        registry: Arc::new(registry),
        process,
        shutdown,
    };
    capi_runtime::run(runtime, |shutdown| async move {
        capi_deployer::run(client, config, shutdown.requested()).await;
        Ok::<(), std::convert::Infallible>(())
    })
    .await?;
    Ok(())
}
