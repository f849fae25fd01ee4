//! `capi-installer diff`: what the installer would change in a cluster for a new release's transport
//! ConfigMaps, without writing anything ([`capi_commands::diff`]).

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use capi_apply::{Detail, Edit, FieldChange};
use capi_commands::diff::{self, Change, DiffConfig, Report};
use capi_commands::offline;
use capi_installer_controller::user_agent;
use capi_runtime::args::KubeArgs;
use capi_runtime::report::exit;
use serde_json::Value;

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Output {
    /// One line per object that would change, its fields below it.
    Text,
    /// The same as one JSON document, for CI.
    Json,
    /// The JSON document as YAML.
    Yaml,
}

#[derive(clap::Args)]
pub struct DiffArgs {
    /// Transport ConfigMap files, or folders of release manifests (their transport ConfigMaps are
    /// taken, other documents skipped). Each replaces the cluster's ConfigMap of the same name.
    #[arg(value_name = "PATH", required = true)]
    paths: Vec<PathBuf>,
    #[command(flatten)]
    kube: KubeArgs,
    /// JSON object of release image references: key → image. Default: the installer's own,
    /// ConfigMap `capi-installer-images` in --installer-namespace (its every value an image).
    #[arg(long, value_name = "PATH")]
    images_json: Option<PathBuf>,
    /// YAML or JSON map of variables for `${VAR}` substitution.
    #[arg(long, value_name = "PATH")]
    substitutions: Option<PathBuf>,
    #[command(flatten)]
    namespaces: crate::args::namespace::NamespaceArgs,
    #[command(flatten)]
    adopt: crate::args::adopt::AdoptArgs,
    #[command(flatten)]
    policy: crate::args::policy::PolicyArgs,
    /// Dry-run each provider's objects as its own identity, ServiceAccount
    /// `capi-provider-<cluster.x-k8s.io/provider>` of --installer-namespace, impersonated, as `run`
    /// writes them: the API server judges each grant against that provider's RBAC. Needs `impersonate`
    /// on those ServiceAccounts (the installer's own ServiceAccount and cluster-admin have it).
    /// `false`: as whoever runs the command.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    provider_identities: bool,
    /// `text` for people; `json` or `yaml` for CI.
    #[arg(short, long, value_enum, default_value = "text", value_name = "FORMAT")]
    output: Output,
}

/// Exit code 0 when nothing would change, 1 when something would (or would be refused); errors
/// (2) otherwise.
pub async fn main(args: DiffArgs) -> Result<ExitCode> {
    let images = args
        .images_json
        .as_deref()
        .map(crate::inputs::read_images)
        .transpose()?;
    let substitutions = match &args.substitutions {
        Some(path) => crate::inputs::read_map(path, "substitutions file")?,
        None => Default::default(),
    };
    let mut given = Vec::new();
    for path in &args.paths {
        let (configmaps, skipped) = offline::transport_configmaps(path)?;
        for note in skipped {
            eprintln!("note: {note}");
        }
        anyhow::ensure!(
            !configmaps.is_empty(),
            "{}: no transport ConfigMap",
            path.display()
        );
        given.extend(configmaps);
    }
    let client = crate::inputs::connect(&args.kube).await?;
    let images = match images {
        Some(images) => images,
        None => {
            diff::release_images(&client, &args.namespaces.installer.installer_namespace).await?
        }
    };
    let config = DiffConfig {
        policy: args.policy.config(&args.namespaces.namespace)?,
        namespace: args.namespaces.namespace,
        installer_namespace: args.namespaces.installer.installer_namespace,
        images,
        substitutions,
        retired_managers: args.adopt.retired_managers(),
        adoptable_managers: args.adopt.adopt_from_managers,
        identities: match args.provider_identities {
            true => {
                let loaded = capi_runtime::process::config(&args.kube, &user_agent()).await?;
                Some(capi_apply::Identities::new(loaded.config))
            }
            false => None,
        },
    };
    let report = diff::diff(&client, &config, given).await?;
    let out = match args.output {
        Output::Text => text(&report),
        Output::Json => format!(
            "{}
",
            serde_json::to_string_pretty(&report)?
        ),
        Output::Yaml => capi_manifests::yaml::to_yaml("the diff", &serde_json::to_value(&report)?)?,
    };
    capi_runtime::report::write_stdout(out)?;
    Ok(ExitCode::from(if report.differs() {
        exit::FAILED
    } else {
        exit::OK
    }))
}

