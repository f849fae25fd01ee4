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
            "quay.io/openshift/ocp-v4.0-art-dev@sha256:c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0",
        ),
        (
            "aws-cluster-api-controllers",
            "quay.io/openshift/ocp-v4.0-art-dev@sha256:a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0",
        ),
        (
            "kube-rbac-proxy",
            "quay.io/openshift/ocp-v4.0-art-dev@sha256:b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0",
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
    // envsubst's `$$` escape, as clusterctl and the reference apply it: CAPA's CRDs quote
    // Kubernetes' own `$$(VAR_NAME)` escape in three descriptions, which read `$(VAR_NAME)` once
    // installed.
    let text = stdout(&out);
    assert!(!text.contains("$$"), "a `$$` survived rendering");
    assert_eq!(
        text.matches("Double $ are reduced").count(),
        3,
        "the three CAPA descriptions that quote `$$`"
    );
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
fn render_shows_the_cluster_proxy_on_every_provider_container() {
    let Some(dir) = fixtures() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let images = write_images(tmp.path(), &images());
    let proxy = tmp.path().join("proxy.yaml");
    std::fs::write(
        &proxy,
        "apiVersion: config.openshift.io/v1\nkind: Proxy\nmetadata: {name: cluster}\n\
         spec: {trustedCA: {name: user-ca-bundle}}\n\
         status: {httpsProxy: 'http://proxy.example:3128', noProxy: .cluster.local}\n",
    )
    .unwrap();
    let out = render(
        &dir,
        &images,
        &["--output", "yaml", "--proxy", proxy.to_str().unwrap()],
    );
    assert!(out.status.success(), "render failed: {}", stderr(&out));
    let docs = capi_manifests::yaml::parse_documents("render output", &stdout(&out)).unwrap();
    let mut containers = 0;
    for d in docs.iter().filter(|d| d.value["kind"] == "Deployment") {
        let pod = &d.value["spec"]["template"]["spec"];
        for c in pod["containers"].as_array().unwrap() {
            containers += 1;
            let proxy: Vec<&Value> = c["env"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| e["name"].as_str().is_some_and(|n| n.ends_with("PROXY")))
                .collect();
            assert_eq!(
                proxy,
                [
                    &json!({"name": "HTTPS_PROXY", "value": "http://proxy.example:3128"}),
                    &json!({"name": "NO_PROXY", "value": ".cluster.local"})
                ],
                "{}: {}",
                d.value["metadata"]["name"],
                c["name"]
            );
            assert!(c["volumeMounts"].as_array().unwrap().contains(
                &json!({"name": "trusted-ca-bundle", "mountPath": "/etc/pki/ca-trust/extracted/pem", "readOnly": true})
            ));
        }
        assert!(
            pod["volumes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|v| v["configMap"]["name"] == "capi-trusted-ca-bundle")
        );
    }
    assert!(containers >= 2, "core's and aws's managers");
    // Without --proxy: as on a cluster without a proxy.
    let plain = stdout(&render(&dir, &images, &["--output", "yaml"]));
    assert!(!plain.contains("HTTPS_PROXY") && !plain.contains("trusted-ca-bundle"));
    // A file that is not a Proxy is named.
    std::fs::write(&proxy, "kind: ConfigMap\n").unwrap();
    let bad = render(&dir, &images, &["--proxy", proxy.to_str().unwrap()]);
    assert!(!bad.status.success());
    assert!(
        stderr(&bad).contains("expected a Proxy object"),
        "{}",
        stderr(&bad)
    );
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
    // Said once: the image the key would have replaced is not also a bundle-policy violation (an
    // image outside the release payload).
    assert!(!err.contains("workload-payload-images-only"), "{err}");
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
        "quay.io/openshift/ocp-v4.0-art-dev@sha256:9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c",
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

/// A CRD outside the Cluster API groups and a binding to a role of the cluster: `render` refuses them as
/// `run` would, and accepts them with the same `--policy-allow-*` flags `run` takes (one flag group).
#[test]
fn render_takes_the_policy_allowances_of_run() {
    let Some(dir) = fixtures() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let input = aws_with_two_violations(&dir, tmp.path());
    let images = write_images(tmp.path(), &images());

    let refused = render(&input, &images, &[]);
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    let err = stderr(&refused);
    assert!(
        err.contains("(CustomResourceDefinition widgets.example.com): rule crd-family-groups-only"),
        "{err}"
    );
    assert!(
        err.contains("(ClusterRoleBinding capa-node-reader): rule rbac-bundle-roles-only"),
        "{err}"
    );

    let allowed = render(
        &input,
        &images,
        &[
            "--policy-allow-group",
            "example.com",
            "--policy-allow-role",
            "ClusterRole/node-reader",
        ],
    );
    assert!(allowed.status.success(), "{}", stderr(&allowed));
    let plan = parse_plan(&stdout(&allowed));
    for object in [
        "CustomResourceDefinition widgets.example.com",
        "ClusterRoleBinding capa-node-reader",
    ] {
        assert!(
            plan.iter().any(|(p, _, o)| p == "aws" && o == object),
            "{object} not in the plan: {plan:?}"
        );
    }

    // The same flags, the same parsing: a malformed role is a usage error of either command.
    for command in ["render", "run"] {
        let out = installer(&[command, "--policy-allow-role", "node-reader", "--help"]);
        assert_eq!(out.status.code(), Some(2), "{command}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("expected ClusterRole/NAME or Role/NAME"),
            "{command}: {}",
            stderr(&out)
        );
    }
}

/// Independent problems are reported together, one per line (issue 21): a missing image key does not
/// hide the bundle policy's violations, and each violation is a line of its own.
#[test]
fn every_problem_is_reported_at_once_one_per_line() {
    let Some(dir) = fixtures() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let input = aws_with_two_violations(&dir, tmp.path());
    let mut images = images();
    images.remove("aws-cluster-api-controllers");
    let out = render(&input, &write_images(tmp.path(), &images), &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error: ")).collect();
    let one = |needle: &str| {
        let found: Vec<&&str> = lines.iter().filter(|l| l.contains(needle)).collect();
        assert_eq!(found.len(), 1, "one line with {needle:?}: {err}");
        assert!(found[0].contains(AWS_CM), "each line names the file: {err}");
    };
    one("needs key \"aws-cluster-api-controllers\"");
    one("rule crd-family-groups-only");
    one("rule rbac-bundle-roles-only");
    assert!(
        lines.contains(&"error: 1 of 2 provider(s) cannot be rendered"),
        "{err}"
    );
}

/// The aws fixture's ConfigMap with a CRD outside the Cluster API groups and a binding to a role of the
/// cluster added, beside the core one, in `dir/input`.
fn aws_with_two_violations(dir: &Path, tmp: &Path) -> PathBuf {
    let input = tmp.join("input");
    std::fs::create_dir(&input).unwrap();
    std::fs::copy(dir.join(CORE_CM), input.join(CORE_CM)).unwrap();
    let aws = std::fs::read_to_string(dir.join(AWS_CM)).unwrap();
    let aws = capi_manifests::yaml::parse_documents("aws", &aws)
        .unwrap()
        .remove(0)
        .value;
    let mut content = capi_manifests::TransportConfigMap::decode(&aws)
        .unwrap()
        .content;
    if !content.components.ends_with('\n') {
        content.components.push('\n');
    }
    content.components.push_str(
        "---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec:\n  group: example.com\n  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}\n  scope: Namespaced\n  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: capa-node-reader}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: node-reader}\nsubjects: [{kind: ServiceAccount, name: capa-controller-manager, namespace: openshift-cluster-api}]\n",
    );
    std::fs::write(
        input.join(AWS_CM),
        capi_manifests::yaml::to_yaml("aws", &content.encode().unwrap()).unwrap(),
    )
    .unwrap();
    input
}
/// `capi-installer` with `args`, no environment that could change its defaults.
fn installer(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env_remove("RELEASE_VERSION")
        .env_remove("POD_NAME")
        .env_remove("KUBECONFIG")
        .output()
        .expect("capi-installer runs")
}

/// Every flag of every subcommand says what it does (`-h` prints flag and text on one line, or the text
/// on the next, more indented line).
#[test]
fn every_flag_has_help_text() {
    for command in ["run", "render", "status", "diff"] {
        let out = installer(&[command, "--help"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let help = stdout(&out);
        let lines: Vec<&str> = help.lines().collect();
        let mut flags = 0;
        for (i, line) in lines.iter().enumerate() {
            let trimmed = line.trim_start();
            if !(trimmed.starts_with("--") || trimmed.starts_with("-h, ")) {
                continue;
            }
            flags += 1;
            // `--flag <VALUE>  text` (short help) or the text on the next, more indented line.
            let same_line = trimmed
                .split_once("  ")
                .is_some_and(|(_, text)| !text.trim().is_empty());
            let next = lines.get(i + 1).copied().unwrap_or_default();
            let indent = |l: &str| l.len() - l.trim_start().len();
            let below = !next.trim().is_empty() && indent(next) > indent(line);
            assert!(
                same_line || below,
                "{command}: no help text for {trimmed:?}:\n{help}"
            );
        }
        assert!(flags > 2, "{command}: no flags found in:\n{help}");
    }
}

/// Durations are Go durations; a bare number is a usage error (exit 2) that says how to write it.
#[test]
fn durations_need_a_unit() {
    let tmp = tempfile::tempdir().unwrap();
    let images = write_images(tmp.path(), &images());
    let images = images.to_str().unwrap();
    for flag in [
        "--deployment-timeout",
        "--crd-timeout",
        "--resync",
        "--leader-elect-lease-duration",
        "--leader-elect-renew-deadline",
        "--leader-elect-retry-period",
    ] {
        let out = installer(&["run", "--images-json", images, flag, "180"]);
        assert_eq!(out.status.code(), Some(2), "{flag}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.starts_with("error: "), "{err}");
        assert!(err.contains(flag) && err.contains("write 180s"), "{err}");
    }
    // Every form parses: the run gets past the flags and stops at the missing kubeconfig's file.
    let out = installer(&[
        "run",
        "--images-json",
        images,
        "--kubeconfig",
        "/nonexistent/kubeconfig",
        "--deployment-timeout",
        "1.5m",
        "--crd-timeout",
        "90s",
        "--resync",
        "1h30m",
        "--leader-elect-retry-period",
        "500ms",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("/nonexistent/kubeconfig"),
        "{}",
        stderr(&out)
    );
}

/// One error format (`error: what: why`, one line) and exit codes scripts can use: 2 when a command
/// cannot run, 1 when its answer is "no".
#[test]
fn errors_are_one_line_with_exit_codes_for_scripts() {
    let tmp = tempfile::tempdir().unwrap();
    let images = write_images(tmp.path(), &images());
    let images = images.to_str().unwrap();
    let kubeconfig = tmp.path().join("kubeconfig");
    // Never contacted: every case fails before the first request.
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n\
         users:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n  context:\n    cluster: c\n    \
         user: u\ncurrent-context: x\n",
    )
    .unwrap();
    let kubeconfig = kubeconfig.to_str().unwrap();
    let cases: Vec<(Vec<&str>, i32, &str)> = vec![
        (
            vec!["run", "--images-json", "/nonexistent/images.json"],
            2,
            "error: reading images file /nonexistent/images.json: ",
        ),
        (
            vec![
                "run",
                "--images-json",
                images,
                "--kubeconfig",
                kubeconfig,
                "--leader-elect-lease-duration",
                "10s",
                "--leader-elect-renew-deadline",
                "10s",
            ],
            2,
            "error: leader election: the renew deadline (10s) must be shorter than the lease duration (10s)",
        ),
        (
            vec!["run", "--no-such-flag"],
            2,
            "error: unexpected argument",
        ),
        (
            vec![
                "render",
                "--platform",
                "AWS",
                "--from",
                "/nonexistent",
                "--images-json",
                images,
            ],
            2,
            "error: ",
        ),
        // `diff`: 0 and 1 are its answers (tests/diff.rs); it cannot run without its inputs or the
        // cluster.
        (vec!["diff", "--images-json", images], 2, "error: "),
        (
            vec![
                "diff",
                "/nonexistent/aws.yaml",
                "--images-json",
                images,
                "--kubeconfig",
                kubeconfig,
            ],
            2,
            "error: reading /nonexistent/aws.yaml: ",
        ),
        (
            vec![
                "diff",
                images,
                "--images-json",
                images,
                "--kubeconfig",
                kubeconfig,
            ],
            2,
            "error: ",
        ),
    ];
    let aws = fixtures().map(|d| d.join("0000_30_cluster-api_04_cm.infrastructure-aws.yaml"));
    let aws = aws.as_ref().map(|p| p.to_str().unwrap().to_string());
    let mut cases = cases;
    if let Some(aws) = &aws {
        cases.push((
            vec![
                "diff",
                aws.as_str(),
                "--images-json",
                images,
                "--kubeconfig",
                kubeconfig,
            ],
            2,
            "error: the connection to the server 127.0.0.1:1 was refused",
        ));
    }
    for (args, code, prefix) in cases {
        let out = installer(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        // `run` may have logged before it failed; the error is one line of its own.
        let error_lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error: ")).collect();
        assert_eq!(error_lines.len(), 1, "{args:?}: one error line: {err}");
        assert!(error_lines[0].starts_with(prefix), "{args:?}: {err}");
    }
}

/// `capi-installer status` exits 0 only when the ClusterOperator is Available and not Degraded (issue 13),
/// so that scripts can wait on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_exits_non_zero_unless_available_and_not_degraded() {
    use kube::api::{Api, DynamicObject, Patch, PatchParams};

    let cp = control_plane::ControlPlane::start(Default::default())
        .await
        .expect("control plane starts");
    let admin = cp.admin_client().await.unwrap();
    let status = || {
        Command::new(BIN)
            .args(["status", "--kubeconfig"])
            .arg(cp.kubeconfig_path())
            .output()
            .expect("capi-installer runs")
    };
    let out = status();
    assert_eq!(
        out.status.code(),
        Some(1),
        "no ClusterOperator: {}",
        stdout(&out)
    );
    assert!(stdout(&out).contains("not found"), "{}", stdout(&out));

    let resource = kube::api::ApiResource {
        group: "config.openshift.io".into(),
        version: "v1".into(),
        api_version: "config.openshift.io/v1".into(),
        kind: "ClusterOperator".into(),
        plural: "clusteroperators".into(),
    };
    let api: Api<DynamicObject> = Api::all_with(admin.clone(), &resource);
    let pp = PatchParams::apply("test").force();
    let object = json!({"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
        "metadata": {"name": "cluster-api"}, "spec": {}});
    api.patch("cluster-api", &pp, &Patch::Apply(&object))
        .await
        .unwrap();
    for (available, degraded, code) in [
        ("True", "False", 0),
        ("True", "True", 1),
        ("False", "False", 1),
    ] {
        let conditions = json!({"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
            "metadata": {"name": "cluster-api"}, "status": {"conditions": [
                {"type": "Available", "status": available, "reason": "Test",
                    "lastTransitionTime": "2026-11-30T00:00:00Z"},
                {"type": "Degraded", "status": degraded, "reason": "Test",
                    "lastTransitionTime": "2026-11-30T00:00:00Z"}]}});
        api.patch_status("cluster-api", &pp, &Patch::Apply(&conditions))
            .await
            .unwrap();
        let out = status();
        assert_eq!(
            out.status.code(),
            Some(code),
            "Available={available} Degraded={degraded}: {}{}",
            stdout(&out),
            stderr(&out)
        );
        // The same answer for scripts, machine-readable (issue 21): the exit code, `healthy`, the
        // ClusterOperator's conditions as they are, every table as objects.
        for format in ["json", "yaml"] {
            let out = Command::new(BIN)
                .args(["status", "-o", format, "--kubeconfig"])
                .arg(cp.kubeconfig_path())
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(code), "{format}: {}", stderr(&out));
            let doc: Value = if format == "json" {
                serde_json::from_slice(&out.stdout).expect("one JSON document")
            } else {
                serde_saphyr::from_str(&stdout(&out)).expect("one YAML document")
            };
            assert_eq!(doc["healthy"], json!(code == 0), "{format}: {doc}");
            assert_eq!(
                doc["clusterOperator"]["status"]["conditions"][0]["status"],
                json!(available),
                "{format}: {doc}"
            );
            let controllers = doc["controllers"].as_array().expect("a list");
            assert_eq!(controllers.len(), 4, "{doc}");
            assert_eq!(controllers[0]["controller"], "InfraCluster", "{doc}");
            assert_eq!(doc["processes"][0]["process"], "capi-installer", "{doc}");
            assert_eq!(
                doc["processes"][1]["process"], "capi-installer-deployer",
                "{doc}"
            );
        }
    }
}

/// A kubeconfig of one context `name` whose cluster is `server` (never a real credential).
fn kubeconfig_for(dir: &Path, name: &str, server: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: {name}\n  cluster:\n    server: {server}\n\
             users:\n- name: {name}\n  user:\n    token: t\ncontexts:\n- name: {name}\n  context:\n    \
             cluster: {name}\n    user: {name}\ncurrent-context: {name}\n"
        ),
    )
    .unwrap();
    path
}

/// An HTTP server on loopback that is not an API server: it answers every request as a plain web
/// server answers an unknown path. Serves `requests` requests, then stops.
fn not_an_api_server(requests: usize) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(requests) {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let body = "404 page not found\n";
            let _ = write!(
                stream,
                "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    format!("http://{addr}")
}

/// kubectl's habits for reaching the cluster (issue 21): `KUBECONFIG` lists with missing entries
/// skipped, `--context`, `~/.kube/config`, `-n`; and errors that name the server and what to check: a
/// refused connection, a server that is not an API server, an unknown context. The same rules for
/// `status`, `diff` and `rollback` (one `KubeArgs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_access_follows_kubectl() {
    let cp = control_plane::ControlPlane::start(Default::default())
        .await
        .expect("control plane starts");
    let tmp = tempfile::tempdir().unwrap();
    let real = cp.kubeconfig_path();
    let refused = kubeconfig_for(tmp.path(), "refused", "https://127.0.0.1:1");
    let web = kubeconfig_for(tmp.path(), "web", &not_an_api_server(8));
    let missing = tmp.path().join("no-such-kubeconfig");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(home.join(".kube")).unwrap();
    let list = |paths: &[&Path]| std::env::join_paths(paths).unwrap();
    let run = |args: &[&str], kubeconfig: Option<&std::ffi::OsStr>, home: &Path| {
        let mut cmd = Command::new(BIN);
        cmd.args(args)
            .env_remove("KUBECONFIG")
            .env_remove("KUBERNETES_SERVICE_HOST")
            .env("HOME", home);
        if let Some(k) = kubeconfig {
            cmd.env("KUBECONFIG", k);
        }
        cmd.output().expect("capi-installer runs")
    };
    // Reached the cluster: the status of a cluster without the installer, exit 1 (not Available).
    let reached = |out: &Output, what: &str| {
        assert_eq!(out.status.code(), Some(1), "{what}: {}", stderr(out));
        assert!(
            stdout(out).contains("ClusterOperator cluster-api: not found"),
            "{what}: {}{}",
            stdout(out),
            stderr(out)
        );
    };

    // A KUBECONFIG list: the missing entry is skipped, as kubectl skips it.
    let out = run(&["status"], Some(&list(&[&missing, &real])), tmp.path());
    reached(&out, "KUBECONFIG with a missing entry");
    // The first file's current-context wins; --context picks another of the merged files.
    let both = list(&[&refused, &real]);
    let out = run(
        &["status", "-n", "openshift-cluster-api"],
        Some(&both),
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with(
            "error: the connection to the server 127.0.0.1:1 was refused: is the API server running there, and is that the right host and port?"
        ) && stderr(&out).contains("context refused"),
        "{}",
        stderr(&out)
    );
    let out = run(
        &["status", "--context", "control-plane"],
        Some(&both),
        tmp.path(),
    );
    reached(&out, "--context");
    // Without KUBECONFIG: ~/.kube/config.
    std::fs::copy(&real, home.join(".kube/config")).unwrap();
    let out = run(&["status"], None, &home);
    reached(&out, "~/.kube/config");
    // ... but not when KUBECONFIG is set (kubectl reads it alone), nor with a --kubeconfig.
    let out = run(&["status"], Some(missing.as_os_str()), &home);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("none of the files in KUBECONFIG")
            && stderr(&out).contains("pass --kubeconfig FILE or set KUBECONFIG"),
        "{}",
        stderr(&out)
    );
    let out = run(
        &["status", "--kubeconfig", missing.to_str().unwrap()],
        None,
        &home,
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    // The path once and the system's reason, not the client library's restatement of both.
    assert!(
        stderr(&out).starts_with(&format!(
            "error: reading kubeconfig {}: No such file or directory",
            missing.display()
        )) && !stderr(&out).contains("failed to read kubeconfig"),
        "{}",
        stderr(&out)
    );

    // Every command that reaches the cluster says the same, naming the server and what to check.
    let images = write_images(tmp.path(), &images());
    let images = images.to_str().unwrap();
    let cm = tmp.path().join("cm.yaml");
    std::fs::write(
        &cm,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: aws\n  labels:\n    provider.cluster.x-k8s.io/name: aws\n",
    )
    .unwrap();
    let cm = cm.to_str().unwrap();
    for (command, kubeconfig, expected) in [
        (
            vec!["status"],
            &web,
            "is not a Kubernetes API server: GET /version answered HTTP 404",
        ),
        (
            vec!["diff", cm, "--images-json", images],
            &web,
            "is not a Kubernetes API server",
        ),
        (
            vec!["rollback", "--provider", "aws", "--to", "1"],
            &web,
            "is not a Kubernetes API server",
        ),
        (
            vec!["diff", cm, "--images-json", images],
            &refused,
            "the connection to the server 127.0.0.1:1 was refused",
        ),
        (
            vec!["rollback", "--provider", "aws", "--to", "1"],
            &refused,
            "the connection to the server 127.0.0.1:1 was refused",
        ),
    ] {
        let mut args = command.clone();
        args.extend(["--kubeconfig", kubeconfig.to_str().unwrap()]);
        let out = run(&args, None, tmp.path());
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with("error: ") && err.contains(expected),
            "{args:?}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
    }
    let out = run(&["status", "--context", "nope"], Some(&both), tmp.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no context \"nope\" (contexts: refused, control-plane)"),
        "{}",
        stderr(&out)
    );

    // Without --images-json, `diff` reads the images the installer in the cluster is given (its
    // ConfigMap, in the installer's namespace), with the checks of a file.
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
    use kube::api::{Api, PostParams};
    let admin = cp.admin_client().await.unwrap();
    for name in ["openshift-cluster-api", "openshift-cluster-api-operator"] {
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
        Api::<Namespace>::all(admin.clone())
            .create(&PostParams::default(), &ns)
            .await
            .unwrap();
    }
    let real_kubeconfig = real.to_str().unwrap();
    let diff = || {
        run(
            &["diff", cm, "--kubeconfig", real_kubeconfig],
            None,
            tmp.path(),
        )
    };
    let out = diff();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with(
            "error: ConfigMap openshift-cluster-api-operator/capi-installer-images: the ConfigMap is not there (the release payload applies it); pass --images-json FILE"
        ),
        "{}",
        stderr(&out)
    );
    let images_cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "capi-installer-images", "namespace": "openshift-cluster-api-operator"},
        "data": {"cluster-capi-controllers": ""}}))
    .unwrap();
    Api::<ConfigMap>::namespaced(admin.clone(), "openshift-cluster-api-operator")
        .create(&PostParams::default(), &images_cm)
        .await
        .unwrap();
    let out = diff();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with(
            r#"error: ConfigMap openshift-cluster-api-operator/capi-installer-images: key "cluster-capi-controllers": "" is not an image reference: it is empty"#
        ),
        "{}",
        stderr(&out)
    );
}

