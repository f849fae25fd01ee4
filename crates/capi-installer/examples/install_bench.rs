//! The installer benchmarks of issue 4: measured here, never asserted in tests.
//!
//! ```text
//! cargo run --release -p capi-installer --example install_bench -- [RUNS] [IDLE_SECONDS]
//! ```
//!
//! Every run gets a fresh control plane with workloads (KWOK), `Infrastructure/cluster` with platform
//! AWS and the release payload (core CRD manifest, core and aws transport ConfigMaps), set up as the
//! integration tests do. Then, RUNS times each (default 3):
//!
//! 1. **installer**: the installer in this process, with the installer's user agent. From its start until
//!    the last write of a rendered object (audit log) and until `ClusterOperator/cluster-api` reports
//!    Available=True, Progressing=False; its requests during the install and during IDLE_SECONDS (default
//!    60) after that, by verb.
//! 2. **kubectl**: `kubectl apply --server-side` of the same rendered objects (CRDs first, wait for
//!    Established, then the rest), until applied and until every Deployment is Available. kubectl does not
//!    order webhooks after the Deployments; the installer does, so it waits where kubectl does not.
//! 3. **process**: the release binary `capi-installer run` (built first, outside the measurement), until
//!    Available, then its VmRSS and VmHWM from /proc; killed afterwards.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use capi_installer_controller::desired::{self, Desired};
use capi_installer_controller::prepare::{self, RenderContext};
use capi_installer_controller::source::{self, SourceId, configmap};
use capi_installer_controller::{Installer, InstallerConfig, Metrics, user_agent};
use control_plane::AuditEvent;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, GroupVersionKind};
use kube::discovery::{Discovery, Scope};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

const NS: &str = "openshift-cluster-api";
const RELEASE_VERSION: &str = "4.21.0-bench";
const CRD_FILE: &str = "transport-configmaps/0000_30_cluster-api_04_crd.core-cluster-api.yaml";
const CONFIGMAPS: [&str; 2] = [
    "transport-configmaps/0000_30_cluster-api_04_cm.core-cluster-api.yaml",
    "transport-configmaps/0000_30_cluster-api_04_cm.infrastructure-aws.yaml",
];
const READY_TIMEOUT: Duration = Duration::from_secs(600);
/// How often readiness is polled (by the admin client, so it does not count as installer traffic).
const POLL: Duration = Duration::from_millis(100);

#[tokio::main]
async fn main() -> Result<()> {
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
    for rel in std::iter::once(CRD_FILE).chain(CONFIGMAPS) {
        if control_plane::shared_fixture(rel).is_none() {
            bail!("fixture {rel} is missing");
        }
    }
    // Outside every measurement: the Go binaries, the installer binary, the rendered objects.
    let bin_dir = control_plane::bin_dir()?;
    let installer_bin = build_installer_binary()?;
    let rendered = render_objects()?;
    println!(
        "machine: {} cores, load average at start {}",
        cores(),
        loadavg()
    );
    println!("rendered objects (core + aws): {}", rendered.len());

    let mut installer = Vec::new();
    for run in 1..=runs {
        let r = installer_run(&rendered, idle).await?;
        println!("installer run {run}: {r:?}");
        installer.push(r);
    }
    let mut kubectl = Vec::new();
    for run in 1..=runs {
        let r = kubectl_run(&rendered, &bin_dir).await?;
        println!("kubectl run {run}: {r:?}");
        kubectl.push(r);
    }
    let mut process = Vec::new();
    for run in 1..=runs {
        let r = process_run(&installer_bin).await?;
        println!("process run {run}: {r:?}");
        process.push(r);
    }
    println!();
    print_tables(runs, idle, rendered.len(), &installer, &kubectl, &process);
    println!("\nload average at end {}", loadavg());
    Ok(())
}

// ---------------------------------------------------------------------------------------------------
// Setup: the integration tests' own (tests/support/mod.rs)

#[path = "../tests/support/mod.rs"]
mod support;

use support::{Env, ar, images, read_documents};

/// A fresh control plane with workloads, AWS and the release payload, before any installer runs.
async fn fresh_env() -> Result<Env> {
    let env = Env::start(true).await;
    support::set_platform(&env.admin, "AWS").await;
    support::load_payload(
        &env.admin,
        &CONFIGMAPS.map(|c| c.trim_start_matches("transport-configmaps/")),
    )
    .await
    .context("fixtures")?;
    Ok(env)
}

fn fixture(relative: &str) -> Result<PathBuf> {
    support::fixture(relative).with_context(|| format!("fixture {relative}"))
}

