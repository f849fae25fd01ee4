//! How responsive the installer stays while it works (issue 22): the longest pause of its lease
//! renewals, of `/healthz` and of its async runtime (what a watch event, a probe or a request waits
//! for a worker thread) during a cold install and an edit, on a quiet machine and under stress.
//! Measured here, never asserted in tests (the stress test asserts what must hold: the lease kept,
//! Available reached).
//!
//! ```text
//! cargo run --release -p capi-benchmarks --example pause_bench
//! PAUSE_SCENARIOS=stress cargo run --release -p capi-benchmarks --example pause_bench
//! PAUSE_BIN=/path/to/an/older/capi-installer cargo run --release -p capi-benchmarks --example pause_bench
//! ```
//!
//! Per scenario: a fresh control plane with workloads, platform AWS, the release payload (core + aws);
//! `capi-installer run` (the release binary) as the only replica, with leader election on and the
//! tests' timings (lease 15 s, renew deadline 10 s, retry period 2 s). It installs until the
//! ClusterOperator is settled (Available, not Progressing, not Degraded), then the aws ConfigMap is
//! edited (one Deployment argument added, one RoleBinding dropped) until the argument is live and the
//! operator settled again. Meanwhile:
//!
//! - the Lease is read every 100 ms; the longest time between two renewals (from their `renewTime`,
//!   written by the installer) less the retry period is how late a renewal came at worst;
//! - `/healthz` is requested every 50 ms from a thread of this process (as a kubelet probes);
//! - at the end, `/metrics`: the process's own longest runtime stall and longest renewal (from when
//!   it was due until it succeeded), where the binary exports them; the installer's CPU time from
//!   `/proc/<pid>/stat`.
//!
//! `stress`: two threads spinning (both cores busy, at the installer's priority) for the whole
//! scenario, and the API server slowed: kube-apiserver and etcd held to half a CPU together by a
//! cgroup v1 CPU quota, or, where the cgroup cannot be written, every chunk between the installer and
//! the API server delayed 20 ms by a proxy.

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use serde_json::json;
use test_support::bench::{installer_binary, wait_until};
use test_support::*;

const LEASE: &str = "capi-installer-leader";
/// The tests' retry period ([`LEADER_TIMINGS`]).
const RETRY_PERIOD: Duration = Duration::from_secs(2);
const TIMEOUT: Duration = Duration::from_secs(900);
const POLL: Duration = Duration::from_millis(250);

#[tokio::main]
async fn main() -> Result<()> {
    // PAUSE_BIN: another build of the installer to measure (an older commit's, for a before/after).
    let bin = installer_binary("PAUSE_BIN")?;
    let scenarios = std::env::var("PAUSE_SCENARIOS").unwrap_or_else(|_| "quiet,stress".into());
    println!(
        "| scenario | load (1 min, start → end) | cold install | edit → settled | longest lease renewal gap − retry period (renewals) | longest renewal from due (own metric) | /healthz longest, p99 (probes) | runtime longest stall | installer CPU |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for scenario in scenarios.split(',') {
        let stress = match scenario {
            "quiet" => false,
            "stress" => true,
            other => bail!("unknown scenario {other:?} (quiet, stress)"),
        };
        match run(&bin, stress).await {
            Ok(row) => println!("| {scenario} {row}"),
            Err(e) => {
                println!("| {scenario} | failed: {e:#} |");
            }
        }
    }
    Ok(())
}

