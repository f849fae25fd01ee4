//! One provider's pipeline up to the plan: decode the transport ConfigMap, substitute variables, parse,
//! render, validate. Pure: everything here runs before the first write, so a bad provider applies nothing.

use std::collections::BTreeMap;

use capi_apply::{KindResolver, Plan, PlanInput};
use capi_manifests::TransportConfigMap;
use kube::api::DynamicObject;
use serde_json::Value;

use crate::platform;
use crate::policy::{BundleObject, Origin};
use crate::render::{self, Images};
use crate::sources::Source;

/// The label that lets the installer's watches find every object of a provider (ref §2.7 — the
/// reference's generated policies lacked it, so their drift went unnoticed).
pub const PROVIDER_LABEL: &str = "cluster.x-k8s.io/provider";

/// What rendering needs besides the ConfigMap.
#[derive(Clone, Debug, Default)]
pub struct RenderContext {
    /// The only namespace namespaced objects may live in.
    pub namespace: String,
    pub images: Images,
    pub substitutions: BTreeMap<String, String>,
}

/// Why a provider's ConfigMap cannot be turned into a plan. Every message names the ConfigMap and, where
/// there is one, the document and the object.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("{0}")]
    Decode(#[source] capi_manifests::Error),
    #[error("ConfigMap {configmap}: components, {source}")]
    Substitution {
        configmap: String,
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

/// The rendered objects of one provider, with where each came from.
#[derive(Debug)]
pub struct Rendered {
    pub inputs: Vec<PlanInput>,
    /// Where each of `inputs` came from (same order), for the bundle policy.
    pub origins: Vec<Origin>,
    /// Fields removed from the input because another controller owns them (logged).
    pub stripped: Vec<String>,
}

/// Decodes and renders the transport ConfigMap `configmap` of `source`.
pub fn render(
    configmap: &Value,
    source: &Source,
    ctx: &RenderContext,
) -> Result<Rendered, RenderError> {
    let cm_name = format!("{}/{}", ctx.namespace, source.configmap);
    let decoded = TransportConfigMap::decode(configmap).map_err(RenderError::Decode)?;
    let components =
        render::substitute(&decoded.content.components, &ctx.substitutions).map_err(|source| {
            RenderError::Substitution {
                configmap: cm_name.clone(),
                source,
            }
        })?;
    let objects = capi_manifests::yaml::parse_objects(
        &format!("ConfigMap {cm_name}, components"),
        &components,
    )
    .map_err(RenderError::Parse)?;
    let image_key = platform::image_key(&source.provider_name);

    let mut inputs = Vec::with_capacity(objects.len());
    let mut origins = Vec::with_capacity(objects.len());
    let mut stripped = Vec::new();
    for object in objects {
        let structured = Origin {
            source: format!("ConfigMap {cm_name}"),
            document: object.location.index,
        };
        let origin = structured.to_string();
        let fail = |message: String| RenderError::Object {
            origin: origin.clone(),
            object: object.id.to_string(),
            message,
        };
        let mut value = object.value.clone();
        if let Some(ns) = object.id.namespace.as_deref()
            && ns != ctx.namespace
        {
            return Err(fail(format!(
                "metadata.namespace is {ns:?}; provider objects must be in {:?} or cluster-scoped",
                ctx.namespace
            )));
        }
        for path in render::strip_fields_owned_elsewhere(&mut value) {
            stripped.push(format!("{} {path}", object.id));
        }
        render::resolve_images(&mut value, image_key.as_deref(), &ctx.images)
            .map_err(|e| fail(e.to_string()))?;
        let labels = value
            .pointer_mut("/metadata")
            .and_then(Value::as_object_mut)
            .map(|m| {
                m.entry("labels")
                    .or_insert_with(|| Value::Object(Default::default()))
            });
        if let Some(Value::Object(labels)) = labels {
            labels
                .entry(PROVIDER_LABEL)
                .or_insert_with(|| Value::String(source.provider_label.clone()));
        }
        let dynamic: DynamicObject = serde_json::from_value(value)
            .map_err(|e| fail(format!("not a Kubernetes object: {e}")))?;
        inputs.push(PlanInput::new(dynamic, origin));
        origins.push(structured);
    }
    Ok(Rendered {
        inputs,
        origins,
        stripped,
    })
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

/// Renders and plans in one step: the whole provider is validated before anything is applied.
pub fn render_and_plan(
    configmap: &Value,
    source: &Source,
    ctx: &RenderContext,
    resolver: &KindResolver,
) -> Result<(Plan, Rendered), RenderError> {
    let mut rendered = render(configmap, source, ctx)?;
    let inputs = std::mem::take(&mut rendered.inputs);
    let plan = capi_apply::plan(inputs, resolver).map_err(RenderError::Plan)?;
    Ok((plan, rendered))
}
