//! CRD safety: the changes to a live CustomResourceDefinition that would strand stored data.
//!
//! A CRD update is the one write of an apply that can lose data for good: objects stored in a
//! version that the new CRD drops can no longer be read or migrated, and instances of a version that
//! is no longer served become invisible to every client. The API server refuses some of these itself,
//! but only after earlier objects of the same version were written, and with a message about fields,
//! not data. Checked here before the first write, as a pure function of the live CRD, the desired CRD
//! and whether instances exist, so every refusal says which version and why.

use std::collections::BTreeSet;
use std::fmt;

use kube_core::DynamicObject;
use serde_json::Value;

/// One reason a CRD change is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CrdProblem {
    /// The version is still listed in the live CRD's `status.storedVersions` (objects may be stored in
    /// it), and the desired CRD no longer has it.
    StoredVersionRemoved { version: String },
    /// The live CRD serves the version, the desired one does not (removed or `served: false`), and
    /// instances exist.
    UnservedWithInstances { version: String },
    /// `spec.scope` would change (Namespaced ↔ Cluster): every stored object would be unreadable.
    ScopeChanged { from: String, to: String },
}

impl fmt::Display for CrdProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CrdProblem::StoredVersionRemoved { version } => write!(
                f,
                "removes version {version}, which is still in status.storedVersions (objects stored in it would be lost; migrate them and drop it from storedVersions first)"
            ),
            CrdProblem::UnservedWithInstances { version } => write!(
                f,
                "stops serving version {version} while instances exist (clients of that version would lose them)"
            ),
            CrdProblem::ScopeChanged { from, to } => write!(
                f,
                "changes spec.scope from {from} to {to} (every stored object would become unreadable)"
            ),
        }
    }
}

/// The fields of a CRD that CRD safety and the instance check of prune read, besides each version's
/// name, `served` and `storage` ([`versions_of`]): what the watch cache keeps of a CRD
/// (`capi_apply::slim`), schemas left out.
pub fn reads(group: &str, kind: &str) -> &'static [&'static str] {
    match (group, kind) {
        ("apiextensions.k8s.io", "CustomResourceDefinition") => &[
            "/spec/group",
            "/spec/names/kind",
            "/spec/names/plural",
            "/spec/scope",
            "/status/storedVersions",
        ],
        _ => &[],
    }
}

/// A CRD's `spec.versions` with only `name`, `served` and `storage` of each (no schema); `None` for
/// other kinds.
pub fn versions_of(group: &str, kind: &str, data: &Value) -> Option<Value> {
    if reads(group, kind).is_empty() {
        return None;
    }
    let versions = data.pointer("/spec/versions")?.as_array()?;
    Some(Value::Array(
        versions
            .iter()
            .map(|v| {
                let keep = ["name", "served", "storage"];
                Value::Object(
                    keep.iter()
                        .filter_map(|k| Some((k.to_string(), v.get(*k)?.clone())))
                        .collect(),
                )
            })
            .collect(),
    ))
}

