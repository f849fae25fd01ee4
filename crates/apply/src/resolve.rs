//! Kind resolution: which REST resource serves a group/version/kind, and whether it is namespaced.

use std::collections::BTreeMap;

use kube::Client;
use kube::api::{ApiResource, DynamicObject};
use kube::discovery::{Discovery, Scope};
use serde_json::Value;

use crate::key::ObjectKey;

/// How a group/version/kind is served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedKind {
    pub resource: ApiResource,
    pub namespaced: bool,
}

/// Maps group/version/kind to the REST resource that serves it.
///
/// Built from the API server's discovery and extended (inside [`crate::plan()`]) with the
/// CustomResourceDefinitions contained in the set being planned, so a custom resource can be planned in
/// the same pass as the CRD that defines it, before the CRD exists in the cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KindResolver {
    kinds: BTreeMap<(String, String, String), ResolvedKind>,
}

impl KindResolver {
    /// An empty resolver (tests, or a caller that inserts kinds itself).
    pub fn new() -> Self {
        Self::default()
    }

    /// The built-in kinds of the Kubernetes version we target (what discovery reports on a cluster without
    /// CRDs), with their scope, from the workspace's one table of kinds ([`capi_object::kinds`]): for
    /// planning without a cluster (`capi-installer render`) and for tests. Only kinds a provider could
    /// plausibly ship; anything else must come with its CRD.
    pub fn builtin() -> Self {
        let mut resolver = Self::new();
        for k in capi_object::kinds::KNOWN_KINDS
            .iter()
            .filter(|k| k.origin == capi_object::KindOrigin::Kubernetes)
        {
            let api_version = if k.group.is_empty() {
                k.version.to_string()
            } else {
                format!("{}/{}", k.group, k.version)
            };
            resolver.insert(
                ApiResource {
                    group: k.group.to_string(),
                    version: k.version.to_string(),
                    api_version,
                    kind: k.kind.to_string(),
                    plural: k.plural.to_string(),
                },
                k.namespaced,
            );
        }
        resolver
    }

    /// Runs aggregated discovery (two requests) and records every served version of every kind.
    pub async fn discover(client: &Client) -> Result<Self, kube::Error> {
        let discovery = Discovery::new(client.clone()).run_aggregated().await?;
        Ok(Self::from_discovery(&discovery))
    }

    pub(crate) fn from_discovery(discovery: &Discovery) -> Self {
        let mut resolver = Self::new();
        for group in discovery.groups() {
            for version in group.versions() {
                for (resource, caps) in group.versioned_resources(version) {
                    resolver.insert(resource, caps.scope == Scope::Namespaced);
                }
            }
        }
        resolver
    }

    pub fn insert(&mut self, resource: ApiResource, namespaced: bool) {
        let id = (
            resource.group.clone(),
            resource.version.clone(),
            resource.kind.clone(),
        );
        self.kinds.insert(
            id,
            ResolvedKind {
                resource,
                namespaced,
            },
        );
    }

    /// Adds every kind `other` knows; a kind both know is served as `other` says (the newer knowledge,
    /// e.g. a CRD about to be applied over a served one).
    pub fn extend(&mut self, other: &KindResolver) {
        for kind in other.kinds.values() {
            self.insert(kind.resource.clone(), kind.namespaced);
        }
    }

    /// Adds the kinds a CustomResourceDefinition object defines (one per served version).
    /// Returns a description of what is wrong when the object is not a usable CRD.
    pub fn insert_crd(&mut self, crd: &DynamicObject) -> Result<(), String> {
        for (resource, namespaced) in kinds_of_crd(crd)? {
            self.insert(resource, namespaced);
        }
        Ok(())
    }

    pub fn resolve(&self, group: &str, version: &str, kind: &str) -> Option<&ResolvedKind> {
        self.kinds
            .get(&(group.to_owned(), version.to_owned(), kind.to_owned()))
    }

    /// Whether any version of `group`/`kind` is known.
    pub fn defines(&self, group: &str, kind: &str) -> bool {
        self.kinds.keys().any(|(g, _, k)| g == group && k == kind)
    }

    /// Some served version of `group`/`kind` (the first in version order), for an object whose recorded
    /// version is no longer served.
    pub fn resolve_any_version(&self, group: &str, kind: &str) -> Option<&ResolvedKind> {
        self.kinds
            .iter()
            .find(|((g, _, k), _)| g == group && k == kind)
            .map(|(_, r)| r)
    }

    pub fn resolve_key(&self, key: &ObjectKey) -> Option<&ResolvedKind> {
        self.resolve(&key.group, &key.version, &key.kind)
    }

    pub fn len(&self) -> usize {
        self.kinds.len()
    }

    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty()
    }
}

/// The kinds a CRD object defines: one `ApiResource` per served version.
pub(crate) fn kinds_of_crd(crd: &DynamicObject) -> Result<Vec<(ApiResource, bool)>, String> {
    let spec = crd.data.get("spec").ok_or("missing spec")?;
    let text = |v: Option<&Value>, what: &str| -> Result<String, String> {
        v.and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .ok_or_else(|| format!("missing {what}"))
    };
    let group = text(spec.get("group"), "spec.group")?;
    let names = spec.get("names");
    let kind = text(names.and_then(|n| n.get("kind")), "spec.names.kind")?;
    let plural = text(names.and_then(|n| n.get("plural")), "spec.names.plural")?;
    let namespaced = match spec.get("scope").and_then(Value::as_str) {
        Some("Namespaced") => true,
        Some("Cluster") => false,
        other => {
            return Err(format!(
                "spec.scope must be Namespaced or Cluster, got {other:?}"
            ));
        }
    };
    let versions = spec
        .get("versions")
        .and_then(Value::as_array)
        .ok_or("missing spec.versions")?;
    let mut out = Vec::new();
    for v in versions {
        let served = v.get("served").and_then(Value::as_bool).unwrap_or(false);
        if !served {
            continue;
        }
        let version = text(v.get("name"), "spec.versions[].name")?;
        out.push((
            ApiResource {
                api_version: format!("{group}/{version}"),
                group: group.clone(),
                version,
                kind: kind.clone(),
                plural: plural.clone(),
            },
            namespaced,
        ));
    }
    Ok(out)
}
