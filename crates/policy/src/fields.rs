//! The field bound: per kind, the field paths a provider bundle's objects may have and the values
//! their sensitive fields may take, deny by default — the fields of the RBAC [`super::ceiling`].
//!
//! The rules of the policy name what is known to be dangerous (host access, privilege, `*` grants);
//! the field bound refuses whatever no real provider bundle has, so that the next field nobody
//! thought of (a seccomp profile `Unconfined`, `replicas: 500`, a priority class that preempts the
//! nodes' own pods, a volume source no provider uses) is refused instead of allowed.
//!
//! A path is written with list indices collapsed and the keys of free-form maps as `*`
//! (`spec.template.spec.containers[].securityContext.runAsUser`, `spec.template.spec.nodeSelector.*`);
//! which fields are maps comes from the kind's shape ([`super::schema`]). Labels and annotations keep
//! their keys (`metadata.annotations[service.beta.openshift.io/serving-cert-secret-name]`,
//! `spec.template.metadata.labels[control-plane]`): other controllers act on them by key (service-ca's
//! certificates, the API server's AppArmor and seccomp annotations, aggregation labels), so each
//! kind may carry only the keys real bundles put at that place. An administrator's field data may
//! allow every key of one place with `[*]` (`metadata.annotations[*]`). The leaves of an object are
//! judged: a scalar, an empty object or list, or an opaque subtree (a CRD's `openAPIV3Schema`, whose
//! content is the CRD's own schema). For the [`SENSITIVE`] paths the bound also lists the values real bundles use
//! (or, for `spec.replicas`, the largest; for sizes, the largest with a [`SIZE_MARGIN`]).
//!
//! The bound is data, like the ceiling: the release ships the union of what the real provider
//! bundles have (`manifests/0000_30_capi-installer_03_fields.yaml`, a ConfigMap labelled [`LABEL`],
//! derived and checked by `tests/policy_fixtures.rs`), an administrator extends it with another
//! ConfigMap carrying the label in the installer's namespace, and a profile read from a release image
//! extends it with its own fields for its own bundle ([`super::PolicyConfig::trusting`]).

use std::collections::{BTreeMap, BTreeSet};

use kube_core::DynamicObject;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::report::{Report, Rule};
use super::schema::{self, Node, join};

/// The label of the ConfigMaps (in the installer's namespace) whose [`DATA_KEY`] holds field data.
pub const LABEL: &str = "capi-installer.openshift.io/provider-fields";
/// The key of a labelled ConfigMap that holds the field data (YAML, [`FieldBound`]'s form).
pub const DATA_KEY: &str = "fields.yaml";

/// What the field bound does with a path's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sense {
    /// Only the values real bundles use.
    Values,
    /// An integer at most the largest real bundles use (a count whose every unit matters:
    /// `spec.replicas`).
    Maximum,
    /// An integer at most [`SIZE_MARGIN`] times the largest real bundles use: a size or a duration
    /// (a grace period, a token's lifetime, a webhook's timeout), where a provider's next version may
    /// reasonably ask a little more, and a bundle's own number far beyond it only harms others.
    Size,
    /// A resource quantity (`100m`, `50Mi`), per resource name, at most [`SIZE_MARGIN`] times the
    /// largest real bundles ask: a pod's requests reserve a node's capacity for it alone.
    Quantity,
}

/// How far a [`Sense::Size`] or [`Sense::Quantity`] may exceed the largest value real bundles use.
pub const SIZE_MARGIN: i64 = 2;

/// The longest label or annotation value a bundle's object may carry (bytes). The keys are bounded
/// per kind and place; their values are names and switches that controllers act on: real bundles'
/// longest is 39 (`tests/policy_fixtures.rs` keeps this well above it), and a value of kilobytes only
/// weighs on every reader of the object.
pub const METADATA_VALUE_MAX: usize = 256;

