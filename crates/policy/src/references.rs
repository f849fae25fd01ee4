//! Each provider keeps to its own (issue 29): what a bundle names by name — Secrets and ConfigMaps its
//! pods read, serving certificates its Services ask service-ca for, the pod labels other Services
//! select, the resources its admission acts on — is its own, never another provider's or the
//! cluster's.
//!
//! Within one bundle ([`pod_references`], [`serving_certificate`]): a pod reads only Secrets its own
//! Services' serving certificates become, the credentials Secret the Cloud Credential Operator writes
//! for this provider ([`CREDENTIALS`]), and ConfigMaps of the bundle. Across the providers of a round
//! ([`Holdings`], gathered by the planner in install order, and the cluster's CRDs): no serving
//! certificate another provider asks for, no pod labels another provider's Services select, no Service
//! selecting another provider's pods, no admission on a resource another provider's CRDs (or the
//! cluster's) serve.

use std::collections::{BTreeMap, BTreeSet};

use kube_core::DynamicObject;
use serde_json::Value;

use super::config::PolicyConfig;
use super::index::{Bundle, serving_secrets};
use super::provider_bound;
use super::report::{Report, Rule, items, quoted};
use capi_apply::ObjectKey;

/// The credentials Secrets real bundles read, each with the one provider (its `cluster.x-k8s.io/provider`
/// label) whose bundle names it: the Cloud Credential Operator writes them for that provider, from
/// its CredentialsRequest. Derived from every bundle of `../shared/fixtures` (transport ConfigMaps,
/// profiles, manifests-gen profiles); no bundle reads another Secret it does not create.
pub const CREDENTIALS: [(&str, &str); 5] = [
    ("infrastructure-aws", "capa-manager-bootstrap-credentials"),
    ("infrastructure-azure", "capz-manager-bootstrap-credentials"),
    ("infrastructure-gcp", "capg-manager-bootstrap-credentials"),
    (
        "infrastructure-ibmcloud",
        "capi-ibmcloud-manager-bootstrap-credentials",
    ),
    (
        "infrastructure-vsphere",
        "capv-manager-bootstrap-credentials",
    ),
];

/// What one provider's plan holds that no other may reach.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Holdings {
    /// Its `cluster.x-k8s.io/provider` label.
    pub provider: String,
    /// The Secrets its pods read or its Services ask service-ca for.
    pub secrets: BTreeSet<String>,
    /// Its Services' selectors, by Service name.
    pub selectors: Vec<(String, BTreeMap<String, String>)>,
    /// Its pod templates' labels, by Deployment name.
    pub pod_labels: Vec<(String, BTreeMap<String, String>)>,
    /// (group, plural) of its CRDs.
    pub resources: BTreeSet<(String, String)>,
}

impl Holdings {
    /// What the objects of `provider`'s plan hold.
    pub fn of<'a>(provider: &str, objects: impl IntoIterator<Item = &'a DynamicObject>) -> Self {
        let mut h = Holdings {
            provider: provider.to_string(),
            ..Default::default()
        };
        for object in objects {
            let kind = object.types.as_ref().map_or("", |t| t.kind.as_str());
            let name = object.metadata.name.clone().unwrap_or_default();
            let data = &object.data;
            match kind {
                "Service" => {
                    for (_, secret) in serving_secrets(object) {
                        h.secrets.insert(secret.to_string());
                    }
                    let selector = string_map(data.pointer("/spec/selector"));
                    if !selector.is_empty() {
                        h.selectors.push((name, selector));
                    }
                }
                "Deployment" => {
                    let labels = string_map(data.pointer("/spec/template/metadata/labels"));
                    if let Some(pod) = data.pointer("/spec/template/spec") {
                        for (_, secret) in secret_names(pod) {
                            h.secrets.insert(secret.to_string());
                        }
                    }
                    h.pod_labels.push((name, labels));
                }
                "CustomResourceDefinition" => {
                    let text = |p: &str| data.pointer(p).and_then(Value::as_str).unwrap_or("");
                    h.resources.insert((
                        text("/spec/group").to_string(),
                        text("/spec/names/plural").to_string(),
                    ));
                }
                _ => {}
            }
        }
        h
    }
}

