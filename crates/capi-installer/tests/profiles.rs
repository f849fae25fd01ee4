//! Image-based profiles as a second source (issue 12): the real core and aws profiles of
//! `../shared/fixtures/profiles`, laid out as the reference mounts provider images, installed on a
//! real control plane; and `render --profiles-dir` offline.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use capi_apply::Inventory;
use capi_deployer::DeployerConfig;
use capi_installer_controller::config::ProfilesConfig;
use capi_installer_controller::inventory::ProviderRecord;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use kube::{Client, ResourceExt};
use serde_json::json;
use test_support::*;

const BIN: &str = env!("CARGO_BIN_EXE_capi-installer");

/// Every object of a fixture profile: (apiVersion, kind, namespace, name).
fn profile_objects(provider: &str) -> Vec<capi_manifests::ObjectKey> {
    objects_of(&fixture(&format!("profiles/{provider}/manifests.yaml")).expect("fixture present"))
}

fn objects_of(manifests: &Path) -> Vec<capi_manifests::ObjectKey> {
    let text = std::fs::read_to_string(manifests).unwrap();
    capi_manifests::yaml::parse_objects("fixture", &text)
        .unwrap()
        .into_iter()
        .map(|o| o.id)
        .collect()
}

async fn assert_installed(client: &Client, provider: &str) {
    let manifests =
        fixture(&format!("profiles/{provider}/manifests.yaml")).expect("fixture present");
    assert_installed_from(client, provider, &manifests).await;
}

/// Every object of `manifests` exists, with the installer's label.
async fn assert_installed_from(client: &Client, provider: &str, manifests: &Path) {
    for id in objects_of(manifests) {
        let cluster_scoped = capi_object::is_cluster_scoped(&id.group, &id.kind);
        let namespace = id.namespace.as_deref().filter(|_| !cluster_scoped);
        let api = api_for(client, &id.api_version(), &id.kind, namespace).await;
        let obj = api
            .get(&id.name)
            .await
            .unwrap_or_else(|e| panic!("{provider}: {id}: {e}"));
        assert_eq!(
            obj.labels()
                .get("app.kubernetes.io/managed-by")
                .map(String::as_str),
            Some("capi-installer"),
            "{id} lacks the ownership label"
        );
    }
}

/// `APIServer/cluster` with `profile` as its TLS security profile, honoured by every component
/// (`tlsAdherence: StrictAllComponents`), as an administrator sets it.
async fn set_tls_profile(client: &Client, profile: serde_json::Value) {
    let api = api_for(client, "config.openshift.io/v1", "APIServer", None).await;
    api.patch(
        "cluster",
        &kube::api::PatchParams::apply("oc").force(),
        &kube::api::Patch::Apply(
            json!({"apiVersion": "config.openshift.io/v1", "kind": "APIServer",
            "metadata": {"name": "cluster"},
            "spec": {"tlsAdherence": "StrictAllComponents", "tlsSecurityProfile": profile}}),
        ),
    )
    .await
    .unwrap();
}

/// `ClusterAPI` status as openshift/api's `operator/v1alpha1` types define it (the fields tools
/// written for the reference read).
#[derive(Debug, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct ClusterApiStatus {
    desired_revision: String,
    current_revision: Option<String>,
    revisions: Vec<ClusterApiRevision>,
    observed_revision_generation: Option<i64>,
}

/// `ClusterAPIInstallerRevision`: every field it has, and no other.
#[derive(Debug, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ClusterApiRevision {
    name: String,
    revision: i64,
    #[serde(rename = "contentID")]
    content_id: String,
    #[serde(default)]
    manifest_substitutions: Vec<Substitution>,
    #[serde(default)]
    components: Vec<Component>,
    #[serde(default)]
    #[allow(dead_code)]
    unmanaged_custom_resource_definitions: Vec<String>,
}

#[derive(Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Substitution {
    key: String,
    value: String,
}

/// `ClusterAPIInstallerComponent`: a name, and the source (`type: Image` with its image).
#[derive(Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Component {
    name: Option<String>,
    #[serde(rename = "type")]
    type_: String,
    image: Option<ComponentImage>,
}

#[derive(Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ComponentImage {
    #[serde(rename = "ref")]
    reference: String,
    profile: String,
}

/// The component the reference lists for fixture profile `default` of `name` in the image of `key`.
fn image_component(name: &str, key: &str) -> Component {
    Component {
        name: Some(name.into()),
        type_: "Image".into(),
        image: Some(ComponentImage {
            reference: images()[key].clone(),
            profile: "default".into(),
        }),
    }
}

/// Waits until `ClusterAPI/cluster` status names revision `n` as desired and current.
async fn current_revision(api: &Api<kube::api::DynamicObject>, n: i64) -> ClusterApiStatus {
    eventually(
        Duration::from_secs(120),
        &format!("revision {n} current in ClusterAPI cluster"),
        || async {
            let object = api.get("cluster").await.ok()?;
            let status: ClusterApiStatus =
                serde_json::from_value(object.data.get("status")?.clone()).ok()?;
            let newest = status
                .revisions
                .iter()
                .find(|r| r.name == status.desired_revision)?;
            (newest.revision == n
                && status.current_revision.as_ref() == Some(&status.desired_revision)
                && status.observed_revision_generation.is_some())
            .then_some(status)
        },
    )
    .await
}

/// The arguments of the first container of Deployment `name`.
async fn manager_args(deployments: &Api<Deployment>, name: &str) -> Vec<String> {
    let d = deployments.get(name).await.unwrap();
    d.spec.unwrap().template.spec.unwrap().containers[0]
        .args
        .clone()
        .unwrap_or_default()
}

