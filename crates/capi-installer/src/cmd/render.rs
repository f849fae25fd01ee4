//! `capi-installer render`: the plan the installer would apply for a platform, computed offline from a
//! folder of transport ConfigMaps and/or a folder of image-based profiles, with the controller's own
//! selection, platform mapping, rendering and planning. For debugging a release: what will be applied,
//! in which order, and what exactly.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use capi_apply::{Phase, Plan};
use capi_commands::offline::{self, Input, Sources, describe_source};
use capi_installer_controller::desired::{Desired, Wanted, Wants};
use capi_installer_controller::prepare::RenderContext;
use capi_installer_controller::source::Target;
use capi_installer_controller::source::profile::ProfileCatalog;
use capi_manifests::platform::Platform;
use capi_manifests::transport::{LABEL_NAME, LABEL_TYPE};
use capi_runtime::report::exit;
use serde_json::json;

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Output {
    /// The ordered plan: provider, phase, each object.
    Text,
    /// The rendered objects as multi-document YAML, each preceded by a comment with its place in the plan.
    Yaml,
    /// The rendered objects in apply order as one JSON `List` (what `kubectl get -o json` prints).
    Json,
}

#[derive(clap::Args)]
pub struct RenderArgs {
    /// The `Infrastructure` platform type, spelled as the API spells it: AWS, GCP, Azure, PowerVS,
    /// VSphere, OpenStack, BareMetal (those with a provider), or another known type (None, Nutanix, ...).
    #[arg(long, value_name = "TYPE", value_parser = platform_type)]
    platform: String,
    /// Folder of YAML files holding the transport ConfigMaps (other documents are reported and skipped;
    /// a `kind: List`, as `oc get -o yaml` writes it, is read item by item).
    #[arg(long, value_name = "DIR", required_unless_present = "profiles_dir")]
    from: Option<PathBuf>,
    /// Folder of image-based profiles: `<image>/capi-operator-manifests/<profile>/`.
    #[arg(long, value_name = "DIR")]
    profiles_dir: Option<PathBuf>,
    /// Only this profile of each image under --profiles-dir (default: every profile of every image).
    #[arg(long, value_name = "NAME", requires = "profiles_dir")]
    profile: Option<String>,
    /// JSON object of release image references: key → image.
    #[arg(long, value_name = "PATH")]
    images_json: PathBuf,
    /// YAML or JSON map of variables for `${VAR}` substitution.
    #[arg(long, value_name = "PATH")]
    substitutions: Option<PathBuf>,
    /// The cluster-wide proxy, as `oc get proxy cluster -o yaml` writes it: its `status` values become
    /// the proxy variables of every provider Deployment, its `spec.trustedCA.name` the CA bundle's
    /// mount (default: a cluster without a proxy).
    #[arg(long, value_name = "PATH")]
    proxy: Option<PathBuf>,
    /// The providers' namespace: the transport ConfigMaps and every namespaced provider object.
    #[arg(
        short,
        long,
        default_value = capi_manifests::TARGET_NAMESPACE,
        value_name = "NS"
    )]
    namespace: String,
    /// `text`: the ordered plan; `yaml` or `json`: the rendered objects in apply order.
    #[arg(short, long, value_enum, default_value = "text", value_name = "FORMAT")]
    output: Output,
    #[command(flatten)]
    policy: crate::args::policy::PolicyArgs,
}

fn platform_type(name: &str) -> Result<String, String> {
    capi_manifests::platform::parse_platform_type(name).map(str::to_string)
}

