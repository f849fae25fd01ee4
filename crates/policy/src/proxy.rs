//! The cluster-wide proxy (`Proxy/cluster`, `config.openshift.io/v1`) carried to every provider
//! Deployment: a cluster behind a proxy reaches its cloud API only through it, so each container of a
//! provider's Deployments gets `HTTP_PROXY`, `HTTPS_PROXY` and `NO_PROXY` from the proxy's `status`
//! (each only where the status has a value), and, where the administrator added CAs
//! (`spec.trustedCA.name`), the cluster's trusted CA bundle at the path the provider images read their
//! CAs from.
//!
//! These fields are the cluster's, never a bundle's: a bundle's own `HTTPS_PROXY` would send its cloud
//! calls, signed with its credentials, through a host of its choosing. So a payload that sets one
//! itself is refused by the bundle policy ([`own_settings`], rule `workload-no-proxy-of-its-own`);
//! content read back from a revision, which carries the
//! proxy of its time, is cleared ([`strip`]) before the bundle policy judges it; and the current
//! proxy is added ([`inject`]) after the policy, to every plan, fresh or replayed. The bundle policy
//! therefore judges only what the bundle wrote, and what is applied has exactly the fields below.
//!
//! The CA bundle's ConfigMap ([`TRUSTED_CA_CONFIGMAP`]) is a release manifest labelled
//! `config.openshift.io/inject-trusted-cabundle: "true"`: the cluster network operator writes the
//! merged bundle into its `ca-bundle.crt`, as for every OpenShift operator that ships such a ConfigMap.

use kube_core::DynamicObject;
use serde_json::{Value, json};

/// The variables set from the proxy's status, in the order they are added. Go's HTTP client reads
/// them in either case; both spellings belong to the cluster.
pub const VARIABLES: [&str; 3] = ["HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"];
/// The ConfigMap (in the providers' namespace, shipped by the release) the trusted CA bundle is
/// injected into.
pub const TRUSTED_CA_CONFIGMAP: &str = "capi-trusted-ca-bundle";
/// The pod volume of that ConfigMap, and its mounts' name.
pub const TRUSTED_CA_VOLUME: &str = "trusted-ca-bundle";
/// Where the provider images (RHEL based) read their CAs: `tls-ca-bundle.pem` in this folder.
pub const TRUSTED_CA_MOUNT: &str = "/etc/pki/ca-trust/extracted/pem";
/// The ConfigMap key the cluster network operator writes, and the file name it is mounted as.
const TRUSTED_CA_KEY: &str = "ca-bundle.crt";
const TRUSTED_CA_FILE: &str = "tls-ca-bundle.pem";

/// What the providers get of `Proxy/cluster`. The default is a cluster without a proxy (no kind, no
/// object, or an object without values): nothing is added.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterProxy {
    pub http: Option<String>,
    pub https: Option<String>,
    pub no_proxy: Option<String>,
    /// Whether the administrator added CAs (`spec.trustedCA.name`): the CA bundle is mounted.
    pub trusted_ca: bool,
}

