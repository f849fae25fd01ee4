//! Which version of the reference generator a fork vendors ([`GeneratorVersion`]): the one its Go
//! module requires, the module that vendors the generator (the fork's `openshift/tools`, where
//! its Makefile once ran `go run ./vendor/github.com/openshift/cluster-capi-operator/manifests-gen`).

use std::path::Path;

use anyhow::{Context, Result};
use capi_manifests::generator::{GENERATOR_MODULE, GeneratorVersion};
use capi_manifests::kustomization::Kustomization;
use capi_runtime::note;

use crate::kustomize;

/// The version of the reference generator whose kustomize Component the kustomization in `dir`
/// includes (`components:` entry `.../vendor/github.com/openshift/cluster-capi-operator/
/// manifests-gen`), read from the `go.mod` of the Go module that vendors it (the folder holding
/// `vendor/`, the fork's `openshift/tools`). `None` when the kustomization includes no such
/// Component or its module requires no version of it: the current generator's behaviour then.
pub fn of_kustomization(dir: &Path) -> Result<Option<GeneratorVersion>> {
    let (file, text) = kustomize::read_kustomization(dir)?;
    let kustomization = Kustomization::parse(&file.display().to_string(), &text)?;
    let suffix = format!("vendor/{GENERATOR_MODULE}");
    let module_dir = kustomization
        .components()?
        .into_iter()
        .find_map(|entry| entry.trim_end_matches('/').strip_suffix(&suffix));
    match module_dir {
        Some(m) => required_in(&dir.join(m).join("go.mod")),
        None => Ok(None),
    }
}

/// The first generation: the fork's tools module, found from where the Makefile runs the generator
/// (the working directory and its parents up to the repository root, `--base-path`) or in the
/// repository's `openshift/tools` or `openshift`. `None` when no `go.mod` there requires the
/// generator: the current generator's behaviour then.
pub fn of_repository(base_path: &Path) -> Result<Option<GeneratorVersion>> {
    let base = std::fs::canonicalize(base_path)
        .with_context(|| format!("cannot resolve --base-path {}", base_path.display()))?;
    let mut candidates = Vec::new();
    if let Ok(cwd) = std::env::current_dir().and_then(std::fs::canonicalize)
        && cwd.starts_with(&base)
    {
        candidates.extend(
            cwd.ancestors()
                .take_while(|d| d.starts_with(&base))
                .map(|d| d.join("go.mod")),
        );
    }
    candidates.push(base.join("openshift/tools/go.mod"));
    candidates.push(base.join("openshift/go.mod"));
    for go_mod in candidates {
        if let Some(v) = required_in(&go_mod)? {
            return Ok(Some(v));
        }
    }
    Ok(None)
}

/// The version of the generator that `go_mod` requires; `None` when there is no such file or it
/// does not require the generator.
fn required_in(go_mod: &Path) -> Result<Option<GeneratorVersion>> {
    let text = match std::fs::read_to_string(go_mod) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", go_mod.display())),
    };
    let version = GeneratorVersion::from_go_mod(&text);
    if let Some(v) = &version {
        note!(
            "writing as {GENERATOR_MODULE} {} does (required by {})",
            v.version,
            go_mod.display()
        );
    }
    Ok(version)
}
