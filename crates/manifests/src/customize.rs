//! The build-time processing of a provider's rendered components (ref §1.1–§1.2, SPEC §3):
//! clusterctl-style namespace rewrite and labels, the per-kind OpenShift customizations, and the
//! InfraCluster-protection ValidatingAdmissionPolicy.
//!
//! The pipeline is: check the input (identity, duplicates) → gather what rules need from the
//! whole input (source namespaces, cert-manager Certificates, which Services back which
//! webhooks, the InfraCluster CRD) → transform object by object in input order → append the
//! protection policy and its binding. Every refusal names the object and the rule.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{Map, Value, json};

use crate::TARGET_NAMESPACE;
use crate::error::Error;
use crate::generator::GeneratorVersion;
use crate::metadata::Metadata;
use crate::object::{get_path, get_path_mut, get_str, metadata_map_mut, metadata_mut};
use crate::provider::{Provider, ProviderType};
use crate::transport::{FEATURE_SET_ANNOTATION, OPENSHIFT_ANNOTATIONS, TransportConfigMap};
use crate::yaml::{DocLocation, Object};
use capi_object::{ObjectKey, is_cluster_scoped};

pub const LABEL_CLUSTERCTL_PROVIDER: &str = "cluster.x-k8s.io/provider";
pub(crate) const LABEL_CLUSTERCTL: &str = "clusterctl.cluster.x-k8s.io";
pub(crate) const ANNOTATION_INJECT_CA_FROM: &str = "cert-manager.io/inject-ca-from";
pub(crate) const ANNOTATION_INJECT_CABUNDLE: &str = "service.beta.openshift.io/inject-cabundle";
pub(crate) const ANNOTATION_SERVING_CERT: &str =
    "service.beta.openshift.io/serving-cert-secret-name";
pub(crate) const ANNOTATION_WORKLOAD: &str = "target.workload.openshift.io/management";
pub(crate) const WORKLOAD_VALUE: &str = r#"{"effect": "PreferredDuringScheduling"}"#;
pub(crate) const IMAGE_PLACEHOLDER: &str = "to.be/replaced:v99";
pub const RELEASE_IMAGE_PREFIX: &str = "registry.ci.openshift.org";
pub(crate) const KUBE_RBAC_PROXY_IMAGE: &str =
    "registry.ci.openshift.org/openshift:kube-rbac-proxy";
pub(crate) const PROTECTION_POLICY_PREFIX: &str = "openshift-cluster-api-protect-";

const RULE_CERT: &str = "cert-manager → service-ca";
const RULE_PROTECTION: &str = "InfraCluster protection";

/// Provider-specific Deployment tweaks (ref §1.2), chosen by the name given on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    Generic,
    /// Secret keys of the Azure credentials remapped to the lower-case keys CCO writes.
    Azure,
    /// `GOOGLE_APPLICATION_CREDENTIALS` points at the file CCO writes.
    Gcp,
    /// `--provider-id-fmt=v2`; the provider is published as `ibmcloud`.
    PowerVs,
}

impl Flavor {
    /// The flavor for a command-line provider name and the name the provider is published under
    /// (clusterctl knows PowerVS as `ibmcloud`, ref §1.1 step 3).
    pub fn for_cli_name(name: &str) -> (Flavor, &str) {
        match name {
            "azure" => (Flavor::Azure, name),
            "gcp" => (Flavor::Gcp, name),
            "powervs" => (Flavor::PowerVs, "ibmcloud"),
            _ => (Flavor::Generic, name),
        }
    }
}

/// What the InfraCluster-protection policy protects: derived from a CRD of the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtectedKind {
    pub group: String,
    pub kind: String,
    pub plural: String,
}

impl ProtectedKind {
    /// `openshift-cluster-api-protect-<lower-case kind>` (e.g. `...-protect-awscluster`).
    pub fn policy_name(&self) -> String {
        format!("{PROTECTION_POLICY_PREFIX}{}", self.kind.to_lowercase())
    }
}

/// An input object that the kind allow-list removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    pub id: ObjectKey,
    pub location: DocLocation,
    pub reason: &'static str,
}

/// The customized objects, in input order, followed by the protection policy and binding.
#[derive(Debug, Clone, PartialEq)]
pub struct Customized {
    pub objects: Vec<Value>,
    pub dropped: Vec<Dropped>,
    pub protected: ProtectedKind,
}

/// What to do with a kind: the allow-list of ref §1.2. Anything else is dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Treatment {
    /// ClusterRole, Role, ClusterRoleBinding, RoleBinding, ServiceAccount.
    Rbac,
    Webhook,
    Crd,
    Service,
    Deployment,
    /// ValidatingAdmissionPolicy(Binding), ConfigMap.
    PassThrough,
    Drop(&'static str),
}

