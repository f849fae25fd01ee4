//! Acceptance of the newer generation: in each fork tree of `../shared/fixtures/manifests-gen-profiles`
//! (aws, core, gcp), the fork's own command line (its `invocation.txt`, the generator call of its
//! `openshift/Makefile`, run from where the Makefile runs it) writes the profile the fork committed
//! (semantically, and byte for byte); a second run writes the same bytes; `--check` passes on that output and fails with a
//! diff on a stale one; a malformed line of a transformer's configuration is refused with its file and
//! line; and the installer's profile reader takes what was written.
//!
//! The fixture trees are read-only: every test works on a copy in a temporary folder.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use capi_installer_controller::prepare::{RenderContext, render};
use capi_installer_controller::source::profile::ProfileCatalog;
use capi_installer_controller::source::{SourceCatalog, Target};
use capi_manifests::yaml::parse_documents;
use common::*;
use serde_json::Value;
use test_support::compare::diff_objects;

const FORKS: [&str; 3] = ["aws", "core", "gcp"];

/// A fork tree copied to a temporary folder, and its generator command line.
struct Fork {
    fixture: PathBuf,
    _tmp: tempfile::TempDir,
    /// The copy of the fork's tree.
    tree: PathBuf,
    /// Where the Makefile's recipe runs the generator (`openshift/`, or `openshift/tools` after its
    /// `cd tools`).
    cwd: PathBuf,
    args: Vec<String>,
    kubectl: PathBuf,
}

impl Fork {
    fn new(name: &'static str) -> Option<Fork> {
        let fixture = profile_fixture(name)?;
        let kubectl = real_kubectl()?;
        let tmp = tempfile::tempdir().unwrap();
        let tree = tmp.path().join("fork");
        copy_tree(&fixture.join("tree"), &tree);
        let (cd, args) = invocation(&fixture);
        let cwd = tree.join("openshift").join(cd);
        Some(Fork {
            fixture,
            _tmp: tmp,
            tree,
            cwd,
            args,
            kubectl,
        })
    }

    fn run(&self, extra: &[&str]) -> Output {
        let path = path_with_only(&self.kubectl);
        bin()
            .current_dir(&self.cwd)
            .env("PATH", path.path())
            .args(&self.args)
            .args(extra)
            .output()
            .unwrap()
    }

    /// The profile folder the command line writes: `<manifests-path>/default`.
    fn profile_dir(&self) -> PathBuf {
        let manifests_path = flag_value(&self.args, "manifests-path").expect("--manifests-path");
        self.cwd.join(manifests_path).join("default")
    }

    fn expected(&self) -> PathBuf {
        self.fixture.join("expected/default")
    }
}

/// The generator call of a fork's Makefile recipe: the folder its `cd` goes to (relative to
/// `openshift/`) and the arguments after `$(MANIFESTS_GEN)`, with make's `${PROVIDER_VERSION}`
/// expanded from `openshift/provider-version.mk` and the words split as the shell splits them.
fn invocation(fixture: &Path) -> (PathBuf, Vec<String>) {
    let text = std::fs::read_to_string(fixture.join("invocation.txt")).unwrap();
    let mk = std::fs::read_to_string(fixture.join("tree/openshift/provider-version.mk")).unwrap();
    let version = mk
        .lines()
        .find_map(|l| l.strip_prefix("PROVIDER_VERSION ?= "))
        .expect("provider-version.mk sets PROVIDER_VERSION")
        .trim();
    let recipe = text
        .replace("\\\n", " ")
        .replace("${PROVIDER_VERSION}", version);
    let mut cd = PathBuf::new();
    let mut args = None;
    for command in recipe.split("&&") {
        let words = shlex::split(command.trim()).expect("shell words");
        match words.first().map(String::as_str) {
            Some("cd") => cd.push(&words[1]),
            Some("$(MANIFESTS_GEN)") => args = Some(words[1..].to_vec()),
            other => panic!("unexpected command {other:?} in {}", fixture.display()),
        }
    }
    let args = args.expect("the recipe runs $(MANIFESTS_GEN)");
    assert!(
        args.iter().all(|a| !a.contains('$')),
        "unexpanded make variable in {args:?}"
    );
    (cd, args)
}

