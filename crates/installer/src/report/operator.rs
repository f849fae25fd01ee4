//! Writes the `status` of `ClusterOperator/cluster-api` ([`capi_status::operator`]: built from the
//! conditions and compared with the live status) with server-side apply, only when it differs. The live
//! status is what the installer knows without a request ([`KnownOperator`]): a pass reads nothing.

use std::sync::{Arc, Mutex};

use capi_openshift::controller_status::ControllerResult;
use capi_openshift::time::now_rfc3339;
use capi_openshift::{CLUSTER_OPERATOR_NAME, cluster_operator};
use capi_status::conditions::Condition;
use capi_status::operator;
use kube::Client;
use kube::api::{DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

use crate::names::FIELD_MANAGER;
use capi_runtime::optional_watch::OptionalKind;

/// `ClusterOperator/cluster-api` as the installer knows it without asking: its watch's copy, or what
/// its own last write returned while the watch has taken in no change since that write. Without the
/// second, a pass right after a write would compare with the status before it and write the same
/// again.
pub(crate) struct KnownOperator {
    watch: OptionalKind,
    written: Mutex<Option<Written>>,
}

/// The installer's last write, and the watch's position ([`OptionalKind::position`]) it was written
/// over.
#[derive(Clone)]
struct Written {
    over: u64,
    object: Arc<DynamicObject>,
}

/// What a pass knows: the object, and the watch's position it stands over.
struct Known {
    over: u64,
    current: Option<Arc<DynamicObject>>,
}

impl KnownOperator {
    /// Over a watch of the one object (only its deletion wakes a pass, which creates it again: the
    /// status is what the installer writes, not what it decides from).
    pub(crate) fn new(watch: OptionalKind) -> KnownOperator {
        KnownOperator {
            watch,
            written: Mutex::default(),
        }
    }

    /// The object; `None` when it does not exist (or its kind is not served).
    fn current(&self) -> Known {
        // The position first: a change that lands before the objects are read shows as a move.
        let at = self.watch.position();
        let watched = self.watch.objects().unwrap_or_default().into_iter().next();
        let written = self
            .written
            .lock()
            .expect("written ClusterOperator")
            .clone();
        known(at, watched, written)
    }

    /// Resolves once the watch has listed (or found the kind not served).
    pub(crate) async fn wait_known(&self) {
        self.watch.wait_known().await
    }

    fn wrote(&self, over: u64, object: DynamicObject) {
        *self.written.lock().expect("written ClusterOperator") = Some(Written {
            over,
            object: Arc::new(object),
        });
    }
}

/// The last write's answer while the watch stands where it stood when that write was made (`at`);
/// the watch's copy as soon as it moved (to the write, to someone else's change, or to a deletion,
/// also of an object the write created). Neither resourceVersions nor their order are used (they are
/// opaque, go back after an etcd restore, and a deleted object has none): a watch that moved to a
/// change made before the write makes one more write of the same status, never one less.
fn known(at: u64, watched: Option<Arc<DynamicObject>>, written: Option<Written>) -> Known {
    match written {
        Some(w) if w.over == at => Known {
            over: at,
            current: Some(w.object),
        },
        _ => Known {
            over: at,
            current: watched,
        },
    }
}

/// Writes the status (creating the ClusterOperator when missing) when it differs from the live one
/// ([`operator::desired`]).
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
        known.wrote(over, created.clone());
        current = Some(Arc::new(created));
    }
    let current_status = current.as_ref().and_then(|c| c.data.get("status"));
    let desired = operator::desired(
        conditions,
        controllers,
        current_status,
        &now_rfc3339(),
        version,
        related,
    );
    if !operator::differs(current_status, &desired) {
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

    fn written(over: u64, revision: &str) -> Option<Written> {
        Some(Written {
            over,
            object: at(revision)?,
        })
    }

    /// The resourceVersion of what is known (`None`: gone).
    fn revision(k: Known) -> Option<String> {
        k.current.and_then(|o| o.metadata.resource_version.clone())
    }

    #[test]
    fn the_last_write_is_known_until_the_watch_moves() {
        // The watch has taken in nothing since the write: the write is what is known.
        assert_eq!(
            revision(known(4, at("90"), written(4, "100"))).as_deref(),
            Some("100")
        );
        // Created by the installer, not watched yet: known, not created again.
        assert_eq!(
            revision(known(4, None, written(4, "100"))).as_deref(),
            Some("100")
        );
        // The watch moved: to the write, to someone else's change (even one made before the write,
        // by a lower resourceVersion: one more write, never one less).
        for watched in ["100", "120", "95"] {
            assert_eq!(
                revision(known(5, at(watched), written(4, "100"))).as_deref(),
                Some(watched)
            );
        }
        // To a deletion, also of the object the write created after the watch had shown it: gone,
        // so created again, though the watch shows nothing, as it did when the write was made.
        assert_eq!(revision(known(5, None, written(4, "100"))), None);
        assert_eq!(revision(known(6, None, written(4, "100"))), None);
        // Nothing written yet.
        assert_eq!(revision(known(4, at("90"), None)).as_deref(), Some("90"));
    }
}
