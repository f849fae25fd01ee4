//! The newer generation of manifests-gen (ref §1.4–§1.6): a provider's rendered kustomization
//! becomes an image-based profile, `<profile>/{manifests.yaml,metadata.yaml[,manifests-summary.yaml]}`
//! (the layout of [`crate::profile`], which the installer reads).
//!
//! The pipeline: the generator's KRM functions ([`crate::transformers`]) on kustomize's output →
//! the newer generation's customizations, object by object in order → the InfraCluster protection
//! policies → the files. Unlike the first generation ([`crate::customize`]) there is no namespace
//! rewrite, no labels and no kind allow-list: the generator's kustomize Component already moved
//! everything into `openshift-cluster-api`, and the fork's kustomization says what the provider is.
//! What is left:
//!
//! - cert-manager → service-ca, as in the first generation: `cert-manager.io/inject-ca-from` on
//!   webhook configurations and CRDs becomes `service.beta.openshift.io/inject-cabundle: "true"`, and
//!   the Services they call get `service.beta.openshift.io/serving-cert-secret-name` (the Secret of
//!   the Certificate named); cert-manager objects (`cert-manager.io`), Namespaces and Secrets are
//!   not written.
//! - Deployments: `priorityClassName: system-cluster-critical`; every container gets requests
//!   `cpu: 10m, memory: 50Mi`, no limits, `terminationMessagePolicy: FallbackToLogsOnError`, and must
//!   run an image of `registry.ci.openshift.org` (the only registry the release tooling maps).
//! - A ValidatingAdmissionPolicy and binding `openshift-cluster-api-protect-<singular>` for each CRD
//!   whose singular name is `--protect-cluster-resource` (without it: each CRD of group
//!   `infrastructure.cluster.x-k8s.io` whose plural ends in `clusters`), after all other objects.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use crate::customize::{
    ANNOTATION_SERVING_CERT, ANNOTATION_WORKLOAD, Dropped, PRIORITY_CLASS, WORKLOAD_VALUE,
    check_duplicates, container_conventions, kind_allowed, protection_policy, serving_certs,
    swap_ca_injection, typed_round_trip,
};
use crate::error::Error;
use crate::generator::GeneratorVersion;
use crate::goyaml;
use crate::object::{get_path_mut, get_str, metadata_map_mut};
use crate::profile::{
    MANIFESTS_FILE, METADATA_FILE, OCP_PLATFORM_TYPES, ProfileMetadata, SUMMARY_FILE,
    validate_profile_name,
};
use crate::transformers::{self, Config, Function};
use crate::yaml::{DocLocation, Object, parse_objects};
use capi_object::ObjectKey;

/// The only registry whose images the release tooling replaces with the release's.
pub(crate) const RELEASE_REGISTRY: &str = "registry.ci.openshift.org";
const INFRASTRUCTURE_GROUP: &str = "infrastructure.cluster.x-k8s.io";

const RULE_DEPLOYMENT: &str = "Deployment conventions";
const RULE_PROTECTION: &str = "InfraCluster protection";

/// What the command line says about the profile (the reference's flags).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProfileOptions {
    /// `--name`: the component, e.g. `cluster-api-provider-aws`.
    pub name: String,
    /// `--profile-name`: the profile's folder (default `default`).
    pub profile: String,
    /// `--platform`: the `Infrastructure` platform type the profile is for.
    pub platform: Option<String>,
    /// `--install-order`.
    pub install_order: i64,
    /// `--attribute k=v`, repeatable.
    pub attributes: BTreeMap<String, String>,
    /// `--self-image-ref`: the provider's own image as the manifests name it.
    pub self_image_ref: Option<String>,
    /// `--protect-cluster-resource`: the singular name of the CRD to protect.
    pub protect_cluster_resource: Option<String>,
    /// `--manifests-summary`: also write `manifests-summary.yaml`.
    pub summary: bool,
    /// The version of the reference generator the fork vendors (its kustomize Component's), when
    /// known: the generator adds what the Component of that version did not (see
    /// [`GeneratorVersion`]). `None`: the current one.
    pub vendored: Option<GeneratorVersion>,
}

