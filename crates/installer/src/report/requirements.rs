//! Writes the `status` of each `CompatibilityRequirement` ([`capi_status::requirement`]) from the live
//! CRD it pins, read whole (the watch cache keeps CRDs without their schemas), on the status
//! subresource with the installer's field manager, only when it differs from the live one. A failure
//! is logged and tried again at the next pass: nothing else waits for these statuses.

use std::sync::Arc;

use capi_compat::{Requirement, RequirementError};
use capi_openshift::resources::{COMPATIBILITY_REQUIREMENT, api_resource, api_version};
use capi_status::provider::differs;
use capi_status::requirement::{Observed, status};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::json;

use crate::names::FIELD_MANAGER;

/// Every requirement's status (each as read, [`Requirement::read`]), each written when it changed.
pub(crate) async fn write_all(
    client: &Client,
    requirements: &[(Arc<DynamicObject>, Result<Requirement, RequirementError>)],
) {
    for (object, read) in requirements {
        if let Err(e) = write(client, object, read).await {
            let name = object.metadata.name.as_deref().unwrap_or_default();
            tracing::warn!(requirement = %name, error = %e, "cannot write CompatibilityRequirement status");
        }
    }
}

async fn write(
    client: &Client,
    object: &DynamicObject,
    read: &Result<Requirement, RequirementError>,
) -> Result<(), kube::Error> {
    let name = object.metadata.name.clone().unwrap_or_default();
    let crd = match read {
        Ok(requirement) => Api::<CustomResourceDefinition>::all(client.clone())
            .get_opt(&requirement.crd_name)
            .await?
            .map(|crd| serde_json::to_value(crd).expect("an object serializes")),
        Err(_) => None,
    };
    let observed = match read {
        Ok(requirement) => Observed::Read {
            requirement,
            crd: crd.as_ref(),
        },
        Err(e) => Observed::Invalid(e),
    };
    let current = object.data.get("status");
    let now = capi_openshift::time::now_rfc3339();
    let desired = status(&observed, object.metadata.generation, current, &now);
    if !differs(current, &desired) {
        return Ok(());
    }
    let api: Api<DynamicObject> =
        Api::all_with(client.clone(), &api_resource(&COMPATIBILITY_REQUIREMENT));
    let body = json!({
        "apiVersion": api_version(&COMPATIBILITY_REQUIREMENT),
        "kind": COMPATIBILITY_REQUIREMENT.kind,
        "metadata": {"name": name},
        "status": desired,
    });
    let params = PatchParams::apply(FIELD_MANAGER).force();
    match api.patch_status(&name, &params, &Patch::Apply(&body)).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.is_not_found() => Ok(()),
        Err(e) => Err(e),
    }
}
