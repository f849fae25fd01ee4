//! Writes the `status` of each `InfrastructureProvider` ([`capi_status::provider`]: its provider's
//! conditions and version, built from the same outcomes as the ClusterOperator's) on the status
//! subresource with the installer's field manager, only when it differs from the live one.

use capi_status::provider::differs;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

use crate::api;
use crate::names::FIELD_MANAGER;

/// Writes `status` on `InfrastructureProvider/name` when it differs from `current` (ignoring
/// timestamps). A missing object (deleted meanwhile) is not an error.
pub(crate) async fn write(
    client: &Client,
    name: &str,
    current: Option<&Value>,
    status: &Value,
) -> Result<bool, kube::Error> {
    if !differs(current, status) {
        return Ok(false);
    }
    let api: Api<kube::api::DynamicObject> = Api::all_with(client.clone(), &api::resource());
    let body = json!({
        "apiVersion": format!("{}/{}", api::GROUP, api::VERSION),
        "kind": api::KIND,
        "metadata": {"name": name},
        "status": status,
    });
    let params = PatchParams::apply(FIELD_MANAGER).force();
    match api.patch_status(name, &params, &Patch::Apply(&body)).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(s)) if s.is_not_found() => Ok(false),
        Err(e) => Err(e),
    }
}