/// One file of a profile: its name in the profile's folder and its content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileFile {
    pub name: &'static str,
    pub content: String,
}

/// Everything one run writes and reports.
#[derive(Debug, Clone, PartialEq)]
pub struct GeneratedProfile {
    /// `manifests.yaml`, `metadata.yaml` and, when asked for, `manifests-summary.yaml`.
    pub files: Vec<ProfileFile>,
    /// What the KRM functions did.
    pub transformed: transformers::Report,
    /// Objects not written (cert-manager objects, Namespaces, Secrets).
    pub dropped: Vec<Dropped>,
    /// The protection policies written, by name.
    pub protected: Vec<String>,
    /// What works but is probably not meant (a function line that matched nothing, a kind the
    /// installer's bundle policy refuses, a selfImageRef no manifest uses).
    pub warnings: Vec<String>,
}

/// Checks the options the way the profile will be read: the reference's platform types, a usable
/// profile folder name, attribute keys, and the metadata the installer's reader accepts.
pub fn validate_options(options: &ProfileOptions) -> Result<(), Error> {
    let err = |message: String| Error::ProfileOption { message };
    if options.name.trim().is_empty() {
        return Err(err("--name is required".to_owned()));
    }
    validate_profile_name(&options.profile).map_err(|m| err(format!("--profile-name: {m}")))?;
    if let Some(p) = &options.platform
        && !OCP_PLATFORM_TYPES.contains(&p.as_str())
    {
        return Err(err(format!(
            "--platform {p:?} is not an OpenShift platform type; use one of {}",
            OCP_PLATFORM_TYPES.join(", ")
        )));
    }
    if options.attributes.contains_key("") {
        return Err(err("--attribute with an empty key".to_owned()));
    }
    let metadata = metadata_yaml(options)?;
    ProfileMetadata::parse(METADATA_FILE, &metadata).map_err(|e| err(e.to_string()))?;
    Ok(())
}

/// `metadata.yaml`: the reference's `ProviderMetadata`, empty fields left out as Go's `omitempty`
/// leaves them.
fn metadata_yaml(options: &ProfileOptions) -> Result<String, Error> {
    let mut m = Map::new();
    m.insert("name".to_owned(), Value::from(options.name.as_str()));
    if !options.attributes.is_empty() {
        m.insert("attributes".to_owned(), json!(options.attributes));
    }
    if let Some(p) = options.platform.as_deref().filter(|p| !p.is_empty()) {
        m.insert("ocpPlatform".to_owned(), Value::from(p));
    }
    if let Some(r) = options.self_image_ref.as_deref().filter(|r| !r.is_empty()) {
        m.insert("selfImageRef".to_owned(), Value::from(r));
    }
    if options.install_order != 0 {
        m.insert(
            "installOrder".to_owned(),
            Value::from(options.install_order),
        );
    }
    Ok(goyaml::marshal(&Value::Object(m)))
}

/// Generates a profile from kustomize's output (`components`, named by `components_source` in
/// errors), the native `functions` and their `config`.
pub fn generate_profile(
    options: &ProfileOptions,
    components_source: &str,
    components: &str,
    functions: &[Function],
    config: &Config,
) -> Result<GeneratedProfile, Error> {
    validate_options(options)?;
    let objects = parse_objects(components_source, components)?;
    check_duplicates(&objects, |o| o.id.clone())?;
    let (objects, transformed) = transformers::apply(functions, config, objects)?;
    // A rename can make two objects one.
    check_duplicates(&objects, |o| o.id.clone())?;
    let mut warnings = transformed.unused.clone();
    let customized = customize(
        objects,
        options.protect_cluster_resource.as_deref(),
        options.vendored.as_ref(),
    )?;
    let final_objects: Vec<Object> = customized
        .objects
        .iter()
        .enumerate()
        .map(|(index, value)| Object {
            location: DocLocation {
                index,
                ..DocLocation::generated(MANIFESTS_FILE)
            },
            id: ObjectKey::from_value(value).expect("every written object has an identity"),
            value: value.clone(),
        })
        .collect();
    // The protection policies are new objects: one of them may clash with the provider's own.
    check_duplicates(&final_objects, |o| o.id.clone())?;
    for o in &final_objects {
        if !kind_allowed(&o.id.group, &o.id.kind) {
            warnings.push(format!(
                "{}: the installer's bundle policy refuses this kind (allowed-kinds); it installs only with --policy-allow-group",
                o.id
            ));
        }
    }
    let manifests = goyaml::join_documents(&customized.objects);
    if let Some(r) = options.self_image_ref.as_deref().filter(|r| !r.is_empty())
        && !manifests.contains(r)
    {
        warnings.push(format!(
            "selfImageRef {r} appears nowhere in the manifests: the installer will replace nothing with the release image"
        ));
    }
    let mut files = vec![
        ProfileFile {
            name: MANIFESTS_FILE,
            content: manifests,
        },
        ProfileFile {
            name: METADATA_FILE,
            content: metadata_yaml(options)?,
        },
    ];
    if options.summary {
        files.push(ProfileFile {
            name: SUMMARY_FILE,
            content: summary_yaml(&final_objects)?,
        });
    }
    Ok(GeneratedProfile {
        files,
        transformed,
        dropped: customized.dropped,
        protected: customized.protected,
        warnings,
    })
}