impl ClusterProxy {
    /// Reads `Proxy/cluster` as the API server returned it. The status is what the cluster network
    /// operator validated and completed (its `noProxy` holds the cluster's own networks); the spec is
    /// not used for the variables.
    pub fn read(proxy: Option<&Value>) -> ClusterProxy {
        let text = |pointer: &str| {
            proxy
                .and_then(|p| p.pointer(pointer))
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        ClusterProxy {
            http: text("/status/httpProxy"),
            https: text("/status/httpsProxy"),
            no_proxy: text("/status/noProxy"),
            trusted_ca: text("/spec/trustedCA/name").is_some(),
        }
    }

    /// The variables with a value, as (name, value).
    pub fn variables(&self) -> Vec<(&'static str, &str)> {
        let values = [&self.http, &self.https, &self.no_proxy];
        VARIABLES
            .into_iter()
            .zip(values)
            .filter_map(|(name, value)| value.as_deref().map(|v| (name, v)))
            .collect()
    }
}

/// Whether `name` is one of [`VARIABLES`], in either case.
fn is_proxy_variable(name: &str) -> bool {
    VARIABLES.iter().any(|v| v.eq_ignore_ascii_case(name))
}

fn is_deployment(object: &DynamicObject) -> bool {
    object
        .types
        .as_ref()
        .is_some_and(|t| t.kind == "Deployment" && t.api_version == "apps/v1")
}

/// The container lists of a Deployment's pod template.
const CONTAINER_LISTS: [&str; 2] = ["containers", "initContainers"];

/// Where a bundle's Deployment sets what belongs to the cluster's proxy, as field paths with why: a
/// proxy variable in `env`, any `envFrom` (whose ConfigMap keys, with a prefix, could spell one; no
/// real bundle uses it), the trusted CA bundle's volume or ConfigMap. Empty for other kinds.
pub fn own_settings(object: &DynamicObject) -> Vec<String> {
    let mut found = Vec::new();
    if !is_deployment(object) {
        return found;
    }
    let Some(pod) = object.data.pointer("/spec/template/spec") else {
        return found;
    };
    let at = "spec.template.spec";
    for list in CONTAINER_LISTS {
        for (i, container) in items(pod.get(list)) {
            for (j, env) in items(container.get("env")) {
                let name = env.get("name").and_then(Value::as_str).unwrap_or_default();
                if is_proxy_variable(name) {
                    found.push(format!(
                        "{at}.{list}[{i}].env[{j}] sets {name}, which the cluster's proxy sets (Proxy/cluster)"
                    ));
                }
            }
            if container.get("envFrom").is_some() {
                found.push(format!(
                    "{at}.{list}[{i}].envFrom: not allowed, it could set a proxy variable, which the cluster's proxy sets (Proxy/cluster)"
                ));
            }
            for (j, mount) in items(container.get("volumeMounts")) {
                if mount.get("name").and_then(Value::as_str) == Some(TRUSTED_CA_VOLUME) {
                    found.push(format!(
                        "{at}.{list}[{i}].volumeMounts[{j}] mounts {TRUSTED_CA_VOLUME:?}, the cluster's trusted CA bundle, which the installer mounts"
                    ));
                }
            }
        }
    }
    for (i, volume) in items(pod.get("volumes")) {
        let named = volume.get("name").and_then(Value::as_str) == Some(TRUSTED_CA_VOLUME);
        let reads =
            volume.pointer("/configMap/name").and_then(Value::as_str) == Some(TRUSTED_CA_CONFIGMAP);
        if named || reads {
            found.push(format!(
                "{at}.volumes[{i}] is the cluster's trusted CA bundle ({TRUSTED_CA_CONFIGMAP}), which the installer mounts"
            ));
        }
    }
    found
}

/// Removes from a Deployment what [`inject`] adds (the proxy of an earlier time, as a revision
/// stored it): the proxy variables of every container and the trusted CA bundle's volume and mounts.
pub fn strip(object: &mut DynamicObject) {
    if !is_deployment(object) {
        return;
    }
    let Some(pod) = object.data.pointer_mut("/spec/template/spec") else {
        return;
    };
    for list in CONTAINER_LISTS {
        for container in items_mut(pod.get_mut(list)) {
            retain(container, "env", |env| {
                !is_proxy_variable(env.get("name").and_then(Value::as_str).unwrap_or_default())
            });
            retain(container, "volumeMounts", |mount| {
                mount.get("name").and_then(Value::as_str) != Some(TRUSTED_CA_VOLUME)
            });
        }
    }
    retain(pod, "volumes", |volume| {
        volume.get("name").and_then(Value::as_str) != Some(TRUSTED_CA_VOLUME)
    });
}

/// Sets `proxy` on a Deployment: [`strip`], then the variables with a value on every container, and
/// the trusted CA bundle where the administrator added CAs. Other kinds are left as they are.
pub fn inject(object: &mut DynamicObject, proxy: &ClusterProxy) {
    strip(object);
    if !is_deployment(object) || *proxy == ClusterProxy::default() {
        return;
    }
    let Some(pod) = object
        .data
        .pointer_mut("/spec/template/spec")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    let variables = proxy.variables();
    for list in CONTAINER_LISTS {
        for container in items_mut(pod.get_mut(list)) {
            for (name, value) in &variables {
                push(container, "env", json!({"name": name, "value": value}));
            }
            if proxy.trusted_ca {
                push(
                    container,
                    "volumeMounts",
                    json!({"name": TRUSTED_CA_VOLUME, "mountPath": TRUSTED_CA_MOUNT, "readOnly": true}),
                );
            }
        }
    }
    if proxy.trusted_ca {
        // Not optional: until the cluster network operator has written the bundle the pod waits,
        // rather than start with an empty CA folder and trust nothing.
        let volume = json!({"name": TRUSTED_CA_VOLUME, "configMap": {
            "name": TRUSTED_CA_CONFIGMAP,
            "items": [{"key": TRUSTED_CA_KEY, "path": TRUSTED_CA_FILE}],
        }});
        let volumes = pod
            .entry("volumes")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Some(volumes) = volumes.as_array_mut() {
            volumes.push(volume);
        }
    }
}

fn items(v: Option<&Value>) -> impl Iterator<Item = (usize, &Value)> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
}

