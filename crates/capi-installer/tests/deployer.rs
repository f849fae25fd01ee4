//! `capi-installer deployer`, the release's Deployment, as a process under its own ServiceAccount and
//! the RBAC `manifests/` ships for it (issue 18): on an upgrade from a release whose
//! cluster-version operator applied Deployment `capi-installer`, it takes that Deployment over in
//! place (the same object, its field ownership the deployer's, the release annotations gone, no
//! rollout while the pod template is the same — the same spec and ReplicaSet —, nothing deleted), and mounting the release's images
//! afterwards is one rollout; a bad or a missing images ConfigMap writes nothing (the Deployment
//! exactly as it was), the error naming the ConfigMap and key, and the good one back applies without a
//! restart. The volumes' effect on the installer is `profiles.rs`'s.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use test_support::*;

const DEPLOYER: &str = "capi-installer-deployer";
const IMAGES: &str = "capi-installer-images";
/// The installer's image and release as an earlier release's manifest had them (the template's).
const IMAGE: &str = "registry.ci.openshift.org/openshift:capi-installer";
const RELEASE: &str = "0.0.1-snapshot";
const T: Duration = Duration::from_secs(90);

fn user() -> String {
    format!("system:serviceaccount:{INSTALLER_NS}:{DEPLOYER}")
}

/// The deployer as the release's Deployment runs it, as its own ServiceAccount; `extra`: flags.
fn deployer(kubeconfig: &Path, dir: &Path, name: &str, extra: &[&str]) -> Replica {
    let mut run = Command::new(env!("CARGO_BIN_EXE_capi-installer"));
    run.args(["deployer", "--installer-namespace", INSTALLER_NS])
        .args(["--installer-image", IMAGE])
        .args(LEADER_TIMINGS)
        .args(extra)
        .env("RELEASE_VERSION", RELEASE)
        .env_remove("KUBECONFIG");
    Replica::start(run, name, kubeconfig, dir)
}

/// Deployment `capi-installer` as an earlier release shipped it: the installer's template, in the
/// release payload with the payload's annotations, applied by the cluster-version operator.
fn earlier_release_manifest() -> Value {
    let template = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deployer/src/deployment.yaml");
    let mut deployment = read_documents(&template).remove(0);
    let annotations = repo_manifests("0000_30_capi-installer_04_deployer")
        .into_iter()
        .find(|d| d["kind"] == "Deployment")
        .expect("the deployer's Deployment")["metadata"]["annotations"]
        .clone();
    assert!(
        annotations
            .as_object()
            .unwrap()
            .keys()
            .all(|k| payload_annotation(k)),
        "{annotations}"
    );
    deployment["metadata"]["annotations"] = annotations;
    deployment
}

fn managers(d: &Deployment) -> BTreeSet<String> {
    d.managed_fields()
        .iter()
        .filter(|e| e.subresource.as_deref().unwrap_or("").is_empty())
        .filter_map(|e| e.manager.clone())
        .collect()
}

/// An annotation the release payload's manifests carry for the cluster-version operator (inclusion,
/// feature gate, capability).
fn payload_annotation(key: &str) -> bool {
    key.contains("release.openshift.io/") || key.starts_with("capability.openshift.io/")
}

fn release_annotations(d: &Deployment) -> Vec<String> {
    d.annotations()
        .keys()
        .filter(|k| payload_annotation(k))
        .cloned()
        .collect()
}

fn image_volumes(d: &Deployment) -> usize {
    let spec = d.spec.clone().unwrap().template.spec.unwrap();
    spec.volumes
        .iter()
        .flatten()
        .filter(|v| v.image.is_some())
        .count()
}

/// The names of the ReplicaSets of Deployment `d`.
async fn replica_sets(client: &Client, d: &Deployment) -> BTreeSet<String> {
    Api::<ReplicaSet>::namespaced(client.clone(), INSTALLER_NS)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|rs| {
            rs.owner_references()
                .iter()
                .any(|o| o.uid == d.uid().unwrap())
        })
        .map(|rs| rs.name_any())
        .collect()
}

/// What the deployer's ServiceAccount was refused (nothing, under the shipped RBAC).
fn denied(env: &Env) -> Vec<String> {
    env.audit()
        .iter()
        .filter(|e| e.user.username == user() && e.response_code == Some(403))
        .map(|e| format!("{} {}", e.verb, e.request_uri))
        .collect()
}

