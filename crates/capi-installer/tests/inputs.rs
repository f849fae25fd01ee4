//! What the installer does with platforms it does not support and with bad provider input
//! (issue 4, scenarios 2 and 7).

use std::time::Duration;

use base64::Engine;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, ListParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use test_support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsupported_platforms_install_nothing() {
    require_fixture!("transport-configmaps");
    let env = Env::start(false).await;
    load_payload(&env.admin, &[CORE_CM, AWS_CM]).await.unwrap();
    let _installer = Running::as_admin(&env, config());

    // Before the platform is known: waiting, not available.
    let waiting = eventually(Duration::from_secs(30), "WaitingForPlatform", || async {
        let s = co_status(&env.admin).await?;
        (condition(&s, "Progressing")?.reason == "WaitingForPlatform").then_some(s)
    })
    .await;
    assert_eq!(condition(&waiting, "Available").unwrap().status, "False");

    for platform in ["None", "Nutanix"] {
        set_platform(&env.admin, platform).await;
        let status = eventually(
            Duration::from_secs(30),
            "not-implemented message",
            || async {
                let s = co_status(&env.admin).await?;
                let available = condition(&s, "Available")?;
                (available.status == "True" && available.message.contains(platform)).then_some(s)
            },
        )
        .await;
        let available = condition(&status, "Available").unwrap();
        assert_eq!(available.reason, "PlatformNotSupported");
        assert!(
            available
                .message
                .starts_with("Cluster API is not yet implemented on this platform"),
            "{available:?}"
        );
        assert_eq!(condition(&status, "Degraded").unwrap().status, "False");
        assert_eq!(condition(&status, "Progressing").unwrap().status, "False");
    }

    // Nothing was installed: no object carries the ownership label, and the installer wrote only its status
    // and nothing else.
    let crds = api_for(
        &env.admin,
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        None,
    )
    .await;
    assert!(managed(&crds).await.is_empty());
    let writes: Vec<String> = installer_writes(&env.audit(), None)
        .iter()
        .map(describe)
        .filter(|w| !w.contains("config.openshift.io/clusteroperators"))
        .collect();
    assert!(writes.is_empty(), "unexpected writes: {writes:?}");
}

/// A transport ConfigMap variant and what the status must say about it.
struct Bad {
    what: &'static str,
    configmap: Value,
    expect: &'static [&'static str],
}

fn bad_inputs() -> Vec<Bad> {
    let good = fixture_components(AWS_CM);
    let first_doc = good.split("\n---\n").next().unwrap().to_string();
    let mut corrupt = fixture_configmap(AWS_CM);
    corrupt["binaryData"]["components-zstd"] =
        json!(base64::engine::general_purpose::STANDARD.encode(b"this is not a zstd frame"));
    let missing_image = good.replacen(
        "image: to.be/replaced:v99",
        "image: registry.ci.openshift.org/openshift:does-not-exist",
        1,
    );
    assert_ne!(
        missing_image, good,
        "the aws components use the image placeholder"
    );
    let mut both = fixture_configmap(AWS_CM);
    both["data"]["components"] =
        json!("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: stale}\n");
    assert!(
        both["binaryData"]["components-zstd"].is_string(),
        "the aws fixture is compressed"
    );
    vec![
        Bad {
            what: "both payload forms (issue 8, item 4)",
            configmap: both,
            expect: &[
                "openshift-cluster-api/aws",
                "binaryData.components-zstd and data.components",
            ],
        },
        Bad {
            what: "corrupt zstd",
            configmap: corrupt,
            expect: &["openshift-cluster-api/aws", "components-zstd"],
        },
        Bad {
            what: "invalid YAML document",
            configmap: with_components(AWS_CM, &format!("{good}\n---\nkind: [unclosed\n")),
            expect: &["openshift-cluster-api/aws", "invalid YAML", "document"],
        },
        Bad {
            what: "kind without CRD",
            configmap: with_components(
                AWS_CM,
                &format!(
                    "{good}\n---\napiVersion: widgets.example.com/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: openshift-cluster-api\n"
                ),
            ),
            expect: &[
                "openshift-cluster-api/aws",
                "Widget openshift-cluster-api/w",
                "unknown kind",
            ],
        },
        Bad {
            what: "object in another namespace",
            configmap: with_components(
                AWS_CM,
                &format!(
                    "{good}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: elsewhere\n  namespace: default\n"
                ),
            ),
            expect: &[
                "openshift-cluster-api/aws",
                "ConfigMap default/elsewhere",
                "metadata.namespace",
            ],
        },
        Bad {
            what: "duplicate objects",
            configmap: with_components(AWS_CM, &format!("{good}\n---\n{first_doc}")),
            expect: &["openshift-cluster-api/aws", "appears twice"],
        },
        Bad {
            what: "missing image key",
            configmap: with_components(AWS_CM, &missing_image),
            expect: &[
                "openshift-cluster-api/aws",
                "Deployment openshift-cluster-api/",
                "does-not-exist",
            ],
        },
    ]
}

