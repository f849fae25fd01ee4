//! One provider's pure steps before any write: render its payload for this cluster, then validate and
//! order the whole set into a plan. A provider that fails here applies nothing.
//!
//! `prepare` = [`render`] → (checks on the rendered objects go here: a bundle policy is pure and runs
//! before planning) → [`capi_apply::plan`]. The same steps serve `capi-installer render` offline, and
//! can serve a `diff` command (prepare, then compare with the live objects without writing).

use std::collections::BTreeMap;

use capi_apply::{KindResolver, Plan, PlanInput};
use capi_manifests::customize::LABEL_CLUSTERCTL_PROVIDER;
use kube::api::DynamicObject;
use serde_json::Value;

use crate::platform;
use crate::policy::{BundleObject, Origin};
use crate::render::{self, Images};
use crate::source::{Payload, Target};

/// What rendering needs besides the payload.
#[derive(Clone, Debug, Default)]
pub struct RenderContext {
    /// The only namespace namespaced objects may live in.
    pub namespace: String,
    pub images: Images,
    pub substitutions: BTreeMap<String, String>,
}

/// Why a provider's payload cannot be turned into a plan. Every message names the source and, where
/// there is one, the document and the object.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("{origin}: components, {source}")]
    Substitution {
        origin: String,
        #[source]
        source: render::SubstitutionError,
    },
    #[error("{0}")]
    Parse(#[source] capi_manifests::Error),
    #[error("{origin} ({object}): {message}")]
    Object {
        origin: String,
        object: String,
        message: String,
    },
    #[error("{0}")]
    Plan(#[source] capi_apply::PlanErrors),
}

impl RenderError {
    /// Whether discovering the API server's kinds again could help: a kind served by a CRD created
    /// since the last discovery.
    pub fn unknown_kind(&self) -> bool {
        matches!(self, RenderError::Plan(errors)
            if errors.0.iter().any(|e| matches!(e, capi_apply::PlanError::UnknownKind { .. })))
    }
}

/// The rendered objects of one provider, with where each came from.
#[derive(Debug)]
pub struct Rendered {
    pub inputs: Vec<PlanInput>,
    /// Where each of `inputs` came from (same order), for the bundle policy.
    pub origins: Vec<Origin>,
    /// Fields removed from the input because another controller owns them (logged).
    pub stripped: Vec<String>,
}

/// A provider's validated plan.
#[derive(Debug)]
pub struct Prepared {
    pub plan: Plan,
    /// Fields removed because another controller owns them (logged).
    pub stripped: Vec<String>,
    /// sha256 of the rendered objects: what identifies this version of the provider for this cluster
    /// (a new payload, image or substitution changes it).
    pub digest: String,
}

/// Substitutes, parses and renders `payload` for `target`.
pub fn render(
    payload: &Payload,
    target: &Target,
    ctx: &RenderContext,
) -> Result<Rendered, RenderError> {
    let components =
        render::substitute(&payload.components, &ctx.substitutions).map_err(|source| {
            RenderError::Substitution {
                origin: payload.origin.clone(),
                source,
            }
        })?;
    let objects = capi_manifests::yaml::parse_objects(
        &format!("{}, components", payload.origin),
        &components,
    )
    .map_err(RenderError::Parse)?;
    let image_key = platform::image_key(&target.source.name);
    let mut rendered = Rendered {
        inputs: Vec::with_capacity(objects.len()),
        origins: Vec::with_capacity(objects.len()),
        stripped: Vec::new(),
    };
    for object in objects {
        let structured = Origin {
            source: payload.origin.clone(),
            document: object.location.index,
        };
        let origin = structured.to_string();
        let fail = |message: String| RenderError::Object {
            origin: origin.clone(),
            object: object.id.to_string(),
            message,
        };
        if let Some(ns) = object.id.namespace.as_deref()
            && ns != ctx.namespace
        {
            return Err(fail(format!(
                "metadata.namespace is {ns:?}; provider objects must be in {:?} or cluster-scoped",
                ctx.namespace
            )));
        }
        let mut value = object.value;
        for path in render::strip_fields_owned_elsewhere(&mut value) {
            rendered.stripped.push(format!("{} {path}", object.id));
        }
        render::resolve_images(&mut value, image_key.as_deref(), &ctx.images)
            .map_err(|e| fail(e.to_string()))?;
        label(&mut value, &target.clusterctl_label);
        let dynamic: DynamicObject = serde_json::from_value(value)
            .map_err(|e| fail(format!("not a Kubernetes object: {e}")))?;
        rendered.inputs.push(PlanInput::new(dynamic, origin));
        rendered.origins.push(structured);
    }
    Ok(rendered)
}

impl Rendered {
    /// The rendered objects as the bundle policy sees them.
    pub fn bundle(&self) -> Vec<BundleObject<'_>> {
        self.inputs
            .iter()
            .zip(&self.origins)
            .map(|(input, origin)| BundleObject {
                origin,
                object: &input.object,
            })
            .collect()
    }
}

/// Adds the label that lets the installer's watches find every object of a provider (ref §2.7 — the
/// reference's generated policies lacked it, so their drift went unnoticed).
fn label(object: &mut Value, clusterctl_label: &str) {
    let labels = object
        .pointer_mut("/metadata")
        .and_then(Value::as_object_mut)
        .map(|m| {
            m.entry("labels")
                .or_insert_with(|| Value::Object(Default::default()))
        });
    if let Some(Value::Object(labels)) = labels {
        labels
            .entry(LABEL_CLUSTERCTL_PROVIDER)
            .or_insert_with(|| Value::String(clusterctl_label.to_string()));
    }
}

/// Renders and plans in one step: the whole provider is validated before anything is applied.
pub fn prepare(
    payload: &Payload,
    target: &Target,
    ctx: &RenderContext,
    resolver: &KindResolver,
) -> Result<Prepared, RenderError> {
    let rendered = render(payload, target, ctx)?;
    let digest = digest(&rendered.inputs);
    let plan = capi_apply::plan(rendered.inputs, resolver).map_err(RenderError::Plan)?;
    Ok(Prepared {
        plan,
        stripped: rendered.stripped,
        digest,
    })
}

fn digest(inputs: &[PlanInput]) -> String {
    let objects: Vec<Value> = inputs
        .iter()
        .map(|i| serde_json::to_value(&i.object).expect("a DynamicObject serializes"))
        .collect();
    capi_apply::drift::hash_value(&Value::Array(objects))
}
