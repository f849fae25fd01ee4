//! The installer's benchmarks (issues 4 and 13): measured here, never asserted in tests.
//!
//! ```text
//! cargo run --release -p capi-benchmarks --example install_bench -- [RUNS] [IDLE_SECONDS]
//! INSTALLER_BIN=/path/to/another/capi-installer target/release/examples/install_bench ...   # a before/after
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
//!      (the Deployment patched, the RoleBinding deleted; audit log); and the installer's CPU from that
//!      write until it is quiet again;
//!    - *drift → repaired*: the aws Deployment is deleted; from the delete until the installer's write
//!      that creates it again (audit log);
//! 2. **kubectl**: `kubectl apply --server-side` of the same rendered objects (CRDs first, wait for
//!    Established, then the rest), until applied and until every Deployment is Available; then the
//!    rendered upgrade, applied the same way (one `kubectl apply` of both files), until it returns.
//!    kubectl does not order webhooks after the Deployments (the installer does, so it waits where
//!    kubectl does not), does not prune what the upgrade dropped, and nothing repairs drift. Each
//!    kubectl runs under GNU time (`/usr/bin/time`, where present) for its peak RSS.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use capi_installer_controller::user_agent;
use control_plane::AuditEvent;
use k8s_openapi::api::apps::v1::Deployment;
use kube::Client;
use kube::api::{Api, DeleteParams};
use serde_json::Value;

use test_support::bench::{
    Kubectl, Requests, at, audit_keys, cores, count, installer_binary, is_kubectl, loadavg, mib,
    micros_now, operator_ready, proc_status, process_cpu, render_objects, requests_by_resource,
    requests_by_verb, secs, since, start_installer, stat, with_installer_log,
};
use test_support::{AWS_CM, Env, Upgrade, describe, read_documents};

const NS: &str = test_support::NS;
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
    let (runs, idle, _) = test_support::bench::bench_start()?;
    for rel in std::iter::once(CRD_FILE).chain(CONFIGMAPS) {
        if control_plane::shared_fixture(rel).is_none() {
            bail!("fixture {rel} is missing");
        }
    }
    // Outside every measurement: the Go binaries, the installer binary, the rendered objects.
    let bin_dir = control_plane::bin_dir()?;
    let installer_bin = installer_binary("INSTALLER_BIN")?;
    let upgrade = test_support::aws_upgrade(false);
    let rendered = render_aws(None)?;
    let upgraded = render_aws(Some(&upgrade.components))?;
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

