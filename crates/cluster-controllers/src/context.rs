//! What every controller reads and how it writes: the shared watch caches, the platform decision, CRD
//! readiness, and server-side apply of owned objects with a zero-request "unchanged" check.

use std::sync::Arc;
use std::time::Duration;

use capi_apply::drift::{is_subset, normalize};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::{Client, ResourceExt};
use serde_json::Value;
use tokio::sync::Notify;

use crate::config::{Config, ControllerKind};
use crate::error::{ControllerError, InputError};
use crate::metrics::Metrics;
use crate::names::*;
use crate::platform::{self, ClusterInfo, Platform, PlatformDecision};
use crate::status::{State, Wait};
use crate::watch::{Kind, Watch, WatchKey, Watches};

/// Shared by the controllers of one process.
pub(crate) struct Context {
    pub(crate) client: Client,
    pub(crate) config: Config,
    pub(crate) watches: Watches,
    pub(crate) metrics: Arc<Metrics>,
}

/// How a reconcile ends.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// A cache has not finished its initial list: no conclusion yet, look again shortly.
    Syncing,
    /// A conclusion; `recheck` asks for another reconcile after that long even without an event.
    Report {
        state: State,
        recheck: Option<Duration>,
    },
}

impl Outcome {
    pub(crate) fn report(state: State) -> Outcome {
        Outcome::Report {
            state,
            recheck: None,
        }
    }
}

/// Early exit of a reconcile: a conclusion reached before the end, or an error.
#[derive(Debug)]
pub(crate) enum Exit {
    Outcome(Outcome),
    Error(ControllerError),
}

impl From<ControllerError> for Exit {
    fn from(e: ControllerError) -> Self {
        Exit::Error(e)
    }
}

impl From<InputError> for Exit {
    fn from(e: InputError) -> Self {
        Exit::Error(e.into())
    }
}

impl From<Outcome> for Exit {
    fn from(o: Outcome) -> Self {
        Exit::Outcome(o)
    }
}

/// A supported platform and what `Infrastructure/cluster` says about the cluster.
pub(crate) struct Cluster {
    pub(crate) platform: Platform,
    pub(crate) info: ClusterInfo,
    pub(crate) infrastructure: Arc<DynamicObject>,
}

/// A CRD that is Established: what to talk to its kind with.
#[derive(Clone, Debug)]
pub(crate) struct ServedKind {
    pub(crate) kind: Kind,
}

impl Context {
    /// A watch that wakes `wake`; its cache must have completed its first list, and a failing watch
    /// is an error.
    pub(crate) fn synced(&self, key: &WatchKey, wake: &Arc<Notify>) -> Result<Arc<Watch>, Exit> {
        let watch = self.watches.watch(key, wake);
        if let Some(e) = watch.error() {
            return Err(e.into());
        }
        if !watch.is_ready() {
            return Err(Outcome::Syncing.into());
        }
        Ok(watch)
    }

    /// The platform and cluster facts, or the conclusion when there is nothing to do on this cluster.
    pub(crate) fn cluster(&self, wake: &Arc<Notify>) -> Result<Cluster, Exit> {
        let watch = self.synced(
            &WatchKey::object(Kind::infrastructure(), None, INFRASTRUCTURE_NAME),
            wake,
        )?;
        let infrastructure = watch.get(INFRASTRUCTURE_NAME);
        let data = infrastructure.as_ref().map(|i| &i.data);
        match platform::decide(data) {
            PlatformDecision::Unset => Err(Outcome::report(State::Waiting {
                wait: Wait::Platform,
                message: "waiting for status.platformStatus.type of Infrastructure cluster".into(),
            })
            .into()),
            PlatformDecision::Unsupported { platform, reason } => {
                Err(Outcome::report(State::PlatformNotSupported {
                    message: format!(
                        "Cluster API is not yet implemented on this platform ({platform}: {reason}); nothing to do"
                    ),
                })
                .into())
            }
            PlatformDecision::Supported(platform) => {
                let infrastructure = infrastructure.expect("a decided platform has an object");
                let info =
                    ClusterInfo::from_infrastructure(&infrastructure.data, &self.config.namespace)?;
                Ok(Cluster {
                    platform,
                    info,
                    infrastructure,
                })
            }
        }
    }

    /// The kind a CRD serves (its storage version) once the CRD is Established; `None` while it is not
    /// (or does not exist).
    pub(crate) fn served(&self, crd: &str, wake: &Arc<Notify>) -> Result<Option<ServedKind>, Exit> {
        let watch = self.synced(&WatchKey::object(Kind::crd(), None, crd), wake)?;
        Ok(watch.get(crd).and_then(|c| served_kind(&c.data)))
    }