/// The core profile's IPAM CRDs, applied by the release payload (as `cluster-version-operator`) before
/// any installer; their names and UIDs.
async fn ipam_crds_applied_by_the_release_payload(client: &Client) -> Vec<(String, String)> {
    let path = fixture("profiles/core/manifests.yaml").expect("fixture present");
    let text = std::fs::read_to_string(&path).unwrap();
    let crds = api_for(
        client,
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        None,
    )
    .await;
    let mut made = Vec::new();
    for doc in capi_manifests::yaml::parse_documents("core", &text).unwrap() {
        let mut crd = doc.value;
        let name = crd["metadata"]["name"].as_str().unwrap_or("").to_string();
        if !name.ends_with(".ipam.cluster.x-k8s.io") {
            continue;
        }
        crd["metadata"]["annotations"]
            .as_object_mut()
            .unwrap()
            .remove("capi-operator.openshift.io/adopt-existing");
        let crd: kube::api::DynamicObject = serde_json::from_value(crd).unwrap();
        let params = kube::api::PostParams {
            field_manager: Some("cluster-version-operator".into()),
            ..Default::default()
        };
        let created = crds.create(&params, &crd).await.unwrap();
        made.push((name, created.metadata.uid.unwrap()));
    }
    assert_eq!(made.len(), 2, "the core profile has two IPAM CRDs");
    made
}

#[tokio::test]
async fn core_and_aws_from_profiles_reach_available() {
    let tmp = tempfile::tempdir().unwrap();
    // Each image in the folder of its image volume, as the reference mounts them (the installer
    // knows each profile's image by digest); the aws image carries a second profile, for GCP.
    let Some(dir) = profiles_as_volumes(
        tmp.path(),
        &[
            ("core", "cluster-capi-controllers", "default"),
            ("aws", "aws-cluster-api-controllers", "default"),
            ("gcp", "aws-cluster-api-controllers", "gcp"),
        ],
    ) else {
        return;
    };
    let volume = |key: &str| capi_installer_controller::source::images::volume_name(&images()[key]);
    let (core_image, aws_image) = (
        volume("cluster-capi-controllers"),
        volume("aws-cluster-api-controllers"),
    );
    let env = Env::start(true).await;
    ensure_namespaces(&env.admin).await;
    set_platform(&env.admin, "AWS").await;
    // The IPAM CRDs exist already, applied by the release payload before Cluster API was installed by
    // an installer; the core profile marks them `capi-operator.openshift.io/adopt-existing: always`.
    let ipam = ipam_crds_applied_by_the_release_payload(&env.admin).await;
    // The cluster's TLS profile, honoured by every component (the reference ignores it otherwise).
    set_tls_profile(&env.admin, json!({"type": "Modern", "modern": {}})).await;
    let mut config = config();
    config.profiles = Some(ProfilesConfig {
        dir,
        ..Default::default()
    });
    let cluster_api = create_cluster_api(&env.admin).await;
    let _installer = Running::as_admin(&env, config);

    let status = wait_available(&env.admin, Duration::from_secs(300)).await;
    let first = current_revision(&cluster_api, 1).await;
    assert_eq!(first.revisions.len(), 1, "{first:?}");
    let substitutions: Vec<(&str, &str)> = first.revisions[0]
        .manifest_substitutions
        .iter()
        .map(|s| (s.key.as_str(), s.value.as_str()))
        .collect();
    assert!(
        substitutions.contains(&("TLS_MIN_VERSION", "VersionTLS13")),
        "{substitutions:?}"
    );
    // Its components as the reference lists them: each profile by its metadata name, its image by
    // digest and its profile, in install order; gcp's is not among them.
    assert_eq!(
        first.revisions[0].components,
        [
            image_component("cluster-api", "cluster-capi-controllers"),
            image_component("cluster-api-provider-aws", "aws-cluster-api-controllers"),
        ]
    );
    // The reference's per-controller conditions: both controllers done.
    let controllers = eventually(
        Duration::from_secs(60),
        "InstallerController and RevisionController done",
        || async {
            let s = co_status(&env.admin).await?;
            ["InstallerController", "RevisionController"]
                .iter()
                .all(|c| {
                    condition(&s, &format!("{c}Progressing")).is_some_and(|p| p.status == "False")
                })
                .then_some(s)
        },
    )
    .await;
    for c in ["InstallerController", "RevisionController"] {
        for (suffix, want) in [("Progressing", "False"), ("Available", "True")] {
            let got = condition(&controllers, &format!("{c}{suffix}")).unwrap();
            assert_eq!(
                (
                    got.status.as_str(),
                    got.reason.as_str(),
                    got.message.as_str()
                ),
                (want, "AsExpected", "Success"),
                "{c}{suffix}"
            );
        }
    }
    let crds = api_for(
        &env.admin,
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        None,
    )
    .await;
    for (name, uid) in &ipam {
        let crd = crds.get(name).await.unwrap();
        assert_eq!(
            crd.metadata.uid.as_ref(),
            Some(uid),
            "{name} adopted in place"
        );
        assert_eq!(
            crd.labels()
                .get("app.kubernetes.io/managed-by")
                .map(String::as_str),
            Some("capi-installer"),
            "{name}"
        );
        assert!(
            !crd.annotations()
                .contains_key("capi-operator.openshift.io/adopt-existing"),
            "{name}: the annotation is an instruction, not applied"
        );
    }
    let available = condition(&status, "Available").unwrap();
    assert_eq!(
        available.message,
        "Cluster API is installed on AWS: cluster-api v1.13.4, aws v2.13.0"
    );
    assert_eq!(
        status["versions"][0]["version"], RELEASE_VERSION,
        "{status:#}"
    );
    assert_installed(&env.admin, "core").await;
    assert_installed(&env.admin, "aws").await;

    // selfImageRef became the release image of its key.
    let deployments: Api<Deployment> = Api::namespaced(env.admin.clone(), NS);
    for (name, key) in [
        ("capa-controller-manager", "aws-cluster-api-controllers"),
        ("capi-controller-manager", "cluster-capi-controllers"),
    ] {
        let d = deployments.get(name).await.unwrap();
        let image = d.spec.unwrap().template.spec.unwrap().containers[0]
            .image
            .clone();
        assert_eq!(image.as_deref(), Some(images()[key].as_str()), "{name}");
    }
    // The TLS profile reached the providers' flags.
    const MODERN: &str =
        "TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384,TLS_CHACHA20_POLY1305_SHA256";
    for name in ["capa-controller-manager", "capi-controller-manager"] {
        let args = manager_args(&deployments, name).await;
        for want in [
            "--tls-min-version=VersionTLS13".to_string(),
            format!("--tls-cipher-suites={MODERN}"),
        ] {
            assert!(args.contains(&want), "{name}: {args:?}");
        }
    }
    // The GCP profile is for another platform.
    let crds = api_for(
        &env.admin,
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        None,
    )
    .await;
    assert!(
        crds.get_opt("gcpclusters.infrastructure.cluster.x-k8s.io")
            .await
            .unwrap()
            .is_none()
    );
    // One inventory (with its record) per profile.
    let inventory = Api::<ConfigMap>::namespaced(env.admin.clone(), INSTALLER_NS)
        .get("capi-installer-inventory")
        .await
        .unwrap();
    let keys: Vec<String> = inventory.data.unwrap().into_keys().collect();
    let mut want = [
        format!("profile_{aws_image}_default"),
        format!("profile_{core_image}_default"),
    ];
    want.sort();
    assert_eq!(keys, want);

    // Events name the profile (no API object: a reference of kind Profile), one series per provider.
    let events: Api<k8s_openapi::api::events::v1::Event> =
        Api::namespaced(env.admin.clone(), "default");
    let related: Vec<(String, String)> = events
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("Created"))
        .filter_map(|e| {
            let r = e.related?;
            Some((r.kind?, r.name?))
        })
        .collect();
    for image in [&core_image, &aws_image] {
        assert!(
            related.contains(&("Profile".to_string(), format!("{image}/default"))),
            "{related:?}"
        );
    }

    // Steady state: nothing of the newer generation's manifests fights the API server (a field
    // it defaults or drops would show as a write every reconcile).
    let writes = installer_writes_over(&env, Duration::from_secs(20)).await;
    assert!(
        writes.is_empty(),
        "writes in steady state: {:?}",
        writes.iter().map(describe).collect::<Vec<_>>()
    );

    // A new TLS profile rolls the providers out with it.
    let generation = deployments
        .get("capa-controller-manager")
        .await
        .unwrap()
        .metadata
        .generation;
    set_tls_profile(
        &env.admin,
        json!({"type": "Custom", "custom": {"minTLSVersion": "VersionTLS12",
            "ciphers": ["ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-SHA384"]}}),
    )
    .await;
    eventually(
        Duration::from_secs(60),
        "the custom TLS profile in CAPA's flags",
        || async {
            let args = manager_args(&deployments, "capa-controller-manager").await;
            // The cipher Go does not implement is dropped, as by the reference.
            (args.contains(&"--tls-min-version=VersionTLS12".to_string())
                && args.contains(
                    &"--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256".to_string(),
                ))
            .then_some(())
        },
    )
    .await;
    let rolled = deployments
        .get("capa-controller-manager")
        .await
        .unwrap()
        .metadata
        .generation;
    assert!(rolled > generation, "{rolled:?} after {generation:?}");
    wait_available(&env.admin, Duration::from_secs(120)).await;
    // A new revision in ClusterAPI status, current once served; the first one trimmed.
    let second = current_revision(&cluster_api, 2).await;
    assert_eq!(second.revisions.len(), 1, "{second:?}");
    assert_ne!(
        second.revisions[0].content_id,
        first.revisions[0].content_id
    );

    // `capi-installer status` shows the providers and where they came from.
    let kubeconfig = env.cp.kubeconfig_path();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(BIN)
            .args(["status", "--kubeconfig"])
            .arg(&kubeconfig)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let row = |provider: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(provider))
            .unwrap_or_else(|| panic!("no row for {provider}:\n{stdout}"))
            .split_whitespace()
            .collect::<Vec<_>>()
    };
    assert_eq!(
        row("cluster-api")[..6],
        [
            "cluster-api",
            "core",
            "v1.13.4",
            "profile",
            format!("{core_image}/default").as_str(),
            "Installed"
        ]
    );
    assert_eq!(
        row("aws")[..6],
        [
            "aws",
            "infrastructure",
            "v2.13.0",
            "profile",
            format!("{aws_image}/default").as_str(),
            "Installed"
        ]
    );
}

