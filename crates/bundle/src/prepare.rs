//! One provider's pure steps before any write: render its payload for this cluster, then validate and
//! order the whole set into a plan. A provider that fails here applies nothing.
//!
//! `prepare` = [`render`] → [`capi_apply::plan`] and [`crate::policy::check`] (the bundle policy, on
//! the rendered objects; a set that cannot be planned reports that first). The same steps serve `capi-installer render` offline, and
//! can serve a `diff` command (prepare, then compare with the live objects without writing).

use std::collections::{BTreeMap, BTreeSet};

use capi_apply::{DroppedShortName, KindResolver, NameConflicts, Plan, PlanInput};
use capi_manifests::customize::LABEL_CLUSTERCTL_PROVIDER;
use capi_manifests::memo::ParseMemo;
use capi_manifests::profile;
use capi_object::kinds::is_cluster_scoped;
use kube_core::DynamicObject;
use serde_json::{Value, json};

use crate::compatibility;
use crate::platform;
use crate::policy::{self, Among, BundleObject, Origin, PolicyConfig, Stored, Violations};
use crate::proxy::{self, ClusterProxy};
use crate::reference;
use crate::render::{self, Images};
use crate::source::{Payload, Target};

/// What rendering needs besides the payload.
#[derive(Clone, Debug, Default)]
pub struct RenderContext {
    /// The only namespace namespaced objects may live in.
    pub namespace: String,
    pub images: Images,
    pub substitutions: BTreeMap<String, String>,
    /// Variables that have no value now, with why (a TLS profile of the cluster that cannot be
    /// used): a provider whose components use one fails, the others render.
    pub unavailable: BTreeMap<String, String>,
    /// What a bundle may contain.
    pub policy: PolicyConfig,
    /// The components texts parsed before (clones of the context share it).
    pub parsed: ParseMemo,
    /// The cluster-wide proxy, added to every provider Deployment after the bundle policy.
    pub proxy: ClusterProxy,
    /// The cluster's CRD compatibility requirements, judged on every CRD of a plan
    /// ([`compatibility`]).
    pub requirements: Vec<capi_compat::Requirement>,
}

