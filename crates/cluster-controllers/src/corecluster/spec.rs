//! The desired core `Cluster` and its "control plane initialized" status. Pure.
//!
//! The OpenShift control plane is not managed by Cluster API, so nothing in Cluster API would ever
//! mark it initialized; without that, Cluster API treats the cluster as not provisioned and creates no
//! worker Machines. The reference sets the condition in both forms Cluster API reads: the v1beta2
//! condition (`status.conditions` of a v1beta2 Cluster) and the deprecated v1beta1 one
//! (`status.deprecated.v1beta1.conditions`); a v1beta1 Cluster keeps them the other way round.

use serde_json::{Value, json};

use crate::names::*;
use crate::platform::{ClusterInfo, InfraClusterKind};

pub(crate) const CLUSTER_GROUP: &str = "cluster.x-k8s.io";
pub(crate) const CONTROL_PLANE_INITIALIZED: &str = "ControlPlaneInitialized";
/// Cluster API's reason for a True `ControlPlaneInitialized` (v1beta2 conditions need a reason).
pub(crate) const INITIALIZED_REASON: &str = "Initialized";

/// Where a Cluster of a given storage version keeps its two condition lists.
struct ConditionPaths {
    /// `metav1.Condition` entries (a list-map keyed by `type`: server-side apply merges per entry).
    v1beta2: &'static [&'static str],
    /// Cluster API v1beta1 entries (an atomic list: whoever applies it owns all of it).
    v1beta1: &'static [&'static str],
}

fn paths(cluster_version: &str) -> ConditionPaths {
    if cluster_version == "v1beta1" {
        ConditionPaths {
            v1beta2: &["v1beta2", "conditions"],
            v1beta1: &["conditions"],
        }
    } else {
        ConditionPaths {
            v1beta2: &["conditions"],
            v1beta1: &["deprecated", "v1beta1", "conditions"],
        }
    }
}

/// The Cluster named after the infrastructure, pointing at the InfraCluster of the same name.
/// `cluster_version` is the served (storage) version of the Cluster CRD, `infra_api_version` the
/// InfraCluster's apiVersion: a v1beta2 Cluster refers by API group (Cluster API looks the version up
/// in the CRD's contract labels), a v1beta1 Cluster by apiVersion.
pub(crate) fn desired_cluster(
    info: &ClusterInfo,
    infra: InfraClusterKind,
    infra_api_version: &str,
    cluster_version: &str,
) -> Value {
    let name = &info.infrastructure_name;
    let infrastructure_ref = if cluster_version == "v1beta1" {
        json!({"apiVersion": infra_api_version, "kind": infra.kind, "name": name, "namespace": info.namespace})
    } else {
        json!({"apiGroup": infra.group, "kind": infra.kind, "name": name})
    };
    json!({
        "apiVersion": format!("{CLUSTER_GROUP}/{cluster_version}"),
        "kind": "Cluster",
        "metadata": {
            "name": name,
            "namespace": info.namespace,
            "labels": {MANAGED_BY_LABEL: OWNERSHIP_LABEL_VALUE},
        },
        "spec": {
            "infrastructureRef": infrastructure_ref,
            "controlPlaneEndpoint": {
                "host": info.api_server_internal.host,
                "port": info.api_server_internal.port,
            },
        },
    })
}

fn conditions<'a>(cluster: &'a Value, path: &[&str]) -> &'a [Value] {
    let mut v = cluster.get("status");
    for p in path {
        v = v.and_then(|x| x.get(*p));
    }
    v.and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn is_true(conditions: &[Value]) -> bool {
    conditions
        .iter()
        .any(|c| c["type"] == CONTROL_PLANE_INITIALIZED && c["status"] == "True")
}

fn set_path(target: &mut Value, path: &[&str], value: Value) {
    let mut v = target;
    for p in &path[..path.len() - 1] {
        v = v
            .as_object_mut()
            .expect("status paths go through objects")
            .entry(*p)
            .or_insert_with(|| json!({}));
    }
    v[path[path.len() - 1]] = value;
}