fn treatment(id: &ObjectKey) -> Treatment {
    treatment_of(id.group.as_str(), &id.kind)
}

/// The parameter kind (apiVersion, kind) of the InfraCluster protection policy the generator writes:
/// the policy compares the object's name with `Infrastructure/cluster`'s infrastructure name. The
/// installer's bundle policy allows it as the one parameter kind outside Cluster API.
pub const PROTECTION_PARAM_KIND: (&str, &str) = ("config.openshift.io/v1", "Infrastructure");

/// Whether objects of this group and kind may be part of transport components: the allow-list
/// that manifests-gen applies (everything else is dropped at build time) and that the installer's
/// bundle policy enforces at run time, one list for both.
pub fn kind_allowed(group: &str, kind: &str) -> bool {
    !matches!(treatment_of(group, kind), Treatment::Drop(_))
}

fn treatment_of(group: &str, kind: &str) -> Treatment {
    match (group, kind) {
        (
            "rbac.authorization.k8s.io",
            "ClusterRole" | "Role" | "ClusterRoleBinding" | "RoleBinding",
        )
        | ("", "ServiceAccount") => Treatment::Rbac,
        (
            "admissionregistration.k8s.io",
            "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration",
        ) => Treatment::Webhook,
        ("apiextensions.k8s.io", "CustomResourceDefinition") => Treatment::Crd,
        ("", "Service") => Treatment::Service,
        ("apps", "Deployment") => Treatment::Deployment,
        (
            "admissionregistration.k8s.io",
            "ValidatingAdmissionPolicy" | "ValidatingAdmissionPolicyBinding",
        )
        | ("", "ConfigMap") => Treatment::PassThrough,
        ("cert-manager.io", "Certificate" | "Issuer") => {
            Treatment::Drop("cert-manager object: service-ca provides serving certificates")
        }
        ("", "Namespace") => {
            Treatment::Drop("Namespace: the target namespace is created by the release payload")
        }
        ("", "Secret") => {
            Treatment::Drop("Secret: credentials come from the Cloud Credential Operator")
        }
        _ => Treatment::Drop("kind is not in the allow-list of transport components"),
    }
}

/// Applies the whole build-time processing to a provider's rendered components, as the current
/// reference generator does.
pub fn customize(
    provider: &Provider,
    flavor: Flavor,
    input: Vec<Object>,
) -> Result<Customized, Error> {
    customize_as(provider, flavor, None, input)
}

/// [`customize`] as the `vendored` version of the reference generator did it (`None`: the current).
pub fn customize_as(
    provider: &Provider,
    flavor: Flavor,
    vendored: Option<&GeneratorVersion>,
    input: Vec<Object>,
) -> Result<Customized, Error> {
    check_duplicates(&input, |o| o.id.clone())?;
    let scopes = Scopes::of(&input);
    // The namespace rewrite can make two objects of different namespaces the same object.
    check_duplicates(&input, |o| scopes.target_key(&o.id))?;
    let ctx = Context {
        provider,
        flavor,
        vendored,
        source_namespaces: source_namespaces(&input),
        scopes,
        serving: serving_certs(&input)?,
    };
    let protected = protected_kind(provider, flavor, &input)?;

    let mut objects = Vec::with_capacity(input.len() + 2);
    let mut dropped = Vec::new();
    let mut services_with_cert = BTreeSet::new();
    for obj in input {
        match treatment(&obj.id) {
            Treatment::Drop(reason) => dropped.push(Dropped {
                id: obj.id,
                location: obj.location,
                reason,
            }),
            t => objects.push(ctx.customize_object(t, obj, &mut services_with_cert)?),
        }
    }
    ctx.serving.check_issued(&services_with_cert)?;

    objects.extend(protection_objects(&protected));
    Ok(Customized {
        objects,
        dropped,
        protected,
    })
}

/// What the processing of one object needs to know about the whole input.
struct Context<'a> {
    provider: &'a Provider,
    flavor: Flavor,
    vendored: Option<&'a GeneratorVersion>,
    source_namespaces: BTreeSet<String>,
    scopes: Scopes,
    serving: ServingCerts,
}

