//! A provider's write access to CustomResourceDefinitions, narrowed to its own CRDs.
//!
//! Cluster API's managers migrate the stored versions of their own CRDs (the CRD migrator patches
//! each CRD and its `status.storedVersions`). Core and vSphere say so in their RBAC, by
//! `resourceNames`; OpenStack's manager role grants `patch` and `update` on every CRD of the cluster
//! (`customresourcedefinitions` and `customresourcedefinitions/status`), which would let its
//! controller rewrite any API of the cluster, the release payload's included. Its controller needs
//! no more than its own CRDs, so the rendered rule is narrowed to them: the write verbs move to a
//! rule of their own that names the bundle's CRDs, the reads stay as they were. What is judged
//! (and applied) is the narrowed rule, so the RBAC ceiling holds it with names, as it holds core's.
//!
//! Only a rule of exactly that shape is narrowed (group `apiextensions.k8s.io` alone, CRD resources
//! alone, no names, no verb that names cannot narrow such as `create` or `*`); any other rule is
//! judged as written.

use kube_core::DynamicObject;
use serde_json::{Value, json};

use super::ceiling::strings;

const GROUP: &str = "apiextensions.k8s.io";
const RESOURCES: [&str; 2] = [
    "customresourcedefinitions",
    "customresourcedefinitions/status",
];
/// The verbs `resourceNames` narrow and the CRD migrator uses.
const WRITES: [&str; 2] = ["patch", "update"];
/// The verbs left with every name: the reads (`list` and `watch` cannot be narrowed by name).
const READS: [&str; 3] = ["get", "list", "watch"];

/// Narrows every CRD write rule of the roles among `objects` to the CRDs among `objects`; the
/// description of each rule narrowed (`ClusterRole capo-manager-role rules[3]`).
pub fn narrow(objects: &mut [&mut DynamicObject]) -> Vec<String> {
    let mut own: Vec<String> = objects
        .iter()
        .filter(|o| {
            o.types
                .as_ref()
                .is_some_and(|t| t.kind == "CustomResourceDefinition")
        })
        .filter_map(|o| o.metadata.name.clone())
        .collect();
    own.sort();
    let mut narrowed = Vec::new();
    if own.is_empty() {
        return narrowed;
    }
    for o in objects.iter_mut() {
        let kind = o.types.as_ref().map(|t| t.kind.clone()).unwrap_or_default();
        if kind != "ClusterRole" && kind != "Role" {
            continue;
        }
        let name = o.metadata.name.clone().unwrap_or_default();
        let Some(rules) = o.data.get_mut("rules").and_then(Value::as_array_mut) else {
            continue;
        };
        let mut out = Vec::with_capacity(rules.len() + 1);
        for (i, rule) in rules.drain(..).enumerate() {
            match split(&rule, &own) {
                Some(parts) => {
                    narrowed.push(format!("{kind} {name} rules[{i}]"));
                    out.extend(parts);
                }
                None => out.push(rule),
            }
        }
        *rules = out;
    }
    narrowed
}

/// The rule as a read rule (if it reads) and a write rule on `own`, when it has the narrowable shape.
fn split(rule: &Value, own: &[String]) -> Option<Vec<Value>> {
    let groups = strings(rule.get("apiGroups"));
    let resources = strings(rule.get("resources"));
    let verbs = strings(rule.get("verbs"));
    let shaped = groups == [GROUP]
        && !resources.is_empty()
        && resources.iter().all(|r| RESOURCES.contains(r))
        && strings(rule.get("resourceNames")).is_empty()
        && rule.get("nonResourceURLs").is_none_or(Value::is_null)
        && verbs.iter().any(|v| WRITES.contains(v))
        && verbs
            .iter()
            .all(|v| WRITES.contains(v) || READS.contains(v));
    if !shaped {
        return None;
    }
    let reads: Vec<&str> = verbs
        .iter()
        .copied()
        .filter(|v| READS.contains(v))
        .collect();
    let writes: Vec<&str> = verbs
        .iter()
        .copied()
        .filter(|v| WRITES.contains(v))
        .collect();
    let mut parts = Vec::new();
    if !reads.is_empty() {
        parts.push(json!({"apiGroups": [GROUP], "resources": resources, "verbs": reads}));
    }
    parts.push(json!({
        "apiGroups": [GROUP], "resources": resources, "verbs": writes, "resourceNames": own,
    }));
    Some(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(v: Value) -> DynamicObject {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_cluster_wide_crd_write_is_narrowed_to_the_bundles_crds() {
        let mut crd = object(
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "openstackclusters.infrastructure.cluster.x-k8s.io"}}),
        );
        let mut role = object(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "manager"},
            "rules": [
                {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]},
                {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions", "customresourcedefinitions/status"],
                 "verbs": ["get", "list", "patch", "update", "watch"]},
                // Not narrowed: create is not narrowed by names, and another group is in the rule.
                {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": ["create", "patch"]},
                {"apiGroups": ["apiextensions.k8s.io", ""], "resources": ["customresourcedefinitions"], "verbs": ["patch"]},
            ]}),
        );
        let narrowed = narrow(&mut [&mut crd, &mut role]);
        assert_eq!(narrowed, ["ClusterRole manager rules[1]"]);
        let rules = role.data["rules"].as_array().unwrap();
        assert_eq!(rules.len(), 5);
        assert_eq!(
            rules[1],
            json!({"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions", "customresourcedefinitions/status"], "verbs": ["get", "list", "watch"]})
        );
        assert_eq!(
            rules[2],
            json!({"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions", "customresourcedefinitions/status"], "verbs": ["patch", "update"],
                   "resourceNames": ["openstackclusters.infrastructure.cluster.x-k8s.io"]})
        );
        assert_eq!(rules[3]["verbs"], json!(["create", "patch"]));
    }

    #[test]
    fn without_crds_of_its_own_nothing_is_narrowed() {
        let mut role = object(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "manager"},
            "rules": [{"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": ["patch"]}]}),
        );
        assert!(narrow(&mut [&mut role]).is_empty());
        assert_eq!(role.data["rules"][0]["verbs"], json!(["patch"]));
    }
}