/// Why a provider's payload cannot be turned into a plan. Every message names the source and, where
/// there is one, the document and the object.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("{origin}: components use ${{{variable}}}, which has no value: {why}")]
    Unavailable {
        origin: String,
        variable: String,
        why: String,
    },
    #[error("{origin}: components, {source}")]
    Substitution {
        origin: String,
        #[source]
        source: render::SubstitutionError,
    },
    /// A profile's `selfImageRef` that the images file cannot resolve.
    #[error("{origin}: selfImageRef {reference}: {message}")]
    SelfImage {
        origin: String,
        reference: String,
        message: String,
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
    #[error("{0}")]
    Policy(#[source] Violations),
    /// Independent problems of one payload (objects the images file cannot complete, objects outside
    /// the namespace, and the bundle policy's violations of the rest), all reported at once: fixing one
    /// should not reveal the next.
    #[error("{} problems: {}", .0.len(), .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Several(Vec<RenderError>),
    /// Names of its CRDs that CRDs of another provider (or of the cluster) hold: the API server would
    /// never establish them.
    #[error("{0}")]
    NameConflict(#[source] NameConflicts),
    /// Its CRDs break compatibility requirements whose action is Deny: one finding per requirement,
    /// version and field.
    #[error("{origin}: CRDs incompatible with {} finding(s) of compatibility requirements: {}", .findings.len(), .findings.join("; "))]
    Incompatible {
        origin: String,
        findings: Vec<String>,
    },
}

impl RenderError {
    /// Each problem on its own (each bundle-policy violation, each of [`RenderError::Several`]), for
    /// output that gives every problem a line; a status message keeps the joined [`Display`] form.
    ///
    /// [`Display`]: std::fmt::Display
    pub fn problems(&self) -> Vec<String> {
        match self {
            RenderError::Several(all) => all.iter().flat_map(RenderError::problems).collect(),
            RenderError::Policy(v) => v.0.iter().map(|v| format!("bundle policy: {v}")).collect(),
            RenderError::Plan(errors) => errors.0.iter().map(ToString::to_string).collect(),
            RenderError::NameConflict(conflicts) => {
                conflicts.0.iter().map(ToString::to_string).collect()
            }
            other => vec![other.to_string()],
        }
    }

    /// Whether discovering the API server's kinds again could help: a kind served by a CRD created
    /// since the last discovery.
    pub fn unknown_kind(&self) -> bool {
        match self {
            RenderError::Plan(errors) => errors
                .0
                .iter()
                .any(|e| matches!(e, capi_apply::PlanError::UnknownKind { .. })),
            RenderError::Several(all) => all.iter().any(RenderError::unknown_kind),
            _ => false,
        }
    }
}

/// The rendered objects of one provider, with where each came from.
#[derive(Debug)]
pub struct Rendered {
    pub inputs: Vec<PlanInput>,
    /// Where each of `inputs` came from (same order), for the bundle policy.
    pub origins: Vec<Origin>,
    /// Fields removed from the input because another controller owns them, and CRD write rules
    /// narrowed to the bundle's own CRDs ([`policy::own_crds`]) (logged).
    pub(crate) stripped: Vec<String>,
    /// Problems of single objects found while rendering (an image without its key, a namespace not
    /// allowed, not an object): the others are still rendered, so that the plan and the bundle policy
    /// report their problems too.
    pub(crate) problems: Vec<RenderError>,
    /// The images of `problems` that the images file could not complete: already reported, so the
    /// bundle policy does not report them again as images outside the release payload.
    pub(crate) unresolved_images: BTreeSet<String>,
    /// The reference's ID of this content as a component of a revision
    /// ([`reference::content_id::component_id`]), for a profile of a known image.
    pub(crate) reference_id: Option<String>,
    /// Whether the objects are as trusted as the release: a profile read from a release image pinned
    /// by digest ([`Payload::is_release_image`]). The bundle policy then lets what they grant and
    /// have extend its bounds ([`PolicyConfig::trusting`]). Stored content read back is not.
    pub(crate) trusted: bool,
}

/// A provider's validated plan.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub plan: Plan,
    /// Fields removed because another controller owns them (logged).
    pub stripped: Vec<String>,
    /// sha256 of the rendered objects: what identifies this version of the provider for this cluster
    /// (a new payload, image or substitution changes it).
    pub digest: String,
    /// The reference's ID of the content as a component of a revision, when it has one
    /// ([`Rendered::reference_id`]).
    pub reference_id: Option<String>,
    /// Short names taken out of the plan's CRDs because other CRDs of their group hold them (see
    /// [`crate::round::Planner`]): reported, since `kubectl get <short name>` finds the other kind.
    pub dropped_short_names: Vec<DroppedShortName>,
    /// The bundle policy of this version, to judge its objects again as the API server would store
    /// them (the preflight's dry-run answers).
    pub stored: Stored,
    /// What its CRDs break of compatibility requirements whose action is Warn (applied, reported).
    pub compatibility_warnings: Vec<String>,
}

impl Prepared {
    /// This provider's part of a cluster-wide revision's content ID (the installer's `report::cluster_api`):
    /// the reference's component ID where there is one, so that the reference can rebuild the
    /// revision; otherwise the digest (a revision with such a part is one the reference cannot
    /// rebuild in any case: it lists no component for it).
    pub fn revision_part(&self) -> &str {
        self.reference_id.as_deref().unwrap_or(&self.digest)
    }

    /// `relatedObjects` entries of the plan: its cluster-scoped objects, and the instances of its CRDs
    /// (so `oc adm inspect` gathers the Cluster API resources too) — those of a namespaced CRD in
    /// `namespace` only, as the reference scoped them (ref §2.8): listed without a namespace,
    /// must-gather would collect every Cluster, Machine and AWSCluster of every namespace of a
    /// management cluster.
    pub fn related_objects(&self, namespace: &str) -> Vec<Value> {
        let mut out = Vec::new();
        for o in self.plan.objects() {
            if !o.namespaced {
                out.push(json!({"group": o.resource.group, "resource": o.resource.plural, "name": o.key.name}));
            }
            if o.key.kind == "CustomResourceDefinition" {
                let spec = o.object.data.get("spec");
                let text = |pointer: &str| {
                    spec.and_then(|s| s.pointer(pointer))
                        .and_then(Value::as_str)
                };
                if let (Some(group), Some(plural)) = (text("/group"), text("/names/plural")) {
                    out.push(match text("/scope") {
                        Some("Cluster") => json!({"group": group, "resource": plural, "name": ""}),
                        _ => json!({"group": group, "resource": plural, "namespace": namespace, "name": ""}),
                    });
                }
            }
        }
        out
    }
}

/// Substitutes, parses and renders `payload` for `target`.
pub fn render(
    payload: &Payload,
    target: &Target,
    ctx: &RenderContext,
) -> Result<Rendered, RenderError> {
    let substitution = |source| RenderError::Substitution {
        origin: payload.origin.clone(),
        source,
    };
    let template = render::Template::parse(&payload.components).map_err(substitution)?;
    let used = template.variables();
    if let Some((variable, why)) = ctx
        .unavailable
        .iter()
        .find(|(v, _)| used.contains(&v.as_str()))
    {
        return Err(RenderError::Unavailable {
            origin: payload.origin.clone(),
            variable: variable.clone(),
            why: why.clone(),
        });
    }
    let substitutions = render::with_defaults(&ctx.substitutions);
    let components = render::substitute(&template, &substitutions).map_err(substitution)?;
    // The reference replaces every occurrence, also inside a longer reference (see
    // `replace_self_image`): its text, for its content ID.
    let reference_text = match (&payload.component, &payload.self_image_ref, &payload.image) {
        (Some(_), Some(reference), Some(image)) if !reference.is_empty() => {
            Some(components.replace(reference.as_str(), image))
        }
        _ => None,
    };
    let components = match (&payload.self_image_ref, &payload.image) {
        // The reference's rule: the profile's own image, whatever its key.
        (Some(reference), Some(image)) => {
            profile::replace_self_image(&components, reference, image)
        }
        (Some(reference), None) => {
            replace_self_image(&payload.origin, reference, &components, ctx)?
        }
        (None, _) => components,
    };
    let objects = ctx
        .parsed
        .parse_objects(&format!("{}, components", payload.origin), &components)
        .map_err(RenderError::Parse)?;
    let image_key = platform::image_key(&target.source.name);
    let mut rendered = Rendered {
        inputs: Vec::with_capacity(objects.len()),
        origins: Vec::with_capacity(objects.len()),
        stripped: Vec::new(),
        problems: Vec::new(),
        unresolved_images: BTreeSet::new(),
        reference_id: reference_component_id(payload, reference_text, &components, &objects),
        trusted: payload.is_release_image(),
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
        let mut value = object.value;
        // The API server ignores the namespace of a cluster-scoped object; the reference's newer
        // generator leaves one on admission policies (kustomize's namespace transformer), and the
        // plan would refuse it. Dropped here as the API server would.
        let namespace = if is_cluster_scoped(&object.id.group, &object.id.kind) {
            if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("namespace");
            }
            None
        } else {
            object.id.namespace.as_deref()
        };
        if let Some(ns) = namespace
            && ns != ctx.namespace
        {
            rendered.problems.push(fail(format!(
                "metadata.namespace is {ns:?}; provider objects must be in {:?} or cluster-scoped",
                ctx.namespace
            )));
            continue;
        }
        let take_over = take_over(&mut value).unwrap_or_else(|e| {
            rendered.problems.push(fail(e));
            false
        });
        for path in render::strip_fields_owned_elsewhere(&mut value) {
            rendered.stripped.push(format!("{} {path}", object.id));
        }
        // An image without its key leaves the object otherwise whole: it still goes to the plan and the
        // bundle policy, whose findings are reported with this one.
        if let Err(e) = render::resolve_images(&mut value, image_key.as_deref(), &ctx.images) {
            rendered.unresolved_images.insert(e.image().to_string());
            rendered.problems.push(fail(e.to_string()));
        }
        label(&mut value, &target.clusterctl_label);
        let dynamic: DynamicObject = match serde_json::from_value(value) {
            Ok(dynamic) => dynamic,
            Err(e) => {
                rendered
                    .problems
                    .push(fail(format!("not a Kubernetes object: {e}")));
                continue;
            }
        };
        // What the release ships for this provider, existing before it (the IPAM CRDs the payload
        // applies), is taken over whether or not the manifest says so: the transport ConfigMaps of the
        // first generation have no `adopt-existing`.
        let take_over = take_over
            || capi_apply::key_of(&dynamic)
                .is_some_and(|k| policy::adoption::shipped(&target.clusterctl_label, &k));
        rendered
            .inputs
            .push(PlanInput::new(dynamic, origin).take_over(take_over));
        rendered.origins.push(structured);
    }
    let mut objects: Vec<&mut DynamicObject> =
        rendered.inputs.iter_mut().map(|i| &mut i.object).collect();
    for rule in policy::own_crds::narrow(&mut objects) {
        rendered.stripped.push(format!(
            "{rule}: CRD writes narrowed to the bundle's own CRDs"
        ));
    }
    Ok(rendered)
}