/// Exit code 1 when a provider of the platform cannot be rendered (or is missing); errors otherwise.
pub fn main(args: RenderArgs) -> Result<ExitCode> {
    let (sources, ctx) = read(&args)?;
    let Some(wants) = wants(&args.platform, &sources.profiles)? else {
        return Ok(ExitCode::SUCCESS);
    };
    let infra = wants.required_infrastructure();
    let infra = infra.join(", ");

    let round = offline::round(&wants, &sources, &ctx);
    let not_selected = sources.not_selected(&round);
    for c in &not_selected.configmaps {
        eprintln!(
            "note: {}: ConfigMap {} is not selected for platform {}",
            c.origin,
            c.name(),
            args.platform
        );
    }
    for c in &not_selected.profiles {
        eprintln!(
            "note: {} ({}) is not selected for platform {}",
            c.id,
            c.describe(),
            args.platform
        );
    }
    if !round.selection.missing.is_empty() {
        missing(&args, &round.selection.missing);
        return Ok(ExitCode::from(exit::FAILED));
    }
    let mut plans: Vec<(&Target, Plan)> = Vec::new();
    let mut errors = Vec::new();
    for rendered in offline::render(&round, &sources) {
        match rendered.plan {
            Ok((plan, stripped)) => {
                for field in &stripped {
                    eprintln!(
                        "note: {}: removed {field} (another controller owns it)",
                        describe_source(&args.namespace, &rendered.target.source.id)
                    );
                }
                plans.push((rendered.target, plan));
            }
            // One provider's problems, each on a line of its own.
            Err(problems) => errors.push(problems.join("\nerror: ")),
        }
    }
    errors.extend(offline::refused(&args.namespace, &round));
    let out = match args.output {
        Output::Text => text(&args.platform, &infra, &args.namespace, &plans),
        Output::Yaml => yaml(&plans)?,
        Output::Json => json_list(&plans)?,
    };
    capi_runtime::report::write_stdout(out)?;
    let selection = &round.selection;
    Ok(report_errors(
        &errors,
        selection.targets.len() + selection.refused.len(),
        &sources.profiles.problems,
    ))
}

/// The sources and what rendering needs (images, substitutions, the installer's policy); notes on
/// what the input holds besides.
fn read(args: &RenderArgs) -> Result<(Sources, RenderContext)> {
    let images = crate::inputs::read_images(&args.images_json)?;
    let substitutions = match &args.substitutions {
        Some(path) => crate::inputs::read_map(path, "substitutions file")?,
        None => Default::default(),
    };
    let input = match &args.from {
        Some(dir) => Input::read(dir, &args.namespace)?,
        None => Input::default(),
    };
    let policy = args.policy.config(&args.namespace)?;
    let mut ctx = offline::context(&args.namespace, images, &substitutions, policy);
    if let Some(path) = &args.proxy {
        ctx.proxy = crate::inputs::read_proxy(path)?;
    }
    for note in &input.notes {
        eprintln!("note: {note}");
    }
    let profiles = match &args.profiles_dir {
        Some(dir) => {
            let catalog = offline::read_profiles(dir, args.profile.as_deref())?;
            for skipped in &catalog.skipped {
                eprintln!("note: {skipped}: skipped");
            }
            catalog
        }
        None => ProfileCatalog::default(),
    };
    Ok((Sources { input, profiles }, ctx))
}

/// The providers `platform` needs (`profiles` may bring its provider); `None` (after saying so) on a
/// platform without Cluster API support.
fn wants(platform: &str, profiles: &ProfileCatalog) -> Result<Option<Wants>> {
    match offline::desired(platform, profiles) {
        Desired::Install(wants) => Ok(Some(wants)),
        Desired::Unsupported { platform, reason } => {
            // Not an error: this is what the installer does on such a platform.
            capi_runtime::report::write_stdout(format_args!(
                "platform {platform}: {reason}; the installer installs nothing\n"
            ))?;
            let supported: Vec<&str> = Platform::all().map(Platform::type_name).collect();
            eprintln!(
                "note: platforms with a Cluster API provider: {}, and any platform a profile under --profiles-dir declares (ocpPlatform)",
                supported.join(", ")
            );
            Ok(None)
        }
        Desired::WaitingForPlatform => bail!("--platform must not be empty"),
    }
}