/// The report for people: one line per object, its fields below it, and inside each field what
/// changed (the items of a list, the lines or the changed part of a long string).
fn text(report: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "platform: {}", report.platform);
    for m in &report.missing {
        let _ = writeln!(out, "missing: {m}");
    }
    for p in &report.providers {
        let version = p.version.as_deref().unwrap_or("no version label");
        let _ = writeln!(out, "{} ({} {version})", p.source, p.provider);
        if p.objects.is_empty() && p.refused.is_empty() {
            let _ = writeln!(out, "  no change");
        }
        for r in &p.refused {
            let _ = writeln!(out, "  ! refused: {r}");
        }
        for o in &p.objects {
            let mark = match o.change {
                Change::Created => '+',
                Change::Changed | Change::Adopted => '~',
                Change::Pruned => '-',
            };
            let change = format!("{:?}", o.change).to_lowercase();
            let note = o
                .note
                .as_ref()
                .map(|n| format!(" ({n})"))
                .unwrap_or_default();
            let _ = writeln!(out, "  {mark} {} {change}{note}", o.object);
            for f in &o.fields {
                field(&mut out, f);
            }
        }
    }
    if !report.differs() {
        let _ = writeln!(out, "nothing would change");
    }
    out
}

/// How far a field's lines are indented (below its object's).
const INDENT: &str = "      ";

/// One field: its path and values, or what changed inside them, one line each.
fn field(out: &mut String, f: &FieldChange) {
    let mark = |added: bool| if added { '+' } else { '-' };
    match f.detail() {
        Detail::Whole => {
            let _ = writeln!(
                out,
                "{INDENT}{}: {} -> {}",
                f.path,
                short(f.before.as_ref()),
                short(f.after.as_ref())
            );
        }
        Detail::Items {
            before,
            after,
            edits,
        } => {
            let item = |e: &Edit<&Value>| format!("[{}] {}", e.index, short(Some(e.item)));
            list(
                out,
                &f.path,
                ("list", "item"),
                (before, after),
                &edits,
                item,
            );
        }
        Detail::Lines {
            before,
            after,
            edits,
        } => {
            let line = |e: &Edit<&str>| format!("{:>4}: {}", e.index, cut(e.item));
            list(
                out,
                &f.path,
                ("text", "line"),
                (before, after),
                &edits,
                line,
            );
        }
        Detail::Span {
            at,
            len_before,
            len_after,
            context,
            before,
            after,
        } => {
            let _ = writeln!(
                out,
                "{INDENT}{}: string of {len_before} -> {len_after} characters, changed at character {at}:",
                f.path
            );
            let ellipsis = if at > context.chars().count() {
                "…"
            } else {
                ""
            };
            for (added, part) in [(false, before), (true, after)] {
                let _ = writeln!(
                    out,
                    "{INDENT}  {} {ellipsis}{}",
                    mark(added),
                    cut(&format!("{context}{part}"))
                );
            }
        }
    }
}

/// A list or a text by its items or lines: how many there were and are, then each removed (`-`) or
/// added (`+`), one a line.
fn list<T>(
    out: &mut String,
    path: &str,
    (whole, unit): (&str, &str),
    (before, after): (usize, usize),
    edits: &[Edit<T>],
    show: impl Fn(&Edit<T>) -> String,
) {
    let after = match after {
        1 => format!("1 {unit}"),
        n => format!("{n} {unit}s"),
    };
    let _ = writeln!(out, "{INDENT}{path}: {whole} of {before} -> {after}");
    for e in edits {
        let mark = if e.added { '+' } else { '-' };
        let _ = writeln!(out, "{INDENT}  {mark} {}", show(e));
    }
}

/// A value on one line, cut at 160 characters.
fn short(v: Option<&serde_json::Value>) -> String {
    match v {
        Some(v) => cut(&v.to_string()),
        None => "(absent)".into(),
    }
}

/// `text` cut at 160 characters.
fn cut(text: &str) -> String {
    match text.char_indices().nth(160) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}
