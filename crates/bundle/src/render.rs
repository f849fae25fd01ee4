//! Rendering a provider's components for this cluster: variable substitution, image references,
//! fields the installer must not own. Pure functions over text and JSON values.

use std::collections::BTreeMap;

use serde_json::Value;

/// The image placeholder manifests-gen writes for the provider's own controller image.
pub const IMAGE_PLACEHOLDER: &str = "to.be/replaced:v99";
/// Release image references that manifests-gen leaves for the installer to resolve by key.
pub const RELEASE_IMAGE_PREFIX: &str = "registry.ci.openshift.org/openshift:";

/// The substitutions the reference installer makes on every cluster (both generations); an
/// administrator's value for the same variable wins ([`with_defaults`]).
///
/// `EXP_BOOTSTRAP_FORMAT_IGNITION=true`: OpenShift boots its machines from Ignition, but the AWS
/// provider's `BootstrapFormatIgnition` gate defaults to `false`, and with it off the provider's webhook
/// refuses every AWSMachine that carries `spec.ignition`.
pub const DEFAULT_SUBSTITUTIONS: &[(&str, &str)] = &[("EXP_BOOTSTRAP_FORMAT_IGNITION", "true")];

/// [`DEFAULT_SUBSTITUTIONS`] overlaid with `given` (the administrator's `--substitutions`).
pub fn with_defaults(given: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut all: BTreeMap<String, String> = DEFAULT_SUBSTITUTIONS
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    all.extend(given.iter().map(|(k, v)| (k.clone(), v.clone())));
    all
}

pub use crate::envsubst::{SubstitutionError, Template};

/// Replaces every `${...}` expression of `template` with values from `variables`, with
/// drone/envsubst's meaning, as both of the reference's generations evaluate them ([`crate::envsubst`]):
/// an unknown variable reads as the empty string, so `${VAR:=default}` takes its default.
///
/// `$$` is envsubst's escape, as clusterctl and the reference have it: it becomes one `$`, and what
/// follows it is text (`$${VAR}` is the literal `${VAR}`). CRD descriptions quote Kubernetes' own
/// `$$(VAR)` escape that way, and read `$(VAR)` once installed, as with the reference. A bare `$NAME`
/// (common in CRD descriptions and regular expressions) is text, as in drone/envsubst. Variables never
/// come from the process environment (ref §6.15: `HOME` and friends leaked into manifests that way).
pub fn substitute(
    template: &Template,
    variables: &BTreeMap<String, String>,
) -> Result<String, SubstitutionError> {
    template.expand(&|name| variables.get(name).cloned())
}

/// The release's image references: key → image (the images JSON file).
pub type Images = BTreeMap<String, String>;

/// A container image the installer cannot resolve.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ImageError {
    #[error(
        "{path}: image {image} needs the provider image, but this ConfigMap's provider has no image key"
    )]
    NoProviderImage { path: String, image: String },
    #[error("{path}: image {image} needs key {key:?}, which the images file does not have")]
    MissingKey {
        path: String,
        image: String,
        key: String,
    },
}

impl ImageError {
    /// The image as the manifests wrote it.
    pub fn image(&self) -> &str {
        match self {
            ImageError::NoProviderImage { image, .. } | ImageError::MissingKey { image, .. } => {
                image
            }
        }
    }
}

