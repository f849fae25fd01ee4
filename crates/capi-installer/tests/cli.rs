//! `capi-installer render` on the shared fixtures: the plan's order (SPEC §4), completeness, the rendered
//! objects, and errors that name what is wrong.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_capi-installer");
const CORE_CM: &str = "0000_30_cluster-api_04_cm.core-cluster-api.yaml";
const AWS_CM: &str = "0000_30_cluster-api_04_cm.infrastructure-aws.yaml";
const CRD_MANIFEST: &str = "0000_30_cluster-api_04_crd.core-cluster-api.yaml";

fn fixtures() -> Option<PathBuf> {
    control_plane::shared_fixture("transport-configmaps")
}

fn images() -> BTreeMap<&'static str, &'static str> {
    BTreeMap::from([
        (
            "cluster-capi-controllers",
            "quay.io/openshift/ocp-v4.0-art-dev@sha256:c0c0",
        ),
        (
            "aws-cluster-api-controllers",
            "quay.io/openshift/ocp-v4.0-art-dev@sha256:a0a0",
        ),
        (
            "kube-rbac-proxy",
            "quay.io/openshift/ocp-v4.0-art-dev@sha256:b0b0",
        ),
    ])
}

fn write_images(dir: &Path, images: &BTreeMap<&str, &str>) -> PathBuf {
    let path = dir.join("images.json");
    std::fs::write(&path, serde_json::to_string(images).unwrap()).unwrap();
    path
}

fn render(from: &Path, images: &Path, extra: &[&str]) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.args(["render", "--platform", "AWS", "--from"])
        .arg(from)
        .arg("--images-json")
        .arg(images)
        .args(extra);
    cmd.env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE");
    cmd.output().expect("capi-installer runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `Kind namespace/name` (or `Kind name`) of every object in a fixture transport ConfigMap.
fn fixture_objects(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap();
    let cm = capi_manifests::yaml::parse_documents("fixture", &text)
        .unwrap()
        .remove(0)
        .value;
    let decoded = capi_manifests::TransportConfigMap::decode(&cm).unwrap();
    capi_manifests::yaml::parse_objects("fixture", &decoded.content.components)
        .unwrap()
        .into_iter()
        .map(|o| o.id.to_string())
        .collect()
}

/// The text plan as (provider, phase, object) lines.
fn parse_plan(text: &str) -> Vec<(String, String, String)> {
    let mut provider = String::new();
    let mut phase = String::new();
    let mut out = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("provider ") {
            provider = rest.split_whitespace().next().unwrap().to_string();
        } else if let Some(rest) = line.strip_prefix("  phase ") {
            phase = rest.split_whitespace().next().unwrap().to_string();
        } else if let Some(object) = line.strip_prefix("    ") {
            out.push((provider.clone(), phase.clone(), object.to_string()));
        }
    }
    out
}

fn expected_phase(object: &str) -> &'static str {
    let kind = object.split_whitespace().next().unwrap();
    match kind {
        "CustomResourceDefinition" => "CustomResourceDefinitions",
        "Deployment" | "StatefulSet" | "DaemonSet" => "Workloads",
        "ValidatingWebhookConfiguration"
        | "MutatingWebhookConfiguration"
        | "ValidatingAdmissionPolicy"
        | "ValidatingAdmissionPolicyBinding" => "Admission",
        _ => "Base",
    }
}