/// The test images (and `extra` ones) as a `--images-json` file in `dir`.
fn write_images(dir: &Path, extra: &[(&str, &str)]) -> PathBuf {
    let mut images = images();
    images.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let path = dir.join("images.json");
    std::fs::write(&path, serde_json::to_string(&images).unwrap()).unwrap();
    path
}

/// `render --platform <platform>` of the profiles under `profiles`: its `provider …` lines and its
/// standard error (it must succeed).
fn render_plan(
    platform: &str,
    profiles: &Path,
    images_file: &Path,
    more: &[&str],
) -> (Vec<String>, String) {
    let mut args = vec![
        "--platform",
        platform,
        "--profiles-dir",
        profiles.to_str().unwrap(),
        "--images-json",
        images_file.to_str().unwrap(),
    ];
    args.extend(more);
    let (code, stdout, stderr) = render(&args);
    assert_eq!(code, 0, "{stderr}");
    let providers = stdout
        .lines()
        .filter(|l| l.starts_with("provider "))
        .map(str::to_string)
        .collect();
    (providers, stderr)
}

fn render(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN).arg("render").args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn render_plans_profiles_offline() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(dir) = profiles_as_images(&tmp.path().join("images"), &["core", "aws", "gcp"]) else {
        return;
    };
    let images_file = write_images(tmp.path(), &[]);
    let (providers, stderr) = render_plan("GCP", &dir, &images_file, &[]);
    assert_eq!(
        providers,
        [
            "provider cluster-api v1.13.4 (profile core-img/default, core, 24 objects)",
            "provider gcp v1.12.0 (profile gcp-img/default, infrastructure, 24 objects)"
        ]
    );
    assert!(
        stderr.contains(
            "note: profile aws-img/default (aws v2.13.0) is not selected for platform GCP"
        ),
        "{stderr}"
    );

    // The rendered objects carry the release image in place of selfImageRef.
    let (code, stdout, stderr) = render(&[
        "--platform",
        "GCP",
        "--profiles-dir",
        dir.to_str().unwrap(),
        "--images-json",
        images_file.to_str().unwrap(),
        "--output",
        "yaml",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!stdout.contains("registry.ci.openshift.org/openshift:gcp-cluster-api-controllers"));
    assert!(stdout.contains(&images()["gcp-cluster-api-controllers"]));

    // Every profile of every image: one image carrying the aws and gcp profiles beside core's image.
    let shared = tmp.path().join("shared");
    for (image, profile, provider) in [
        ("core-img", "default", "core"),
        ("providers-img", "aws", "aws"),
        ("providers-img", "gcp", "gcp"),
    ] {
        let to = shared.join(format!("{image}/capi-operator-manifests/{profile}"));
        std::fs::create_dir_all(&to).unwrap();
        for file in ["metadata.yaml", "manifests.yaml"] {
            let from = fixture(&format!("profiles/{provider}/{file}")).unwrap();
            std::os::unix::fs::symlink(from, to.join(file)).unwrap();
        }
    }
    let shared_args = |extra: &[&str]| {
        let mut args = vec![
            "--platform",
            "AWS",
            "--profiles-dir",
            shared.to_str().unwrap(),
            "--images-json",
            images_file.to_str().unwrap(),
        ];
        args.extend(extra);
        render(&args)
    };
    let (code, stdout, stderr) = shared_args(&[]);
    assert_eq!(code, 0, "{stderr}");
    let providers: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("provider "))
        .collect();
    assert_eq!(
        providers,
        [
            "provider cluster-api v1.13.4 (profile core-img/default, core, 24 objects)",
            "provider aws v2.13.0 (profile providers-img/aws, infrastructure, 16 objects)"
        ]
    );
    assert!(
        stderr.contains(
            "note: profile providers-img/gcp (gcp v1.12.0) is not selected for platform AWS"
        ),
        "{stderr}"
    );
    // `--profile` reads one profile of each image: here only core's.
    let (code, _, stderr) = shared_args(&["--profile", "default"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("no profile default for provider"),
        "{stderr}"
    );

    // A profile that cannot be read: reported, exit 1.
    let broken = dir.join("broken-img/capi-operator-manifests/default");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("manifests.yaml"), "").unwrap();
    let (code, _, stderr) = render(&[
        "--platform",
        "AWS",
        "--profiles-dir",
        dir.to_str().unwrap(),
        "--images-json",
        images_file.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("error: unusable profile: profile broken-img/default: ",)
            && stderr.contains("has manifests.yaml but no metadata.yaml"),
        "{stderr}"
    );
}