/// What a bundle is judged among: which provider it is, the providers planned before it in this
/// round, and who holds the cluster's CRDs ((group, plural) → a provider's label, or "" for a CRD no
/// provider of this installer wrote).
#[derive(Debug, Clone, Copy)]
pub struct Among<'a> {
    pub provider: &'a str,
    pub others: &'a [Holdings],
    pub cluster: &'a BTreeMap<(String, String), String>,
}

impl<'a> Among<'a> {
    /// A bundle judged alone (offline checks, tests): `provider` and nothing else of the round.
    pub fn alone(provider: &'a str) -> Self {
        static NONE: BTreeMap<(String, String), String> = BTreeMap::new();
        Among {
            provider,
            others: &[],
            cluster: &NONE,
        }
    }

    /// `others`: the providers planned before this one in the round (never itself).
    pub fn new(
        provider: &'a str,
        others: &'a [Holdings],
        cluster: &'a BTreeMap<(String, String), String>,
    ) -> Self {
        Among {
            provider,
            others,
            cluster,
        }
    }

    /// Who else holds resource `plural` of `group`: another provider's CRD, or the cluster's.
    pub(crate) fn holder_of(&self, group: &str, plural: &str) -> Option<String> {
        for h in self.others {
            if h.resources
                .iter()
                .any(|(g, p)| g == group && (p == plural || plural == "*"))
            {
                return Some(format!("provider {}", h.provider));
            }
        }
        self.cluster
            .iter()
            .find(|((g, p), holder)| {
                g == group && (p == plural || plural == "*") && holder.as_str() != self.provider
            })
            .map(|(_, holder)| match holder.as_str() {
                "" => "the cluster (a CRD no provider installed)".to_string(),
                other => format!("provider {other}"),
            })
    }
}

/// Every Secret a pod names, with the field path (relative to the pod spec).
fn secret_names(pod: &Value) -> Vec<(String, &str)> {
    named(pod)
        .into_iter()
        .filter(|r| r.kind == Named::Secret)
        .map(|r| (r.at, r.name))
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Named {
    Secret,
    ConfigMap,
}

struct Reference<'v> {
    kind: Named,
    at: String,
    name: &'v str,
}

/// Every Secret and ConfigMap a pod spec names: volumes (and projected sources), `env[].valueFrom`,
/// `envFrom` of every container list, and `imagePullSecrets`.
fn named(pod: &Value) -> Vec<Reference<'_>> {
    let mut out = Vec::new();
    fn push<'v>(out: &mut Vec<Reference<'v>>, kind: Named, at: String, name: Option<&'v Value>) {
        if let Some(name) = name.and_then(Value::as_str) {
            out.push(Reference { kind, at, name });
        }
    }
    let mut add = |kind, at, name| push(&mut out, kind, at, name);
    for (i, volume) in items(pod.get("volumes")) {
        let at = format!("volumes[{i}]");
        add(
            Named::Secret,
            format!("{at}.secret.secretName"),
            volume.pointer("/secret/secretName"),
        );
        add(
            Named::ConfigMap,
            format!("{at}.configMap.name"),
            volume.pointer("/configMap/name"),
        );
        for (j, source) in items(volume.pointer("/projected/sources")) {
            let at = format!("{at}.projected.sources[{j}]");
            add(
                Named::Secret,
                format!("{at}.secret.name"),
                source.pointer("/secret/name"),
            );
            add(
                Named::ConfigMap,
                format!("{at}.configMap.name"),
                source.pointer("/configMap/name"),
            );
        }
    }
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        for (i, c) in items(pod.get(list)) {
            let at = format!("{list}[{i}]");
            for (j, env) in items(c.get("env")) {
                add(
                    Named::Secret,
                    format!("{at}.env[{j}].valueFrom.secretKeyRef.name"),
                    env.pointer("/valueFrom/secretKeyRef/name"),
                );
                add(
                    Named::ConfigMap,
                    format!("{at}.env[{j}].valueFrom.configMapKeyRef.name"),
                    env.pointer("/valueFrom/configMapKeyRef/name"),
                );
            }
            for (j, from) in items(c.get("envFrom")) {
                add(
                    Named::Secret,
                    format!("{at}.envFrom[{j}].secretRef.name"),
                    from.pointer("/secretRef/name"),
                );
                add(
                    Named::ConfigMap,
                    format!("{at}.envFrom[{j}].configMapRef.name"),
                    from.pointer("/configMapRef/name"),
                );
            }
        }
    }
    for (i, secret) in items(pod.get("imagePullSecrets")) {
        add(
            Named::Secret,
            format!("imagePullSecrets[{i}].name"),
            secret.get("name"),
        );
    }
    out
}