impl Context<'_> {
    /// The processing of one kept object (`t` is its treatment, never `Drop`); notes each Service that
    /// ends up with a serving-certificate annotation in `services_with_cert`.
    fn customize_object(
        &self,
        t: Treatment,
        obj: Object,
        services_with_cert: &mut BTreeSet<String>,
    ) -> Result<Value, Error> {
        let Object {
            location,
            id,
            mut value,
        } = obj;
        clusterctl_process(
            self.provider,
            &id,
            &self.scopes,
            &self.source_namespaces,
            &mut value,
        );
        match t {
            Treatment::Rbac => replace_annotations(&mut value),
            Treatment::Webhook => {
                swap_ca_injection(&mut value);
            }
            Treatment::Crd => {
                swap_ca_injection(&mut value);
                merge_openshift_annotations(&mut value);
            }
            Treatment::Service => {
                merge_openshift_annotations(&mut value);
                let annotations = metadata_map_mut(&mut value, "annotations");
                if let Some(secret) = self.serving.from_cert_manager.get(&id.name) {
                    annotations.insert(
                        ANNOTATION_SERVING_CERT.to_owned(),
                        Value::from(secret.as_str()),
                    );
                }
                if annotations.contains_key(ANNOTATION_SERVING_CERT) {
                    services_with_cert.insert(id.name.clone());
                }
            }
            Treatment::Deployment => customize_deployment(self.flavor, &id, &location, &mut value)?,
            Treatment::PassThrough | Treatment::Drop(_) => {}
        }
        // The kinds the reference (the Deployment) and clusterctl (the rest, to move namespace
        // references) convert through the typed API.
        if matches!(
            (id.group.as_str(), id.kind.as_str()),
            ("apps", "Deployment")
                | (
                    "rbac.authorization.k8s.io",
                    "ClusterRoleBinding" | "RoleBinding"
                )
                | (
                    "admissionregistration.k8s.io",
                    "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration"
                )
                | ("apiextensions.k8s.io", "CustomResourceDefinition")
        ) {
            typed_round_trip(&mut value, &id.kind, self.vendored);
        }
        Ok(value)
    }
}

/// The provider's own namespaces: clusterctl reads them from its objects; subjects in other
/// namespaces (e.g. kube-system) are references to foreign ServiceAccounts and stay.
fn source_namespaces(input: &[Object]) -> BTreeSet<String> {
    input
        .iter()
        .filter_map(|o| {
            if o.id.kind == "Namespace" && o.id.group.is_empty() {
                Some(o.id.name.clone())
            } else {
                o.id.namespace.clone()
            }
        })
        .collect()
}

struct Scopes {
    custom_cluster_scoped: BTreeSet<(String, String)>,
}

impl Scopes {
    /// Kinds the input itself defines as cluster-scoped (e.g. CAPA's AWSClusterControllerIdentity):
    /// an instance shipped with the components must not be given a namespace either.
    fn of(input: &[Object]) -> Scopes {
        Scopes {
            custom_cluster_scoped: input
                .iter()
                .filter(|o| treatment(&o.id) == Treatment::Crd)
                .filter(|o| get_str(&o.value, &["spec", "scope"]) == Some("Cluster"))
                .filter_map(|o| {
                    Some((
                        get_str(&o.value, &["spec", "group"])?.to_owned(),
                        get_str(&o.value, &["spec", "names", "kind"])?.to_owned(),
                    ))
                })
                .collect(),
        }
    }

    /// An object's identity after the namespace rewrite.
    fn target_key(&self, id: &ObjectKey) -> ObjectKey {
        let mut id = id.clone();
        id.namespace = if self.cluster_scoped(&id) {
            None
        } else {
            Some(TARGET_NAMESPACE.to_owned())
        };
        id
    }

    fn cluster_scoped(&self, id: &ObjectKey) -> bool {
        is_cluster_scoped(id.group.as_str(), &id.kind)
            || self
                .custom_cluster_scoped
                .contains(&(id.group.as_str().to_owned(), id.kind.clone()))
    }
}

pub(crate) fn check_duplicates(
    input: &[Object],
    key: impl Fn(&Object) -> ObjectKey,
) -> Result<(), Error> {
    let mut seen: HashMap<ObjectKey, &DocLocation> = HashMap::with_capacity(input.len());
    for o in input {
        let k = key(o);
        if let Some(first) = seen.get(&k) {
            return Err(Error::DuplicateObject {
                object: Box::new(k),
                first: (*first).clone(),
                second: o.location.clone(),
            });
        }
        seen.insert(k, &o.location);
    }
    Ok(())
}