/// A transport ConfigMap and a profile of the same provider are never both installed: the ConfigMap
/// provides aws, the profile applies nothing, and status says why, naming both.
#[tokio::test]
async fn a_profile_and_a_configmap_of_one_provider_are_not_both_installed() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(dir) = profiles_as_images(tmp.path(), &["aws"]) else {
        return;
    };
    let env = Env::start(true).await;
    if load_payload(&env.admin, &[CORE_CM, AWS_CM]).await.is_none() {
        return;
    }
    set_platform(&env.admin, "AWS").await;
    let mut config = config();
    config.profiles = Some(ProfilesConfig {
        dir,
        ..Default::default()
    });
    let _installer = Running::as_admin(&env, config);

    let inventory: Api<ConfigMap> = Api::namespaced(env.admin.clone(), INSTALLER_NS);
    let stored = |cm: &ConfigMap, key: &str| -> Option<(usize, ProviderRecord)> {
        let inv = Inventory::from_json(key, cm.data.as_ref()?.get(key)?).ok()?;
        Some((inv.entries.len(), ProviderRecord::read(&inv)?))
    };
    // The ConfigMap's aws is installed and serves (Available); the profile is refused, which degrades
    // the operator once the refusal persists. Both from one status: the refusal may degrade the
    // operator while aws still rolls out (Available=False), and the inventory records aws Installed
    // before the round writes the status that says so.
    let (degraded, available) = eventually(
        Duration::from_secs(300),
        "aws installed from its ConfigMap and Available, the profile refused",
        || async {
            let cm = inventory.get_opt("capi-installer-inventory").await.ok()??;
            let (_, aws) = stored(&cm, "aws")?;
            (aws.state == "Installed").then_some(())?;
            let status = co_status(&env.admin).await?;
            let degraded = condition(&status, "Degraded")?;
            let available = condition(&status, "Available")?;
            (degraded.reason == "DuplicateProvider" && available.status == "True")
                .then_some((degraded, available))
        },
    )
    .await;
    assert_eq!(degraded.status, "True");
    assert!(
        degraded.message.starts_with(
            "profile aws-img/default: provider aws (infrastructure) is already provided by ConfigMap aws; remove one of the two"
        ),
        "{degraded:?}"
    );
    assert!(
        available.message.contains("aws") && !available.message.contains("aws-img"),
        "Available names aws, not the refused profile: {available:?}"
    );

    // Nothing of the profile was applied: its renamed ClusterRole does not exist (the ConfigMap's
    // does), and the profile's inventory holds no object, only its record.
    let roles = api_for(
        &env.admin,
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        None,
    )
    .await;
    assert!(
        roles
            .get_opt("openshift-capa-manager-role")
            .await
            .unwrap()
            .is_none()
    );
    assert!(roles.get_opt("capa-manager-role").await.unwrap().is_some());
    let cm = inventory.get("capi-installer-inventory").await.unwrap();
    let (objects, record) = stored(&cm, "profile_aws-img_default").expect("the profile's record");
    assert_eq!(objects, 0);
    assert_eq!(record.state, "Failed");
    assert_eq!(record.failure.unwrap().reason, "DuplicateProvider");
}