/// Input is checked where it is read (issue 21): every image of an images file is an image reference
/// (`run`, `render` and `diff` read it alike, before any cluster is contacted), and `--platform` is a
/// known platform type, spelled exactly. Both are errors of the command (exit 2) that name what is wrong.
#[test]
fn images_and_platforms_are_checked_at_the_edge() {
    let tmp = tempfile::tempdir().unwrap();
    let mut bad = images();
    bad.insert("cluster-capi-controllers", "");
    bad.insert("aws-cluster-api-controllers", "not an image ref!!");
    let bad = write_images(tmp.path(), &bad);
    let bad = bad.to_str().unwrap();
    let from = tmp.path().to_str().unwrap();
    let refused = kubeconfig_for(tmp.path(), "refused", "https://127.0.0.1:1");
    let refused = refused.to_str().unwrap();
    for args in [
        vec![
            "render",
            "--platform",
            "AWS",
            "--from",
            from,
            "--images-json",
            bad,
        ],
        vec!["run", "--images-json", bad, "--kubeconfig", refused],
        vec!["diff", from, "--images-json", bad, "--kubeconfig", refused],
    ] {
        let out = installer(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        let line = err
            .lines()
            .find(|l| l.starts_with("error: "))
            .unwrap_or_default();
        assert!(
            line.starts_with(&format!("error: images file {bad}: "))
                && line.contains(r#"key "cluster-capi-controllers": "" is not an image reference: it is empty"#)
                && line.contains(r#"key "aws-cluster-api-controllers": "not an image ref!!" is not an image reference"#),
            "{args:?}: {err}"
        );
    }

    let good = write_images(tmp.path(), &images());
    let good = good.to_str().unwrap();
    for (platform, hint) in [("aws", Some("did you mean AWS?")), ("Foo", None)] {
        let out = installer(&[
            "render",
            "--platform",
            platform,
            "--from",
            from,
            "--images-json",
            good,
        ]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{platform}: {err}");
        assert!(
            err.starts_with("error: invalid value")
                && err.contains("is not an Infrastructure platform type")
                && err.contains("AWS, Azure, BareMetal, GCP")
                && hint.is_none_or(|h| err.contains(h)),
            "{platform}: {err}"
        );
    }
}

/// What `oc get cm -o yaml` writes for several ConfigMaps is a `kind: List`: `render` reads its items
/// as kubectl does, and plans exactly what the separate files give.
#[test]
fn a_list_is_read_item_by_item() {
    let Some(dir) = fixtures() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let images = write_images(tmp.path(), &images());
    let input = tmp.path().join("input");
    std::fs::create_dir(&input).unwrap();
    let items: Vec<Value> = [CORE_CM, AWS_CM]
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(dir.join(f)).unwrap();
            let mut cm = capi_manifests::yaml::parse_documents(f, &text)
                .unwrap()
                .remove(0)
                .value;
            // As the API server returns it.
            cm["metadata"]["resourceVersion"] = json!("1234");
            cm["metadata"]["uid"] = json!("6c1f2bd0-7a8e-4d8b-9d59-2f0e5c1c8a11");
            cm
        })
        .collect();
    let list = json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items});
    std::fs::write(
        input.join("x.yaml"),
        capi_manifests::yaml::to_yaml("list", &list).unwrap(),
    )
    .unwrap();
    let from_list = render(&input, &images, &[]);
    assert!(from_list.status.success(), "{}", stderr(&from_list));
    assert!(
        !stderr(&from_list).contains("not a transport ConfigMap"),
        "{}",
        stderr(&from_list)
    );
    let from_files = render(&dir, &images, &[]);
    assert_eq!(
        parse_plan(&stdout(&from_list)),
        parse_plan(&stdout(&from_files))
    );
}