/// `manifests-summary.yaml`: every object's apiVersion, kind, name and namespace (when it has one),
/// sorted by kind, apiVersion, namespace, name, as the reference sorts them.
fn summary_yaml(objects: &[Object]) -> Result<String, Error> {
    let mut entries: Vec<(&str, String, &str, &str)> = objects
        .iter()
        .map(|o| {
            (
                o.id.kind.as_str(),
                o.id.api_version(),
                // As written: the namespace kustomize left on a cluster-scoped kind too.
                get_str(&o.value, &["metadata", "namespace"]).unwrap_or(""),
                o.id.name.as_str(),
            )
        })
        .collect();
    entries.sort();
    let list: Vec<Value> = entries
        .into_iter()
        .map(|(kind, api_version, namespace, name)| {
            let mut m = Map::new();
            m.insert("apiVersion".to_owned(), Value::from(api_version));
            m.insert("kind".to_owned(), Value::from(kind));
            m.insert("name".to_owned(), Value::from(name));
            if !namespace.is_empty() {
                m.insert("namespace".to_owned(), Value::from(namespace));
            }
            Value::Object(m)
        })
        .collect();
    Ok(goyaml::marshal(&Value::Array(list)))
}

struct Customized {
    objects: Vec<Value>,
    dropped: Vec<Dropped>,
    protected: Vec<String>,
}

/// The newer generation's per-object customizations (module docs), in input order, then the
/// protection policies.
fn customize(
    objects: Vec<Object>,
    protect: Option<&str>,
    vendored: Option<&GeneratorVersion>,
) -> Result<Customized, Error> {
    let serving = serving_certs(&objects)?;
    let mut out = Customized {
        objects: Vec::with_capacity(objects.len() + 2),
        dropped: Vec::new(),
        protected: Vec::new(),
    };
    let mut policies = Vec::new();
    let mut services_with_cert = BTreeSet::new();
    for mut o in objects {
        match (o.id.group.as_str(), o.id.kind.as_str()) {
            (
                "admissionregistration.k8s.io",
                "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration",
            ) => swap_ca_injection(&mut o.value),
            ("apiextensions.k8s.io", "CustomResourceDefinition") => {
                swap_ca_injection(&mut o.value);
                if let Some((name, group, plural)) = protection_target(&o.value, protect) {
                    policies.extend(protection_policy(&name, group, plural));
                    out.protected.push(name);
                }
            }
            ("", "Service") => {
                if let Some(secret) = serving.from_cert_manager.get(&o.id.name) {
                    metadata_map_mut(&mut o.value, "annotations").insert(
                        ANNOTATION_SERVING_CERT.to_owned(),
                        Value::from(secret.as_str()),
                    );
                }
                if get_str(
                    &o.value,
                    &["metadata", "annotations", ANNOTATION_SERVING_CERT],
                )
                .is_some()
                {
                    services_with_cert.insert(o.id.name.clone());
                }
            }
            ("", "Namespace") => {
                out.dropped.push(dropped(
                    o,
                    "Namespace: the target namespace is created by the release payload",
                ));
                continue;
            }
            ("", "Secret") => {
                out.dropped.push(dropped(
                    o,
                    "Secret: credentials come from the Cloud Credential Operator",
                ));
                continue;
            }
            ("cert-manager.io", _) => {
                out.dropped.push(dropped(
                    o,
                    "cert-manager object: service-ca provides serving certificates",
                ));
                continue;
            }
            ("apps", "Deployment") => customize_deployment(&mut o, vendored)?,
            _ => {}
        }
        out.objects.push(o.value);
    }
    serving.check_issued(&services_with_cert)?;
    if let Some(singular) = protect
        && out.protected.is_empty()
    {
        return Err(Error::InputRule {
            rule: RULE_PROTECTION,
            message: format!(
                "--protect-cluster-resource {singular}: no CRD among the components has the singular name {singular:?}"
            ),
        });
    }
    out.objects.extend(policies);
    Ok(out)
}

