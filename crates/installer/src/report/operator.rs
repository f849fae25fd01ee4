//! The `status` of `ClusterOperator/cluster-api`: built from the conditions (pure), compared with the
//! live status ignoring timestamps, and written with server-side apply only when it differs.

use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

use super::Condition;
use crate::config::{CLUSTER_OPERATOR, FIELD_MANAGER};

/// Builds the `status`, keeping `lastTransitionTime` of every condition whose status did not change,
/// so that an unchanged world produces an identical status (and no write).
pub fn cluster_operator_status(
    conditions: &[Condition],
    current: Option<&Value>,
    now: &str,
    version: Option<&str>,
    related_objects: &[Value],
) -> Value {
    let current_conditions = current
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array);
    let rendered: Vec<Value> = conditions
        .iter()
        .map(|c| {
            let status = if c.status { "True" } else { "False" };
            let since = current_conditions
                .and_then(|cs| cs.iter().find(|x| x["type"] == c.type_))
                .filter(|x| x["status"] == status)
                .and_then(|x| x.get("lastTransitionTime").cloned())
                .unwrap_or_else(|| Value::String(now.to_string()));
            let mut condition = json!({
                "type": c.type_,
                "status": status,
                "reason": c.reason.as_str(),
                "lastTransitionTime": since,
            });
            if !c.message.is_empty() {
                condition["message"] = Value::String(c.message.clone());
            }
            condition
        })
        .collect();
    let mut status = json!({ "conditions": rendered, "relatedObjects": related_objects });
    // OpenShift reports an operator's version once it has rolled out; while installing, the version of
    // the previous report stays.
    let available = conditions
        .iter()
        .any(|c| c.type_ == "Available" && c.status);
    match (available, version) {
        (true, Some(v)) => status["versions"] = json!([{ "name": "operator", "version": v }]),
        _ => {
            if let Some(previous) = current.and_then(|s| s.get("versions")) {
                status["versions"] = previous.clone();
            }
        }
    }
    status
}

/// Whether two statuses differ in anything but `lastTransitionTime` (linkerd's rule: writing only
/// timestamps is noise, and the installer promises zero writes in steady state).
pub fn differs(a: Option<&Value>, b: &Value) -> bool {
    fn strip(v: &Value) -> Value {
        let mut v = v.clone();
        if let Some(conditions) = v.get_mut("conditions").and_then(Value::as_array_mut) {
            for c in conditions {
                if let Some(m) = c.as_object_mut() {
                    m.remove("lastTransitionTime");
                }
            }
        }
        if let Some(m) = v.as_object_mut() {
            m.retain(|_, x| !x.is_null() && *x != json!([]));
        }
        v
    }
    match a {
        None => true,
        Some(a) => strip(a) != strip(b),
    }
}

pub fn resource() -> ApiResource {
    ApiResource {
        group: "config.openshift.io".into(),
        version: "v1".into(),
        api_version: "config.openshift.io/v1".into(),
        kind: "ClusterOperator".into(),
        plural: "clusteroperators".into(),
    }
}

/// Writes the status (creating the ClusterOperator when missing) when it differs from the live one.
pub async fn write(
    client: &Client,
    conditions: &[Condition],
    version: Option<&str>,
    related: &[Value],
) -> Result<(), kube::Error> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource());
    let current = api.get_opt(CLUSTER_OPERATOR).await?;
    let params = PatchParams::apply(FIELD_MANAGER).force();
    if current.is_none() {
        let object = json!({
            "apiVersion": "config.openshift.io/v1",
            "kind": "ClusterOperator",
            "metadata": {"name": CLUSTER_OPERATOR},
            "spec": {},
        });
        api.patch(CLUSTER_OPERATOR, &params, &Patch::Apply(&object))
            .await?;
        tracing::info!("created ClusterOperator {CLUSTER_OPERATOR}");
    }
    let current_status = current.as_ref().and_then(|c| c.data.get("status"));
    let desired =
        cluster_operator_status(conditions, current_status, &now_rfc3339(), version, related);
    if !differs(current_status, &desired) {
        return Ok(());
    }
    let body = json!({
        "apiVersion": "config.openshift.io/v1",
        "kind": "ClusterOperator",
        "metadata": {"name": CLUSTER_OPERATOR},
        "status": desired,
    });
    api.patch_status(CLUSTER_OPERATOR, &params, &Patch::Apply(&body))
        .await?;
    tracing::debug!("ClusterOperator status written");
    Ok(())
}

fn now_rfc3339() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}
