//! Readiness per kind, after kstatus (`sigs.k8s.io/cli-utils/pkg/kstatus/status`). Pure.

use std::fmt;

use kube_core::DynamicObject;
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    Current,
    InProgress(String),
    Failed(String),
    Terminating,
    NotFound,
}

impl Readiness {
    pub fn is_current(&self) -> bool {
        matches!(self, Readiness::Current)
    }
}

impl fmt::Display for Readiness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Readiness::Current => f.write_str("Current"),
            Readiness::InProgress(m) => write!(f, "InProgress: {m}"),
            Readiness::Failed(m) => write!(f, "Failed: {m}"),
            Readiness::Terminating => f.write_str("Terminating"),
            Readiness::NotFound => f.write_str("NotFound"),
        }
    }
}

/// The readiness of a live object of `group`/`kind`, by kstatus rules:
/// 1. `deletionTimestamp` → Terminating;
/// 2. `status.observedGeneration` present and ≠ `metadata.generation` → InProgress;
/// 3. condition `Reconciling=True` → InProgress, `Stalled=True` → Failed;
/// 4. the kind's own rule (CRD, Deployment, StatefulSet, DaemonSet);
/// 5. else a `Ready` condition: True → Current, otherwise InProgress;
/// 6. else Current.
pub fn readiness(group: &str, kind: &str, obj: &DynamicObject) -> Readiness {
    if obj.metadata.deletion_timestamp.is_some() {
        return Readiness::Terminating;
    }
    let status = obj.data.get("status");
    if let Some(observed) = status
        .and_then(|s| s.get("observedGeneration"))
        .and_then(Value::as_i64)
    {
        let generation = obj.metadata.generation.unwrap_or(0);
        if observed != generation {
            return Readiness::InProgress(format!(
                "generation {generation} not observed yet (observed {observed})"
            ));
        }
    }
    let conditions = Conditions(
        status
            .and_then(|s| s.get("conditions"))
            .and_then(Value::as_array),
    );
    if let Some(c) = conditions.get("Reconciling").filter(|c| c.is_true()) {
        return Readiness::InProgress(c.describe("Reconciling"));
    }
    if let Some(c) = conditions.get("Stalled").filter(|c| c.is_true()) {
        return Readiness::Failed(c.describe("Stalled"));
    }
    match (group, kind) {
        ("apiextensions.k8s.io", "CustomResourceDefinition") => return crd(&conditions),
        ("apps", "Deployment") => return deployment(obj, &conditions),
        ("apps", "StatefulSet") => return stateful_set(obj),
        ("apps", "DaemonSet") => return daemon_set(obj),
        _ => {}
    }
    match conditions.get("Ready") {
        Some(c) if c.is_true() => Readiness::Current,
        Some(c) => Readiness::InProgress(c.describe("Ready")),
        None => Readiness::Current,
    }
}

/// Whether a workload serves now, whatever its rollout: what is reported of a version once it was
/// rolled out, when waiting for it is over. Pure; answers the same on the watch cache's slim copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Availability {
    Available,
    Unavailable {
        /// What its status says, e.g. `available replicas 0 of 1; Available=False:
        /// MinimumReplicasUnavailable: Deployment does not have minimum availability.`
        status: String,
        /// Since when, by its own record (the `Available` condition's `lastTransitionTime`, RFC 3339),
        /// when it has one.
        since: Option<String>,
    },
}