    /// Like [`Context::served`] for every CRD in `crds`; when any is not Established, the conclusion is
    /// to wait for them.
    pub(crate) fn require(
        &self,
        crds: &[String],
        wake: &Arc<Notify>,
    ) -> Result<Vec<ServedKind>, Exit> {
        let mut served = Vec::new();
        let mut missing = Vec::new();
        for crd in crds {
            match self.served(crd, wake)? {
                Some(kind) => served.push(kind),
                None => missing.push(crd.as_str()),
            }
        }
        if missing.is_empty() {
            return Ok(served);
        }
        Err(Outcome::report(State::Waiting {
            wait: Wait::CustomResourceDefinitions,
            message: format!(
                "waiting for CustomResourceDefinition {} to be Established (capi-installer installs it)",
                missing.join(", ")
            ),
        })
        .into())
    }
}

/// The storage version of an Established, served CRD.
fn served_kind(crd: &Value) -> Option<ServedKind> {
    let established = crd
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Established" && c["status"] == "True")
        });
    if !established {
        return None;
    }
    let spec = crd.get("spec")?;
    let version = spec
        .get("versions")?
        .as_array()?
        .iter()
        .find(|v| v["storage"] == true && v["served"] == true)?;
    Some(ServedKind {
        kind: Kind::new(
            spec.get("group")?.as_str()?,
            version.get("name")?.as_str()?,
            spec.pointer("/names/kind")?.as_str()?,
            spec.pointer("/names/plural")?.as_str()?,
        ),
    })
}

/// What [`Writer::sync`] did.
#[derive(Debug)]
pub(crate) enum Synced {
    Unchanged(Arc<DynamicObject>),
    Written(Arc<DynamicObject>),
    /// The object exists and is not ours; the message says whose it is.
    Foreign(String),
}

/// Writes of one controller: server-side apply with its field manager.
pub(crate) struct Writer<'a> {
    pub(crate) ctx: &'a Context,
    pub(crate) controller: ControllerKind,
}

impl Writer<'_> {
    fn api(&self, kind: &Kind, namespace: Option<&str>) -> Api<DynamicObject> {
        let resource = kind.api_resource();
        match namespace {
            Some(ns) => Api::namespaced_with(self.ctx.client.clone(), ns, &resource),
            None => Api::all_with(self.ctx.client.clone(), &resource),
        }
    }

    /// Makes the object `desired` (a namespaced object of `kind`) exist with the fields we set, writing
    /// only when the cached live object lacks one of them. `owned` says whether a live object is ours;
    /// one that is not is left alone. A cache miss is confirmed with a GET before creating: a
    /// lagging cache must never turn into taking over someone else's object.
    pub(crate) async fn sync(
        &self,
        kind: &Kind,
        desired: &Value,
        cached: Option<Arc<DynamicObject>>,
        owned: impl Fn(&DynamicObject) -> Option<String>,
    ) -> Result<Synced, ControllerError> {
        let (namespace, name) = ns_name(desired);
        let what = describe(kind, &namespace, &name);
        let api = self.api(kind, Some(&namespace));
        let live = match cached {
            Some(live) => Some(live),
            None => api
                .get_opt(&name)
                .await
                .map_err(|e| ControllerError::api("get", &what, e))?
                .map(Arc::new),
        };
        if let Some(live) = &live {
            if let Some(owner) = owned(live) {
                return Ok(Synced::Foreign(format!(
                    "{what} exists and is managed by {owner}, not by capi-controllers: left alone"
                )));
            }
            if !needs_apply(desired, live) {
                return Ok(Synced::Unchanged(live.clone()));
            }
        }
        let applied = self.apply(&api, &what, &name, desired, false).await?;
        tracing::info!(controller = self.controller.name(), object = %what,
            action = if live.is_some() { "updated" } else { "created" }, "applied");
        Ok(Synced::Written(Arc::new(applied)))
    }

    /// Applies `desired_status` (apiVersion, kind, metadata name/namespace and `status`) to the status
    /// subresource.
    pub(crate) async fn apply_status(
        &self,
        kind: &Kind,
        desired_status: &Value,
    ) -> Result<DynamicObject, ControllerError> {
        let (namespace, name) = ns_name(desired_status);
        let what = describe(kind, &namespace, &name);
        let api = self.api(kind, Some(&namespace));
        let applied = self.apply(&api, &what, &name, desired_status, true).await?;
        tracing::info!(controller = self.controller.name(), object = %what, "status applied");
        Ok(applied)
    }

    async fn apply(
        &self,
        api: &Api<DynamicObject>,
        what: &str,
        name: &str,
        body: &Value,
        status: bool,
    ) -> Result<DynamicObject, ControllerError> {
        // Force: the fields we send are ours by definition (the object is ours); strict validation: a
        // field the installed CRD does not know is a bug to surface, not to have silently pruned.
        let mut params = PatchParams::apply(self.controller.field_manager()).force();
        params.field_validation = Some(kube::api::ValidationDirective::Strict);
        let result = if status {
            api.patch_status(name, &params, &Patch::Apply(body)).await
        } else {
            api.patch(name, &params, &Patch::Apply(body)).await
        };
        let verb = if status { "apply status of" } else { "apply" };
        let applied = result.map_err(|e| ControllerError::api(verb, what, e))?;
        self.ctx.metrics.wrote(self.controller.name());
        Ok(applied)
    }
}

