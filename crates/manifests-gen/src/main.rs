//! Build-time generator of transport ConfigMaps from a provider's rendered components.
//!
//! Drop-in for the reference `manifests-gen` command line (SPEC §3): a provider's Makefile
//! keeps working. All processing lives in `capi-manifests`; this binary reads inputs, runs
//! kustomize when asked to, and writes (or checks) the two output files.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context, Result, anyhow, bail};
use capi_manifests::customize::{Flavor, Generated, REVIEW_COPY_PATH, generate};
use capi_manifests::{Provider, ProviderType};
use capi_runtime::report::{exit, finish};
use clap::Parser;

/// Generate the transport ConfigMap of a Cluster API provider for OpenShift.
#[derive(Parser, Debug)]
#[command(name = "manifests-gen", version)]
struct Args {
    /// Root of the provider repository.
    #[arg(long)]
    base_path: PathBuf,
    /// Output folder for the transport ConfigMap (normally openshift/manifests).
    #[arg(long)]
    manifests_path: PathBuf,
    /// Kustomize folder, relative to --base-path.
    #[arg(long, default_value = "config/default")]
    kustomize_dir: PathBuf,
    /// clusterctl provider name: cluster-api, aws, gcp, azure, powervs, ...
    #[arg(long)]
    provider_name: String,
    /// CoreProvider or InfrastructureProvider.
    #[arg(long)]
    provider_type: String,
    /// Provider version, semver with optional leading v (e.g. v2.10.0).
    #[arg(long)]
    provider_version: String,
    /// Already-rendered components (FILE, or - for standard input) instead of running kustomize.
    #[arg(long, value_name = "FILE|-")]
    components: Option<PathBuf>,
    /// clusterctl metadata file [default: <base-path>/metadata.yaml].
    #[arg(long, value_name = "FILE")]
    metadata: Option<PathBuf>,
    /// Write nothing; exit 1 and print a diff when the committed outputs are stale (0 when up to date,
    /// 2 on an error).
    #[arg(long)]
    check: bool,
    /// Keep the objects in the order the kustomization lists them, as the reference generator
    /// does, instead of kustomize's default order by kind. Only when manifests-gen runs
    /// kustomize; a --components file is always taken in its own order.
    #[arg(long)]
    input_order: bool,
}

const FLAGS: [&str; 10] = [
    "base-path",
    "manifests-path",
    "kustomize-dir",
    "provider-name",
    "provider-type",
    "provider-version",
    "components",
    "metadata",
    "check",
    "input-order",
];

/// Go's `flag` package accepts `-flag` as well as `--flag`; the reference is a Go program, so a
/// Makefile may use either. Rewrite single-dash forms of our long flags before clap sees them.
fn go_style_args(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    args.into_iter()
        .enumerate()
        .map(|(i, a)| {
            let Some(s) = a.to_str().filter(|_| i > 0) else {
                return a;
            };
            if let Some(rest) = s.strip_prefix('-').filter(|r| !r.starts_with('-')) {
                let name = rest.split_once('=').map_or(rest, |(n, _)| n);
                if FLAGS.contains(&name) {
                    return OsString::from(format!("-{s}"));
                }
            }
            a
        })
        .collect()
}

fn main() -> ExitCode {
    let args = Args::parse_from(go_style_args(std::env::args_os()));
    // 0 written or up to date, 1 stale (--check), 2 any error: a CI script can tell "regenerate" from
    // "broken".
    finish(run(&args), exit::ERROR)
}

struct Output {
    path: PathBuf,
    content: String,
}

fn run(args: &Args) -> Result<ExitCode> {
    let provider_type: ProviderType = args.provider_type.parse()?;
    let (flavor, published_name) = Flavor::for_cli_name(&args.provider_name);
    let provider = Provider::new(published_name, provider_type, &args.provider_version)?;

    let metadata_path = args
        .metadata
        .clone()
        .unwrap_or_else(|| args.base_path.join("metadata.yaml"));
    let metadata = std::fs::read_to_string(&metadata_path).with_context(|| {
        format!(
            "cannot read clusterctl metadata {}",
            metadata_path.display()
        )
    })?;

    let (components_source, components) = read_components(args)?;
    let generated = generate(
        &provider,
        flavor,
        &components_source,
        &components,
        &metadata_path.display().to_string(),
        &metadata,
    )?;
    report(&generated);

    let outputs = [
        Output {
            path: args.manifests_path.join(generated.configmap_file_name()),
            content: generated.configmap_yaml,
        },
        Output {
            path: args.base_path.join(REVIEW_COPY_PATH),
            content: generated.components_yaml,
        },
    ];
    if args.check {
        return check(&outputs);
    }
    write_all(&outputs)?;
    for o in &outputs {
        eprintln!("wrote {} ({} bytes)", o.path.display(), o.content.len());
    }
    Ok(ExitCode::SUCCESS)
}

