//! The `status` of `ClusterOperator/cluster-api`, built from the conditions and compared with the live
//! status ignoring timestamps; the installer writes it only when [`differs`] says so.

use capi_openshift::conditions;
use capi_openshift::controller_status::{self, ControllerResult};
use serde_json::{Value, json};

use crate::conditions::Condition;

/// The status the installer wants: its `conditions`, then the reference's per-controller pair of each
/// of `controllers` (whose `Available` may be kept from `current`, so they are built here).
pub fn desired(
    own: &[Condition],
    controllers: &[(&str, ControllerResult)],
    current: Option<&Value>,
    now: &str,
    version: Option<&str>,
    related: &[Value],
) -> Value {
    let own: Vec<capi_openshift::Condition<&str>> = own
        .iter()
        .map(|c| capi_openshift::Condition::new(&c.type_, c.status, c.reason.as_str(), &c.message))
        .collect();
    let controllers: Vec<capi_openshift::Condition> = controllers
        .iter()
        .flat_map(|(name, result)| controller_status::conditions(name, result, current))
        .collect();
    cluster_operator_status(&own, &controllers, current, now, version, related)
}

/// Builds the `status`, keeping `lastTransitionTime` of every condition whose status did not change
/// and of every per-controller condition (`controllers`, the reference's) whose status, reason and
/// message did not change, as the reference keeps them, so that an unchanged world produces an
/// identical status (and no write).
pub(crate) fn cluster_operator_status<R: AsRef<str>>(
    conditions: &[capi_openshift::Condition<R>],
    controllers: &[capi_openshift::Condition],
    current: Option<&Value>,
    now: &str,
    version: Option<&str>,
    related_objects: &[Value],
) -> Value {
    let mut rendered = conditions::render(conditions, current, now);
    rendered.extend(conditions::render_moving_on_any_change(
        controllers,
        current,
        now,
    ));
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

/// Whether the live status differs from the desired one in what the installer owns — its conditions
/// (ignoring `lastTransitionTime`), `versions` and `relatedObjects` (linkerd's rule: writing only
/// timestamps is noise, and the installer promises zero writes in steady state). Conditions of other
/// types, written by other components with their own field manager, are not compared: server-side
/// apply keeps them, and comparing them would make the installer write forever.
pub fn differs(a: Option<&Value>, b: &Value) -> bool {
    let other = |v: &Value, key: &str| match v.get(key) {
        Some(x) if !x.is_null() && *x != json!([]) => Some(x.clone()),
        _ => None,
    };
    match a {
        None => true,
        Some(a) => {
            !conditions::unchanged(Some(a), conditions::live(Some(b)))
                || ["versions", "relatedObjects"]
                    .iter()
                    .any(|key| other(a, key) != other(b, key))
        }
    }
}