/// `-o json` of `render` is a `List` of the rendered objects in apply order: the objects of the text plan.
#[test]
fn render_prints_json_too() {
    let Some(dir) = fixtures() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let images = write_images(tmp.path(), &images());
    let text = render(&dir, &images, &[]);
    let json = render(&dir, &images, &["-o", "json"]);
    assert!(json.status.success(), "{}", stderr(&json));
    let list: Value = serde_json::from_slice(&json.stdout).expect("one JSON document");
    assert_eq!(
        (list["apiVersion"].as_str(), list["kind"].as_str()),
        (Some("v1"), Some("List"))
    );
    let ids: Vec<String> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let name = o["metadata"]["name"].as_str().unwrap();
            match o["metadata"]["namespace"].as_str() {
                Some(ns) => format!("{} {ns}/{name}", o["kind"].as_str().unwrap()),
                None => format!("{} {name}", o["kind"].as_str().unwrap()),
            }
        })
        .collect();
    let planned: Vec<String> = parse_plan(&stdout(&text))
        .into_iter()
        .map(|(_, _, o)| o)
        .collect();
    assert_eq!(ids, planned);
}

/// A reader that stops early (`| head -1`) is not an error: no panic, and the exit code keeps its meaning
/// (0 here, the plan was printed; 1 stays 1 for `manifests-gen --check`, tests/cli.rs there).
#[test]
fn a_closed_stdout_is_not_an_error() {
    let Some(dir) = fixtures() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let images = write_images(tmp.path(), &images());
    let script = format!(
        "set -o pipefail; {BIN} render --platform AWS --from {} --images-json {} -o yaml | head -1",
        dir.display(),
        images.display()
    );
    let out = Command::new("bash").args(["-c", &script]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out).lines().count(), 1);
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));

    // A pipe whose reader is gone before the command writes its first byte: every write fails
    // (EPIPE), whatever the output's size and however fast a reader would have been.
    for (platform, output, code) in [("AWS", "text", 0), ("AWS", "json", 0), ("None", "text", 0)] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = Command::new(BIN)
            .args(["render", "--platform", platform, "--from"])
            .arg(&dir)
            .arg("--images-json")
            .arg(&images)
            .args(["-o", output])
            .stdout(writer)
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(
            out.status.code(),
            Some(code),
            "{platform} -o {output}: {err}"
        );
        assert!(
            !err.contains("panicked") && !err.contains("error:"),
            "{platform} -o {output}: {err}"
        );
    }
}

