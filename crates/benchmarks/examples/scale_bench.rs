//! How the installer's cost grows with the number of providers (issue 20): measured here, never
//! asserted in tests.
//!
//! ```text
//! cargo run --release -p capi-benchmarks --example scale_bench -- [RUNS] [IDLE_SECONDS] [SETS]
//! INSTALLER_BIN=/path/to/another/capi-installer target/release/examples/scale_bench ...   # a before/after
//! ```
//!
//! SETS (default `1,3,5`) are how many infrastructure providers are installed beside core, taken in
//! this order: aws (the platform's, AWS), gcp, azure, vsphere, ibmcloud (PowerVS, whose ConfigMap is
//! generated from the stand-in in `examples/providers/ibmcloud`: the fixtures have none); the others
//! are asked for with `InfrastructureProvider` objects. So `1` is core + aws (what `install_bench`
//! installs), `5` is six providers. Each run of each set (default 3 runs) uses two fresh control planes
//! with workloads (KWOK), each with `Infrastructure/cluster` on AWS, the release payload (core CRD
//! manifest, the set's transport ConfigMaps) and the `InfrastructureProvider` CRD:
//!
//! 1. **installer**: the release binary `capi-installer run` (as `install_bench` runs it), the whole
//!    sequence on one control plane:
//!    - *cold install*: the `InfrastructureProvider` objects exist before the process starts; from its
//!      start until `ClusterOperator/cluster-api` is Available=True, Progressing=False, Degraded=False
//!      and every `InfrastructureProvider` is Available; its requests until then (audit log, by its
//!      user agent; server-side dry-runs apart); its CPU time (user + system) until then; VmRSS and
//!      VmHWM 3 s later;
//!    - *remove one* (sets with an extra provider): the last extra provider's `InfrastructureProvider`
//!      deleted, until the object is gone (the installer removed its finalizer once its objects were
//!      deleted); then *add it back*: the object created again, until it and the ClusterOperator are
//!      Available; the requests of each;
//!    - *idle*: its requests during IDLE_SECONDS (default 60) after that, and VmRSS and VmHWM at the
//!      end;
//! 2. **kubectl**: `kubectl apply --server-side` of the same rendered objects (CRDs first, wait for
//!    Established, then the rest, wait until every Deployment is Available), as `install_bench` does.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use capi_installer_controller::user_agent;
use kube::Client;
use kube::api::DeleteParams;
use serde_json::Value;

use test_support::bench::{
    Kubectl, Requests, cores, count, installer_binary, is_kubectl, loadavg, mib, micros_now,
    operator_ready, proc_status, process_cpu, render_objects, requests_by_resource,
    requests_by_verb, secs, since, start_installer, stat, wait_until, with_installer_log,
};
use test_support::{
    AWS_CM, AZURE_CM, CORE_CM, Env, GCP_CM, IBMCLOUD_CM, VSPHERE_CM, infrastructure_providers,
    payload_configmap, provider_condition, request_provider,
};

/// The infrastructure providers in the order a set takes them, with their ConfigMaps; the first is the
/// platform's.
const PROVIDERS: [(&str, &str); 5] = [
    ("aws", AWS_CM),
    ("gcp", GCP_CM),
    ("azure", AZURE_CM),
    ("vsphere", VSPHERE_CM),
    ("ibmcloud", IBMCLOUD_CM),
];
const READY_TIMEOUT: Duration = Duration::from_secs(900);
/// How long after a state is reached memory is read: the reconcile that got there has ended.
const SETTLE: Duration = Duration::from_secs(3);
/// How often state is polled (by the admin client, so it does not count as installer traffic).
const POLL: Duration = Duration::from_millis(100);

#[tokio::main]
async fn main() -> Result<()> {
    let (runs, idle, mut args) = test_support::bench::bench_start()?;
    let sets: Vec<usize> = args
        .next()
        .unwrap_or_else(|| "1,3,5".into())
        .split(',')
        .map(|n| n.parse().context("SETS"))
        .collect::<Result<_>>()?;
    if let Some(n) = sets.iter().find(|n| **n == 0 || **n > PROVIDERS.len()) {
        bail!(
            "a set has 1 to {} infrastructure providers, not {n}",
            PROVIDERS.len()
        );
    }
    // Outside every measurement: the Go binaries, the installer binary, the rendered objects.
    let bin_dir = control_plane::bin_dir()?;
    let installer_bin = installer_binary("INSTALLER_BIN")?;
    println!(
        "machine: {} cores, load average at start {}",
        cores(),
        loadavg()
    );

    let mut results = Vec::new();
    for &n in &sets {
        let set = Set::new(n)?;
        println!(
            "set {n}: core + {} ({} providers), {} rendered objects ({} CRDs)",
            set.names().join(", "),
            n + 1,
            set.rendered.len(),
            set.rendered
                .iter()
                .filter(|o| test_support::bench::is_crd(o))
                .count()
        );
        let mut installer = Vec::new();
        let mut kubectl = Vec::new();
        for run in 1..=runs {
            let r = installer_run(&installer_bin, &set, idle).await?;
            println!("installer set {n} run {run}: {r:?}");
            installer.push(r);
            let r = kubectl_run(&set, &bin_dir).await?;
            println!("kubectl set {n} run {run}: {r:?}");
            kubectl.push(r);
        }
        results.push((set, installer, kubectl));
    }
    println!();
    print_table(runs, idle, &results);
    println!("\nload average at end {}", loadavg());
    Ok(())
}