/// Namespace rewrite, reference fix-ups and labels, as `clusterctl` does them (ref §1.1).
fn clusterctl_process(
    provider: &Provider,
    id: &ObjectKey,
    scopes: &Scopes,
    source_namespaces: &BTreeSet<String>,
    value: &mut Value,
) {
    if scopes.cluster_scoped(id) {
        // A namespace on a cluster-scoped object is an error for server-side apply.
        metadata_mut(value).remove("namespace");
    } else {
        metadata_mut(value).insert("namespace".to_owned(), Value::from(TARGET_NAMESPACE));
    }
    let labels = metadata_map_mut(value, "labels");
    labels.insert(
        LABEL_CLUSTERCTL_PROVIDER.to_owned(),
        Value::from(provider.clusterctl_label()),
    );
    labels.insert(LABEL_CLUSTERCTL.to_owned(), Value::from(""));

    match (id.group.as_str(), id.kind.as_str()) {
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => {
            if let Some(subjects) = value.get_mut("subjects").and_then(Value::as_array_mut) {
                for s in subjects {
                    let is_sa = s.get("kind").and_then(Value::as_str) == Some("ServiceAccount");
                    let ns = s.get("namespace").and_then(Value::as_str);
                    if is_sa && ns.is_some_and(|ns| source_namespaces.contains(ns)) {
                        s["namespace"] = Value::from(TARGET_NAMESPACE);
                    }
                }
            }
        }
        (
            "admissionregistration.k8s.io",
            "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration",
        ) => {
            for wh in webhooks_mut(value) {
                if let Some(svc) =
                    get_path_mut(wh, &["clientConfig", "service"]).and_then(Value::as_object_mut)
                {
                    svc.insert("namespace".to_owned(), Value::from(TARGET_NAMESPACE));
                }
            }
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            if let Some(svc) = get_path_mut(
                value,
                &["spec", "conversion", "webhook", "clientConfig", "service"],
            )
            .and_then(Value::as_object_mut)
            {
                svc.insert("namespace".to_owned(), Value::from(TARGET_NAMESPACE));
            }
        }
        _ => {}
    }
}

fn webhooks_mut(value: &mut Value) -> impl Iterator<Item = &mut Value> {
    value
        .get_mut("webhooks")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
}

