//! Admission of other writers against the cluster's CRD compatibility requirements (issue 49): the
//! webhooks the controllers pod serves, on every replica (not the leader alone: the API server calls
//! whichever the Service picks), for the one `ValidatingWebhookConfiguration` the installer keeps
//! ([`capi_compat::registration`]).
//!
//! - [`CRDS_PATH`]: a CRD's create, update or delete judged by every requirement that pins it
//!   ([`capi_compat::crd_write`], the verdict the installer asks of its own writes): refused with every
//!   finding of a `Deny` requirement, admitted with a warning per finding of a `Warn` one.
//! - [`OBJECTS_PATH`]`<requirement>`: an object of the pinned CRD judged against the pinned schema
//!   ([`capi_compat::validate`]), refused or warned as the requirement's `objectSchemaValidation` says;
//!   nothing is pruned.
//!
//! The requirements come from a watch (every replica keeps its own), each read once per
//! `resourceVersion` (the pinned CRD's YAML may be 1.5 MiB). Until the first list has answered, every
//! request is refused: a requirement that exists is never passed over because it is not known yet. A
//! requirement that cannot be read judges nothing (its status says why, and it has no webhook).

#![warn(unreachable_pub)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::Router;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::routing::post;
use capi_compat::{Action, CRDS_PATH, OBJECTS_PATH, Requirement, crd_write, validate};
use capi_openshift::resources::{COMPATIBILITY_REQUIREMENT, api_resource};
use capi_runtime::optional_watch::{OptionalKind, Wake};
use kube::Client;
use kube::api::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};
use kube::runtime::watcher;

/// A review carries the object and, on update, the old one: each at most the API server's 3 MiB
/// request limit.
const BODY_LIMIT: usize = 8 * 1024 * 1024;

/// The cluster's requirements as this replica knows them.
pub struct Requirements {
    kind: OptionalKind,
    /// Each requirement as read, by name.
    read: Mutex<HashMap<String, Read>>,
}

/// A requirement as read at a `resourceVersion`: `None` when it cannot be read (it judges nothing;
/// its status says why).
struct Read {
    resource_version: String,
    requirement: Option<Arc<Requirement>>,
}

impl Requirements {
    /// Starts the watch; the task ends when the returned handle is aborted.
    pub fn watch(client: Client) -> (Arc<Requirements>, tokio::task::JoinHandle<()>) {
        let (kind, task) = OptionalKind::start(
            client,
            &api_resource(&COMPATIBILITY_REQUIREMENT),
            watcher::Config::default(),
            "CompatibilityRequirements",
            Wake::Never,
        );
        let requirements = Requirements {
            kind,
            read: Mutex::default(),
        };
        (Arc::new(requirements), task)
    }

    /// Every requirement that could be read; `None` until the first list has answered.
    fn current(&self) -> Option<Vec<Arc<Requirement>>> {
        let objects = self.kind.objects()?;
        let mut read = self.read.lock().expect("requirements");
        let mut now = HashMap::with_capacity(objects.len());
        for object in objects {
            let name = object.metadata.name.clone().unwrap_or_default();
            let version = object.metadata.resource_version.clone().unwrap_or_default();
            let entry = match read.remove(&name) {
                Some(entry) if entry.resource_version == version => entry,
                _ => {
                    let value = serde_json::to_value(&*object).expect("an object serializes");
                    Read {
                        resource_version: version,
                        requirement: Requirement::read(&value).ok().map(Arc::new),
                    }
                }
            };
            now.insert(name, entry);
        }
        *read = now;
        Some(
            read.values()
                .filter_map(|r| r.requirement.clone())
                .collect(),
        )
    }
}

/// The webhooks' routes, to serve over TLS.
pub fn router(requirements: Arc<Requirements>) -> Router {
    Router::new()
        .route(CRDS_PATH, post(crds))
        .route(&format!("{OBJECTS_PATH}{{requirement}}"), post(objects))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(requirements)
}