/// The objects the installer applies for AWS, rendered from the fixtures' transport ConfigMaps (with
/// `aws_components` instead of the aws ConfigMap's, for an upgrade).
fn render_aws(aws_components: Option<&str>) -> Result<Vec<Value>> {
    let mut docs = Vec::new();
    for rel in CONFIGMAPS {
        let path = test_support::fixture(rel).with_context(|| format!("fixture {rel}"))?;
        docs.extend(read_documents(&path));
    }
    if let Some(components) = aws_components {
        let aws = docs
            .iter_mut()
            .find(|d| d["metadata"]["name"] == "aws")
            .context("the aws ConfigMap")?;
        let mut content = capi_manifests::TransportConfigMap::decode(aws)?.content;
        content.components = components.to_string();
        *aws = content.encode()?;
    }
    render_objects(&docs, "AWS", &[])
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
    /// Requests until ready by verb and resource.
    install_by_resource: Requests,
    /// (VmRSS, VmHWM) in KiB once Available.
    memory_ready: (u64, u64),
    idle: Requests,
    idle_requests: Vec<String>,
    /// (VmRSS, VmHWM) in KiB at the end of the idle time.
    memory_idle: (u64, u64),
    /// The ConfigMap write until the installer's last write of the change.
    edit_applied: Duration,
    edit_writes: Vec<String>,
    /// The installer's CPU time from just before the ConfigMap write until it is quiet again.
    edit_cpu: Duration,
    /// The Deployment's deletion until the installer's write that creates it again.
    drift_repaired: Duration,
    /// The installer's CPU time from just before the deletion until the repair settled (Available
    /// again, then SETTLE), and its requests in that time.
    drift_cpu: Duration,
    drift_requests: Requests,
    /// (VmRSS, VmHWM) in KiB at the end of the sequence.
    memory_end: (u64, u64),
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
    // The providers' identities the installer writes as, as the release ships them.
    test_support::apply_release_manifests(&env.admin, "0000_30_capi-installer_03_ceiling").await;

    // Cold install.
    let start = micros_now();
    let mut child = start_installer(bin, &env.cp.kubeconfig_path(), dir.path())?;
    let pid = child.id().context("pid of capi-installer")?;
    let fail = |e: anyhow::Error| with_installer_log(dir.path(), e);
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
    let edit_cpu_before = process_cpu(pid)?;
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

    // Drift → repaired, once the edit's last passes are over (they are the edit's, not the drift's).
    test_support::bench::wait_quiet(pid, Duration::from_secs(30)).await?;
    let edit_cpu = process_cpu(pid)?.saturating_sub(edit_cpu_before);
    let old_uid = deployments
        .get(&upgrade.deployment)
        .await?
        .metadata
        .uid
        .unwrap_or_default();
    let drift_cpu_before = process_cpu(pid)?;
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
    let drift_cpu = process_cpu(pid)?.saturating_sub(drift_cpu_before);
    let drift_end = micros_now();
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
    if test_support::bench::timeline_wanted() {
        println!("installer until ready:");
        for line in test_support::bench::timeline(&events, ours, start, ready_at) {
            println!("  {line}");
        }
        println!("installer from the drift until settled:");
        for line in test_support::bench::timeline(&events, ours, drift_at, drift_end) {
            println!("  {line}");
        }
    }
    let install = requests_by_verb(&events, ours, start, ready_at);
    let install_by_resource = requests_by_resource(&events, ours, start, ready_at);
    let idle_verbs = requests_by_verb(&events, ours, ready_at, idle_end);
    let ua = ua.as_str();
    let events = &events;
    let installer_events = |from: i64, to: i64| {
        events
            .iter()
            .filter(move |e| e.user_agent.as_deref() == Some(ua) && (from..to).contains(&at(e)))
    };
    let idle_requests = installer_events(ready_at, idle_end).map(describe).collect();
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
        install_by_resource,
        memory_ready,
        idle: idle_verbs,
        idle_requests,
        memory_idle,
        edit_applied: since(edit_written, edit_last),
        edit_writes: edit_writes.into_iter().map(describe).collect(),
        drift_repaired: since(deleted, repaired),
        edit_cpu,
        drift_cpu,
        drift_requests: requests_by_verb(events, ours, drift_at, drift_end),
        memory_end,
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
    // A fresh discovery cache per run: kubectl starts as cold as the installer does.
    let kubectl = Kubectl::new(bin_dir, env.cp.kubeconfig_path(), dir.path());
    let install = kubectl.install(dir.path(), rendered).await?;
    let (crds2, rest2) = Kubectl::write_files(dir.path(), "upgrade-", upgraded)?;
    let upgrade_start = micros_now();
    kubectl.apply(&[&crds2, &rest2]).await?;
    let upgrade_end = micros_now();
    let events = env.cp.audit_events()?;
    if test_support::bench::timeline_wanted() {
        println!("kubectl until ready:");
        for line in test_support::bench::timeline(&events, is_kubectl, install.from, install.to) {
            println!("  {line}");
        }
    }
    Ok(KubectlRun {
        load,
        applied: install.applied,
        ready: install.ready,
        requests: requests_by_verb(&events, is_kubectl, install.from, install.to),
        upgrade_applied: since(upgrade_start, upgrade_end),
        upgrade_requests: requests_by_verb(&events, is_kubectl, upgrade_start, upgrade_end + 1),
        peak_kib: kubectl.peak(),
    })
}

// ---------------------------------------------------------------------------------------------------
// Report

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
        "| ConfigMap edit: the installer's CPU from the write until quiet | {} | – |",
        stat(installer.iter().map(|r| r.edit_cpu).collect(), |d| format!(
            "{} ms",
            d.as_millis()
        ))
    );
    println!(
        "| drift → repaired (aws Deployment deleted) | {} | – (nothing watches) |",
        dur(&|r| r.drift_repaired)
    );
    println!(
        "| drift: the installer's CPU from the deletion until settled | {} | – |",
        stat(
            installer.iter().map(|r| r.drift_cpu).collect(),
            |d| format!("{} ms", d.as_millis())
        )
    );
    println!(
        "| drift: the installer's requests until settled (reads / writes / dry-runs) | {} / {} / {} | – |",
        stat(col(&|r| r.drift_requests.reads()), count),
        stat(col(&|r| r.drift_requests.writes()), count),
        stat(col(&|r| r.drift_requests.dry_runs()), count)
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
            "- installer {}: load {}; until ready {}; by resource: {}; idle: {}; edit: {}",
            i + 1,
            r.load,
            r.install.verbs(),
            r.install_by_resource.verbs(),
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