/// The reference's ID of `payload` as a component ([`reference::content_id`]), for a profile of a
/// known image: from the objects parsed for this render (`objects`, of `components`), as parsed,
/// before anything of the render changes them; or, when the reference's text (`reference_text`)
/// is another, from that text parsed again (`None` when it does not parse: nor could the
/// reference render it).
fn reference_component_id(
    payload: &Payload,
    reference_text: Option<String>,
    components: &str,
    objects: &[capi_manifests::yaml::Object],
) -> Option<String> {
    let component = payload.component.as_deref()?;
    payload.image.as_ref()?;
    let reparsed;
    let objects = match reference_text.filter(|text| text != components) {
        Some(text) => {
            reparsed = capi_manifests::yaml::parse_objects(&payload.origin, &text).ok()?;
            &reparsed
        }
        None => objects,
    };
    Some(reference::content_id::component_id(
        component,
        objects.iter().map(|o| &o.value),
    ))
}

/// Whether the manifest asks that an existing object be taken over whoever manages it (the
/// reference's [`reference::ADOPT_EXISTING`]: `always`); the annotation is removed, as the reference
/// removes it before apply: it is an instruction to the installer, not part of the object.
fn take_over(object: &mut Value) -> Result<bool, String> {
    let Some(annotations) = object
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    else {
        return Ok(false);
    };
    let Some(value) = annotations.remove(reference::ADOPT_EXISTING) else {
        return Ok(false);
    };
    let take_over = reference::adopt_existing(Some(value.as_str().unwrap_or_default()))
        .map_err(|e| format!("metadata.annotations: {e}"))?;
    if annotations.is_empty()
        && let Some(meta) = object
            .pointer_mut("/metadata")
            .and_then(Value::as_object_mut)
    {
        meta.remove("annotations");
    }
    Ok(take_over)
}

