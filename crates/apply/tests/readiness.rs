//! Readiness and availability by kstatus rules (`capi_live::readiness`), on an object and on the
//! watch cache's slim copy of it: the cache keeps every field readiness reads.

use capi_apply::slim::Slimmer;
use capi_apply::{Availability, Readiness, availability, readiness};

fn obj(yaml: &str) -> kube::api::DynamicObject {
    serde_saphyr::from_str(yaml).expect("test YAML parses")
}

fn current() -> Readiness {
    Readiness::Current
}
fn in_progress(m: &str) -> Readiness {
    Readiness::InProgress(m.into())
}
fn failed(m: &str) -> Readiness {
    Readiness::Failed(m.into())
}

/// Checks each case on the object and on the watch cache's slim copy of it: the cache keeps every
/// field readiness reads.
fn check(group: &str, kind: &str, cases: &[(&str, &str, Readiness)]) {
    let slimmer = Slimmer {
        field_manager: "us".into(),
        annotations: Vec::new(),
    };
    for (name, yaml, want) in cases {
        let api_version = if group.is_empty() {
            "v1".to_owned()
        } else {
            format!("{group}/v1")
        };
        let o = obj(&format!("apiVersion: {api_version}\nkind: {kind}\n{yaml}"));
        assert_eq!(&readiness(group, kind, &o), want, "{kind}: {name}");
        let slim = slimmer.slim(&o);
        assert_eq!(&readiness(group, kind, &slim), want, "{kind}: {name}, slim");
    }
}

#[test]
fn generic_rules() {
    check(
        "example.io",
        "Widget",
        &[
            ("no status", "metadata: {name: w}\n", current()),
            (
                "terminating wins",
                "metadata: {name: w, deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: [x]}\nstatus: {conditions: [{type: Ready, status: 'True'}]}\n",
                Readiness::Terminating,
            ),
            (
                "generation not observed",
                "metadata: {name: w, generation: 2}\nstatus: {observedGeneration: 1, conditions: [{type: Ready, status: 'True'}]}\n",
                in_progress("generation 2 not observed yet (observed 1)"),
            ),
            (
                "ready true",
                "metadata: {name: w, generation: 2}\nstatus: {observedGeneration: 2, conditions: [{type: Ready, status: 'True'}]}\n",
                current(),
            ),
            (
                "ready false",
                "metadata: {name: w}\nstatus: {conditions: [{type: Ready, status: 'False', reason: Waiting, message: for godot}]}\n",
                in_progress("Ready=False: Waiting: for godot"),
            ),
            (
                "reconciling",
                "metadata: {name: w}\nstatus: {conditions: [{type: Reconciling, status: 'True', reason: Busy}, {type: Ready, status: 'True'}]}\n",
                in_progress("Reconciling=True: Busy"),
            ),
            (
                "stalled",
                "metadata: {name: w}\nstatus: {conditions: [{type: Stalled, status: 'True', reason: Broken, message: no way}]}\n",
                failed("Stalled=True: Broken: no way"),
            ),
            (
                "other conditions only",
                "metadata: {name: w}\nstatus: {conditions: [{type: Synced, status: 'False'}]}\n",
                current(),
            ),
        ],
    );
}

#[test]
fn custom_resource_definition() {
    check(
        "apiextensions.k8s.io",
        "CustomResourceDefinition",
        &[
            (
                "no status",
                "metadata: {name: c}\n",
                in_progress("not Established yet"),
            ),
            (
                "established",
                "metadata: {name: c}\nstatus: {conditions: [{type: NamesAccepted, status: 'True'}, {type: Established, status: 'True'}]}\n",
                current(),
            ),
            (
                "installing",
                "metadata: {name: c}\nstatus: {conditions: [{type: Established, status: 'False', reason: Installing}]}\n",
                in_progress("not Established yet"),
            ),
            (
                "not established for another reason",
                "metadata: {name: c}\nstatus: {conditions: [{type: Established, status: 'False', reason: Nope}]}\n",
                failed("Established=False: Nope"),
            ),
            (
                "names not accepted",
                "metadata: {name: c}\nstatus: {conditions: [{type: NamesAccepted, status: 'False', reason: ListKindConflict, message: taken}, {type: Established, status: 'False'}]}\n",
                failed("NamesAccepted=False: ListKindConflict: taken"),
            ),
        ],
    );
}

const AVAILABLE: &str = "conditions: [{type: Available, status: 'True'}, {type: Progressing, status: 'True', reason: NewReplicaSetAvailable}]";