#[test]
fn render_aws_prints_every_object_once_in_spec_order() {
    let Some(dir) = fixtures() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let out = render(&dir, &write_images(tmp.path(), &images()), &[]);
    assert!(out.status.success(), "render failed: {}", stderr(&out));
    let text = stdout(&out);
    let plan = parse_plan(&text);
    assert!(
        text.starts_with("platform AWS: core provider cluster-api, infrastructure provider aws\n"),
        "{text}"
    );

    // Core strictly before aws, and nothing else (gcp is not for AWS).
    let providers: Vec<&str> = plan.iter().map(|(p, _, _)| p.as_str()).collect();
    let first_aws = providers
        .iter()
        .position(|p| *p == "aws")
        .expect("aws in the plan");
    assert!(
        providers[..first_aws].iter().all(|p| *p == "cluster-api"),
        "{providers:?}"
    );
    assert!(
        providers[first_aws..].iter().all(|p| *p == "aws"),
        "{providers:?}"
    );
    assert!(providers[0] == "cluster-api");

    // Inside each provider, phases in SPEC §4 order, and every object in the phase its kind belongs to.
    let order = [
        "CustomResourceDefinitions",
        "Base",
        "Workloads",
        "Admission",
    ];
    for provider in ["cluster-api", "aws"] {
        let phases: Vec<usize> = plan
            .iter()
            .filter(|(p, _, _)| p == provider)
            .map(|(_, phase, _)| order.iter().position(|o| o == phase).expect("known phase"))
            .collect();
        assert!(
            phases.windows(2).all(|w| w[0] <= w[1]),
            "{provider}: phases out of order: {phases:?}"
        );
        assert_eq!(
            phases
                .iter()
                .collect::<std::collections::BTreeSet<_>>()
                .len(),
            4,
            "{provider}: all four phases are present in the fixture"
        );
        for (_, phase, object) in plan.iter().filter(|(p, _, _)| p == provider) {
            assert_eq!(phase, expected_phase(object), "{provider}: {object}");
        }
    }
    // Admission policies come before their bindings inside the phase.
    let admission: Vec<&str> = plan
        .iter()
        .filter(|(_, ph, _)| ph == "Admission")
        .map(|(_, _, o)| o.as_str())
        .collect();
    for (i, o) in admission.iter().enumerate() {
        if let Some(name) = o.strip_prefix("ValidatingAdmissionPolicyBinding ") {
            let policy = admission
                .iter()
                .position(|x| *x == format!("ValidatingAdmissionPolicy {name}"));
            assert!(
                policy.is_some_and(|p| p < i),
                "binding {name} before its policy: {admission:?}"
            );
        }
    }

    // Every object of both ConfigMaps, exactly once, under its own provider.
    for (provider, file) in [("cluster-api", CORE_CM), ("aws", AWS_CM)] {
        let mut expected = fixture_objects(&dir.join(file));
        expected.sort();
        let mut printed: Vec<String> = plan
            .iter()
            .filter(|(p, _, _)| p == provider)
            .map(|(_, _, o)| o.clone())
            .collect();
        printed.sort();
        assert_eq!(
            printed, expected,
            "{provider}: printed objects differ from the fixture's"
        );
    }

    // The CRD manifest is mentioned, not silently dropped.
    let notes = stderr(&out);
    assert!(
        notes.contains(CRD_MANIFEST) && notes.contains("not a transport ConfigMap"),
        "{notes}"
    );
    assert!(
        notes.contains("ConfigMap gcp is not selected for platform AWS"),
        "{notes}"
    );
}

