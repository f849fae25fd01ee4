//! Object identity and small helpers over `serde_json::Value` objects.

use std::fmt;

use serde_json::{Map, Value};

/// Identity of a Kubernetes object. `Display` is `Kind namespace/name`, or `Kind name` when the
/// object has no namespace.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectRef {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjectRef {
    pub fn new(
        api_version: impl Into<String>,
        kind: impl Into<String>,
        namespace: Option<&str>,
        name: impl Into<String>,
    ) -> Self {
        ObjectRef {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace: namespace.filter(|ns| !ns.is_empty()).map(str::to_owned),
            name: name.into(),
        }
    }

    /// Reads the identity of an object; `None` when `apiVersion`, `kind` or `metadata.name` is
    /// missing or not a string. An empty namespace counts as none.
    pub fn from_object(object: &Value) -> Option<Self> {
        let api_version = object.get("apiVersion")?.as_str()?;
        let kind = object.get("kind")?.as_str()?;
        let metadata = object.get("metadata")?;
        let name = metadata.get("name")?.as_str()?;
        let namespace = metadata.get("namespace").and_then(Value::as_str);
        Some(ObjectRef::new(api_version, kind, namespace, name))
    }

    /// The API group (`""` for the core group).
    pub fn group(&self) -> &str {
        group_of(&self.api_version)
    }
}

impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} {}/{}", self.kind, ns, self.name),
            None => write!(f, "{} {}", self.kind, self.name),
        }
    }
}

/// The group part of an `apiVersion` (`apps/v1` → `apps`, `v1` → ``).
pub fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

/// Kinds that are cluster-scoped in Kubernetes, OpenShift and cert-manager. The namespace rewrite
/// must leave these alone: a namespace on a cluster-scoped object is rejected by server-side
/// apply (and, for the webhook configurations, would be meaningless).
///
/// Custom kinds not listed here are treated as namespaced, which is what clusterctl does too;
/// provider components only ship CRDs for namespaced kinds in practice.
pub fn is_cluster_scoped(group: &str, kind: &str) -> bool {
    matches!(
        (group, kind),
        (
            "",
            "Namespace" | "Node" | "PersistentVolume" | "ComponentStatus"
        ) | ("apiextensions.k8s.io", "CustomResourceDefinition")
            | ("apiregistration.k8s.io", "APIService")
            | (
                "rbac.authorization.k8s.io",
                "ClusterRole" | "ClusterRoleBinding"
            )
            | (
                "admissionregistration.k8s.io",
                "MutatingWebhookConfiguration"
                    | "ValidatingWebhookConfiguration"
                    | "ValidatingAdmissionPolicy"
                    | "ValidatingAdmissionPolicyBinding"
                    | "MutatingAdmissionPolicy"
                    | "MutatingAdmissionPolicyBinding"
            )
            | ("scheduling.k8s.io", "PriorityClass")
            | (
                "storage.k8s.io",
                "StorageClass" | "CSIDriver" | "CSINode" | "VolumeAttachment"
            )
            | ("node.k8s.io", "RuntimeClass")
            | (
                "networking.k8s.io",
                "IngressClass" | "IPAddress" | "ServiceCIDR"
            )
            | (
                "flowcontrol.apiserver.k8s.io",
                "FlowSchema" | "PriorityLevelConfiguration"
            )
            | (
                "certificates.k8s.io",
                "CertificateSigningRequest" | "ClusterTrustBundle"
            )
            | ("cert-manager.io", "ClusterIssuer")
            | ("security.openshift.io", "SecurityContextConstraints")
            | ("config.openshift.io", _)
    )
}

/// `object.metadata`, created when absent. Panics only if `object` is not a map, which parsing
/// rules out.
pub(crate) fn metadata_mut(object: &mut Value) -> &mut Map<String, Value> {
    let map = object.as_object_mut().expect("objects are maps");
    let md = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !md.is_object() {
        *md = Value::Object(Map::new());
    }
    md.as_object_mut().expect("just made a map")
}

/// A string map under `metadata` (`labels`, `annotations`), created when absent.
pub(crate) fn metadata_map_mut<'a>(object: &'a mut Value, key: &str) -> &'a mut Map<String, Value> {
    let md = metadata_mut(object);
    let m = md.entry(key).or_insert_with(|| Value::Object(Map::new()));
    if !m.is_object() {
        *m = Value::Object(Map::new());
    }
    m.as_object_mut().expect("just made a map")
}

/// Follows a path of map keys.
pub(crate) fn get_path<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, k| v.get(k))
}

pub(crate) fn get_path_mut<'a>(value: &'a mut Value, path: &[&str]) -> Option<&'a mut Value> {
    path.iter().try_fold(value, |v, k| v.get_mut(k))
}

pub(crate) fn get_str<'a>(value: &'a Value, path: &[&str]) -> Option<&'a str> {
    get_path(value, path).and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn display_names_namespace_only_when_present() {
        let r = ObjectRef::new("apps/v1", "Deployment", Some("ns"), "d");
        assert_eq!(r.to_string(), "Deployment ns/d");
        let r = ObjectRef::new("rbac.authorization.k8s.io/v1", "ClusterRole", Some(""), "r");
        assert_eq!(r.to_string(), "ClusterRole r");
        assert_eq!(r.group(), "rbac.authorization.k8s.io");
        assert_eq!(ObjectRef::new("v1", "Service", None, "s").group(), "");
    }

    #[test]
    fn from_object_requires_identity() {
        let ok = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "n"}});
        assert_eq!(
            ObjectRef::from_object(&ok).unwrap(),
            ObjectRef::new("v1", "Service", Some("n"), "s")
        );
        for bad in [
            json!({"kind": "Service", "metadata": {"name": "s"}}),
            json!({"apiVersion": "v1", "metadata": {"name": "s"}}),
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {}}),
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": 3}}),
        ] {
            assert!(ObjectRef::from_object(&bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn scope_table() {
        assert!(is_cluster_scoped(
            "apiextensions.k8s.io",
            "CustomResourceDefinition"
        ));
        assert!(is_cluster_scoped(
            "rbac.authorization.k8s.io",
            "ClusterRoleBinding"
        ));
        assert!(is_cluster_scoped(
            "admissionregistration.k8s.io",
            "ValidatingAdmissionPolicyBinding"
        ));
        assert!(is_cluster_scoped("", "Namespace"));
        assert!(!is_cluster_scoped(
            "rbac.authorization.k8s.io",
            "RoleBinding"
        ));
        assert!(!is_cluster_scoped("", "Service"));
        assert!(!is_cluster_scoped(
            "infrastructure.cluster.x-k8s.io",
            "AWSCluster"
        ));
    }
}