/// A client of `config` that sends the installer's user agent, so that the audit log tells its
/// requests apart.
fn installer_client(config: kube::Config) -> Result<Client> {
    Ok(Env::installer_client(config))
}

/// Available=True and Progressing=False on `ClusterOperator/cluster-api`.
async fn operator_ready(client: &Client) -> bool {
    let api: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ar(
            "config.openshift.io",
            "v1",
            "ClusterOperator",
            "clusteroperators",
        ),
    );
    let Ok(Some(co)) = api.get_opt("cluster-api").await else {
        return false;
    };
    let conditions = co.data["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let is = |t: &str, v: &str| {
        conditions
            .iter()
            .any(|c| c["type"] == t && c["status"] == v)
    };
    is("Available", "True") && is("Progressing", "False")
}

async fn wait_operator_ready(client: &Client) -> Result<()> {
    let deadline = Instant::now() + READY_TIMEOUT;
    while !operator_ready(client).await {
        if Instant::now() > deadline {
            bail!("ClusterOperator cluster-api not Available after {READY_TIMEOUT:?}");
        }
        tokio::time::sleep(POLL).await;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------------
// Rendering, with the library, as the installer does

/// The objects the installer applies for AWS, rendered from the fixtures' transport ConfigMaps.
fn render_objects() -> Result<Vec<Value>> {
    let docs: Vec<Value> = CONFIGMAPS
        .iter()
        .map(|rel| Ok(read_documents(&fixture(rel)?)))
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .flatten()
        .collect();
    let typed: Vec<ConfigMap> = docs
        .iter()
        .map(|d| serde_json::from_value(d.clone()))
        .collect::<Result<_, _>>()?;
    let status = json!({"platformStatus": {"type": "AWS"}});
    let Desired::Install(wants) = desired::desired(Some(&status), &[]) else {
        bail!("platform AWS has no provider");
    };
    let ctx = RenderContext {
        namespace: NS.into(),
        images: images(),
        substitutions: Default::default(),
        ..Default::default()
    };
    let mut objects = Vec::new();
    let candidates: Vec<_> = typed.iter().filter_map(configmap::candidate).collect();
    for target in source::select(&wants.providers, &candidates, &Default::default()).targets {
        let SourceId::ConfigMap(name) = &target.source.id else {
            bail!(
                "{}: the benchmark reads transport ConfigMaps only",
                target.source.id
            );
        };
        let cm = docs
            .iter()
            .find(|d| d["metadata"]["name"] == name.as_str())
            .with_context(|| format!("ConfigMap {NS}/{name}"))?;
        let payload = configmap::payload(cm)?;
        for input in prepare::render(&payload, &target, &ctx)?.inputs {
            objects.push(serde_json::to_value(&input.object)?);
        }
    }
    Ok(objects)
}

fn is_crd(o: &Value) -> bool {
    o["kind"] == "CustomResourceDefinition"
}

/// (plural resource, namespace, name) of each rendered object, as the audit log names them.
async fn audit_keys(
    client: &Client,
    objects: &[Value],
) -> Result<BTreeSet<(String, String, String)>> {
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
// Audit log

fn micros_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

fn at(e: &AuditEvent) -> i64 {
    e.stage_timestamp.0.as_microsecond()
}

fn since(from: i64, to: i64) -> Duration {
    Duration::from_micros(to.saturating_sub(from).max(0) as u64)
}

/// Requests (one per audit ID) whose agent matches, in `[from, to)`, counted by verb.
fn requests_by_verb(
    events: &[AuditEvent],
    agent: impl Fn(&str) -> bool,
    from: i64,
    to: i64,
) -> BTreeMap<String, usize> {
    let mut seen = BTreeSet::new();
    let mut by_verb = BTreeMap::new();
    for e in events {
        if e.user_agent.as_deref().is_some_and(&agent)
            && (from..to).contains(&at(e))
            && seen.insert(e.audit_id.clone())
        {
            *by_verb.entry(e.verb.clone()).or_insert(0) += 1;
        }
    }
    by_verb
}

fn describe(e: &AuditEvent) -> String {
    let o = e.object_ref.clone().unwrap_or_default();
    format!(
        "{} {}/{}{} {}/{}",
        e.verb,
        o.api_group,
        o.resource,
        o.subresource.map(|s| format!("/{s}")).unwrap_or_default(),
        o.namespace.unwrap_or_default(),
        o.name.unwrap_or_default(),
    )
}

#[derive(Debug, Default, Clone)]
struct Requests(BTreeMap<String, usize>);

impl Requests {
    fn reads(&self) -> usize {
        self.count(|v| matches!(v, "get" | "list" | "watch"))
    }
    fn writes(&self) -> usize {
        self.count(|v| {
            matches!(
                v,
                "create" | "update" | "patch" | "delete" | "deletecollection"
            )
        })
    }
    fn count(&self, f: impl Fn(&str) -> bool) -> usize {
        self.0.iter().filter(|(v, _)| f(v)).map(|(_, n)| n).sum()
    }
    fn verbs(&self) -> String {
        let parts: Vec<String> = self.0.iter().map(|(v, n)| format!("{v} {n}")).collect();
        parts.join(", ")
    }
}

// ---------------------------------------------------------------------------------------------------
// 1 + 3: the installer in this process

#[derive(Debug)]
struct InstallerRun {
    load: String,
    /// Start until the last write of a rendered object.
    applied: Duration,
    /// Start until the ClusterOperator reports Available=True, Progressing=False.
    ready: Duration,
    /// Rendered objects the installer wrote at least once, of all rendered.
    objects_written: usize,
    install: Requests,
    idle: Requests,
    idle_requests: Vec<String>,
    /// Writes until ready by verb and resource.
    install_writes: Requests,
}

/// The installer on a runtime of its own: the installer spawns its watches as tasks that outlive the
/// `run` future, and only dropping their runtime ends them before the next control plane starts.
struct InstallerThread {
    stop: tokio::sync::oneshot::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl InstallerThread {
    fn start(config: kube::Config, installer: InstallerConfig) -> InstallerThread {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .expect("tokio runtime");
            runtime.block_on(async move {
                let client = installer_client(config).expect("installer client");
                let installer = Installer::new(
                    client,
                    installer,
                    std::sync::Arc::new(Metrics::unregistered()),
                );
                installer
                    .run(async {
                        let _ = stopped.await;
                    })
                    .await;
            });
            runtime.shutdown_timeout(Duration::from_secs(5));
        });
        InstallerThread { stop, thread }
    }

    /// Graceful stop (the current reconcile finishes), then every task of the installer is dropped.
    fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.thread.join();
    }
}

async fn installer_run(rendered: &[Value], idle: Duration) -> Result<InstallerRun> {
    let env = fresh_env().await?;
    let load = loadavg();
    let config = InstallerConfig {
        images: images(),
        release_version: Some(RELEASE_VERSION.into()),
        deployment_timeout: Duration::from_secs(300),
        resync: Duration::from_secs(600),
        ..Default::default()
    };

    let start = micros_now();
    let installer = InstallerThread::start(env.cp.admin_config(), config);
    let waited = wait_operator_ready(&env.admin).await;
    let ready_at = micros_now();
    if let Err(e) = waited {
        installer.stop();
        return Err(e);
    }
    tokio::time::sleep(idle).await;
    let idle_end = micros_now();
    installer.stop();

    let keys = audit_keys(&env.admin, rendered).await?;
    let events = env.cp.audit_events()?;
    let ua = user_agent();
    let ours = |a: &str| a == ua;
    let mut written = BTreeSet::new();
    let mut last_write = start;
    for e in events.iter().filter(|e| {
        e.is_write() && e.user_agent.as_deref() == Some(ua.as_str()) && at(e) < ready_at
    }) {
        let Some(o) = &e.object_ref else { continue };
        let key = (
            o.resource.clone(),
            o.namespace.clone().unwrap_or_default(),
            o.name.clone().unwrap_or_default(),
        );
        if o.subresource.is_none() && keys.contains(&key) {
            written.insert(key);
            last_write = last_write.max(at(e));
        }
    }
    let idle_requests = events
        .iter()
        .filter(|e| {
            e.user_agent.as_deref() == Some(ua.as_str()) && (ready_at..idle_end).contains(&at(e))
        })
        .map(describe)
        .collect();
    let mut install_writes = BTreeMap::new();
    for e in events.iter().filter(|e| {
        e.is_write()
            && e.user_agent.as_deref() == Some(ua.as_str())
            && (start..ready_at).contains(&at(e))
    }) {
        let o = e.object_ref.clone().unwrap_or_default();
        let what = format!(
            "{} {}{}",
            e.verb,
            o.resource,
            o.subresource.map(|s| format!("/{s}")).unwrap_or_default()
        );
        *install_writes.entry(what).or_insert(0) += 1;
    }
    Ok(InstallerRun {
        load,
        applied: since(start, last_write),
        ready: since(start, ready_at),
        objects_written: written.len(),
        install: Requests(requests_by_verb(&events, ours, start, ready_at)),
        idle: Requests(requests_by_verb(&events, ours, ready_at, idle_end)),
        idle_requests,
        install_writes: Requests(install_writes),
    })
}

// ---------------------------------------------------------------------------------------------------
// 2: kubectl apply --server-side of the same objects

#[derive(Debug)]
struct KubectlRun {
    load: String,
    /// Start until the second `kubectl apply` returned (CRDs applied, Established, the rest applied).
    applied: Duration,
    /// Start until `kubectl wait --for=condition=Available deployment --all` returned.
    ready: Duration,
    requests: Requests,
}

async fn kubectl_run(rendered: &[Value], bin_dir: &Path) -> Result<KubectlRun> {
    let env = fresh_env().await?;
    let load = loadavg();
    let dir = tempfile::tempdir()?;
    let write = |name: &str, objects: Vec<&Value>| -> Result<PathBuf> {
        let path = dir.path().join(name);
        let docs: Vec<String> = objects
            .into_iter()
            .map(serde_json::to_string)
            .collect::<Result<_, _>>()?;
        std::fs::write(&path, docs.join("\n---\n"))?;
        Ok(path)
    };
    let crds = write("crds.yaml", rendered.iter().filter(|o| is_crd(o)).collect())?;
    let rest = write(
        "rest.yaml",
        rendered.iter().filter(|o| !is_crd(o)).collect(),
    )?;
    let kubectl = Kubectl {
        bin: bin_dir.join("kubectl"),
        kubeconfig: env.cp.kubeconfig_path(),
        // A fresh discovery cache per run: kubectl starts as cold as the installer does.
        cache: dir.path().join("kube-cache"),
    };

    let start = micros_now();
    kubectl.apply(&crds).await?;
    kubectl
        .run(&[
            "wait",
            "--for=condition=Established",
            "crd",
            "--all",
            "--timeout=300s",
        ])
        .await?;
    kubectl.apply(&rest).await?;
    let applied_at = micros_now();
    kubectl
        .run(&[
            "wait",
            "--for=condition=Available",
            "deployment",
            "--all",
            "-n",
            NS,
            "--timeout=600s",
        ])
        .await?;
    let ready_at = micros_now();
    let events = env.cp.audit_events()?;
    Ok(KubectlRun {
        load,
        applied: since(start, applied_at),
        ready: since(start, ready_at),
        requests: Requests(requests_by_verb(
            &events,
            |a| a.starts_with("kubectl"),
            start,
            ready_at,
        )),
    })
}

struct Kubectl {
    bin: PathBuf,
    kubeconfig: PathBuf,
    cache: PathBuf,
}

impl Kubectl {
    async fn run(&self, args: &[&str]) -> Result<()> {
        let out = tokio::process::Command::new(&self.bin)
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
        Ok(())
    }

    async fn apply(&self, file: &Path) -> Result<()> {
        let file = file.display().to_string();
        self.run(&[
            "apply",
            "--server-side",
            "--field-manager=bench",
            // The payload's CRDs belong to cluster-version-operator; the installer adopts them (its
            // adoptable managers), kubectl has to force to do the same.
            "--force-conflicts",
            "-f",
            &file,
        ])
        .await
    }
}

// ---------------------------------------------------------------------------------------------------
// 4: the release binary, for its memory

#[derive(Debug)]
struct ProcessRun {
    load: String,
    /// Process start until the ClusterOperator reports Available=True, Progressing=False.
    ready: Duration,
    rss_kib: u64,
    hwm_kib: u64,
}

/// `cargo build --release` of the binary (a no-op when fresh), into the target folder of this example.
fn build_installer_binary() -> Result<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = std::process::Command::new(cargo)
        .args([
            "build",
            "--release",
            "-p",
            "capi-installer",
            "--bin",
            "capi-installer",
        ])
        .status()
        .context("running cargo build")?;
    if !status.success() {
        bail!("cargo build of the capi-installer binary: {status}");
    }
    // <target>/release/examples/install_bench → <target>/release/capi-installer
    let exe = std::env::current_exe()?;
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .context("folder of this example")?
        .join("capi-installer");
    if !bin.exists() {
        bail!("{} is missing after the build", bin.display());
    }
    Ok(bin)
}