fn dropped(o: Object, reason: &'static str) -> Dropped {
    Dropped {
        id: o.id,
        location: o.location,
        reason,
    }
}

/// Whether a CRD is one the protection policy covers: the one whose singular name is `protect`,
/// else (no `protect`) every InfraCluster-like CRD. Returns the policy name, group and plural. A
/// CRD without `spec.names.singular` has the lower-cased kind, as the API server defaults it.
fn protection_target<'a>(
    crd: &'a Value,
    protect: Option<&str>,
) -> Option<(String, &'a str, &'a str)> {
    let group = get_str(crd, &["spec", "group"])?;
    let plural = get_str(crd, &["spec", "names", "plural"])?;
    let singular = get_str(crd, &["spec", "names", "singular"])
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .or_else(|| get_str(crd, &["spec", "names", "kind"]).map(str::to_lowercase))?;
    let covered = match protect {
        Some(p) => singular == p,
        None => group == INFRASTRUCTURE_GROUP && plural.ends_with("clusters"),
    };
    covered.then(|| {
        (
            format!("{}{singular}", crate::customize::PROTECTION_POLICY_PREFIX),
            group,
            plural,
        )
    })
}

fn customize_deployment(o: &mut Object, vendored: Option<&GeneratorVersion>) -> Result<(), Error> {
    let rule_err = |message: String| Error::Rule {
        object: Box::new(o.id.clone()),
        location: o.location.clone(),
        rule: RULE_DEPLOYMENT,
        message,
    };
    let Some(pod) =
        get_path_mut(&mut o.value, &["spec", "template", "spec"]).filter(|s| s.is_object())
    else {
        return Err(rule_err("Deployment has no spec.template.spec".to_owned()));
    };
    pod["priorityClassName"] = Value::from(PRIORITY_CLASS);
    let mut wrong_registry = None;
    if let Some(containers) = pod.get_mut("containers").and_then(Value::as_array_mut) {
        for c in containers.iter_mut().filter(|c| c.is_object()) {
            container_conventions(c);
            let name = get_str(c, &["name"]).unwrap_or("").to_owned();
            let image = get_str(c, &["image"]).unwrap_or("");
            let registry = image_registry(image);
            if registry != RELEASE_REGISTRY && wrong_registry.is_none() {
                wrong_registry = Some((name, image.to_owned(), registry.to_owned()));
            }
        }
    }
    if let Some((name, image, registry)) = wrong_registry {
        return Err(rule_err(format!(
            "container {name:?} runs image {image:?} of registry {registry:?}: only images of {RELEASE_REGISTRY} are replaced by the release's, so the kustomization's images: must map it there"
        )));
    }
    if vendored.is_some_and(GeneratorVersion::adds_workload_annotation) {
        let template = get_path_mut(&mut o.value, &["spec", "template"]).expect("checked above");
        metadata_map_mut(template, "annotations")
            .insert(ANNOTATION_WORKLOAD.to_owned(), Value::from(WORKLOAD_VALUE));
    }
    typed_round_trip(&mut o.value, &o.id.kind, vendored);
    Ok(())
}

