//! The newer generation: an image-based profile, `<manifests-path>/<profile-name>/{manifests.yaml,
//! metadata.yaml[,manifests-summary.yaml]}`.
//!
//! The kustomization's `transformers:` entries are read first: the generator's KRM functions are
//! taken out of the kustomization kustomize renders, and applied by capi-manifests afterwards, with
//! the configuration read from the ConfigMaps that the kustomization lists as resources.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use capi_manifests::kustomization::Kustomization;
use capi_manifests::profile_gen::{
    GeneratedProfile, ProfileOptions, generate_profile, validate_options,
};
use capi_manifests::transformers::{self, Config, Transformer};
use capi_runtime::note;

use crate::args::Args;
use crate::kustomize;
use crate::output::{Output, check, write_all};
use crate::vendored;

pub fn run(name: String, args: Args) -> Result<ExitCode> {
    let p = args.profile;
    let mut attributes = BTreeMap::new();
    for (key, value) in p.attributes {
        if let Some(first) = attributes.insert(key.clone(), value.clone()) {
            bail!("--attribute {key} is given twice ({key}={first} and {key}={value})");
        }
    }
    let dir = args
        .kustomize_dir
        .as_deref()
        .expect("clap requires --kustomize-dir with --name");
    let vendored = vendored::of_kustomization(dir)?;
    let options = ProfileOptions {
        name,
        profile: p.profile_name,
        platform: p.platform,
        install_order: p.install_order.unwrap_or(0),
        attributes,
        self_image_ref: p.self_image_ref,
        protect_cluster_resource: p.protect_cluster_resource,
        summary: p.manifests_summary,
        vendored,
    };
    // Before kustomize runs: a bad option is the cheaper error.
    validate_options(&options)?;
    let rendered = render(dir)?;
    let generated = generate_profile(
        &options,
        &rendered.source,
        &rendered.components,
        &rendered.functions,
        &rendered.config,
    )?;
    report(&options, &generated);

    let profile_dir = args.manifests_path.join(&options.profile);
    let outputs: Vec<Output> = generated
        .files
        .into_iter()
        .map(|f| Output {
            path: profile_dir.join(f.name),
            content: f.content,
        })
        .collect();
    if args.check {
        return check(&outputs);
    }
    write_all(&outputs)?;
    Ok(ExitCode::SUCCESS)
}

/// Kustomize's output for a profile, and what to apply to it.
struct Rendered {
    source: String,
    components: String,
    functions: Vec<transformers::Function>,
    config: Config,
}

fn render(dir: &Path) -> Result<Rendered> {
    let (file, text) = kustomize::read_kustomization(dir)?;
    let file_name = file.display().to_string();
    let kustomization = Kustomization::parse(&file_name, &text)?;
    let mut classes = Vec::new();
    for entry in kustomization.transformers()? {
        let class = if entry.contains('\n') {
            transformers::classify(&format!("{file_name}: an inline transformer"), entry)?
        } else {
            let path = dir.join(entry);
            if path.is_file() {
                let text = std::fs::read_to_string(&path)
                    .with_context(|| format!("cannot read transformer {}", path.display()))?;
                transformers::classify(&path.display().to_string(), &text)?
            } else {
                // A folder or a URL: kustomize's to read.
                Transformer::Kustomize
            }
        };
        classes.push(class);
    }
    let plan = kustomization.plan(&classes)?;
    let config = if plan.functions.is_empty() {
        Config::default()
    } else {
        let mut files = Vec::new();
        for entry in kustomization.resources()? {
            let path = dir.join(entry);
            if path.is_file() {
                let text = std::fs::read_to_string(&path)
                    .with_context(|| format!("cannot read resource {}", path.display()))?;
                files.push((path.display().to_string(), text));
            }
        }
        Config::read(&files)?
    };
    let components = kustomize::build_with_kustomization(dir, &plan.kustomization)?;
    Ok(Rendered {
        source: format!("kustomize build {}", dir.display()),
        components,
        functions: plan.functions,
        config,
    })
}

fn report(options: &ProfileOptions, g: &GeneratedProfile) {
    let t = &g.transformed;
    note!(
        "profile {}/{}: {} removed and {} renamed by the kustomization's transformers, {} dropped, protecting with {}",
        options.name,
        options.profile,
        t.removed.len(),
        t.renamed.len(),
        g.dropped.len(),
        if g.protected.is_empty() {
            "no policy".to_owned()
        } else {
            g.protected.join(", ")
        },
    );
    for id in &t.removed {
        note!("  removed {id} (exclude-resources)");
    }
    for id in &t.filtered {
        note!("  filtered the rules of {id} (exclude-resources)");
    }
    for (id, new) in &t.renamed {
        note!("  renamed {id} to {new} (rename-resources)");
    }
    for d in &g.dropped {
        note!("  dropped {} ({}): {}", d.id, d.location, d.reason);
    }
    for w in &g.warnings {
        note!("warning: {w}");
    }
}