fn webhooks(value: &Value) -> impl Iterator<Item = &Value> {
    value
        .get("webhooks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn openshift_annotations() -> impl Iterator<Item = (&'static str, &'static str)> {
    OPENSHIFT_ANNOTATIONS
        .into_iter()
        .chain([FEATURE_SET_ANNOTATION])
}

/// RBAC objects and ServiceAccounts: upstream annotations (e.g. CAPA's IRSA role) are dropped.
fn replace_annotations(value: &mut Value) {
    let mut m = Map::new();
    for (k, v) in openshift_annotations() {
        m.insert(k.to_owned(), Value::from(v));
    }
    metadata_mut(value).insert("annotations".to_owned(), Value::Object(m));
}

fn merge_openshift_annotations(value: &mut Value) {
    let a = metadata_map_mut(value, "annotations");
    for (k, v) in openshift_annotations() {
        a.insert(k.to_owned(), Value::from(v));
    }
}

/// `cert-manager.io/inject-ca-from` → `service.beta.openshift.io/inject-cabundle: "true"`.
pub(crate) fn swap_ca_injection(value: &mut Value) {
    let a = metadata_map_mut(value, "annotations");
    if a.remove(ANNOTATION_INJECT_CA_FROM).is_some() {
        a.insert(ANNOTATION_INJECT_CABUNDLE.to_owned(), Value::from("true"));
    }
}

/// Which Services serve webhooks, and where their serving certificates come from.
#[derive(Debug, Default)]
pub(crate) struct ServingCerts {
    /// Service name → secret name, from the Certificates that webhook configurations and CRDs
    /// name in `cert-manager.io/inject-ca-from`: the Service gets the serving-cert annotation.
    pub(crate) from_cert_manager: BTreeMap<String, String>,
    /// Service name → the first object naming it, for webhook configurations and CRDs that the
    /// provider's kustomization already annotated for service-ca (OpenStack's does): the Service
    /// must carry the serving-cert annotation itself.
    service_ca_ready: BTreeMap<String, ObjectKey>,
}

/// The Services that a webhook configuration's webhooks (all of them, where the reference
/// looked at `webhooks[0]` only: a second Service without a certificate would serve nothing)
/// or a CRD's conversion webhook call.
fn webhook_services(t: Treatment, value: &Value) -> Vec<&str> {
    if t == Treatment::Webhook {
        webhooks(value)
            .filter_map(|wh| get_str(wh, &["clientConfig", "service", "name"]))
            .collect()
    } else {
        // A CRD whose conversion has no webhook (strategy None) has no service; the reference
        // dereferenced the missing webhook and crashed (ref §6.5).
        get_str(
            value,
            &[
                "spec",
                "conversion",
                "webhook",
                "clientConfig",
                "service",
                "name",
            ],
        )
        .into_iter()
        .collect()
    }
}

/// Whether every webhook of a configuration brings its own CA bundle (a static one: nothing to
/// inject, nothing to issue).
fn all_webhooks_have_ca_bundle(value: &Value) -> bool {
    webhooks(value).all(|wh| {
        get_path(wh, &["clientConfig", "caBundle"])
            .and_then(Value::as_str)
            .is_some_and(|b| !b.is_empty())
    })
}

impl ServingCerts {
    /// A webhook served by a Service that is not part of the components, or (service-ca-ready
    /// input) whose Service does not ask service-ca for a serving certificate, would never get
    /// one: the webhook would fail every TLS handshake. The reference wrote the annotation
    /// nowhere and moved on.
    pub(crate) fn check_issued(&self, services_with_cert: &BTreeSet<String>) -> Result<(), Error> {
        if let Some(svc) = self
            .from_cert_manager
            .keys()
            .find(|svc| !services_with_cert.contains(*svc))
        {
            return Err(Error::InputRule {
                rule: RULE_CERT,
                message: format!(
                    "Service {TARGET_NAMESPACE}/{svc} backs a cert-manager-injected webhook but is not part of the components"
                ),
            });
        }
        if let Some((svc, caller)) = self
            .service_ca_ready
            .iter()
            .find(|(svc, _)| !services_with_cert.contains(*svc))
        {
            return Err(Error::InputRule {
                rule: RULE_CERT,
                message: format!(
                    "{caller} is annotated {ANNOTATION_INJECT_CABUNDLE} and calls Service {TARGET_NAMESPACE}/{svc}, but no Service of that name among the components has the annotation {ANNOTATION_SERVING_CERT}: nothing would issue its serving certificate"
                ),
            });
        }
        Ok(())
    }
}

pub(crate) fn serving_certs(input: &[Object]) -> Result<ServingCerts, Error> {
    let certs: HashMap<&str, (&Object, Option<&str>)> = input
        .iter()
        .filter(|o| o.id.group.as_str() == "cert-manager.io" && o.id.kind == "Certificate")
        .map(|o| {
            (
                o.id.name.as_str(),
                (o, get_str(&o.value, &["spec", "secretName"])),
            )
        })
        .collect();
    let mut out = ServingCerts::default();
    let mut owner: BTreeMap<String, &ObjectKey> = BTreeMap::new();
    for o in input {
        let t = treatment(&o.id);
        if !matches!(t, Treatment::Webhook | Treatment::Crd) {
            continue;
        }
        let rule_err = |message: String| Error::Rule {
            object: Box::new(o.id.clone()),
            location: o.location.clone(),
            rule: RULE_CERT,
            message,
        };
        let annotation = |key: &str| get_str(&o.value, &["metadata", "annotations", key]);
        // With `inject-ca-from`, every called Service gets its certificate, whatever caBundle
        // the input carries (a placeholder caBundle is common; the installer strips caBundle
        // values anyway, service-ca owns them).
        let services = webhook_services(t, &o.value);
        let Some(inject) = annotation(ANNOTATION_INJECT_CA_FROM) else {
            if annotation(ANNOTATION_INJECT_CABUNDLE) == Some("true") {
                for svc in services {
                    out.service_ca_ready
                        .entry(svc.to_owned())
                        .or_insert_with(|| o.id.clone());
                }
            } else if t == Treatment::Webhook
                && !all_webhooks_have_ca_bundle(&o.value)
                && let Some(svc) = services.first()
            {
                return Err(rule_err(format!(
                    "webhooks call Service {svc} but the configuration has neither {ANNOTATION_INJECT_CA_FROM} nor {ANNOTATION_INJECT_CABUNDLE} annotation (and no caBundle): nothing would issue its serving certificate or inject its CA"
                )));
            }
            continue;
        };
        let cert_name = inject.rsplit('/').next().unwrap_or(inject);
        let Some((cert, secret)) = certs.get(cert_name) else {
            return Err(rule_err(format!(
                "{ANNOTATION_INJECT_CA_FROM} names Certificate {inject:?}, which is not among the components"
            )));
        };
        let secret = secret.filter(|s| !s.is_empty()).ok_or_else(|| {
            rule_err(format!(
                "{} has no spec.secretName, so the serving-cert secret of its Service is unknown",
                cert.id
            ))
        })?;
        for svc in services {
            if let Some(prev) = out.from_cert_manager.get(svc)
                && prev != secret
            {
                return Err(rule_err(format!(
                    "Service {svc} would need two serving-cert secrets: {prev} (from {}) and {secret}",
                    owner[svc]
                )));
            }
            out.from_cert_manager
                .insert(svc.to_owned(), secret.to_owned());
            owner.entry(svc.to_owned()).or_insert(&o.id);
        }
    }
    Ok(out)
}

fn customize_deployment(
    flavor: Flavor,
    id: &ObjectKey,
    location: &DocLocation,
    value: &mut Value,
) -> Result<(), Error> {
    let Some(pod) = get_path_mut(value, &["spec", "template"]).filter(|t| t.is_object()) else {
        return Err(Error::Rule {
            object: Box::new(id.clone()),
            location: location.clone(),
            rule: "Deployment hardening",
            message: "Deployment has no spec.template".to_owned(),
        });
    };
    {
        let tmpl = pod.as_object_mut().expect("checked");
        let md = tmpl
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if !md.is_object() {
            *md = Value::Object(Map::new());
        }
        let ann = md
            .as_object_mut()
            .expect("map")
            .entry("annotations")
            .or_insert_with(|| Value::Object(Map::new()));
        if !ann.is_object() {
            *ann = Value::Object(Map::new());
        }
        ann.as_object_mut()
            .expect("map")
            .insert(ANNOTATION_WORKLOAD.to_owned(), Value::from(WORKLOAD_VALUE));
    }
    let spec = pod
        .as_object_mut()
        .expect("checked")
        .entry("spec")
        .or_insert_with(|| Value::Object(Map::new()));
    if !spec.is_object() {
        *spec = Value::Object(Map::new());
    }
    spec["priorityClassName"] = Value::from(PRIORITY_CLASS);
    if let Some(containers) = spec.get_mut("containers").and_then(Value::as_array_mut) {
        for c in containers.iter_mut().filter(|c| c.is_object()) {
            // Provider tweaks first, as in the reference.
            apply_flavor(flavor, c);
            container_conventions(c);
            if c.get("name").and_then(Value::as_str) == Some("kube-rbac-proxy") {
                c["image"] = Value::from(KUBE_RBAC_PROXY_IMAGE);
            }
            // The release tooling substitutes the placeholder with the payload image; an upstream
            // image left in place would be pulled from the internet.
            let keep = c
                .get("image")
                .and_then(Value::as_str)
                .is_some_and(|i| i.starts_with(RELEASE_IMAGE_PREFIX));
            if !keep {
                c["image"] = Value::from(IMAGE_PLACEHOLDER);
            }
        }
    }
    Ok(())
}

/// What the reference's round trip of an object through the typed API leaves in it that the
/// rendered object may lack (`kind` names the type). The first generation converts Deployments
/// (itself) and, through clusterctl, (Cluster)RoleBindings, webhook configurations and CRDs; the newer
/// one Deployments only. Go writes the struct fields that have no `omitempty` even when empty:
/// a Deployment's `spec.strategy: {}` and `status: {}`, a CRD's `status` (empty `acceptedNames`, null
/// `conditions` and `storedVersions`); and `creationTimestamp: null` in the object's (and a pod
/// template's) metadata when the `vendored` generator was built before apimachinery's `omitzero`,
/// none (a null one removed) after. Fields the typed API does not know are kept: the fixtures have
/// none, and dropping them would lose what a newer API adds.
pub(crate) fn typed_round_trip(value: &mut Value, kind: &str, vendored: Option<&GeneratorVersion>) {
    let null_timestamp = vendored.is_some_and(GeneratorVersion::writes_null_creation_timestamp);
    let creation_timestamp = |md: &mut Map<String, Value>| {
        if null_timestamp {
            md.entry("creationTimestamp").or_insert(Value::Null);
        } else if md.get("creationTimestamp").is_some_and(Value::is_null) {
            md.remove("creationTimestamp");
        }
    };
    let Some(o) = value.as_object_mut() else {
        return;
    };
    if let Some(md) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        creation_timestamp(md);
    }
    match kind {
        "Deployment" => {
            if let Some(spec) = o.get_mut("spec").and_then(Value::as_object_mut) {
                spec.entry("strategy")
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Some(md) = spec
                    .get_mut("template")
                    .and_then(|t| t.get_mut("metadata"))
                    .and_then(Value::as_object_mut)
                {
                    creation_timestamp(md);
                }
            }
            o.entry("status")
                .or_insert_with(|| Value::Object(Map::new()));
        }
        "CustomResourceDefinition" => {
            o.entry("status").or_insert_with(|| {
                json!({
                    "acceptedNames": {"kind": "", "plural": ""},
                    "conditions": null,
                    "storedVersions": null,
                })
            });
        }
        _ => {}
    }
}