/// The help of every command that reaches a cluster describes the kubeconfig default in the same words,
/// those of the runtime's one definition, and every flag that takes a value names it (`<PATH>`, not
/// `<KUBECONFIG>`).
#[test]
fn help_texts_agree() {
    let mut kubeconfig_help = Vec::new();
    for command in ["run", "render", "status", "diff", "rollback"] {
        let out = installer(&[command, "--help"]);
        let help = stdout(&out);
        for line in help
            .lines()
            .map(str::trim_start)
            .filter(|l| l.starts_with("--"))
        {
            let flag = line.split_whitespace().next().unwrap();
            let value = line.split_whitespace().nth(1).unwrap_or_default();
            if let Some(name) = value.strip_prefix('<').and_then(|v| v.strip_suffix('>')) {
                let from_field = flag
                    .trim_start_matches("--")
                    .replace('-', "_")
                    .to_uppercase();
                assert_ne!(name, from_field, "{command} {flag}: no value_name:\n{help}");
            }
        }
        if command != "render" {
            // The text follows on the flag's line (short layout) or on the lines below it (long).
            let start = help
                .find("--kubeconfig <PATH>")
                .unwrap_or_else(|| panic!("{command}:\n{help}"));
            let mut lines = help[start + "--kubeconfig <PATH>".len()..].lines();
            let same_line = lines.next().unwrap_or_default().trim();
            let text: String = std::iter::once(same_line)
                .chain(
                    lines
                        .take_while(|l| !l.trim_start().starts_with('-'))
                        .map(str::trim),
                )
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join(" ");
            assert!(help.contains("--context <NAME>"), "{command}:\n{help}");
            kubeconfig_help.push((command, text));
        }
    }
    for (command, text) in &kubeconfig_help {
        assert_eq!(
            text.trim(),
            "Kubeconfig file. Default, as kubectl: the files listed in $KUBECONFIG (missing ones skipped), else ~/.kube/config, else the in-cluster configuration (the pod's ServiceAccount)",
            "{command}"
        );
    }
}

