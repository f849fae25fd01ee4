//! Running `kustomize build` (or `kubectl kustomize`, which embeds it), three ways: as it is, in
//! the kustomization's own order, and with a rewritten top-level kustomization (the profile mode's,
//! without the transformers manifests-gen applies itself).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, anyhow, bail};
use capi_manifests::kustomization::FILE_NAMES;
use capi_runtime::note;

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|d| {
            let p = d.join(program);
            p.is_file()
                && std::fs::metadata(&p)
                    .map(|m| {
                        use std::os::unix::fs::PermissionsExt;
                        m.permissions().mode() & 0o111 != 0
                    })
                    .unwrap_or(false)
        })
    })
}

/// `kustomize build [extra] dir`, or `kubectl kustomize [extra] dir` when there is no kustomize.
/// `shown` is the folder to name in messages (the user's, when `dir` is a temporary stand-in).
fn run(dir: &Path, extra: &[&str], shown: &Path) -> Result<String> {
    let (program, mut cmd) = if on_path("kustomize") {
        let mut c = Command::new("kustomize");
        c.arg("build");
        ("kustomize build", c)
    } else if on_path("kubectl") {
        let mut c = Command::new("kubectl");
        c.arg("kustomize");
        ("kubectl kustomize", c)
    } else {
        bail!(
            "neither kustomize nor kubectl is on PATH, so {} cannot be rendered; install one, or render the components yourself and pass them with --components FILE (or --components - on standard input)",
            shown.display()
        );
    };
    cmd.args(extra).arg(dir);
    let shown_dir = shown.display().to_string();
    let described = std::iter::once(program)
        .chain(extra.iter().copied())
        .chain([shown_dir.as_str()])
        .collect::<Vec<_>>()
        .join(" ");
    note!("running {described}");
    let out = cmd
        .output()
        .with_context(|| format!("cannot run {described}"))?;
    if !out.status.success() {
        // Name the user's files, not the stand-in folder's.
        let stderr =
            String::from_utf8_lossy(&out.stderr).replace(&dir.display().to_string(), &shown_dir);
        bail!("{described} failed ({}): {}", out.status, stderr.trim());
    }
    String::from_utf8(out.stdout).map_err(|e| anyhow!("{described} printed non-UTF-8 output: {e}"))
}

/// `kustomize build dir`: objects sorted by kind (`--kind-order`).
pub fn build(dir: &Path) -> Result<String> {
    run(dir, &[], dir)
}

/// The reference generator ran kustomize in-process with its default options, which keep the
/// order in which the kustomization lists its resources; `kustomize build` and `kubectl
/// kustomize` sort by kind unless the *top-level* kustomization says `sortOptions: {order:
/// fifo}` (kubectl has no flag for it). So build a throw-away top-level kustomization that
/// only includes the provider's and asks for that order.
pub fn build_in_input_order(dir: &Path) -> Result<String> {
    if !on_path("kustomize") && !on_path("kubectl") {
        // Says that neither is there, which is the first thing to fix.
        return run(dir, &[], dir);
    }
    let target = std::fs::canonicalize(dir)
        .with_context(|| format!("cannot resolve kustomize folder {}", dir.display()))?;
    let wrapper = tempfile::Builder::new()
        .prefix("manifests-gen-order-")
        .tempdir()
        .context("cannot create a temporary folder")?;
    let wrapper_real = std::fs::canonicalize(wrapper.path())?;
    // kustomize refuses an absolute path as a resource root: refer to it relatively.
    let relative = relative_path(&wrapper_real, &target);
    let kustomization = format!(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- {}\nsortOptions:\n  order: fifo\n",
        serde_json::to_string(&relative.to_string_lossy())?
    );
    let file = wrapper_real.join("kustomization.yaml");
    std::fs::write(&file, kustomization)
        .with_context(|| format!("cannot write {}", file.display()))?;
    run(&wrapper_real, &[], dir)
}

/// `to` relative to `from`; both absolute and canonical.
fn relative_path(from: &Path, to: &Path) -> PathBuf {
    let from: Vec<_> = from.components().collect();
    let to: Vec<_> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..from.len() {
        out.push("..");
    }
    for c in &to[common..] {
        out.push(c);
    }
    out
}

/// The kustomization file of `dir`: its path and text.
pub fn read_kustomization(dir: &Path) -> Result<(PathBuf, String)> {
    let Some(path) = FILE_NAMES.iter().map(|n| dir.join(n)).find(|p| p.is_file()) else {
        bail!(
            "{} has no kustomization ({})",
            dir.display(),
            FILE_NAMES.join(", ")
        );
    };
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok((path, text))
}

/// Builds `dir` with its kustomization replaced by `kustomization`, without touching `dir`.
///
/// The kustomization's paths are relative to its folder (`../config/default`, `patches/x.yaml`,
/// the vendored Component), so kustomize must see the new file from a folder in the same place: a
/// temporary folder beside `dir`, holding the new kustomization and a symbolic link to every other
/// entry of `dir`. Kustomize resolves those links to files outside the temporary folder, which its
/// default load restrictions refuse; `--load-restrictor LoadRestrictionsNone` lets it read them
/// (what the kustomization reads is exactly what it read in `dir`). The folder is removed afterwards.
pub fn build_with_kustomization(dir: &Path, kustomization: &str) -> Result<String> {
    let real = std::fs::canonicalize(dir)
        .with_context(|| format!("cannot resolve kustomize folder {}", dir.display()))?;
    let (Some(parent), Some(name)) = (real.parent(), real.file_name()) else {
        bail!("kustomize folder {} has no parent folder", dir.display());
    };
    let stand_in = tempfile::Builder::new()
        .prefix(&format!(".manifests-gen-{}-", name.to_string_lossy()))
        .tempdir_in(parent)
        .with_context(|| {
            format!(
                "cannot create a temporary folder in {} (beside the kustomization, so that its relative paths still resolve)",
                parent.display()
            )
        })?;
    let entries =
        std::fs::read_dir(&real).with_context(|| format!("cannot read {}", real.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot read {}", real.display()))?;
        let entry_name = entry.file_name();
        if FILE_NAMES.iter().any(|n| entry_name == *n) {
            continue;
        }
        let link = stand_in.path().join(&entry_name);
        std::os::unix::fs::symlink(entry.path(), &link)
            .with_context(|| format!("cannot create {}", link.display()))?;
    }
    let file = stand_in.path().join(FILE_NAMES[0]);
    std::fs::write(&file, kustomization)
        .with_context(|| format!("cannot write {}", file.display()))?;
    run(
        stand_in.path(),
        &["--load-restrictor", "LoadRestrictionsNone"],
        dir,
    )
}