/// The credentials Secret of `provider`, if real bundles of it read one.
fn credentials_of(provider: &str) -> Option<&'static str> {
    CREDENTIALS
        .iter()
        .find(|(p, _)| *p == provider)
        .map(|(_, s)| *s)
}

/// A pod reads only its bundle's own Secrets and ConfigMaps.
pub(super) fn pod_references(
    pod: &Value,
    at: &str,
    bundle: &Bundle,
    among: &Among<'_>,
    v: &mut Report<'_>,
) {
    let own_credentials = credentials_of(among.provider);
    for r in named(pod) {
        let own = match r.kind {
            Named::Secret => {
                bundle.serving_secrets.contains(r.name) || own_credentials == Some(r.name)
            }
            Named::ConfigMap => bundle.configmaps.contains(r.name),
        };
        if own {
            continue;
        }
        let (what, whose) = match r.kind {
            Named::Secret => (
                "Secret",
                "a serving certificate one of its own Services asks for, or its credentials",
            ),
            Named::ConfigMap => ("ConfigMap", "a ConfigMap of this bundle"),
        };
        v(
            Rule::References,
            format!(
                "{at}.{} names {what} {:?}, which is not this provider's own: a pod reads only {whose}{}",
                r.at,
                r.name,
                match own_credentials {
                    Some(c) if r.kind == Named::Secret => format!(" ({c:?})"),
                    _ => String::new(),
                }
            ),
        );
    }
}

/// The Secret a Service asks service-ca for is this provider's alone: never a credentials Secret,
/// one of the installer's, or one another provider reads or asks for (service-ca would write its
/// certificate there, and the other provider's pods would serve with a key this one holds).
pub(super) fn serving_certificate(
    object: &DynamicObject,
    config: &PolicyConfig,
    among: &Among<'_>,
    v: &mut Report<'_>,
) {
    for (annotation, secret) in serving_secrets(object) {
        serving_secret(annotation, secret, object, config, among, v);
    }
}

/// One Secret a Service asks service-ca for with `annotation` ([`serving_certificate`]).
fn serving_secret(
    annotation: &str,
    secret: &str,
    object: &DynamicObject,
    config: &PolicyConfig,
    among: &Among<'_>,
    v: &mut Report<'_>,
) {
    let at = format!("metadata.annotations[{annotation}] {secret:?}");
    let namespace = object.metadata.namespace.as_deref();
    if let Some((provider, _)) = CREDENTIALS.iter().find(|(_, s)| *s == secret) {
        v(
            Rule::References,
            format!("{at} is the credentials Secret of provider {provider}"),
        );
    } else if let Some(why) = config
        .protected
        .reason(&ObjectKey::new("", "v1", "Secret", namespace, secret))
    {
        v(Rule::References, format!("{at}: {why}"));
    }
    if let Some(h) = among.others.iter().find(|h| h.secrets.contains(secret)) {
        v(
            Rule::ProvidersApart,
            format!("{at} is a Secret of provider {}", h.provider),
        );
    }
}