/// `ClusterAPI/cluster`, the reference's singleton, as CVO creates it.
async fn create_cluster_api(client: &Client) -> Api<kube::api::DynamicObject> {
    let cluster_api = api_for(client, "operator.openshift.io/v1alpha1", "ClusterAPI", None).await;
    cluster_api
        .create(
            &kube::api::PostParams::default(),
            &serde_json::from_value(json!({"apiVersion": "operator.openshift.io/v1alpha1",
                "kind": "ClusterAPI", "metadata": {"name": "cluster"}, "spec": {}}))
            .unwrap(),
        )
        .await
        .unwrap();
    cluster_api
}

/// The image volumes of the installer's Deployment: mount path → image reference (a volume
/// without a mount in the installer's container, or the reverse, fails the test).
fn image_mounts(d: &Deployment) -> BTreeMap<String, String> {
    let spec = d.spec.clone().unwrap().template.spec.unwrap();
    let images: BTreeMap<String, String> = spec
        .volumes
        .clone()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|v| Some((v.name, v.image?.reference?)))
        .collect();
    let container = spec
        .containers
        .iter()
        .find(|c| c.name == "capi-installer")
        .expect("the installer's container");
    let mounts: BTreeMap<String, String> = container
        .volume_mounts
        .clone()
        .unwrap_or_default()
        .into_iter()
        .filter(|m| images.contains_key(&m.name))
        .inspect(|m| assert_eq!(m.read_only, Some(true), "{m:?}"))
        .map(|m| (m.mount_path, images[&m.name].clone()))
        .collect();
    assert_eq!(
        mounts.len(),
        images.len(),
        "every image volume mounted once: {spec:?}"
    );
    mounts
}

/// The folders a node would mount for `d`'s image volumes, under `root` instead of
/// `/var/lib/provider-images`: each image of `contents` (reference → the fixture profile it holds,
/// as `(metadata.yaml, manifests.yaml)` texts) in the folder of its mount; an image without
/// contents (kube-rbac-proxy) as an empty folder, as an image without profiles mounts.
fn mount_as_node(root: &Path, d: &Deployment, contents: &BTreeMap<String, (String, String)>) {
    for (path, reference) in image_mounts(d) {
        let folder = path
            .strip_prefix("/var/lib/provider-images/")
            .unwrap_or_else(|| panic!("{path}: not under /var/lib/provider-images"));
        let dir = root.join(folder);
        std::fs::create_dir_all(&dir).unwrap();
        if let Some((metadata, manifests)) = contents.get(&reference) {
            let profile = dir.join("capi-operator-manifests/default");
            std::fs::create_dir_all(&profile).unwrap();
            std::fs::write(profile.join("metadata.yaml"), metadata).unwrap();
            std::fs::write(profile.join("manifests.yaml"), manifests).unwrap();
        }
    }
}

fn fixture_profile(provider: &str) -> (String, String) {
    let read = |file: &str| {
        let path = fixture(&format!("profiles/{provider}/{file}")).expect("fixture present");
        std::fs::read_to_string(path).unwrap()
    };
    (read("metadata.yaml"), read("manifests.yaml"))
}

/// ConfigMap `capi-installer-images` of a release, applied as the release payload applies it.
async fn put_release_images(client: &Client, release: &BTreeMap<String, String>) {
    apply_as_release_payload(
        client,
        &[json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "capi-installer-images", "namespace": INSTALLER_NS},
            "data": release})],
    )
    .await;
}

