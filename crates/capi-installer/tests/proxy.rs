//! The cluster-wide proxy (issue 48): `Proxy/cluster` set, changed and removed, each followed on every
//! container of every provider Deployment within a pass; a bundle that sets a proxy variable itself
//! refused. The installer runs as its own ServiceAccount under exactly the shipped RBAC, so its read
//! of `Proxy/cluster` is the release's grant.

use std::collections::BTreeMap;
use std::time::Duration;

use capi_installer_controller::proxy::{TRUSTED_CA_CONFIGMAP, TRUSTED_CA_MOUNT, TRUSTED_CA_VOLUME};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use serde_json::{Value, json};
use test_support::*;

const MINUTE: Duration = Duration::from_secs(60);
const PROVIDERS: [&str; 2] = ["capi-controller-manager", "capa-controller-manager"];
const VARIABLES: [&str; 3] = ["HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"];

/// The proxy variables of every container of a provider Deployment, by container, and whether the
/// pod mounts the trusted CA bundle (the volume and every container's mount).
async fn proxy_of(
    deployments: &Api<Deployment>,
    name: &str,
) -> (BTreeMap<String, Vec<(String, String)>>, bool) {
    let d = deployments.get(name).await.unwrap();
    let pod = d.spec.unwrap().template.spec.unwrap();
    let mut variables = BTreeMap::new();
    let mut mounted = !pod.containers.is_empty();
    for c in &pod.containers {
        let env = c.env.clone().unwrap_or_default();
        variables.insert(
            c.name.clone(),
            env.iter()
                .filter(|e| VARIABLES.contains(&e.name.as_str()))
                .map(|e| (e.name.clone(), e.value.clone().unwrap_or_default()))
                .collect::<Vec<_>>(),
        );
        mounted &= c.volume_mounts.iter().flatten().any(|m| {
            m.name == TRUSTED_CA_VOLUME
                && m.mount_path == TRUSTED_CA_MOUNT
                && m.read_only == Some(true)
        });
    }
    let volume = pod.volumes.iter().flatten().any(|v| {
        v.name == TRUSTED_CA_VOLUME
            && v.config_map
                .as_ref()
                .is_some_and(|c| c.name == TRUSTED_CA_CONFIGMAP)
    });
    (variables, mounted && volume)
}

/// Waits until every container of both providers has exactly `want` as its proxy variables and the
/// CA bundle is mounted or not as `ca` says.
async fn providers_have(deployments: &Api<Deployment>, want: &[(&str, &str)], ca: bool) {
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    eventually(
        MINUTE,
        &format!("{want:?} (CA bundle: {ca}) on every provider container"),
        || {
            let want = want.clone();
            async move {
                for name in PROVIDERS {
                    let (variables, mounted) = proxy_of(deployments, name).await;
                    if mounted != ca || variables.values().any(|v| *v != want) {
                        return None;
                    }
                }
                Some(())
            }
        },
    )
    .await;
}

/// Writes `Proxy/cluster` as an administrator (spec) and the cluster network operator (status) do.
async fn set_proxy(client: &kube::Client, spec: Value, status: Value) {
    let proxies = api_for(client, "config.openshift.io/v1", "Proxy", None).await;
    let object = |part: &str, value: Value| {
        json!({"apiVersion": "config.openshift.io/v1", "kind": "Proxy",
               "metadata": {"name": "cluster"}, part: value})
    };
    proxies
        .patch(
            "cluster",
            &PatchParams::apply("oc").force(),
            &Patch::Apply(object("spec", spec)),
        )
        .await
        .unwrap();
    proxies
        .patch_status(
            "cluster",
            &PatchParams::apply("cluster-network-operator").force(),
            &Patch::Apply(object("status", status)),
        )
        .await
        .unwrap();
}

