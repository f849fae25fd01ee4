//! What the benchmarks (the examples) need besides the tests' setup: the release binary run as a
//! process and its memory, the objects the installer would apply (rendered with the library), the same
//! objects applied by `kubectl apply --server-side`, requests counted from the audit log, and the
//! figures' formatting. Measured there, never asserted in tests; errors are returned to be reported,
//! not panics.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use capi_apply::KindResolver;
use capi_installer_controller::desired::{self, Desired};
use capi_installer_controller::prepare::RenderContext;
use capi_installer_controller::round::Round;
use capi_installer_controller::source::{self, SourceId, configmap};
use control_plane::AuditEvent;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DynamicObject, GroupVersionKind};
use kube::discovery::{Discovery, Scope};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

use crate::{NS, co_status, images, settled};

/// The installer binary a benchmark measures: the file environment variable `var` names (another
/// commit's build, for a before/after on the same machine at the same time), else [`release_binary`].
pub fn installer_binary(var: &str) -> Result<PathBuf> {
    match std::env::var_os(var) {
        Some(path) => Ok(PathBuf::from(path)),
        None => release_binary("capi-installer", "capi-installer"),
    }
}

/// `cargo build --release` of binary `bin` of `package` (a no-op when fresh), into the target folder
/// of the running example; returns its path. Called outside every measurement.
pub fn release_binary(package: &str, bin: &str) -> Result<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = std::process::Command::new(cargo)
        .args(["build", "--release", "-p", package, "--bin", bin])
        .status()
        .context("running cargo build")?;
    if !status.success() {
        bail!("cargo build of the {bin} binary: {status}");
    }
    // <target>/release/examples/<example> → <target>/release/<bin>
    let exe = std::env::current_exe()?;
    let path = exe
        .parent()
        .and_then(Path::parent)
        .context("folder of this example")?
        .join(bin);
    if !path.exists() {
        bail!("{} is missing after the build", path.display());
    }
    Ok(path)
}

/// (VmRSS, VmHWM) of a process, in KiB.
pub fn proc_status(pid: u32) -> Result<(u64, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |name: &str| -> Result<u64> {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .with_context(|| format!("{name} in /proc/{pid}/status"))
    };
    Ok((field("VmRSS:")?, field("VmHWM:")?))
}

/// Waits until process `pid` has used no CPU for one second (at most `limit`): what it was still doing
/// (the passes that follow a rollout, records written after it) is not counted in the next measure.
pub async fn wait_quiet(pid: u32, limit: Duration) -> Result<()> {
    let deadline = std::time::Instant::now() + limit;
    let mut last = process_cpu(pid)?;
    while std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = process_cpu(pid)?;
        if now == last {
            return Ok(());
        }
        last = now;
    }
    anyhow::bail!("process {pid} still busy after {limit:?}")
}

/// What a footprint benchmark starts with: warnings on stderr (RUST_LOG overrides), and its first two
/// arguments, RUNS (default 3) and IDLE_SECONDS (default 60); the remaining arguments are the caller's.
pub fn bench_start() -> Result<(usize, Duration, std::iter::Skip<std::env::Args>)> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,kube=off")),
        )
        .with_writer(std::io::stderr)
        .init();
    let mut args = std::env::args().skip(1);
    let runs: usize = args.next().map_or(Ok(3), |n| n.parse()).context("RUNS")?;
    let idle = Duration::from_secs(
        args.next()
            .map_or(Ok(60), |n| n.parse())
            .context("IDLE_SECONDS")?,
    );
    Ok((runs, idle, args))
}

/// User + system CPU time of a process so far (`/proc/<pid>/stat`).
pub fn process_cpu(pid: u32) -> Result<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Fields after the command (which may contain spaces) start after the last ')'.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .with_context(|| format!("/proc/{pid}/stat"))?
        .1
        .split_whitespace()
        .collect();
    let ticks = |i: usize| -> Result<u64> {
        Ok(fields
            .get(i)
            .with_context(|| format!("field {} of /proc/{pid}/stat", i + 3))?
            .parse()?)
    };
    // utime and stime are fields 14 and 15 of the line; the first after the command is field 3.
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    Ok(Duration::from_secs_f64(
        (ticks(11)? + ticks(12)?) as f64 / hz,
    ))
}

