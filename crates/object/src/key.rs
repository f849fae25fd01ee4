//! Object identity.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The identity of one object: group, kind, namespace and name.
///
/// `version` is carried because requests need it, but it is **not** part of the identity: equality,
/// hashing and ordering ignore it. An object that moves from `v1beta1` to `v1` between two plans is the
/// same object, so it must neither count as a duplicate of itself nor be pruned as stale (Flux's
/// inventory ids leave the version out for the same reason).
///
/// Displays as `Kind namespace/name`, or `Kind name` when cluster-scoped.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ObjectKey {
    pub group: String,
    pub version: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjectKey {
    /// An empty namespace counts as none.
    pub fn new(
        group: impl Into<String>,
        version: impl Into<String>,
        kind: impl Into<String>,
        namespace: Option<&str>,
        name: impl Into<String>,
    ) -> Self {
        ObjectKey {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            namespace: namespace.filter(|ns| !ns.is_empty()).map(str::to_owned),
            name: name.into(),
        }
    }

    /// The same, from an `apiVersion` (`apps/v1`, `v1`).
    pub fn from_api_version(
        api_version: &str,
        kind: impl Into<String>,
        namespace: Option<&str>,
        name: impl Into<String>,
    ) -> Self {
        let (group, version) = split_api_version(api_version);
        Self::new(group, version, kind, namespace, name)
    }

    /// Reads the identity of an object; `None` when `apiVersion`, `kind` or `metadata.name` is missing or
    /// not a string.
    pub fn from_value(object: &Value) -> Option<Self> {
        let api_version = object.get("apiVersion")?.as_str()?;
        let kind = object.get("kind")?.as_str()?;
        let metadata = object.get("metadata")?;
        let name = metadata.get("name")?.as_str()?;
        let namespace = metadata.get("namespace").and_then(Value::as_str);
        Some(Self::from_api_version(api_version, kind, namespace, name))
    }

    /// `group/version`, or `version` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    fn identity(&self) -> (&str, &str, Option<&str>, &str) {
        (
            &self.group,
            &self.kind,
            self.namespace.as_deref(),
            &self.name,
        )
    }
}

/// Splits an apiVersion into (group, version); the core group is `""`.
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.rsplit_once('/') {
        Some((group, version)) => (group, version),
        None => ("", api_version),
    }
}

impl PartialEq for ObjectKey {
    fn eq(&self, other: &Self) -> bool {
        self.identity() == other.identity()
    }
}

impl Eq for ObjectKey {}

impl Hash for ObjectKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.identity().hash(state);
    }
}

impl PartialOrd for ObjectKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ObjectKey {
    fn cmp(&self, other: &Self) -> Ordering {
        self.identity().cmp(&other.identity())
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} {}/{}", self.kind, ns, self.name),
            None => write!(f, "{} {}", self.kind, self.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn display_names_kind_namespace_and_name() {
        let ns = ObjectKey::new("apps", "v1", "Deployment", Some("ns1"), "web");
        let cluster = ObjectKey::new("", "v1", "Namespace", None, "ns1");
        assert_eq!(ns.to_string(), "Deployment ns1/web");
        assert_eq!(cluster.to_string(), "Namespace ns1");
        let empty_ns = ObjectKey::from_api_version(
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            Some(""),
            "r",
        );
        assert_eq!(empty_ns.to_string(), "ClusterRole r");
        assert_eq!(empty_ns.group, "rbac.authorization.k8s.io");
    }

    #[test]
    fn version_is_not_part_of_identity() {
        let a = ObjectKey::new("x.io", "v1beta1", "Widget", None, "w");
        let b = ObjectKey::new("x.io", "v1", "Widget", None, "w");
        assert_eq!(a, b);
        assert_eq!(a.cmp(&b), Ordering::Equal);
        let set: std::collections::HashSet<_> = [a, b].into_iter().collect();
        assert_eq!(set.len(), 1);
    }

    #[test]
    fn split_api_version_handles_core_group() {
        assert_eq!(split_api_version("v1"), ("", "v1"));
        assert_eq!(split_api_version("apps/v1"), ("apps", "v1"));
    }

    #[test]
    fn from_value_requires_identity() {
        let ok = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "n"}});
        let key = ObjectKey::from_value(&ok).unwrap();
        assert_eq!(key, ObjectKey::new("", "v1", "Service", Some("n"), "s"));
        assert_eq!(key.api_version(), "v1");
        for bad in [
            json!({"kind": "Service", "metadata": {"name": "s"}}),
            json!({"apiVersion": "v1", "metadata": {"name": "s"}}),
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {}}),
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": 3}}),
        ] {
            assert!(ObjectKey::from_value(&bad).is_none(), "{bad}");
        }
    }
}
