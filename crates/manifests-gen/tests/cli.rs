//! Command-line behaviour: bad input (exit 2, one `error: ` line naming file/document/object, nothing
//! written), `--check` (exit 1 when stale, 2 on an error), Go-style flags, kustomize discovery.

mod common;

use std::path::Path;
use std::process::Output;

use common::*;

const METADATA: &str = "apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3\nkind: Metadata\nreleaseSeries:\n- {major: 1, minor: 2, contract: v1beta1}\n";

const GOOD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: fooclusters.infrastructure.cluster.x-k8s.io}
spec:
  group: infrastructure.cluster.x-k8s.io
  names: {kind: FooCluster, plural: fooclusters}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: sa, namespace: capf-system}
"#;

struct Case {
    _dir: tempfile::TempDir,
    base: std::path::PathBuf,
}

impl Case {
    fn new(components: &str, metadata: &str) -> Case {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("repo");
        std::fs::create_dir_all(&base).unwrap();
        std::fs::write(base.join("components.yaml"), components).unwrap();
        std::fs::write(base.join("metadata.yaml"), metadata).unwrap();
        Case { _dir: dir, base }
    }

    fn run(&self, version: &str, extra: &[&str]) -> Output {
        bin()
            .current_dir(&self.base)
            .args([
                "--base-path",
                ".",
                "--manifests-path",
                "openshift/manifests",
            ])
            .args([
                "--provider-name",
                "foo",
                "--provider-type",
                "InfrastructureProvider",
            ])
            .args(["--provider-version", version])
            .args(["--components", "components.yaml"])
            .args(extra)
            .output()
            .unwrap()
    }