/// Polls `check` every `poll` until it holds; an error after `timeout`.
pub async fn wait_until<F, Fut>(
    timeout: Duration,
    poll: Duration,
    what: &str,
    mut check: F,
) -> Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    while !check().await {
        if Instant::now() > deadline {
            bail!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(poll).await;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------------
// The installer as a process

/// The release version the benchmarks' installer reports.
pub const RELEASE_VERSION: &str = "4.21.0-bench";

/// `capi-installer run` (the release binary `bin`) against the control plane of `kubeconfig`, as the
/// admin, without leader election, its log in `dir/installer.log`; killed when dropped.
pub fn start_installer(bin: &Path, kubeconfig: &Path, dir: &Path) -> Result<tokio::process::Child> {
    let images_json = dir.join("images.json");
    std::fs::write(&images_json, serde_json::to_string(&images())?)?;
    let log = dir.join("installer.log");
    tokio::process::Command::new(bin)
        .arg("run")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--images-json")
        .arg(&images_json)
        .args([
            "--http-addr",
            "127.0.0.1:0",
            "--metrics-addr",
            "127.0.0.1:0",
        ])
        .arg("--leader-elect=false")
        .env("RELEASE_VERSION", RELEASE_VERSION)
        .env("RUST_LOG", "info,kube=warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log)?)
        .kill_on_drop(true)
        .spawn()
        .context("starting capi-installer run")
}

/// `error` with the installer's log of `dir` ([`start_installer`]) attached.
pub fn with_installer_log(dir: &Path, error: anyhow::Error) -> anyhow::Error {
    let text = std::fs::read_to_string(dir.join("installer.log")).unwrap_or_default();
    error.context(format!("installer log:\n{text}"))
}

/// Available=True, Progressing=False and Degraded=False on `ClusterOperator/cluster-api`.
pub async fn operator_ready(client: &Client) -> bool {
    co_status(client).await.is_some_and(|s| settled(&s))
}

// ---------------------------------------------------------------------------------------------------
// The objects the installer applies

/// The objects the installer would apply on `platform` with the extra infrastructure providers
/// `extra` (as `InfrastructureProvider` objects ask for them), from the transport ConfigMaps
/// `configmaps`, planned as the installer's round plans them ahead of the cluster (`render`'s way:
/// the kinds of earlier providers' CRDs known to later ones, CRD short names that clash dropped from
/// the later provider), in install order.
pub fn render_objects(configmaps: &[Value], platform: &str, extra: &[&str]) -> Result<Vec<Value>> {
    let typed: Vec<ConfigMap> = configmaps
        .iter()
        .map(|d| serde_json::from_value(d.clone()))
        .collect::<Result<_, _>>()?;
    let status = json!({"platformStatus": {"type": platform}});
    let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    let Desired::Install(wants) = desired::desired(Some(&status), &Default::default(), &extra)
    else {
        bail!("platform {platform} has no provider");
    };
    let ctx = RenderContext {
        namespace: NS.into(),
        images: images(),
        ..Default::default()
    };
    let candidates: Vec<_> = typed.iter().filter_map(configmap::candidate).collect();
    let round = Round::new(&wants.providers, &candidates, &Default::default(), &ctx);
    if let Some(missing) = round.selection.missing.first() {
        bail!("no transport ConfigMap for {}", missing.describe());
    }
    // The release payload applies the core CRD manifest itself: its kinds are served.
    let mut served = KindResolver::builtin();
    if let Some(path) = crate::fixture(&format!("transport-configmaps/{}", crate::CORE_CRDS)) {
        for crd in crate::read_documents(&path) {
            served
                .insert_crd(&serde_json::from_value(crd)?)
                .map_err(|e| anyhow::anyhow!("{}: {e}", crate::CORE_CRDS))?;
        }
    }
    let load = |target: &source::Target| -> Result<source::Payload> {
        let SourceId::ConfigMap(name) = &target.source.id else {
            bail!(
                "{}: the benchmarks read transport ConfigMaps only",
                target.source.id
            );
        };
        let cm = configmaps
            .iter()
            .find(|d| d["metadata"]["name"] == name.as_str())
            .with_context(|| format!("ConfigMap {NS}/{name}"))?;
        Ok(configmap::payload(cm)?)
    };
    let mut objects = Vec::new();
    for planned in round.plan_all(&served, load) {
        let prepared = planned
            .prepared?
            .with_context(|| planned.target.source.id.to_string())?;
        for o in prepared.plan.objects() {
            objects.push(serde_json::to_value(&o.object)?);
        }
    }
    Ok(objects)
}

pub fn is_crd(o: &Value) -> bool {
    o["kind"] == "CustomResourceDefinition"
}

/// An object as the audit log names it: (plural resource, namespace, name).
pub type AuditKey = (String, String, String);

/// The audit log's key of each object, resolved by discovery (call it once the CRDs are served).
pub async fn audit_keys(client: &Client, objects: &[Value]) -> Result<BTreeSet<AuditKey>> {
    let discovery = Discovery::new(client.clone()).run_aggregated().await?;
    let mut keys = BTreeSet::new();
    for o in objects {
        let obj: DynamicObject = serde_json::from_value(o.clone())?;
        let gvk = GroupVersionKind::try_from(obj.types.as_ref().context("apiVersion and kind")?)?;
        let (resource, caps) = discovery
            .resolve_gvk(&gvk)
            .with_context(|| format!("{gvk:?} is not served"))?;
        let namespace = match caps.scope {
            Scope::Namespaced => obj.namespace().unwrap_or_else(|| NS.into()),
            Scope::Cluster => String::new(),
        };
        keys.insert((resource.plural, namespace, obj.name_any()));
    }
    Ok(keys)
}

// ---------------------------------------------------------------------------------------------------
// The audit log

/// Now, in microseconds since the epoch (the audit log's resolution).
pub fn micros_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

/// When the API server answered the request (microseconds since the epoch).
pub fn at(e: &AuditEvent) -> i64 {
    e.stage_timestamp.0.as_microsecond()
}

/// From `from` to `to` (microseconds), zero when `to` is earlier.
pub fn since(from: i64, to: i64) -> Duration {
    Duration::from_micros(to.saturating_sub(from).max(0) as u64)
}

/// Requests (one per audit ID) whose agent matches, in `[from, to)`, counted by verb; a server-side
/// dry-run writes nothing and is counted apart (`patch (dry-run)`).
pub fn requests_by_verb(
    events: &[AuditEvent],
    agent: impl Fn(&str) -> bool,
    from: i64,
    to: i64,
) -> Requests {
    requests_by(events, agent, from, to, |e| e.verb.clone())
}

/// Like [`requests_by_verb`], counted by `verb resource[/subresource]` ([`what`]).
pub fn requests_by_resource(
    events: &[AuditEvent],
    agent: impl Fn(&str) -> bool,
    from: i64,
    to: i64,
) -> Requests {
    requests_by(events, agent, from, to, what)
}

fn requests_by(
    events: &[AuditEvent],
    agent: impl Fn(&str) -> bool,
    from: i64,
    to: i64,
    key: impl Fn(&AuditEvent) -> String,
) -> Requests {
    let mut seen = BTreeSet::new();
    let mut by = BTreeMap::new();
    for e in events {
        if e.user_agent.as_deref().is_some_and(&agent)
            && (from..to).contains(&at(e))
            && seen.insert(e.audit_id.clone())
        {
            let mut k = key(e);
            if e.is_dry_run() {
                k.push_str(" (dry-run)");
            }
            *by.entry(k).or_insert(0) += 1;
        }
    }
    Requests(by)
}

/// `verb resource[/subresource]` of a request (its URI when it names no resource: discovery).
pub fn what(e: &AuditEvent) -> String {
    let o = e.object_ref.clone().unwrap_or_default();
    if o.resource.is_empty() {
        return format!("{} {}", e.verb, e.request_uri);
    }
    format!(
        "{} {}{}",
        e.verb,
        o.resource,
        o.subresource.map(|s| format!("/{s}")).unwrap_or_default()
    )
}

/// One line per request whose agent matches, in `[from, to)`, in the order the API server received
/// them: `+offset ms (duration ms) verb resource[/subresource] namespace/name`, offsets from `from`. What
/// a request's latency and the gaps between requests say about the critical path (set
/// `BENCH_TIMELINE=1` in the benchmarks).
pub fn timeline(
    events: &[AuditEvent],
    agent: impl Fn(&str) -> bool,
    from: i64,
    to: i64,
) -> Vec<String> {
    let mut seen = BTreeSet::new();
    let mut lines: Vec<(i64, String)> = events
        .iter()
        .filter(|e| {
            e.user_agent.as_deref().is_some_and(&agent)
                && (from..to).contains(&at(e))
                && seen.insert(e.audit_id.clone())
        })
        .map(|e| {
            let received = e
                .request_received_timestamp
                .as_ref()
                .map_or(at(e), |t| t.0.as_microsecond());
            let o = e.object_ref.clone().unwrap_or_default();
            let dry = if e.is_dry_run() { " (dry-run)" } else { "" };
            (
                received,
                format!(
                    "+{:>6} ms ({:>4} ms) {}{dry} {}/{}",
                    (received - from) / 1000,
                    (at(e) - received) / 1000,
                    what(e),
                    o.namespace.unwrap_or_default(),
                    o.name.unwrap_or_default()
                ),
            )
        })
        .collect();
    lines.sort();
    lines.into_iter().map(|(_, l)| l).collect()
}

/// Whether `BENCH_TIMELINE` asks for [`timeline`]s.
pub fn timeline_wanted() -> bool {
    std::env::var_os("BENCH_TIMELINE").is_some_and(|v| v != "0")
}

/// Requests counted by a key that starts with the verb (`get`, `patch (dry-run)`, `list configmaps`).
#[derive(Debug, Default, Clone)]
pub struct Requests(pub BTreeMap<String, usize>);

impl Requests {
    fn verb(key: &str) -> &str {
        key.split_whitespace().next().unwrap_or_default()
    }
    pub fn reads(&self) -> usize {
        self.count(|k| {
            !k.ends_with("(dry-run)") && matches!(Self::verb(k), "get" | "list" | "watch")
        })
    }
    pub fn dry_runs(&self) -> usize {
        self.count(|k| k.ends_with("(dry-run)"))
    }
    pub fn writes(&self) -> usize {
        self.count(|k| {
            !k.ends_with("(dry-run)")
                && matches!(
                    Self::verb(k),
                    "create" | "update" | "patch" | "delete" | "deletecollection"
                )
        })
    }
    pub fn all(&self) -> usize {
        self.count(|_| true)
    }
    fn count(&self, f: impl Fn(&str) -> bool) -> usize {
        self.0.iter().filter(|(k, _)| f(k)).map(|(_, n)| n).sum()
    }
    /// `key n, key n, ...`.
    pub fn verbs(&self) -> String {
        let parts: Vec<String> = self.0.iter().map(|(v, n)| format!("{v} {n}")).collect();
        parts.join(", ")
    }
}

// ---------------------------------------------------------------------------------------------------
// kubectl apply --server-side of the same objects

/// GNU time, which reports a child's peak RSS; kubectl runs without it where it is missing.
const GNU_TIME: &str = "/usr/bin/time";
const MAXRSS: &str = "capi-bench-maxrss ";

/// kubectl against one control plane, with a discovery cache of its own (it starts as cold as the
/// installer does) and the largest peak RSS of its processes so far.
pub struct Kubectl {
    pub bin: PathBuf,
    pub kubeconfig: PathBuf,
    pub cache: PathBuf,
    /// The largest peak RSS of the kubectl processes so far, in KiB (GNU time's `%M`; 0 without it).
    pub peak_kib: AtomicU64,
}

/// One `kubectl` install of rendered objects: CRDs, wait Established, the rest, wait Available.
#[derive(Debug, Clone, Copy)]
pub struct KubectlInstall {
    /// Start until the second `kubectl apply` returned.
    pub applied: Duration,
    /// Start until `kubectl wait --for=condition=Available deployment --all` returned.
    pub ready: Duration,
    /// When it started and ended (microseconds), to count its requests.
    pub from: i64,
    pub to: i64,
}

impl Kubectl {
    /// kubectl of `bin_dir` against `kubeconfig`, its discovery cache in `dir`.
    pub fn new(bin_dir: &Path, kubeconfig: PathBuf, dir: &Path) -> Kubectl {
        Kubectl {
            bin: bin_dir.join("kubectl"),
            kubeconfig,
            cache: dir.join("kube-cache"),
            peak_kib: AtomicU64::new(0),
        }
    }

    pub async fn run(&self, args: &[&str]) -> Result<()> {
        let timed = Path::new(GNU_TIME).exists();
        let mut command = if timed {
            let mut c = tokio::process::Command::new(GNU_TIME);
            c.arg("-f").arg(format!("{MAXRSS}%M")).arg(&self.bin);
            c
        } else {
            tokio::process::Command::new(&self.bin)
        };
        let out = command
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(&self.cache)
            .args(args)
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output()
            .await
            .context("running kubectl")?;
        if !out.status.success() {
            bail!(
                "kubectl {}: {}\n{}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let peak = String::from_utf8_lossy(&out.stderr)
            .lines()
            .find_map(|l| l.strip_prefix(MAXRSS)?.trim().parse::<u64>().ok());
        if let Some(kib) = peak {
            self.peak_kib.fetch_max(kib, Ordering::Relaxed);
        }
        Ok(())
    }

    pub async fn apply(&self, files: &[&Path]) -> Result<()> {
        let files: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        let mut args = vec![
            "apply",
            "--server-side",
            "--field-manager=bench",
            // The payload's CRDs belong to cluster-version-operator; the installer adopts them (the
            // release ships them for core), kubectl has to force to do the same.
            "--force-conflicts",
        ];
        for f in &files {
            args.extend(["-f", f.as_str()]);
        }
        self.run(&args).await
    }

    /// `objects` written to two files of `dir` (`<prefix>crds.yaml` and `<prefix>rest.yaml`).
    pub fn write_files(dir: &Path, prefix: &str, objects: &[Value]) -> Result<(PathBuf, PathBuf)> {
        let write = |name: String, objects: Vec<&Value>| -> Result<PathBuf> {
            let path = dir.join(name);
            let docs: Vec<String> = objects
                .into_iter()
                .map(serde_json::to_string)
                .collect::<Result<_, _>>()?;
            std::fs::write(&path, docs.join("\n---\n"))?;
            Ok(path)
        };
        Ok((
            write(
                format!("{prefix}crds.yaml"),
                objects.iter().filter(|o| is_crd(o)).collect(),
            )?,
            write(
                format!("{prefix}rest.yaml"),
                objects.iter().filter(|o| !is_crd(o)).collect(),
            )?,
        ))
    }

    /// Installs `objects` as an administrator would with kubectl: the CRDs, `kubectl wait` until they
    /// are Established, the rest, `kubectl wait` until every Deployment of the namespace is Available.
    pub async fn install(&self, dir: &Path, objects: &[Value]) -> Result<KubectlInstall> {
        let (crds, rest) = Kubectl::write_files(dir, "", objects)?;
        let from = micros_now();
        self.apply(&[&crds]).await?;
        self.run(&[
            "wait",
            "--for=condition=Established",
            "crd",
            "--all",
            "--timeout=300s",
        ])
        .await?;
        self.apply(&[&rest]).await?;
        let applied_at = micros_now();
        self.run(&[
            "wait",
            "--for=condition=Available",
            "deployment",
            "--all",
            "-n",
            NS,
            "--timeout=600s",
        ])
        .await?;
        let to = micros_now();
        Ok(KubectlInstall {
            applied: since(from, applied_at),
            ready: since(from, to),
            from,
            to,
        })
    }

    /// The largest peak RSS of its processes so far, in KiB.
    pub fn peak(&self) -> u64 {
        self.peak_kib.load(Ordering::Relaxed)
    }
}

/// kubectl's requests: its user agent is `kubectl/...`.
pub fn is_kubectl(agent: &str) -> bool {
    agent.starts_with("kubectl")
}

// ---------------------------------------------------------------------------------------------------
// Report

/// The 1-, 5- and 15-minute load averages.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(0, |n| n.get())
}

/// "median (min–max)" of the values.
pub fn stat<T: PartialOrd + Copy>(mut values: Vec<T>, show: impl Fn(T) -> String) -> String {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    match values.as_slice() {
        [] => "–".into(),
        [one] => show(*one),
        all => format!(
            "{} ({}–{})",
            show(all[all.len() / 2]),
            show(all[0]),
            show(all[all.len() - 1])
        ),
    }
}

pub fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

pub fn count(n: usize) -> String {
    n.to_string()
}

pub fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}