async fn process_run(bin: &Path) -> Result<ProcessRun> {
    let env = fresh_env().await?;
    let load = loadavg();
    let dir = tempfile::tempdir()?;
    let images_json = dir.path().join("images.json");
    std::fs::write(&images_json, serde_json::to_string(&images())?)?;
    let log = dir.path().join("installer.log");

    let start = Instant::now();
    let mut child = tokio::process::Command::new(bin)
        .arg("run")
        .arg("--kubeconfig")
        .arg(env.cp.kubeconfig_path())
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
        .context("starting capi-installer run")?;
    let pid = child.id().context("pid of capi-installer")?;
    let waited = wait_operator_ready(&env.admin).await;
    let ready = start.elapsed();
    let memory = proc_status(pid);
    let _ = child.kill().await;
    if let Err(e) = waited {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        bail!("{e}\ninstaller log:\n{text}");
    }
    let (rss_kib, hwm_kib) = memory?;
    Ok(ProcessRun {
        load,
        ready,
        rss_kib,
        hwm_kib,
    })
}

/// (VmRSS, VmHWM) in KiB.
fn proc_status(pid: u32) -> Result<(u64, u64)> {
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

// ---------------------------------------------------------------------------------------------------
// Report

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(0, |n| n.get())
}

/// "median (min–max)" of the values.
fn stat<T: PartialOrd + Copy>(mut values: Vec<T>, show: impl Fn(T) -> String) -> String {
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

fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

fn count(n: usize) -> String {
    n.to_string()
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

fn print_tables(
    runs: usize,
    idle: Duration,
    rendered: usize,
    installer: &[InstallerRun],
    kubectl: &[KubectlRun],
    process: &[ProcessRun],
) {
    let col = |f: &dyn Fn(&InstallerRun) -> usize| installer.iter().map(f).collect::<Vec<_>>();
    println!(
        "median (min–max) of {runs} runs, each on a fresh control plane with KWOK, platform AWS\n"
    );
    println!("| measure | installer (in-process) | kubectl apply --server-side |");
    println!("|---|---|---|");
    println!(
        "| start → every object applied | {} | {} |",
        stat(installer.iter().map(|r| r.applied).collect(), secs),
        stat(kubectl.iter().map(|r| r.applied).collect(), secs)
    );
    println!(
        "| start → ready (ClusterOperator Available / Deployments Available) | {} | {} |",
        stat(installer.iter().map(|r| r.ready).collect(), secs),
        stat(kubectl.iter().map(|r| r.ready).collect(), secs)
    );
    println!(
        "| requests until ready: reads | {} | {} |",
        stat(col(&|r| r.install.reads()), count),
        stat(kubectl.iter().map(|r| r.requests.reads()).collect(), count)
    );
    println!(
        "| requests until ready: writes | {} | {} |",
        stat(col(&|r| r.install.writes()), count),
        stat(kubectl.iter().map(|r| r.requests.writes()).collect(), count)
    );
    println!(
        "| rendered objects written (of {rendered}) | {} | all (one apply per object) |",
        stat(col(&|r| r.objects_written), count)
    );
    println!(
        "| requests in the {} s after ready: reads | {} | – |",
        idle.as_secs(),
        stat(col(&|r| r.idle.reads()), count)
    );
    println!(
        "| requests in the {} s after ready: writes | {} | – |",
        idle.as_secs(),
        stat(col(&|r| r.idle.writes()), count)
    );
    println!();
    println!("| `capi-installer run` (release binary) | value |");
    println!("|---|---|");
    println!(
        "| process start → ClusterOperator Available | {} |",
        stat(process.iter().map(|r| r.ready).collect(), secs)
    );
    println!(
        "| VmRSS once Available | {} |",
        stat(process.iter().map(|r| r.rss_kib).collect(), mib)
    );
    println!(
        "| VmHWM (peak RSS) once Available | {} |",
        stat(process.iter().map(|r| r.hwm_kib).collect(), mib)
    );
    println!();
    println!("per run:");
    for (i, r) in installer.iter().enumerate() {
        println!(
            "- installer {}: load {}; until ready {} (writes: {}); idle: {}",
            i + 1,
            r.load,
            r.install.verbs(),
            r.install_writes.verbs(),
            r.idle_requests.join("; ")
        );
    }
    for (i, r) in kubectl.iter().enumerate() {
        println!(
            "- kubectl {}: load {}; until ready {}",
            i + 1,
            r.load,
            r.requests.verbs()
        );
    }
    for (i, r) in process.iter().enumerate() {
        println!("- process {}: load {}", i + 1, r.load);
    }
}