/// The paths whose values are bounded too, per kind (`Kind.group`, or `Kind` for the core group): a
/// path and everything below it (`…securityContext` covers `…securityContext.seccompProfile.type`).
pub const SENSITIVE: &[(&str, &str, Sense)] = &[
    ("Deployment.apps", "spec.replicas", Sense::Maximum),
    ("Deployment.apps", "spec.revisionHistoryLimit", Sense::Size),
    (
        "Deployment.apps",
        "spec.progressDeadlineSeconds",
        Sense::Size,
    ),
    ("Deployment.apps", "spec.minReadySeconds", Sense::Size),
    (
        "Deployment.apps",
        "spec.template.spec.terminationGracePeriodSeconds",
        Sense::Size,
    ),
    (
        "Deployment.apps",
        "spec.template.spec.volumes[].projected.sources[].serviceAccountToken.expirationSeconds",
        Sense::Size,
    ),
    (
        "Deployment.apps",
        "spec.template.spec.containers[].resources",
        Sense::Quantity,
    ),
    (
        "Deployment.apps",
        "spec.template.spec.initContainers[].resources",
        Sense::Quantity,
    ),
    (
        "Deployment.apps",
        "spec.template.spec.priorityClassName",
        Sense::Values,
    ),
    (
        "Deployment.apps",
        "spec.template.spec.securityContext",
        Sense::Values,
    ),
    (
        "Deployment.apps",
        "spec.template.spec.containers[].securityContext",
        Sense::Values,
    ),
    (
        "Deployment.apps",
        "spec.template.spec.initContainers[].securityContext",
        Sense::Values,
    ),
    (
        "Deployment.apps",
        "spec.template.spec.tolerations",
        Sense::Values,
    ),
    (
        "Deployment.apps",
        "spec.template.spec.hostNetwork",
        Sense::Values,
    ),
    (
        "Deployment.apps",
        "spec.template.spec.hostPID",
        Sense::Values,
    ),
    (
        "Deployment.apps",
        "spec.template.spec.hostIPC",
        Sense::Values,
    ),
    (
        "Deployment.apps",
        "spec.template.spec.hostUsers",
        Sense::Values,
    ),
    (
        "Deployment.apps",
        "spec.template.spec.containers[].ports[].hostPort",
        Sense::Values,
    ),
    (
        "Deployment.apps",
        "spec.template.spec.containers[].ports[].hostIP",
        Sense::Values,
    ),
    (
        "Deployment.apps",
        "spec.template.spec.runtimeClassName",
        Sense::Values,
    ),
    (
        "Deployment.apps",
        "spec.template.spec.schedulerName",
        Sense::Values,
    ),
    (
        "Deployment.apps",
        "spec.template.spec.nodeName",
        Sense::Values,
    ),
    ("Service", "spec.type", Sense::Values),
    ("Service", "spec.externalTrafficPolicy", Sense::Values),
    ("Service", "spec.internalTrafficPolicy", Sense::Values),
    ("Service", "spec.externalIPs", Sense::Values),
    (
        "MutatingWebhookConfiguration.admissionregistration.k8s.io",
        "webhooks[].failurePolicy",
        Sense::Values,
    ),
    (
        "MutatingWebhookConfiguration.admissionregistration.k8s.io",
        "webhooks[].sideEffects",
        Sense::Values,
    ),
    (
        "MutatingWebhookConfiguration.admissionregistration.k8s.io",
        "webhooks[].timeoutSeconds",
        Sense::Size,
    ),
    (
        "MutatingWebhookConfiguration.admissionregistration.k8s.io",
        "webhooks[].reinvocationPolicy",
        Sense::Values,
    ),
    (
        "MutatingWebhookConfiguration.admissionregistration.k8s.io",
        "webhooks[].rules[].apiGroups",
        Sense::Values,
    ),
    (
        "MutatingWebhookConfiguration.admissionregistration.k8s.io",
        "webhooks[].rules[].operations",
        Sense::Values,
    ),
    (
        "MutatingWebhookConfiguration.admissionregistration.k8s.io",
        "webhooks[].rules[].scope",
        Sense::Values,
    ),
    (
        "ValidatingWebhookConfiguration.admissionregistration.k8s.io",
        "webhooks[].failurePolicy",
        Sense::Values,
    ),
    (
        "ValidatingWebhookConfiguration.admissionregistration.k8s.io",
        "webhooks[].sideEffects",
        Sense::Values,
    ),
    (
        "ValidatingWebhookConfiguration.admissionregistration.k8s.io",
        "webhooks[].timeoutSeconds",
        Sense::Size,
    ),
    (
        "ValidatingWebhookConfiguration.admissionregistration.k8s.io",
        "webhooks[].rules[].apiGroups",
        Sense::Values,
    ),
    (
        "ValidatingWebhookConfiguration.admissionregistration.k8s.io",
        "webhooks[].rules[].operations",
        Sense::Values,
    ),
    (
        "ValidatingWebhookConfiguration.admissionregistration.k8s.io",
        "webhooks[].rules[].scope",
        Sense::Values,
    ),
    (
        "ValidatingAdmissionPolicy.admissionregistration.k8s.io",
        "spec.failurePolicy",
        Sense::Values,
    ),
    (
        "ValidatingAdmissionPolicy.admissionregistration.k8s.io",
        "spec.matchConstraints.resourceRules[].apiGroups",
        Sense::Values,
    ),
    (
        "ValidatingAdmissionPolicy.admissionregistration.k8s.io",
        "spec.matchConstraints.resourceRules[].operations",
        Sense::Values,
    ),
    (
        "ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io",
        "spec.validationActions",
        Sense::Values,
    ),
    (
        "ClusterRoleBinding.rbac.authorization.k8s.io",
        "subjects[].kind",
        Sense::Values,
    ),
    (
        "RoleBinding.rbac.authorization.k8s.io",
        "subjects[].kind",
        Sense::Values,
    ),
];