/// A Deployment serves while its `Available` condition is True: the Deployment controller's own
/// judgement (enough replicas available for its `maxUnavailable`), which a rolling update to a new
/// ReplicaSet keeps while the old pods serve. Other kinds serve while they are Current
/// ([`readiness`]). An object being deleted does not serve.
pub fn availability(group: &str, kind: &str, obj: &DynamicObject) -> Availability {
    if obj.metadata.deletion_timestamp.is_some() {
        return Availability::Unavailable {
            status: "being deleted".into(),
            since: None,
        };
    }
    if (group, kind) != ("apps", "Deployment") {
        return match readiness(group, kind, obj) {
            Readiness::Current => Availability::Available,
            other => Availability::Unavailable {
                status: other.to_string(),
                since: None,
            },
        };
    }
    let status = obj.data.get("status");
    let conditions = Conditions(
        status
            .and_then(|s| s.get("conditions"))
            .and_then(Value::as_array),
    );
    let replicas = format!(
        "available replicas {} of {}",
        int(obj, "/status/availableReplicas", 0),
        int(obj, "/spec/replicas", 1)
    );
    match conditions.get("Available") {
        Some(c) if c.is_true() => Availability::Available,
        Some(c) => Availability::Unavailable {
            status: format!("{replicas}; {}", c.describe("Available")),
            since: Some(c.field("lastTransitionTime").to_string()).filter(|t| !t.is_empty()),
        },
        None => Availability::Unavailable {
            status: format!("{replicas}; no Available condition yet"),
            since: None,
        },
    }
}

/// Every field [`readiness`] reads for `group`/`kind` besides `metadata` (JSON pointers): what the
/// watch cache keeps of an object for it (`capi_apply::slim`). A new rule that reads a field adds it here,
/// or the cache's copy answers differently (the tests check each case on both).
pub fn reads(group: &str, kind: &str) -> &'static [&'static str] {
    const GENERIC: [&str; 2] = ["/status/observedGeneration", "/status/conditions"];
    match (group, kind) {
        ("apps", "Deployment") => &[
            "/status/observedGeneration",
            "/status/conditions",
            "/spec/replicas",
            "/spec/progressDeadlineSeconds",
            "/status/replicas",
            "/status/updatedReplicas",
            "/status/readyReplicas",
            "/status/availableReplicas",
        ],
        ("apps", "StatefulSet") => &[
            "/status/observedGeneration",
            "/status/conditions",
            "/spec/replicas",
            "/spec/updateStrategy",
            "/status/replicas",
            "/status/readyReplicas",
            "/status/currentReplicas",
            "/status/updatedReplicas",
            "/status/currentRevision",
            "/status/updateRevision",
        ],
        ("apps", "DaemonSet") => &[
            "/status/observedGeneration",
            "/status/conditions",
            "/status/desiredNumberScheduled",
            "/status/currentNumberScheduled",
            "/status/updatedNumberScheduled",
            "/status/numberReady",
            "/status/numberAvailable",
        ],
        _ => &GENERIC,
    }
}

struct Conditions<'a>(Option<&'a Vec<Value>>);

struct Condition<'a>(&'a Value);

impl<'a> Conditions<'a> {
    fn get(&self, type_: &str) -> Option<Condition<'a>> {
        self.0?
            .iter()
            .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
            .map(Condition)
    }
}

impl Condition<'_> {
    fn field(&self, name: &str) -> &str {
        self.0.get(name).and_then(Value::as_str).unwrap_or("")
    }
    fn is_true(&self) -> bool {
        self.field("status") == "True"
    }
    fn is_false(&self) -> bool {
        self.field("status") == "False"
    }
    fn describe(&self, type_: &str) -> String {
        let mut s = format!("{type_}={}", self.field("status"));
        for part in [self.field("reason"), self.field("message")] {
            if !part.is_empty() {
                s.push_str(": ");
                s.push_str(part);
            }
        }
        s
    }
}

fn int(obj: &DynamicObject, path: &str, default: i64) -> i64 {
    obj.data
        .pointer(path)
        .and_then(Value::as_i64)
        .unwrap_or(default)
}

fn crd(conditions: &Conditions) -> Readiness {
    if let Some(c) = conditions.get("NamesAccepted").filter(|c| c.is_false()) {
        return Readiness::Failed(c.describe("NamesAccepted"));
    }
    match conditions.get("Established") {
        Some(c) if c.is_true() => Readiness::Current,
        Some(c) if c.is_false() && c.field("reason") != "Installing" => {
            Readiness::Failed(c.describe("Established"))
        }
        _ => Readiness::InProgress("not Established yet".into()),
    }
}