type Review = AdmissionReview<DynamicObject>;

async fn crds(
    State(requirements): State<Arc<Requirements>>,
    Json(review): Json<Review>,
) -> Json<Review> {
    Json(answer(review, |request| {
        crd_answer(requirements.current().as_deref(), request)
    }))
}

async fn objects(
    State(requirements): State<Arc<Requirements>>,
    Path(requirement): Path<String>,
    Json(review): Json<Review>,
) -> Json<Review> {
    Json(answer(review, |request| {
        object_answer(requirements.current().as_deref(), &requirement, request)
    }))
}

fn answer(
    review: Review,
    judge: impl FnOnce(&AdmissionRequest<DynamicObject>) -> AdmissionResponse,
) -> Review {
    // kube-core implements `TryInto` for the review, not `TryFrom` for the request.
    let request: Result<AdmissionRequest<DynamicObject>, _> = review.try_into();
    let response = match request {
        Ok(request) => judge(&request),
        Err(e) => AdmissionResponse::invalid(e),
    };
    response.into_review()
}

const NOT_READ: &str = "the cluster's CompatibilityRequirements are not read yet; try again";

/// A CRD write judged by the requirements that pin the CRD; `None`: not known yet.
fn crd_answer(
    requirements: Option<&[Arc<Requirement>]>,
    request: &AdmissionRequest<DynamicObject>,
) -> AdmissionResponse {
    let mut response = AdmissionResponse::from(request);
    let Some(requirements) = requirements else {
        return response.deny(NOT_READ);
    };
    let candidate = match request.operation {
        Operation::Delete => None,
        _ => match &request.object {
            Some(object) => Some(serde_json::to_value(object).expect("an object serializes")),
            None => return response.deny("the request carries no CRD"),
        },
    };
    let verdict = crd_write(
        requirements.iter().map(|r| &**r),
        &request.name,
        candidate.as_ref(),
    );
    if !verdict.warned.is_empty() {
        response.warnings = Some(verdict.warned.iter().map(ToString::to_string).collect());
    }
    if verdict.denied.is_empty() {
        return response;
    }
    let findings: Vec<String> = verdict.denied.iter().map(ToString::to_string).collect();
    tracing::info!(crd = %request.name, user = ?request.user_info.username, findings = findings.len(), "refused a CRD write");
    response.deny(format!(
        "CustomResourceDefinition {} breaks what CompatibilityRequirements pin: {}",
        request.name,
        findings.join("; ")
    ))
}

/// An object judged against the pinned schema of the requirement named in the path; `None`: not
/// known yet.
fn object_answer(
    requirements: Option<&[Arc<Requirement>]>,
    name: &str,
    request: &AdmissionRequest<DynamicObject>,
) -> AdmissionResponse {
    let mut response = AdmissionResponse::from(request);
    let Some(requirements) = requirements else {
        return response.deny(NOT_READ);
    };
    // Gone or changed since the registration was written: nothing to judge by.
    let Some(requirement) = requirements.iter().find(|r| r.name == name) else {
        return response;
    };
    let (Some(validation), Some(object)) = (&requirement.objects, &request.object) else {
        return response;
    };
    let object = serde_json::to_value(object).expect("an object serializes");
    let violations = validate(requirement, &object);
    if violations.is_empty() {
        return response;
    }
    let said: Vec<String> = violations.iter().map(ToString::to_string).collect();
    match validation.action {
        Action::Warn => {
            response.warnings = Some(
                said.iter()
                    .map(|v| format!("CompatibilityRequirement {name}: {v}"))
                    .collect(),
            );
            response
        }
        Action::Deny => {
            let at = match &request.namespace {
                Some(ns) => format!("{ns}/{}", request.name),
                None => request.name.clone(),
            };
            response.deny(format!(
                "{} {at} breaks the schema CompatibilityRequirement {name} pins: {}",
                request.kind.kind,
                said.join("; ")
            ))
        }
    }
}

#[cfg(test)]
mod tests;