/// The status to apply so that the live Cluster shows `ControlPlaneInitialized=True` in both forms, or
/// `None` when it already does (the condition is never withdrawn, so nothing is written again).
pub(crate) fn control_plane_initialized(
    live: &Value,
    cluster_version: &str,
    now: &str,
) -> Option<Value> {
    let paths = paths(cluster_version);
    let v2 = conditions(live, paths.v1beta2);
    let v1 = conditions(live, paths.v1beta1);
    if is_true(v2) && is_true(v1) {
        return None;
    }
    let since = |list: &[Value]| {
        list.iter()
            .find(|c| c["type"] == CONTROL_PLANE_INITIALIZED && c["status"] == "True")
            .and_then(|c| c.get("lastTransitionTime").cloned())
            .unwrap_or_else(|| Value::String(now.to_string()))
    };
    let v2_entry = json!({
        "type": CONTROL_PLANE_INITIALIZED,
        "status": "True",
        "reason": INITIALIZED_REASON,
        "message": "the OpenShift control plane is not managed by Cluster API and is running",
        "lastTransitionTime": since(v2),
    });
    // The v1beta1 list is atomic: send the other writers' entries along, or they would be removed.
    let mut v1_list: Vec<Value> = v1
        .iter()
        .filter(|c| c["type"] != CONTROL_PLANE_INITIALIZED)
        .cloned()
        .collect();
    v1_list.push(json!({
        "type": CONTROL_PLANE_INITIALIZED,
        "status": "True",
        "lastTransitionTime": since(v1),
    }));
    let mut status = json!({});
    set_path(&mut status, paths.v1beta2, json!([v2_entry]));
    set_path(&mut status, paths.v1beta1, Value::Array(v1_list));
    Some(json!({
        "apiVersion": live.get("apiVersion").cloned().unwrap_or(Value::Null),
        "kind": "Cluster",
        "metadata": {
            "name": live.pointer("/metadata/name").cloned().unwrap_or(Value::Null),
            "namespace": live.pointer("/metadata/namespace").cloned().unwrap_or(Value::Null),
        },
        "status": status,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::{Endpoint, Platform};

    fn info() -> ClusterInfo {
        ClusterInfo {
            infrastructure_name: "demo-x7k2p".into(),
            api_server_internal: Endpoint {
                host: "api-int.demo.example.com".into(),
                port: 6443,
            },
            namespace: "openshift-cluster-api".into(),
        }
    }

    #[test]
    fn refers_to_the_infra_cluster_in_the_form_of_the_cluster_version() {
        let aws = crate::platform::infra_cluster(Platform::Aws);
        let v2 = desired_cluster(
            &info(),
            aws,
            "infrastructure.cluster.x-k8s.io/v1beta2",
            "v1beta2",
        );
        assert_eq!(v2["apiVersion"], "cluster.x-k8s.io/v1beta2");
        assert_eq!(
            v2["spec"]["infrastructureRef"],
            json!({"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AWSCluster", "name": "demo-x7k2p"})
        );
        assert_eq!(
            v2["spec"]["controlPlaneEndpoint"],
            json!({"host": "api-int.demo.example.com", "port": 6443})
        );
        let v1 = desired_cluster(
            &info(),
            aws,
            "infrastructure.cluster.x-k8s.io/v1beta2",
            "v1beta1",
        );
        assert_eq!(
            v1["spec"]["infrastructureRef"],
            json!({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AWSCluster",
                   "name": "demo-x7k2p", "namespace": "openshift-cluster-api"})
        );
    }

    #[test]
    fn marks_both_condition_forms_keeping_other_v1beta1_entries() {
        let live = json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
            "metadata": {"name": "demo-x7k2p", "namespace": "openshift-cluster-api"},
            "status": {"deprecated": {"v1beta1": {"conditions": [
                {"type": "Ready", "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}}
        });
        let status = control_plane_initialized(&live, "v1beta2", "2026-05-05T05:05:05Z").unwrap();
        let v2 = &status["status"]["conditions"];
        assert_eq!(v2.as_array().unwrap().len(), 1);
        assert_eq!(v2[0]["type"], "ControlPlaneInitialized");
        assert_eq!(v2[0]["status"], "True");
        assert_eq!(v2[0]["reason"], "Initialized");
        let v1 = status["status"]["deprecated"]["v1beta1"]["conditions"]
            .as_array()
            .unwrap();
        assert_eq!(v1.len(), 2);
        assert_eq!(v1[0]["type"], "Ready");
        assert_eq!(
            v1[1],
            json!({"type": "ControlPlaneInitialized", "status": "True", "lastTransitionTime": "2026-05-05T05:05:05Z"})
        );

        // Applied: nothing more to do, whatever the time.
        let mut done = live.clone();
        done["status"] = status["status"].clone();
        assert_eq!(
            control_plane_initialized(&done, "v1beta2", "2027-01-01T00:00:00Z"),
            None
        );
    }

    #[test]
    fn a_v1beta1_cluster_keeps_the_forms_the_other_way_round() {
        let live = json!({"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
            "metadata": {"name": "x"}, "status": {"conditions": [
                {"type": "ControlPlaneInitialized", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}});
        let status = control_plane_initialized(&live, "v1beta1", "2026-05-05T05:05:05Z").unwrap();
        assert_eq!(
            status["status"]["v1beta2"]["conditions"][0]["type"],
            "ControlPlaneInitialized"
        );
        // The v1beta1 entry was already True: its transition time is kept.
        assert_eq!(
            status["status"]["conditions"][0]["lastTransitionTime"],
            "2026-01-01T00:00:00Z"
        );
    }
}
