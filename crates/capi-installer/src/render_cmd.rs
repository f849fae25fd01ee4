//! `capi-installer render`: the plan the installer would apply for a platform, computed offline from a
//! folder of transport ConfigMaps and/or a folder of image-based profiles, with the controller's own
//! selection, platform mapping, rendering and planning. For debugging a release: what will be applied,
//! in which order, and what exactly.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use capi_apply::{KindResolver, Phase, Plan};
use capi_installer_controller::desired::{self, Desired, Wants};
use capi_installer_controller::prepare::RenderContext;
use capi_installer_controller::round::Round;
use capi_installer_controller::source::profile::{ProfileCatalog, validate_profile_name};
use capi_installer_controller::source::{
    self, ProviderSource, SourceCatalog, SourceId, Target, configmap,
};
use capi_manifests::ProviderType;
use capi_manifests::platform::Platform;
use capi_manifests::transport::{LABEL_NAME, LABEL_TYPE};
use capi_runtime::report::exit;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::DynamicObject;
use serde_json::{Value, json};

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
    policy: crate::policy_args::PolicyArgs,
}

fn platform_type(name: &str) -> Result<String, String> {
    capi_manifests::platform::parse_platform_type(name).map(str::to_string)
}

/// Exit code 1 when a provider of the platform cannot be rendered (or is missing); errors otherwise.
pub fn main(args: RenderArgs) -> Result<ExitCode> {
    let (sources, ctx) = read(&args)?;
    let Some(wants) = wants(&args.platform)? else {
        return Ok(ExitCode::SUCCESS);
    };
    let infra: Vec<&str> = wants
        .providers
        .iter()
        .filter(|w| w.required && w.provider_type == ProviderType::Infrastructure)
        .map(|w| w.name.as_str())
        .collect();
    let infra = infra.join(", ");

    let Some(round) = select(&args, &sources, &wants, &ctx) else {
        return Ok(ExitCode::from(exit::FAILED));
    };
    let selection = &round.selection;
    let (plans, mut errors) = plan_all(&args.namespace, &sources, &round);
    // As the installer does: a second source of one provider is refused, naming the one kept.
    errors.extend(selection.refused.iter().map(|r| {
        format!(
            "{}: provider {} ({}) is already provided by {}; remove one of the two",
            describe_source(&args.namespace, &r.target.source.id),
            r.target.source.name,
            r.target.source.provider_type.label(),
            describe_source(&args.namespace, &r.kept)
        )
    }));
    let out = match args.output {
        Output::Text => text(&args.platform, &infra, &args.namespace, &plans),
        Output::Yaml => yaml(&plans)?,
        Output::Json => json_list(&plans)?,
    };
    capi_runtime::report::write_stdout(out)?;
    Ok(report_errors(
        &errors,
        selection.targets.len() + selection.refused.len(),
        &sources.profiles.problems,
    ))
}

/// The sources and what rendering needs (images, substitutions, the installer's policy); notes on
/// what the input holds besides.
fn read(args: &RenderArgs) -> Result<(Sources, RenderContext)> {
    let images = crate::read_images(&args.images_json)?;
    let substitutions = match &args.substitutions {
        Some(path) => crate::read_map(path, "substitutions file")?,
        None => Default::default(),
    };
    let input = match &args.from {
        Some(dir) => read_input(dir, &args.namespace)?,
        None => Input::default(),
    };
    // The installer's policy (with `run`'s allowances); the round protects the transport ConfigMaps
    // of the input as they would be in the cluster.
    // Offline: as on a cluster without a TLS profile of its own (the Intermediate profile).
    let (substitutions, unavailable) =
        capi_installer_controller::tls::with_cluster_profile(None, &substitutions);
    let ctx = RenderContext {
        namespace: args.namespace.clone(),
        images,
        substitutions,
        unavailable,
        policy: args.policy.config(&args.namespace),
    };
    for note in &input.notes {
        eprintln!("note: {note}");
    }
    let profiles = match &args.profiles_dir {
        Some(dir) => {
            if let Some(profile) = &args.profile {
                validate_profile_name(profile).map_err(anyhow::Error::msg)?;
            }
            let catalog = ProfileCatalog::read(dir, args.profile.as_deref())
                .with_context(|| format!("reading profiles folder {}", dir.display()))?;
            for skipped in &catalog.skipped {
                eprintln!("note: {skipped}: skipped");
            }
            catalog
        }
        None => ProfileCatalog::default(),
    };
    Ok((Sources { input, profiles }, ctx))
}

