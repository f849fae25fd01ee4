//! The first generation: the transport ConfigMap and its review copy.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use capi_manifests::customize::{Flavor, Generated, REVIEW_COPY_PATH, generate_as};
use capi_manifests::{Provider, ProviderType};
use capi_runtime::note;

use crate::args::Args;
use crate::kustomize;
use crate::output::{Output, check, write_all};
use crate::vendored;

/// The kustomization the ConfigMap mode renders when none is given, relative to `--base-path`.
const DEFAULT_KUSTOMIZE_DIR: &str = "config/default";

pub fn run(args: Args) -> Result<ExitCode> {
    let a = &args.configmap;
    // clap requires these without --name.
    let (Some(base_path), Some(name), Some(provider_type), Some(version)) = (
        &a.base_path,
        &a.provider_name,
        &a.provider_type,
        &a.provider_version,
    ) else {
        unreachable!("clap requires --base-path and --provider-* unless --name is given");
    };
    // The outputs' folders are created when missing, but the repository they belong to must exist: a
    // mistyped --base-path would otherwise become a new folder holding only the review copy.
    if !base_path.is_dir() {
        anyhow::bail!(
            "--base-path {}: no such folder (the root of the provider repository)",
            base_path.display()
        );
    }
    let provider_type: ProviderType = provider_type.parse()?;
    let (flavor, published_name) = Flavor::for_cli_name(name);
    let provider = Provider::new(published_name, provider_type, version)?;

    let metadata_path = a
        .metadata
        .clone()
        .unwrap_or_else(|| base_path.join("metadata.yaml"));
    let metadata = std::fs::read_to_string(&metadata_path).with_context(|| {
        format!(
            "cannot read clusterctl metadata {}",
            metadata_path.display()
        )
    })?;

    let kustomize_dir = base_path.join(
        args.kustomize_dir
            .as_deref()
            .unwrap_or(Path::new(DEFAULT_KUSTOMIZE_DIR)),
    );
    let (components_source, components) =
        read_components(a.components.as_ref(), &kustomize_dir, a.kind_order)?;
    let vendored = vendored::of_repository(base_path)?;
    let generated = generate_as(
        &provider,
        flavor,
        vendored.as_ref(),
        (&components_source, &components),
        (&metadata_path.display().to_string(), &metadata),
    )?;
    report(&generated);

    let outputs = [
        Output {
            path: args.manifests_path.join(generated.configmap_file_name()),
            content: generated.configmap_yaml,
        },
        Output {
            path: base_path.join(REVIEW_COPY_PATH),
            content: generated.components_yaml,
        },
    ];
    if args.check {
        return check(&outputs);
    }
    write_all(&outputs)?;
    Ok(ExitCode::SUCCESS)
}

fn report(g: &Generated) {
    note!(
        "provider {} ({}) version {}: {} objects dropped, protecting {}.{} from deletion",
        g.provider.name,
        g.provider.provider_type.label(),
        g.provider.version,
        g.dropped.len(),
        g.protected.plural,
        g.protected.group,
    );
    for d in &g.dropped {
        note!("  dropped {} ({}): {}", d.id, d.location, d.reason);
    }
}

fn read_components(
    components: Option<&PathBuf>,
    kustomize_dir: &Path,
    kind_order: bool,
) -> Result<(String, String)> {
    match components {
        Some(p) if p.as_os_str() == "-" => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .context("cannot read components from standard input")?;
            Ok(("<stdin>".to_owned(), s))
        }
        Some(p) => {
            let s = std::fs::read_to_string(p)
                .with_context(|| format!("cannot read components {}", p.display()))?;
            Ok((p.display().to_string(), s))
        }
        None => {
            let out = if kind_order {
                kustomize::build(kustomize_dir)?
            } else {
                kustomize::build_in_input_order(kustomize_dir)?
            };
            Ok((format!("kustomize build {}", kustomize_dir.display()), out))
        }
    }
}
