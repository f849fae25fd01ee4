//! The user-data sync controller against the real control plane.

mod support;

use std::time::Duration;

use base64::Engine;
use capi_cluster_controllers::ControllerKind;
use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::json;
use support::*;

const AVAILABLE: &str = "SecretSyncControllerAvailable";
const DEGRADED: &str = "SecretSyncControllerDegraded";
const T: Duration = Duration::from_secs(60);
const SECRET: &str = "worker-user-data";

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

async fn put_source(env: &Env, data: serde_json::Value) {
    apply(
        &env.admin,
        &ar("", "v1", "Secret", "secrets"),
        &json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": SECRET, "namespace": MAPI_NS}, "data": data}),
        "machine-config-operator",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mirrors_the_user_data_repairs_it_and_never_empties_it() {
    let env = Env::start(false).await;
    openshift_cluster(
        &env.admin,
        "GCP",
        json!({"gcp": {"region": "us-east1", "projectID": "p"}}),
        json!({}),
    )
    .await;
    let config = env.config(&[ControllerKind::SecretSync]);
    let running = Running::start(env.controllers_admin_client(), config.clone());
    let target = secrets(&env.admin, NS);

    // No source yet (the machine-config operator writes it during installation): waiting.
    wait_condition(&env.admin, AVAILABLE, "False", "WaitingForSource", T).await;
    assert_eq!(
        co_condition(&env.admin, DEGRADED).await.unwrap().status,
        "False"
    );

    // A source without userData: a clear error, and nothing written.
    put_source(&env, json!({"disableTemplating": b64("true")})).await;
    let degraded = wait_condition(&env.admin, DEGRADED, "True", "MissingSource", T).await;
    assert_eq!(
        degraded.message,
        "Secret openshift-machine-api/worker-user-data: data.userData is not set"
    );
    assert!(target.get_opt(SECRET).await.unwrap().is_none());

    // With userData: mirrored as value, with the ignition format.
    put_source(
        &env,
        json!({"userData": b64("{\"ignition\":{\"version\":\"3.2.0\"}}")}),
    )
    .await;
    wait_condition(&env.admin, AVAILABLE, "True", "AsExpected", T).await;
    let mirrored = target.get(SECRET).await.unwrap();
    assert_eq!(
        mirrored.data["data"]["value"],
        json!(b64("{\"ignition\":{\"version\":\"3.2.0\"}}"))
    );
    assert_eq!(mirrored.data["data"]["format"], json!(b64("ignition")));
    assert_eq!(mirrored.data["type"], "Opaque");

    // Drift on the copy is repaired; a change of the source is followed.
    target
        .patch(
            SECRET,
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"value": b64("tampered")}})),
        )
        .await
        .unwrap();
    eventually(T, "copy repaired", || async {
        let s = target.get(SECRET).await.ok()?;
        (s.data["data"]["value"] == json!(b64("{\"ignition\":{\"version\":\"3.2.0\"}}")))
            .then_some(())
    })
    .await;
    put_source(&env, json!({"userData": b64("v2")})).await;
    eventually(T, "source change followed", || async {
        let s = target.get(SECRET).await.ok()?;
        (s.data["data"]["value"] == json!(b64("v2"))).then_some(())
    })
    .await;

    // The source loses userData: degraded, and the last good copy stays.
    put_source(&env, json!({"other": b64("x")})).await;
    wait_condition(&env.admin, DEGRADED, "True", "MissingSource", T).await;
    assert_eq!(
        target.get(SECRET).await.unwrap().data["data"]["value"],
        json!(b64("v2"))
    );

    // Someone else's Secret of that name is left alone.
    put_source(&env, json!({"userData": b64("v3")})).await;
    running.stop().await;
    target
        .delete(SECRET, &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(&target, SECRET, T, "copy gone").await;
    apply(
        &env.admin,
        &ar("", "v1", "Secret", "secrets"),
        &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": SECRET, "namespace": NS},
            "data": {"value": b64("mine")}}),
        "someone-else",
    )
    .await;
    let mark = audit_mark(&env);
    let _running = Running::start(env.controllers_admin_client(), config);
    let foreign = wait_condition(&env.admin, AVAILABLE, "True", "ExternallyManaged", T).await;
    assert!(foreign.message.contains("someone-else"), "{foreign:?}");
    assert_eq!(
        target.get(SECRET).await.unwrap().data["data"]["value"],
        json!(b64("mine"))
    );
    assert!(
        writes(&controller_requests(&env.audit(), Some(mark)))
            .iter()
            .all(|e| e
                .object_ref
                .as_ref()
                .is_none_or(|o| o.resource != "secrets"))
    );
}
