//! `ClusterOperator/cluster-api`, shared by several writers: the installer (its conditions,
//! `versions`, `relatedObjects`) and each controller of the controllers pod (its two conditions).
//! `status.conditions` is a list-map keyed by `type`, so with server-side apply each field manager
//! owns exactly the entries it sends.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

use crate::resources::{CLUSTER_OPERATOR, CLUSTER_OPERATOR_NAME, api_resource, api_version};

/// The ClusterOperators of the cluster (cluster-scoped).
pub fn api(client: &Client) -> Api<DynamicObject> {
    Api::all_with(client.clone(), &api_resource(&CLUSTER_OPERATOR))
}

/// `ClusterOperator/cluster-api` with only its identity, to which a writer adds what it applies.
pub fn manifest() -> Value {
    json!({
        "apiVersion": api_version(&CLUSTER_OPERATOR),
        "kind": CLUSTER_OPERATOR.kind,
        "metadata": {"name": CLUSTER_OPERATOR_NAME},
    })
}

/// The body of a status apply: [`manifest`] with `status`.
pub fn with_status(status: Value) -> Value {
    let mut body = manifest();
    body["status"] = status;
    body
}

/// Applies `body` (from [`with_status`]) to the status subresource as `field_manager`, forced: the
/// fields sent are that manager's alone; if someone else took them over, they come back. Returns the
/// object as written.
pub async fn apply_status(
    client: &Client,
    field_manager: &str,
    body: &Value,
) -> Result<DynamicObject, kube::Error> {
    let params = PatchParams::apply(field_manager).force();
    api(client)
        .patch_status(CLUSTER_OPERATOR_NAME, &params, &Patch::Apply(body))
        .await
}

/// The ClusterOperator as the object Events are about.
pub fn reference() -> ObjectReference {
    ObjectReference {
        api_version: Some(api_version(&CLUSTER_OPERATOR)),
        kind: Some(CLUSTER_OPERATOR.kind.into()),
        name: Some(CLUSTER_OPERATOR_NAME.into()),
        ..Default::default()
    }
}
