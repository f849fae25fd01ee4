//! Registers the requirements with admission and writes their status.
//!
//! First the one `ValidatingWebhookConfiguration` that sends the writes each requirement pins to the
//! controllers pod's webhooks ([`capi_compat::registration`]), applied only when the live one (from
//! its watch) lacks what it must say or holds a webhook it must not; then the `status` of each
//! `CompatibilityRequirement` ([`capi_status::requirement`]) from the live CRD it pins, as its own
//! watch has it whole ([`super::pinned_crds`]; read once while that watch has not listed yet), on the
//! status subresource with the installer's field manager, only when it differs from the live one.
//! `Admitted` is `True` once the registration is written. A failure is logged and tried again at the
//! next pass: nothing else waits for these.

use std::sync::Arc;

use capi_apply::drift::is_subset;
use capi_compat::{Endpoint, Requirement, RequirementError, WEBHOOK_CONFIGURATION, registration};
use capi_openshift::resources::{COMPATIBILITY_REQUIREMENT, api_resource, api_version};
use capi_status::provider::differs;
use capi_status::requirement::{Observed, status};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

use super::pinned_crds::{Pinned, PinnedCrds};
use crate::config::InstallerConfig;
use crate::names::{FIELD_MANAGER, WEBHOOK_PORT, WEBHOOK_SERVICE};

/// Registers every requirement that could be read with admission (`live`: the registration as its
/// watch has it), then writes every requirement's status (each as read, [`Requirement::read`]) where
/// it changed.
pub(crate) async fn write_all(
    client: &Client,
    config: &InstallerConfig,
    live: Option<&DynamicObject>,
    pinned: &PinnedCrds,
    requirements: &[(Arc<DynamicObject>, Result<Requirement, RequirementError>)],
) {
    let readable: Vec<&Requirement> = requirements
        .iter()
        .filter_map(|(_, read)| read.as_ref().ok())
        .collect();
    let endpoint = Endpoint {
        namespace: &config.namespace,
        service: WEBHOOK_SERVICE,
        port: WEBHOOK_PORT,
        installer_namespace: &config.installer_namespace,
    };
    // Objects are judged only for a pinned CRD that is the live one ([`registration`]).
    let is_live = |r: &Requirement| match pinned.get(&r.crd_name) {
        Pinned::Known(Some(crd)) => {
            let at = |pointer: &str| crd.data.pointer(pointer).and_then(Value::as_str);
            at("/spec/group") == r.pinned.pointer("/spec/group").and_then(Value::as_str)
                && at("/spec/names/plural")
                    == r.pinned
                        .pointer("/spec/names/plural")
                        .and_then(Value::as_str)
        }
        _ => false,
    };
    let registered = register(client, live, &registration(&readable, is_live, endpoint))
        .await
        .map_err(|e| {
            tracing::warn!(error = %e, "cannot register the CompatibilityRequirements with admission");
            e.to_string()
        });
    let not_live = |r: &Requirement| {
        format!(
            "objectSchemaValidation waits for CustomResourceDefinition {} to exist with the pinned group and plural",
            r.crd_name
        )
    };
    for (object, read) in requirements {
        let waiting = match read {
            Ok(r) if r.objects.is_some() && !is_live(r) => Some(not_live(r)),
            _ => None,
        };
        let registered = match (&registered, &waiting) {
            (Err(e), _) => Err(e.as_str()),
            (Ok(()), Some(why)) => Err(why.as_str()),
            (Ok(()), None) => Ok(()),
        };
        if let Err(e) = write(client, pinned, object, read, registered).await {
            let name = object.metadata.name.as_deref().unwrap_or_default();
            tracing::warn!(requirement = %name, error = %e, "cannot write CompatibilityRequirement status");
        }
    }
}

/// Applies `desired` unless the live registration already says all of it and holds no other webhook
/// (service-ca's `caBundle` and the API server's defaults are the live object's own).
async fn register(
    client: &Client,
    live: Option<&DynamicObject>,
    desired: &Value,
) -> Result<(), kube::Error> {
    let webhooks = |v: &Value| {
        v.get("webhooks")
            .and_then(Value::as_array)
            .map_or(0, Vec::len)
    };
    match live {
        // Nothing to enforce, and nothing registered: a cluster without requirements gets no
        // registration at all.
        None if webhooks(desired) == 0 => return Ok(()),
        None => {}
        Some(live) => {
            let live = serde_json::to_value(live).expect("an object serializes");
            // An object of a list carries no apiVersion and kind: compare what it says.
            let said = json!({"metadata": desired["metadata"], "webhooks": desired["webhooks"]});
            if webhooks(&live) == webhooks(desired) && is_subset(&said, &live) {
                return Ok(());
            }
        }
    }
    let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let params = PatchParams::apply(FIELD_MANAGER).force();
    api.patch(WEBHOOK_CONFIGURATION, &params, &Patch::Apply(desired))
        .await?;
    tracing::info!(
        webhooks = webhooks(desired),
        "registered the CompatibilityRequirements with admission"
    );
    Ok(())
}

async fn write(
    client: &Client,
    pinned: &PinnedCrds,
    object: &DynamicObject,
    read: &Result<Requirement, RequirementError>,
    registered: Result<(), &str>,
) -> Result<(), kube::Error> {
    let name = object.metadata.name.clone().unwrap_or_default();
    let crd = match read {
        Ok(requirement) => match pinned.get(&requirement.crd_name) {
            Pinned::Known(crd) => {
                crd.map(|crd| serde_json::to_value(&*crd).expect("an object serializes"))
            }
            Pinned::Unknown => Api::<CustomResourceDefinition>::all(client.clone())
                .get_opt(&requirement.crd_name)
                .await?
                .map(|crd| serde_json::to_value(crd).expect("an object serializes")),
        },
        Err(_) => None,
    };
    let observed = match read {
        Ok(requirement) => Observed::Read {
            requirement,
            crd: crd.as_ref(),
            registered,
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