/// `run`'s logs are coloured on a terminal only, and not with `NO_COLOR` (issue 21). The terminal is a
/// real pseudo-terminal (util-linux `script`); the run logs its start, then fails to bind a port that
/// is taken, so nothing is contacted.
#[test]
fn logs_are_coloured_on_a_terminal_unless_no_color() {
    if Command::new("script").arg("--version").output().is_err() {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "CI=true: util-linux `script` is required"
        );
        eprintln!("skipping: no `script` (util-linux) for a pseudo-terminal");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let images = write_images(tmp.path(), &images());
    let kubeconfig = kubeconfig_for(tmp.path(), "k", "https://127.0.0.1:1");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let command = format!(
        "{BIN} run --images-json {} --kubeconfig {} --leader-elect=false --http-addr {} --metrics-addr 127.0.0.1:0",
        images.display(),
        kubeconfig.display(),
        taken.local_addr().unwrap()
    );
    let on_a_terminal = |no_color: Option<&str>| {
        let mut cmd = Command::new("script");
        cmd.args(["-q", "-e", "-c", &command, "/dev/null"])
            .env_remove("NO_COLOR")
            .env_remove("RUST_LOG");
        if let Some(v) = no_color {
            cmd.env("NO_COLOR", v);
        }
        let out = cmd.output().unwrap();
        let text = stdout(&out);
        assert!(text.contains("starting installer"), "{text}");
        assert!(text.contains("error: binding"), "{text}");
        text.contains('\u{1b}')
    };
    assert!(on_a_terminal(None), "coloured on a terminal");
    assert!(!on_a_terminal(Some("1")), "NO_COLOR=1");
    // Not a terminal: never coloured.
    let out = Command::new("bash")
        .args(["-c", &command])
        .output()
        .unwrap();
    assert!(stderr(&out).contains("starting installer") && !stderr(&out).contains('\u{1b}'));
}