/// Resolves every container image of `object` (any `containers`/`initContainers`/`ephemeralContainers`
/// list at any depth, so pod templates inside any kind are covered): the placeholder becomes the image of
/// `provider_image_key`, a `registry.ci.openshift.org/openshift:<key>` reference becomes `images[key]`.
/// Every occurrence is replaced, unlike the reference's first-occurrence text replacement (ref §6.9), and
/// a missing key is an error rather than an empty image.
pub fn resolve_images(
    object: &mut Value,
    provider_image_key: Option<&str>,
    images: &Images,
) -> Result<(), ImageError> {
    let mut errors = Ok(());
    walk_containers(
        object,
        &mut String::new(),
        &mut |path, image| {
            let resolved = if image == IMAGE_PLACEHOLDER {
                let Some(key) = provider_image_key else {
                    return Err(ImageError::NoProviderImage {
                        path: path.into(),
                        image: image.into(),
                    });
                };
                lookup(images, key, path, image)?
            } else if let Some(key) = image.strip_prefix(RELEASE_IMAGE_PREFIX) {
                lookup(images, key, path, image)?
            } else {
                return Ok(None);
            };
            Ok(Some(resolved))
        },
        &mut errors,
    );
    errors
}

fn lookup(images: &Images, key: &str, path: &str, image: &str) -> Result<String, ImageError> {
    images
        .get(key)
        .cloned()
        .ok_or_else(|| ImageError::MissingKey {
            path: path.into(),
            image: image.into(),
            key: key.into(),
        })
}

type ImageFn<'a> = dyn FnMut(&str, &str) -> Result<Option<String>, ImageError> + 'a;

