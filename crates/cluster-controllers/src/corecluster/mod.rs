//! Core Cluster controller: keeps `Cluster/<infrastructureName>` in openshift-cluster-api, referring to
//! the InfraCluster and the internal API endpoint, with `ControlPlaneInitialized=True` (see
//! [`spec`]). A Cluster that is not ours is left alone and reported; one being deleted is left to its
//! deletion.

pub(crate) mod spec;

use std::sync::Arc;

use tokio::sync::Notify;

use crate::config::ControllerKind;
use crate::context::{Context, Exit, Outcome, Synced, Writer, owned_by_label};
use crate::runner::Reconcile;
use crate::status::{State, Wait};
use crate::watch::WatchKey;

pub(crate) const CLUSTERS_CRD: &str = "clusters.cluster.x-k8s.io";

pub(crate) struct CoreClusterController;

impl Reconcile for CoreClusterController {
    const KIND: ControllerKind = ControllerKind::CoreCluster;

    async fn reconcile(&mut self, ctx: &Context, wake: &Arc<Notify>) -> Result<Outcome, Exit> {
        let cluster = ctx.cluster(wake)?;
        let infra = crate::platform::infra_cluster(cluster.platform);
        let served = ctx.require(&[CLUSTERS_CRD.to_string(), infra.crd_name()], wake)?;
        let (cluster_kind, infra_kind) = (&served[0].kind, &served[1].kind);
        let name = &cluster.info.infrastructure_name;
        let ns = cluster.info.namespace.as_str();
        let what = format!("Cluster {ns}/{name}");

        let infra_watch =
            ctx.synced(&WatchKey::object(infra_kind.clone(), Some(ns), name), wake)?;
        if infra_watch.get(name).is_none() {
            return Ok(Outcome::report(State::Waiting {
                wait: Wait::InfraCluster,
                message: format!(
                    "waiting for {} {ns}/{name}, which the Cluster refers to",
                    infra_kind.kind
                ),
            }));
        }
        let live = ctx
            .synced(
                &WatchKey::object(cluster_kind.clone(), Some(ns), name),
                wake,
            )?
            .get(name);
        if let Some(live) = &live
            && live.metadata.deletion_timestamp.is_some()
        {
            return Ok(Outcome::report(State::Done {
                message: format!("{what} is being deleted; left to its deletion"),
            }));
        }

        let desired = spec::desired_cluster(
            &cluster.info,
            infra,
            &infra_kind.api_version(),
            &cluster_kind.version,
        );
        let writer = Writer {
            ctx,
            controller: Self::KIND,
        };
        let live = match writer
            .sync(cluster_kind, &desired, live, owned_by_label)
            .await?
        {
            Synced::Foreign(message) => {
                return Ok(Outcome::report(State::ExternallyManaged { message }));
            }
            Synced::Unchanged(live) | Synced::Written(live) => live,
        };
        let live_value = serde_json::to_value(&*live).unwrap_or_default();
        if let Some(status) = spec::control_plane_initialized(
            &live_value,
            &cluster_kind.version,
            &capi_openshift::time::now_rfc3339(),
        ) {
            writer.apply_status(cluster_kind, &status).await?;
        }
        Ok(Outcome::report(State::Done {
            message: format!(
                "{what} is in place, refers to {} {name}, control plane initialized",
                infra_kind.kind
            ),
        }))
    }
}