fn deployment(obj: &DynamicObject, conditions: &Conditions) -> Readiness {
    // Without a progress deadline the controller never reports NewReplicaSetAvailable.
    let mut progressing = obj.data.pointer("/spec/progressDeadlineSeconds").is_none();
    if let Some(c) = conditions.get("Progressing") {
        if c.field("reason") == "ProgressDeadlineExceeded" {
            return Readiness::Failed(c.describe("Progressing"));
        }
        if c.is_true() && c.field("reason") == "NewReplicaSetAvailable" {
            progressing = true;
        }
    }
    let available = conditions.get("Available").is_some_and(|c| c.is_true());
    let spec = int(obj, "/spec/replicas", 1);
    let replicas = int(obj, "/status/replicas", 0);
    let updated = int(obj, "/status/updatedReplicas", 0);
    let ready = int(obj, "/status/readyReplicas", 0);
    let avail = int(obj, "/status/availableReplicas", 0);
    if spec > replicas {
        return Readiness::InProgress(format!("replicas: {replicas}/{spec}"));
    }
    if spec > updated {
        return Readiness::InProgress(format!("updated: {updated}/{spec}"));
    }
    if replicas > spec {
        return Readiness::InProgress(format!("pending termination: {}", replicas - spec));
    }
    if updated > avail {
        return Readiness::InProgress(format!("available: {avail}/{updated}"));
    }
    if spec > ready {
        return Readiness::InProgress(format!("ready: {ready}/{spec}"));
    }
    if !progressing {
        return Readiness::InProgress("new ReplicaSet not available yet".into());
    }
    if !available {
        return Readiness::InProgress("Deployment not Available".into());
    }
    Readiness::Current
}

fn stateful_set(obj: &DynamicObject) -> Readiness {
    if obj
        .data
        .pointer("/spec/updateStrategy/type")
        .and_then(Value::as_str)
        == Some("OnDelete")
    {
        return Readiness::Current;
    }
    let spec = int(obj, "/spec/replicas", 1);
    let partition = int(obj, "/spec/updateStrategy/rollingUpdate/partition", -1);
    let replicas = int(obj, "/status/replicas", 0);
    let ready = int(obj, "/status/readyReplicas", 0);
    let current = int(obj, "/status/currentReplicas", 0);
    let updated = int(obj, "/status/updatedReplicas", 0);
    if spec > replicas {
        return Readiness::InProgress(format!("replicas: {replicas}/{spec}"));
    }
    if spec > ready {
        return Readiness::InProgress(format!("ready: {ready}/{spec}"));
    }
    if partition != -1 {
        return if updated < spec - partition {
            Readiness::InProgress(format!("updated: {updated}/{}", spec - partition))
        } else {
            Readiness::Current
        };
    }
    if spec > current {
        return Readiness::InProgress(format!("current: {current}/{spec}"));
    }
    let rev = |p: &str| obj.data.pointer(p).and_then(Value::as_str).unwrap_or("");
    if rev("/status/currentRevision") != rev("/status/updateRevision") {
        return Readiness::InProgress("waiting for the updated revision".into());
    }
    Readiness::Current
}

fn daemon_set(obj: &DynamicObject) -> Readiness {
    if obj.data.pointer("/status/observedGeneration").is_none() {
        return Readiness::InProgress("status.observedGeneration not set yet".into());
    }
    let desired = int(obj, "/status/desiredNumberScheduled", -1);
    if desired < 0 {
        return Readiness::InProgress("status.desiredNumberScheduled not set yet".into());
    }
    for (what, path) in [
        ("current", "/status/currentNumberScheduled"),
        ("updated", "/status/updatedNumberScheduled"),
        ("ready", "/status/numberReady"),
        ("available", "/status/numberAvailable"),
    ] {
        let n = int(obj, path, 0);
        if desired > n {
            return Readiness::InProgress(format!("{what}: {n}/{desired}"));
        }
    }
    Readiness::Current
}