fn generation(d: &Deployment) -> i64 {
    d.metadata.generation.unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cluster_proxy_is_set_changed_and_removed_on_every_provider_container() {
    require_fixture!("transport-configmaps");
    let env = Env::on_aws(&[CORE_CM, AWS_CM]).await;
    let installer = Running::under_release_rbac(&env, config()).await;
    wait_available(&env.admin, 4 * MINUTE).await;
    let deployments: Api<Deployment> = Api::namespaced(env.admin.clone(), NS);
    // No Proxy object: the Deployments as the bundles wrote them.
    providers_have(&deployments, &[], false).await;
    let before = deployments.get("capa-controller-manager").await.unwrap();

    // Set: every variable the status has, and the CA bundle the administrator added CAs to.
    set_proxy(
        &env.admin,
        json!({"httpsProxy": "http://proxy.example:3128", "trustedCA": {"name": "user-ca-bundle"}}),
        json!({"httpProxy": "http://proxy.example:3128", "httpsProxy": "http://proxy.example:3128",
               "noProxy": ".cluster.local,.svc,10.0.0.0/16,api-int.example"}),
    )
    .await;
    providers_have(
        &deployments,
        &[
            ("HTTP_PROXY", "http://proxy.example:3128"),
            ("HTTPS_PROXY", "http://proxy.example:3128"),
            (
                "NO_PROXY",
                ".cluster.local,.svc,10.0.0.0/16,api-int.example",
            ),
        ],
        true,
    )
    .await;
    let rolled = deployments.get("capa-controller-manager").await.unwrap();
    assert!(
        generation(&rolled) > generation(&before),
        "a new pod template rolls the pods"
    );
    wait_available(&env.admin, 2 * MINUTE).await;

    // Changed: a new HTTPS proxy, no HTTP one, no CAs of the administrator's.
    set_proxy(
        &env.admin,
        json!({"httpsProxy": "http://other.example:8443"}),
        json!({"httpsProxy": "http://other.example:8443", "noProxy": ".cluster.local"}),
    )
    .await;
    providers_have(
        &deployments,
        &[
            ("HTTPS_PROXY", "http://other.example:8443"),
            ("NO_PROXY", ".cluster.local"),
        ],
        false,
    )
    .await;

    // A bundle that routes its own cloud calls is refused, naming the document and the field; what
    // runs keeps the cluster's proxy.
    let components = fixture_components(AWS_CM).replacen(
        "        env:\n",
        "        env:\n        - {name: HTTPS_PROXY, value: 'http://evil.example:1'}\n",
        1,
    );
    assert_ne!(
        components,
        fixture_components(AWS_CM),
        "the fixture's manager has an env"
    );
    put_configmap(&env.admin, &with_components(AWS_CM, &components)).await;
    let message = eventually(
        3 * MINUTE,
        "the refusal of aws's own HTTPS_PROXY",
        || async {
            let status = co_status(&env.admin).await?;
            ["Degraded", "Progressing"]
                .into_iter()
                .filter_map(|t| condition(&status, t))
                .map(|c| c.message)
                .find(|m| m.contains("evil") || m.contains("sets HTTPS_PROXY"))
        },
    )
    .await;
    for part in [
        "ConfigMap openshift-cluster-api/aws",
        "rule workload-no-proxy-of-its-own",
        "Deployment",
        "capa-controller-manager",
        "env",
        "sets HTTPS_PROXY",
        "Proxy/cluster",
    ] {
        assert!(message.contains(part), "{part:?} not in {message}");
    }
    let (variables, _) = proxy_of(&deployments, "capa-controller-manager").await;
    assert!(
        variables
            .values()
            .all(|v| v.contains(&("HTTPS_PROXY".into(), "http://other.example:8443".into()))),
        "{variables:?}"
    );
    put_configmap(
        &env.admin,
        &with_components(AWS_CM, &fixture_components(AWS_CM)),
    )
    .await;
    wait_available(&env.admin, 2 * MINUTE).await;

    // Removed: the Deployments as the bundles wrote them again.
    api_for(&env.admin, "config.openshift.io/v1", "Proxy", None)
        .await
        .delete("cluster", &DeleteParams::default())
        .await
        .unwrap();
    providers_have(&deployments, &[], false).await;
    let after = deployments.get("capa-controller-manager").await.unwrap();
    assert_eq!(
        after.spec.unwrap().template.spec,
        before.spec.unwrap().template.spec,
        "no proxy: the pod template as before the proxy"
    );
    wait_available(&env.admin, 2 * MINUTE).await;

    // `diff` reads the proxy as the installer does: with the installer stopped and a proxy set, the
    // installed aws would change by exactly the variables on its manager.
    installer.stop().await;
    set_proxy(
        &env.admin,
        json!({"httpsProxy": "http://proxy.example:3128"}),
        json!({"httpsProxy": "http://proxy.example:3128"}),
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("aws.json");
    let cm = with_components(AWS_CM, &fixture_components(AWS_CM));
    std::fs::write(&file, serde_json::to_string(&cm).unwrap()).unwrap();
    let images_json = dir.path().join("images.json");
    std::fs::write(&images_json, serde_json::to_string(&images()).unwrap()).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_capi-installer"))
        .arg("diff")
        .arg(&file)
        .arg("--kubeconfig")
        .arg(env.cp.kubeconfig_path())
        .arg("--images-json")
        .arg(&images_json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("capa-controller-manager") && stdout.contains("http://proxy.example:3128"),
        "{stdout}"
    );
}
