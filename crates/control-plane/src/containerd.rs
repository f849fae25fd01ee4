//! The node's container runtime: containerd 2, built from its Go module by `tools/containerd/build.sh`
//! (the daemon and its runc shim; runc and the CNI plugins are the distribution's), and its version 3
//! configuration. containerd 2.1 and later mount Kubernetes image volumes, which the installer's pod
//! needs for the providers' profiles.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::error::Error;

/// The folder holding `containerd`, `ctr` and `containerd-shim-runc-v2`: env `CAPI_CONTAINERD_BIN_DIR`
/// when set, else what `tools/containerd/build.sh` prints (it builds them on first use, about 100 s
/// of CPU, and is a quick lookup afterwards).
pub fn bin_dir() -> Result<PathBuf, Error> {
    static BUILT: Mutex<Option<PathBuf>> = Mutex::new(None);
    crate::locations::built_bin_dir(
        "CAPI_CONTAINERD_BIN_DIR",
        crate::locations::repo_root().join("tools/containerd/build.sh"),
        &BUILT,
    )
}

/// Where containerd keeps and finds what the node gives it.
pub(crate) struct Paths<'a> {
    /// The node's containerd folder: `root`, `state` and `opt` go below it.
    pub dir: &'a Path,
    pub socket: &'a Path,
    /// The folder of [`bin_dir`].
    pub bin: &'a Path,
    pub cni_bin: &'a str,
    pub cni_conf: &'a Path,
    /// The `hosts.toml` folders (the registries the node mirrors).
    pub hosts: &'a Path,
    pub sandbox_image: &'a str,
}

/// containerd's configuration (version 3, containerd 2's own). Every path containerd would otherwise
/// take from its defaults on the machine (`/var/lib/containerd`, `/run/containerd`, `/opt/containerd`,
/// NRI's socket under `/var/run/nri`) is the node's, so that nothing of it outlives the node.
pub(crate) fn config(paths: &Paths) -> String {
    let p = |p: &Path| p.display().to_string();
    format!(
        r#"version = 3
root = "{root}"
state = "{state}"
[grpc]
  address = "{socket}"
[plugins]
  # The "opt" plugin creates its folder (default /opt/containerd) and puts it on the shims' PATH.
  [plugins.'io.containerd.internal.v1.opt']
    path = "{opt}"
  # No NRI plugins here; its socket would be /var/run/nri/nri.sock on the machine.
  [plugins.'io.containerd.nri.v1.nri']
    disable = true
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = "overlayfs"
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = "{sandbox}"
    [plugins.'io.containerd.cri.v1.images'.registry]
      config_path = "{hosts}"
  [plugins.'io.containerd.cri.v1.runtime']
    # Root lacks CAP_SYS_RESOURCE here: lowering a container's OOM score is all it may do.
    restrict_oom_score_adj = true
    disable_apparmor = true
    enable_cdi = false
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = "runc"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        # The shim built with containerd, not whichever containerd-shim-runc-v2 is first on PATH
        # (a distribution's containerd 1.x ships one).
        runtime_path = "{shim}"
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          BinaryName = "{runc}"
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ["{cni_bin}"]
      conf_dir = "{cni_conf}"
"#,
        root = p(&paths.dir.join("root")),
        state = p(&paths.dir.join("state")),
        opt = p(&paths.dir.join("opt")),
        socket = p(paths.socket),
        sandbox = paths.sandbox_image,
        hosts = p(paths.hosts),
        shim = p(&paths.bin.join("containerd-shim-runc-v2")),
        runc = RUNC,
        cni_bin = paths.cni_bin,
        cni_conf = p(paths.cni_conf),
    )
}

/// The distribution's runc (`hack/node-prerequisites.sh`).
pub(crate) const RUNC: &str = "/usr/sbin/runc";