#[tokio::test]
async fn a_release_upgrade_rolls_the_installers_volumes_then_the_providers() {
    if fixture("profiles/aws").is_none() {
        return;
    }
    let env = Env::start(true).await;
    ensure_namespaces(&env.admin).await;
    set_platform(&env.admin, "AWS").await;
    let cluster_api = create_cluster_api(&env.admin).await;
    let first_release = images();
    put_release_images(&env.admin, &first_release).await;
    // The deployer, as the release's Deployment runs it.
    let deployer_client = installer_client(env.cp.admin_config());
    let deployer = InProcess::spawn(|stop| {
        capi_deployer::run(
            deployer_client,
            DeployerConfig {
                namespace: INSTALLER_NS.into(),
                installer_image: format!(
                    "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:{}",
                    "1".repeat(64)
                ),
                release_version: Some(RELEASE_VERSION.into()),
                image_volumes: true,
                installer_args: Vec::new(),
            },
            stop,
        )
    });
    let deployments: Api<Deployment> = Api::namespaced(env.admin.clone(), INSTALLER_NS);
    let mounted = |want: Vec<String>| {
        let deployments = deployments.clone();
        let mut want = want;
        want.sort();
        want.dedup();
        async move {
            let d = deployments.get_opt("capi-installer").await.ok()??;
            let mut got: Vec<String> = image_mounts(&d).into_values().collect();
            got.sort();
            (got == want).then_some(d)
        }
    };
    // Every image of the release, mounted where the installer reads them, and read from there.
    let first = eventually(
        Duration::from_secs(60),
        "the installer's Deployment with the first release's image volumes",
        || mounted(first_release.values().cloned().collect()),
    )
    .await;
    let container = &first
        .spec
        .clone()
        .unwrap()
        .template
        .spec
        .unwrap()
        .containers[0];
    let args = container.args.clone().unwrap_or_default();
    assert!(
        args.ends_with(&[
            "--profiles-dir=/var/lib/provider-images".to_string(),
            "--release-images-only".to_string()
        ]),
        "{args:?}"
    );
    assert_eq!(
        container.image.as_deref(),
        Some(
            format!(
                "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:{}",
                "1".repeat(64)
            )
            .as_str()
        )
    );
    let (core, aws) = (fixture_profile("core"), fixture_profile("aws"));
    let old_aws = first_release["aws-cluster-api-controllers"].clone();
    let core_ref = first_release["cluster-capi-controllers"].clone();
    let tmp = tempfile::tempdir().unwrap();
    let first_pod = tmp.path().join("first-pod");
    mount_as_node(
        &first_pod,
        &first,
        &[
            (core_ref.clone(), core.clone()),
            (old_aws.clone(), aws.clone()),
        ]
        .into(),
    );
    let installer_config = |dir: PathBuf, release: &BTreeMap<String, String>| {
        let mut config = config();
        config.images = release.clone();
        config.profiles = Some(ProfilesConfig {
            dir,
            profile: None,
            release_images_only: true,
        });
        config
    };
    let installer = Running::as_admin(&env, installer_config(first_pod.clone(), &first_release));
    wait_available(&env.admin, Duration::from_secs(300)).await;
    let revision_1 = current_revision(&cluster_api, 1).await;
    assert_eq!(
        revision_1.revisions[0].components,
        [
            image_component("cluster-api", "cluster-capi-controllers"),
            image_component("cluster-api-provider-aws", "aws-cluster-api-controllers"),
        ]
    );

    // The upgrade: a new aws image (a new version with one more flag) in the images ConfigMap.
    let mut second_release = first_release.clone();
    let new_aws = format!(
        "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:{}",
        "b".repeat(64)
    );
    second_release.insert("aws-cluster-api-controllers".into(), new_aws.clone());
    put_release_images(&env.admin, &second_release).await;
    // Rolled: the new image mounted, the old one kept while revision 1 names it.
    let mut with_kept: Vec<String> = second_release.values().cloned().collect();
    with_kept.push(old_aws.clone());
    let second = eventually(
        Duration::from_secs(60),
        "the new aws image mounted beside the one revision 1 keeps",
        || mounted(with_kept.clone()),
    )
    .await;
    assert!(
        second.metadata.generation > first.metadata.generation,
        "the pod template changed: {:?} after {:?}",
        second.metadata.generation,
        first.metadata.generation
    );
    installer.stop().await;
    // A pod the rollout has not replaced yet, started after the ConfigMap changed (it reads the
    // release at start): the new aws image is not mounted in it, so aws has no source. It records
    // no revision (one without aws would be made current at once, and the real revision 2 would
    // come as a third).
    let stale = Running::as_admin(&env, installer_config(first_pod, &second_release));
    let waiting = eventually(
        Duration::from_secs(60),
        "the stale pod waiting for the aws source",
        || async {
            let s = co_status(&env.admin).await?;
            let progressing = condition(&s, "Progressing")?;
            progressing
                .message
                .contains("aws (infrastructure)")
                .then_some(s)
        },
    )
    .await;
    let revisions = condition(&waiting, "RevisionControllerProgressing").unwrap();
    assert_eq!(
        (revisions.status.as_str(), revisions.message.as_str()),
        (
            "True",
            "no revision until every provider is planned; waiting for aws (infrastructure)"
        ),
        "{revisions:?}"
    );
    let status: ClusterApiStatus =
        serde_json::from_value(cluster_api.get("cluster").await.unwrap().data["status"].clone())
            .unwrap();
    assert_eq!(status, revision_1, "a revision recorded without aws");
    stale.stop().await;
    // The Deployment's rollout replaces the installer's pod: the new one sees the new volumes.
    let new_aws_profile = (
        aws.0.replace("version: v2.13.0", "version: v2.13.1"),
        aws.1.replacen(
            "        - --leader-elect\n",
            "        - --leader-elect\n        - --sync-period=7m\n",
            1,
        ),
    );
    let second_pod = tmp.path().join("second-pod");
    mount_as_node(
        &second_pod,
        &second,
        &[
            (core_ref.clone(), core),
            (old_aws.clone(), aws),
            (new_aws.clone(), new_aws_profile),
        ]
        .into(),
    );
    let _installer = Running::as_admin(&env, installer_config(second_pod, &second_release));
    // The providers roll to the new release's profile (the kept image's is not a second aws).
    let capa: Api<Deployment> = Api::namespaced(env.admin.clone(), NS);
    eventually(
        Duration::from_secs(120),
        "CAPA rolled to the new image's profile",
        || async {
            let args = manager_args(&capa, "capa-controller-manager").await;
            args.contains(&"--sync-period=7m".to_string()).then_some(())
        },
    )
    .await;
    let status = eventually(
        Duration::from_secs(120),
        "aws v2.13.1 Available",
        || async {
            let s = co_status(&env.admin).await?;
            let available = condition(&s, "Available")?;
            (available.status == "True" && available.message.contains("aws v2.13.1")).then_some(s)
        },
    )
    .await;
    assert_eq!(
        condition(&status, "Available").unwrap().message,
        "Cluster API is installed on AWS: cluster-api v1.13.4, aws v2.13.1"
    );
    let revision_2 = current_revision(&cluster_api, 2).await;
    let refs: Vec<&str> = revision_2.revisions[0]
        .components
        .iter()
        .filter_map(|c| c.image.as_ref().map(|i| i.reference.as_str()))
        .collect();
    assert_eq!(refs, [core_ref.as_str(), new_aws.as_str()]);
    // Revision 1 trimmed once revision 2 is current: its image is unmounted (one more rollout).
    let third = eventually(
        Duration::from_secs(60),
        "the old aws image unmounted once no revision names it",
        || mounted(second_release.values().cloned().collect()),
    )
    .await;
    assert!(third.metadata.generation > second.metadata.generation);
    // Someone else's change of the Deployment's spec is undone (its generation moved).
    deployments
        .patch(
            "capi-installer",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"spec": {"replicas": 5}})),
        )
        .await
        .unwrap();
    eventually(
        Duration::from_secs(60),
        "replicas back to the template's 2",
        || async {
            let d = deployments.get("capi-installer").await.ok()?;
            (d.spec?.replicas == Some(2)).then_some(())
        },
    )
    .await;
    deployer.stop(Duration::from_secs(10)).await;
}