/// Whether the live object lacks a field of `desired` or has another value in one (a semantic subset
/// test, as the installer's apply engine does: fields set by others and defaults do not count).
pub(crate) fn needs_apply(desired: &Value, live: &DynamicObject) -> bool {
    let Ok(desired) = serde_json::from_value::<DynamicObject>(desired.clone()) else {
        return true;
    };
    // Items of a list response carry no apiVersion and kind (built-in kinds; custom resources do), so
    // an object cached from a watch's initial list has none: it is the kind we compare it with. Without
    // this, a restarted pod would find every Secret "changed" and write it on every wake-up.
    let live = if live.types.is_none() {
        let mut typed = live.clone();
        typed.types = desired.types.clone();
        std::borrow::Cow::Owned(typed)
    } else {
        std::borrow::Cow::Borrowed(live)
    };
    !is_subset(&normalize(&desired), &normalize(&live))
}

/// `None` when the object carries our ownership label; otherwise who manages it (for messages).
pub(crate) fn owned_by_label(live: &DynamicObject) -> Option<String> {
    match live.labels().get(MANAGED_BY_LABEL) {
        Some(v) if v == OWNERSHIP_LABEL_VALUE => None,
        Some(v) => Some(format!("{v:?} (label {MANAGED_BY_LABEL})")),
        None => Some(format!(
            "[{}] (no label {MANAGED_BY_LABEL}={OWNERSHIP_LABEL_VALUE})",
            capi_apply::ownership::field_managers(live).join(", ")
        )),
    }
}

fn ns_name(obj: &Value) -> (String, String) {
    let s = |p: &str| {
        obj.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    (s("/metadata/namespace"), s("/metadata/name"))
}

pub(crate) fn describe(kind: &Kind, namespace: &str, name: &str) -> String {
    format!("{} {namespace}/{name}", kind.kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_crd_serves_its_storage_version_once_established() {
        let mut crd = json!({
            "spec": {"group": "infrastructure.cluster.x-k8s.io",
                "names": {"kind": "AWSCluster", "plural": "awsclusters"},
                "versions": [
                    {"name": "v1beta1", "served": false, "storage": false},
                    {"name": "v1beta2", "served": true, "storage": true}]},
            "status": {"conditions": [{"type": "Established", "status": "False"}]}
        });
        assert!(served_kind(&crd).is_none());
        crd["status"]["conditions"][0]["status"] = json!("True");
        let served = served_kind(&crd).unwrap();
        assert_eq!(
            served.kind,
            Kind::new(
                "infrastructure.cluster.x-k8s.io",
                "v1beta2",
                "AWSCluster",
                "awsclusters"
            )
        );
        assert_eq!(
            served.kind.api_version(),
            "infrastructure.cluster.x-k8s.io/v1beta2"
        );
    }

    #[test]
    fn needs_apply_ignores_fields_set_by_others() {
        let desired = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "a", "namespace": "n", "labels": {"x": "1"}}, "data": {"k": "dg=="}});
        let mut live: DynamicObject =
            serde_json::from_value(json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "a", "namespace": "n", "labels": {"x": "1", "other": "2"},
                "resourceVersion": "7", "uid": "u"},
            "data": {"k": "dg==", "extra": "eA=="}, "type": "Opaque"}))
            .unwrap();
        assert!(!needs_apply(&desired, &live));
        live.data["data"]["k"] = json!("dw==");
        assert!(needs_apply(&desired, &live));

        // As cached from a list: no apiVersion and kind.
        live.data["data"]["k"] = json!("dg==");
        live.types = None;
        assert!(!needs_apply(&desired, &live));
    }

    #[test]
    fn ownership_is_the_label() {
        let ours: DynamicObject =
            serde_json::from_value(json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "a", "labels": {MANAGED_BY_LABEL: OWNERSHIP_LABEL_VALUE}}}))
            .unwrap();
        assert_eq!(owned_by_label(&ours), None);
        let theirs: DynamicObject = serde_json::from_value(json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "a", "managedFields": [{"manager": "kubectl", "operation": "Apply"}]}}))
        .unwrap();
        assert_eq!(
            owned_by_label(&theirs).unwrap(),
            "[kubectl] (no label app.kubernetes.io/managed-by=capi-controllers)"
        );
    }
}
