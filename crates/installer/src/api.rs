//! The installer's own API, `InfrastructureProvider`: how an object is read is the pure planning
//! crate's ([`capi_bundle::api`], re-exported here); this module writes its finalizer.

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::{Client, ResourceExt};
use serde_json::json;

pub use capi_bundle::api::*;

/// Adds or removes [`FINALIZER`] with a merge patch carrying the resourceVersion read (a concurrent
/// change makes it fail, to be retried on the next reconcile), only when that changes the object. A
/// deleted object is not an error.
pub(crate) async fn set_finalizer(
    client: &Client,
    obj: &DynamicObject,
    present: bool,
) -> Result<(), kube::Error> {
    let mut finalizers: Vec<String> = obj.finalizers().to_vec();
    let has = finalizers.iter().any(|f| f == FINALIZER);
    if has == present {
        return Ok(());
    }
    if present {
        finalizers.push(FINALIZER.to_string());
    } else {
        finalizers.retain(|f| f != FINALIZER);
    }
    let patch = json!({"metadata": {
        "finalizers": finalizers,
        "resourceVersion": obj.resource_version(),
    }});
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource());
    match api
        .patch(
            &obj.name_any(),
            &PatchParams {
                field_manager: Some(crate::names::FIELD_MANAGER.into()),
                ..Default::default()
            },
            &Patch::Merge(&patch),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.is_not_found() => Ok(()),
        Err(e) => Err(e),
    }
}