impl Rendered {
    /// Objects rendered earlier (a revision's stored content), as if rendered now; `origin` names
    /// where they were stored (`revision 2 of ConfigMap aws`).
    pub fn stored(origin: &str, objects: Vec<Value>) -> Result<Rendered, RenderError> {
        let mut rendered = Rendered {
            inputs: Vec::with_capacity(objects.len()),
            origins: Vec::with_capacity(objects.len()),
            stripped: Vec::new(),
            problems: Vec::new(),
            unresolved_images: BTreeSet::new(),
            reference_id: None,
            // Stored in the cluster: whatever its source was, it is judged by the cluster's bounds.
            trusted: false,
        };
        for (document, value) in objects.into_iter().enumerate() {
            let structured = Origin {
                source: origin.to_string(),
                document,
            };
            let mut object: DynamicObject =
                serde_json::from_value(value).map_err(|e| RenderError::Object {
                    origin: structured.to_string(),
                    object: String::new(),
                    message: format!("not a Kubernetes object: {e}"),
                })?;
            // The proxy of the revision's time: the policy judges the content without it, and the
            // plan gets the current one.
            proxy::strip(&mut object);
            rendered
                .inputs
                .push(PlanInput::new(object, structured.to_string()));
            rendered.origins.push(structured);
        }
        Ok(rendered)
    }

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

/// A profile's manifests name the provider's own image by its `selfImageRef`
/// (`registry.ci.openshift.org/openshift:<key>`); every occurrence becomes the release's image of
/// that key. A missing key is an error, as for any other image.
fn replace_self_image(
    origin: &str,
    reference: &str,
    components: &str,
    ctx: &RenderContext,
) -> Result<String, RenderError> {
    let fail = |message: String| RenderError::SelfImage {
        origin: origin.to_string(),
        reference: reference.to_string(),
        message,
    };
    let key = reference
        .strip_prefix(render::RELEASE_IMAGE_PREFIX)
        .filter(|k| !k.is_empty())
        .ok_or_else(|| {
            fail(format!(
                "not a release image reference ({}<key>), so no release image can replace it",
                render::RELEASE_IMAGE_PREFIX
            ))
        })?;
    let image = ctx.images.get(key).ok_or_else(|| {
        fail(format!(
            "needs key {key:?}, which the images file does not have"
        ))
    })?;
    Ok(profile::replace_self_image(components, reference, image))
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
    let among = Among::alone(&target.clusterctl_label);
    prepare_among(payload, target, ctx, resolver, &among)
}

/// [`prepare`] among the other providers of a round (see [`policy::references`]).
pub(crate) fn prepare_among(
    payload: &Payload,
    target: &Target,
    ctx: &RenderContext,
    resolver: &KindResolver,
    among: &Among<'_>,
) -> Result<Prepared, RenderError> {
    plan_rendered(render(payload, target, ctx)?, ctx, resolver, among)
}

/// The checks and the plan of rendered objects: the bundle policy, the digest and the plan. A
/// revision applied again (a rollback) goes through the same checks as a fresh render: its stored
/// content is as untrusted as any ConfigMap of the namespace.
pub(crate) fn plan_rendered(
    rendered: Rendered,
    ctx: &RenderContext,
    resolver: &KindResolver,
    among: &Among<'_>,
) -> Result<Prepared, RenderError> {
    let payload_images = ctx
        .images
        .values()
        .chain(&rendered.unresolved_images)
        .map(String::as_str)
        .collect();
    let bundle = rendered.bundle();
    let trusted;
    let config = if rendered.trusted {
        trusted = ctx.policy.trusting(&bundle, among);
        &trusted
    } else {
        &ctx.policy
    };
    let mut policy = policy::check(&bundle, config, &payload_images, among);
    let stored = Stored::new(&bundle, config, &payload_images, among.provider);
    let adoption = policy::adoption::check(
        rendered.inputs.iter().zip(&rendered.origins),
        among.provider,
        rendered.trusted,
    );
    if !adoption.is_empty() {
        let mut all = policy.err().map(|v| v.0).unwrap_or_default();
        all.extend(adoption);
        all.sort_by(|a, b| a.origin.cmp(&b.origin));
        policy = Err(policy::Violations(all));
    }
    // The cluster's proxy, after the policy judged what the bundle wrote (see [`proxy`]); in the
    // digest, so a changed proxy is a new revision, as a changed TLS profile is.
    let mut inputs = rendered.inputs;
    for input in &mut inputs {
        proxy::inject(&mut input.object, &ctx.proxy);
    }
    let digest = digest(&inputs);
    let mut problems = rendered.problems;
    let verdict = compatibility::judge(inputs.iter().map(|i| &i.object), &ctx.requirements);
    if !verdict.denied.is_empty() {
        problems.push(RenderError::Incompatible {
            origin: rendered
                .origins
                .first()
                .map(|o| o.source.clone())
                .unwrap_or_default(),
            findings: verdict.denied.iter().map(ToString::to_string).collect(),
        });
    }
    // A set that cannot even be planned (an unknown kind, a duplicate) is reported as such, with the
    // objects' own problems; the policy judges bundles that would otherwise apply.
    let plan = match capi_apply::plan(inputs, resolver) {
        Ok(plan) => Some(plan),
        Err(e) => {
            problems.push(RenderError::Plan(e));
            None
        }
    };
    if let (Some(_), Err(violations)) = (&plan, policy) {
        problems.push(RenderError::Policy(violations));
    }
    let plan = match (plan, problems.len()) {
        (Some(plan), 0) => plan,
        (_, 1) => return Err(problems.remove(0)),
        _ => return Err(RenderError::Several(problems)),
    };
    Ok(Prepared {
        plan,
        stripped: rendered.stripped,
        digest,
        reference_id: rendered.reference_id,
        dropped_short_names: Vec::new(),
        stored,
        compatibility_warnings: verdict.warned.iter().map(ToString::to_string).collect(),
    })
}

/// The hash of the objects' JSON array, computed without building it (a copy of every object), and
/// of which objects are to be taken over (a content whose only change is `adopt-existing` is a new
/// content, as for the reference). Without any, the hash of the objects alone: the digests of
/// contents recorded before take-overs existed stay what they were.
fn digest(inputs: &[PlanInput]) -> String {
    let objects = capi_apply::drift::hash_objects(inputs.iter().map(|i| &i.object));
    let taken: Vec<String> = inputs
        .iter()
        .filter(|i| i.take_over)
        .filter_map(|i| capi_apply::key_of(&i.object))
        .map(|k| k.to_string())
        .collect();
    if taken.is_empty() {
        return objects;
    }
    capi_apply::drift::hash_value(&serde_json::json!({"objects": objects, "takeOver": taken}))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::ProfileRef;
    use crate::source::{ProviderSource, SourceId};
    use capi_manifests::ProviderType;

    const SELF: &str = "registry.ci.openshift.org/openshift:aws-cluster-api-controllers";

    fn target() -> Target {
        Target {
            source: ProviderSource {
                id: SourceId::Profile(ProfileRef {
                    image: "aws".into(),
                    profile: "default".into(),
                }),
                name: "aws".into(),
                provider_type: ProviderType::Infrastructure,
                version: Some("v2.13.0".into()),
                created: None,
            },
            clusterctl_label: "infrastructure-aws".into(),
        }
    }

    fn ctx(images: &[(&str, &str)]) -> RenderContext {
        RenderContext {
            namespace: "openshift-cluster-api".into(),
            images: images
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            substitutions: [("TLS_MIN_VERSION".to_string(), "VersionTLS13".to_string())].into(),
            ..Default::default()
        }
    }

    fn payload(components: String) -> Payload {
        Payload {
            origin: "aws/capi-operator-manifests/default/manifests.yaml".into(),
            components,
            self_image_ref: Some(SELF.into()),
            image: None,
            component: None,
            version: None,
        }
    }

    /// The release image of the payload's `selfImageRef`.
    const SELF_IMAGE: (&str, &str) = ("aws-cluster-api-controllers", "quay.io/capa@sha256:1");

    /// As in the reference: substitution first, then every whole occurrence of `selfImageRef`
    /// becomes the release image of its key; other release images resolve by key as always.
    #[test]
    fn a_profile_renders_with_its_self_image_and_substitutions() {
        let components = format!(
            r#"apiVersion: apps/v1
kind: Deployment
metadata: {{name: capa-controller-manager, namespace: openshift-cluster-api}}
spec:
  template:
    spec:
      containers:
      - name: manager
        image: {SELF}
        args: ["--tls-min-version=${{TLS_MIN_VERSION}}", "--sidecar-image={SELF}", "--level=${{LOG:=2}}"]
      - name: proxy
        image: registry.ci.openshift.org/openshift:kube-rbac-proxy
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {{name: openshift-cluster-api-protect-awscluster, namespace: openshift-cluster-api}}
spec: {{failurePolicy: Fail}}
"#
        );
        let rendered = render(
            &payload(components),
            &target(),
            &ctx(&[
                ("aws-cluster-api-controllers", "quay.io/capa@sha256:1"),
                ("kube-rbac-proxy", "quay.io/proxy@sha256:2"),
            ]),
        )
        .unwrap();
        let deployment = serde_json::to_value(&rendered.inputs[0].object).unwrap();
        let containers = &deployment["spec"]["template"]["spec"]["containers"];
        assert_eq!(containers[0]["image"], "quay.io/capa@sha256:1");
        assert_eq!(
            containers[0]["args"],
            serde_json::json!([
                "--tls-min-version=VersionTLS13",
                "--sidecar-image=quay.io/capa@sha256:1",
                "--level=2"
            ])
        );
        assert_eq!(containers[1]["image"], "quay.io/proxy@sha256:2");
        // A cluster-scoped object loses the namespace the API server would ignore.
        let policy = &rendered.inputs[1].object;
        assert_eq!(policy.metadata.namespace, None);
        assert_eq!(
            policy.metadata.labels.as_ref().unwrap()["cluster.x-k8s.io/provider"],
            "infrastructure-aws"
        );
        assert!(
            rendered.origins[1]
                .to_string()
                .ends_with("manifests.yaml, document 1")
        );
    }

    /// A profile whose image volume is known is rendered as the reference renders it: every
    /// `selfImageRef` becomes that image's own reference, whatever the images file says of its key
    /// (here nothing: no key is needed).
    #[test]
    fn a_profile_of_a_known_image_gets_that_image() {
        let components = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: a, namespace: openshift-cluster-api}}\ndata: {{image: '{SELF}'}}\n"
        );
        let mut from_volume = payload(components);
        from_volume.image = Some("quay.io/release/capa@sha256:9".into());
        let rendered = render(&from_volume, &target(), &ctx(&[])).unwrap();
        let object = serde_json::to_value(&rendered.inputs[0].object).unwrap();
        assert_eq!(object["data"]["image"], "quay.io/release/capa@sha256:9");
    }

    #[test]
    fn adopt_existing_is_taken_off_and_decides_the_take_over() {
        let doc = |name: &str, annotations: &str| {
            format!(
                "apiVersion: v1\nkind: ServiceAccount\nmetadata: {{name: {name}, namespace: openshift-cluster-api{annotations}}}\n"
            )
        };
        let components = [
            doc(
                "always",
                ", annotations: {capi-operator.openshift.io/adopt-existing: always, keep: 'yes'}",
            ),
            doc(
                "never",
                ", annotations: {capi-operator.openshift.io/adopt-existing: never}",
            ),
            doc("plain", ""),
        ]
        .join("---\n");
        let rendered =
            render(&payload(components.clone()), &target(), &ctx(&[SELF_IMAGE])).unwrap();
        let seen: Vec<(String, bool, Option<Value>)> = rendered
            .inputs
            .iter()
            .map(|i| {
                let v = serde_json::to_value(&i.object).unwrap();
                (
                    v["metadata"]["name"].as_str().unwrap().to_string(),
                    i.take_over,
                    v["metadata"].get("annotations").cloned(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                (
                    "always".into(),
                    true,
                    Some(serde_json::json!({"keep": "yes"}))
                ),
                ("never".into(), false, None),
                ("plain".into(), false, None),
            ]
        );
        // The take-over is part of the content: the same objects without it are another digest. (A
        // release image's profile: `adopt-existing` on a ServiceAccount is the release's to ask.)
        let resolver = capi_apply::KindResolver::builtin();
        let release = |components: String| Payload {
            image: Some(format!("quay.io/capa@sha256:{}", "1".repeat(64))),
            ..payload(components)
        };
        let with = prepare(
            &release(components),
            &target(),
            &ctx(&[SELF_IMAGE]),
            &resolver,
        )
        .unwrap();
        let without = prepare(
            &release(
                [
                    doc("always", ", annotations: {keep: 'yes'}"),
                    doc("never", ""),
                    doc("plain", ""),
                ]
                .join("---\n"),
            ),
            &target(),
            &ctx(&[SELF_IMAGE]),
            &resolver,
        )
        .unwrap();
        assert_ne!(with.digest, without.digest);

        let bad = doc(
            "odd",
            ", annotations: {capi-operator.openshift.io/adopt-existing: 'true'}",
        );
        let err = prepare(&payload(bad), &target(), &ctx(&[SELF_IMAGE]), &resolver)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("ServiceAccount openshift-cluster-api/odd"),
            "{err}"
        );
        assert!(
            err.contains(r#"annotation capi-operator.openshift.io/adopt-existing is "true""#),
            "{err}"
        );
    }

    #[test]
    fn a_variable_without_value_fails_only_the_providers_that_use_it() {
        let mut ctx = ctx(&[SELF_IMAGE]);
        ctx.unavailable.insert(
            "TLS_MIN_VERSION".into(),
            "APIServer cluster: spec.tlsSecurityProfile.custom: type Custom needs a custom profile"
                .into(),
        );
        let uses = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: openshift-cluster-api}\ndata: {v: '${TLS_MIN_VERSION:=VersionTLS12}'}\n";
        let err = render(&payload(uses.into()), &target(), &ctx)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("components use ${TLS_MIN_VERSION}, which has no value: APIServer cluster: spec.tlsSecurityProfile.custom"),
            "{err}"
        );
        let other = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: openshift-cluster-api}\ndata: {v: '${TLS_MIN_VERSION_OLD} $TLS_MIN_VERSION'}\n";
        assert!(render(&payload(other.into()), &target(), &ctx).is_ok());
    }

    #[test]
    fn an_unresolvable_self_image_is_an_error_naming_the_profile() {
        let err = render(&payload(String::new()), &target(), &ctx(&[]))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            format!(
                "aws/capi-operator-manifests/default/manifests.yaml: selfImageRef {SELF}: needs key \"aws-cluster-api-controllers\", which the images file does not have"
            )
        );
        let mut other = payload(String::new());
        other.self_image_ref = Some("quay.io/example/capa:v2".into());
        let err = render(&other, &target(), &ctx(&[]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a release image reference"), "{err}");
    }

    /// Trust follows provenance (issue 29): a profile read from a release image pinned by digest
    /// brings what its provider needs beyond the shipped bounds (a vendor's API group in its role, a
    /// field no provider had); the same components from a folder that is no release image are
    /// refused, naming both. The rules that hold for every source still refuse `escalate`.
    #[test]
    fn a_release_images_profile_extends_the_bounds_for_itself_only() {
        let components = format!(
            r#"apiVersion: v1
kind: ServiceAccount
metadata: {{name: capx-manager, namespace: openshift-cluster-api}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: capx-manager-role}}
rules: [{{apiGroups: [widgets.vendor.example.com], resources: [widgets], verbs: [get, list, watch]}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: capx-controller-manager, namespace: openshift-cluster-api}}
spec:
  template:
    spec:
      serviceAccountName: capx-manager
      containers: [{{name: manager, image: {SELF}, stdin: true}}]
"#
        );
        let resolver = KindResolver::builtin();
        let image = format!("quay.io/capx@sha256:{}", "1".repeat(64));
        let ctx = ctx(&[("aws-cluster-api-controllers", &image)]);
        let mut trusted = payload(components.clone());
        trusted.image = Some(image.clone());
        assert!(trusted.is_release_image());
        prepare(&trusted, &target(), &ctx, &resolver).expect("a release image's own needs");

        // Known by tag only: not pinned, so not the release's.
        let tagged = Payload {
            image: Some("quay.io/capx:v1".into()),
            ..payload(components.clone())
        };
        assert!(!tagged.is_release_image());
        {
            let untrusted = payload(components.clone());
            assert!(!untrusted.is_release_image());
            let err = prepare(&untrusted, &target(), &ctx, &resolver)
                .unwrap_err()
                .to_string();
            for expected in [
                "(ClusterRole capx-manager-role): rule rbac-ceiling: rules[0] grants (\"widgets.vendor.example.com\", widgets, get)",
                "(Deployment openshift-cluster-api/capx-controller-manager): rule fields-in-real-bundles-only: spec.template.spec.containers[0].stdin",
            ] {
                assert!(err.contains(expected), "{expected:?} not in {err}");
            }
        }

        let escalating = components.replace("verbs: [get, list, watch]", "verbs: [get, escalate]");
        let mut trusted = payload(escalating);
        trusted.image = Some(image);
        let err = prepare(&trusted, &target(), &ctx, &resolver)
            .unwrap_err()
            .to_string();
        assert!(err.contains("rule rbac-no-escalation-verbs"), "{err}");
    }

    /// A provider's own API group (issue 46: a real IPAM provider's release image defines its CRDs and
    /// webhooks in `ipam.<vendor>`): a release image may bring one that nobody else serves; the same
    /// components from another source, a group another provider or the cluster serves, and the
    /// cluster's own domains are refused.
    #[test]
    fn a_release_image_may_own_an_api_group_nobody_else_serves() {
        let components = |group: &str| {
            format!(
                r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: ippools.{group}}}
spec:
  group: {group}
  names: {{kind: IPPool, listKind: IPPoolList, plural: ippools, singular: ippool}}
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema: {{openAPIV3Schema: {{type: object}}}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {{name: capx-ipam-validating}}
webhooks:
- name: validation.ippool.{group}
  admissionReviewVersions: [v1]
  sideEffects: None
  clientConfig: {{service: {{name: capx-webhook-service, namespace: openshift-cluster-api, path: /validate}}}}
  rules: [{{apiGroups: [{group}], apiVersions: [v1alpha1], operations: [CREATE, UPDATE], resources: [ippools]}}]
---
apiVersion: v1
kind: Service
metadata: {{name: capx-webhook-service, namespace: openshift-cluster-api}}
spec:
  ports: [{{port: 443, targetPort: 9443}}]
  selector: {{cluster.x-k8s.io/provider: infrastructure-aws}}
"#
            )
        };
        let resolver = KindResolver::builtin();
        let image = format!("quay.io/capx@sha256:{}", "1".repeat(64));
        let ctx = ctx(&[("aws-cluster-api-controllers", &image)]);
        let release = |text: String| Payload {
            image: Some(image.clone()),
            ..payload(text)
        };
        let own = "ipam.vendor.example.com";
        prepare(&release(components(own)), &target(), &ctx, &resolver)
            .expect("a release image's own group");

        let refusal = |payload: &Payload, among: &Among<'_>| {
            prepare_among(payload, &target(), &ctx, &resolver, among)
                .unwrap_err()
                .to_string()
        };
        let alone = Among::alone("infrastructure-aws");
        let err = refusal(&payload(components(own)), &alone);
        for expected in [
            "(CustomResourceDefinition ippools.ipam.vendor.example.com): rule crd-family-groups-only",
            "(ValidatingWebhookConfiguration capx-ipam-validating): rule admission-family-groups-only",
        ] {
            assert!(err.contains(expected), "{expected:?} not in {err}");
        }
        let other = vec![policy::Holdings {
            provider: "infrastructure-metal3".into(),
            resources: [(own.to_string(), "ipaddresses".to_string())].into(),
            ..Default::default()
        }];
        let none = Default::default();
        let err = refusal(
            &release(components(own)),
            &Among::new("infrastructure-aws", &other, &none),
        );
        assert!(
            err.contains("nobody else serves; provider infrastructure-metal3 serves it"),
            "{err}"
        );
        let cluster = [((own.to_string(), "ipclaims".to_string()), String::new())].into();
        let err = refusal(
            &release(components(own)),
            &Among::new("infrastructure-aws", &[], &cluster),
        );
        assert!(
            err.contains("the cluster (a CRD no provider installed) serves it"),
            "{err}"
        );
        let err = refusal(&release(components("ipam.openshift.io")), &alone);
        assert!(err.contains("rule crd-family-groups-only"), "{err}");
    }

    /// A revision's stored content is checked and planned as a fresh render is: edited to bind
    /// cluster-admin, a rollback to it applies nothing.
    #[test]
    fn stored_content_goes_through_the_policy_and_the_plan_again() {
        let sa = serde_json::json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "capa", "namespace": "openshift-cluster-api"}});
        let binding = serde_json::json!({"apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding", "metadata": {"name": "own-the-cluster"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "ServiceAccount", "name": "capa", "namespace": "openshift-cluster-api"}]});
        let ctx = ctx(&[]);
        let resolver = KindResolver::builtin();
        let ok = Rendered::stored("revision 1 of ConfigMap aws", vec![sa.clone()]).unwrap();
        let prepared =
            plan_rendered(ok, &ctx, &resolver, &Among::alone("infrastructure-aws")).unwrap();
        let planned: Vec<serde_json::Value> = prepared
            .plan
            .objects()
            .map(|o| serde_json::to_value(&o.object).unwrap())
            .collect();
        assert_eq!(planned, std::slice::from_ref(&sa));
        let edited = Rendered::stored("revision 1 of ConfigMap aws", vec![sa, binding]).unwrap();
        let err = plan_rendered(edited, &ctx, &resolver, &Among::alone("infrastructure-aws"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(
                "revision 1 of ConfigMap aws, document 1 (ClusterRoleBinding own-the-cluster)"
            ),
            "{err}"
        );
        let not_an_object =
            Rendered::stored("revision 1 of ConfigMap aws", vec![serde_json::json!(7)]);
        assert!(not_an_object.is_err());
    }
}
