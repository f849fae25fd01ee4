//! The installer and the controllers pod together on one cluster: the installer installs core and AWS
//! from the real transport ConfigMaps, the controllers (as their own ServiceAccount) create the
//! InfraCluster, the Cluster, the kubeconfig and the user data, both report on the same ClusterOperator
//! — and then, over 60 s of steady state, neither writes anything.

mod support;

use std::time::Duration;

use capi_cluster_controllers::ControllerKind;
use capi_installer_controller::InstallerConfig;
use kube::api::{Patch, PatchParams};
use serde_json::json;
use support::*;

const T: Duration = Duration::from_secs(240);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn installer_and_controllers_write_nothing_in_steady_state() {
    require_fixture!("transport-configmaps");
    let env = Env::start(true).await;
    openshift_on_aws(&env.admin).await;

    // The release payload: the core CRD manifest and the transport ConfigMaps.
    let core_crds = fixture(&format!("transport-configmaps/{CORE_CRDS}")).unwrap();
    apply_as_release_payload(&env.admin, &read_documents(&core_crds)).await;
    for file in [CORE_CM, AWS_CM] {
        let cm = transport_without_webhooks(file);
        apply(
            &env.admin,
            &ar("", "v1", "ConfigMap", "configmaps"),
            &cm,
            "cluster-version-operator",
        )
        .await;
    }
    aws_machines(&env.admin).await;
    apply_as_release_payload(&env.admin, &repo_manifests("0000_31_capi-controllers")).await;

    // The installer (its user agent) and the controllers (their ServiceAccount and user agent).
    let installer = test_support::Running::start(
        installer_client(env.cp.admin_config()),
        InstallerConfig {
            images: [
                (
                    "cluster-capi-controllers",
                    "quay.io/openshift/origin-cluster-capi-controllers:4.21",
                ),
                (
                    "aws-cluster-api-controllers",
                    "quay.io/openshift/origin-aws-cluster-api-controllers:4.21",
                ),
                (
                    "kube-rbac-proxy",
                    "quay.io/openshift/origin-kube-rbac-proxy:4.21",
                ),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
            release_version: Some("4.21.0-test".into()),
            deployment_timeout: Duration::from_secs(180),
            ..Default::default()
        },
    );
    let sa_config = env.service_account_config(NS, "capi-controllers").await;
    let controllers = Running::start(
        controllers_client(sa_config),
        env.config(&ControllerKind::ALL),
    );

    // Installed, and every controller done: the ClusterOperator holds both writers' conditions.
    wait_condition(&env.admin, "Available", "True", "AsExpected", T).await;
    for kind in ControllerKind::ALL {
        wait_condition(
            &env.admin,
            &format!("{}Available", kind.name()),
            "True",
            "AsExpected",
            T,
        )
        .await;
    }
    let aws = namespaced(
        &env.admin,
        NS,
        &ar(
            "infrastructure.cluster.x-k8s.io",
            "v1beta2",
            "AWSCluster",
            "awsclusters",
        ),
    );
    assert_eq!(
        aws.get(INFRA_NAME).await.unwrap().data["status"]["ready"],
        true
    );
    let clusters = namespaced(
        &env.admin,
        NS,
        &ar("cluster.x-k8s.io", "v1beta2", "Cluster", "clusters"),
    );
    assert!(clusters.get_opt(INFRA_NAME).await.unwrap().is_some());
    let secrets = secrets(&env.admin, NS);
    for name in ["demo-x7k2p-kubeconfig", "worker-user-data"] {
        assert!(secrets.get_opt(name).await.unwrap().is_some(), "{name}");
    }
    let co = cluster_operators(&env.admin)
        .get("cluster-api")
        .await
        .unwrap();
    assert_eq!(co.data["status"]["versions"][0]["version"], "4.21.0-test");

    // Steady state: 60 s without a single write by either.
    let mark = audit_mark(&env);
    tokio::time::sleep(Duration::from_secs(60)).await;
    let events = env.audit();
    for (who, ua) in [
        ("installer", capi_installer_controller::user_agent()),
        ("controllers", capi_cluster_controllers::user_agent()),
    ] {
        let written: Vec<String> = writes(&requests_of(&events, &ua, Some(mark)))
            .iter()
            .map(describe)
            .collect();
        assert!(
            written.is_empty(),
            "{who} wrote in steady state: {written:#?}"
        );
    }

    // Neither undoes the other: a condition of the installer's and one of a controller's both survive
    // the other's next write (each owns its entries of the list).
    let before = co_condition(&env.admin, "CapiInstallerControllerAvailable")
        .await
        .unwrap();
    let patch = json!({"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
        "metadata": {"name": "cluster-api"},
        "status": {"conditions": [{"type": "SecretSyncControllerAvailable", "status": "False",
            "reason": "Tampered", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}});
    cluster_operators(&env.admin)
        .patch_status(
            "cluster-api",
            &PatchParams::apply("someone").force(),
            &Patch::Apply(&patch),
        )
        .await
        .unwrap();
    wait_condition(
        &env.admin,
        "SecretSyncControllerAvailable",
        "True",
        "AsExpected",
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(
        co_condition(&env.admin, "CapiInstallerControllerAvailable")
            .await
            .unwrap(),
        before
    );

    // A restarted pod (a new leader) fills its caches from lists, not from its own writes: it must
    // find everything in place, now and on later wake-ups.
    controllers.stop().await;
    let mark = audit_mark(&env);
    let sa_config = env.service_account_config(NS, "capi-controllers").await;
    let restarted = Running::start(
        controllers_client(sa_config),
        env.config(&ControllerKind::ALL),
    );
    let reconciled = |n: u64| {
        let metrics = restarted.metrics.clone();
        move || {
            let metrics = metrics.clone();
            async move {
                ControllerKind::ALL
                    .iter()
                    .all(|k| metrics.reconciles_of(k.name()) >= n)
                    .then_some(())
            }
        }
    };
    eventually(
        Duration::from_secs(60),
        "the restarted controllers reconcile",
        reconciled(1),
    )
    .await;
    // Wake them all again: an unrelated change of Infrastructure/cluster.
    apply(
        &env.admin,
        &ar(
            "config.openshift.io",
            "v1",
            "Infrastructure",
            "infrastructures",
        ),
        &json!({"apiVersion": "config.openshift.io/v1", "kind": "Infrastructure",
            "metadata": {"name": "cluster", "labels": {"touched": "yes"}}}),
        "someone-else",
    )
    .await;
    eventually(
        Duration::from_secs(60),
        "a second reconcile each",
        reconciled(2),
    )
    .await;
    let written: Vec<String> = writes(&controller_requests(&env.audit(), Some(mark)))
        .iter()
        .map(describe)
        .collect();
    assert!(
        written.is_empty(),
        "the restarted controllers wrote: {written:#?}"
    );

    restarted.stop().await;
    installer.stop().await;
}