fn walk_containers(
    value: &mut Value,
    path: &mut String,
    f: &mut ImageFn<'_>,
    result: &mut Result<(), ImageError>,
) {
    match value {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
                let is_container_list = matches!(
                    key.as_str(),
                    "containers" | "initContainers" | "ephemeralContainers"
                );
                if let (true, Value::Array(items)) = (is_container_list, &mut *child) {
                    for (i, item) in items.iter_mut().enumerate() {
                        let item_path = format!("{path}[{i}].image");
                        if let Some(Value::String(image)) = item.get_mut("image") {
                            match f(&item_path, image) {
                                Ok(Some(new)) => *image = new,
                                Ok(None) => {}
                                Err(e) => {
                                    if result.is_ok() {
                                        *result = Err(e);
                                    }
                                }
                            }
                        }
                    }
                } else {
                    walk_containers(child, path, f, result);
                }
                path.truncate(len);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                walk_containers(item, path, f, result);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

/// Removes the fields another controller owns, so that server-side apply leaves them to it instead of
/// fighting over them on every reconcile. Returns the paths removed, for the log.
///
/// - every `caBundle`: service-ca injects and owns them, and applying one (even an empty one) would take
///   the field over and break conversion and admission webhooks (ref §6.4);
/// - `rules` of a ClusterRole with an `aggregationRule`: the clusterrole-aggregation controller fills
///   them; applying the manifest's (usually empty) list would undo its work on every reconcile.
pub fn strip_fields_owned_elsewhere(object: &mut Value) -> Vec<String> {
    let mut removed = Vec::new();
    strip(object, &mut String::new(), &mut removed);
    if object.get("kind").and_then(Value::as_str) == Some("ClusterRole")
        && object.get("aggregationRule").is_some_and(|r| !r.is_null())
        && let Some(map) = object.as_object_mut()
        && map.remove("rules").is_some()
    {
        removed.push("rules".into());
    }
    removed
}

fn strip(value: &mut Value, path: &mut String, removed: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            // Only a value is removed: an object under `caBundle` is a schema definition (a CRD's
            // openAPIV3Schema declaring the field), which must stay.
            if map.get("caBundle").is_some_and(Value::is_string) {
                map.remove("caBundle");
                removed.push(if path.is_empty() {
                    "caBundle".into()
                } else {
                    format!("{path}.caBundle")
                });
            }
            for (key, child) in map.iter_mut() {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
                strip(child, path, removed);
                path.truncate(len);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                strip(item, path, removed);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn subst(text: &str, v: &BTreeMap<String, String>) -> Result<String, SubstitutionError> {
        substitute(&Template::parse(text)?, v)
    }

    /// What the installer's manifests rely on; every operator is in `envsubst`'s tests.
    #[test]
    fn substitution_follows_envsubst_defaults() {
        let v = vars(&[("SET", "x"), ("EMPTY", "")]);
        let cases = [
            ("a ${SET} b", "a x b"),
            ("${UNSET}", ""),
            ("${UNSET:=d}", "d"),
            ("${UNSET:-d}", "d"),
            ("${UNSET=d}", "d"),
            ("${SET:=d}", "x"),
            ("${EMPTY:=d}", "d"),
            ("${EMPTY}", ""),
            (
                "--tls=${TLS_MIN_VERSION:=VersionTLS12},${SET}",
                "--tls=VersionTLS12,x",
            ),
            ("$SET and $ref stay", "$SET and $ref stay"),
            // envsubst's escape: `$$` is one `$`, and what follows it is text.
            ("Double $$ are reduced", "Double $ are reduced"),
            ("\"$$(VAR_NAME)\" stays", "\"$(VAR_NAME)\" stays"),
            ("$${SET} is literal", "${SET} is literal"),
            ("$$$${SET}", "$${SET}"),
            ("$$${SET}", "$x"),
            ("$$$", "$$"),
            ("cost: 5$", "cost: 5$"),
            ("${SET:=a$$b}", "x"),
            ("${UNSET:=a$$b}", "a$$b"),
            ("${UNSET:=${SET}-suffix}", "x-suffix"),
            ("no variables", "no variables"),
        ];
        for (input, want) in cases {
            assert_eq!(subst(input, &v).unwrap(), want, "{input}");
        }
    }

    #[test]
    fn the_reference_defaults_apply_unless_the_administrator_says_otherwise() {
        let gates =
            "--feature-gates=BootstrapFormatIgnition=${EXP_BOOTSTRAP_FORMAT_IGNITION:=false}";
        let by_default = subst(gates, &with_defaults(&BTreeMap::new())).unwrap();
        assert_eq!(by_default, "--feature-gates=BootstrapFormatIgnition=true");
        let administrator = vars(&[("EXP_BOOTSTRAP_FORMAT_IGNITION", "false"), ("OTHER", "x")]);
        let chosen = with_defaults(&administrator);
        assert_eq!(
            subst(gates, &chosen).unwrap(),
            "--feature-gates=BootstrapFormatIgnition=false"
        );
        assert_eq!(chosen.get("OTHER").map(String::as_str), Some("x"));
    }

    #[test]
    fn substitution_rejects_what_envsubst_refuses_naming_the_line() {
        let err = subst("a\nb ${X-y}", &BTreeMap::new()).unwrap_err();
        assert_eq!(
            err,
            SubstitutionError {
                line: 2,
                expression: "${X-y}".into(),
                reason: "missing closing brace".into()
            }
        );
        assert_eq!(err.to_string(), "line 2: missing closing brace in `${X-y}`");
        let err = subst("a\n\n${UNCLOSED", &BTreeMap::new()).unwrap_err();
        assert_eq!(
            (err.line, err.reason.as_str()),
            (3, "missing closing brace")
        );
    }

    fn images() -> Images {
        vars(&[
            ("aws-cluster-api-controllers", "quay.io/release@sha256:aws"),
            ("kube-rbac-proxy", "quay.io/release@sha256:proxy"),
        ])
    }

    #[test]
    fn every_container_image_is_resolved() {
        let mut deployment = json!({"kind": "Deployment", "spec": {"template": {"spec": {
        "initContainers": [{"name": "init", "image": IMAGE_PLACEHOLDER}],
        "containers": [
            {"name": "manager", "image": IMAGE_PLACEHOLDER, "args": ["to.be/replaced:v99"]},
            {"name": "kube-rbac-proxy", "image": "registry.ci.openshift.org/openshift:kube-rbac-proxy"},
            {"name": "other", "image": "quay.io/other:1"}
        ]}}}});
        resolve_images(
            &mut deployment,
            Some("aws-cluster-api-controllers"),
            &images(),
        )
        .unwrap();
        let spec = &deployment["spec"]["template"]["spec"];
        assert_eq!(
            spec["initContainers"][0]["image"],
            "quay.io/release@sha256:aws"
        );
        assert_eq!(spec["containers"][0]["image"], "quay.io/release@sha256:aws");
        // Structural: only image fields change, not text that happens to look like an image.
        assert_eq!(spec["containers"][0]["args"][0], "to.be/replaced:v99");
        assert_eq!(
            spec["containers"][1]["image"],
            "quay.io/release@sha256:proxy"
        );
        assert_eq!(spec["containers"][2]["image"], "quay.io/other:1");
    }

    #[test]
    fn a_missing_image_key_is_an_error_naming_the_field() {
        let mut deployment = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "m", "image": "registry.ci.openshift.org/openshift:nope"}]}}}});
        let err = resolve_images(
            &mut deployment,
            Some("aws-cluster-api-controllers"),
            &images(),
        )
        .unwrap_err();
        assert_eq!(
            err,
            ImageError::MissingKey {
                path: "spec.template.spec.containers[0].image".into(),
                image: "registry.ci.openshift.org/openshift:nope".into(),
                key: "nope".into()
            }
        );
        let mut placeholder = json!({"spec": {"containers": [{"image": IMAGE_PLACEHOLDER}]}});
        assert!(matches!(
            resolve_images(&mut placeholder, None, &images()),
            Err(ImageError::NoProviderImage { .. })
        ));
        let mut unknown_provider = json!({"spec": {"containers": [{"image": IMAGE_PLACEHOLDER}]}});
        assert!(matches!(
            resolve_images(
                &mut unknown_provider,
                Some("gcp-cluster-api-controllers"),
                &images()
            ),
            Err(ImageError::MissingKey { .. })
        ));
    }

    #[test]
    fn ca_bundles_are_stripped_everywhere() {
        let mut webhook = json!({"webhooks": [
            {"name": "a", "clientConfig": {"caBundle": "Cg==", "service": {"name": "s"}}},
            {"name": "b", "clientConfig": {"service": {"name": "s"}}}
        ]});
        let removed = strip_fields_owned_elsewhere(&mut webhook);
        assert_eq!(removed, vec!["webhooks[0].clientConfig.caBundle"]);
        assert!(
            webhook["webhooks"][0]["clientConfig"]
                .get("caBundle")
                .is_none()
        );
        let mut crd = json!({"spec": {"conversion": {"strategy": "Webhook", "webhook": {"clientConfig": {"caBundle": ""}}}}});
        assert_eq!(
            strip_fields_owned_elsewhere(&mut crd),
            vec!["spec.conversion.webhook.clientConfig.caBundle"]
        );
    }

    #[test]
    fn schema_definitions_of_ca_bundle_stay() {
        let mut crd = json!({"kind": "CustomResourceDefinition", "spec": {"versions": [{"schema": {"openAPIV3Schema":
            {"properties": {"clientConfig": {"properties": {"caBundle": {"type": "string", "format": "byte"}}}}}}}]}});
        let before = crd.clone();
        assert!(strip_fields_owned_elsewhere(&mut crd).is_empty());
        assert_eq!(crd, before);
    }

    #[test]
    fn aggregated_cluster_roles_leave_their_rules_to_the_aggregation_controller() {
        let mut aggregated = json!({"kind": "ClusterRole", "aggregationRule": {"clusterRoleSelectors": []}, "rules": []});
        assert_eq!(strip_fields_owned_elsewhere(&mut aggregated), vec!["rules"]);
        assert!(aggregated.get("rules").is_none());
        let mut plain = json!({"kind": "ClusterRole", "rules": [{"verbs": ["get"]}]});
        assert!(strip_fields_owned_elsewhere(&mut plain).is_empty());
        assert_eq!(plain["rules"][0]["verbs"][0], "get");
    }
}