/// Core and the first `n` infrastructure providers of [`PROVIDERS`].
struct Set {
    providers: Vec<(&'static str, &'static str)>,
    configmaps: Vec<Value>,
    rendered: Vec<Value>,
}

impl Set {
    fn new(n: usize) -> Result<Set> {
        let providers: Vec<_> = PROVIDERS[..n].to_vec();
        let configmaps = std::iter::once(CORE_CM)
            .chain(providers.iter().map(|(_, cm)| *cm))
            .map(|cm| payload_configmap(cm).with_context(|| format!("fixture {cm}")))
            .collect::<Result<Vec<_>>>()?;
        let extras: Vec<&str> = providers[1..].iter().map(|(name, _)| *name).collect();
        let rendered = render_objects(&configmaps, "AWS", &extras)?;
        Ok(Set {
            providers,
            configmaps,
            rendered,
        })
    }

    fn names(&self) -> Vec<&'static str> {
        self.providers.iter().map(|(name, _)| *name).collect()
    }

    /// The providers asked for with `InfrastructureProvider` objects (all but the platform's).
    fn extras(&self) -> Vec<&'static str> {
        self.names()[1..].to_vec()
    }

    /// A fresh control plane with workloads, AWS, the set's release payload and the
    /// `InfrastructureProvider` CRD and objects, before any installer runs.
    async fn env(&self, with_requests: bool) -> Result<Env> {
        let env = Env::start(true).await;
        test_support::set_platform(&env.admin, "AWS").await;
        test_support::load_payload(&env.admin, &[])
            .await
            .context("fixtures")?;
        for cm in &self.configmaps {
            test_support::put_configmap(&env.admin, cm).await;
        }
        test_support::load_infrastructure_provider_crd(&env.admin).await;
        if with_requests {
            for name in self.extras() {
                request_provider(&env.admin, name).await;
            }
        }
        Ok(env)
    }
}

/// Polls `check` every [`POLL`] until it holds, at most [`READY_TIMEOUT`].
async fn wait_for<F, Fut>(what: &str, check: F) -> Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    wait_until(READY_TIMEOUT, POLL, what, check).await
}

/// The ClusterOperator settled and every `InfrastructureProvider` of `names` Available.
async fn all_ready(client: &Client, names: &[&str]) -> bool {
    if !operator_ready(client).await {
        return false;
    }
    let api = infrastructure_providers(client);
    for name in names {
        let Ok(obj) = api.get(name).await else {
            return false;
        };
        if provider_condition(&obj, "Available").is_none_or(|c| c.status != "True") {
            return false;
        }
    }
    true
}

#[derive(Debug)]
struct InstallerRun {
    load: String,
    /// Process start until every provider is ready.
    ready: Duration,
    /// The installer's CPU time (user + system) from its start until every provider is ready.
    cpu_ready: Duration,
    install: Requests,
    install_by_resource: Requests,
    /// (VmRSS, VmHWM) in KiB once ready.
    memory_ready: (u64, u64),
    /// Deleting the last extra provider's object until it is gone, and its requests.
    removed: Option<(Duration, Requests)>,
    /// Creating it again until it is Available, and its requests.
    added: Option<(Duration, Requests)>,
    idle: Requests,
    idle_by_resource: Requests,
    /// (VmRSS, VmHWM) in KiB at the end of the idle time.
    memory_end: (u64, u64),
}