/// Every fork's current profile (issue 29): core and aws for the platform, and azure, vsphere,
/// openstack and ibmcloud (PowerVS) asked for by `InfrastructureProvider`s, each from a folder under
/// `--profiles-dir` that is no release image (so judged by the release's shipped bounds alone, not
/// trusted), installed by the installer as its own ServiceAccount under the shipped RBAC: every
/// provider Available, every object of every profile applied, OpenStack's cluster-wide CRD writes
/// narrowed to its own CRDs, and no request of the installer denied (the API server's escalation
/// check agrees with the ceiling).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_forks_current_profile_installs_under_the_shipped_bounds() {
    const EXTRA: [&str; 4] = ["azure", "vsphere", "openstack", "ibmcloud"];
    let tmp = tempfile::tempdir().unwrap();
    let Some(dir) = profiles_as_images(
        tmp.path(),
        &["core", "aws", "azure", "vsphere", "openstack", "ibmcloud"],
    ) else {
        return;
    };
    let env = Env::start(true).await;
    ensure_namespaces(&env.admin).await;
    set_platform(&env.admin, "AWS").await;
    load_infrastructure_provider_crd(&env.admin).await;
    apply_as_release_payload(&env.admin, &installer_rbac()).await;
    for name in EXTRA {
        request_provider(&env.admin, name).await;
    }
    let mut config = config();
    config.images.insert(
        "openstack-cluster-api-controllers".into(),
        "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:".to_string() + &"0".repeat(64),
    );
    config.profiles = Some(ProfilesConfig {
        dir,
        ..Default::default()
    });
    let sa = env
        .service_account_config(INSTALLER_NS, "capi-installer")
        .await;
    let _installer = Running::as_installer(sa, config);
    // Six providers in one round on the loaded 2 cores (debug build): a few minutes.
    eventually(
        Duration::from_secs(600),
        "every InfrastructureProvider Available, the ClusterOperator settled",
        || async {
            for name in EXTRA {
                let obj = infrastructure_providers(&env.admin).get(name).await.ok()?;
                provider_condition(&obj, "Available").filter(|c| c.status == "True")?;
            }
            co_status(&env.admin).await.filter(settled)
        },
    )
    .await;
    for provider in ["core", "aws"].into_iter().chain(EXTRA) {
        assert_installed(&env.admin, provider).await;
    }
    // OpenStack's manager role as applied: CRD writes only on its own CRDs.
    let crd_names: Vec<String> = profile_objects("openstack")
        .into_iter()
        .filter(|id| id.kind == "CustomResourceDefinition")
        .map(|id| id.name)
        .collect();
    let roles = api_for(
        &env.admin,
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        None,
    )
    .await;
    let mut writes = Vec::new();
    for id in profile_objects("openstack")
        .into_iter()
        .filter(|id| id.kind == "ClusterRole")
    {
        let role = roles.get(&id.name).await.unwrap();
        for rule in role.data["rules"].as_array().into_iter().flatten() {
            let verbs = rule["verbs"].to_string();
            if rule["apiGroups"] == json!(["apiextensions.k8s.io"])
                && (verbs.contains("patch") || verbs.contains("update"))
            {
                writes.push(rule.clone());
            }
        }
    }
    assert!(!writes.is_empty(), "OpenStack keeps its CRD migration");
    for rule in &writes {
        let mut names: Vec<String> = rule["resourceNames"]
            .as_array()
            .unwrap_or_else(|| panic!("CRD writes without names: {rule}"))
            .iter()
            .map(|n| n.as_str().unwrap().to_string())
            .collect();
        names.sort();
        let mut own = crd_names.clone();
        own.sort();
        assert_eq!(names, own, "{rule}");
    }
    let denied = installer_denials(&env.audit());
    assert!(denied.is_empty(), "denied to the installer: {denied:?}");
}