/// The registry of an image reference as container tools read it: the part before the first `/`
/// when it is a host name (has a `.` or a `:`, or is `localhost`), else Docker Hub.
fn image_registry(image: &str) -> &str {
    match image.split_once('/') {
        Some((host, _)) if host.contains(['.', ':']) || host == "localhost" => host,
        _ => "index.docker.io",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> ProfileOptions {
        ProfileOptions {
            name: "cluster-api-provider-foo".to_owned(),
            profile: "default".to_owned(),
            platform: Some("AWS".to_owned()),
            install_order: 20,
            attributes: BTreeMap::from([
                ("type".to_owned(), "infrastructure".to_owned()),
                ("version".to_owned(), "v1.2.3".to_owned()),
            ]),
            self_image_ref: Some("registry.ci.openshift.org/openshift:foo".to_owned()),
            protect_cluster_resource: Some("foocluster".to_owned()),
            summary: true,
            vendored: None,
        }
    }

    const COMPONENTS: &str = r#"apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: serving-cert, namespace: openshift-cluster-api}
spec: {secretName: foo-webhook-cert}
---
apiVersion: v1
kind: Service
metadata: {name: foo-webhook, namespace: openshift-cluster-api}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: fooclusters.infrastructure.cluster.x-k8s.io
  annotations: {cert-manager.io/inject-ca-from: openshift-cluster-api/serving-cert}
spec:
  group: infrastructure.cluster.x-k8s.io
  names: {kind: FooCluster, plural: fooclusters, singular: foocluster}
  conversion:
    strategy: Webhook
    webhook: {clientConfig: {service: {name: foo-webhook, namespace: openshift-cluster-api}}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: foomanagedclusters.infrastructure.cluster.x-k8s.io}
spec:
  group: infrastructure.cluster.x-k8s.io
  names: {kind: FooManagedCluster, plural: foomanagedclusters}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: foo-validating
  annotations: {cert-manager.io/inject-ca-from: openshift-cluster-api/serving-cert}
webhooks:
- name: v.foo
  clientConfig: {service: {name: foo-webhook, namespace: openshift-cluster-api}}
---
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: openshift-cluster-api}
---
apiVersion: v1
kind: Namespace
metadata: {name: openshift-cluster-api}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: foo-manager, namespace: openshift-cluster-api}
spec:
  strategy: {type: Recreate}
  template:
    spec:
      containers:
      - name: manager
        image: registry.ci.openshift.org/openshift:foo
        resources:
          limits: {cpu: "1"}
          requests: {cpu: 100m}
          claims: [{name: gpu}]
      initContainers:
      - name: init
        image: quay.io/other:1