async fn installer_run(bin: &std::path::Path, set: &Set, idle: Duration) -> Result<InstallerRun> {
    let env = set.env(true).await?;
    let client = env.admin.clone();
    let load = loadavg();
    let dir = tempfile::tempdir()?;
    let ua = user_agent();
    let ours = |a: &str| a == ua;
    let extras = set.extras();
    // The providers' identities the installer writes as, as the release ships them.
    test_support::apply_release_manifests(&env.admin, "0000_30_capi-installer_03_ceiling").await;

    let start = micros_now();
    let mut child = start_installer(bin, &env.cp.kubeconfig_path(), dir.path())?;
    let pid = child.id().context("pid of capi-installer")?;
    let fail = |e: anyhow::Error| with_installer_log(dir.path(), e);
    wait_for("every provider ready", || all_ready(&client, &extras))
        .await
        .map_err(fail)?;
    let ready_at = micros_now();
    let cpu_ready = process_cpu(pid)?;
    tokio::time::sleep(SETTLE).await;
    let memory_ready = proc_status(pid)?;

    let mut marks = None;
    if let Some(last) = extras.last().copied() {
        let api = infrastructure_providers(&client);
        let remove_at = micros_now();
        api.delete(last, &DeleteParams::default()).await?;
        wait_for(&format!("InfrastructureProvider {last} gone"), || async {
            matches!(api.get_opt(last).await, Ok(None))
        })
        .await
        .map_err(fail)?;
        let removed_at = micros_now();
        wait_for("ClusterOperator settled", || operator_ready(&client))
            .await
            .map_err(fail)?;
        let add_at = micros_now();
        request_provider(&client, last).await;
        wait_for("every provider ready again", || all_ready(&client, &extras))
            .await
            .map_err(fail)?;
        let added_at = micros_now();
        marks = Some((remove_at, removed_at, add_at, added_at));
    }
    let idle_from = micros_now();
    tokio::time::sleep(idle).await;
    let idle_end = micros_now();
    let memory_end = proc_status(pid)?;
    let _ = child.kill().await;

    let events = env.cp.audit_events()?;
    if test_support::bench::timeline_wanted() {
        println!("installer, core + {}, until ready:", set.names().join(", "));
        for line in test_support::bench::timeline(&events, ours, start, ready_at) {
            println!("  {line}");
        }
    }
    let (removed, added) = match marks {
        Some((remove_at, removed_at, add_at, added_at)) => (
            Some((
                since(remove_at, removed_at),
                requests_by_verb(&events, ours, remove_at, removed_at),
            )),
            Some((
                since(add_at, added_at),
                requests_by_verb(&events, ours, add_at, added_at),
            )),
        ),
        None => (None, None),
    };
    Ok(InstallerRun {
        load,
        ready: since(start, ready_at),
        cpu_ready,
        install: requests_by_verb(&events, ours, start, ready_at),
        install_by_resource: requests_by_resource(&events, ours, start, ready_at),
        memory_ready,
        removed,
        added,
        idle: requests_by_verb(&events, ours, idle_from, idle_end),
        idle_by_resource: requests_by_resource(&events, ours, idle_from, idle_end),
        memory_end,
    })
}

#[derive(Debug)]
struct KubectlRun {
    load: String,
    ready: Duration,
    requests: Requests,
    peak_kib: u64,
}

async fn kubectl_run(set: &Set, bin_dir: &std::path::Path) -> Result<KubectlRun> {
    let env = set.env(false).await?;
    let load = loadavg();
    let dir = tempfile::tempdir()?;
    let kubectl = Kubectl::new(bin_dir, env.cp.kubeconfig_path(), dir.path());
    let install = kubectl.install(dir.path(), &set.rendered).await?;
    let events = env.cp.audit_events()?;
    Ok(KubectlRun {
        load,
        ready: install.ready,
        requests: requests_by_verb(&events, is_kubectl, install.from, install.to),
        peak_kib: kubectl.peak(),
    })
}

/// One cell of the table: a set, its installer runs and its kubectl runs.
type Cell<'a> = dyn Fn(&Set, &[InstallerRun], &[KubectlRun]) -> String + 'a;

