//! Readiness gates against a real kube-apiserver: a CRD whose names are refused fails the gate at
//! once (Failed is terminal), instead of running into the timeout.

mod common;

use std::time::{Duration, Instant};

use capi_apply::{Phase, Readiness, wait_ready};
use common::*;
use kube::api::DynamicObject;

fn crd(name: &str, plural: &str) -> String {
    format!(
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: {name}}}
spec:
  group: example.io
  scope: Cluster
  names: {{kind: Widget, plural: {plural}, listKind: WidgetList}}
  versions:
    - name: v1
      served: true
      storage: true
      schema: {{openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}}}
"#
    )
}

#[tokio::test]
async fn refused_crd_names_fail_the_gate_before_the_timeout() {
    let cp = control_plane(false).await;
    let client = engine_client(&cp);
    let applier = applier(&client);

    // The first CRD takes kind Widget; the second asks for the same kind in the same group.
    let first = plan_of(&client, &crd("widgets.example.io", "widgets")).await;
    let phase = first.phase(Phase::CustomResourceDefinitions).unwrap();
    let out = applier
        .apply_phase(
            phase,
            |_| None::<std::sync::Arc<DynamicObject>>,
            &recorded(&first),
        )
        .await;
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    wait_ready(
        &client,
        &phase.wait_targets(),
        Duration::from_secs(30),
        Duration::from_millis(200),
    )
    .await
    .expect("the first CRD is Established");

    let second = plan_of(&client, &crd("gadgets.example.io", "gadgets")).await;
    let phase = second.phase(Phase::CustomResourceDefinitions).unwrap();
    let out = applier
        .apply_phase(
            phase,
            |_| None::<std::sync::Arc<DynamicObject>>,
            &recorded(&second),
        )
        .await;
    assert!(out.errors.is_empty(), "{:?}", out.errors);

    let started = Instant::now();
    let err = wait_ready(
        &client,
        &phase.wait_targets(),
        Duration::from_secs(60),
        Duration::from_millis(200),
    )
    .await
    .expect_err("names are refused");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "Failed must end the wait early"
    );
    assert!(err.failed);
    assert_eq!(err.not_ready.len(), 1);
    assert_eq!(
        err.not_ready[0].0.to_string(),
        "CustomResourceDefinition gadgets.example.io"
    );
    match &err.not_ready[0].1 {
        Readiness::Failed(message) => {
            assert!(message.starts_with("NamesAccepted=False"), "{message}")
        }
        other => panic!("expected Failed, got {other}"),
    }
    assert!(
        err.to_string().starts_with(
            "failed: CustomResourceDefinition gadgets.example.io: Failed: NamesAccepted=False"
        ),
        "{err}"
    );
}