/// The priority class of every provider Deployment's pods (both generations of the reference).
pub(crate) const PRIORITY_CLASS: &str = "system-cluster-critical";

/// OpenShift's conventions for a provider container, the same in both generations of the reference:
/// requests replaced, limits removed, and the termination message taken from the log when the
/// container wrote none. Anything else under `resources` (e.g. `claims`) stays, as in the reference.
/// `container` is a map.
pub(crate) fn container_conventions(container: &mut Value) {
    let resources = container
        .as_object_mut()
        .expect("containers are maps")
        .entry("resources")
        .or_insert_with(|| Value::Object(Map::new()));
    if !resources.is_object() {
        *resources = Value::Object(Map::new());
    }
    let resources = resources.as_object_mut().expect("made an object");
    resources.insert(
        "requests".to_owned(),
        json!({"cpu": "10m", "memory": "50Mi"}),
    );
    resources.remove("limits");
    container["terminationMessagePolicy"] = Value::from("FallbackToLogsOnError");
}

/// The container the provider tweaks apply to. The reference rewrites only the provider's own
/// controller, the container named `manager`: a sidecar that happens to read the same variable
/// or take the same argument is left as its author wrote it.
const MANAGER_CONTAINER: &str = "manager";

/// The Azure credential variables and the Secret keys the Cloud Credential Operator writes for
/// them (the variable name, lower-cased).
const AZURE_CREDENTIAL_ENV: [&str; 4] = [
    "AZURE_SUBSCRIPTION_ID",
    "AZURE_TENANT_ID",
    "AZURE_CLIENT_ID",
    "AZURE_CLIENT_SECRET",
];

