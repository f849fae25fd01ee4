//! The installer's benchmarks (issues 4 and 13): measured here, never asserted in tests.
//!
//! ```text
//! cargo run --release -p capi-installer --example install_bench -- [RUNS] [IDLE_SECONDS]
//! ```
//!
//! Each run (default 3) uses two fresh control planes with workloads (KWOK), each with
//! `Infrastructure/cluster` on platform AWS and the release payload (core CRD manifest, core and aws
//! transport ConfigMaps), set up as the integration tests do:
//!
//! 1. **installer**: the release binary `capi-installer run` (built first, outside the measurement), the
//!    whole sequence on one control plane:
//!    - *cold install*: from the process start until the last write of a rendered object (audit log),
//!      and until `ClusterOperator/cluster-api` reports Available=True, Progressing=False; its requests
//!      until then, by verb and resource (matched by its user agent; server-side dry-runs apart); VmRSS and
//!      VmHWM from /proc 3 s later;
//!    - *idle*: its requests during IDLE_SECONDS (default 60) after that, and VmRSS and VmHWM at the end;
//!    - *ConfigMap edit → applied*: the aws ConfigMap is replaced by an upgrade (a RoleBinding dropped,
//!      `--v=4` added to the Deployment); from that write until the installer's last write of the change
//!      (the Deployment patched, the RoleBinding deleted; audit log);
//!    - *drift → repaired*: the aws Deployment is deleted; from the delete until the installer's write
//!      that creates it again (audit log);
//! 2. **kubectl**: `kubectl apply --server-side` of the same rendered objects (CRDs first, wait for
//!    Established, then the rest), until applied and until every Deployment is Available; then the
//!    rendered upgrade, applied the same way (one `kubectl apply` of both files), until it returns.
//!    kubectl does not order webhooks after the Deployments (the installer does, so it waits where
//!    kubectl does not), does not prune what the upgrade dropped, and nothing repairs drift. Each
//!    kubectl runs under GNU time (`/usr/bin/time`, where present) for its peak RSS.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use capi_installer_controller::desired::{self, Desired};
use capi_installer_controller::prepare::{self, RenderContext};
use capi_installer_controller::source::{self, SourceId, configmap};
use capi_installer_controller::user_agent;
use control_plane::AuditEvent;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, DynamicObject, GroupVersionKind};
use kube::discovery::{Discovery, Scope};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

const NS: &str = test_support::NS;
const RELEASE_VERSION: &str = "4.21.0-bench";
const CRD_FILE: &str = "transport-configmaps/0000_30_cluster-api_04_crd.core-cluster-api.yaml";
const CONFIGMAPS: [&str; 2] = [
    "transport-configmaps/0000_30_cluster-api_04_cm.core-cluster-api.yaml",
    "transport-configmaps/0000_30_cluster-api_04_cm.infrastructure-aws.yaml",
];
const READY_TIMEOUT: Duration = Duration::from_secs(600);
/// How long after a state is reached memory is read: the reconcile that got there has ended.
const SETTLE: Duration = Duration::from_secs(3);
/// How often state is polled (by the admin client, so it does not count as installer traffic).
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
    let installer_bin = release_binary("capi-installer", "capi-installer")?;
    let upgrade = test_support::aws_upgrade(false);
    let rendered = render_objects(None)?;
    let upgraded = render_objects(Some(&upgrade.components))?;
    println!(
        "machine: {} cores, load average at start {}",
        cores(),
        loadavg()
    );
    println!(
        "rendered objects (core + aws): {}, after the upgrade: {}",
        rendered.len(),
        upgraded.len()
    );

    let mut installer = Vec::new();
    let mut kubectl = Vec::new();
    for run in 1..=runs {
        let r = installer_run(&installer_bin, &rendered, &upgrade, idle).await?;
        println!("installer run {run}: {r:?}");
        installer.push(r);
        let r = kubectl_run(&rendered, &upgraded, &bin_dir).await?;
        println!("kubectl run {run}: {r:?}");
        kubectl.push(r);
    }
    println!();
    print_tables(runs, idle, rendered.len(), &installer, &kubectl);
    println!("\nload average at end {}", loadavg());
    Ok(())
}

// ---------------------------------------------------------------------------------------------------
// Setup: the integration tests' own (crate test-support)