/// The deployer's writes of Deployments since `since`. A take-over sent from a read the watch had not
/// brought up to date is refused with a conflict (by design: it names the resourceVersion it read)
/// and sent again: it wrote nothing, and is not counted (seen under load in `make test`).
fn deployment_writes(env: &Env, since: k8s_openapi::jiff::Timestamp) -> Vec<String> {
    env.audit()
        .iter()
        .filter(|e| e.is_write() && e.stage_timestamp.0 > since && e.user.username == user())
        .filter(|e| e.response_code != Some(409))
        .filter(|e| {
            e.object_ref
                .as_ref()
                .is_some_and(|o| o.resource == "deployments")
        })
        .map(|e| format!("{} {}", e.verb, e.request_uri))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn takes_over_the_earlier_releases_deployment_in_place() {
    let env = Env::start(true).await;
    let deployments: Api<Deployment> = Api::namespaced(env.admin.clone(), INSTALLER_NS);
    // The earlier release: its cluster-version operator applied the installer's Deployment, which
    // the controller manager rolled out.
    ensure_namespaces(&env.admin).await;
    apply_as_release_payload(&env.admin, &[earlier_release_manifest()]).await;
    let before = eventually(T, "the earlier release's Deployment rolled out", || async {
        let d = deployments.get("capi-installer").await.ok()?;
        let observed = d.status.as_ref()?.observed_generation;
        (observed == d.metadata.generation).then_some(d)
    })
    .await;
    assert!(!release_annotations(&before).is_empty());
    let replica_sets_before = replica_sets(&env.admin, &before).await;
    assert_eq!(replica_sets_before.len(), 1, "{replica_sets_before:?}");

    // The upgrade: the new payload (no Deployment capi-installer in it), then its deployer. Told to
    // mount no image, it wants the pod the earlier release ran.
    apply_release_manifests(&env.admin, "0000_30_capi-installer_0").await;
    let since = k8s_openapi::jiff::Timestamp::now();
    let tmp = tempfile::tempdir().unwrap();
    let kubeconfig = env
        .cp
        .service_account_kubeconfig(INSTALLER_NS, DEPLOYER)
        .await
        .unwrap();
    let first = deployer(
        &kubeconfig,
        tmp.path(),
        "deployer-a",
        &[WITHOUT_IMAGE_VOLUMES],
    );
    // Two writes: the field ownership moved (the deployer's alone from then on), then the apply,
    // which changes the generation (the annotations it does not send go). Read between the two, the
    // object would still carry them.
    let taken = eventually(
        T,
        "the Deployment the deployer's alone, applied",
        || async {
            let d = deployments.get("capi-installer").await.ok()?;
            let managers = managers(&d);
            (managers.contains(DEPLOYER)
                && !managers.contains(CVO)
                && d.metadata.generation != before.metadata.generation)
                .then_some(d)
        },
    )
    .await;
    assert_eq!(taken.uid(), before.uid(), "the same object");
    assert_eq!(
        release_annotations(&taken),
        Vec::<String>::new(),
        "the cluster-version operator's annotations kept"
    );
    // The same spec, pod template included. The generation moves once: Kubernetes counts a change of
    // a Deployment's annotations as one (it copies them onto the ReplicaSet), not as a rollout.
    assert_eq!(taken.spec, before.spec, "the spec changed");
    assert_eq!(
        taken.metadata.generation,
        before.metadata.generation.map(|g| g + 1),
        "more than the annotations changed"
    );
    // The controller manager's revision annotation is its own and stays.
    assert_eq!(
        taken.annotations().get("deployment.kubernetes.io/revision"),
        before
            .annotations()
            .get("deployment.kubernetes.io/revision")
    );
    // Two writes (the field ownership moved, then the apply) and then none: a steady deployer
    // writes nothing.
    let window = Duration::from_secs(10);
    tokio::time::sleep(window).await;
    let writes = deployment_writes(&env, since);
    assert_eq!(writes.len(), 2, "{writes:#?}");
    assert!(
        writes.iter().all(|w| w.starts_with("patch ")),
        "{writes:#?}"
    );
    let deletes: Vec<String> = env
        .audit()
        .iter()
        .filter(|e| e.stage_timestamp.0 > since && e.verb.starts_with("delete"))
        .filter(|e| {
            e.object_ref
                .as_ref()
                .is_some_and(|o| o.resource == "deployments")
        })
        .map(|e| e.request_uri.clone())
        .collect();
    assert!(deletes.is_empty(), "deleted: {deletes:?}");
    assert_eq!(
        replica_sets(&env.admin, &taken).await,
        replica_sets_before,
        "rolled out"
    );

    // Now mounting the release's images (the shipped ConfigMap's): one rollout, the same object.
    first.terminate();
    let _second = deployer(&kubeconfig, tmp.path(), "deployer-b", &[]);
    let images: usize = repo_manifests("0000_30_capi-installer_02_images")[0]["data"]
        .as_object()
        .unwrap()
        .len();
    let mounted = eventually(T, "the release's images mounted", || async {
        let d = deployments.get("capi-installer").await.ok()?;
        (image_volumes(&d) == images).then_some(d)
    })
    .await;
    assert_eq!(mounted.uid(), before.uid());
    assert_eq!(
        mounted.metadata.generation.unwrap(),
        taken.metadata.generation.unwrap() + 1
    );
    let rolled = eventually(T, "the new pod template's ReplicaSet", || async {
        let now = replica_sets(&env.admin, &mounted).await;
        (now.len() == 2).then_some(now)
    })
    .await;
    assert!(rolled.is_superset(&replica_sets_before), "{rolled:?}");
    assert!(
        !managers(&mounted).contains(CVO),
        "{:?}",
        managers(&mounted)
    );
    assert_eq!(
        denied(&env),
        Vec::<String>::new(),
        "refused to the deployer"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_or_missing_images_configmap_writes_nothing() {
    let env = Env::start(false).await;
    apply_release_manifests(&env.admin, "0000_30_capi-installer_0").await;
    let deployments: Api<Deployment> = Api::namespaced(env.admin.clone(), INSTALLER_NS);
    let configmaps: Api<ConfigMap> = Api::namespaced(env.admin.clone(), INSTALLER_NS);
    let tmp = tempfile::tempdir().unwrap();
    let kubeconfig = env
        .cp
        .service_account_kubeconfig(INSTALLER_NS, DEPLOYER)
        .await
        .unwrap();
    let running = deployer(&kubeconfig, tmp.path(), "deployer", &[]);
    let release = repo_manifests("0000_30_capi-installer_02_images").remove(0);
    let images = release["data"].as_object().unwrap().len();
    let applied = eventually(T, "the installer's Deployment with the images", || async {
        let d = deployments.get_opt("capi-installer").await.ok()??;
        (image_volumes(&d) == images).then_some(d)
    })
    .await;
    let logged = |needles: Vec<String>| {
        let log = running.log();
        async move {
            log.lines()
                .find(|l| {
                    l.contains("installer Deployment not applied")
                        && needles.iter().all(|n| l.contains(n.as_str()))
                })
                .map(str::to_string)
        }
    };

    // A value that is not an image reference, as an upgrade gone wrong could write.
    let since = k8s_openapi::jiff::Timestamp::now();
    let mut bad = release.clone();
    bad["data"]["aws-cluster-api-controllers"] = json!("not an image reference");
    apply_as_release_payload(&env.admin, &[bad]).await;
    let line = eventually(T, "the bad value refused", || {
        logged(vec![
            format!("ConfigMap {INSTALLER_NS}/{IMAGES}"),
            "aws-cluster-api-controllers".into(),
        ])
    })
    .await;
    eprintln!("refused: {line}");
    assert!(line.contains("Deployment left as it is"), "{line}");

    // Missing: the release payload's ConfigMap deleted.
    configmaps
        .delete(IMAGES, &DeleteParams::default())
        .await
        .unwrap();
    let line = eventually(T, "the missing ConfigMap refused", || {
        logged(vec![
            format!("ConfigMap {INSTALLER_NS}/{IMAGES}"),
            "the ConfigMap is not there".into(),
        ])
    })
    .await;
    eprintln!("refused: {line}");
    let after = deployments.get("capi-installer").await.unwrap();
    assert_eq!(
        after.resource_version(),
        applied.resource_version(),
        "the Deployment was written"
    );
    assert_eq!(
        deployment_writes(&env, since),
        Vec::<String>::new(),
        "written while the images were bad"
    );

    // The good ConfigMap back, with a new aws image: applied without a restart.
    let mut good = release.clone();
    let new_aws = format!(
        "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:{}",
        "c".repeat(64)
    );
    good["data"]["aws-cluster-api-controllers"] = json!(new_aws);
    apply_as_release_payload(&env.admin, &[good]).await;
    eventually(T, "the new aws image mounted", || async {
        let d = deployments.get("capi-installer").await.ok()?;
        let spec = d.spec?.template.spec?;
        spec.volumes?
            .iter()
            .any(|v| {
                v.image
                    .as_ref()
                    .is_some_and(|i| i.reference.as_deref() == Some(new_aws.as_str()))
            })
            .then_some(())
    })
    .await;
    assert_eq!(
        denied(&env),
        Vec::<String>::new(),
        "refused to the deployer"
    );
}