/// How the bound names a kind: `Deployment.apps`, `Service` (core group).
pub fn kind_key(group: &str, kind: &str) -> String {
    if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    }
}

/// Whether `path` of `kind` has bounded values, and how.
pub fn sensitive(kind: &str, path: &str) -> Option<Sense> {
    SENSITIVE.iter().find_map(|(k, p, sense)| {
        let under = path
            .strip_prefix(p)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']));
        (*k == kind && under).then_some(*sense)
    })
}

/// What one kind's objects may have.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindFields {
    /// The leaf paths.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub paths: BTreeSet<String>,
    /// The values of each [`Sense::Values`] path.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub values: BTreeMap<String, Vec<Value>>,
    /// The largest value of each [`Sense::Maximum`] and [`Sense::Size`] path.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub maxima: BTreeMap<String, i64>,
    /// The largest quantity of each [`Sense::Quantity`] path, keyed by resource name
    /// (`spec.template.spec.containers[].resources.requests.memory`), as written.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub quantities: BTreeMap<String, String>,
}

impl KindFields {
    /// Whether `path` is one of the paths, or a keyed label or annotation whose place allows every
    /// key (`…[*]`).
    fn permits(&self, path: &str) -> bool {
        self.paths.contains(path)
            || path
                .strip_suffix(']')
                .and_then(|p| p.rsplit_once('['))
                .is_some_and(|(place, key)| {
                    !key.is_empty() && self.paths.contains(&format!("{place}[*]"))
                })
    }

    fn extend(&mut self, other: &KindFields) {
        self.paths.extend(other.paths.iter().cloned());
        for (path, values) in &other.values {
            let mine = self.values.entry(path.clone()).or_default();
            for v in values {
                add_value(mine, v);
            }
        }
        for (path, max) in &other.maxima {
            let mine = self.maxima.entry(path.clone()).or_insert(*max);
            *mine = (*mine).max(*max);
        }
        for (path, max) in &other.quantities {
            add_quantity(&mut self.quantities, path, max);
        }
    }
}

/// Records `quantity` at `path` when it is larger than what is there (or nothing is).
fn add_quantity(quantities: &mut BTreeMap<String, String>, path: &str, quantity: &str) {
    let Some(new) = parse_quantity(quantity) else {
        return;
    };
    let larger = quantities
        .get(path)
        .and_then(|q| parse_quantity(q))
        .is_none_or(|old| new > old);
    if larger {
        quantities.insert(path.to_string(), quantity.to_string());
    }
}

/// A Kubernetes resource quantity's value (`100m` = 0.1, `50Mi` = 52428800, `1e3` = 1000), or `None`
/// when `text` is not one. A float is exact enough to compare sizes.
pub fn parse_quantity(text: &str) -> Option<f64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '+' | '-')))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let scale = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024f64,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        exponent => 10f64.powi(exponent.strip_prefix(['e', 'E'])?.parse().ok()?),
    };
    (number >= 0.0).then_some(number * scale)
}

/// A quantity as JSON holds it: a string, or a bare number (`cpu: 1`).
fn quantity_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The path of a [`Sense::Quantity`] leaf with its resource name instead of the map's `*`: the
/// written path (`at`) has the collapsed path's segments, then the key, which may hold dots
/// (`nvidia.com/gpu`).
fn keyed_path(path: &str, at: &str) -> String {
    let Some(parent) = path.strip_suffix(".*") else {
        return path.to_string();
    };
    let segments = parent.split('.').count();
    let key: Vec<&str> = at.splitn(segments + 1, '.').collect();
    match key.get(segments) {
        Some(key) => format!("{parent}.{key}"),
        None => path.to_string(),
    }
}

fn add_value(values: &mut Vec<Value>, v: &Value) {
    if !values.contains(v) {
        values.push(v.clone());
        values.sort_by_key(Value::to_string);
    }
}

/// The field bound: per kind ([`kind_key`]), what its objects may have.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FieldBound {
    pub kinds: BTreeMap<String, KindFields>,
}

/// A labelled ConfigMap whose field data cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("ConfigMap {namespace}/{name}: {DATA_KEY}: {message}")]
pub struct FieldDataError {
    pub namespace: String,
    pub name: String,
    pub message: String,
}

impl FieldBound {
    /// The bound the release ships (the labelled ConfigMap of the embedded `manifests/`).
    pub fn release() -> FieldBound {
        let objects = super::protected::release_objects();
        let (bound, errors) = FieldBound::from_configmaps(objects.iter());
        // The manifests are part of this build; a unit test reads them.
        assert!(errors.is_empty(), "release field data: {errors:?}");
        bound
    }

