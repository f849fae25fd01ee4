//! The core Cluster controller against the real control plane, on the real core and AWS CRDs.

mod support;

use std::time::Duration;

use capi_cluster_controllers::ControllerKind;
use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::json;
use support::*;

const AVAILABLE: &str = "CoreClusterControllerAvailable";
const T: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creates_the_cluster_marks_it_initialized_repairs_it_and_leaves_others_alone() {
    require_fixture!("transport-configmaps");
    let env = Env::start(false).await;
    openshift_on_aws(&env.admin).await;
    install_provider_crds(&env.admin, CORE_CM).await;
    install_provider_crds(&env.admin, AWS_CM).await;
    let config = env.config(&[ControllerKind::CoreCluster]);
    let running = Running::start(env.controllers_admin_client(), config.clone());

    // No InfraCluster yet: the Cluster would refer to nothing; wait (not an error).
    let waiting = wait_condition(&env.admin, AVAILABLE, "False", "WaitingForInfraCluster", T).await;
    assert!(waiting.message.contains("AWSCluster"), "{waiting:?}");

    let infra = ar(
        "infrastructure.cluster.x-k8s.io",
        "v1beta2",
        "AWSCluster",
        "awsclusters",
    );
    apply(
        &env.admin,
        &infra,
        &json!({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AWSCluster",
            "metadata": {"name": INFRA_NAME, "namespace": NS}, "spec": {"region": "eu-west-1"}}),
        "capi-controllers-infracluster",
    )
    .await;
    wait_condition(&env.admin, AVAILABLE, "True", "AsExpected", T).await;
    let clusters = namespaced(
        &env.admin,
        NS,
        &ar("cluster.x-k8s.io", "v1beta2", "Cluster", "clusters"),
    );
    let cluster = clusters.get(INFRA_NAME).await.unwrap();
    assert_eq!(
        cluster.data["spec"]["infrastructureRef"],
        json!({"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AWSCluster", "name": INFRA_NAME})
    );
    assert_eq!(
        cluster.data["spec"]["controlPlaneEndpoint"],
        json!({"host": "api-int.demo.example.com", "port": 6443})
    );
    let initialized = |c: &kube::api::DynamicObject, pointer: &str| {
        c.data
            .pointer(pointer)
            .and_then(|l| l.as_array())
            .is_some_and(|l| {
                l.iter()
                    .any(|x| x["type"] == "ControlPlaneInitialized" && x["status"] == "True")
            })
    };
    assert!(
        initialized(&cluster, "/status/conditions"),
        "{:#}",
        cluster.data["status"]
    );
    assert!(
        initialized(&cluster, "/status/deprecated/v1beta1/conditions"),
        "{:#}",
        cluster.data["status"]
    );
    // Created and marked: one write each, nothing more.
    let cluster_writes: Vec<String> = writes(&controller_requests(&env.audit(), None))
        .iter()
        .filter(|e| {
            e.object_ref
                .as_ref()
                .is_some_and(|o| o.resource == "clusters")
        })
        .map(describe)
        .collect();
    assert_eq!(cluster_writes.len(), 2, "{cluster_writes:?}");

    // Drift on the spec and on the status is repaired.
    clusters
        .patch(
            INFRA_NAME,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"controlPlaneEndpoint": {"port": 1234}}})),
        )
        .await
        .unwrap();
    clusters
        .patch_status(
            INFRA_NAME,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"conditions": [], "deprecated": {"v1beta1": {"conditions": []}}}})),
        )
        .await
        .unwrap();
    eventually(T, "Cluster repaired", || async {
        let c = clusters.get(INFRA_NAME).await.ok()?;
        (c.data["spec"]["controlPlaneEndpoint"]["port"] == 6443
            && initialized(&c, "/status/conditions")
            && initialized(&c, "/status/deprecated/v1beta1/conditions"))
        .then_some(())
    })
    .await;

    // Being deleted (a finalizer holds it): left to its deletion, not written.
    clusters
        .patch(
            INFRA_NAME,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": ["test.example.com/hold"]}})),
        )
        .await
        .unwrap();
    clusters
        .delete(INFRA_NAME, &DeleteParams::default())
        .await
        .unwrap();
    let mark = audit_mark(&env);
    let deleting = eventually(T, "deletion reported", || async {
        let c = co_condition(&env.admin, AVAILABLE).await?;
        c.message.contains("being deleted").then_some(c)
    })
    .await;
    assert_eq!(deleting.status, "True");
    let touched: Vec<String> = writes(&controller_requests(&env.audit(), Some(mark)))
        .iter()
        .filter(|e| {
            e.object_ref
                .as_ref()
                .is_some_and(|o| o.resource == "clusters")
        })
        .map(describe)
        .collect();
    assert!(
        touched.is_empty(),
        "wrote a Cluster being deleted: {touched:?}"
    );

    // Someone else's Cluster is left alone.
    running.stop().await;
    clusters
        .patch(
            INFRA_NAME,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    wait_gone(&clusters, INFRA_NAME, T, "Cluster gone").await;
    apply(
        &env.admin,
        &ar("cluster.x-k8s.io", "v1beta2", "Cluster", "clusters"),
        &json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
            "metadata": {"name": INFRA_NAME, "namespace": NS},
            "spec": {"controlPlaneEndpoint": {"host": "elsewhere.example.com", "port": 443}}}),
        "someone-else",
    )
    .await;
    let mark = audit_mark(&env);
    let _running = Running::start(env.controllers_admin_client(), config);
    let foreign = wait_condition(&env.admin, AVAILABLE, "True", "ExternallyManaged", T).await;
    assert!(foreign.message.contains("someone-else"), "{foreign:?}");
    let after = clusters.get(INFRA_NAME).await.unwrap();
    assert_eq!(
        after.data["spec"]["controlPlaneEndpoint"]["host"],
        "elsewhere.example.com"
    );
    assert!(
        writes(&controller_requests(&env.audit(), Some(mark)))
            .iter()
            .all(|e| e
                .object_ref
                .as_ref()
                .is_none_or(|o| o.resource != "clusters"))
    );
}
