//! Clusters the controllers have nothing to do on: no platform yet, or a platform without a Cluster
//! API provider (including Azure Stack Hub).

mod support;

use std::time::Duration;

use capi_cluster_controllers::ControllerKind;
use serde_json::json;
use support::*;

const T: Duration = Duration::from_secs(60);

/// Waits until every controller reports `status`/`reason` with a message containing `text`.
async fn wait_all(env: &Env, status: &str, reason: &str, text: &str) {
    for kind in ControllerKind::ALL {
        let type_ = format!("{}Available", kind.name());
        eventually(
            T,
            &format!("{type_} {status}/{reason} with {text:?}"),
            || async {
                let c = co_condition(&env.admin, &type_).await?;
                (c.status == status && c.reason == reason && c.message.contains(text)).then_some(())
            },
        )
        .await;
        let degraded = co_condition(&env.admin, &format!("{}Degraded", kind.name()))
            .await
            .unwrap();
        assert_eq!(degraded.status, "False", "{kind:?}: {degraded:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controllers_wait_for_a_platform_and_do_nothing_on_unsupported_ones() {
    let env = Env::start(false).await;
    ensure_namespace(&env.admin, NS).await;
    create_cluster_operator(&env.admin).await;
    // Infrastructure/cluster exists but its status has no platform yet.
    apply(
        &env.admin,
        &ar(
            "config.openshift.io",
            "v1",
            "Infrastructure",
            "infrastructures",
        ),
        &json!({"apiVersion": "config.openshift.io/v1", "kind": "Infrastructure",
            "metadata": {"name": "cluster"}, "spec": {"platformSpec": {"type": ""}}}),
        "openshift-installer",
    )
    .await;
    let _running = Running::start(
        env.controllers_admin_client(),
        env.config(&ControllerKind::ALL),
    );
    wait_all(&env, "False", "WaitingForPlatform", "platformStatus").await;

    set_infrastructure(&env.admin, "Nutanix", json!({}), json!({})).await;
    wait_all(
        &env,
        "True",
        "PlatformNotSupported",
        "Cluster API is not yet implemented on this platform (Nutanix",
    )
    .await;

    set_infrastructure(
        &env.admin,
        "Azure",
        json!({"azure": {"cloudName": "AzureStackCloud"}}),
        json!({}),
    )
    .await;
    wait_all(&env, "True", "PlatformNotSupported", "AzureStackCloud").await;

    // Nothing but their own conditions was written, and only to the status of the ClusterOperator.
    let written: Vec<String> = writes(&controller_requests(&env.audit(), None))
        .iter()
        .map(describe)
        .collect();
    assert!(!written.is_empty());
    assert!(
        written.iter().all(
            |w| w.starts_with("patch config.openshift.io/clusteroperators/status /cluster-api")
        ),
        "{written:#?}"
    );
}