fn print_table(runs: usize, idle: Duration, results: &[(Set, Vec<InstallerRun>, Vec<KubectlRun>)]) {
    println!(
        "median (min–max) of {runs} runs; each run: a fresh control plane with KWOK and platform AWS for \
         the installer's whole sequence, another for kubectl's\n"
    );
    let header: Vec<String> = results
        .iter()
        .map(|(set, ..)| format!("core + {}", set.names().join(", ")))
        .collect();
    println!("| measure | {} |", header.join(" | "));
    println!("|---|{}", "---|".repeat(results.len()));
    let row = |name: &str, cell: &Cell<'_>| {
        let cells: Vec<String> = results.iter().map(|(s, i, k)| cell(s, i, k)).collect();
        println!("| {name} | {} |", cells.join(" | "));
    };
    let dur = |runs: &[InstallerRun], f: &dyn Fn(&InstallerRun) -> Duration| {
        stat(runs.iter().map(f).collect(), secs)
    };
    let num = |runs: &[InstallerRun], f: &dyn Fn(&InstallerRun) -> usize| {
        stat(runs.iter().map(f).collect(), count)
    };
    let mem = |runs: &[InstallerRun], f: &dyn Fn(&InstallerRun) -> u64| {
        stat(runs.iter().map(f).collect(), mib)
    };
    row("rendered objects (CRDs)", &|s, _, _| {
        format!(
            "{} ({})",
            s.rendered.len(),
            s.rendered
                .iter()
                .filter(|o| test_support::bench::is_crd(o))
                .count()
        )
    });
    row("installer: start → ready", &|_, i, _| {
        dur(i, &|r| r.ready)
    });
    row("installer: CPU time until ready", &|_, i, _| {
        dur(i, &|r| r.cpu_ready)
    });
    row("kubectl: start → Deployments Available", &|_, _, k| {
        stat(k.iter().map(|r| r.ready).collect(), secs)
    });
    row("installer ÷ kubectl (medians)", &|_, i, k| {
        let median = |mut v: Vec<f64>| {
            v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
            v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
        };
        let a = median(i.iter().map(|r| r.ready.as_secs_f64()).collect());
        let b = median(k.iter().map(|r| r.ready.as_secs_f64()).collect());
        format!("{:.2}", a / b)
    });
    row(
        "installer: requests until ready (reads / writes / dry-runs)",
        &|_, i, _| {
            format!(
                "{} / {} / {}",
                num(i, &|r| r.install.reads()),
                num(i, &|r| r.install.writes()),
                num(i, &|r| r.install.dry_runs())
            )
        },
    );
    row(
        "installer: requests until ready per rendered object",
        &|s, i, _| {
            stat(
                i.iter()
                    .map(|r| r.install.all() as f64 / s.rendered.len() as f64)
                    .collect(),
                |v| format!("{v:.2}"),
            )
        },
    );
    row(
        "kubectl: requests until ready (reads / writes)",
        &|_, _, k| {
            format!(
                "{} / {}",
                stat(k.iter().map(|r| r.requests.reads()).collect(), count),
                stat(k.iter().map(|r| r.requests.writes()).collect(), count)
            )
        },
    );
    row(
        "remove the last extra provider → object gone",
        &|_, i, _| {
            opt_dur(
                i.iter()
                    .filter_map(|r| r.removed.as_ref().map(|x| x.0))
                    .collect(),
            )
        },
    );
    row("  its requests (reads / writes)", &|_, i, _| {
        reads_writes(
            i.iter()
                .filter_map(|r| r.removed.as_ref().map(|x| &x.1))
                .collect(),
        )
    });
    row("add it back → Available", &|_, i, _| {
        opt_dur(
            i.iter()
                .filter_map(|r| r.added.as_ref().map(|x| x.0))
                .collect(),
        )
    });
    row("  its requests (reads / writes / dry-runs)", &|_, i, _| {
        let r: Vec<&Requests> = i
            .iter()
            .filter_map(|r| r.added.as_ref().map(|x| &x.1))
            .collect();
        if r.is_empty() {
            return "–".into();
        }
        format!(
            "{} / {} / {}",
            stat(r.iter().map(|r| r.reads()).collect(), count),
            stat(r.iter().map(|r| r.writes()).collect(), count),
            stat(r.iter().map(|r| r.dry_runs()).collect(), count)
        )
    });
    row(
        &format!("idle {} s: reads / writes", idle.as_secs()),
        &|_, i, _| {
            format!(
                "{} / {}",
                num(i, &|r| r.idle.reads()),
                num(i, &|r| r.idle.writes())
            )
        },
    );
    row("VmRSS 3 s after ready", &|_, i, _| {
        mem(i, &|r| r.memory_ready.0)
    });
    row("VmRSS after the idle time", &|_, i, _| {
        mem(i, &|r| r.memory_end.0)
    });
    row("VmHWM (peak RSS) at the end", &|_, i, _| {
        mem(i, &|r| r.memory_end.1)
    });
    row("kubectl: largest process's peak RSS", &|_, _, k| {
        stat(k.iter().map(|r| r.peak_kib).collect(), mib)
    });
    row(
        "load average at the start of the runs (installer)",
        &|_, i, _| {
            i.iter()
                .map(|r| r.load.clone())
                .collect::<Vec<_>>()
                .join("; ")
        },
    );
    row(
        "load average at the start of the runs (kubectl)",
        &|_, _, k| {
            k.iter()
                .map(|r| r.load.clone())
                .collect::<Vec<_>>()
                .join("; ")
        },
    );
    println!();
    println!("per run:");
    for (set, installer, _) in results {
        for (i, r) in installer.iter().enumerate() {
            println!(
                "- core + {}, installer {}: until ready {}; idle {}",
                set.names().join(", "),
                i + 1,
                r.install_by_resource.verbs(),
                r.idle_by_resource.verbs()
            );
        }
    }
}

fn opt_dur(values: Vec<Duration>) -> String {
    stat(values, secs)
}

fn reads_writes(values: Vec<&Requests>) -> String {
    if values.is_empty() {
        return "–".into();
    }
    format!(
        "{} / {}",
        stat(values.iter().map(|r| r.reads()).collect(), count),
        stat(values.iter().map(|r| r.writes()).collect(), count)
    )
}