#[test]
fn deployment() {
    let d = |spec: &str, status: &str| {
        format!(
            "metadata: {{name: d, generation: 1}}\nspec: {{progressDeadlineSeconds: 600, {spec}}}\nstatus: {{observedGeneration: 1, {status}}}\n"
        )
    };
    let cases = [
        (
            "available",
            d("replicas: 2", &format!("replicas: 2, updatedReplicas: 2, readyReplicas: 2, availableReplicas: 2, {AVAILABLE}")),
            current(),
        ),
        ("default one replica, none yet", d("", "replicas: 0"), in_progress("replicas: 0/1")),
        ("not updated", d("replicas: 2", "replicas: 2, updatedReplicas: 1"), in_progress("updated: 1/2")),
        (
            "old pods terminating",
            d("replicas: 1", "replicas: 2, updatedReplicas: 1"),
            in_progress("pending termination: 1"),
        ),
        (
            "updated not available",
            d("replicas: 1", "replicas: 1, updatedReplicas: 1, availableReplicas: 0"),
            in_progress("available: 0/1"),
        ),
        (
            "not ready",
            d("replicas: 1", "replicas: 1, updatedReplicas: 1, availableReplicas: 1, readyReplicas: 0"),
            in_progress("ready: 0/1"),
        ),
        (
            "replica set not yet available",
            d(
                "replicas: 1",
                "replicas: 1, updatedReplicas: 1, availableReplicas: 1, readyReplicas: 1, conditions: [{type: Available, status: 'True'}, {type: Progressing, status: 'True', reason: ReplicaSetUpdated}]",
            ),
            in_progress("new ReplicaSet not available yet"),
        ),
        (
            "available condition false",
            d(
                "replicas: 1",
                "replicas: 1, updatedReplicas: 1, availableReplicas: 1, readyReplicas: 1, conditions: [{type: Available, status: 'False'}, {type: Progressing, status: 'True', reason: NewReplicaSetAvailable}]",
            ),
            in_progress("Deployment not Available"),
        ),
        (
            "progress deadline exceeded",
            d(
                "replicas: 1",
                "replicas: 1, conditions: [{type: Progressing, status: 'False', reason: ProgressDeadlineExceeded, message: too slow}]",
            ),
            failed("Progressing=False: ProgressDeadlineExceeded: too slow"),
        ),
        (
            "spec changed, not observed",
            "metadata: {name: d, generation: 2}\nspec: {replicas: 1}\nstatus: {observedGeneration: 1, replicas: 1, updatedReplicas: 1, readyReplicas: 1, availableReplicas: 1}\n".to_owned(),
            in_progress("generation 2 not observed yet (observed 1)"),
        ),
        (
            "no progress deadline: Available is enough",
            "metadata: {name: d}\nspec: {replicas: 1}\nstatus: {replicas: 1, updatedReplicas: 1, readyReplicas: 1, availableReplicas: 1, conditions: [{type: Available, status: 'True'}]}\n".to_owned(),
            current(),
        ),
        ("scaled to zero", d("replicas: 0", "replicas: 0, conditions: [{type: Available, status: 'True'}, {type: Progressing, status: 'True', reason: NewReplicaSetAvailable}]"), current()),
    ];
    let cases: Vec<(&str, &str, Readiness)> = cases
        .iter()
        .map(|(n, y, r)| (*n, y.as_str(), r.clone()))
        .collect();
    check("apps", "Deployment", &cases);
}