/// The flag table of `run` in docs/admin/commands.md and `run --help` agree (issue 21): every flag of
/// the binary is in the table, every flag of the table is the binary's, and a default the table gives
/// as one value is the binary's default.
#[test]
fn the_run_flag_table_is_the_binarys() {
    let docs = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/admin/commands.md"),
    )
    .unwrap();
    let section = docs
        .split("\n## ")
        .find(|s| s.starts_with("`capi-installer run`"))
        .expect("the run section");
    // (flags of the row, default cell)
    let rows: Vec<(Vec<String>, String)> = section
        .lines()
        .filter(|l| l.starts_with("| `-"))
        .map(|l| {
            let cells: Vec<&str> = l.split(" | ").collect();
            let flags = cells[0]
                .split('`')
                .filter_map(|t| t.split_whitespace().next())
                .filter(|t| t.starts_with("--"))
                .map(|t| t.split('[').next().unwrap().to_string())
                .collect();
            (flags, cells[1].to_string())
        })
        .collect();
    let documented = |flag: &str| {
        rows.iter().any(|(flags, _)| {
            flags
                .iter()
                .any(|f| f == flag || f.strip_suffix('*').is_some_and(|p| flag.starts_with(p)))
        })
    };
    let help = stdout(&installer(&["run", "--help"]));
    let mut flags = Vec::new();
    for line in help.lines().map(str::trim_start) {
        let Some(flag) = line
            .strip_prefix("-n, ")
            .unwrap_or(line)
            .split_whitespace()
            .next()
            .filter(|f| f.starts_with("--") && *f != "--help")
        else {
            continue;
        };
        flags.push(flag.to_string());
        assert!(
            documented(flag),
            "{flag} is not in the table of commands.md"
        );
    }
    for (row, default) in &rows {
        for flag in row.iter().filter(|f| !f.ends_with('*')) {
            assert!(
                flags.contains(flag),
                "{flag} of commands.md is not a flag of run:\n{help}"
            );
        }
        // One value in backticks: the binary's default, as --help shows it.
        let value = default
            .trim()
            .strip_prefix('`')
            .and_then(|v| v.strip_suffix('`'));
        if let (Some(value), [flag]) = (value, row.as_slice()) {
            // The flag's line and its text below it, up to the next flag.
            let start = help.find(&format!("{flag} ")).unwrap();
            let mut lines = help[start..].lines();
            let block: Vec<&str> = std::iter::once(lines.next().unwrap())
                .chain(lines.take_while(|l| !l.trim_start().starts_with('-')))
                .collect();
            let block = block.join("\n");
            assert!(
                block.contains(&format!("[default: {value}]")),
                "{flag}: commands.md says {value}:\n{block}"
            );
        }
    }
}