/// The providers `platform` needs; `None` (after saying so) on a platform without Cluster API support.
fn wants(platform: &str) -> Result<Option<Wants>> {
    let status = json!({"platformStatus": {"type": platform}});
    match desired::desired(Some(&status), &[]) {
        Desired::Install(wants) => Ok(Some(wants)),
        Desired::Unsupported { platform, reason } => {
            // Not an error: this is what the installer does on such a platform.
            capi_runtime::report::write_stdout(format_args!(
                "platform {platform}: {reason}; the installer installs nothing\n"
            ))?;
            let supported: Vec<&str> = Platform::all().map(Platform::type_name).collect();
            eprintln!(
                "note: platforms with a Cluster API provider: {}",
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

/// The round of the sources the platform selects; notes for the others; `None` (after printing the
/// error) when a required provider has none.
fn select(
    args: &RenderArgs,
    sources: &Sources,
    wants: &Wants,
    ctx: &RenderContext,
) -> Option<Round> {
    let mut candidates: Vec<ProviderSource> = sources
        .input
        .configmaps
        .iter()
        .filter_map(|c| configmap::candidate(&c.typed))
        .collect();
    candidates.extend(sources.profiles.candidates());
    let round = Round::new(&wants.providers, &candidates, &Default::default(), ctx);
    let selection = &round.selection;
    let selected = |id: &SourceId| selection.targets.iter().any(|t| &t.source.id == id);
    for c in &sources.input.configmaps {
        if !selected(&SourceId::ConfigMap(c.name().to_string())) {
            eprintln!(
                "note: {}: ConfigMap {} is not selected for platform {}",
                c.origin,
                c.name(),
                args.platform
            );
        }
    }
    for c in sources.profiles.candidates() {
        if !selected(&c.id) {
            eprintln!(
                "note: {} ({}) is not selected for platform {}",
                c.id,
                c.describe(),
                args.platform
            );
        }
    }
    if !selection.missing.is_empty() {
        let missing: Vec<String> = selection
            .missing
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
        return None;
    }
    Some(round)
}

/// Where the payloads come from.
struct Sources {
    input: Input,
    profiles: ProfileCatalog,
}

impl Sources {
    fn configmap(&self, name: &str) -> &InputConfigMap {
        self.input
            .configmaps
            .iter()
            .find(|c| c.name() == name)
            .expect("selected from the input")
    }

    /// Where a selected source came from, as errors name it.
    fn origin(&self, id: &SourceId) -> String {
        match id {
            SourceId::ConfigMap(name) => self.configmap(name).origin.clone(),
            other => other.to_string(),
        }
    }

    /// The payload of a selected source.
    fn payload(&self, id: &SourceId) -> Result<source::Payload, String> {
        match id {
            SourceId::ConfigMap(name) => {
                configmap::payload(&self.configmap(name).value).map_err(|e| e.to_string())
            }
            other => self
                .profiles
                .load(other)
                .expect("selected from the profiles")
                .map_err(|e| e.to_string()),
        }
    }
}

/// Renders and plans every selected provider; the errors name the file and document of each that
/// cannot be planned (the others are still planned).
fn plan_all<'a>(
    namespace: &str,
    sources: &Sources,
    round: &'a Round,
) -> (Vec<(&'a Target, Plan)>, Vec<String>) {
    let mut errors = Vec::new();
    let mut plans: Vec<(&Target, Plan)> = Vec::new();
    let planned = round.plan_all(&sources.input.resolver, |target| {
        sources.payload(&target.source.id)
    });
    for planned in planned {
        let target = planned.target;
        let prepared = planned
            .prepared
            .map_err(|e| vec![e])
            .and_then(|prepared| prepared.map_err(|e| e.problems()));
        match prepared {
            Ok(prepared) => {
                for field in &prepared.stripped {
                    eprintln!(
                        "note: {}: removed {field} (another controller owns it)",
                        describe_source(namespace, &target.source.id)
                    );
                }
                plans.push((target, prepared.plan));
            }
            // One provider's problems, each on a line of its own.
            Err(e) => {
                let origin = sources.origin(&target.source.id);
                errors.push(
                    e.iter()
                        .map(|p| format!("{origin}: {p}"))
                        .collect::<Vec<_>>()
                        .join("\nerror: "),
                )
            }
        }
    }
    (plans, errors)
}

/// `ConfigMap openshift-cluster-api/aws`, or `profile <image>/<profile>`.
fn describe_source(namespace: &str, id: &SourceId) -> String {
    match id {
        SourceId::ConfigMap(name) => format!("ConfigMap {namespace}/{name}"),
        other => other.to_string(),
    }
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

struct InputConfigMap {
    typed: ConfigMap,
    value: Value,
    /// `file: document N (line L)`.
    origin: String,
}

impl InputConfigMap {
    fn name(&self) -> &str {
        self.typed.metadata.name.as_deref().unwrap_or_default()
    }
}

struct Input {
    configmaps: Vec<InputConfigMap>,
    resolver: KindResolver,
    notes: Vec<String>,
}

impl Default for Input {
    fn default() -> Self {
        Input {
            configmaps: Vec::new(),
            resolver: KindResolver::builtin(),
            notes: Vec::new(),
        }
    }
}

/// Reads every `*.yaml`/`*.yml` file of `dir` (sorted by name): ConfigMaps are the input; the kinds of
/// CRDs are added to the resolver (the release payload applies such CRDs directly, e.g. the core CRD
/// manifest); everything else is reported and skipped.
fn read_input(dir: &Path, namespace: &str) -> Result<Input> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading folder {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .collect();
    files.sort();
    if files.is_empty() {
        bail!("{}: no *.yaml or *.yml files", dir.display());
    }
    let mut input = Input {
        configmaps: Vec::new(),
        resolver: KindResolver::builtin(),
        notes: Vec::new(),
    };
    for file in files {
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("reading {}", file.display()))?;
        let docs = capi_manifests::yaml::unwrap_lists(capi_manifests::yaml::parse_documents(
            &file.display().to_string(),
            &text,
        )?);
        for doc in docs {
            let origin = doc.location.to_string();
            let kind = doc
                .value
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let api_version = doc
                .value
                .get("apiVersion")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let name = doc
                .value
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("<unnamed>");
            match (api_version, kind) {
                ("v1", "ConfigMap") => {
                    let typed: ConfigMap =
                        serde_json::from_value(doc.value.clone()).with_context(|| {
                            format!("{origin}: ConfigMap {name}: not a valid ConfigMap")
                        })?;
                    let ns = typed.metadata.namespace.as_deref().unwrap_or(namespace);
                    if ns != namespace {
                        input.notes.push(format!(
                            "{origin}: ConfigMap {ns}/{name} skipped: not in namespace {namespace}"
                        ));
                        continue;
                    }
                    if input.configmaps.iter().any(|c| c.name() == name) {
                        bail!("{origin}: ConfigMap {namespace}/{name} appears twice");
                    }
                    input.configmaps.push(InputConfigMap {
                        typed,
                        value: doc.value,
                        origin,
                    });
                }
                ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => {
                    let crd: DynamicObject = serde_json::from_value(doc.value.clone())
                        .with_context(|| format!("{origin}: CustomResourceDefinition {name}"))?;
                    input.resolver.insert_crd(&crd).map_err(|e| {
                        anyhow::anyhow!("{origin}: CustomResourceDefinition {name}: {e}")
                    })?;
                    input.notes.push(format!(
                        "{origin}: CustomResourceDefinition {name} is not a transport ConfigMap: skipped, its kinds are known to the plan"
                    ));
                }
                _ => input.notes.push(format!(
                    "{origin}: {kind} {name} is not a transport ConfigMap: skipped"
                )),
            }
        }
    }
    Ok(input)
}