"#;

    fn generate(options: &ProfileOptions, components: &str) -> Result<GeneratedProfile, Error> {
        generate_profile(options, "components", components, &[], &Config::default())
    }

    fn file<'a>(g: &'a GeneratedProfile, name: &str) -> &'a str {
        &g.files.iter().find(|f| f.name == name).unwrap().content
    }

    #[test]
    fn the_newer_generations_customizations() {
        let g = generate(&options(), COMPONENTS).unwrap();
        let docs = crate::yaml::parse_documents("out", file(&g, MANIFESTS_FILE)).unwrap();
        let kinds: Vec<&str> = docs
            .iter()
            .map(|d| d.value["kind"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            [
                "Service",
                "CustomResourceDefinition",
                "CustomResourceDefinition",
                "ValidatingWebhookConfiguration",
                "Deployment",
                "ValidatingAdmissionPolicy",
                "ValidatingAdmissionPolicyBinding"
            ],
            "input order, cert-manager objects, Secret and Namespace dropped, policies last"
        );
        let v = |i: usize| &docs[i].value;
        assert_eq!(
            v(0)["metadata"]["annotations"],
            json!({"service.beta.openshift.io/serving-cert-secret-name": "foo-webhook-cert"})
        );
        for i in [1, 3] {
            assert_eq!(
                v(i)["metadata"]["annotations"],
                json!({"service.beta.openshift.io/inject-cabundle": "true"})
            );
        }
        // No namespace rewrite, no labels: the kustomize Component did that.
        assert!(v(4)["metadata"].get("labels").is_none());
        let pod = &v(4)["spec"]["template"]["spec"];
        assert_eq!(pod["priorityClassName"], "system-cluster-critical");
        assert_eq!(
            pod["containers"][0]["resources"],
            json!({"requests": {"cpu": "10m", "memory": "50Mi"}, "claims": [{"name": "gpu"}]})
        );
        assert_eq!(
            pod["containers"][0]["terminationMessagePolicy"],
            "FallbackToLogsOnError"
        );
        assert_eq!(
            pod["initContainers"][0],
            json!({"name": "init", "image": "quay.io/other:1"}),
            "as the reference: containers only"
        );
        assert_eq!(v(4)["spec"]["strategy"], json!({"type": "Recreate"}));
        assert_eq!(
            v(5)["metadata"]["name"],
            "openshift-cluster-api-protect-foocluster"
        );
        assert_eq!(
            v(5)["spec"]["matchConstraints"]["resourceRules"][0]["resources"],
            json!(["fooclusters"])
        );
        assert_eq!(
            v(6)["spec"]["policyName"],
            "openshift-cluster-api-protect-foocluster"
        );
        assert_eq!(g.protected, ["openshift-cluster-api-protect-foocluster"]);
        let dropped: Vec<String> = g.dropped.iter().map(|d| d.id.to_string()).collect();
        assert_eq!(
            dropped,
            [
                "Certificate openshift-cluster-api/serving-cert",
                "Secret openshift-cluster-api/creds",
                "Namespace openshift-cluster-api"
            ]
        );
        assert!(g.warnings.is_empty(), "{:?}", g.warnings);
    }

    #[test]
    fn metadata_and_summary_as_the_reference_writes_them() {
        let g = generate(&options(), COMPONENTS).unwrap();
        assert_eq!(
            file(&g, METADATA_FILE),
            "attributes:\n  type: infrastructure\n  version: v1.2.3\ninstallOrder: 20\nname: cluster-api-provider-foo\nocpPlatform: AWS\nselfImageRef: registry.ci.openshift.org/openshift:foo\n"
        );
        let core = ProfileOptions {
            name: "cluster-api".to_owned(),
            platform: None,
            install_order: 0,
            attributes: BTreeMap::new(),
            self_image_ref: None,
            protect_cluster_resource: None,
            summary: false,
            ..options()
        };
        let g = generate(&core, COMPONENTS).unwrap();
        assert_eq!(
            file(&g, METADATA_FILE),
            "name: cluster-api\n",
            "empty fields left out"
        );
        assert_eq!(g.files.len(), 2, "no summary unless asked");
        // Without --protect-cluster-resource: every InfraCluster-like CRD, the singular defaulted.
        assert_eq!(
            g.protected,
            [
                "openshift-cluster-api-protect-foocluster",
                "openshift-cluster-api-protect-foomanagedcluster"
            ]
        );

        let g = generate(&options(), COMPONENTS).unwrap();
        let summary = file(&g, SUMMARY_FILE);
        let entries: Vec<String> = crate::yaml::parse_documents("s", summary).unwrap()[0]
            .value
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                format!(
                    "{} {} {}",
                    e["kind"].as_str().unwrap(),
                    e["apiVersion"].as_str().unwrap(),
                    e.get("namespace").and_then(Value::as_str).unwrap_or("-")
                )
            })
            .collect();
        assert_eq!(
            entries,
            [
                "CustomResourceDefinition apiextensions.k8s.io/v1 -",
                "CustomResourceDefinition apiextensions.k8s.io/v1 -",
                "Deployment apps/v1 openshift-cluster-api",
                "Service v1 openshift-cluster-api",
                "ValidatingAdmissionPolicy admissionregistration.k8s.io/v1 -",
                "ValidatingAdmissionPolicyBinding admissionregistration.k8s.io/v1 -",
                "ValidatingWebhookConfiguration admissionregistration.k8s.io/v1 -",
            ]
        );
        assert!(summary.starts_with("- apiVersion: apiextensions.k8s.io/v1\n  kind: CustomResourceDefinition\n  name: fooclusters."), "{summary}");
    }

    #[test]
    fn what_cannot_become_a_profile_is_refused() {
        let with = |f: &dyn Fn(&mut ProfileOptions)| {
            let mut o = options();
            f(&mut o);
            generate(&o, COMPONENTS).unwrap_err().to_string()
        };
        for (err, want) in [
            (
                with(&|o| o.name = String::new()),
                "invalid profile: --name is required",
            ),
            (
                with(&|o| o.platform = Some("aws".into())),
                "invalid profile: --platform \"aws\" is not an OpenShift platform type; use one of AWS, Azure,",
            ),
            (
                with(&|o| o.profile = "a/b".into()),
                "invalid profile: --profile-name: profile name \"a/b\"",
            ),
            (
                with(&|o| {
                    o.attributes.insert(String::new(), "x".into());
                }),
                "invalid profile: --attribute with an empty key",
            ),
            (
                with(&|o| {
                    o.attributes.insert("type".into(), "bootstrap".into());
                }),
                "invalid profile: metadata.yaml: invalid profile metadata: attributes.type is \"bootstrap\"",
            ),
            (
                with(&|o| o.protect_cluster_resource = Some("barcluster".into())),
                "rule \"InfraCluster protection\": --protect-cluster-resource barcluster: no CRD among the components has the singular name \"barcluster\"",
            ),
        ] {
            assert!(err.starts_with(want), "{want}\n{err}");
        }
        let docker_hub = COMPONENTS.replace(
            "image: registry.ci.openshift.org/openshift:foo",
            "image: gcr.io/k8s-staging/foo:main",
        );
        let err = generate(&options(), &docker_hub).unwrap_err().to_string();
        assert!(
            err.starts_with("Deployment openshift-cluster-api/foo-manager (components: document 7 (line 46)): rule \"Deployment conventions\": container \"manager\" runs image \"gcr.io/k8s-staging/foo:main\" of registry \"gcr.io\""),
            "{err}"
        );
        let twice = format!(
            "{COMPONENTS}---\napiVersion: v1\nkind: Service\nmetadata: {{name: foo-webhook, namespace: openshift-cluster-api}}\n"
        );
        let err = generate(&options(), &twice).unwrap_err().to_string();
        assert!(
            err.starts_with("duplicate object Service openshift-cluster-api/foo-webhook"),
            "{err}"
        );
        let unserved = COMPONENTS.replace(
            "metadata: {name: foo-webhook, namespace: openshift-cluster-api}\n---",
            "metadata: {name: other, namespace: openshift-cluster-api}\n---",
        );
        let err = generate(&options(), &unserved).unwrap_err().to_string();
        assert!(err.contains("Service openshift-cluster-api/foo-webhook backs a cert-manager-injected webhook but is not part of the components"), "{err}");
    }

    #[test]
    fn registries_are_read_as_container_tools_read_them() {
        for (image, registry) in [
            (
                "registry.ci.openshift.org/openshift:aws",
                "registry.ci.openshift.org",
            ),
            ("localhost/x:1", "localhost"),
            ("host:5000/x", "host:5000"),
            ("library/busybox", "index.docker.io"),
            ("busybox", "index.docker.io"),
            ("", "index.docker.io"),
        ] {
            assert_eq!(image_registry(image), registry, "{image}");
        }
    }

    #[test]
    fn warnings_say_what_is_probably_not_meant() {
        let mut o = options();
        o.self_image_ref = Some("registry.ci.openshift.org/openshift:bar".to_owned());
        let daemonset = format!(
            "{COMPONENTS}---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: ds, namespace: openshift-cluster-api}}\n"
        );
        let g = generate(&o, &daemonset).unwrap();
        assert_eq!(g.warnings.len(), 2, "{:?}", g.warnings);
        assert!(g.warnings[0].starts_with("DaemonSet openshift-cluster-api/ds: the installer's bundle policy refuses this kind"), "{:?}", g.warnings);
        assert!(
            g.warnings[1].starts_with(
                "selfImageRef registry.ci.openshift.org/openshift:bar appears nowhere"
            ),
            "{:?}",
            g.warnings
        );
    }
}