    /// The union of the field data of the ConfigMaps labelled [`LABEL`] (others are ignored), and
    /// why each unreadable one was left out.
    pub fn from_configmaps<'a>(
        configmaps: impl IntoIterator<Item = &'a Value>,
    ) -> (FieldBound, Vec<FieldDataError>) {
        let mut bound = FieldBound::default();
        let mut errors = Vec::new();
        for cm in configmaps {
            let labelled = cm.get("kind").and_then(Value::as_str) == Some("ConfigMap")
                && cm
                    .pointer("/metadata/labels")
                    .and_then(|l| l.get(LABEL))
                    .is_some();
            if !labelled {
                continue;
            }
            let text = |p: &str| {
                cm.pointer(p)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            let error = |message: String| FieldDataError {
                namespace: text("/metadata/namespace"),
                name: text("/metadata/name"),
                message,
            };
            let Some(data) = cm.pointer("/data").and_then(|d| d.get(DATA_KEY)) else {
                errors.push(error("missing".into()));
                continue;
            };
            match data
                .as_str()
                .ok_or_else(|| "not a string".to_string())
                .and_then(|t| {
                    capi_manifests::yaml::parse_documents("fields", t).map_err(|e| e.to_string())
                })
                .and_then(|docs| match docs.as_slice() {
                    [] => Ok(FieldBound::default()),
                    [one] => serde_json::from_value::<FieldBound>(one.value.clone())
                        .map_err(|e| e.to_string()),
                    _ => Err("more than one YAML document".into()),
                }) {
                Ok(read) => bound.extend(&read),
                Err(message) => errors.push(error(message)),
            }
        }
        (bound, errors)
    }

    /// This bound and `other`'s.
    pub fn with(mut self, other: &FieldBound) -> FieldBound {
        self.extend(other);
        self
    }

    fn extend(&mut self, other: &FieldBound) {
        for (kind, fields) in &other.kinds {
            self.kinds.entry(kind.clone()).or_default().extend(fields);
        }
    }

    /// Adds what `object` has: its paths and the values of its sensitive paths.
    pub fn add_object(&mut self, object: &Value) {
        let Some((group, kind)) = group_kind(object) else {
            return;
        };
        self.add(group, kind, &leaves(object, schema::of_kind(group, kind)));
    }

    /// [`Self::add_object`] of a rendered object (how the installer reads it).
    pub fn add_rendered(&mut self, object: &DynamicObject) {
        if let Some(key) = capi_apply::key_of(object) {
            let metadata = metadata(object);
            self.add(
                &key.group,
                &key.kind,
                &dynamic_leaves(&key.group, &key.kind, &metadata, object),
            );
        }
    }

    fn add(&mut self, group: &str, kind: &str, leaves: &[Leaf<'_>]) {
        let key = kind_key(group, kind);
        let fields = self.kinds.entry(key.clone()).or_default();
        for leaf in leaves {
            if matches!(leaf.path.as_str(), "apiVersion" | "kind") {
                continue;
            }
            match sensitive(&key, &leaf.path) {
                Some(Sense::Values) => add_value(
                    fields.values.entry(leaf.path.clone()).or_default(),
                    leaf.value,
                ),
                Some(Sense::Maximum | Sense::Size) => {
                    if let Some(n) = leaf.value.as_i64() {
                        let max = fields.maxima.entry(leaf.path.clone()).or_insert(n);
                        *max = (*max).max(n);
                    }
                }
                Some(Sense::Quantity) => {
                    if let Some(q) = quantity_text(leaf.value) {
                        add_quantity(
                            &mut fields.quantities,
                            &keyed_path(&leaf.path, &leaf.at),
                            &q,
                        );
                    }
                }
                None => {}
            }
            fields.paths.insert(leaf.path.clone());
        }
    }

    /// The bound of exactly what `objects` have.
    pub fn of_objects<'a>(objects: impl IntoIterator<Item = &'a Value>) -> FieldBound {
        let mut bound = FieldBound::default();
        for o in objects {
            bound.add_object(o);
        }
        bound
    }

    /// The YAML of this bound, as the release's ConfigMap holds it.
    pub fn to_yaml(&self) -> String {
        let value = serde_json::to_value(self).expect("field data serializes");
        capi_manifests::yaml::to_yaml("field data", &value).expect("field data serializes")
    }
}

/// The API group and kind of an object.
fn group_kind(object: &Value) -> Option<(&str, &str)> {
    let api_version = object.get("apiVersion")?.as_str()?;
    let kind = object.get("kind")?.as_str()?;
    Some((api_version.rsplit_once('/').map_or("", |(g, _)| g), kind))
}