async fn aws_objects(client: &Client) -> Vec<String> {
    let mut found = Vec::new();
    let by_label = ListParams::default().labels("cluster.x-k8s.io/provider=infrastructure-aws");
    let crds = api_for(
        client,
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        None,
    )
    .await;
    found.extend(
        crds.list(&by_label)
            .await
            .unwrap()
            .items
            .iter()
            .map(|o| format!("CRD {}", o.name_any())),
    );
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NS);
    found.extend(
        deployments
            .list(&by_label)
            .await
            .unwrap()
            .items
            .iter()
            .map(|o| format!("Deployment {}", o.name_any())),
    );
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_provider_input_applies_nothing_and_recovers_when_fixed() {
    require_fixture!("transport-configmaps");
    let env = Env::on_aws(&[CORE_CM]).await;
    let variants = bad_inputs();
    put_configmap(&env.admin, &variants[0].configmap).await;
    let _installer = Running::as_admin(&env, config());

    // Core installs although aws is bad.
    let core_deployment = fixture_objects(CORE_CM)
        .into_iter()
        .find(|o| o.kind == "Deployment")
        .unwrap()
        .name;
    let deployments: Api<Deployment> = Api::namespaced(env.admin.clone(), NS);
    let core_uid = eventually(Duration::from_secs(120), "core Deployment", || async {
        deployments
            .get_opt(&core_deployment)
            .await
            .ok()
            .flatten()
            .and_then(|d| d.metadata.uid)
    })
    .await;

    for (i, bad) in variants.iter().enumerate() {
        if i > 0 {
            put_configmap(&env.admin, &bad.configmap).await;
        }
        let status = eventually(Duration::from_secs(30), bad.what, || async {
            let s = co_status(&env.admin).await?;
            let available = condition(&s, "Available")?;
            bad.expect
                .iter()
                .all(|e| available.message.contains(e))
                .then_some(s)
        })
        .await;
        let available = condition(&status, "Available").unwrap();
        assert_eq!(available.status, "False", "{}", bad.what);
        assert_eq!(
            available.reason, "InvalidProviderManifests",
            "{}: {available:?}",
            bad.what
        );
        if i == 0 {
            // One failed attempt is not Degraded (the persistence rule).
            assert_eq!(
                condition(&status, "Degraded").unwrap().status,
                "False",
                "{}",
                bad.what
            );
        }
        assert!(
            aws_objects(&env.admin).await.is_empty(),
            "{}: aws objects were written",
            bad.what
        );
    }

    // A failure that persists becomes Degraded, naming the ConfigMap and the object.
    let degraded = eventually(Duration::from_secs(60), "Degraded", || async {
        let s = co_status(&env.admin).await?;
        let d = condition(&s, "Degraded")?;
        (d.status == "True").then_some(d)
    })
    .await;
    assert_eq!(degraded.reason, "InvalidProviderManifests");
    assert!(degraded.message.contains("does-not-exist"), "{degraded:?}");

    // The other provider was never touched.
    let d = deployments.get(&core_deployment).await.unwrap();
    assert_eq!(d.metadata.uid.as_ref(), Some(&core_uid));

    // Fixing the input recovers without a restart.
    put_configmap(&env.admin, &fixture_configmap(AWS_CM)).await;
    wait_available(&env.admin, Duration::from_secs(180)).await;
    assert!(!aws_objects(&env.admin).await.is_empty());
}
