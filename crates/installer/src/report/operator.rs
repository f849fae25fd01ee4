//! The `status` of `ClusterOperator/cluster-api`: built from the conditions (pure), compared with the
//! live status ignoring timestamps, and written with server-side apply only when it differs.

use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

use super::{Condition, OWNED_CONDITIONS};
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
    let rendered = render_conditions(conditions, current, now);
    let mut status = json!({ "conditions": rendered, "relatedObjects": related_objects });
    // OpenShift reports an operator's version once it has rolled out: the caller passes it only when
    // every provider is installed at this release; until then the version of the previous report stays.
    match version {
        Some(v) => status["versions"] = json!([{ "name": "operator", "version": v }]),
        None => {
            if let Some(previous) = current.and_then(|s| s.get("versions")) {
                status["versions"] = previous.clone();
            }
        }
    }
    status
}

/// Conditions as the API writes them, each keeping the `lastTransitionTime` of `current` (a status)
/// while its status is unchanged.
pub fn render_conditions(
    conditions: &[Condition],
    current: Option<&Value>,
    now: &str,
) -> Vec<Value> {
    let current_conditions = current
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array);
    conditions
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
        .collect()
}

/// Whether the live status differs from the desired one in what the installer owns — its conditions
/// (ignoring `lastTransitionTime`), `versions` and `relatedObjects` (linkerd's rule: writing only
/// timestamps is noise, and the installer promises zero writes in steady state). Conditions of other
/// types, written by other components with their own field manager, are not compared: server-side
/// apply keeps them, and comparing them would make the installer write forever.
pub fn differs(a: Option<&Value>, b: &Value) -> bool {
    fn strip(v: &Value) -> Value {
        let mut out = serde_json::Map::new();
        let conditions: Vec<Value> = v
            .get("conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|c| {
                c.get("type")
                    .and_then(Value::as_str)
                    .is_some_and(|t| OWNED_CONDITIONS.contains(&t))
            })
            .map(|c| {
                let mut c = c.clone();
                if let Some(m) = c.as_object_mut() {
                    m.remove("lastTransitionTime");
                }
                c
            })
            .collect();
        out.insert("conditions".into(), Value::Array(conditions));
        for key in ["versions", "relatedObjects"] {
            match v.get(key) {
                Some(x) if !x.is_null() && *x != json!([]) => {
                    out.insert(key.into(), x.clone());
                }
                _ => {}
            }
        }
        Value::Object(out)
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

/// Now, as Kubernetes writes times (RFC 3339, seconds, UTC).
pub fn now_rfc3339() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}