    fn outputs(&self) -> Vec<std::path::PathBuf> {
        list_files(&self.base.join("openshift"))
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn assert_fails(o: &Output, wants: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "an error exits 2: {err}");
    let error_lines: Vec<&str> = err.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(error_lines.len(), 1, "one message: {err}");
    assert!(
        error_lines[0].starts_with("error: "),
        "common prefix: {err}"
    );
    for w in wants {
        assert!(err.contains(w), "missing {w:?} in: {err}");
    }
}

#[test]
fn good_input_writes_both_outputs() {
    let c = Case::new(GOOD, METADATA);
    let o = c.run("v1.2.3", &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let files: Vec<String> = c
        .outputs()
        .iter()
        .map(|p| p.strip_prefix(&c.base).unwrap().display().to_string())
        .collect();
    assert_eq!(
        files,
        [
            "openshift/infrastructure-components-openshift.yaml",
            "openshift/manifests/0000_30_cluster-api_04_cm.infrastructure-foo.yaml"
        ]
    );
    let cm = std::fs::read_to_string(
        c.base
            .join("openshift/manifests/0000_30_cluster-api_04_cm.infrastructure-foo.yaml"),
    )
    .unwrap();
    assert!(cm.ends_with('\n') && !cm.ends_with("\n\n"));
    assert!(
        cm.contains("provider.cluster.x-k8s.io/version: v1.2.3"),
        "{cm}"
    );
    assert!(
        cm.contains("openshift-cluster-api-protect-foocluster"),
        "{cm}"
    );
    // No temporary files left behind.
    assert!(
        c.outputs()
            .iter()
            .all(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
    );
}

#[test]
fn bad_inputs_exit_2_with_one_clear_message_and_write_nothing() {
    let cases: Vec<(String, &str, &str, Vec<&str>)> = vec![
        (
            format!("{GOOD}---\napiVersion: v1\nkind: [unclosed\n"),
            METADATA,
            "v1.2.3",
            vec!["components.yaml: document 2 (line 12)", "invalid YAML"],
        ),
        (
            format!("{GOOD}---\napiVersion: v1\nmetadata: {{name: nameless-kind}}\n"),
            METADATA,
            "v1.2.3",
            vec![
                "components.yaml: document 2",
                "name nameless-kind",
                "no string field kind",
            ],
        ),
        (
            format!(
                "{GOOD}---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {{name: sa, namespace: capf-system}}\n"
            ),
            METADATA,
            "v1.2.3",
            vec![
                "duplicate object ServiceAccount capf-system/sa",
                "document 1",
                "document 2",
            ],
        ),
        (
            GOOD.to_owned(),
            METADATA,
            "latest",
            vec!["\"latest\" is not a semantic version"],
        ),
        (
            GOOD.to_owned(),
            "apiVersion: v1\nkind: ConfigMap\n",
            "v1.2.3",
            vec!["metadata.yaml: invalid clusterctl metadata"],
        ),
        (
            format!(
                "{GOOD}---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata:\n  name: vwc\n  annotations: {{cert-manager.io/inject-ca-from: capf-system/missing}}\nwebhooks:\n- name: a\n  clientConfig: {{service: {{name: s, namespace: capf-system}}}}\n"
            ),
            METADATA,
            "v1.2.3",
            vec![
                "ValidatingWebhookConfiguration vwc",
                "components.yaml: document 2",
                "capf-system/missing",
            ],
        ),
    ];
    for (components, metadata, version, wants) in cases {
        let c = Case::new(&components, metadata);
        let o = c.run(version, &[]);
        assert_fails(&o, &wants);
        assert!(c.outputs().is_empty(), "nothing written: {:?}", c.outputs());
    }
}

#[test]
fn unreadable_metadata_names_the_file() {
    let c = Case::new(GOOD, METADATA);
    std::fs::remove_file(c.base.join("metadata.yaml")).unwrap();
    let o = c.run("v1.2.3", &[]);
    assert_fails(&o, &["cannot read clusterctl metadata ./metadata.yaml"]);
    assert!(c.outputs().is_empty());

    let o = c.run("v1.2.3", &["--metadata", "elsewhere.yaml"]);
    assert_fails(&o, &["elsewhere.yaml"]);
}

/// A script tells "stale: regenerate" (1) from "cannot check" (2).
#[test]
fn check_exits_2_on_an_error_and_1_only_when_stale() {
    let c = Case::new(GOOD, METADATA);
    let o = c.run("v1.2.3", &["--check", "--metadata", "elsewhere.yaml"]);
    assert_fails(&o, &["elsewhere.yaml"]);
    let o = c.run("not-a-version", &["--check"]);
    assert_fails(&o, &["not-a-version"]);
    let o = c.run("v1.2.3", &["--check"]);
    assert_eq!(o.status.code(), Some(1), "stale: {}", stderr(&o));
    // A usage error is an error too (clap's own exit code).
    let o = c.run("v1.2.3", &["--check", "--no-such-flag"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).starts_with("error: "), "{}", stderr(&o));
}

#[test]
fn check_reports_stale_outputs_and_writes_nothing() {
    let c = Case::new(GOOD, METADATA);
    // Nothing committed yet: stale.
    let o = c.run("v1.2.3", &["--check"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(c.outputs().is_empty());

    assert!(c.run("v1.2.3", &[]).status.success());
    let o = c.run("v1.2.3", &["--check"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(o.stdout.is_empty());

    // A new version: the label changes; the diff shows it, files stay as they were.
    let cm_path = c
        .base
        .join("openshift/manifests/0000_30_cluster-api_04_cm.infrastructure-foo.yaml");
    let before = std::fs::read(&cm_path).unwrap();
    let o = c.run("v1.2.4", &["--check"]);
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("-    provider.cluster.x-k8s.io/version: v1.2.3"),
        "{out}"
    );
    assert!(
        out.contains("+    provider.cluster.x-k8s.io/version: v1.2.4"),
        "{out}"
    );
    assert!(
        out.contains("(committed)") && out.contains("(generated)"),
        "{out}"
    );
    assert_eq!(std::fs::read(&cm_path).unwrap(), before);
}

#[test]
fn check_elides_compressed_payload_lines() {
    // Over the plain threshold: the ConfigMap holds one long base64 line.
    let mut big = String::from(GOOD);
    for i in 0..6000 {
        big.push_str(&format!("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cm-{i}, namespace: capf-system}}\ndata: {{k: \"{}\"}}\n", "v".repeat(100)));
    }
    let c = Case::new(&big, METADATA);
    assert!(c.run("v1.2.3", &[]).status.success());
    let cm = std::fs::read_to_string(
        c.base
            .join("openshift/manifests/0000_30_cluster-api_04_cm.infrastructure-foo.yaml"),
    )
    .unwrap();
    assert!(cm.contains("components-zstd: KLUv/"), "compressed");
    std::fs::write(
        c.base.join("components.yaml"),
        big.replace("cm-5999", "cm-changed"),
    )
    .unwrap();
    let o = c.run("v1.2.3", &["--check"]);
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("-  components-zstd: <") && out.contains("bytes elided, fnv1a"),
        "{out}"
    );
    assert!(
        out.contains("+  name: cm-changed"),
        "review copy diff shows the real change: {out}"
    );
    assert!(out.lines().all(|l| l.len() < 500), "no giant lines");
}

#[test]
fn go_style_and_equals_flags_are_accepted() {
    let c = Case::new(GOOD, METADATA);
    let o = bin()
        .current_dir(&c.base)
        .args(["-base-path", ".", "-manifests-path=openshift/manifests"])
        .args([
            "--provider-name=foo",
            "-provider-type",
            "InfrastructureProvider",
        ])
        .args(["-provider-version=v1.2.3", "-components", "components.yaml"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(c.outputs().len(), 2);
}

#[test]
fn components_from_stdin() {
    use std::io::Write;
    let c = Case::new("", METADATA);
    let mut child = bin()
        .current_dir(&c.base)
        .args([
            "--base-path",
            ".",
            "--manifests-path",
            "m",
            "--provider-name",
            "foo",
        ])
        .args([
            "--provider-type",
            "InfrastructureProvider",
            "--provider-version",
            "1.2.3",
        ])
        .args(["--components", "-"])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(GOOD.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        c.base
            .join("m/0000_30_cluster-api_04_cm.infrastructure-foo.yaml")
            .is_file()
    );
}

#[test]
fn without_kustomize_on_path_says_how_to_pass_components() {
    let c = Case::new(GOOD, METADATA);
    let empty = tempfile::tempdir().unwrap();
    let o = bin()
        .current_dir(&c.base)
        .env("PATH", empty.path())
        .args([
            "--base-path",
            ".",
            "--manifests-path",
            "m",
            "--provider-name",
            "foo",
        ])
        .args([
            "--provider-type",
            "InfrastructureProvider",
            "--provider-version",
            "1.2.3",
        ])
        .output()
        .unwrap();
    assert_fails(
        &o,
        &[
            "neither kustomize nor kubectl",
            "--components",
            "config/default",
        ],
    );
}

#[test]
fn runs_kustomize_from_path() {
    // A stand-in `kustomize` that prints the components: proves the binary calls
    // `kustomize build <base>/<kustomize-dir>` and uses its output.
    let c = Case::new(GOOD, METADATA);
    let bindir = tempfile::tempdir().unwrap();
    let script = bindir.path().join("kustomize");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\n[ \"$1\" = build ] && [ \"$2\" = ./overlay ] || {{ echo \"bad args: $*\" >&2; exit 3; }}\ncat {}\n",
            c.base.join("components.yaml").display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let o = bin()
        .current_dir(&c.base)
        .env(
            "PATH",
            std::env::join_paths(std::iter::once(bindir.path().to_path_buf()).chain(
                std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
            ))
            .unwrap(),
        )
        .args([
            "--base-path",
            ".",
            "--manifests-path",
            "m",
            "--kustomize-dir",
            "overlay",
            // kustomize is then called on the folder itself (in the default order, on a temporary
            // kustomization that includes it: see the_kustomization_order_is_kept_...).
            "--kind-order",
        ])
        .args([
            "--provider-name",
            "foo",
            "--provider-type",
            "InfrastructureProvider",
        ])
        .args(["--provider-version", "1.2.3"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        Path::new(
            &c.base
                .join("m/0000_30_cluster-api_04_cm.infrastructure-foo.yaml")
        )
        .is_file()
    );
}

/// The release-4.19/4.20 provider branches ship a metadata.yaml without `kind`; clusterctl and
/// the reference accept it, and it still travels verbatim.
#[test]
fn metadata_without_kind_is_accepted_and_kept_verbatim() {
    let no_kind = "# release-4.19 style\napiVersion: clusterctl.cluster.x-k8s.io/v1alpha3\nreleaseSeries:\n  - major: 2\n    minor: 8\n    contract: v1beta1\n";
    let c = Case::new(GOOD, no_kind);
    let o = c.run("v2.8.0", &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(
        c.base
            .join("openshift/manifests/0000_30_cluster-api_04_cm.infrastructure-foo.yaml"),
    )
    .unwrap();
    let docs = capi_manifests::yaml::parse_documents("cm", &text).unwrap();
    assert_eq!(docs[0].value["data"]["metadata"], no_kind);
}

/// The objects come in the order the kustomization lists its resources (the reference generator's
/// order; `--input-order`, which older command lines pass, changes nothing), protection policy and
/// binding last; `--kind-order` gives kustomize's default order by kind.
#[test]
fn the_kustomization_order_is_kept_unless_kind_order_is_asked_for() {
    let Some(kubectl) = real_kubectl() else {
        return;
    };
    let c = Case::new("", METADATA);
    let overlay = c.base.join("config/default");
    std::fs::create_dir_all(&overlay).unwrap();
    std::fs::write(
        overlay.join("components.yaml"),
        format!(
            "apiVersion: v1\nkind: Service\nmetadata: {{name: svc, namespace: capf-system}}\n---\n{GOOD}"
        ),
    )
    .unwrap();
    std::fs::write(
        overlay.join("kustomization.yaml"),
        "resources: [components.yaml]\n",
    )
    .unwrap();
    // Only kubectl on PATH: the binary takes `kubectl kustomize` when kustomize is missing.
    let bindir = path_with_only(&kubectl);
    let order = |extra: &[&str]| {
        let o = bin()
            .current_dir(&c.base)
            .env("PATH", bindir.path())
            .args(["--base-path", ".", "--manifests-path", "m"])
            .args(["--provider-name", "foo"])
            .args(["--provider-type", "InfrastructureProvider"])
            .args(["--provider-version", "1.2.3"])
            .args(extra)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let review = std::fs::read_to_string(
            c.base
                .join("openshift/infrastructure-components-openshift.yaml"),
        )
        .unwrap();
        capi_manifests::yaml::parse_documents("review", &review)
            .unwrap()
            .iter()
            .map(|d| d.value["kind"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    let protection = [
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    ];
    let sorted = order(&["--kind-order"]);
    assert_eq!(
        sorted[..3],
        ["CustomResourceDefinition", "ServiceAccount", "Service"],
        "kustomize's kind order"
    );
    assert_eq!(sorted[3..], protection);
    for extra in [&[][..], &["--input-order"]] {
        let kept = order(extra);
        assert_eq!(
            kept[..3],
            ["Service", "CustomResourceDefinition", "ServiceAccount"],
            "the kustomization's order with {extra:?}"
        );
        assert_eq!(kept[3..], protection);
    }
}

/// Every flag says what it does (the text follows on the next, more indented line of `--help`).
#[test]
fn every_flag_has_help_text() {
    let out = bin().arg("--help").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let help = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = help.lines().collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let mut flags = 0;
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        if !trimmed.starts_with('-') {
            continue;
        }
        flags += 1;
        let same_line = trimmed
            .split_once("  ")
            .is_some_and(|(_, text)| !text.trim().is_empty());
        let next = lines.get(i + 1).copied().unwrap_or_default();
        let below = !next.trim().is_empty() && indent(next) > indent(line);
        assert!(same_line || below, "no help text for {trimmed:?}:\n{help}");
    }
    assert!(flags >= 10, "{help}");
}

/// The profile mode on a small fork: `openshift/kustomization.yaml` lists the exclude function
/// (the Component's file) and its configuration; a stand-in `kustomize` checks how it is called
/// (the stand-in folder beside `openshift/`, links to the fork's files, the kustomization without
/// the function, in listed order) and prints the components.
struct Fork {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
    bindir: tempfile::TempDir,
}

const FORK_COMPONENTS: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: fooclusters.infrastructure.cluster.x-k8s.io}
spec:
  group: infrastructure.cluster.x-k8s.io
  names: {kind: FooCluster, plural: fooclusters, singular: foocluster}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: foomachinepools.infrastructure.cluster.x-k8s.io}
spec:
  group: infrastructure.cluster.x-k8s.io
  names: {kind: FooMachinePool, plural: foomachinepools, singular: foomachinepool}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: foo-manager, namespace: openshift-cluster-api}
spec:
  template:
    spec:
      containers:
      - {name: manager, image: "registry.ci.openshift.org/openshift:foo"}
"#;

impl Fork {
    fn new() -> Fork {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("fork");
        let openshift = root.join("openshift");
        std::fs::create_dir_all(openshift.join("tools/transformers")).unwrap();
        std::fs::write(
            openshift.join("kustomization.yaml"),
            "resources:\n- ../config/default\n- exclude-resources-config.yaml\ntransformers:\n- tools/transformers/exclude-resources.yaml\n",
        )
        .unwrap();
        std::fs::write(
            openshift.join("tools/transformers/exclude-resources.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: exclude-resources\n  annotations:\n    config.kubernetes.io/function: |\n      container: {image: starlark}\n",
        )
        .unwrap();
        std::fs::write(
            openshift.join("exclude-resources-config.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: exclude-resources-config\ndata:\n  excludeCRDs: |\n    foomachinepools.infrastructure.cluster.x-k8s.io\n",
        )
        .unwrap();
        std::fs::write(root.join("components.yaml"), FORK_COMPONENTS).unwrap();
        let bindir = tempfile::tempdir().unwrap();
        let script = bindir.path().join("kustomize");
        std::fs::write(
            &script,
            format!(
                r#"#!/bin/sh
fail() {{ echo "stand-in kustomize: $*" >&2; exit 3; }}
[ "$1 $2 $3" = "build --load-restrictor LoadRestrictionsNone" ] || fail "bad args: $*"
case "$(basename "$4")" in .manifests-gen-openshift-*) ;; *) fail "not the stand-in folder: $4";; esac
[ "$(dirname "$4")" = "{root}" ] || fail "not beside openshift/: $4"
[ -L "$4/exclude-resources-config.yaml" ] && [ -L "$4/tools" ] || fail "no links to the fork's files"
grep -q transformers "$4/kustomization.yaml" && fail "the function is still listed"
grep -q "order: fifo" "$4/kustomization.yaml" || fail "not in listed order"
cat {root}/components.yaml
"#,
                root = std::fs::canonicalize(&root).unwrap().display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        Fork {
            _dir: dir,
            root,
            bindir,
        }
    }

    /// Runs from `openshift/tools`, as the aws and gcp Makefiles do.
    fn run(&self, args: &[&str]) -> Output {
        let tools = self.root.join("openshift/tools");
        // The stand-in kustomize first; the system's tools (for the script) after it.
        let path =
            std::env::join_paths([self.bindir.path(), Path::new("/usr/bin"), Path::new("/bin")])
                .unwrap();
        bin()
            .current_dir(&tools)
            .env("PATH", path)
            .args(args)
            .output()
            .unwrap()
    }

    fn written(&self) -> Vec<String> {
        list_files(&self.root.join("openshift/capi-operator-manifests"))
            .iter()
            .map(|p| p.strip_prefix(&self.root).unwrap().display().to_string())
            .collect()
    }
}

#[test]
fn profile_flags_in_both_spellings_with_gos_values() {
    let fork = Fork::new();
    let o = fork.run(&[
        "-manifests-path=../capi-operator-manifests",
        "--kustomize-dir",
        "../../openshift",
        "-name",
        "cluster-api-provider-foo",
        "--profile-name=tech-preview",
        "-install-order=0x14",
        "--attribute",
        "type=infrastructure",
        "-attribute=version=v1.2.3",
        "-self-image-ref",
        "registry.ci.openshift.org/openshift:foo",
        "--platform=AWS",
        "-manifests-summary=false",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        fork.written(),
        [
            "openshift/capi-operator-manifests/tech-preview/manifests.yaml",
            "openshift/capi-operator-manifests/tech-preview/metadata.yaml",
        ],
        "no summary with -manifests-summary=false"
    );
    let dir = fork
        .root
        .join("openshift/capi-operator-manifests/tech-preview");
    assert_eq!(
        std::fs::read_to_string(dir.join("metadata.yaml")).unwrap(),
        "attributes:\n  type: infrastructure\n  version: v1.2.3\ninstallOrder: 20\nname: cluster-api-provider-foo\nocpPlatform: AWS\nselfImageRef: registry.ci.openshift.org/openshift:foo\n"
    );
    let manifests = std::fs::read_to_string(dir.join("manifests.yaml")).unwrap();
    let names: Vec<String> = capi_manifests::yaml::parse_documents("m", &manifests)
        .unwrap()
        .iter()
        .map(|d| d.value["metadata"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        names,
        [
            "fooclusters.infrastructure.cluster.x-k8s.io",
            "foo-manager",
            "openshift-cluster-api-protect-foocluster",
            "openshift-cluster-api-protect-foocluster",
        ],
        "the excluded CRD gone, the InfraCluster protected by default"
    );
    let err = stderr(&o);
    assert!(
        err.contains(
            "running kustomize build --load-restrictor LoadRestrictionsNone ../../openshift"
        ),
        "{err}"
    );
    assert!(
        err.contains("removed CustomResourceDefinition foomachinepools.infrastructure.cluster.x-k8s.io (exclude-resources)"),
        "{err}"
    );
    // The stand-in folder is gone.
    let left: Vec<_> = std::fs::read_dir(&fork.root)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left.len(), 2, "{left:?}");

    // A bare boolean flag means true.
    let o = fork.run(&[
        "--manifests-path=../capi-operator-manifests",
        "--kustomize-dir=../../openshift",
        "--name=cluster-api-provider-foo",
        "--manifests-summary",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        fork.written().contains(
            &"openshift/capi-operator-manifests/default/manifests-summary.yaml".to_owned()
        )
    );
}

#[test]
fn profile_usage_errors_exit_2_with_one_message_and_write_nothing() {
    let fork = Fork::new();
    let base = [
        "--manifests-path",
        "../capi-operator-manifests",
        "--kustomize-dir",
        "../../openshift",
    ];
    let profile = [&base[..], &["--name", "cluster-api-provider-foo"]].concat();
    for (args, wants) in [
        (
            [&profile[..], &["--base-path", "."]].concat(),
            vec!["'--name <NAME>' cannot be used with '--base-path <BASE_PATH>'"],
        ),
        (
            [&base[..], &["--platform", "AWS"]].concat(),
            vec!["required", "--name"],
        ),
        (
            vec!["--manifests-path", "m", "--name", "x"],
            vec!["required", "--kustomize-dir"],
        ),
        (
            [&profile[..], &["--platform", "aws"]].concat(),
            vec!["--platform \"aws\" is not an OpenShift platform type; use one of AWS, Azure"],
        ),
        (
            [&profile[..], &["--attribute", "type"]].concat(),
            vec!["\"type\" is not KEY=VALUE"],
        ),
        (
            [&profile[..], &["--attribute", "=core"]].concat(),
            vec!["\"=core\": the key is empty"],
        ),
        (
            [
                &profile[..],
                &[
                    "--attribute",
                    "type=core",
                    "--attribute",
                    "type=infrastructure",
                ],
            ]
            .concat(),
            vec!["--attribute type is given twice (type=core and type=infrastructure)"],
        ),
        (
            [&profile[..], &["--attribute", "type=bootstrap"]].concat(),
            vec!["attributes.type is \"bootstrap\""],
        ),
        (
            [&profile[..], &["--install-order", "ten"]].concat(),
            vec!["\"ten\" is not an integer"],
        ),
        (
            [&profile[..], &["--manifests-summary=maybe"]].concat(),
            vec!["\"maybe\" is not a boolean"],
        ),
        (
            [&profile[..], &["--profile-name", "a.b"]].concat(),
            vec!["profile name \"a.b\" must be 1 to 100 letters"],
        ),
        (
            [&profile[..], &["--protect-cluster-resource", "barcluster"]].concat(),
            vec!["no CRD among the components has the singular name \"barcluster\""],
        ),
        (
            vec![
                "--manifests-path",
                "m",
                "--kustomize-dir",
                "nowhere",
                "--name",
                "x",
            ],
            vec![
                "nowhere has no kustomization (kustomization.yaml, kustomization.yml, Kustomization)",
            ],
        ),
    ] {
        let o = fork.run(&args);
        assert_fails(&o, &wants);
        assert!(fork.written().is_empty(), "{args:?}: {:?}", fork.written());
    }
}

/// Paths that must exist are checked (issue 21): a mistyped `--base-path` fails and creates nothing.
#[test]
fn a_base_path_that_does_not_exist_fails_and_is_not_created() {
    let c = Case::new(GOOD, METADATA);
    let missing = c.base.join("no/such/dir");
    let o = bin()
        .current_dir(&c.base)
        .arg("--base-path")
        .arg(&missing)
        .args(["--manifests-path", "openshift/manifests"])
        .args([
            "--provider-name",
            "foo",
            "--provider-type",
            "InfrastructureProvider",
        ])
        .args([
            "--provider-version",
            "v1.2.3",
            "--components",
            "components.yaml",
        ])
        .args(["--metadata", "metadata.yaml"])
        .output()
        .unwrap();
    assert_fails(
        &o,
        &[&format!(
            "--base-path {}: no such folder",
            missing.display()
        )],
    );
    assert!(!missing.exists(), "not created");
    assert!(c.outputs().is_empty());
}

/// Components without a single object are named as such (issue 21), not as a later rule's complaint.
#[test]
fn components_without_objects_are_named_as_such() {
    for components in ["", "# only a comment\n", "---\n# a comment\n---\n"] {
        let c = Case::new(components, METADATA);
        let o = c.run("v1.2.3", &[]);
        assert_fails(&o, &["components.yaml: no objects"]);
        assert!(c.outputs().is_empty());
    }
}

/// A reader that stops early (`--check | head -1`) is not an error: stale stays exit 1, no panic, no
/// `Broken pipe` error (issue 21).
#[test]
fn check_into_a_closed_pipe_keeps_its_exit_code() {
    let c = Case::new(GOOD, METADATA);
    let script = format!(
        "set -o pipefail; {} --base-path . --manifests-path openshift/manifests --provider-name foo \
         --provider-type InfrastructureProvider --provider-version v1.2.3 --components components.yaml \
         --check | head -1",
        env!("CARGO_BIN_EXE_manifests-gen")
    );
    let o = std::process::Command::new("bash")
        .args(["-c", &script])
        .current_dir(&c.base)
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "stale: {err}");
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 1);
    assert!(!err.contains("panicked") && !err.contains("error"), "{err}");
}

/// Issue 34: a closed pipe on standard output, standard error or both (`… 2>&1 | head -1` once
/// `head` is gone) ends the command quietly with the exit code its work decided: 0 written or up to
/// date, 1 stale, 2 an error; never a panic (101). The pipe's reader is closed before the command
/// starts, so every write it makes meets the closed pipe.
#[test]
fn closed_pipes_keep_the_exit_code() {
    let c = Case::new(GOOD, METADATA);
    let run = |version: &str, extra: &[&str], out: bool, err: bool| {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let mut cmd = bin();
        cmd.current_dir(&c.base)
            .args([
                "--base-path",
                ".",
                "--manifests-path",
                "openshift/manifests",
            ])
            .args([
                "--provider-name",
                "foo",
                "--provider-type",
                "InfrastructureProvider",
            ])
            .args([
                "--provider-version",
                version,
                "--components",
                "components.yaml",
            ])
            .args(extra);
        if out {
            cmd.stdout(writer.try_clone().unwrap());
        } else {
            cmd.stdout(std::process::Stdio::null());
        }
        if err {
            cmd.stderr(writer);
        } else {
            cmd.stderr(std::process::Stdio::null());
        }
        cmd.status().unwrap().code()
    };
    for (out, err) in [(true, true), (false, true), (true, false)] {
        let streams = format!("stdout closed: {out}, stderr closed: {err}");
        // Stale: nothing written yet, and the diff goes to standard output.
        assert_eq!(run("v1.2.3", &["--check"], out, err), Some(1), "{streams}");
        assert_eq!(run("v1.2.3", &[], out, err), Some(0), "{streams}");
        assert_eq!(
            c.outputs().len(),
            2,
            "written although no one reads: {streams}"
        );
        assert_eq!(run("v1.2.3", &["--check"], out, err), Some(0), "{streams}");
        assert_eq!(run("v1.2.4", &["--check"], out, err), Some(1), "{streams}");
        assert_eq!(run("not-a-version", &[], out, err), Some(2), "{streams}");
        for o in c.outputs() {
            std::fs::remove_file(o).unwrap();
        }
    }
}

/// The maintainers' docs start with getting the binary (issue 21), and what they say works: the
/// `cargo install` path is this crate, and `make bin` builds the binaries alone (no control plane, no
/// Go).
#[test]
fn the_documented_ways_to_get_it_build_only_the_binaries() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let docs = std::fs::read_to_string(root.join("docs/maintainers/manifests-gen.md")).unwrap();
    let first_section = docs.lines().find(|l| l.starts_with("## "));
    assert_eq!(first_section, Some("## Getting it"));
    assert!(
        docs.contains("cargo install --locked --path crates/manifests-gen"),
        "{docs}"
    );
    assert!(root.join("crates/manifests-gen/Cargo.toml").is_file());
    assert!(docs.contains("make bin BINARIES=manifests-gen"), "{docs}");
    for (binaries, packages) in [
        (Some("manifests-gen"), vec!["manifests-gen"]),
        (
            None,
            vec!["manifests-gen", "capi-installer", "capi-controllers"],
        ),
    ] {
        let mut make = std::process::Command::new("make");
        make.arg("-n").arg("-C").arg(&root).arg("bin");
        if let Some(b) = binaries {
            make.arg(format!("BINARIES={b}"));
        }
        let out = make.output().expect("make runs");
        let commands = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{}", stderr(&out));
        let expected = packages
            .iter()
            .map(|p| format!("-p {p}"))
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            commands.contains(&format!("build --release --locked {expected}")),
            "{commands}"
        );
        assert!(
            !commands.contains("control-plane") && !commands.split_whitespace().any(|w| w == "go"),
            "{commands}"
        );
    }
}