/// The value of `--flag` (or Go's `-flag`) in `args`, given as `--flag=value` or `--flag value`.
fn flag_value(args: &[String], flag: &str) -> Option<String> {
    let mut words = args.iter();
    while let Some(w) = words.next() {
        let Some(name) = w.strip_prefix("--").or_else(|| w.strip_prefix('-')) else {
            continue;
        };
        if let Some(value) = name.strip_prefix(flag).and_then(|r| r.strip_prefix('=')) {
            return Some(value.to_owned());
        }
        if name == flag {
            return words.next().cloned();
        }
    }
    None
}

/// Copies `from` to `to`, folders writable whatever the source's modes (the shared fixtures are
/// read-only, and the generator writes its profile and a temporary folder into the tree).
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::write(&target, std::fs::read(entry.path()).unwrap()).unwrap();
        }
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn values(source: &Path) -> Vec<Value> {
    parse_documents(&source.display().to_string(), &read(source))
        .unwrap()
        .into_iter()
        .map(|d| d.value)
        .collect()
}

/// The whole acceptance for each fork, one generator run after another (each runs kustomize, which
/// takes seconds): the committed profile, the same bytes again, `--check` content, and the
/// installer's reader and render on the three profiles together.
#[test]
fn each_forks_command_line_writes_its_committed_profile_reproducibly_for_the_installer() {
    let images = tempfile::tempdir().unwrap();
    for name in FORKS {
        let Some(fork) = Fork::new(name) else { return };
        let out = fork.run(&[]);
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        assert_committed_profile(name, &fork);
        assert_reproducible(name, &fork);
        // Laid out as the installer finds provider images: <dir>/<image>/capi-operator-manifests/.
        copy_tree(
            fork.profile_dir().parent().unwrap(),
            &images
                .path()
                .join(format!("{name}-image/capi-operator-manifests")),
        );
    }
    assert_the_installer_reads(images.path());
}