fn apply_flavor(flavor: Flavor, container: &mut Value) {
    if flavor == Flavor::Generic
        || container.get("name").and_then(Value::as_str) != Some(MANAGER_CONTAINER)
    {
        return;
    }
    fn env(container: &mut Value) -> impl Iterator<Item = &mut Value> {
        container
            .get_mut("env")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
    }
    match flavor {
        Flavor::Generic => {}
        Flavor::Azure => {
            // Matched on the variable name, whatever key upstream reads it from (CAPZ's
            // `subscription-id`, ...): the credentials Secret CCO writes has only the
            // lower-cased variable names as keys. A variable without a Secret reference (a
            // literal value) has no key to remap and stays (the reference would crash on it).
            for env in env(container) {
                let Some(name) = env.get("name").and_then(Value::as_str) else {
                    continue;
                };
                if !AZURE_CREDENTIAL_ENV.contains(&name) {
                    continue;
                }
                let lower = name.to_lowercase();
                if let Some(key) =
                    get_path_mut(env, &["valueFrom", "secretKeyRef"]).and_then(Value::as_object_mut)
                {
                    key.insert("key".to_owned(), Value::from(lower));
                }
            }
        }
        Flavor::Gcp => {
            for env in env(container) {
                if env.get("name").and_then(Value::as_str) == Some("GOOGLE_APPLICATION_CREDENTIALS")
                {
                    env["value"] = Value::from("/home/.gcp/service_account.json");
                }
            }
        }
        Flavor::PowerVs => {
            for arg in container
                .get_mut("args")
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                if arg.as_str() == Some("--provider-id-fmt=${PROVIDER_ID_FORMAT:=v1}") {
                    *arg = Value::from("--provider-id-fmt=v2");
                }
            }
        }
    }
}

/// The kind whose deletion the protection policy blocks, read from the input's CRDs (SPEC §3):
/// core protects `clusters.cluster.x-k8s.io`; an infrastructure provider its InfraCluster, the
/// CRD of group `infrastructure.cluster.x-k8s.io` whose kind is `<name>cluster` (or, for
/// providers whose kinds carry a prefix such as PowerVS's `IBMPowerVSCluster`, the one kind
/// ending so). The reference built the name from the provider name and so protected nothing for
/// core and PowerVS (ref §6.11).
pub(crate) fn protected_kind(
    provider: &Provider,
    flavor: Flavor,
    input: &[Object],
) -> Result<ProtectedKind, Error> {
    let crds: Vec<ProtectedKind> = input
        .iter()
        .filter(|o| treatment(&o.id) == Treatment::Crd)
        .filter_map(|o| {
            Some(ProtectedKind {
                group: get_str(&o.value, &["spec", "group"])?.to_owned(),
                kind: get_str(&o.value, &["spec", "names", "kind"])?.to_owned(),
                plural: get_str(&o.value, &["spec", "names", "plural"])?.to_owned(),
            })
        })
        .collect();
    let base = match flavor {
        Flavor::PowerVs => "powervs",
        _ => provider.name.as_str(),
    };
    let found: Vec<&ProtectedKind> = match provider.provider_type {
        ProviderType::Core => crds
            .iter()
            .filter(|c| c.group == "cluster.x-k8s.io" && c.plural == "clusters")
            .collect(),
        ProviderType::Infrastructure => {
            let want = format!("{base}cluster");
            let infra: Vec<&ProtectedKind> = crds
                .iter()
                .filter(|c| c.group == "infrastructure.cluster.x-k8s.io")
                .collect();
            let exact: Vec<&ProtectedKind> = infra
                .iter()
                .copied()
                .filter(|c| c.kind.to_lowercase() == want)
                .collect();
            if exact.is_empty() {
                infra
                    .into_iter()
                    .filter(|c| c.kind.to_lowercase().ends_with(&want))
                    .collect()
            } else {
                exact
            }
        }
    };
    match found.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(Error::InputRule {
            rule: RULE_PROTECTION,
            message: match provider.provider_type {
                ProviderType::Core => {
                    "no CRD clusters.cluster.x-k8s.io among the core components".to_owned()
                }
                ProviderType::Infrastructure => format!(
                    "provider {} has no CRD of group infrastructure.cluster.x-k8s.io whose kind is (or ends with) {}Cluster, ignoring case: the InfraCluster to protect",
                    provider.name, base
                ),
            },
        }),
        many => Err(Error::InputRule {
            rule: RULE_PROTECTION,
            message: format!(
                "several CRDs could be the InfraCluster of provider {}: {}",
                provider.name,
                many.iter()
                    .map(|c| c.kind.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }),
    }
}

/// The InfraCluster-protection policy and binding: deleting the object named after the
/// cluster's `infrastructureName` is denied. No labels: like the reference, they are added
/// after the clusterctl processing.
pub(crate) fn protection_objects(p: &ProtectedKind) -> [Value; 2] {
    protection_policy(&p.policy_name(), &p.group, &p.plural)
}

/// The protection policy `name` and its binding, for the resource `plural` of API group `group`.
pub(crate) fn protection_policy(name: &str, group: &str, plural: &str) -> [Value; 2] {
    [
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {"resourceRules": [{
                    "apiGroups": [group],
                    "apiVersions": ["*"],
                    "operations": ["DELETE"],
                    "resources": [plural],
                }]},
                "paramKind": {"apiVersion": PROTECTION_PARAM_KIND.0, "kind": PROTECTION_PARAM_KIND.1},
                "validations": [{
                    "expression": "!(oldObject.metadata.name == params.status.infrastructureName)",
                    "message": "InfraCluster resources with metadata.name corresponding to the cluster infrastructureName cannot be deleted.",
                }],
            },
        }),
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {
                "matchResources": {"namespaceSelector": {"matchLabels": {
                    "kubernetes.io/metadata.name": TARGET_NAMESPACE,
                }}},
                "paramRef": {"name": "cluster", "parameterNotFoundAction": "Deny"},
                "policyName": name,
                "validationActions": ["Deny"],
            },
        }),
    ]
}