/// Prints the errors of `providers` providers and the unusable profiles; the exit code they mean.
fn report_errors(
    errors: &[String],
    providers: usize,
    profile_problems: &[impl std::fmt::Display],
) -> ExitCode {
    if !errors.is_empty() {
        for e in errors {
            eprintln!("error: {e}");
        }
        eprintln!(
            "error: {} of {providers} provider(s) cannot be rendered",
            errors.len()
        );
    }
    // A profile whose provider cannot be told is an error of the release, whatever the platform.
    for problem in profile_problems {
        eprintln!("error: unusable profile: {problem}");
    }
    if !errors.is_empty() || !profile_problems.is_empty() {
        return ExitCode::from(exit::FAILED);
    }
    ExitCode::SUCCESS
}

/// Prints which required providers have no source, and where none was found.
fn missing(args: &RenderArgs, missing: &[Wanted]) {
    let missing: Vec<String> = missing
        .iter()
        .map(|w| {
            format!(
                "{LABEL_NAME}={}, {LABEL_TYPE}={}",
                w.name,
                w.provider_type.label()
            )
        })
        .collect();
    let searched: Vec<String> = args
        .from
        .iter()
        .map(|d| {
            format!(
                "{}: no transport ConfigMap in namespace {}",
                d.display(),
                args.namespace
            )
        })
        .chain(args.profiles_dir.iter().map(|d| match &args.profile {
            Some(profile) => format!("{}: no profile {profile}", d.display()),
            None => format!("{}: no profile", d.display()),
        }))
        .collect();
    eprintln!(
        "error: {} for provider {} (platform {})",
        searched.join("; "),
        missing.join(" nor "),
        args.platform
    );
}

fn gate(phase: Phase) -> &'static str {
    match phase {
        Phase::CustomResourceDefinitions => "; then wait until Established",
        Phase::Workloads => "; then wait until Available",
        Phase::Base | Phase::Admission => "",
    }
}

/// The plan, one line per provider, phase and object.
fn text(platform: &str, infra: &str, namespace: &str, plans: &[(&Target, Plan)]) -> String {
    let objects = |n: usize| {
        if n == 1 {
            "1 object".to_string()
        } else {
            format!("{n} objects")
        }
    };
    let mut out = format!(
        "platform {platform}: core provider cluster-api, infrastructure provider {infra}\n"
    );
    for (target, plan) in plans {
        let source = &target.source;
        let _ = writeln!(
            out,
            "provider {} ({}, {}, {})",
            source.describe(),
            describe_source(namespace, &source.id),
            source.provider_type.label(),
            objects(plan.len())
        );
        for phase in &plan.phases {
            let _ = writeln!(
                out,
                "  phase {} ({}{})",
                phase.phase,
                objects(phase.objects.len()),
                gate(phase.phase)
            );
            for o in &phase.objects {
                let _ = writeln!(out, "    {}", o.key);
            }
        }
    }
    out
}

/// The rendered objects in apply order; each document says where it stands in the plan.
fn yaml(plans: &[(&Target, Plan)]) -> Result<String> {
    let mut out = String::new();
    for (target, plan) in plans {
        for phase in &plan.phases {
            for o in &phase.objects {
                if !out.is_empty() {
                    out.push_str("---\n");
                }
                let _ = writeln!(
                    out,
                    "# provider {}, phase {}: {}",
                    target.source.describe(),
                    phase.phase,
                    o.key
                );
                let value = serde_json::to_value(&o.object).with_context(|| o.key.to_string())?;
                out.push_str(&capi_manifests::yaml::to_yaml(&o.key.to_string(), &value)?);
            }
        }
    }
    Ok(out)
}

/// The rendered objects in apply order as a `v1` `List`.
fn json_list(plans: &[(&Target, Plan)]) -> Result<String> {
    let mut items = Vec::new();
    for (_, plan) in plans {
        for o in plan.objects() {
            items.push(serde_json::to_value(&o.object).with_context(|| o.key.to_string())?);
        }
    }
    let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
    Ok(format!("{}\n", serde_json::to_string_pretty(&list)?))
}
