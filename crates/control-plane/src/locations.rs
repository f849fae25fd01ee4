//! Where things are: the repository, the shared fixtures, the built binaries and images.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::error::{Error, io};

pub(crate) fn repo_root() -> PathBuf {
    // crates/control-plane → the workspace root.
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("crate lives two levels below the repository root")
        .to_path_buf()
}

pub(crate) fn shared_fixtures_dir() -> PathBuf {
    repo_root().join("../shared/fixtures")
}

pub(crate) fn build_script() -> PathBuf {
    repo_root().join("tools/control-plane/build.sh")
}

pub(crate) fn is_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// This crate's `openshift-crds/`: OpenShift CRDs that the pinned `github.com/openshift/api` module
/// does not give, loaded with its (see [`OpenShiftCrds::Default`]).
pub fn repository_crds_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("openshift-crds")
}

/// Path of a file or folder under `../shared/fixtures` (relative to the repository root). `None`,
/// with the reason printed, when it is absent; with env `CI=true` an absent fixture panics instead,
/// because CI must fail rather than skip.
pub fn shared_fixture(relative: &str) -> Option<PathBuf> {
    let path = shared_fixtures_dir().join(relative);
    if path.exists() {
        return Some(path);
    }
    if is_ci() {
        panic!("fixture {} is missing (CI=true)", path.display());
    }
    eprintln!("skipping: fixture {} is missing", path.display());
    None
}

/// The folder holding kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd and kwok:
/// env `CAPI_CONTROL_PLANE_BIN_DIR` when set, else what `tools/control-plane/build.sh` prints (it
/// builds the binaries on first use, which takes minutes, and is a quick lookup afterwards).
pub fn bin_dir() -> Result<PathBuf, Error> {
    static BUILT: Mutex<Option<PathBuf>> = Mutex::new(None);
    built_bin_dir("CAPI_CONTROL_PLANE_BIN_DIR", build_script(), &BUILT)
}

/// The folder a `tools/<set>/build.sh` prints (env `env` instead when set), remembered in `built` for
/// this process.
pub(crate) fn built_bin_dir(
    env: &str,
    script: PathBuf,
    built: &Mutex<Option<PathBuf>>,
) -> Result<PathBuf, Error> {
    if let Some(dir) = std::env::var_os(env) {
        return Ok(PathBuf::from(dir));
    }
    let mut built = built.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(dir) = &*built {
        return Ok(dir.clone());
    }
    let build_err = |message: String| Error::Build {
        script: script.clone(),
        message,
    };
    // Test binaries of several crates may start at the same time and ask at once: serialize across
    // processes (build.sh's own lock then only ever sees other work trees).
    let set = script
        .parent()
        .and_then(|d| d.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let lock_path = std::env::temp_dir().join(format!("capi-installer-{set}-build.lock"));
    let lock = fs::File::create(&lock_path).map_err(io(format!("open {}", lock_path.display())))?;
    // SAFETY: flock on a descriptor we own; released when `lock` is closed.
    if unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX) } != 0 {
        return Err(io(format!("lock {}", lock_path.display()))(
            std::io::Error::last_os_error(),
        ));
    }
    let output = std::process::Command::new(&script)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| build_err(format!("cannot run: {e}")))?;
    drop(lock);
    if !output.status.success() {
        return Err(build_err(format!("failed ({})", output.status)));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let dir = stdout
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| PathBuf::from(l.trim()))
        .ok_or_else(|| build_err("printed no folder".into()))?;
    *built = Some(dir.clone());
    Ok(dir)
}

/// The OpenShift CRDs of the pinned `github.com/openshift/api` module: env `CAPI_OPENSHIFT_CRDS_DIR`
/// when set, else what `tools/openshift-api/build.sh` prints (it fetches the module through the Go
/// module proxy on first use). Its `openshift/` holds the config and operator CRDs a cluster has
/// before any operator runs, `machine-api/` the Machine API's.
pub(crate) fn openshift_api_crds_dir() -> Result<PathBuf, Error> {
    static BUILT: Mutex<Option<PathBuf>> = Mutex::new(None);
    built_bin_dir(
        "CAPI_OPENSHIFT_CRDS_DIR",
        repo_root().join("tools/openshift-api/build.sh"),
        &BUILT,
    )
}

/// The OCI image layout of the real node's images: env `CAPI_IMAGES_DIR` when set, else
/// `<target>/images` as `hack/images.sh` writes it (`<target>` is `CARGO_TARGET_DIR` or the
/// repository's `target`). `None` (with the reason printed) when it is missing; with env `CI=true` a
/// missing layout panics instead, because CI runs `hack/images.sh` first.
pub fn images_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("CAPI_IMAGES_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| repo_root().join("target"))
            .join("images"),
    };
    if dir.join("index.json").exists() {
        return Some(dir);
    }
    if is_ci() {
        panic!(
            "images {} are missing (CI=true; hack/images.sh builds them)",
            dir.display()
        );
    }
    eprintln!(
        "skipping: images {} are missing (hack/images.sh builds them)",
        dir.display()
    );
    None
}