#[test]
fn render_yaml_gives_the_final_objects_with_release_images() {
    let Some(dir) = fixtures() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let images = images();
    let out = render(
        &dir,
        &write_images(tmp.path(), &images),
        &["--output", "yaml"],
    );
    assert!(out.status.success(), "render failed: {}", stderr(&out));
    let docs = capi_manifests::yaml::parse_documents("render output", &stdout(&out))
        .expect("output is YAML");
    let expected =
        fixture_objects(&dir.join(CORE_CM)).len() + fixture_objects(&dir.join(AWS_CM)).len();
    assert_eq!(docs.len(), expected);

    let deployments: Vec<&Value> = docs
        .iter()
        .map(|d| &d.value)
        .filter(|v| v["kind"] == "Deployment")
        .collect();
    assert_eq!(deployments.len(), 2);
    for d in deployments {
        let provider = d["metadata"]["labels"]["cluster.x-k8s.io/provider"]
            .as_str()
            .unwrap();
        let key = if provider == "cluster-api" {
            "cluster-capi-controllers"
        } else {
            "aws-cluster-api-controllers"
        };
        let containers = d["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap();
        assert!(
            containers.iter().any(|c| c["image"] == json!(images[key])),
            "{provider}: no container runs {}",
            images[key]
        );
        for c in containers {
            let image = c["image"].as_str().unwrap();
            assert!(
                images.values().any(|v| *v == image),
                "{provider}: unresolved image {image}"
            );
        }
    }
    // Every object carries its provider's label, which the installer's watches select on.
    for d in &docs {
        let label = d.value["metadata"]["labels"]["cluster.x-k8s.io/provider"].as_str();
        assert!(
            matches!(label, Some("cluster-api" | "infrastructure-aws")),
            "{}",
            d.value["metadata"]["name"]
        );
    }
}

#[test]
fn a_missing_image_key_fails_naming_the_key_and_the_object() {
    let Some(dir) = fixtures() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let mut images = images();
    images.remove("aws-cluster-api-controllers");
    let out = render(&dir, &write_images(tmp.path(), &images), &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("aws-cluster-api-controllers"), "{err}");
    assert!(err.contains("ConfigMap openshift-cluster-api/aws"), "{err}");
    assert!(
        err.contains("Deployment openshift-cluster-api/capa-controller-manager"),
        "{err}"
    );
}

#[test]
fn a_corrupt_configmap_fails_naming_it() {
    let Some(dir) = fixtures() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("input");
    std::fs::create_dir(&input).unwrap();
    std::fs::copy(dir.join(CORE_CM), input.join(CORE_CM)).unwrap();
    // The aws ConfigMap with a compressed payload that is not zstd.
    let text = std::fs::read_to_string(dir.join(AWS_CM)).unwrap();
    let mut cm = capi_manifests::yaml::parse_documents("aws", &text)
        .unwrap()
        .remove(0)
        .value;
    cm["binaryData"]["components-zstd"] = json!("bm90IHpzdGQgYXQgYWxs");
    std::fs::write(
        input.join(AWS_CM),
        capi_manifests::yaml::to_yaml("aws", &cm).unwrap(),
    )
    .unwrap();

    let out = render(&input, &write_images(tmp.path(), &images()), &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("openshift-cluster-api/aws"), "{err}");
    assert!(err.contains(AWS_CM), "{err}");
    // The healthy core provider is still shown.
    assert!(
        stdout(&out).contains("provider cluster-api"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_folder_without_the_platforms_provider_fails_naming_what_is_missing() {
    let Some(dir) = fixtures() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("input");
    std::fs::create_dir(&input).unwrap();
    std::fs::copy(dir.join(CORE_CM), input.join(CORE_CM)).unwrap();
    let out = render(&input, &write_images(tmp.path(), &images()), &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("provider.cluster.x-k8s.io/name=aws"), "{err}");
}

#[test]
fn the_platform_picks_the_infrastructure_provider() {
    let Some(dir) = fixtures() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let mut images = images();
    images.insert(
        "gcp-cluster-api-controllers",
        "quay.io/openshift/ocp-v4.0-art-dev@sha256:9c9c",
    );
    let images = write_images(tmp.path(), &images);

    let run = |platform: &str| {
        Command::new(BIN)
            .args(["render", "--platform", platform, "--from"])
            .arg(&dir)
            .arg("--images-json")
            .arg(&images)
            .output()
            .unwrap()
    };
    let gcp = run("GCP");
    assert!(gcp.status.success(), "{}", stderr(&gcp));
    let providers: Vec<String> = stdout(&gcp)
        .lines()
        .filter_map(|l| l.strip_prefix("provider "))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect();
    assert_eq!(providers, ["cluster-api", "gcp"]);
    assert!(stderr(&gcp).contains("ConfigMap aws is not selected for platform GCP"));

    // A platform without a provider: what the installer does there, nothing, and no error.
    let none = run("Nutanix");
    assert!(none.status.success(), "{}", stderr(&none));
    assert!(
        stdout(&none).contains("installs nothing"),
        "{}",
        stdout(&none)
    );
    assert!(
        !stdout(&none).lines().any(|l| l.starts_with("provider ")),
        "{}",
        stdout(&none)
    );
}