/// Pod labels no other provider's Service and no Service of the release selects, and Services that
/// select no other provider's pods: a Service selects on its own provider's label, a pod carries no
/// other provider's ([`provider_bound`]); the providers of the round are compared too, to name whom a
/// label would reach.
pub(super) fn labels_and_selectors(
    key: &ObjectKey,
    data: &Value,
    among: &Among<'_>,
    v: &mut Report<'_>,
) {
    let label = provider_bound::PROVIDER_LABEL;
    match key.kind.as_str() {
        "Deployment" => {
            let at = "spec.template.metadata.labels";
            let pod = data.pointer("/spec/template/metadata/labels");
            if let Some(other) = provider_bound::provider_of(pod).filter(|p| *p != among.provider) {
                v(
                    Rule::ProvidersApart,
                    format!(
                        "{at}[{label}] is {other:?}, not {:?}: the pods would be reached by that provider's Services",
                        among.provider
                    ),
                );
            }
            let labels = string_map(pod);
            for (service, selector) in provider_bound::RELEASE_SELECTORS {
                let selector: BTreeMap<String, String> = selector
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect();
                if selects(&selector, &labels) {
                    v(
                        Rule::ProvidersApart,
                        format!(
                            "{at} match the selector of the release's Service {service}: that Service would send its traffic to these pods"
                        ),
                    );
                }
            }
            for h in among.others {
                for (service, selector) in &h.selectors {
                    if selects(selector, &labels) {
                        v(
                            Rule::ProvidersApart,
                            format!(
                                "{at} match the selector of Service {service} of provider {}: that Service would send its traffic to these pods",
                                h.provider
                            ),
                        );
                    }
                }
            }
        }
        "Service" => {
            let selector = string_map(data.pointer("/spec/selector"));
            if selector.is_empty() {
                return;
            }
            if selector.get(label).map(String::as_str) != Some(among.provider) {
                v(
                    Rule::ProvidersApart,
                    format!(
                        "spec.selector does not select on {label}: {:?}: a provider's Service reaches only its own pods",
                        among.provider
                    ),
                );
            }
            for h in among.others {
                for (deployment, labels) in &h.pod_labels {
                    if selects(&selector, labels) {
                        v(
                            Rule::ProvidersApart,
                            format!(
                                "spec.selector selects the pods of Deployment {deployment} of provider {}",
                                h.provider
                            ),
                        );
                    }
                }
            }
        }
        _ => {}
    }
}

/// An admission rule acts only on resources its own bundle's CRDs define (and the few real bundles
/// name besides, [`provider_bound::ADMISSION_BEYOND_CRDS`]), whoever else serves them: groups are
/// shared (every infrastructure provider serves `infrastructure.cluster.x-k8s.io`), resources are not.
/// The message names who holds a resource when the round or the cluster shows it.
pub(super) fn admission_resources(
    rule: &Value,
    at: &str,
    bundle: &Bundle,
    among: &Among<'_>,
    v: &mut Report<'_>,
) {
    let groups: Vec<&str> = items(rule.get("apiGroups"))
        .filter_map(|(_, g)| g.as_str())
        .collect();
    let resources: Vec<&str> = items(rule.get("resources"))
        .filter_map(|(_, r)| r.as_str())
        .collect();
    let mut outside = Vec::new();
    for group in &groups {
        for resource in &resources {
            let plural = resource.split('/').next().unwrap_or(resource);
            if bundle
                .resources
                .contains(&(group.to_string(), plural.to_string()))
                || provider_bound::admission_beyond_crds(among.provider, group, plural)
            {
                continue;
            }
            outside.push(match among.holder_of(group, plural) {
                Some(holder) => format!("{resource}.{group} ({holder})"),
                None => format!("{resource}.{group}"),
            });
        }
    }
    if !outside.is_empty() {
        let outside: Vec<&str> = outside.iter().map(String::as_str).collect();
        v(
            Rule::ProvidersApart,
            format!(
                "{at} acts on {}: a provider's admission acts only on the resources its own CRDs define",
                quoted(&outside)
            ),
        );
    }
}

/// Whether `selector` (equality on every key) selects pods labelled `labels`.
fn selects(selector: &BTreeMap<String, String>, labels: &BTreeMap<String, String>) -> bool {
    !selector.is_empty() && selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

fn string_map(value: Option<&Value>) -> BTreeMap<String, String> {
    value
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect()
}