fn report(g: &Generated) {
    eprintln!(
        "provider {} ({}) version {}: {} objects dropped, protecting {}.{} from deletion",
        g.provider.name,
        g.provider.provider_type.label(),
        g.provider.version,
        g.dropped.len(),
        g.protected.plural,
        g.protected.group,
    );
    for d in &g.dropped {
        eprintln!("  dropped {} ({}): {}", d.id, d.location, d.reason);
    }
}

fn read_components(args: &Args) -> Result<(String, String)> {
    match &args.components {
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
            let dir = args.base_path.join(&args.kustomize_dir);
            let out = if args.input_order {
                run_kustomize_in_input_order(&dir)?
            } else {
                run_kustomize(&dir)?
            };
            Ok((format!("kustomize build {}", dir.display()), out))
        }
    }
}

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

fn run_kustomize(dir: &Path) -> Result<String> {
    let mut cmd = if on_path("kustomize") {
        let mut c = Command::new("kustomize");
        c.arg("build").arg(dir);
        c
    } else if on_path("kubectl") {
        let mut c = Command::new("kubectl");
        c.arg("kustomize").arg(dir);
        c
    } else {
        bail!(
            "neither kustomize nor kubectl is on PATH, so {} cannot be rendered; install one, or render the components yourself and pass them with --components FILE (or --components - on standard input)",
            dir.display()
        );
    };
    eprintln!("running {cmd:?}");
    let out = cmd
        .output()
        .with_context(|| format!("cannot run {cmd:?}"))?;
    if !out.status.success() {
        bail!(
            "{cmd:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    String::from_utf8(out.stdout).map_err(|e| anyhow!("{cmd:?} printed non-UTF-8 output: {e}"))
}

/// The reference generator ran kustomize in-process with its default options, which keep the
/// order in which the kustomization lists its resources; `kustomize build` and `kubectl
/// kustomize` sort by kind unless the *top-level* kustomization says `sortOptions: {order:
/// fifo}` (kubectl has no flag for it). So build a throw-away top-level kustomization that
/// only includes the provider's and asks for that order.
fn run_kustomize_in_input_order(dir: &Path) -> Result<String> {
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
    run_kustomize(&wrapper_real)
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

fn check(outputs: &[Output]) -> Result<ExitCode> {
    let mut stale = false;
    for o in outputs {
        let current = match std::fs::read_to_string(&o.path) {
            Ok(s) => s,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", o.path.display())),
        };
        if current == o.content {
            continue;
        }
        stale = true;
        let name = o.path.display().to_string();
        let (current, generated) = (elide_long_lines(&current), elide_long_lines(&o.content));
        let diff = similar::TextDiff::from_lines(&current, &generated);
        let mut stdout = std::io::stdout().lock();
        write!(
            stdout,
            "{}",
            diff.unified_diff().context_radius(3).header(
                &format!("{name} (committed)"),
                &format!("{name} (generated)")
            )
        )?;
    }
    if stale {
        eprintln!(
            "generated manifests are stale: run manifests-gen without --check and commit the result"
        );
        Ok(ExitCode::from(exit::FAILED))
    } else {
        eprintln!("generated manifests are up to date");
        Ok(ExitCode::SUCCESS)
    }
}

/// A compressed ConfigMap holds its components in one base64 line of ~100 kB; printing it in a
/// diff helps nobody (the review copy shows the real change). Replace such lines with their
/// length and a hash, so the diff still shows *that* they changed.
fn elide_long_lines(text: &str) -> String {
    const MAX: usize = 400;
    text.split_inclusive('\n')
        .map(|line| {
            if line.len() <= MAX {
                return line.to_owned();
            }
            // FNV-1a: stable and dependency-free; only used to tell lines apart.
            let hash = line.bytes().fold(0xcbf29ce484222325u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
            });
            let indent = &line[..line.len() - line.trim_start().len()];
            let key = line.trim_start().split_once(' ').map_or("", |(k, _)| k);
            format!(
                "{indent}{key} <{} bytes elided, fnv1a {hash:016x}>\n",
                line.len()
            )
        })
        .collect()
}

/// Writes every output to a temporary file beside its target, then renames them all: a reader
/// never sees a half-written file, and a failure before the renames leaves the targets as they
/// were.
fn write_all(outputs: &[Output]) -> Result<()> {
    let mut temps = Vec::new();
    let result = (|| -> Result<()> {
        for o in outputs {
            let dir = o
                .path
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create folder {}", dir.display()))?;
            let file_name = o.path.file_name().expect("output paths end in a file name");
            let tmp = dir.join(format!(
                ".{}.tmp-{}",
                file_name.to_string_lossy(),
                std::process::id()
            ));
            temps.push(tmp.clone());
            std::fs::write(&tmp, &o.content)
                .with_context(|| format!("cannot write {}", tmp.display()))?;
        }
        for (o, tmp) in outputs.iter().zip(&temps) {
            std::fs::rename(tmp, &o.path).with_context(|| {
                format!("cannot rename {} to {}", tmp.display(), o.path.display())
            })?;
        }
        Ok(())
    })();
    if result.is_err() {
        for t in &temps {
            let _ = std::fs::remove_file(t);
        }
    }
    result
}