async fn run(bin: &std::path::Path, stress: bool) -> Result<String> {
    let load_before = load();
    let env = Env::on_aws(&[CORE_CM, AWS_CM]).await;
    let tmp = tempfile::tempdir()?;
    let images = images_file(tmp.path());
    let (_burn, _quota, proxy, how) = if stress {
        let burn = CpuBurn::start(2, TIMEOUT);
        let pids = control_plane_pids(&env.cp, &["kube-apiserver", "etcd"]);
        match CpuQuota::limit("capi-pause-bench", &pids, 0.5) {
            Ok(quota) => (Some(burn), Some(quota), None, "API server at 0.5 CPU"),
            Err(why) => {
                eprintln!("no CPU quota ({why}); delaying through a proxy instead");
                let proxy = Proxy::start(env.cp.server()).await;
                proxy.delay(Duration::from_millis(20));
                (
                    Some(burn),
                    None,
                    Some(proxy),
                    "API server behind a 20 ms proxy",
                )
            }
        }
    } else {
        (None, None, None, "")
    };
    let kubeconfig = match &proxy {
        Some(p) => p.kubeconfig(&env.cp.kubeconfig_path(), env.cp.server(), tmp.path()),
        None => env.cp.kubeconfig_path(),
    };
    let mut command = Command::new(bin);
    command
        .arg("run")
        .arg("--images-json")
        .arg(&images)
        .args(LEADER_TIMINGS)
        .env("RELEASE_VERSION", RELEASE_VERSION);
    let mut replica = Replica::start(command, "bench", &kubeconfig, tmp.path());
    wait_until(TIMEOUT, Duration::from_millis(20), "/healthz", || async {
        http_get(replica.http, "/healthz").await.is_some()
    })
    .await?;
    let probe = HealthProbe::start(replica.http);
    let lease = LeaseWatch::start(&env.admin, INSTALLER_NS, LEASE);

    let started = Instant::now();
    settle(&env, &mut replica, "the cold install settled").await?;
    let install = started.elapsed();

    let upgrade = aws_upgrade(false);
    put_components(&env.admin, AWS_CM, &upgrade.components).await;
    let edited = Instant::now();
    let capa: kube::Api<k8s_openapi::api::apps::v1::Deployment> =
        kube::Api::namespaced(env.admin.clone(), NS);
    wait_until(TIMEOUT, POLL, "the edited argument live", || async {
        capa.get_opt(&upgrade.deployment)
            .await
            .ok()
            .flatten()
            .and_then(|d| d.spec?.template.spec?.containers[0].args.clone())
            .is_some_and(|args| args.iter().any(|a| a == "--v=4"))
    })
    .await?;
    settle(&env, &mut replica, "the edit settled").await?;
    let edit = edited.elapsed();

    let health = probe.finish();
    let (gap, renewals) = lease.longest_gap();
    let holders = lease.holders();
    if holders.iter().flatten().any(|h| h != "bench") {
        bail!("the lease changed hands: {holders:?}");
    }
    let metrics = scrape(&env, &replica, tmp.path()).await?;
    let own = |name: &str| {
        metric_samples(&metrics)
            .get(name)
            .and_then(|s| s.first())
            .and_then(|line| line.rsplit(' ').next())
            .and_then(|v| v.parse::<f64>().ok())
            .map_or("–".to_string(), |s| format!("{:.3} s", s))
    };
    let cpu = test_support::bench::process_cpu(replica.pid() as u32)?.as_secs_f64();
    let answered: Vec<Duration> = health.iter().flatten().copied().collect();
    let failed = health.len() - answered.len();
    let mut sorted = answered.clone();
    sorted.sort();
    let p99 = sorted
        .get(sorted.len().saturating_sub(1) * 99 / 100)
        .copied()
        .unwrap_or_default();
    let longest = sorted.last().copied().unwrap_or_default();
    Ok(format!(
        "{} | {load_before:.1} → {:.1} | {:.1} s | {:.1} s | {:.3} s ({renewals}) | {} | {:.3} s, {:.3} s ({}{}) | {} | {:.1} s |",
        if how.is_empty() {
            String::new()
        } else {
            format!("({how})")
        },
        load(),
        install.as_secs_f64(),
        edit.as_secs_f64(),
        gap.saturating_sub(RETRY_PERIOD).as_secs_f64(),
        own("capi_installer_leader_longest_renewal_seconds"),
        longest.as_secs_f64(),
        p99.as_secs_f64(),
        health.len(),
        if failed > 0 {
            format!(", {failed} unanswered")
        } else {
            String::new()
        },
        own("capi_installer_runtime_longest_stall_seconds"),
        cpu,
    ))
}

/// Until the ClusterOperator is settled; an error when the installer exited meanwhile (it lost the
/// lease).
async fn settle(env: &Env, replica: &mut Replica, what: &str) -> Result<()> {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Some(status) = replica.child.try_wait()? {
            let log = replica.log();
            let tail: Vec<&str> = log.lines().rev().take(10).collect();
            bail!(
                "the installer exited ({status}) before {what}:\n{}",
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            );
        }
        if co_status(&env.admin).await.is_some_and(|s| settled(&s)) {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("timed out after {TIMEOUT:?} waiting for {what}");
        }
        tokio::time::sleep(POLL).await;
    }
}

/// /metrics of the replica started in `dir`, as a cluster-admin ServiceAccount.
async fn scrape(env: &Env, replica: &Replica, dir: &std::path::Path) -> Result<String> {
    let ns = "capi-pause-bench";
    let scraper = token(&env.admin, ns, "scraper").await;
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "capi-pause-bench-scraper"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": "scraper", "namespace": ns}]});
    apply(
        &env.admin,
        &ar(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRoleBinding",
            "clusterrolebindings",
        ),
        &binding,
        "bench",
    )
    .await;
    let ca = ServingCert::in_dir(dir).ca;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some((200, body)) = https_get(replica.metrics, &ca, "/metrics", Some(&scraper)).await
        {
            return Ok(body);
        }
        if Instant::now() > deadline {
            bail!("no /metrics from the installer within 60 s");
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The 1-minute load average.
fn load() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}