fn versions(crd: &DynamicObject) -> impl Iterator<Item = &Value> {
    crd.data
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn name(v: &Value) -> Option<&str> {
    v.get("name").and_then(Value::as_str)
}

fn served(crd: &DynamicObject) -> BTreeSet<&str> {
    versions(crd)
        .filter(|v| v.get("served").and_then(Value::as_bool) == Some(true))
        .filter_map(name)
        .collect()
}

fn scope(crd: &DynamicObject) -> &str {
    crd.data
        .pointer("/spec/scope")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The versions that `live` serves and `desired` does not: only for these does it matter whether
/// instances exist (so the caller lists instances only when this is not empty).
pub fn unserved_versions(live: &DynamicObject, desired: &DynamicObject) -> Vec<String> {
    let now = served(desired);
    served(live)
        .into_iter()
        .filter(|v| !now.contains(v))
        .map(str::to_owned)
        .collect()
}

/// Every problem with changing `live` into `desired`. Pure. `instances_exist` only matters when
/// [`unserved_versions`] is not empty.
pub fn check_crd_change(
    live: &DynamicObject,
    desired: &DynamicObject,
    instances_exist: bool,
) -> Vec<CrdProblem> {
    let mut problems = Vec::new();
    let desired_versions: BTreeSet<&str> = versions(desired).filter_map(name).collect();
    let stored = live
        .data
        .pointer("/status/storedVersions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str);
    for version in stored {
        if !desired_versions.contains(version) {
            problems.push(CrdProblem::StoredVersionRemoved {
                version: version.to_owned(),
            });
        }
    }
    if instances_exist {
        for version in unserved_versions(live, desired) {
            problems.push(CrdProblem::UnservedWithInstances { version });
        }
    }
    let (from, to) = (scope(live), scope(desired));
    if !from.is_empty() && !to.is_empty() && from != to {
        problems.push(CrdProblem::ScopeChanged {
            from: from.to_owned(),
            to: to.to_owned(),
        });
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(yaml: &str) -> kube_core::DynamicObject {
        serde_saphyr::from_str(yaml).expect("test YAML parses")
    }

    fn crd(scope: &str, versions: &[(&str, bool)], stored: &[&str]) -> DynamicObject {
        let versions: Vec<String> = versions
            .iter()
            .map(|(n, s)| format!("{{name: {n}, served: {s}, storage: false}}"))
            .collect();
        obj(&format!(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: widgets.x.cluster.x-k8s.io}}\nspec: {{group: x.cluster.x-k8s.io, scope: {scope}, names: {{kind: Widget, plural: widgets}}, versions: [{}]}}\nstatus: {{storedVersions: [{}]}}\n",
            versions.join(", "),
            stored.join(", ")
        ))
    }

    #[test]
    fn each_unsafe_change_is_named() {
        use CrdProblem::*;
        let live = crd(
            "Namespaced",
            &[("v1beta1", true), ("v1beta2", true)],
            &["v1beta1", "v1beta2"],
        );
        let v = |s: &str| s.to_string();
        let cases: Vec<(&str, DynamicObject, bool, Vec<CrdProblem>)> = vec![
            (
                "same versions",
                crd("Namespaced", &[("v1beta1", true), ("v1beta2", true)], &[]),
                true,
                vec![],
            ),
            (
                "a new version added",
                crd(
                    "Namespaced",
                    &[("v1beta1", true), ("v1beta2", true), ("v1", true)],
                    &[],
                ),
                true,
                vec![],
            ),
            (
                "a stored version removed",
                crd("Namespaced", &[("v1beta2", true)], &[]),
                false,
                vec![StoredVersionRemoved {
                    version: v("v1beta1"),
                }],
            ),
            (
                "a stored version removed, with instances",
                crd("Namespaced", &[("v1beta2", true)], &[]),
                true,
                vec![
                    StoredVersionRemoved {
                        version: v("v1beta1"),
                    },
                    UnservedWithInstances {
                        version: v("v1beta1"),
                    },
                ],
            ),
            (
                "a version no longer served, no instances",
                crd("Namespaced", &[("v1beta1", false), ("v1beta2", true)], &[]),
                false,
                vec![],
            ),
            (
                "a version no longer served, with instances",
                crd("Namespaced", &[("v1beta1", false), ("v1beta2", true)], &[]),
                true,
                vec![UnservedWithInstances {
                    version: v("v1beta1"),
                }],
            ),
            (
                "scope changed",
                crd("Cluster", &[("v1beta1", true), ("v1beta2", true)], &[]),
                false,
                vec![ScopeChanged {
                    from: v("Namespaced"),
                    to: v("Cluster"),
                }],
            ),
        ];
        for (what, desired, instances, want) in cases {
            assert_eq!(check_crd_change(&live, &desired, instances), want, "{what}");
        }
    }

    #[test]
    fn instances_matter_only_for_versions_that_stop_being_served() {
        let live = crd("Namespaced", &[("v1", true), ("v2", false)], &["v1"]);
        assert_eq!(
            unserved_versions(
                &live,
                &crd("Namespaced", &[("v1", true), ("v2", true)], &[])
            ),
            Vec::<String>::new()
        );
        assert_eq!(
            unserved_versions(&live, &crd("Namespaced", &[("v2", true)], &[])),
            vec!["v1".to_string()]
        );
    }

    #[test]
    fn messages_say_what_would_be_lost() {
        let p = CrdProblem::StoredVersionRemoved {
            version: "v1beta1".into(),
        };
        assert!(p.to_string().contains("status.storedVersions"), "{p}");
        let p = CrdProblem::UnservedWithInstances {
            version: "v1beta1".into(),
        };
        assert!(p.to_string().contains("instances exist"), "{p}");
    }
}
