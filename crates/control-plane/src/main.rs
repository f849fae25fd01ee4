//! `control-plane up|down|bin-dir`: a real control plane for the demo and for manual work.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use control_plane::{ControlPlane, ControlPlaneOptions, NodeOptions, OpenShiftCrds};
use tokio::signal::unix::{SignalKind, signal};

#[derive(Parser)]
#[command(
    about = "Dev-only: a real etcd + kube-apiserver (+ controller-manager, scheduler, and KWOK or a real node)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args)]
struct StartArgs {
    #[arg(long)]
    dir: PathBuf,
    /// Also run kube-controller-manager, kube-scheduler and KWOK with one fake node.
    #[arg(long, conflicts_with = "with_node")]
    with_workloads: bool,
    /// Run a real node instead (controller-manager, scheduler, containerd, kubelet, kube-proxy, in
    /// namespaces of their own; `run` only), serving the images of --images.
    #[arg(long)]
    with_node: bool,
    /// The OCI image layout of hack/images.sh (default: $CARGO_TARGET_DIR/images or target/images).
    #[arg(long, requires = "with_node")]
    images: Option<PathBuf>,
    /// Folder of OpenShift CRDs to load (default: the pinned github.com/openshift/api module's, from
    /// tools/openshift-api/build.sh, and crates/control-plane/openshift-crds).
    #[arg(long, conflicts_with = "skip_openshift_crds")]
    openshift_crds: Option<PathBuf>,
    #[arg(long)]
    skip_openshift_crds: bool,
}

impl StartArgs {
    fn options(self) -> anyhow::Result<ControlPlaneOptions> {
        let node = match (self.with_node, self.images) {
            (false, _) => None,
            (true, Some(images)) => Some(NodeOptions { images }),
            (true, None) => Some(NodeOptions {
                images: control_plane::images_dir()
                    .context("no images for the node: run hack/images.sh or pass --images")?,
            }),
        };
        let openshift_crds = match (self.openshift_crds, self.skip_openshift_crds) {
            (_, true) => OpenShiftCrds::Skip,
            (Some(dir), false) => OpenShiftCrds::From(dir),
            (None, false) => OpenShiftCrds::Default,
        };
        Ok(ControlPlaneOptions {
            dir: Some(self.dir),
            with_workloads: self.with_workloads,
            node,
            openshift_crds,
        })
    }
}

#[derive(Subcommand)]
enum Command {
    /// Start the control plane in DIR and return, leaving the processes running (pids in DIR/pids,
    /// logs in DIR/logs).
    Up(StartArgs),
    /// Start the control plane in DIR and keep it in the foreground until Ctrl-C or SIGTERM; the
    /// processes die with this one, even when it is killed.
    Run(StartArgs),
    /// Stop the control plane of DIR: SIGTERM, SIGKILL after the grace period, and wait until every
    /// process is gone.
    Down {
        #[arg(long)]
        dir: PathBuf,
        #[arg(long, default_value_t = 10)]
        grace_period_seconds: u64,
    },
    /// Print the folder holding the binaries (kubectl included), building them when missing.
    BinDir,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Up(args) => {
            let dir = args.dir.clone();
            let kubeconfig = ControlPlane::start_background(args.options()?)
                .await
                .with_context(|| format!("start the control plane in {}", dir.display()))?;
            println!("kubeconfig: {}", kubeconfig.display());
        }
        Command::Run(args) => {
            let dir = args.dir.clone();
            let cp = ControlPlane::start(args.options()?)
                .await
                .with_context(|| format!("start the control plane in {}", dir.display()))?;
            println!("kubeconfig: {}", cp.kubeconfig_path().display());
            // Where a script enters the node's namespaces (hack/demo-node.sh runs the emulated EC2
            // there).
            if let Some(pid) = cp.node_pid() {
                println!("node pid: {pid}");
            }
            let mut term = signal(SignalKind::terminate())?;
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            cp.stop();
        }
        Command::Down {
            dir,
            grace_period_seconds,
        } => {
            let stopped =
                control_plane::stop_background(&dir, Duration::from_secs(grace_period_seconds))
                    .with_context(|| format!("stop the control plane in {}", dir.display()))?;
            if stopped.is_empty() {
                println!("nothing running in {}", dir.display());
            } else {
                println!("stopped: {}", stopped.join(", "));
            }
        }
        Command::BinDir => {
            let dir = tokio::task::spawn_blocking(control_plane::bin_dir).await??;
            println!("{}", dir.display());
        }
    }
    Ok(())
}
