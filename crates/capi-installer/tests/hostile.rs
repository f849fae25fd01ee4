//! Hostile or broken provider bundles (issue 9): each in turn replaces the aws transport ConfigMap of a
//! running installer that has core and aws installed. For every one: nothing of it is written (audit
//! log), core and the previously installed aws keep running, the ClusterOperator names the ConfigMap and
//! the rule with a specific reason, and putting the good ConfigMap back converges again. One control
//! plane and one installer for all cases: they run one after another and each ends where it started.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use kube::Client;
use kube::api::Api;
use serde_json::{Value, json};
use test_support::*;

/// One hostile variant of the aws bundle and what the ClusterOperator must say about it.
struct Hostile {
    what: &'static str,
    configmap: Value,
    reason: &'static str,
    /// Every one of these appears in the Degraded message.
    expect: &'static [&'static str],
}

/// The aws components as objects.
fn aws_objects() -> Vec<Value> {
    capi_manifests::yaml::parse_documents("aws", &fixture_components(AWS_CM))
        .unwrap()
        .into_iter()
        .map(|d| d.value)
        .collect()
}

/// The aws ConfigMap with `objects` as its components, encoded as manifests-gen would.
fn aws_with(objects: &[Value]) -> Value {
    with_components(
        AWS_CM,
        &capi_manifests::yaml::to_multi_yaml(objects).unwrap(),
    )
}

fn plus(extra: &str) -> Value {
    let mut objects = aws_objects();
    objects.extend(
        capi_manifests::yaml::parse_documents("extra", extra)
            .unwrap()
            .into_iter()
            .map(|d| d.value),
    );
    aws_with(&objects)
}

fn modified(f: impl Fn(&mut Value)) -> Value {
    let mut objects = aws_objects();
    objects.iter_mut().for_each(f);
    aws_with(&objects)
}

fn hostile_bundles() -> Vec<Hostile> {
    let mut bomb = String::from("l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..=9 {
        let refs = vec![format!("*l{}", i - 1); 9].join(", ");
        bomb.push_str(&format!("l{i}: &l{i} [{refs}]\n"));
    }
    let mut alias_bomb = fixture_components(AWS_CM);
    if !alias_bomb.ends_with('\n') {
        alias_bomb.push('\n');
    }
    alias_bomb.push_str(&format!(
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: bomb, namespace: openshift-cluster-api}}\n{bomb}"
    ));
    vec![
        Hostile {
            what: "a ClusterRoleBinding of cluster-admin",
            configmap: plus(
                "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: own-the-cluster}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\nsubjects: [{kind: ServiceAccount, name: capa-controller-manager, namespace: openshift-cluster-api}]\n",
            ),
            reason: "BundlePolicyViolation",
            expect: &[
                "openshift-cluster-api/aws",
                "ClusterRoleBinding own-the-cluster",
                "rule rbac-bundle-roles-only",
            ],
        },
        Hostile {
            what: "a ClusterRole with * on *",
            configmap: plus(
                "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: everything}\nrules: [{apiGroups: ['*'], resources: ['*'], verbs: ['*']}]\n",
            ),
            reason: "BundlePolicyViolation",
            expect: &[
                "openshift-cluster-api/aws",
                "ClusterRole everything",
                "rule rbac-no-wildcards",
            ],
        },
        Hostile {
            what: "a change to a payload CRD that no provider ships",
            configmap: plus(
                "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: featuregates.config.openshift.io}\nspec: {group: config.openshift.io, scope: Cluster, names: {kind: FeatureGate, plural: featuregates, singular: featuregate, listKind: FeatureGateList}, versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]}\n",
            ),
            reason: "BundlePolicyViolation",
            expect: &[
                "openshift-cluster-api/aws",
                "CustomResourceDefinition featuregates.config.openshift.io",
                "rule crd-family-groups-only",
            ],
        },
        Hostile {
            what: "a new CRD with a Deployment the API server rejects",
            configmap: {
                let mut objects = aws_objects();
                for o in &mut objects {
                    if o["kind"] == "Deployment" {
                        o["spec"]["template"]["spec"]["containers"][0]["name"] =
                            json!("Not_A_DNS_Label");
                    }
                }
                objects.push(serde_saphyr::from_str(
                    "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.infrastructure.cluster.x-k8s.io}\nspec: {group: infrastructure.cluster.x-k8s.io, scope: Namespaced, names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}, versions: [{name: v1beta2, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]}\n",
                ).unwrap());
                aws_with(&objects)
            },
            reason: "ApplyFailed",
            expect: &[
                "ConfigMap aws",
                "dry-run Deployment openshift-cluster-api/capa-controller-manager",
                "Not_A_DNS_Label",
            ],
        },
        Hostile {
            what: "a CRD change that strands stored data",
            configmap: modified(|o| {
                if o["metadata"]["name"] == "awsclusters.infrastructure.cluster.x-k8s.io" {
                    let versions = o["spec"]["versions"].as_array_mut().unwrap();
                    versions.retain(|v| v["name"] != "v1beta2");
                    versions[0]["served"] = json!(true);
                    versions[0]["storage"] = json!(true);
                }
            }),
            reason: "UnsafeCustomResourceDefinitionChange",
            expect: &[
                "ConfigMap aws",
                "CustomResourceDefinition awsclusters.infrastructure.cluster.x-k8s.io",
                "removes version v1beta2, which is still in status.storedVersions",
            ],
        },
        Hostile {
            what: "an alias bomb",
            configmap: with_components(AWS_CM, &alias_bomb),
            reason: "InvalidProviderManifests",
            expect: &[
                "openshift-cluster-api/aws",
                "over budget",
                "YAML nodes added by aliases",
            ],
        },
    ]
}