/// One leaf of an object: its path collapsed (`containers[].name`), the path as written
/// (`containers[0].name`) and its value.
#[derive(Debug)]
pub struct Leaf<'a> {
    pub path: String,
    pub at: String,
    pub value: &'a Value,
}

/// The leaves of `object` of shape `node` (`None`: unknown, every object a struct). A null is an
/// absent field, as the API server stores it.
pub fn leaves<'a>(object: &'a Value, node: Option<&Node>) -> Vec<Leaf<'a>> {
    let mut out = Vec::new();
    walk(object, node, String::new(), String::new(), &mut out);
    out
}

/// The metadata of a rendered object as JSON (small: the object's body stays where it is).
fn metadata(object: &DynamicObject) -> Value {
    serde_json::to_value(&object.metadata).unwrap_or_default()
}

/// The leaves of a rendered object: its metadata (`metadata` as JSON) and its body. `apiVersion`
/// and `kind` are what made it this kind.
fn dynamic_leaves<'a>(
    group: &str,
    kind: &str,
    metadata: &'a Value,
    object: &'a DynamicObject,
) -> Vec<Leaf<'a>> {
    let node = schema::of_kind(group, kind);
    let mut out = Vec::new();
    walk(
        metadata,
        node.and_then(|n| n.field("metadata")),
        "metadata".into(),
        "metadata".into(),
        &mut out,
    );
    walk(&object.data, node, String::new(), String::new(), &mut out);
    out
}

fn walk<'a>(
    value: &'a Value,
    node: Option<&Node>,
    path: String,
    at: String,
    out: &mut Vec<Leaf<'a>>,
) {
    let leaf = |out: &mut Vec<Leaf<'a>>| {
        if !path.is_empty() {
            out.push(Leaf {
                path: path.clone(),
                at: at.clone(),
                value,
            })
        }
    };
    match (value, node) {
        (Value::Null, _) => {}
        (_, Some(Node::Opaque)) => leaf(out),
        (Value::Object(map), _) if map.values().all(Value::is_null) => leaf(out),
        (Value::Object(map), Some(Node::Map(item))) => {
            let keyed = ["metadata.labels", "metadata.annotations"]
                .iter()
                .any(|m| path == *m || path.ends_with(&format!(".{m}")));
            for (k, v) in map {
                let child = match keyed {
                    true => format!("{path}[{k}]"),
                    false => join(&path, "*"),
                };
                walk(v, Some(item), child, join(&at, k), out);
            }
        }
        (Value::Object(map), _) => {
            for (k, v) in map {
                let child = node.and_then(|n| n.field(k));
                walk(v, child, join(&path, k), join(&at, k), out);
            }
        }
        (Value::Array(items), _) if items.is_empty() => leaf(out),
        (Value::Array(items), _) => {
            let item = match node {
                Some(Node::List(item)) => Some(&**item),
                _ => None,
            };
            for (i, v) in items.iter().enumerate() {
                walk(v, item, format!("{path}[]"), format!("{at}[{i}]"), out);
            }
        }
        _ => leaf(out),
    }
}

