//! `control-plane up|down|bin-dir`: a real control plane for the demo and for manual work.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use control_plane::{ControlPlane, ControlPlaneOptions, OpenShiftCrds};

#[derive(Parser)]
#[command(about = "Dev-only: a real etcd + kube-apiserver (+ controller-manager, scheduler, KWOK)")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start the control plane in DIR and return, leaving the processes running (pids in DIR/pids,
    /// logs in DIR/logs).
    Up {
        #[arg(long)]
        dir: PathBuf,
        /// Also run kube-controller-manager, kube-scheduler and KWOK with one fake node.
        #[arg(long)]
        with_workloads: bool,
        /// Folder of OpenShift CRDs to load (default: ../shared/fixtures/openshift-crds).
        #[arg(long, conflicts_with = "skip_openshift_crds")]
        openshift_crds: Option<PathBuf>,
        #[arg(long)]
        skip_openshift_crds: bool,
    },
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
        Command::Up {
            dir,
            with_workloads,
            openshift_crds,
            skip_openshift_crds,
        } => {
            let openshift_crds = match (openshift_crds, skip_openshift_crds) {
                (_, true) => OpenShiftCrds::Skip,
                (Some(dir), false) => OpenShiftCrds::From(dir),
                (None, false) => OpenShiftCrds::Default,
            };
            let kubeconfig = ControlPlane::start_background(ControlPlaneOptions {
                dir: Some(dir.clone()),
                with_workloads,
                openshift_crds,
            })
            .await
            .with_context(|| format!("start the control plane in {}", dir.display()))?;
            println!("kubeconfig: {}", kubeconfig.display());
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