use test_support::bench::{proc_status, release_binary};
use test_support::{AWS_CM, Env, Upgrade, ar, images, read_documents};

/// A fresh control plane with workloads, AWS and the release payload, before any installer runs.
async fn fresh_env() -> Result<Env> {
    let env = Env::start(true).await;
    test_support::set_platform(&env.admin, "AWS").await;
    test_support::load_payload(
        &env.admin,
        &CONFIGMAPS.map(|c| c.trim_start_matches("transport-configmaps/")),
    )
    .await
    .context("fixtures")?;
    Ok(env)
}

fn fixture(relative: &str) -> Result<PathBuf> {
    test_support::fixture(relative).with_context(|| format!("fixture {relative}"))
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
    wait_for("ClusterOperator cluster-api Available", || async {
        operator_ready(client).await
    })
    .await
}

/// Polls `check` every [`POLL`] until it holds, at most [`READY_TIMEOUT`].
async fn wait_for<F, Fut>(what: &str, check: F) -> Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    test_support::bench::wait_until(READY_TIMEOUT, POLL, what, check).await
}

// ---------------------------------------------------------------------------------------------------
// Rendering, with the library, as the installer does

/// The objects the installer applies for AWS, rendered from the fixtures' transport ConfigMaps (with
/// `aws_components` instead of the aws ConfigMap's, for an upgrade).
fn render_objects(aws_components: Option<&str>) -> Result<Vec<Value>> {
    let mut docs: Vec<Value> = CONFIGMAPS
        .iter()
        .map(|rel| Ok(read_documents(&fixture(rel)?)))
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .flatten()
        .collect();
    if let Some(components) = aws_components {
        let aws = docs
            .iter_mut()
            .find(|d| d["metadata"]["name"] == "aws")
            .context("the aws ConfigMap")?;
        let mut content = capi_manifests::TransportConfigMap::decode(aws)?.content;
        content.components = components.to_string();
        *aws = content.encode()?;
    }
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
            // A server-side dry-run writes nothing: counted apart.
            let verb = if e.is_dry_run() {
                format!("{} (dry-run)", e.verb)
            } else {
                e.verb.clone()
            };
            *by_verb.entry(verb).or_insert(0) += 1;
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
    fn dry_runs(&self) -> usize {
        self.count(|v| v.ends_with("(dry-run)"))
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
// 1: the installer, the release binary, one sequence on one control plane

#[derive(Debug)]
struct InstallerRun {
    load: String,
    /// Process start until the last write of a rendered object.
    applied: Duration,
    /// Process start until the ClusterOperator reports Available=True, Progressing=False.
    ready: Duration,
    /// Rendered objects the installer wrote at least once, of all rendered.
    objects_written: usize,
    install: Requests,
    /// Reads until ready by verb and resource.
    install_reads: Requests,
    /// Writes until ready by verb and resource.
    install_writes: Requests,
    /// (VmRSS, VmHWM) in KiB once Available.
    memory_ready: (u64, u64),
    idle: Requests,
    idle_requests: Vec<String>,
    /// (VmRSS, VmHWM) in KiB at the end of the idle time.
    memory_idle: (u64, u64),
    /// The ConfigMap write until the installer's last write of the change.
    edit_applied: Duration,
    edit_writes: Vec<String>,
    /// The Deployment's deletion until the installer's write that creates it again.
    drift_repaired: Duration,
    /// (VmRSS, VmHWM) in KiB at the end of the sequence.
    memory_end: (u64, u64),
}

/// `capi-installer run` against `env`, killed when dropped.
fn start_installer(bin: &Path, env: &Env, dir: &Path) -> Result<tokio::process::Child> {
    let images_json = dir.join("images.json");
    std::fs::write(&images_json, serde_json::to_string(&images())?)?;
    let log = dir.join("installer.log");
    tokio::process::Command::new(bin)
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
        .context("starting capi-installer run")
}

async fn installer_run(
    bin: &Path,
    rendered: &[Value],
    upgrade: &Upgrade,
    idle: Duration,
) -> Result<InstallerRun> {
    let env = fresh_env().await?;
    let load = loadavg();
    let dir = tempfile::tempdir()?;
    let ua = user_agent();
    let ours = |a: &str| a == ua;

    // Cold install.
    let start = micros_now();
    let mut child = start_installer(bin, &env, dir.path())?;
    let pid = child.id().context("pid of capi-installer")?;
    let fail = |e: anyhow::Error| {
        let text = std::fs::read_to_string(dir.path().join("installer.log")).unwrap_or_default();
        e.context(format!("installer log:\n{text}"))
    };
    wait_operator_ready(&env.admin).await.map_err(fail)?;
    let ready_at = micros_now();
    // Once the reconcile that reported Available has ended (and returned what it freed).
    tokio::time::sleep(SETTLE).await;
    let memory_ready = proc_status(pid)?;

    // Idle.
    tokio::time::sleep(idle).await;
    let idle_end = micros_now();
    let memory_idle = proc_status(pid)?;

    // ConfigMap edit → applied.
    let deployments: Api<Deployment> = Api::namespaced(env.admin.clone(), NS);
    let rolebindings = test_support::api_for(
        &env.admin,
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        Some(NS),
    )
    .await;
    let edit_at = micros_now();
    test_support::put_components(&env.admin, AWS_CM, &upgrade.components).await;
    wait_for("the upgrade applied", || async {
        let args = deployments
            .get(&upgrade.deployment)
            .await
            .ok()
            .and_then(|d| d.spec?.template.spec?.containers[0].args.clone())
            .unwrap_or_default();
        let pruned = rolebindings
            .get_opt(&upgrade.dropped_rolebinding)
            .await
            .is_ok_and(|r| r.is_none());
        args.contains(&"--v=4".to_string()) && pruned
    })
    .await
    .map_err(fail)?;
    wait_operator_ready(&env.admin).await.map_err(fail)?;
    let edit_end = micros_now();

    // Drift → repaired.
    let old_uid = deployments
        .get(&upgrade.deployment)
        .await?
        .metadata
        .uid
        .unwrap_or_default();
    let drift_at = micros_now();
    deployments
        .delete(&upgrade.deployment, &DeleteParams::default())
        .await?;
    wait_for("the deleted Deployment recreated", || async {
        deployments
            .get_opt(&upgrade.deployment)
            .await
            .ok()
            .flatten()
            .is_some_and(|d| d.metadata.uid.as_deref() != Some(old_uid.as_str()))
    })
    .await
    .map_err(fail)?;
    wait_operator_ready(&env.admin).await.map_err(fail)?;
    tokio::time::sleep(SETTLE).await;
    let memory_end = proc_status(pid)?;
    let _ = child.kill().await;

    let keys = audit_keys(&env.admin, rendered).await?;
    let events = env.cp.audit_events()?;
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
    let install = Requests(requests_by_verb(&events, ours, start, ready_at));
    let idle_verbs = Requests(requests_by_verb(&events, ours, ready_at, idle_end));
    let ua = ua.as_str();
    let events = &events;
    let installer_events = |from: i64, to: i64| {
        events
            .iter()
            .filter(move |e| e.user_agent.as_deref() == Some(ua) && (from..to).contains(&at(e)))
    };
    let idle_requests = installer_events(ready_at, idle_end).map(describe).collect();
    let by_resource = |from: i64, to: i64, writes: bool| {
        let mut seen = BTreeSet::new();
        let mut out = BTreeMap::new();
        for e in installer_events(from, to) {
            if e.is_write() == writes && seen.insert(e.audit_id.clone()) {
                *out.entry(what(e)).or_insert(0) += 1;
            }
        }
        Requests(out)
    };
    // The change's writes: the objects of the upgrade (not Events, status, records).
    let is_change = |e: &&AuditEvent| {
        e.object_ref.as_ref().is_some_and(|o| {
            o.subresource.is_none()
                && matches!(o.resource.as_str(), "deployments" | "rolebindings")
                && [&upgrade.deployment, &upgrade.dropped_rolebinding]
                    .iter()
                    .any(|n| o.name.as_deref() == Some(n.as_str()))
        })
    };
    let edit_writes: Vec<&AuditEvent> = installer_events(edit_at, edit_end)
        .filter(|e| e.is_write())
        .filter(is_change)
        .collect();
    let edit_last = edit_writes
        .iter()
        .map(|e| at(e))
        .max()
        .context("no write of the upgrade")?;
    let edit_written = events
        .iter()
        .find(|e| {
            (edit_at..edit_end).contains(&at(e))
                && e.is_write()
                && e.object_ref
                    .as_ref()
                    .is_some_and(|o| o.resource == "configmaps" && o.name.as_deref() == Some("aws"))
        })
        .map(at)
        .context("the ConfigMap write in the audit log")?;
    let deleted = events
        .iter()
        .find(|e| {
            at(e) >= drift_at
                && e.verb == "delete"
                && e.object_ref.as_ref().is_some_and(|o| {
                    o.resource == "deployments" && o.name.as_deref() == Some(&upgrade.deployment)
                })
        })
        .map(at)
        .context("the Deployment's deletion in the audit log")?;
    let repaired = installer_events(deleted, i64::MAX)
        .find(|e| {
            e.is_write()
                && e.object_ref.as_ref().is_some_and(|o| {
                    o.resource == "deployments"
                        && o.subresource.is_none()
                        && o.name.as_deref() == Some(&upgrade.deployment)
                })
        })
        .map(at)
        .context("the installer's repair in the audit log")?;
    Ok(InstallerRun {
        load,
        applied: since(start, last_write),
        ready: since(start, ready_at),
        objects_written: written.len(),
        install,
        install_reads: by_resource(start, ready_at, false),
        install_writes: by_resource(start, ready_at, true),
        memory_ready,
        idle: idle_verbs,
        idle_requests,
        memory_idle,
        edit_applied: since(edit_written, edit_last),
        edit_writes: edit_writes.into_iter().map(describe).collect(),
        drift_repaired: since(deleted, repaired),
        memory_end,
    })
}

/// `verb resource[/subresource]`.
fn what(e: &AuditEvent) -> String {
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
    /// `kubectl apply` of the upgrade, until it returned.
    upgrade_applied: Duration,
    upgrade_requests: Requests,
    /// The peak RSS of the largest kubectl process of the run, in KiB (GNU time's `%M`; 0 without it).
    peak_kib: u64,
}

async fn kubectl_run(rendered: &[Value], upgraded: &[Value], bin_dir: &Path) -> Result<KubectlRun> {
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
        peak_kib: AtomicU64::new(0),
    };

    let start = micros_now();
    kubectl.apply(&[&crds]).await?;
    kubectl
        .run(&[
            "wait",
            "--for=condition=Established",
            "crd",
            "--all",
            "--timeout=300s",
        ])
        .await?;
    kubectl.apply(&[&rest]).await?;
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

    let crds2 = write(
        "crds2.yaml",
        upgraded.iter().filter(|o| is_crd(o)).collect(),
    )?;
    let rest2 = write(
        "rest2.yaml",
        upgraded.iter().filter(|o| !is_crd(o)).collect(),
    )?;
    let upgrade_start = micros_now();
    kubectl.apply(&[&crds2, &rest2]).await?;
    let upgrade_end = micros_now();
    let events = env.cp.audit_events()?;
    let kubectl_agent = |a: &str| a.starts_with("kubectl");
    Ok(KubectlRun {
        load,
        applied: since(start, applied_at),
        ready: since(start, ready_at),
        requests: Requests(requests_by_verb(&events, kubectl_agent, start, ready_at)),
        upgrade_applied: since(upgrade_start, upgrade_end),
        upgrade_requests: Requests(requests_by_verb(
            &events,
            kubectl_agent,
            upgrade_start,
            upgrade_end + 1,
        )),
        peak_kib: kubectl.peak_kib.load(Ordering::Relaxed),
    })
}

struct Kubectl {
    bin: PathBuf,
    kubeconfig: PathBuf,
    cache: PathBuf,
    /// The largest peak RSS of the kubectl processes so far, in KiB.
    peak_kib: AtomicU64,
}

/// GNU time, which reports a child's peak RSS; kubectl runs without it where it is missing.
const GNU_TIME: &str = "/usr/bin/time";
const MAXRSS: &str = "capi-bench-maxrss ";

impl Kubectl {
    async fn run(&self, args: &[&str]) -> Result<()> {
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

    async fn apply(&self, files: &[&Path]) -> Result<()> {
        let files: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        let mut args = vec![
            "apply",
            "--server-side",
            "--field-manager=bench",
            // The payload's CRDs belong to cluster-version-operator; the installer adopts them (its
            // adoptable managers), kubectl has to force to do the same.
            "--force-conflicts",
        ];
        for f in &files {
            args.extend(["-f", f.as_str()]);
        }
        self.run(&args).await
    }
}

// ---------------------------------------------------------------------------------------------------
// The release binary

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
) {
    let col = |f: &dyn Fn(&InstallerRun) -> usize| installer.iter().map(f).collect::<Vec<_>>();
    let kcol = |f: &dyn Fn(&KubectlRun) -> usize| kubectl.iter().map(f).collect::<Vec<_>>();
    let dur = |f: &dyn Fn(&InstallerRun) -> Duration| stat(installer.iter().map(f).collect(), secs);
    let kdur = |f: &dyn Fn(&KubectlRun) -> Duration| stat(kubectl.iter().map(f).collect(), secs);
    let mem = |f: &dyn Fn(&InstallerRun) -> u64| stat(installer.iter().map(f).collect(), mib);
    let kmem = stat(kubectl.iter().map(|r| r.peak_kib).collect(), mib);
    println!(
        "median (min–max) of {runs} runs; each run: a fresh control plane with KWOK and platform AWS for \
         the installer's whole sequence, another for kubectl's\n"
    );
    println!("| measure | `capi-installer run` | `kubectl apply --server-side` |");
    println!("|---|---|---|");
    println!(
        "| cold install: start → every object applied | {} | {} |",
        dur(&|r| r.applied),
        kdur(&|r| r.applied)
    );
    println!(
        "| cold install: start → ready (ClusterOperator Available / Deployments Available) | {} | {} |",
        dur(&|r| r.ready),
        kdur(&|r| r.ready)
    );
    println!(
        "| cold install: requests until ready, reads | {} | {} |",
        stat(col(&|r| r.install.reads()), count),
        stat(kcol(&|r| r.requests.reads()), count)
    );
    println!(
        "| cold install: requests until ready, writes | {} | {} |",
        stat(col(&|r| r.install.writes()), count),
        stat(kcol(&|r| r.requests.writes()), count)
    );
    println!(
        "| cold install: server-side dry-runs until ready | {} | 0 |",
        stat(col(&|r| r.install.dry_runs()), count)
    );
    println!(
        "| cold install: rendered objects written (of {rendered}) | {} | all (one apply per object) |",
        stat(col(&|r| r.objects_written), count)
    );
    println!(
        "| idle {} s after ready: reads | {} | – (not running) |",
        idle.as_secs(),
        stat(col(&|r| r.idle.reads()), count)
    );
    println!(
        "| idle {} s after ready: writes | {} | – |",
        idle.as_secs(),
        stat(col(&|r| r.idle.writes()), count)
    );
    println!(
        "| ConfigMap edit → applied (aws upgrade: an argument, a RoleBinding dropped) | {} | {} (`kubectl apply` of the upgrade; does not prune) |",
        dur(&|r| r.edit_applied),
        kdur(&|r| r.upgrade_applied)
    );
    println!(
        "| drift → repaired (aws Deployment deleted) | {} | – (nothing watches) |",
        dur(&|r| r.drift_repaired)
    );
    println!(
        "| VmRSS 3 s after Available | {} | – |",
        mem(&|r| r.memory_ready.0)
    );
    println!(
        "| VmRSS after the idle time | {} | – |",
        mem(&|r| r.memory_idle.0)
    );
    println!(
        "| VmRSS 3 s after the edit and the repair | {} | – |",
        mem(&|r| r.memory_end.0)
    );
    println!(
        "| VmHWM (peak RSS) at the end | {} | {kmem} (the largest kubectl process, GNU time's maxrss) |",
        mem(&|r| r.memory_end.1)
    );
    println!();
    println!("per run:");
    for (i, r) in installer.iter().enumerate() {
        println!(
            "- installer {}: load {}; until ready {}; reads: {}; writes: {}; idle: {}; edit: {}",
            i + 1,
            r.load,
            r.install.verbs(),
            r.install_reads.verbs(),
            r.install_writes.verbs(),
            r.idle_requests.join("; "),
            r.edit_writes.join("; ")
        );
    }
    for (i, r) in kubectl.iter().enumerate() {
        println!(
            "- kubectl {}: load {}; until ready {}; upgrade {}",
            i + 1,
            r.load,
            r.requests.verbs(),
            r.upgrade_requests.verbs()
        );
    }
}
