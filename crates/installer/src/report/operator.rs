//! The `status` of `ClusterOperator/cluster-api`: built from the conditions (pure), compared with the
//! live status ignoring timestamps, and written with server-side apply only when it differs. The live
//! status is what the installer knows without a request ([`KnownOperator`]): a pass reads nothing.

use std::sync::{Arc, Mutex};

use capi_openshift::controller_status::{self, ControllerResult};
use capi_openshift::time::now_rfc3339;
use capi_openshift::{CLUSTER_OPERATOR_NAME, cluster_operator, conditions};
use kube::Client;
use kube::api::{DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

use super::Condition;
use crate::names::FIELD_MANAGER;
use crate::optional_watch::OptionalKind;

/// `ClusterOperator/cluster-api` as the installer knows it without asking: its watch's copy, or what
/// its own last write returned while the watch has not moved since that write. Without the second, a
/// pass right after a write would compare with the status before it and write the same again.
pub(crate) struct KnownOperator {
    watch: OptionalKind,
    written: Mutex<Option<Written>>,
}

/// The installer's last write, and the watch's copy (by resourceVersion) it was written over.
#[derive(Clone)]
struct Written {
    over: Option<String>,
    object: Arc<DynamicObject>,
}

/// What a pass knows: the object, and the watch's copy it stands over.
struct Known {
    over: Option<String>,
    current: Option<Arc<DynamicObject>>,
}

impl KnownOperator {
    /// Over a watch of the one object (its changes wake nothing: the status is what the installer
    /// writes, not what it decides from).
    pub(crate) fn new(watch: OptionalKind) -> KnownOperator {
        KnownOperator {
            watch,
            written: Mutex::default(),
        }
    }

    /// The object; `None` when it does not exist (or its kind is not served).
    fn current(&self) -> Known {
        let watched = self.watch.objects().unwrap_or_default().into_iter().next();
        let written = self
            .written
            .lock()
            .expect("written ClusterOperator")
            .clone();
        known(watched, written)
    }

    /// Resolves once the watch has listed (or found the kind not served).
    pub(crate) async fn wait_known(&self) {
        self.watch.wait_known().await
    }

    fn wrote(&self, over: Option<String>, object: DynamicObject) {
        *self.written.lock().expect("written ClusterOperator") = Some(Written {
            over,
            object: Arc::new(object),
        });
    }
}

/// The last write's answer while the watch still shows the copy it was written over; the watch's
/// copy as soon as it moved (to the write, to someone else's change, or to a deletion). Only
/// resourceVersions' equality is used, never their order (they are opaque): a watch that moved to a
/// change made before the write makes one more write of the same status, never one less.
fn known(watched: Option<Arc<DynamicObject>>, written: Option<Written>) -> Known {
    let over = watched
        .as_ref()
        .and_then(|o| o.metadata.resource_version.clone());
    match written {
        Some(w) if w.over == over => Known {
            over,
            current: Some(w.object),
        },
        _ => Known {
            over,
            current: watched,
        },
    }
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
pub(crate) fn differs(a: Option<&Value>, b: &Value) -> bool {
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

/// Writes the status (creating the ClusterOperator when missing) when it differs from the live one:
/// the installer's `conditions`, then the reference's per-controller pair of each of `controllers`
/// (whose `Available` may be kept from the live status, so they are built here).
pub(crate) async fn write(
    client: &Client,
    known: &KnownOperator,
    conditions: &[Condition],
    controllers: &[(&str, ControllerResult)],
    version: Option<&str>,
    related: &[Value],
) -> Result<(), kube::Error> {
    let Known { over, mut current } = known.current();
    if current.is_none() {
        let mut object = cluster_operator::manifest();
        object["spec"] = json!({});
        let params = PatchParams::apply(FIELD_MANAGER).force();
        let created = cluster_operator::api(client)
            .patch(CLUSTER_OPERATOR_NAME, &params, &Patch::Apply(&object))
            .await?;
        tracing::info!("created ClusterOperator {CLUSTER_OPERATOR_NAME}");
        // Its status is empty, or another writer's if it was there after all (the apply returns it).
        known.wrote(over.clone(), created.clone());
        current = Some(Arc::new(created));
    }
    let current_status = current.as_ref().and_then(|c| c.data.get("status"));
    let own: Vec<capi_openshift::Condition<&str>> = conditions
        .iter()
        .map(|c| capi_openshift::Condition::new(&c.type_, c.status, c.reason.as_str(), &c.message))
        .collect();
    let controllers: Vec<capi_openshift::Condition> = controllers
        .iter()
        .flat_map(|(name, result)| controller_status::conditions(name, result, current_status))
        .collect();
    let desired = cluster_operator_status(
        &own,
        &controllers,
        current_status,
        &now_rfc3339(),
        version,
        related,
    );
    if !differs(current_status, &desired) {
        return Ok(());
    }
    let written = cluster_operator::apply_status(
        client,
        FIELD_MANAGER,
        &cluster_operator::with_status(desired),
    )
    .await?;
    known.wrote(over, written);
    tracing::debug!("ClusterOperator status written");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(revision: &str) -> Option<Arc<DynamicObject>> {
        let mut o = DynamicObject::new(
            CLUSTER_OPERATOR_NAME,
            &capi_openshift::resources::api_resource(&capi_openshift::CLUSTER_OPERATOR),
        );
        o.metadata.resource_version = Some(revision.into());
        Some(Arc::new(o))
    }

    fn written(over: Option<&str>, revision: &str) -> Option<Written> {
        Some(Written {
            over: over.map(str::to_string),
            object: at(revision)?,
        })
    }

    fn revision(k: Known) -> (Option<String>, Option<String>) {
        let current = k.current.and_then(|o| o.metadata.resource_version.clone());
        (k.over, current)
    }

    fn pair(over: Option<&str>, current: Option<&str>) -> (Option<String>, Option<String>) {
        (over.map(str::to_string), current.map(str::to_string))
    }

    #[test]
    fn the_last_write_is_known_until_the_watch_moves() {
        // The watch still shows the copy the write went over: the write is what is known.
        assert_eq!(
            revision(known(at("90"), written(Some("90"), "100"))),
            pair(Some("90"), Some("100"))
        );
        // Created by the installer, not watched yet: known, not created again.
        assert_eq!(
            revision(known(None, written(None, "100"))),
            pair(None, Some("100"))
        );
        // The watch moved: to the write, to someone else's change (even one made before the write:
        // one more write, never one less), to a deletion.
        for watched in ["100", "120", "95"] {
            assert_eq!(
                revision(known(at(watched), written(Some("90"), "100"))),
                pair(Some(watched), Some(watched))
            );
        }
        assert_eq!(
            revision(known(None, written(Some("90"), "100"))),
            pair(None, None)
        );
        // Nothing written yet.
        assert_eq!(
            revision(known(at("90"), None)),
            pair(Some("90"), Some("90"))
        );
    }
}
