//! The Cluster API controllers of the `capi-controllers` pod. They make the OpenShift cluster its own
//! Cluster API workload cluster, so that the providers the installer installs can manage its
//! machines:
//!
//! | controller | keeps | from |
//! |---|---|---|
//! | [`infracluster`] | `<InfraCluster kind>/<infrastructureName>`, externally managed, `status.ready` | Infrastructure, control-plane provider spec (ControlPlaneMachineSet or Machines), credential Secrets |
//! | [`corecluster`] | `Cluster/<infrastructureName>`, control plane initialized | Infrastructure, the InfraCluster |
//! | [`kubeconfig`] | Secret `<infrastructureName>-kubeconfig` | the API server this pod uses, TokenRequest |
//! | [`secretsync`] | Secret `worker-user-data` | the Machine API's `worker-user-data` |
//!
//! Each reports `<Controller>Available` / `<Controller>Degraded` on `ClusterOperator/cluster-api`
//! with its own field manager ([`status`]); none writes CRDs or RBAC.
//!
//! # Why reflectors and one loop per controller, not kube-runtime's `Controller`
//! Each controller keeps exactly one object (per platform), derived from cluster singletons
//! (`Infrastructure/cluster`, a named Secret, the control-plane Machines). kube-runtime's `Controller`
//! is built around a primary kind with a queue of its objects; here every watch would map to the same
//! single key, and the primary kind (an InfraCluster kind, a Cluster) may not be served yet when the
//! process starts — its watch would fail until the installer has installed the CRD. The installer's
//! approach fits better: narrow watches feeding caches ([`watch`]), started only once the CRD they
//! need is Established, a wake-up on any change, and a reconcile that reads only the caches — so a
//! reconcile that finds nothing changed sends no request at all ([`runner`]).
//!
//! # One reconcile
//! 1. platform from `Infrastructure/cluster` (unset: wait; unsupported: nothing to do, said so);
//! 2. the CRDs it needs Established (else wait, without error);
//! 3. inputs from the caches (the first list must have completed);
//! 4. derive the desired objects (pure: [`infracluster::spec`], [`corecluster::spec`],
//!    [`kubeconfig::render`], [`secretsync::desired_user_data`]);
//! 5. leave objects that are not ours alone; write ours with server-side apply only where the cached
//!    object lacks a desired field;
//! 6. conclude a [`status::State`], written as two conditions only when they changed.
//!
//! # The public face
//! Public is what the binary (`capi-controllers`) and the tests call: [`Controllers`], [`Config`],
//! [`Metrics`], the names the pod is known by ([`names`]) and what the tests read of the kubeconfig
//! Secret ([`kubeconfig::render`]); the rest is crate-private (`#![warn(unreachable_pub)]` keeps it
//! so).

#![warn(unreachable_pub)]

pub(crate) mod config;
pub(crate) mod context;
pub(crate) mod corecluster;
pub(crate) mod error;
pub(crate) mod infracluster;
pub mod kubeconfig;
pub(crate) mod metrics;
pub mod names;
pub(crate) mod platform;
pub(crate) mod runner;
pub(crate) mod secretsync;
pub(crate) mod status;
pub(crate) mod watch;

use std::future::Future;
use std::sync::Arc;

pub use config::{Config, ControllerKind};
pub use metrics::Metrics;
pub use names::user_agent;

/// The controllers of one process.
pub struct Controllers {
    ctx: Arc<context::Context>,
}

impl Controllers {
    /// Nothing is watched or written until [`Controllers::run`].
    pub fn new(client: kube::Client, config: Config, metrics: Arc<Metrics>) -> Controllers {
        Controllers {
            ctx: Arc::new(context::Context {
                watches: watch::Watches::new(client.clone()),
                client,
                config,
                metrics,
            }),
        }
    }

    /// Runs the configured controllers until `shutdown` resolves; a reconcile in progress is finished
    /// first.
    pub async fn run(self, shutdown: impl Future<Output = ()>) {
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let until = move || {
            let mut stopped = stopped.clone();
            async move {
                let _ = stopped.wait_for(|s| *s).await;
            }
        };
        let mut tasks = Vec::new();
        for kind in &self.ctx.config.controllers {
            let ctx = self.ctx.clone();
            let shutdown = until();
            tasks.push(match kind {
                ControllerKind::InfraCluster => tokio::spawn(runner::run(
                    ctx,
                    infracluster::InfraClusterController,
                    shutdown,
                )),
                ControllerKind::CoreCluster => tokio::spawn(runner::run(
                    ctx,
                    corecluster::CoreClusterController,
                    shutdown,
                )),
                ControllerKind::Kubeconfig => {
                    tokio::spawn(runner::run(ctx, kubeconfig::KubeconfigController, shutdown))
                }
                ControllerKind::SecretSync => {
                    tokio::spawn(runner::run(ctx, secretsync::SecretSyncController, shutdown))
                }
            });
        }
        tracing::info!(controllers = ?self.ctx.config.controllers, "controllers started");
        shutdown.await;
        let _ = stop.send(true);
        for task in tasks {
            let _ = task.await;
        }
    }
}
