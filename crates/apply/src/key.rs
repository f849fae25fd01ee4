//! Object identity.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};

use kube::api::DynamicObject;
use serde::{Deserialize, Serialize};

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
            namespace: namespace.map(str::to_owned),
            name: name.into(),
        }
    }

    /// The key of a dynamic object as written (apiVersion, kind, metadata); `None` when it has no
    /// apiVersion/kind or no name.
    pub fn from_object(obj: &DynamicObject) -> Option<Self> {
        let types = obj.types.as_ref()?;
        let name = obj.metadata.name.clone()?;
        let (group, version) = split_api_version(&types.api_version);
        Some(ObjectKey {
            group: group.to_owned(),
            version: version.to_owned(),
            kind: types.kind.clone(),
            namespace: obj.metadata.namespace.clone().filter(|ns| !ns.is_empty()),
            name,
        })
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

    #[test]
    fn display_names_kind_namespace_and_name() {
        let ns = ObjectKey::new("apps", "v1", "Deployment", Some("ns1"), "web");
        let cluster = ObjectKey::new("", "v1", "Namespace", None, "ns1");
        assert_eq!(ns.to_string(), "Deployment ns1/web");
        assert_eq!(cluster.to_string(), "Namespace ns1");
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
}