/// (uid, generation) of every Deployment in the namespace.
async fn deployments(client: &Client) -> Vec<(String, String, i64)> {
    let api: Api<Deployment> = Api::namespaced(client.clone(), NS);
    let mut out: Vec<(String, String, i64)> = api
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|d| {
            (
                d.metadata.name.unwrap_or_default(),
                d.metadata.uid.unwrap_or_default(),
                d.metadata.generation.unwrap_or_default(),
            )
        })
        .collect();
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_hostile_bundle_is_refused_whole_and_the_good_one_converges_again() {
    require_fixture!("transport-configmaps");
    let env = Env::on_aws(&[CORE_CM, AWS_CM]).await;
    let _installer = Running::as_admin(&env, config());
    wait_available(&env.admin, Duration::from_secs(240)).await;
    let running = deployments(&env.admin).await;
    assert_eq!(running.len(), 2, "core and aws: {running:?}");
    let crds = api_for(
        &env.admin,
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        None,
    )
    .await;
    let featuregates = crds
        .get("featuregates.config.openshift.io")
        .await
        .unwrap()
        .metadata
        .resource_version;

    for hostile in hostile_bundles() {
        let mark = env.audit().len();
        put_configmap(&env.admin, &hostile.configmap).await;
        // A failure that persists degrades the operator, with the reason and every violation.
        let degraded = eventually(Duration::from_secs(120), hostile.what, || async {
            let s = co_status(&env.admin).await?;
            let d = condition(&s, "Degraded")?;
            (d.status == "True").then_some(d)
        })
        .await;
        assert_eq!(
            degraded.reason, hostile.reason,
            "{}: {degraded:?}",
            hostile.what
        );
        for e in hostile.expect {
            assert!(
                degraded.message.contains(e),
                "{}: {e:?} not in {:?}",
                hostile.what,
                degraded.message
            );
        }

        // Nothing of it was written: the installer wrote only its status, Events and its own record.
        let writes: Vec<String> = installer_writes(&env.audit()[mark..], None)
            .iter()
            .map(describe)
            .filter(|w| {
                !w.contains("config.openshift.io/clusteroperators")
                    && !w.contains("/events ")
                    && !w.contains("configmaps openshift-cluster-api/capi-installer-inventory")
            })
            .collect();
        assert!(writes.is_empty(), "{}: wrote {writes:?}", hostile.what);
        // The previous version (and core) keep running, untouched.
        assert_eq!(deployments(&env.admin).await, running, "{}", hostile.what);
        assert!(
            crds.get_opt("widgets.infrastructure.cluster.x-k8s.io")
                .await
                .unwrap()
                .is_none(),
            "{}: a CRD of the refused version exists",
            hostile.what
        );
        assert_eq!(
            crds.get("featuregates.config.openshift.io")
                .await
                .unwrap()
                .metadata
                .resource_version,
            featuregates,
            "{}: the payload CRD changed",
            hostile.what
        );
        let available = condition(&co_status(&env.admin).await.unwrap(), "Available").unwrap();
        assert_eq!(
            available.status, "True",
            "{}: the previous aws version still serves: {available:?}",
            hostile.what
        );

        // The good bundle converges again, without a restart.
        put_configmap(&env.admin, &fixture_configmap(AWS_CM)).await;
        wait_available(&env.admin, Duration::from_secs(120)).await;
    }
}
