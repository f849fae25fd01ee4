//! The kubeconfig controller against the real control plane: the kubeconfig works, its token is
//! renewed without the Secret ever being empty or holding a token that no longer works.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use capi_cluster_controllers::ControllerKind;
use capi_cluster_controllers::kubeconfig::render;
use futures::StreamExt;
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;
use support::*;

const AVAILABLE: &str = "KubeconfigControllerAvailable";
const DEGRADED: &str = "KubeconfigControllerDegraded";
const T: Duration = Duration::from_secs(60);
const SECRET: &str = "demo-x7k2p-kubeconfig";

/// Who the API server says a kubeconfig's user is (an error when the token is not accepted).
async fn whoami(kubeconfig: &str) -> Result<String, kube::Error> {
    let kc = kube::config::Kubeconfig::from_yaml(kubeconfig).expect("kubeconfig parses");
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .expect("kubeconfig is complete");
    let client = kube::Client::try_from(config).expect("client");
    let review = Api::<SelfSubjectReview>::all(client)
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await?;
    Ok(review
        .status
        .and_then(|s| s.user_info)
        .and_then(|u| u.username)
        .unwrap_or_default())
}

fn kubeconfig_text(secret: &kube::api::DynamicObject) -> Option<String> {
    render::kubeconfig_of(&serde_json::to_value(secret).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issues_a_working_kubeconfig_rotates_its_token_and_repairs_it() {
    let env = Env::start(false).await;
    openshift_on_aws(&env.admin).await;
    let mut config = env.config(&[ControllerKind::Kubeconfig]);
    config.kubeconfig.rotate_after = Duration::from_secs(4);
    config.kubeconfig.token_lifetime = Duration::from_secs(600);
    let running = Running::start(env.controllers_admin_client(), config.clone());

    // The ServiceAccount the token is for is shipped with the controllers; without it: degraded.
    let degraded = wait_condition(&env.admin, DEGRADED, "True", "MissingSource", T).await;
    assert!(
        degraded.message.contains(
            "ServiceAccount openshift-cluster-api/capi-controllers-kubeconfig does not exist"
        ),
        "{degraded:?}"
    );
    let secrets = secrets(&env.admin, NS);
    assert!(secrets.get_opt(SECRET).await.unwrap().is_none());

    apply_as_release_payload(&env.admin, &repo_manifests("0000_31_capi-controllers")).await;
    wait_condition(&env.admin, AVAILABLE, "True", "AsExpected", T).await;
    let secret = secrets.get(SECRET).await.unwrap();
    assert_eq!(secret.data["type"], "cluster.x-k8s.io/secret");
    assert_eq!(
        secret.metadata.labels.as_ref().unwrap()["cluster.x-k8s.io/cluster-name"],
        INFRA_NAME
    );
    let first = kubeconfig_text(&secret).expect("value holds a kubeconfig");
    assert_eq!(
        whoami(&first).await.unwrap(),
        "system:serviceaccount:openshift-cluster-api:capi-controllers-kubeconfig"
    );

    // Rotation: follow every version of the Secret while the token is renewed twice.
    let seen: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
    let follower = {
        let seen = seen.clone();
        let api: Api<kube::api::DynamicObject> = secrets.clone();
        tokio::spawn(async move {
            let stream = watcher(
                api,
                watcher::Config::default().fields(&format!("metadata.name={SECRET}")),
            )
            .applied_objects();
            let mut stream = std::pin::pin!(stream);
            while let Some(Ok(s)) = stream.next().await {
                seen.lock().unwrap().push(kubeconfig_text(&s));
            }
        })
    };
    let first_token = render::token_of(&first).unwrap();
    let tokens = eventually(T, "two token renewals", || async {
        let seen = seen.lock().unwrap().clone();
        let mut tokens: Vec<String> = seen
            .iter()
            .flatten()
            .filter_map(|k| render::token_of(k))
            .collect();
        tokens.dedup();
        tokens.retain(|t| *t != first_token);
        (tokens.len() >= 2).then_some(tokens)
    })
    .await;
    follower.abort();
    for version in seen.lock().unwrap().iter() {
        let text = version.as_deref().expect("never without a kubeconfig");
        assert!(
            render::token_of(text).is_some(),
            "never without a token: {text}"
        );
    }
    assert_ne!(tokens[0], tokens[1]);
    // The replaced token still works: Cluster API switches over without an outage.
    assert_eq!(
        whoami(&first).await.unwrap(),
        "system:serviceaccount:openshift-cluster-api:capi-controllers-kubeconfig"
    );
    let current = kubeconfig_text(&secrets.get(SECRET).await.unwrap()).unwrap();
    assert!(whoami(&current).await.is_ok());

    // Drift: someone overwrites the kubeconfig; a working one comes back.
    let garbage = base64::engine::general_purpose::STANDARD.encode("garbage");
    secrets
        .patch(
            SECRET,
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"value": garbage}})),
        )
        .await
        .unwrap();
    let repaired = eventually(T, "kubeconfig repaired", || async {
        let text = kubeconfig_text(&secrets.get(SECRET).await.ok()?)?;
        render::token_of(&text).map(|_| text)
    })
    .await;
    assert!(whoami(&repaired).await.is_ok());

    // Someone else's Secret of that name is left alone.
    running.stop().await;
    secrets
        .delete(SECRET, &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(&secrets, SECRET, T, "Secret gone").await;
    apply(
        &env.admin,
        &ar("", "v1", "Secret", "secrets"),
        &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": SECRET, "namespace": NS},
            "data": {"value": garbage}}),
        "someone-else",
    )
    .await;
    let mark = audit_mark(&env);
    let _running = Running::start(env.controllers_admin_client(), config);
    wait_condition(&env.admin, AVAILABLE, "True", "ExternallyManaged", T).await;
    assert_eq!(
        secrets.get(SECRET).await.unwrap().data["data"]["value"],
        json!(garbage)
    );
    let touched: Vec<String> = writes(&controller_requests(&env.audit(), Some(mark)))
        .iter()
        .filter(|e| {
            e.object_ref
                .as_ref()
                .is_some_and(|o| o.resource == "secrets")
        })
        .map(describe)
        .collect();
    assert!(touched.is_empty(), "{touched:?}");
}