fn items_mut(v: Option<&mut Value>) -> impl Iterator<Item = &mut Value> {
    v.and_then(Value::as_array_mut).into_iter().flatten()
}

/// Keeps the entries of list `key` of `object` that `keep`; a list that only the proxy's entries
/// filled is removed, as the bundle had none (an empty list the bundle wrote stays).
fn retain(object: &mut Value, key: &str, keep: impl Fn(&Value) -> bool) {
    let Some(map) = object.as_object_mut() else {
        return;
    };
    if let Some(Value::Array(list)) = map.get_mut(key) {
        let before = list.len();
        list.retain(keep);
        if list.is_empty() && before > 0 {
            map.remove(key);
        }
    }
}

fn push(object: &mut Value, key: &str, entry: Value) {
    if let Some(map) = object.as_object_mut()
        && let Some(list) = map
            .entry(key)
            .or_insert_with(|| Value::Array(Vec::new()))
            .as_array_mut()
    {
        list.push(entry);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment(pod: Value) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "capa-controller-manager", "namespace": "openshift-cluster-api"},
            "spec": {"template": {"spec": pod}},
        }))
        .unwrap()
    }

    fn proxy() -> ClusterProxy {
        ClusterProxy::read(Some(&json!({
            "spec": {"trustedCA": {"name": "user-ca-bundle"}},
            "status": {"httpProxy": "http://proxy:3128", "httpsProxy": "http://proxy:3128", "noProxy": ".cluster.local,10.0.0.0/16", "unknown": "x"},
        })))
    }

    fn env_of(object: &DynamicObject, container: usize) -> Vec<(String, String)> {
        items(
            object
                .data
                .pointer(&format!("/spec/template/spec/containers/{container}/env")),
        )
        .map(|(_, e)| {
            (
                e["name"].as_str().unwrap().to_string(),
                e["value"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
    }

    #[test]
    fn the_status_gives_the_variables_and_the_spec_the_ca_bundle() {
        assert_eq!(ClusterProxy::read(None), ClusterProxy::default());
        let empty = json!({"spec": {"trustedCA": {"name": ""}}, "status": {"httpProxy": ""}});
        assert_eq!(ClusterProxy::read(Some(&empty)), ClusterProxy::default());
        // A spec the operator has not validated yet sets nothing.
        let unvalidated = json!({"spec": {"httpsProxy": "http://p:1"}});
        assert!(
            ClusterProxy::read(Some(&unvalidated))
                .variables()
                .is_empty()
        );
        let only_https = ClusterProxy::read(Some(&json!({"status": {"httpsProxy": "http://p:1"}})));
        assert_eq!(only_https.variables(), vec![("HTTPS_PROXY", "http://p:1")]);
        assert!(!only_https.trusted_ca);
        assert_eq!(proxy().variables().len(), 3);
        assert!(proxy().trusted_ca);
    }

    #[test]
    fn every_container_gets_the_variables_and_the_ca_bundle() {
        let mut d = deployment(json!({
            "containers": [
                {"name": "manager", "env": [{"name": "AWS_SHARED_CREDENTIALS_FILE", "value": "/c"}],
                 "volumeMounts": [{"name": "credentials", "mountPath": "/c"}]},
                {"name": "sidecar"},
            ],
            "initContainers": [{"name": "init"}],
            "volumes": [{"name": "credentials", "secret": {"secretName": "capa-manager-bootstrap-credentials"}}],
        }));
        inject(&mut d, &proxy());
        assert_eq!(
            env_of(&d, 0),
            [
                ("AWS_SHARED_CREDENTIALS_FILE", "/c"),
                ("HTTP_PROXY", "http://proxy:3128"),
                ("HTTPS_PROXY", "http://proxy:3128"),
                ("NO_PROXY", ".cluster.local,10.0.0.0/16"),
            ]
            .map(|(n, v)| (n.to_string(), v.to_string()))
        );
        assert_eq!(env_of(&d, 1).len(), 3);
        let pod = d.data.pointer("/spec/template/spec").unwrap();
        assert_eq!(pod["initContainers"][0]["env"].as_array().unwrap().len(), 3);
        assert_eq!(
            pod["containers"][1]["volumeMounts"],
            json!([{"name": TRUSTED_CA_VOLUME, "mountPath": TRUSTED_CA_MOUNT, "readOnly": true}])
        );
        assert_eq!(pod["volumes"][1]["configMap"]["name"], TRUSTED_CA_CONFIGMAP);
        assert_eq!(
            pod["volumes"][1]["configMap"]["items"],
            json!([{"key": "ca-bundle.crt", "path": "tls-ca-bundle.pem"}])
        );
        // What the injection added is none of the bundle's own settings, but strip finds it all.
        assert_eq!(own_settings(&d).len(), 3 * 3 + 3 + 1);
        let mut again = d.clone();
        inject(&mut again, &proxy());
        assert_eq!(again, d, "injecting twice is injecting once");
    }

    #[test]
    fn a_changed_or_removed_proxy_replaces_what_an_earlier_one_set() {
        let mut d = deployment(
            json!({"containers": [{"name": "manager", "env": [{"name": "A", "value": "1"}]}]}),
        );
        let original = d.clone();
        inject(&mut d, &proxy());
        let changed = ClusterProxy {
            https: Some("http://other:8080".into()),
            ..ClusterProxy::default()
        };
        inject(&mut d, &changed);
        assert_eq!(
            env_of(&d, 0),
            [("A", "1"), ("HTTPS_PROXY", "http://other:8080")]
                .map(|(n, v)| (n.to_string(), v.to_string()))
        );
        assert!(d.data.pointer("/spec/template/spec/volumes").is_none());
        inject(&mut d, &ClusterProxy::default());
        assert_eq!(d, original, "no proxy: the bundle's Deployment as it was");
    }

    #[test]
    fn a_bundle_may_not_set_what_the_cluster_proxy_sets() {
        let d = deployment(json!({
            "containers": [{"name": "m", "env": [{"name": "https_proxy", "value": "http://evil:1"}, {"name": "OK", "value": "1"}],
                            "envFrom": [{"configMapRef": {"name": "mine"}}]}],
            "initContainers": [{"name": "i", "env": [{"name": "NO_PROXY", "value": "*"}],
                                "volumeMounts": [{"name": TRUSTED_CA_VOLUME, "mountPath": "/x"}]}],
            "volumes": [{"name": "ca", "configMap": {"name": TRUSTED_CA_CONFIGMAP}}],
        }));
        let found = own_settings(&d);
        assert_eq!(found.len(), 5, "{found:#?}");
        assert!(found[0].starts_with("spec.template.spec.containers[0].env[0] sets https_proxy"));
        assert!(found[1].starts_with("spec.template.spec.containers[0].envFrom"));
        assert!(found[2].starts_with("spec.template.spec.initContainers[0].env[0] sets NO_PROXY"));
        assert!(found[3].starts_with("spec.template.spec.initContainers[0].volumeMounts[0]"));
        assert!(found[4].starts_with("spec.template.spec.volumes[0]"));
        let service: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
            "spec": {"template": {"spec": {"containers": [{"env": [{"name": "HTTP_PROXY"}]}]}}},
        }))
        .unwrap();
        assert!(
            own_settings(&service).is_empty(),
            "only Deployments run the providers"
        );
    }
}
