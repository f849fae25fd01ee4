//! `capi-installer run`: the installer controller, leader-elected, with its health and metrics
//! endpoints; before its loop starts, the records an earlier release kept among the providers' are
//! carried over.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use capi_installer_controller::config::ProfilesConfig;
use capi_installer_controller::policy::LEADER_LEASE;
use capi_installer_controller::records::{self, Mover};
use capi_installer_controller::source::profile::validate_profile_name;
use capi_installer_controller::{Installer, InstallerConfig, Metrics, user_agent};
use capi_runtime::args::{HttpArgs, KubeArgs, LeaderElectionArgs, LogArgs};
use capi_runtime::parse_duration_arg;
use prometheus_client::registry::Registry;

use crate::args::{adopt::AdoptArgs, namespace::NamespaceArgs, policy::PolicyArgs};
use crate::inputs;

#[derive(clap::Args)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    kube: KubeArgs,
    #[command(flatten)]
    namespaces: NamespaceArgs,
    /// JSON object of release image references: key → image. Default: ConfigMap
    /// capi-installer-images in --installer-namespace, read at start (its every value an image).
    #[arg(long, value_name = "PATH")]
    images_json: Option<PathBuf>,
    /// YAML or JSON map of variables for `${VAR}` substitution in the components. The process
    /// environment is never used.
    #[arg(long, value_name = "PATH")]
    substitutions: Option<PathBuf>,
    /// Reported as versions[operator] on the ClusterOperator.
    #[arg(long, env = "RELEASE_VERSION", value_name = "VERSION")]
    release_version: Option<String>,
    /// How long a Deployment may take to become Available before the provider counts as failing.
    #[arg(long, default_value = "5m", value_parser = parse_duration_arg, value_name = "DURATION")]
    deployment_timeout: Duration,
    /// How long a CRD may take to become Established before the provider counts as failing.
    #[arg(long, default_value = "1m", value_parser = parse_duration_arg, value_name = "DURATION")]
    crd_timeout: Duration,
    /// Reconcile this often even when no event arrives (a safety net).
    #[arg(long, default_value = "10m", value_parser = parse_duration_arg, value_name = "DURATION")]
    resync: Duration,
    /// Also install image-based profiles: one folder per provider image, each holding
    /// `capi-operator-manifests/<profile>/{metadata.yaml,manifests.yaml}`.
    #[arg(long, value_name = "DIR")]
    profiles_dir: Option<PathBuf>,
    /// Only this profile of each image under --profiles-dir (default: every profile of every image).
    #[arg(long, value_name = "NAME", requires = "profiles_dir")]
    profile: Option<String>,
    /// Only the image folders under --profiles-dir that are the volumes of the release's images; the
    /// others are images kept mounted for earlier revisions (set in the Deployment `deployer` applies).
    #[arg(long, requires = "profiles_dir")]
    release_images_only: bool,
    /// Write each provider's objects as its own identity: ServiceAccount
    /// `capi-provider-<cluster.x-k8s.io/provider>` of --installer-namespace, impersonated, whose RBAC
    /// (the release's `0000_30_capi-installer_03_identities.yaml`) bounds what the API server lets that
    /// provider write and grant. `false`: every write is the installer's own (a cluster without that
    /// RBAC; the bundle policy alone bounds each provider).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    provider_identities: bool,
    #[command(flatten)]
    adopt: AdoptArgs,
    #[command(flatten)]
    policy: PolicyArgs,
    #[command(flatten)]
    leader: LeaderElectionArgs,
    #[command(flatten)]
    http: HttpArgs,
    #[command(flatten)]
    log: LogArgs,
}

pub(crate) async fn main(args: RunArgs) -> Result<()> {
    // First: a SIGTERM that comes before the handler is lost (the process is its container's PID 1).
    let shutdown = capi_runtime::Shutdown::on_signal();
    capi_runtime::process::init_logging(args.log.log_format);
    let images = args
        .images_json
        .as_deref()
        .map(inputs::read_images)
        .transpose()?;
    let substitutions = match &args.substitutions {
        Some(path) => inputs::read_map(path, "substitutions file")?,
        None => BTreeMap::new(),
    };
    let profiles = match &args.profiles_dir {
        Some(dir) => {
            if let Some(profile) = &args.profile {
                validate_profile_name(profile).map_err(anyhow::Error::msg)?;
            }
            anyhow::ensure!(
                dir.is_dir(),
                "--profiles-dir {}: not a folder",
                dir.display()
            );
            Some(ProfilesConfig {
                dir: dir.clone(),
                profile: args.profile.clone(),
                release_images_only: args.release_images_only,
            })
        }
        None => None,
    };
    let namespaces = args.namespaces;
    let mut config = InstallerConfig {
        namespace: namespaces.namespace.clone(),
        installer_namespace: namespaces.installer.installer_namespace.clone(),
        images: Default::default(),
        substitutions,
        release_version: args.release_version,
        deployment_timeout: args.deployment_timeout,
        crd_timeout: args.crd_timeout,
        resync: args.resync,
        retired_managers: args.adopt.retired_managers(),
        adoptable_managers: args.adopt.adopt_from_managers,
        policy: args.policy.config(&namespaces.namespace)?,
        instance: args.leader.instance.clone(),
        profiles,
        identities: None,
    };
    let kube_config = capi_runtime::process::config(&args.kube, &user_agent())
        .await?
        .config;
    let client = kube::Client::try_from(kube_config.clone())?;
    config.identities = args
        .provider_identities
        .then(|| capi_apply::Identities::new(kube_config.clone()));
    // Before anything is written: a release whose images cannot be read installs nothing.
    config.images = match images {
        Some(images) => images,
        None => {
            capi_installer_controller::source::images::read(&client, &config.installer_namespace)
                .await?
        }
    };
    let mut registry = Registry::default();
    let metrics = Arc::new(Metrics::register(&mut registry));
    tracing::info!(version = env!("CARGO_PKG_VERSION"), namespace = %config.namespace,
        installer_namespace = %config.installer_namespace, "starting installer");
    let mover = Mover {
        identity: args.leader.identity(),
        timing: args.leader.timing(),
    };
    let runtime = capi_runtime::Runtime {
        config: kube_config,
        namespace: config.installer_namespace.clone(),
        lease_name: LEADER_LEASE.into(),
        leader: args.leader,
        http: args.http,
        registry: Arc::new(registry),
        process: metrics.process.clone(),
        shutdown,
    };
    capi_runtime::run(runtime, |shutdown| async move {
        // Before a single watch starts: what an earlier release kept among the providers'.
        tokio::select! {
            _ = records::carry_over_until_done(&client, &config, &mover) => {}
            _ = shutdown.clone().requested() => return Ok(()),
        }
        Installer::new(client, config, metrics)
            .run(shutdown.requested())
            .await;
        Ok::<(), std::convert::Infallible>(())
    })
    .await?;
    Ok(())
}