/// Issue 31, item 4: a platform the installer's table does not know is supported by the profile that
/// declares it. The fixtures have no provider of such a platform, so the OpenStack fork's current
/// profile is declared for Nutanix (its metadata's `ocpPlatform`, and its objects' provider label, which
/// must name the provider they belong to: issue 46's `reserved-names-and-labels`): what is under test
/// is that the platform comes from the profile, not from the code; and that such a provider writes
/// nothing until the administrator gives it an identity (issue 46). Its CRDs (and what names them)
/// are renamed as Nutanix's (`openstackclusters` → `nutanixclusters`): a provider keeps to its own
/// CRD names (issue 46).
/// `text` with OpenStack's CRD names (and the names made of them: `openstackclusters`,
/// `validation.openstackcluster…`) as Nutanix's; `infrastructure-openstack`, the image key and the kinds
/// (`OpenStackCluster`) stay.
fn as_nutanix(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("openstack") {
        let after = &rest[at + "openstack".len()..];
        out.push_str(&rest[..at]);
        let named = after.starts_with(|c: char| c.is_ascii_lowercase());
        out.push_str(if named { "nutanix" } else { "openstack" });
        rest = after;
    }
    out.push_str(rest);
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_platform_only_a_profile_knows_is_installed_from_it() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(dir) = profiles_as_images(tmp.path(), &["core"]) else {
        return;
    };
    let openstack = fixture("profiles/openstack").expect("fixture present");
    let folder = dir.join("nutanix-img/capi-operator-manifests/default");
    std::fs::create_dir_all(&folder).unwrap();
    let manifests = std::fs::read_to_string(openstack.join("manifests.yaml")).unwrap();
    let label = "cluster.x-k8s.io/provider: infrastructure-openstack";
    assert!(manifests.contains(label));
    std::fs::write(
        folder.join("manifests.yaml"),
        as_nutanix(&manifests.replace(label, "cluster.x-k8s.io/provider: infrastructure-nutanix")),
    )
    .unwrap();
    let metadata = std::fs::read_to_string(openstack.join("metadata.yaml")).unwrap();
    assert!(metadata.contains("ocpPlatform: OpenStack\n"), "{metadata}");
    std::fs::write(
        folder.join("metadata.yaml"),
        metadata.replace("ocpPlatform: OpenStack\n", "ocpPlatform: Nutanix\n"),
    )
    .unwrap();

    let env = Env::start(true).await;
    ensure_namespaces(&env.admin).await;
    set_platform(&env.admin, "Nutanix").await;
    load_infrastructure_provider_crd(&env.admin).await;
    apply_as_release_payload(&env.admin, &installer_rbac()).await;
    let openstack_image =
        "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:".to_string() + &"0".repeat(64);
    let mut config = config();
    config.images.insert(
        "openstack-cluster-api-controllers".into(),
        openstack_image.clone(),
    );
    config.profiles = Some(ProfilesConfig {
        dir: dir.clone(),
        ..Default::default()
    });
    let sa = env
        .service_account_config(INSTALLER_NS, "capi-installer")
        .await;
    let _installer = Running::as_installer(sa, config);
    // A provider the release ships nothing for writes nothing (issue 46). Without a ceiling of its
    // own the policy refuses its grants, naming the ClusterRole to create; with the ceiling but no
    // identity, the API server refuses the installer's impersonation of it.
    let refused = reported(
        &env.admin,
        "outside the provider RBAC ceiling (ClusterRole capi-provider-infrastructure-nutanix;",
    )
    .await;
    assert!(refused.contains("nutanix"), "{refused}");
    let shipped = |name: &str| {
        repo_manifests("0000_30_capi-installer_03_ceiling")
            .into_iter()
            .find(|d| d["metadata"]["name"] == name)
            .map(|d| d["rules"].clone())
            .unwrap_or_else(|| panic!("{name} in manifests/"))
    };
    // OpenStack's ceilings, for its CRDs under their Nutanix names.
    let renamed = |rules: serde_json::Value| -> serde_json::Value {
        serde_json::from_str(&as_nutanix(&rules.to_string())).unwrap()
    };
    let (cluster_rules, namespaced_rules) = (
        renamed(shipped("capi-provider-infrastructure-openstack-release")),
        renamed(shipped(
            "capi-provider-infrastructure-openstack-namespaced-release",
        )),
    );
    for (name, scope, rules) in [
        (
            "provider-ceiling-infrastructure-nutanix",
            "cluster",
            &cluster_rules,
        ),
        (
            "provider-namespaced-ceiling-infrastructure-nutanix",
            "namespaced",
            &namespaced_rules,
        ),
    ] {
        let role = serde_json::json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": name, "labels": {
                "capi-installer.openshift.io/provider-ceiling": scope,
                "capi-installer.openshift.io/ceiling-provider": "infrastructure-nutanix"}},
            "rules": rules});
        let resource = ar(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRole",
            "clusterroles",
        );
        apply(&env.admin, &resource, &role, "administrator").await;
    }
    let refused = reported(&env.admin, "cannot impersonate").await;
    assert!(
        refused.contains("capi-provider-infrastructure-nutanix"),
        "{refused}"
    );
    let deployments: Api<Deployment> = Api::namespaced(env.admin.clone(), NS);
    assert!(
        deployments
            .get_opt("capo-controller-manager")
            .await
            .unwrap()
            .is_none(),
        "nothing of nutanix written"
    );
    // The administrator gives it the rest of its identity (docs/admin/rbac.md): it installs.
    let ceilings = give_identity(
        &env.admin,
        "infrastructure-nutanix",
        &cluster_rules,
        &namespaced_rules,
    )
    .await;
    let status = eventually(
        Duration::from_secs(300),
        "the ClusterOperator settled on Nutanix",
        || async { co_status(&env.admin).await.filter(settled) },
    )
    .await;
    let available = condition(&status, "Available").unwrap();
    assert_eq!(
        available.message,
        "Cluster API is installed on Nutanix: cluster-api v1.13.4, nutanix v0.14.0",
        "{available:?}"
    );
    assert_installed(&env.admin, "core").await;
    assert_installed_from(&env.admin, "nutanix", &folder.join("manifests.yaml")).await;
    // `render` offline sees the same platform from the same folder.
    let images_file = write_images(
        tmp.path(),
        &[("openstack-cluster-api-controllers", &openstack_image)],
    );
    // ...judged with the administrator's ceilings for it, exported from the cluster.
    let ceilings_file = tmp.path().join("ceilings.yaml");
    std::fs::write(
        &ceilings_file,
        capi_manifests::yaml::to_multi_yaml(&ceilings).unwrap(),
    )
    .unwrap();
    let (code, _, stderr) = render(&[
        "--platform",
        "Nutanix",
        "--profiles-dir",
        dir.to_str().unwrap(),
        "--images-json",
        images_file.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "without them, as the release alone: {stderr}");
    assert!(
        stderr.contains(
            "outside the provider RBAC ceiling (ClusterRole capi-provider-infrastructure-nutanix;"
        ),
        "{stderr}"
    );
    let (providers, _) = render_plan(
        "Nutanix",
        &dir,
        &images_file,
        &["--policy-ceiling", ceilings_file.to_str().unwrap()],
    );
    assert_eq!(
        providers.len(),
        2,
        "core and the profile's provider: {providers:?}"
    );
    assert!(
        providers[1]
            .starts_with("provider nutanix v0.14.0 (profile nutanix-img/default, infrastructure,"),
        "{providers:?}"
    );
}