/// The fields of one object against `bound`: one violation per path outside it (the first place it
/// occurs), one per value outside a sensitive path's values.
pub fn check(
    group: &str,
    kind: &str,
    object: &DynamicObject,
    bound: &FieldBound,
    v: &mut Report<'_>,
) {
    let key = kind_key(group, kind);
    let empty = KindFields::default();
    let allowed = bound.kinds.get(&key).unwrap_or(&empty);
    let mut refused_paths = BTreeSet::new();
    let metadata = metadata(object);
    for leaf in dynamic_leaves(group, kind, &metadata, object) {
        if matches!(leaf.path.as_str(), "apiVersion" | "kind") {
            continue;
        }
        if !allowed.permits(&leaf.path) {
            if refused_paths.insert(leaf.path.clone()) {
                v(
                    Rule::FieldPath,
                    format!(
                        "{} ({}): no real provider bundle has this field of a {kind}",
                        leaf.at, leaf.path
                    ),
                );
            }
            continue;
        }
        if let Some(text) = leaf.value.as_str().filter(|t| t.len() > METADATA_VALUE_MAX)
            && (leaf.path.contains("labels[") || leaf.path.contains("annotations["))
        {
            v(
                Rule::FieldValue,
                format!(
                    "{} is {} bytes long: a label or annotation value of a provider bundle is at most {METADATA_VALUE_MAX}",
                    leaf.at,
                    text.len()
                ),
            );
        }
        match sensitive(&key, &leaf.path) {
            Some(Sense::Values) => {
                let values = allowed
                    .values
                    .get(&leaf.path)
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                if !values.contains(leaf.value) {
                    v(
                        Rule::FieldValue,
                        format!(
                            "{} is {}: real provider bundles use only {}",
                            leaf.at,
                            leaf.value,
                            if values.is_empty() {
                                "no value here".to_string()
                            } else {
                                values
                                    .iter()
                                    .map(Value::to_string)
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            }
                        ),
                    );
                }
            }
            Some(Sense::Maximum) => {
                let max = allowed.maxima.get(&leaf.path);
                let n = leaf.value.as_i64();
                if !matches!((n, max), (Some(n), Some(max)) if n <= *max) {
                    v(
                        Rule::FieldValue,
                        format!(
                            "{} is {}: real provider bundles use at most {}",
                            leaf.at,
                            leaf.value,
                            max.map_or("nothing".to_string(), i64::to_string)
                        ),
                    );
                }
            }
            Some(Sense::Size) => {
                let max = allowed.maxima.get(&leaf.path);
                let n = leaf.value.as_i64();
                if !matches!((n, max), (Some(n), Some(max)) if n <= max.saturating_mul(SIZE_MARGIN))
                {
                    v(
                        Rule::FieldValue,
                        format!(
                            "{} is {}: real provider bundles use at most {} ({SIZE_MARGIN} times that is allowed)",
                            leaf.at,
                            leaf.value,
                            max.map_or("nothing".to_string(), i64::to_string)
                        ),
                    );
                }
            }
            Some(Sense::Quantity) => {
                let path = keyed_path(&leaf.path, &leaf.at);
                let max = allowed.quantities.get(&path);
                let asked = quantity_text(leaf.value).and_then(|q| parse_quantity(&q));
                let within = match (asked, max.and_then(|m| parse_quantity(m))) {
                    (Some(asked), Some(max)) => asked <= max * SIZE_MARGIN as f64,
                    _ => false,
                };
                if !within {
                    v(
                        Rule::FieldValue,
                        format!(
                            "{} is {}: real provider bundles ask at most {} ({SIZE_MARGIN} times that is allowed)",
                            leaf.at,
                            leaf.value,
                            max.map_or("nothing here".to_string(), |m| format!("{m:?}"))
                        ),
                    );
                }
            }
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment(pod: Value) -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "m", "namespace": "ns", "labels": {"a": "b"}},
            "spec": {"replicas": 1, "template": {"spec": pod}},
        })
    }

    fn refusals(bound: &FieldBound, object: &Value) -> Vec<(Rule, String)> {
        let mut out = Vec::new();
        let (group, kind) = group_kind(object).unwrap();
        let dynamic: DynamicObject = serde_json::from_value(object.clone()).unwrap();
        check(group, kind, &dynamic, bound, &mut |r, d| out.push((r, d)));
        out
    }

    #[test]
    fn paths_collapse_lists_and_free_map_keys() {
        let d = deployment(json!({
            "containers": [{"name": "a", "securityContext": {"runAsUser": 65532}}, {"name": "b", "env": []}],
            "nodeSelector": {"x": "y"},
            "priorityClassName": null,
        }));
        let leaves: Vec<(String, String)> = leaves(&d, schema::of_kind("apps", "Deployment"))
            .into_iter()
            .map(|l| (l.path, l.at))
            .collect();
        let has = |p: &str, at: &str| leaves.contains(&(p.to_string(), at.to_string()));
        assert!(has("metadata.labels[a]", "metadata.labels.a"), "{leaves:?}");
        assert!(has(
            "spec.template.spec.containers[].securityContext.runAsUser",
            "spec.template.spec.containers[0].securityContext.runAsUser"
        ));
        assert!(has(
            "spec.template.spec.containers[].env",
            "spec.template.spec.containers[1].env"
        ));
        assert!(has(
            "spec.template.spec.nodeSelector.*",
            "spec.template.spec.nodeSelector.x"
        ));
        assert!(
            !leaves.iter().any(|(p, _)| p.contains("priorityClassName")),
            "a null is absent"
        );
    }

    #[test]
    fn outside_paths_and_values_are_refused_by_name() {
        let real = deployment(json!({
            "priorityClassName": "system-cluster-critical",
            "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "a"}],
        }));
        let bound = FieldBound::of_objects([&real]);
        assert_eq!(refusals(&bound, &real), vec![]);
        let mut hostile = real.clone();
        hostile["spec"]["replicas"] = json!(500);
        hostile["spec"]["template"]["spec"]["priorityClassName"] = json!("system-node-critical");
        hostile["spec"]["template"]["spec"]["securityContext"]["seccompProfile"]["type"] =
            json!("Unconfined");
        hostile["spec"]["template"]["spec"]["containers"][0]["stdin"] = json!(true);
        hostile["spec"]["template"]["spec"]["containers"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "b", "stdin": false}));
        let found = refusals(&bound, &hostile);
        let text: Vec<String> = found.iter().map(|(r, d)| format!("{r}: {d}")).collect();
        assert_eq!(
            text,
            [
                "field-values-in-real-bundles-only: spec.replicas is 500: real provider bundles use at most 1",
                "fields-in-real-bundles-only: spec.template.spec.containers[0].stdin (spec.template.spec.containers[].stdin): no real provider bundle has this field of a Deployment",
                "field-values-in-real-bundles-only: spec.template.spec.priorityClassName is \"system-node-critical\": real provider bundles use only \"system-cluster-critical\"",
                "field-values-in-real-bundles-only: spec.template.spec.securityContext.seccompProfile.type is \"Unconfined\": real provider bundles use only \"RuntimeDefault\"",
            ],
            "{text:#?}"
        );
        // An extension allows both.
        let mut more = FieldBound::default();
        more.add_object(&hostile);
        assert_eq!(refusals(&bound.clone().with(&more), &hostile), vec![]);
    }

    /// Labels and annotations are bounded by key, per kind and place (issue 46, item 4): a pod
    /// annotation the API server turns into an unconfined AppArmor profile, or service-ca's alpha
    /// spelling, is refused where real bundles have neither; `[*]` in an extension allows any key.
    #[test]
    fn label_and_annotation_keys_are_bounded_by_place() {
        let mut real = deployment(json!({"containers": [{"name": "manager"}]}));
        real["metadata"]["annotations"] =
            json!({"controller-gen.kubebuilder.io/version": "v0.20.0"});
        real["spec"]["template"]["metadata"] = json!({"labels": {"control-plane": "controller-manager"}, "annotations": {"kubectl.kubernetes.io/default-container": "manager"}});
        let bound = FieldBound::of_objects([&real]);
        assert_eq!(refusals(&bound, &real), vec![]);
        let mut hostile = real.clone();
        hostile["spec"]["template"]["metadata"]["annotations"]["container.apparmor.security.beta.kubernetes.io/manager"] =
            json!("unconfined");
        hostile["metadata"]["annotations"]["service.alpha.openshift.io/serving-cert-secret-name"] =
            json!("capi-webhook-service-cert");
        // A key real bundles use at another place is still refused here.
        hostile["metadata"]["labels"] = json!({"control-plane": "controller-manager"});
        let text: Vec<String> = refusals(&bound, &hostile)
            .iter()
            .map(|(r, d)| format!("{r}: {d}"))
            .collect();
        assert_eq!(
            text,
            [
                "fields-in-real-bundles-only: metadata.annotations.service.alpha.openshift.io/serving-cert-secret-name (metadata.annotations[service.alpha.openshift.io/serving-cert-secret-name]): no real provider bundle has this field of a Deployment",
                "fields-in-real-bundles-only: metadata.labels.control-plane (metadata.labels[control-plane]): no real provider bundle has this field of a Deployment",
                "fields-in-real-bundles-only: spec.template.metadata.annotations.container.apparmor.security.beta.kubernetes.io/manager (spec.template.metadata.annotations[container.apparmor.security.beta.kubernetes.io/manager]): no real provider bundle has this field of a Deployment",
            ],
            "{text:#?}"
        );
        let mut every = FieldBound::default();
        every.kinds.insert(
            "Deployment.apps".into(),
            KindFields {
                paths: [
                    "metadata.annotations[*]",
                    "metadata.labels[*]",
                    "spec.template.metadata.annotations[*]",
                ]
                .map(String::from)
                .into(),
                ..Default::default()
            },
        );
        assert_eq!(refusals(&bound.clone().with(&every), &hostile), vec![]);
    }

    #[test]
    fn the_bound_reads_back_from_its_yaml_and_bad_data_is_named() {
        let real = deployment(json!({"containers": [{"name": "a"}], "priorityClassName": "p"}));
        let bound = FieldBound::of_objects([&real]);
        let cm = |data: Value| {
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "extra", "namespace": "ns", "labels": {LABEL: ""}},
                   "data": data})
        };
        let good = cm(json!({DATA_KEY: bound.to_yaml()}));
        let bad = cm(json!({DATA_KEY: "Deployment.apps: {paths: 3}"}));
        let unlabelled = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {DATA_KEY: "{{{"}});
        let (read, errors) = FieldBound::from_configmaps([&good, &bad, &unlabelled]);
        assert_eq!(read, bound);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0]
                .to_string()
                .starts_with("ConfigMap ns/extra: fields.yaml: "),
            "{}",
            errors[0]
        );
    }

    #[test]
    fn quantities_of_every_suffix_compare_by_value() {
        for (text, value) in [
            ("100m", 0.1),
            ("1", 1.0),
            ("1.5", 1.5),
            ("50Mi", 50.0 * 1024.0 * 1024.0),
            ("2Gi", 2.0 * 1024f64.powi(3)),
            ("1k", 1e3),
            ("1e3", 1e3),
            ("5E-3", 5e-3),
            ("3M", 3e6),
        ] {
            assert_eq!(parse_quantity(text), Some(value), "{text}");
        }
        for bad in ["", "Mi", "1Xi", "-1", "1.2.3", "1e"] {
            assert_eq!(parse_quantity(bad), None, "{bad}");
        }
        assert_eq!(
            keyed_path(
                "spec.template.spec.containers[].resources.requests.*",
                "spec.template.spec.containers[2].resources.requests.nvidia.com/gpu"
            ),
            "spec.template.spec.containers[].resources.requests.nvidia.com/gpu"
        );
    }

    /// A label or annotation whose key real bundles use may not carry a value of any size.
    #[test]
    fn label_and_annotation_values_are_short() {
        let real = deployment(json!({"containers": [{"name": "a"}]}));
        let bound = FieldBound::of_objects([&real]);
        let mut long = real.clone();
        long["metadata"]["labels"]["a"] = json!("b".repeat(METADATA_VALUE_MAX));
        assert_eq!(refusals(&bound, &long), vec![]);
        long["metadata"]["labels"]["a"] = json!("b".repeat(METADATA_VALUE_MAX + 1));
        assert_eq!(
            refusals(&bound, &long),
            vec![(
                Rule::FieldValue,
                format!(
                    "metadata.labels.a is {} bytes long: a label or annotation value of a provider bundle is at most {METADATA_VALUE_MAX}",
                    METADATA_VALUE_MAX + 1
                )
            )]
        );
    }

    #[test]
    fn sizes_are_bounded_with_a_margin_and_requests_per_resource() {
        let real = deployment(json!({
            "terminationGracePeriodSeconds": 10,
            "containers": [{"name": "a", "resources": {"requests": {"cpu": "10m", "memory": "50Mi"}}}],
        }));
        let bound = FieldBound::of_objects([&real]);
        assert_eq!(
            bound.kinds["Deployment.apps"].quantities,
            BTreeMap::from([
                (
                    "spec.template.spec.containers[].resources.requests.cpu".to_string(),
                    "10m".to_string()
                ),
                (
                    "spec.template.spec.containers[].resources.requests.memory".to_string(),
                    "50Mi".to_string()
                ),
            ])
        );
        // Within the margin: twice the real values, and a smaller one.
        let within = deployment(json!({
            "terminationGracePeriodSeconds": 20,
            "containers": [{"name": "a", "resources": {"requests": {"cpu": "0.02", "memory": "100Mi"}}}],
        }));
        assert_eq!(refusals(&bound, &within), vec![]);
        let hostile = deployment(json!({
            "terminationGracePeriodSeconds": 86400,
            "containers": [{"name": "a", "resources": {"requests": {"cpu": 64, "memory": "512Gi", "nvidia.com/gpu": "1"}}}],
        }));
        let found = refusals(&bound, &hostile);
        let details: Vec<&str> = found.iter().map(|(_, d)| d.as_str()).collect();
        assert!(
            found
                .iter()
                .all(|(r, _)| *r == Rule::FieldValue || *r == Rule::FieldPath),
            "{found:?}"
        );
        for expected in [
            "spec.template.spec.terminationGracePeriodSeconds is 86400: real provider bundles use at most 10 (2 times that is allowed)",
            "spec.template.spec.containers[0].resources.requests.cpu is 64: real provider bundles ask at most \"10m\" (2 times that is allowed)",
            "spec.template.spec.containers[0].resources.requests.memory is \"512Gi\": real provider bundles ask at most \"50Mi\" (2 times that is allowed)",
            "spec.template.spec.containers[0].resources.requests.nvidia.com/gpu is \"1\": real provider bundles ask at most nothing here (2 times that is allowed)",
        ] {
            assert!(
                details.contains(&expected),
                "{expected}\nnot in {details:#?}"
            );
        }
        // An administrator's field data raises a quantity as it raises a maximum.
        let mut raised = bound.clone();
        raised.extend(&FieldBound {
            kinds: BTreeMap::from([(
                "Deployment.apps".to_string(),
                KindFields {
                    quantities: BTreeMap::from([(
                        "spec.template.spec.containers[].resources.requests.memory".to_string(),
                        "1Ti".to_string(),
                    )]),
                    ..Default::default()
                },
            )]),
        });
        let details: Vec<String> = refusals(&raised, &hostile)
            .into_iter()
            .map(|(_, d)| d)
            .collect();
        assert!(
            !details.iter().any(|d| d.contains("requests.memory")),
            "{details:#?}"
        );
    }
}