/// The written profile is the committed one: the same files, the same objects.
fn assert_committed_profile(name: &str, fork: &Fork) {
    let written = fork.profile_dir();
    let expected = fork.expected();
    let file_names = |dir: &Path| {
        let mut names: Vec<String> = list_files(dir)
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    assert_eq!(
        file_names(&written),
        file_names(&expected),
        "{name}: the same files"
    );
    let diff = diff_objects(
        &values(&expected.join("manifests.yaml")),
        &values(&written.join("manifests.yaml")),
    );
    assert!(diff.is_empty(), "{name}: manifests.yaml differs:\n{diff}");
    // Metadata and summary are small documents: equal as values, not only as object sets.
    for file in ["metadata.yaml", "manifests-summary.yaml"] {
        if expected.join(file).is_file() {
            assert_eq!(
                values(&written.join(file)),
                values(&expected.join(file)),
                "{name}: {file}"
            );
        }
    }
    // Issue 34: byte for byte, as a drop-in must write them (the committed files are what the
    // fork's CI compares with).
    for file in file_names(&expected) {
        let (want, got) = (read(&expected.join(&file)), read(&written.join(&file)));
        if want != got {
            let line = want
                .lines()
                .zip(got.lines())
                .position(|(a, b)| a != b)
                .map_or(want.lines().count().min(got.lines().count()), |i| i)
                + 1;
            panic!(
                "{name}: {file} differs from the committed one from line {line}:\n--- committed\n{}\n--- written\n{}",
                want.lines().nth(line - 1).unwrap_or("<end>"),
                got.lines().nth(line - 1).unwrap_or("<end>")
            );
        }
    }
    // The stand-in kustomization folder is gone; nothing else was written into the tree.
    let stray: Vec<PathBuf> = list_files(&fork.tree)
        .into_iter()
        .filter(|p| p.to_string_lossy().contains(".manifests-gen-"))
        .collect();
    assert!(stray.is_empty(), "{name}: left behind {stray:?}");
}

/// A second run writes the same bytes, and `--check` finds them up to date.
fn assert_reproducible(name: &str, fork: &Fork) {
    let first: Vec<(PathBuf, Vec<u8>)> = list_files(&fork.profile_dir())
        .into_iter()
        .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
        .collect();
    let out = fork.run(&[]);
    assert!(out.status.success(), "{name}: {}", stderr(&out));
    for (path, bytes) in &first {
        assert!(
            std::fs::read(path).unwrap() == *bytes,
            "{name}: {} differs between runs",
            path.display()
        );
    }
    assert_eq!(list_files(&fork.profile_dir()).len(), first.len());
    // `--check` in the fork's tree as committed: the fork's own files are up to date.
    for file in list_files(&fork.expected()) {
        std::fs::copy(&file, fork.profile_dir().join(file.file_name().unwrap())).unwrap();
    }
    let check = fork.run(&["--check"]);
    assert_eq!(check.status.code(), Some(0), "{name}: {}", stderr(&check));
    assert!(check.stdout.is_empty(), "{name}: no diff when up to date");
    assert!(stderr(&check).contains("up to date"), "{}", stderr(&check));
}

/// Guards against a comparison that passes vacuously: the transformers and the customizations are
/// what makes the output equal the committed profile.
#[test]
fn the_comparison_sees_what_the_transformers_and_customizations_do() {
    let Some(fork) = Fork::new("core") else {
        return;
    };
    assert!(fork.run(&[]).status.success());
    let expected = values(&fork.expected().join("manifests.yaml"));
    let mut written = values(&fork.profile_dir().join("manifests.yaml"));
    // Undo one rename and one customization of the written output: both show.
    for o in &mut written {
        if o["metadata"]["name"] == "openshift-capi-manager-role" {
            o["metadata"]["name"] = Value::from("capi-manager-role");
        }
        if o["kind"] == "Deployment" {
            o["spec"]["template"]["spec"]
                .as_object_mut()
                .unwrap()
                .remove("priorityClassName");
        }
    }
    let diff = diff_objects(&expected, &written);
    let ids =
        |ids: &[capi_manifests::ObjectKey]| ids.iter().map(|i| i.to_string()).collect::<Vec<_>>();
    assert_eq!(
        ids(&diff.missing),
        ["ClusterRole openshift-capi-manager-role"]
    );
    assert_eq!(ids(&diff.extra), ["ClusterRole capi-manager-role"]);
    assert_eq!(diff.changed.len(), 1, "{diff}");
    assert_eq!(
        diff.changed[0].1[0].path,
        "spec.template.spec.priorityClassName"
    );
}

#[test]
fn check_fails_with_a_diff_on_a_stale_profile_and_writes_nothing() {
    let Some(fork) = Fork::new("aws") else { return };
    assert!(fork.run(&[]).status.success());
    let dir = fork.profile_dir();
    // Stale: the version bumped in the Makefile without regenerating.
    let metadata = dir.join("metadata.yaml");
    let committed = read(&metadata).replace("version: v2.13.0", "version: v2.12.0");
    std::fs::write(&metadata, &committed).unwrap();
    // And the summary deleted.
    std::fs::remove_file(dir.join("manifests-summary.yaml")).unwrap();
    let check = fork.run(&["--check"]);
    assert_eq!(check.status.code(), Some(1), "{}", stderr(&check));
    let diff = String::from_utf8_lossy(&check.stdout);
    assert!(
        diff.contains("-  version: v2.12.0\n+  version: v2.13.0"),
        "{diff}"
    );
    assert!(
        diff.contains("manifests-summary.yaml (generated)"),
        "{diff}"
    );
    assert!(
        stderr(&check).contains("stale: run manifests-gen without --check"),
        "{}",
        stderr(&check)
    );
    assert_eq!(read(&metadata), committed, "--check writes nothing");
    assert!(!dir.join("manifests-summary.yaml").exists());
}

#[test]
fn a_malformed_transformer_configuration_line_is_refused_with_file_and_line() {
    for (file, line, want) in [
        (
            "exclude-resources-config.yaml",
            "    awsmachinepools",
            "invalid CRD name \"awsmachinepools\" in excludeCRDs (expected plural.group",
        ),
        (
            "rename-resources-config.yaml",
            "    rbac.authorization.k8s.io/ClusterRole=openshift-x",
            "invalid rename \"rbac.authorization.k8s.io/ClusterRole=openshift-x\" in renameResources (the key has not three parts",
        ),
    ] {
        let Some(fork) = Fork::new("aws") else { return };
        let path = fork.tree.join("openshift").join(file);
        let mut text = read(&path);
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(line);
        text.push('\n');
        std::fs::write(&path, &text).unwrap();
        let bad_line = text.lines().count();
        let out = fork.run(&[]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let err = stderr(&out);
        let error_line = err
            .lines()
            .find(|l| l.starts_with("error: "))
            .unwrap_or_else(|| panic!("no error line: {err}"));
        assert!(
            error_line.contains(&format!("openshift/{file}:{bad_line}: {want}")),
            "{file}: {error_line}"
        );
        assert!(!fork.profile_dir().exists(), "nothing written");
    }
}

/// The installer's profile reader finds the three providers, in install order, and its render takes
/// their manifests (substitutions, the release image for selfImageRef).
fn assert_the_installer_reads(images: &Path) {
    let catalog = ProfileCatalog::read(images, None).unwrap();
    assert!(catalog.problems.is_empty(), "{:?}", catalog.problems);
    assert!(catalog.skipped.is_empty(), "{:?}", catalog.skipped);
    let candidates = catalog.candidates();
    let got: Vec<(String, &str, Option<String>)> = candidates
        .iter()
        .map(|c| (c.name.clone(), c.provider_type.label(), c.version.clone()))
        .collect();
    assert_eq!(
        got,
        [
            ("cluster-api".to_owned(), "core", Some("v1.13.4".to_owned())),
            (
                "aws".to_owned(),
                "infrastructure",
                Some("v2.13.0".to_owned())
            ),
            (
                "gcp".to_owned(),
                "infrastructure",
                Some("v1.12.0".to_owned())
            ),
        ],
        "install order: core, then the infrastructure providers"
    );
    for candidate in &candidates {
        let payload = catalog.load(&candidate.id).unwrap().unwrap();
        let self_image = payload.self_image_ref.clone().expect("selfImageRef");
        let key = self_image.rsplit(':').next().unwrap().to_owned();
        let release_image = format!("quay.io/openshift/release@sha256:{key}");
        let ctx = RenderContext {
            namespace: "openshift-cluster-api".to_owned(),
            images: [(key, release_image.clone())].into(),
            ..Default::default()
        };
        let target = Target {
            source: candidate.clone(),
            clusterctl_label: match candidate.provider_type.label() {
                "core" => "cluster-api".to_owned(),
                _ => format!("infrastructure-{}", candidate.name),
            },
        };
        let rendered =
            render(&payload, &target, &ctx).unwrap_or_else(|e| panic!("{}: {e}", candidate.name));
        let deployment = rendered
            .inputs
            .iter()
            .map(|i| serde_json::to_value(&i.object).unwrap())
            .find(|o| o["kind"] == "Deployment")
            .expect("a Deployment");
        assert_eq!(
            deployment["spec"]["template"]["spec"]["containers"][0]["image"],
            Value::from(release_image),
            "{}",
            candidate.name
        );
    }
}

/// Issue 34: a fork that vendors a generator older than the move of the workload-partitioning pod
/// annotation into the generator's Component (cluster-capi-operator PR #524, 2026-04-29) has a
/// Component without it, and its committed Deployment carries it because that generator added it
/// itself. The gcp fork set back to such a version (its `go.mod` requiring a generator of
/// 2026-04-28, the Component's patch without the annotation, as that version's was) still gets its
/// committed profile byte for byte; the same Component with a current generator version gets a
/// Deployment without the annotation, as the current reference would write it.
#[test]
fn a_fork_vendoring_an_older_generator_gets_what_that_generator_wrote() {
    let Some(fork) = Fork::new("gcp") else { return };
    let tools = fork.tree.join("openshift/tools");
    let component = tools
        .join("vendor/github.com/openshift/cluster-capi-operator/manifests-gen/kustomization.yaml");
    let annotation = "            target.workload.openshift.io/management: '{\"effect\": \"PreferredDuringScheduling\"}'\n";
    let text = read(&component);
    assert!(text.contains(annotation), "{text}");
    std::fs::write(&component, text.replace(annotation, "")).unwrap();
    let go_mod = read(&tools.join("go.mod"));
    let current = "v0.0.0-20260518130250-c585235ee71f";
    assert!(go_mod.contains(current), "{go_mod}");
    let older = go_mod.replace(current, "v0.0.0-20260428101500-0123456789ab");
    std::fs::write(tools.join("go.mod"), &older).unwrap();

    let out = fork.run(&[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("v0.0.0-20260428101500-0123456789ab"),
        "{}",
        stderr(&out)
    );
    for file in ["manifests.yaml", "metadata.yaml"] {
        assert!(
            read(&fork.profile_dir().join(file)) == read(&fork.expected().join(file)),
            "{file} is not the committed one"
        );
    }

    std::fs::write(tools.join("go.mod"), &go_mod).unwrap();
    let out = fork.run(&[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let manifests = read(&fork.profile_dir().join("manifests.yaml"));
    assert!(!manifests.contains("target.workload.openshift.io/management"));
    assert_eq!(fork.run(&["--check"]).status.code(), Some(0));
}
