//! Writes the `status` of `ClusterAPI/cluster`: this pass's providers as a revision, in the reference's
//! fields ([`capi_status::cluster_api`]: the next status, pure), with server-side apply on the status
//! subresource, only when it differs; beside the other reports of a pass.

use std::collections::BTreeMap;

use capi_status::cluster_api::{self, Recording};
use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams};

use crate::desired::Wanted;
use crate::names::FIELD_MANAGER;
use crate::outcome::{Outcome, ProviderState};
use crate::source::{ImageComponent, SourceId};
use crate::unmanaged;

/// This pass's providers as a revision in `ClusterAPI/cluster` status, in the reference's fields
/// ([`cluster_api`]), written (server-side apply on the status subresource) only when it
/// changes; nothing without the object, or while a provider did not get as far as a plan (what it
/// wants is not known), a required one without a source included: a pod whose image volumes are
/// not yet the release's (the deployer is still rolling it) would otherwise record, and make
/// current, a revision without that provider. How it went is the reference's revision
/// controller's conditions.
pub(crate) async fn record(
    client: &Client,
    object: Option<&DynamicObject>,
    missing: &[Wanted],
    outcomes: &[&Outcome],
    substitutions: &BTreeMap<String, String>,
    release_version: Option<&str>,
    component_image: impl Fn(&SourceId) -> Option<ImageComponent>,
) -> Recording {
    let Some(object) = object else {
        return Recording::NoObject;
    };
    let unplanned: Vec<(String, Option<String>)> = missing
        .iter()
        .map(|w| (w.describe(), None))
        .chain(
            outcomes
                .iter()
                .filter(|o| o.content_id.is_none())
                .map(|o| (o.target.source.describe(), o.failure_message())),
        )
        .collect();
    if !unplanned.is_empty() {
        return Recording::Unplanned(unplanned);
    }
    let components: Vec<cluster_api::Component> = outcomes
        .iter()
        .filter_map(|o| {
            Some(cluster_api::Component {
                name: o.target.source.name.clone(),
                content_id: o.content_id.clone()?,
                image: component_image(&o.target.source.id),
            })
        })
        .collect();
    let complete = outcomes
        .iter()
        .all(|o| matches!(o.state, ProviderState::Installed));
    let desired = cluster_api::Desired {
        components,
        substitutions: substitutions.clone(),
    };
    let previous = object.data.get("status").cloned().unwrap_or_default();
    let release = release_version.unwrap_or(cluster_api::UNKNOWN_RELEASE);
    let generation = object.metadata.generation.unwrap_or(1);
    let status = match cluster_api::next_status(&previous, release, &desired, complete, generation)
    {
        Ok(status) => status,
        Err(e) => {
            tracing::warn!(error = %e, "cannot record the revision in ClusterAPI cluster");
            return Recording::Refused(e);
        }
    };
    if status == previous {
        return Recording::Recorded;
    }
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &unmanaged::cluster_api_resource());
    let patch = serde_json::json!({
        "apiVersion": "operator.openshift.io/v1alpha1",
        "kind": "ClusterAPI",
        "metadata": {"name": "cluster"},
        "status": status,
    });
    let params = PatchParams::apply(FIELD_MANAGER).force();
    if let Err(e) = api
        .patch_status("cluster", &params, &Patch::Apply(&patch))
        .await
    {
        tracing::warn!(error = %e, "cannot write ClusterAPI cluster status");
        return Recording::WriteFailed(e.to_string());
    }
    Recording::Recorded
}
