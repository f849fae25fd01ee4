//! Helpers shared by the integration tests: fixture lookup (with the CI rule) and running the
//! binary.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn fixtures_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures")
}

/// The fixture folder `manifests-gen/<name>`, or `None` (after saying why) when it is missing
/// outside CI. With `CI=true` a missing fixture fails the test.
pub fn fixture(name: &str) -> Option<PathBuf> {
    let dir = fixtures_root().join("manifests-gen").join(name);
    if dir.join("kustomize-output.yaml").is_file() {
        return Some(dir);
    }
    skip_unless_ci(&format!("fixture {} is missing", dir.display()))
}

/// The fixture folder `manifests-gen-profiles/<name>` (a fork's tree, its command line and its
/// committed profile), as [`fixture`] finds one.
pub fn profile_fixture(name: &str) -> Option<PathBuf> {
    let dir = fixtures_root().join("manifests-gen-profiles").join(name);
    if dir.join("invocation.txt").is_file() {
        return Some(dir);
    }
    skip_unless_ci(&format!("fixture {} is missing", dir.display()))
}

fn skip_unless_ci<T>(msg: &str) -> Option<T> {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{msg} (CI=true: it is required)");
    }
    eprintln!("skipping: {msg}");
    None
}

/// `kubectl` (which embeds kustomize) from the control-plane binaries that `make test` points
/// at, else from PATH. `None` (after saying why) when there is none, outside CI.
pub fn real_kubectl() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("CAPI_CONTROL_PLANE_BIN_DIR") {
        let k = PathBuf::from(dir).join("kubectl");
        assert!(k.is_file(), "{} is missing", k.display());
        return Some(k);
    }
    let found = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("kubectl"))
        .find(|k| k.is_file());
    if found.is_none() {
        return skip_unless_ci("no kubectl (set CAPI_CONTROL_PLANE_BIN_DIR)");
    }
    found
}

/// A folder holding only `kubectl` (a link to `kubectl`), for a child's PATH: the generator then
/// runs exactly that kustomize, whatever else is installed.
pub fn path_with_only(kubectl: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(kubectl, dir.path().join("kubectl")).unwrap();
    dir
}

/// `providerName`, `providerType`, `providerVersion` of a fixture's `fixture.yaml`.
pub fn fixture_identity(dir: &Path) -> (String, String, String) {
    let text = std::fs::read_to_string(dir.join("fixture.yaml")).unwrap();
    let docs = capi_manifests::yaml::parse_documents("fixture.yaml", &text).unwrap();
    let v = &docs[0].value;
    let get = |k: &str| {
        v[k].as_str()
            .unwrap_or_else(|| panic!("fixture.yaml lacks {k}"))
            .to_owned()
    };
    (
        get("providerName"),
        get("providerType"),
        get("providerVersion"),
    )
}

pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_manifests-gen"))
}

/// Runs the generator on a fixture into `base` (base path) and `base/manifests`.
pub fn run_fixture(dir: &Path, base: &Path) -> Output {
    let (name, ptype, version) = fixture_identity(dir);
    bin()
        .arg("--base-path")
        .arg(base)
        .arg("--manifests-path")
        .arg(base.join("manifests"))
        .args(["--provider-name", &name, "--provider-type", &ptype])
        .arg(format!("--provider-version={version}"))
        .arg("--components")
        .arg(dir.join("kustomize-output.yaml"))
        .arg("--metadata")
        .arg(dir.join("metadata.yaml"))
        .output()
        .unwrap()
}

/// All files under `dir`, recursively, relative.
pub fn list_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(list_files(&p));
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}