/// Availability, as reported once a version was rolled out: a Deployment by its own `Available`
/// condition (a rolling update whose old pods serve is Available), other kinds by readiness; the same
/// on the cache's slim copy.
#[test]
fn availability_of_workloads() {
    let slimmer = Slimmer {
        field_manager: "us".into(),
        annotations: Vec::new(),
    };
    let unavailable = |status: &str, since: Option<&str>| Availability::Unavailable {
        status: status.into(),
        since: since.map(Into::into),
    };
    let cases = [
        (
            "Deployment",
            "rolling update, old pods serve",
            "metadata: {name: d, generation: 2}\nspec: {replicas: 1}\nstatus: {observedGeneration: 2, replicas: 2, updatedReplicas: 1, availableReplicas: 1, conditions: [{type: Available, status: 'True'}, {type: Progressing, status: 'True', reason: ReplicaSetUpdated}]}\n",
            Availability::Available,
        ),
        (
            "Deployment",
            "its pod killed",
            "metadata: {name: d, generation: 1}\nspec: {replicas: 1}\nstatus: {observedGeneration: 1, replicas: 1, updatedReplicas: 1, unavailableReplicas: 1, conditions: [{type: Available, status: 'False', reason: MinimumReplicasUnavailable, message: Deployment does not have minimum availability., lastTransitionTime: '2026-12-01T12:00:00Z'}]}\n",
            unavailable(
                "available replicas 0 of 1; Available=False: MinimumReplicasUnavailable: Deployment does not have minimum availability.",
                Some("2026-12-01T12:00:00Z"),
            ),
        ),
        (
            "Deployment",
            "not synced by its controller yet",
            "metadata: {name: d, generation: 1}\nspec: {replicas: 2}\n",
            unavailable(
                "available replicas 0 of 2; no Available condition yet",
                None,
            ),
        ),
        (
            "Deployment",
            "being deleted",
            "metadata: {name: d, deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: [x]}\nstatus: {conditions: [{type: Available, status: 'True'}]}\n",
            unavailable("being deleted", None),
        ),
        (
            "StatefulSet",
            "not ready",
            "metadata: {name: s}\nspec: {replicas: 1}\nstatus: {replicas: 1, readyReplicas: 0}\n",
            unavailable("InProgress: ready: 0/1", None),
        ),
    ];
    for (kind, name, yaml, want) in cases {
        let o = obj(&format!("apiVersion: apps/v1\nkind: {kind}\n{yaml}"));
        assert_eq!(availability("apps", kind, &o), want, "{kind}: {name}");
        let slim = slimmer.slim(&o);
        assert_eq!(
            availability("apps", kind, &slim),
            want,
            "{kind}: {name}, slim"
        );
    }
}

#[test]
fn stateful_set() {
    check(
        "apps",
        "StatefulSet",
        &[
            (
                "on delete",
                "metadata: {name: s}\nspec: {replicas: 3, updateStrategy: {type: OnDelete}}\n",
                current(),
            ),
            (
                "ready",
                "metadata: {name: s}\nspec: {replicas: 2}\nstatus: {replicas: 2, readyReplicas: 2, currentReplicas: 2, currentRevision: r1, updateRevision: r1}\n",
                current(),
            ),
            (
                "too few",
                "metadata: {name: s}\nspec: {replicas: 2}\nstatus: {replicas: 1}\n",
                in_progress("replicas: 1/2"),
            ),
            (
                "not ready",
                "metadata: {name: s}\nspec: {replicas: 2}\nstatus: {replicas: 2, readyReplicas: 1}\n",
                in_progress("ready: 1/2"),
            ),
            (
                "revision rolling",
                "metadata: {name: s}\nspec: {replicas: 1}\nstatus: {replicas: 1, readyReplicas: 1, currentReplicas: 1, currentRevision: r1, updateRevision: r2}\n",
                in_progress("waiting for the updated revision"),
            ),
            (
                "partition rollout done",
                "metadata: {name: s}\nspec: {replicas: 3, updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 2}}}\nstatus: {replicas: 3, readyReplicas: 3, updatedReplicas: 1}\n",
                current(),
            ),
            (
                "partition rollout pending",
                "metadata: {name: s}\nspec: {replicas: 3, updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 1}}}\nstatus: {replicas: 3, readyReplicas: 3, updatedReplicas: 1}\n",
                in_progress("updated: 1/2"),
            ),
        ],
    );
}

#[test]
fn daemon_set() {
    check(
        "apps",
        "DaemonSet",
        &[
            (
                "no status",
                "metadata: {name: d, generation: 1}\n",
                in_progress("status.observedGeneration not set yet"),
            ),
            (
                "no desired count",
                "metadata: {name: d, generation: 1}\nstatus: {observedGeneration: 1}\n",
                in_progress("status.desiredNumberScheduled not set yet"),
            ),
            (
                "all there",
                "metadata: {name: d, generation: 1}\nstatus: {observedGeneration: 1, desiredNumberScheduled: 2, currentNumberScheduled: 2, updatedNumberScheduled: 2, numberReady: 2, numberAvailable: 2}\n",
                current(),
            ),
            (
                "not ready",
                "metadata: {name: d, generation: 1}\nstatus: {observedGeneration: 1, desiredNumberScheduled: 2, currentNumberScheduled: 2, updatedNumberScheduled: 2, numberReady: 1}\n",
                in_progress("ready: 1/2"),
            ),
        ],
    );
}

#[test]
fn kinds_without_a_rule_are_current() {
    for kind in [
        "ServiceAccount",
        "ConfigMap",
        "ClusterRole",
        "ValidatingWebhookConfiguration",
    ] {
        assert_eq!(
            readiness(
                "",
                kind,
                &obj(&format!(
                    "apiVersion: v1\nkind: {kind}\nmetadata: {{name: x}}\n"
                ))
            ),
            current()
        );
    }
}