/// Where the uncompressed review copy goes, relative to the provider repository root.
pub const REVIEW_COPY_PATH: &str = "openshift/infrastructure-components-openshift.yaml";

/// Everything `manifests-gen` produces for one provider.
#[derive(Debug, Clone, PartialEq)]
pub struct Generated {
    pub provider: Provider,
    /// The transport ConfigMap, serialized and size-checked.
    pub configmap_yaml: String,
    /// The uncompressed, customized components (the review copy).
    pub components_yaml: String,
    pub dropped: Vec<Dropped>,
    pub protected: ProtectedKind,
}

impl Generated {
    /// `0000_30_cluster-api_04_cm.<core|infrastructure>-<name>.yaml`
    pub fn configmap_file_name(&self) -> String {
        format!(
            "0000_30_cluster-api_04_cm.{}.yaml",
            self.provider.file_stem()
        )
    }
}

/// Parses, checks and customizes rendered components and wraps them with the metadata into a
/// transport ConfigMap, as the current reference generator does. `*_source` name the inputs in
/// errors.
pub fn generate(
    provider: &Provider,
    flavor: Flavor,
    components_source: &str,
    components: &str,
    metadata_source: &str,
    metadata: &str,
) -> Result<Generated, Error> {
    generate_as(
        provider,
        flavor,
        None,
        (components_source, components),
        (metadata_source, metadata),
    )
}

/// [`generate`] as the `vendored` version of the reference generator did it (`None`: the
/// current); the inputs as (source, text).
pub fn generate_as(
    provider: &Provider,
    flavor: Flavor,
    vendored: Option<&GeneratorVersion>,
    (components_source, components): (&str, &str),
    (metadata_source, metadata): (&str, &str),
) -> Result<Generated, Error> {
    Metadata::parse(metadata_source, metadata)?;
    let objects = crate::yaml::parse_objects(components_source, components)?;
    if objects.is_empty() {
        return Err(Error::NoObjects {
            source_name: components_source.to_string(),
        });
    }
    let customized = customize_as(provider, flavor, vendored, objects)?;
    // As the reference writes them: the ConfigMap's components without a final line break, the
    // review copy with one (its `ensureNewLine`).
    let components = crate::goyaml::from_unstructured(&customized.objects);
    let components_yaml = format!("{components}\n");
    let configmap_yaml = TransportConfigMap {
        provider: provider.clone(),
        metadata: metadata.to_owned(),
        components,
    }
    .to_yaml_as(vendored.is_some_and(GeneratorVersion::writes_null_creation_timestamp))?;
    Ok(Generated {
        provider: provider.clone(),
        configmap_yaml,
        components_yaml,
        dropped: customized.dropped,
        protected: customized.protected,
    })
}
