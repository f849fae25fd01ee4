//! `capi-installer run` as a process, against a real control plane with workloads: two replicas elect a
//! leader on Lease `capi-installer-leader`, the leader installs the fixture providers, the standby takes
//! over when the leader is killed, and a SIGTERM releases the lease. Also probes /healthz and /readyz,
//! scrapes /metrics over TLS as cluster monitoring would (with the RBAC of `manifests/`), and reads the
//! result back with `capi-installer status`. The other tests: a leader that loses its Lease or whose
//! renewals hang exits; who may read /metrics (401, 403, 200) and certificate rotation.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use control_plane::{AuditEvent, ControlPlane, ControlPlaneOptions};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, ValidationDirective};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const BIN: &str = env!("CARGO_BIN_EXE_capi-installer");
const NS: &str = "openshift-cluster-api";
const LEASE: &str = "capi-installer-leader";
const RELEASE_VERSION: &str = "4.21.0-process-test";

/// One `capi-installer run` child. Killed (SIGKILL) when dropped, so a failing test leaves nothing behind;
/// its log is printed then, to show why.
struct Replica {
    name: String,
    child: Child,
    http: SocketAddr,
    metrics: SocketAddr,
    log: PathBuf,
}

/// Short leader election timings for tests (the defaults are OpenShift's 137s / 107s / 26s).
const LEADER_TIMINGS: [&str; 6] = [
    "--leader-elect-lease-duration",
    "15s",
    "--leader-elect-renew-deadline",
    "10s",
    "--leader-elect-retry-period",
    "2s",
];

impl Replica {
    fn start(name: &str, kubeconfig: &Path, images: &Path, dir: &Path) -> Replica {
        Replica::start_with(name, kubeconfig, images, dir, &LEADER_TIMINGS)
    }

    /// With `extra` flags instead of [`LEADER_TIMINGS`].
    fn start_with(
        name: &str,
        kubeconfig: &Path,
        images: &Path,
        dir: &Path,
        extra: &[&str],
    ) -> Replica {
        let http = free_port();
        let metrics = free_port();
        let log = dir.join(format!("{name}.log"));
        let tls = ServingCert::in_dir(dir);
        let child = Command::new(BIN)
            .args(["run", "--kubeconfig"])
            .arg(kubeconfig)
            .arg("--images-json")
            .arg(images)
            .args([
                "--instance",
                name,
                "--http-addr",
                &http.to_string(),
                "--metrics-addr",
                &metrics.to_string(),
                "--deployment-timeout",
                "3m",
            ])
            .arg("--metrics-cert-file")
            .arg(&tls.cert)
            .arg("--metrics-key-file")
            .arg(&tls.key)
            .args(extra)
            .env("RELEASE_VERSION", RELEASE_VERSION)
            .env("RUST_LOG", "info,kube=warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("capi-installer starts");
        Replica {
            name: name.to_string(),
            child,
            http,
            metrics,
            log,
        }
    }

    fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let log = self.log();
            let tail: Vec<&str> = log.lines().rev().take(60).collect();
            eprintln!("---- log of replica {} (last lines) ----", self.name);
            for line in tail.iter().rev() {
                eprintln!("{line}");
            }
        }
    }
}

fn free_port() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}

/// A plain HTTP/1.1 GET: (status code, body). `None` when nothing listens yet.
async fn get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.ok()?;
    let response = String::from_utf8_lossy(&response);
    let status = response.split_whitespace().nth(1)?.parse().ok()?;
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Some((status, body))
}

async fn eventually<T, F, Fut>(timeout: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn config_api(client: &Client, kind: &str, plural: &str) -> Api<DynamicObject> {
    let ar = ApiResource {
        group: "config.openshift.io".into(),
        version: "v1".into(),
        api_version: "config.openshift.io/v1".into(),
        kind: kind.into(),
        plural: plural.into(),
    };
    Api::all_with(client.clone(), &ar)
}

/// `Infrastructure/cluster` with platform AWS, as the OpenShift installer leaves it.
async fn set_platform_aws(client: &Client) {
    let api = config_api(client, "Infrastructure", "infrastructures");
    let pp = PatchParams::apply("openshift-installer").force();
    let obj = json!({"apiVersion": "config.openshift.io/v1", "kind": "Infrastructure",
        "metadata": {"name": "cluster"}, "spec": {"platformSpec": {"type": "AWS"}}});
    api.patch("cluster", &pp, &Patch::Apply(&obj))
        .await
        .expect("Infrastructure applies");
    let status = json!({"apiVersion": "config.openshift.io/v1", "kind": "Infrastructure",
        "metadata": {"name": "cluster"},
        "status": {"platform": "AWS", "platformStatus": {"type": "AWS"}, "infrastructureName": "process-test",
            "apiServerURL": "https://api.test:6443", "apiServerInternalURI": "https://api-int.test:6443",
            "controlPlaneTopology": "HighlyAvailable", "infrastructureTopology": "HighlyAvailable",
            "cpuPartitioning": "None", "etcdDiscoveryDomain": ""}});
    api.patch_status("cluster", &pp, &Patch::Apply(&status))
        .await
        .expect("Infrastructure status applies");
}

fn documents(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    capi_manifests::yaml::parse_documents(&path.display().to_string(), &text)
        .unwrap()
        .into_iter()
        .map(|d| d.value)
        .collect()
}

/// What the release payload does before the installer runs: the core CRD manifest and the transport
/// ConfigMaps, applied server-side as `cluster-version-operator`.
async fn load_payload(client: &Client, fixtures: &Path) {
    let cvo = PatchParams::apply("cluster-version-operator").force();
    let crds: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource {
            group: "apiextensions.k8s.io".into(),
            version: "v1".into(),
            api_version: "apiextensions.k8s.io/v1".into(),
            kind: "CustomResourceDefinition".into(),
            plural: "customresourcedefinitions".into(),
        },
    );
    for crd in documents(&fixtures.join("0000_30_cluster-api_04_crd.core-cluster-api.yaml")) {
        let name = crd["metadata"]["name"].as_str().unwrap().to_string();
        crds.patch(&name, &cvo, &Patch::Apply(&crd))
            .await
            .unwrap_or_else(|e| panic!("CRD {name}: {e}"));
    }
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}});
    namespaces
        .patch(NS, &cvo, &Patch::Apply(&ns))
        .await
        .expect("namespace applies");
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    for file in [
        "0000_30_cluster-api_04_cm.core-cluster-api.yaml",
        "0000_30_cluster-api_04_cm.infrastructure-aws.yaml",
    ] {
        for cm in documents(&fixtures.join(file)) {
            let name = cm["metadata"]["name"].as_str().unwrap().to_string();
            configmaps
                .patch(&name, &cvo, &Patch::Apply(&cm))
                .await
                .unwrap_or_else(|e| panic!("ConfigMap {name}: {e}"));
        }
    }
}

/// Applies this repository's `manifests/0000_*.yaml` as the release payload would, with strict field
/// validation: an unknown or misspelt field fails the test. Returns `Kind name` of each object.
async fn apply_release_manifests(client: &Client) -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../manifests");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with("0000_") && name.ends_with(".yaml")
        })
        .collect();
    files.sort();
    let discovery = kube::discovery::Discovery::new(client.clone())
        .run_aggregated()
        .await
        .unwrap();
    // Namespaces that other components own on a real cluster (openshift-machine-api, for a Role the
    // controllers pod needs there) exist before the release manifests are applied.
    let mut declared = std::collections::BTreeSet::new();
    let mut referenced = std::collections::BTreeSet::new();
    for file in &files {
        for doc in documents(file) {
            if doc["kind"] == "Namespace" {
                declared.insert(doc["metadata"]["name"].as_str().unwrap().to_string());
            } else if let Some(ns) = doc["metadata"]["namespace"].as_str() {
                referenced.insert(ns.to_string());
            }
        }
    }
    for ns in referenced.difference(&declared) {
        create_namespace(client, ns).await;
    }
    let mut pp = PatchParams::apply("cluster-version-operator").force();
    pp.field_validation = Some(ValidationDirective::Strict);
    let mut applied = Vec::new();
    for file in files {
        for doc in documents(&file) {
            let obj: DynamicObject = serde_json::from_value(doc.clone()).unwrap();
            let types = obj.types.clone().unwrap();
            // Cluster monitoring's CRDs are not on the test control plane; tests/manifests.rs checks
            // the ServiceMonitor's fields instead.
            if types.api_version.starts_with("monitoring.coreos.com/") {
                continue;
            }
            let gvk = kube::api::GroupVersionKind::try_from(&types).unwrap();
            let (resource, caps) = discovery
                .resolve_gvk(&gvk)
                .unwrap_or_else(|| panic!("{}: {} is not served", file.display(), types.kind));
            let name = obj.metadata.name.clone().unwrap();
            let api: Api<DynamicObject> = match (&caps.scope, &obj.metadata.namespace) {
                (kube::discovery::Scope::Namespaced, Some(ns)) => {
                    Api::namespaced_with(client.clone(), ns, &resource)
                }
                _ => Api::all_with(client.clone(), &resource),
            };
            api.patch(&name, &pp, &Patch::Apply(&doc))
                .await
                .unwrap_or_else(|e| panic!("{}: {} {name}: {e}", file.display(), types.kind));
            applied.push(format!("{} {name}", types.kind));
        }
    }
    applied
}

async fn holder(client: &Client) -> Option<String> {
    holder_in(client, NS).await
}

async fn holder_in(client: &Client, namespace: &str) -> Option<String> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), namespace);
    leases
        .get_opt(LEASE)
        .await
        .ok()
        .flatten()
        .and_then(|l| l.spec)
        .and_then(|s| s.holder_identity)
        .filter(|h| !h.is_empty())
}

fn condition(status: &Value, type_: &str) -> Option<(String, String)> {
    status["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .map(|c| {
            (
                c["status"].as_str().unwrap_or_default().to_string(),
                c["reason"].as_str().unwrap_or_default().to_string(),
            )
        })
}

async fn cluster_operator_status(client: &Client) -> Option<Value> {
    let api = config_api(client, "ClusterOperator", "clusteroperators");
    api.get_opt("cluster-api")
        .await
        .ok()
        .flatten()
        .and_then(|co| co.data.get("status").cloned())
}

async fn wait_available(client: &Client, timeout: Duration) -> Value {
    eventually(
        timeout,
        "ClusterOperator cluster-api Available=True, Degraded=False",
        || async {
            let s = cluster_operator_status(client).await?;
            let available = condition(&s, "Available")?.0 == "True";
            let degraded = condition(&s, "Degraded")?.0 == "True";
            (available && !degraded).then_some(s)
        },
    )
    .await
}

/// Sample lines of /metrics by series name (labels cut off).
fn samples(metrics: &str) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in metrics
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let name = line.split(['{', ' ']).next().unwrap().to_string();
        out.entry(name).or_default().push(line.to_string());
    }
    out
}

fn images_file(dir: &Path) -> PathBuf {
    let images: BTreeMap<&str, &str> = BTreeMap::from([
        (
            "cluster-capi-controllers",
            "quay.io/openshift/ocp-v4.0-art-dev@sha256:c0c0",
        ),
        (
            "aws-cluster-api-controllers",
            "quay.io/openshift/ocp-v4.0-art-dev@sha256:a0a0",
        ),
        (
            "kube-rbac-proxy",
            "quay.io/openshift/ocp-v4.0-art-dev@sha256:b0b0",
        ),
    ]);
    let path = dir.join("images.json");
    std::fs::write(&path, serde_json::to_string(&images).unwrap()).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn standby_takes_over_when_the_leader_dies_and_sigterm_releases_the_lease() {
    let Some(fixtures) = control_plane::shared_fixture("transport-configmaps") else {
        return;
    };
    let cp = ControlPlane::start(ControlPlaneOptions {
        with_workloads: true,
        ..Default::default()
    })
    .await
    .expect("control plane starts");
    let admin = cp.admin_client().await.unwrap();
    set_platform_aws(&admin).await;
    // The installer's own release manifests are accepted by the API server as they are.
    let applied = apply_release_manifests(&admin).await;
    for expected in [
        "Namespace openshift-cluster-api",
        "ServiceAccount capi-installer",
        "ConfigMap capi-installer-images",
        "Deployment capi-installer",
        "ClusterOperator cluster-api",
    ] {
        assert!(
            applied.iter().any(|a| a == expected),
            "{expected} not in manifests/: {applied:?}"
        );
    }
    load_payload(&admin, &fixtures).await;

    let tmp = tempfile::tempdir().unwrap();
    let images = images_file(tmp.path());
    // The replicas run as the ServiceAccount of manifests/, with only the RBAC shipped there.
    let kubeconfig = cp
        .service_account_kubeconfig(NS, "capi-installer")
        .await
        .expect("ServiceAccount kubeconfig");
    let mut replicas = vec![
        Replica::start("replica-a", &kubeconfig, &images, tmp.path()),
        Replica::start("replica-b", &kubeconfig, &images, tmp.path()),
    ];

    // One of them leads; the leader installs both providers.
    let first = eventually(Duration::from_secs(30), "a leader", || holder(&admin)).await;
    let started = Instant::now();
    let status = wait_available(&admin, Duration::from_secs(240)).await;
    eprintln!("installed by {first} in {:?}", started.elapsed());
    let versions = &status["versions"][0];
    assert_eq!(versions["version"], RELEASE_VERSION, "{status}");
    assert_eq!(
        holder(&admin).await.as_deref(),
        Some(first.as_str()),
        "leadership is stable while both run"
    );

    let leader_at = replicas.iter().position(|r| r.name == first).unwrap();
    let (leader, standby) = (&replicas[leader_at], &replicas[1 - leader_at]);

    // Health and metrics of the leader: liveness, readiness, and every documented series with samples.
    assert_eq!(get(leader.http, "/healthz").await.map(|r| r.0), Some(200));
    assert_eq!(get(leader.http, "/readyz").await.map(|r| r.0), Some(200));
    // A standby is ready too (documented: it stands by, having reached the API server).
    let standby_ready = eventually(Duration::from_secs(10), "standby /readyz", || async {
        get(standby.http, "/readyz").await
    })
    .await;
    assert_eq!(standby_ready.0, 200, "{}", standby_ready.1);
    // Cluster monitoring's identity, allowed by the RBAC of manifests/ (checked by the replicas, which run
    // with only the RBAC shipped there).
    let prometheus = token(&admin, "openshift-monitoring", "prometheus-k8s").await;
    let ca = ServingCert::in_dir(tmp.path()).ca;
    assert_eq!(
        https_get(leader.http, &ca, "/metrics", Some(&prometheus))
            .await
            .map(|r| r.0),
        None,
        "no /metrics on the plain HTTP port"
    );
    assert_eq!(get(leader.http, "/metrics").await.map(|r| r.0), Some(404));
    let (code, metrics) = eventually(
        Duration::from_secs(30),
        "/metrics for prometheus-k8s",
        || https_get(leader.metrics, &ca, "/metrics", Some(&prometheus)),
    )
    .await;
    assert_eq!(code, 200, "{metrics}");
    let series = samples(&metrics);
    for name in [
        "capi_installer_reconciles_total",
        "capi_installer_phase_duration_seconds_bucket",
        "capi_installer_phase_duration_seconds_count",
        "capi_installer_objects_applied_total",
        "capi_installer_objects_pruned_total",
        "capi_installer_last_success_timestamp_seconds",
        "capi_installer_build_info",
    ] {
        assert!(
            series.contains_key(name),
            "{name} missing from /metrics:\n{metrics}"
        );
    }
    assert!(
        series["capi_installer_reconciles_total"]
            .iter()
            .any(|l| l.contains("result=\"success\"")),
        "{metrics}"
    );
    assert!(
        series["capi_installer_objects_applied_total"]
            .iter()
            .any(|l| l.contains("action=\"Created\"")),
        "{metrics}"
    );
    let last_success: f64 = series["capi_installer_last_success_timestamp_seconds"][0]
        .rsplit(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        last_success > 1.7e9,
        "last success time is a Unix time: {last_success}"
    );
    assert!(
        series["capi_installer_build_info"][0]
            .contains(&format!("version=\"{}\"", env!("CARGO_PKG_VERSION")))
    );
    // The standby has not reconciled anything.
    let (_, standby_metrics) = https_get(standby.metrics, &ca, "/metrics", Some(&prometheus))
        .await
        .unwrap();
    assert!(
        !samples(&standby_metrics).contains_key("capi_installer_reconciles_total"),
        "{standby_metrics}"
    );

    // `status` reads the same install back.
    let out = Command::new(BIN)
        .args(["status", "--kubeconfig"])
        .arg(cp.kubeconfig_path())
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("capi-installer status:\n{table}");
    for provider in ["cluster-api", "aws"] {
        let row = table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(provider))
            .unwrap_or_else(|| panic!("no row for {provider}:\n{table}"));
        let ready = row
            .split_whitespace()
            .find(|c| c.contains('/') && c.chars().next().unwrap().is_ascii_digit());
        let (n, total) = ready
            .and_then(|r| r.split_once('/'))
            .unwrap_or_else(|| panic!("no READY in {row}"));
        assert_eq!(n, total, "{row}");
        assert!(n.parse::<usize>().unwrap() > 20, "{row}");
        assert!(row.contains("Installed"), "{row}");
    }
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("Available") && l.contains("True")),
        "{table}"
    );

    // Kill the leader outright: no release, the lease must expire.
    let killed_at = Instant::now();
    let leader = replicas.remove(leader_at);
    let standby_name = replicas[0].name.clone();
    drop(leader);
    let second = eventually(
        Duration::from_secs(30),
        "the standby to take over the lease",
        || async { holder(&admin).await.filter(|h| *h != first) },
    )
    .await;
    let took = killed_at.elapsed();
    eprintln!("{second} took over {took:?} after the leader was killed");
    assert_eq!(second, standby_name);
    assert!(took < Duration::from_secs(30), "took {took:?}");

    // The new leader runs the loop (it reconciles) and the install stays converged.
    let new_leader = &replicas[0];
    eventually(
        Duration::from_secs(60),
        "the new leader to reconcile",
        || async {
            let (_, m) = https_get(new_leader.metrics, &ca, "/metrics", Some(&prometheus)).await?;
            samples(&m)
                .contains_key("capi_installer_reconciles_total")
                .then_some(())
        },
    )
    .await;
    let status = wait_available(&admin, Duration::from_secs(60)).await;
    assert_eq!(
        condition(&status, "Progressing").map(|c| c.0).as_deref(),
        Some("False"),
        "{status}"
    );

    // SIGTERM: the new leader stops and hands the lease back at once.
    // SAFETY: sending a signal to our own child process.
    assert_eq!(unsafe { libc::kill(new_leader.pid(), libc::SIGTERM) }, 0);
    let mut new_leader = replicas.remove(0);
    let exit = eventually(
        Duration::from_secs(30),
        "the leader to exit after SIGTERM",
        || {
            let status = new_leader.child.try_wait().unwrap();
            async move { status }
        },
    )
    .await;
    assert!(
        exit.success(),
        "exit status after SIGTERM: {exit}\n{}",
        new_leader.log()
    );
    assert_eq!(
        holder(&admin).await,
        None,
        "the lease is released on SIGTERM"
    );
    assert!(
        new_leader.log().contains("released the lease"),
        "{}",
        new_leader.log()
    );
}

/// A leader that finds the Lease held by someone else stops at once (exit 1) instead of reconciling on
/// next to the new holder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_that_loses_the_lease_exits() {
    let cp = shared_control_plane().await;
    let admin = cp.admin_client().await.unwrap();
    let lease_ns = "lease-taken-over";
    create_namespace(&admin, lease_ns).await;
    let tmp = tempfile::tempdir().unwrap();
    let images = images_file(tmp.path());
    let mut args = LEADER_TIMINGS.to_vec();
    args.extend(["--leader-elect-namespace", lease_ns]);
    let mut replica = Replica::start_with(
        "replica-a",
        &cp.kubeconfig_path(),
        &images,
        tmp.path(),
        &args,
    );
    eventually(Duration::from_secs(30), "replica-a to lead", || async {
        (holder_in(&admin, lease_ns).await.as_deref() == Some("replica-a")).then_some(())
    })
    .await;
    eventually(Duration::from_secs(10), "/readyz of the leader", || async {
        (get(replica.http, "/readyz").await?.0 == 200).then_some(())
    })
    .await;

    // Another party takes the lease over (as after a network partition that outlasted the lease).
    let leases: Api<Lease> = Api::namespaced(admin.clone(), lease_ns);
    let mut lease = leases.get(LEASE).await.unwrap();
    let spec = lease.spec.as_mut().unwrap();
    spec.holder_identity = Some("intruder".into());
    spec.renew_time = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
        k8s_openapi::jiff::Timestamp::now(),
    ));
    leases
        .replace(LEASE, &Default::default(), &lease)
        .await
        .unwrap();
    let taken = Instant::now();

    let exit = eventually(Duration::from_secs(20), "replica-a to exit", || {
        let status = replica.child.try_wait().unwrap();
        async move { status }
    })
    .await;
    eprintln!(
        "replica-a exited {:?} after losing the lease",
        taken.elapsed()
    );
    assert_eq!(exit.code(), Some(1), "{}", replica.log());
    let log = replica.log();
    assert!(
        log.contains("lost leadership") && log.contains("intruder"),
        "{log}"
    );
    assert_eq!(
        holder_in(&admin, lease_ns).await.as_deref(),
        Some("intruder"),
        "the exiting replica does not release a lease it lost"
    );
}

/// Issue 8 item 6: the leader's path to the API server stops answering (a proxy that accepts and reads
/// but never forwards, as a hung API server or a dead connection nobody closes). Its renewals hang; each
/// is cut off at the renew deadline, so the old leader exits before its lease expires for the standby:
/// the standby's first write on the Lease comes after the old leader's exit, and no request of the old
/// leader reaches the API server after that (audit log, by user).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_whose_renewals_hang_exits_before_the_standby_takes_over() {
    let cp = shared_control_plane().await;
    let admin = cp.admin_client().await.unwrap();
    let lease_ns = "lease-hung";
    create_namespace(&admin, lease_ns).await;
    let tmp = tempfile::tempdir().unwrap();
    let images = images_file(tmp.path());
    // Two identities, so the audit log tells the replicas apart.
    let mut kubeconfigs = Vec::new();
    for name in ["replica-a", "replica-b"] {
        let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": format!("hung-lease-{name}")},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": lease_ns}]});
        apply(
            &admin,
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRoleBinding",
            "clusterrolebindings",
            &binding,
        )
        .await;
        kubeconfigs.push(cp.service_account_kubeconfig(lease_ns, name).await.unwrap());
    }
    let proxy = StallingProxy::start(cp.server()).await;
    let through_proxy = tmp.path().join("kubeconfig-replica-a-proxied");
    std::fs::write(
        &through_proxy,
        std::fs::read_to_string(&kubeconfigs[0])
            .unwrap()
            .replace(cp.server(), &proxy.url()),
    )
    .unwrap();
    let timings = [
        "--leader-elect-namespace",
        lease_ns,
        "--leader-elect-lease-duration",
        "10s",
        "--leader-elect-renew-deadline",
        "6s",
        "--leader-elect-retry-period",
        "1s",
    ];
    let mut leader =
        Replica::start_with("replica-a", &through_proxy, &images, tmp.path(), &timings);
    eventually(Duration::from_secs(60), "replica-a to lead", || async {
        (holder_in(&admin, lease_ns).await.as_deref() == Some("replica-a")).then_some(())
    })
    .await;
    let standby = Replica::start_with("replica-b", &kubeconfigs[1], &images, tmp.path(), &timings);
    eventually(Duration::from_secs(60), "replica-b to stand by", || async {
        standby.log().contains("standing by").then_some(())
    })
    .await;

    let user = |name: &str| format!("system:serviceaccount:{lease_ns}:{name}");
    let on_lease = |e: &&AuditEvent| {
        e.object_ref
            .as_ref()
            .is_some_and(|o| o.resource == "leases" && o.namespace.as_deref() == Some(lease_ns))
    };
    // The leader renews through the proxy before it stalls (so the deadline counts from a renewal).
    eventually(
        Duration::from_secs(30),
        "a renewal by replica-a",
        || async {
            cp.audit_events()
                .unwrap()
                .iter()
                .filter(on_lease)
                .any(|e| {
                    e.verb == "update"
                        && e.user.username == user("replica-a")
                        && e.response_code == Some(200)
                })
                .then_some(())
        },
    )
    .await;

    proxy.stall();
    let stalled = Instant::now();
    let exit = eventually(Duration::from_secs(60), "replica-a to exit", || {
        let status = leader.child.try_wait().unwrap();
        async move { status }
    })
    .await;
    eprintln!(
        "replica-a exited {:?} after its path stalled",
        stalled.elapsed()
    );
    assert_eq!(exit.code(), Some(1), "{}", leader.log());
    let log = leader.log();
    let lost = log
        .lines()
        .find(|l| l.contains("lost leadership"))
        .unwrap_or_else(|| panic!("no 'lost leadership' in:\n{log}"));
    assert!(lost.contains("renew deadline"), "{lost}");
    let exited_at = log_time(lost);

    eventually(
        Duration::from_secs(60),
        "replica-b to take over",
        || async {
            (holder_in(&admin, lease_ns).await.as_deref() == Some("replica-b")).then_some(())
        },
    )
    .await;
    let events = cp.audit_events().unwrap();
    let takeover = events
        .iter()
        .filter(on_lease)
        .find(|e| {
            e.is_write()
                && e.user.username == user("replica-b")
                && matches!(e.response_code, Some(200 | 201))
        })
        .expect("the standby's write that took the Lease over");
    let took_over_at = takeover.stage_timestamp.0;
    eprintln!("replica-a exited at {exited_at}, replica-b took the Lease over at {took_over_at}");
    assert!(
        exited_at < took_over_at,
        "the old leader exited ({exited_at}) before the standby took over ({took_over_at})"
    );
    let late: Vec<String> = events
        .iter()
        .filter(|e| e.user.username == user("replica-a") && e.stage_timestamp.0 >= took_over_at)
        .map(|e| format!("{} {} at {}", e.verb, e.request_uri, e.stage_timestamp.0))
        .collect();
    assert!(
        late.is_empty(),
        "requests of the old leader after the take-over: {late:?}"
    );
    drop(standby);
}

/// Issue 13: /metrics over TLS with the certificate from the files (the test mints it), only for callers
/// the API server authenticates (else 401) and authorizes for `get` on /metrics (else 403); a rotated
/// certificate is served without a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_served_over_tls_to_authorized_callers_only() {
    let cp = shared_control_plane().await;
    let admin = cp.admin_client().await.unwrap();
    let ns = "metrics-access";
    create_namespace(&admin, ns).await;
    let tmp = tempfile::tempdir().unwrap();
    let images = images_file(tmp.path());
    let serving = ServingCert::in_dir(tmp.path());
    // An admin runs this replica; the shipped RBAC for the reviews is exercised by the install test.
    let mut args = LEADER_TIMINGS.to_vec();
    args.extend(["--leader-elect-namespace", ns]);
    let replica = Replica::start_with("metrics", &cp.kubeconfig_path(), &images, tmp.path(), &args);

    // Without a token, with one the API server does not know, with another scheme: 401.
    let (code, body) = eventually(Duration::from_secs(30), "/metrics to answer", || {
        https_get(replica.metrics, &serving.ca, "/metrics", None)
    })
    .await;
    assert_eq!(code, 401, "{body}");
    for header in ["Bearer not-a-token", "Basic dXNlcjpwYXNz"] {
        let (code, body) = https_request(replica.metrics, &serving.ca, "/metrics", Some(header))
            .await
            .map(|r| (r.0, r.1))
            .unwrap();
        assert_eq!(code, 401, "{header}: {body}");
    }
    // A valid ServiceAccount without RBAC: 403, naming it.
    let scraper = token(&admin, ns, "scraper").await;
    let (code, body) = https_get(replica.metrics, &serving.ca, "/metrics", Some(&scraper))
        .await
        .unwrap();
    assert_eq!(code, 403, "{body}");
    assert!(
        body.contains("system:serviceaccount:metrics-access:scraper"),
        "{body}"
    );
    assert!(!body.contains("capi_installer"), "{body}");

    // Granted `get` on /metrics: 200 (a refusal is remembered for up to 10 s).
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "metrics-access-test"},
        "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]});
    apply(
        &admin,
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        "clusterroles",
        &role,
    )
    .await;
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "metrics-access-test"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "metrics-access-test"},
        "subjects": [{"kind": "ServiceAccount", "name": "scraper", "namespace": ns}]});
    apply(
        &admin,
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        &binding,
    )
    .await;
    let (_, metrics) = eventually(
        Duration::from_secs(60),
        "/metrics for the granted scraper",
        || async {
            let response =
                https_get(replica.metrics, &serving.ca, "/metrics", Some(&scraper)).await?;
            (response.0 == 200).then_some(response)
        },
    )
    .await;
    assert!(metrics.contains("capi_installer_build_info"), "{metrics}");

    // The minted certificate is what is served; a rotated one is served without a restart.
    assert_eq!(
        served_cert(replica.metrics, &serving.ca).await,
        Some(der(&serving.cert_pem()))
    );
    let rotated = serving.rotate();
    eventually(
        Duration::from_secs(30),
        "the rotated certificate to be served",
        || async {
            (served_cert(replica.metrics, &serving.ca).await? == der(&rotated)).then_some(())
        },
    )
    .await;
    let (code, _) = https_get(replica.metrics, &serving.ca, "/metrics", Some(&scraper))
        .await
        .unwrap();
    assert_eq!(code, 200);
    assert!(
        replica
            .log()
            .contains("serving the changed metrics certificate"),
        "{}",
        replica.log()
    );
}

/// /healthz is liveness only; /readyz stays 503 while the replica cannot reach the API server.
#[tokio::test]
async fn readyz_is_503_until_the_api_server_is_reached() {
    let tmp = tempfile::tempdir().unwrap();
    // Nothing listens on the server port: every request fails to connect.
    let unreachable = free_port();
    let kubeconfig = tmp.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://{unreachable}\n    \
             insecure-skip-tls-verify: true\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n  \
             context:\n    cluster: c\n    user: u\ncurrent-context: x\n"
        ),
    )
    .unwrap();
    let images = images_file(tmp.path());
    let replica = Replica::start("replica-a", &kubeconfig, &images, tmp.path());
    let (health, _) = eventually(Duration::from_secs(20), "/healthz", || {
        get(replica.http, "/healthz")
    })
    .await;
    assert_eq!(health, 200);
    // An election round has failed by now.
    eventually(
        Duration::from_secs(20),
        "a failed election round",
        || async {
            replica
                .log()
                .contains("cannot reach the lease")
                .then_some(())
        },
    )
    .await;
    let (ready, body) = get(replica.http, "/readyz").await.unwrap();
    assert_eq!(ready, 503, "{body}");
    // /metrics is served (without a token: 401, which needs no API server).
    let ca = ServingCert::in_dir(tmp.path()).ca;
    let (code, body) = https_get(replica.metrics, &ca, "/metrics", None)
        .await
        .expect("/metrics answers");
    assert_eq!(code, 401, "{body}");
}

/// One control plane (without workloads) for the tests of this file that do not need their own: each
/// uses its own Lease namespace.
async fn shared_control_plane() -> &'static ControlPlane {
    static CP: tokio::sync::OnceCell<ControlPlane> = tokio::sync::OnceCell::const_new();
    CP.get_or_init(|| async {
        ControlPlane::start(ControlPlaneOptions::default())
            .await
            .expect("control plane starts")
    })
    .await
}

async fn create_namespace(client: &Client, name: &str) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
    namespaces
        .patch(
            name,
            &PatchParams::apply("test").force(),
            &Patch::Apply(&ns),
        )
        .await
        .unwrap_or_else(|e| panic!("Namespace {name}: {e}"));
}

async fn apply(client: &Client, group: &str, version: &str, kind: &str, plural: &str, obj: &Value) {
    let ar = ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: if group.is_empty() {
            version.into()
        } else {
            format!("{group}/{version}")
        },
        kind: kind.into(),
        plural: plural.into(),
    };
    let name = obj["metadata"]["name"].as_str().unwrap();
    let api: Api<DynamicObject> = match obj["metadata"]["namespace"].as_str() {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
        None => Api::all_with(client.clone(), &ar),
    };
    api.patch(
        name,
        &PatchParams::apply("test").force(),
        &Patch::Apply(obj),
    )
    .await
    .unwrap_or_else(|e| panic!("{kind} {name}: {e}"));
}

/// The timestamp that starts a text log line (`2026-11-30T17:45:01.123456Z  ERROR ...`).
fn log_time(line: &str) -> k8s_openapi::jiff::Timestamp {
    line.split_whitespace()
        .next()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no timestamp at the start of {line:?}"))
}

/// A TCP proxy to the API server that can be made to stop forwarding: from then on it keeps accepting
/// and reading, but nothing reaches the other side in either direction, and no connection is closed
/// (what a hung API server or a half-dead connection looks like to a client). TLS passes through
/// untouched (the API server's certificate is valid for 127.0.0.1).
struct StallingProxy {
    addr: SocketAddr,
    stalled: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl StallingProxy {
    async fn start(server: &str) -> StallingProxy {
        let upstream: SocketAddr = server
            .trim_start_matches("https://")
            .parse()
            .expect("the API server's address");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stalled, watch) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(async move {
            let mut held = Vec::new();
            loop {
                let Ok((client, _)) = listener.accept().await else {
                    continue;
                };
                if *watch.borrow() {
                    held.push(client);
                    continue;
                }
                let watch = watch.clone();
                tokio::spawn(async move {
                    let Ok(server) = tokio::net::TcpStream::connect(upstream).await else {
                        return;
                    };
                    let (client_read, client_write) = client.into_split();
                    let (server_read, server_write) = server.into_split();
                    tokio::join!(
                        pump(client_read, server_write, watch.clone()),
                        pump(server_read, client_write, watch),
                    );
                });
            }
        });
        StallingProxy {
            addr,
            stalled,
            task,
        }
    }

    fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    fn stall(&self) {
        self.stalled.send_replace(true);
    }
}

impl Drop for StallingProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Copies `from` to `to` until the proxy stalls; then reads on but forwards nothing, forever.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    stalled: tokio::sync::watch::Receiver<bool>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if *stalled.borrow() {
            // Keep the connection open and forward nothing: the peer waits for an answer forever.
            std::future::pending::<()>().await;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

/// A token of ServiceAccount `namespace/name` (both created when missing).
async fn token(admin: &Client, namespace: &str, name: &str) -> String {
    create_namespace(admin, namespace).await;
    let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": name, "namespace": namespace}});
    apply(admin, "", "v1", "ServiceAccount", "serviceaccounts", &sa).await;
    let accounts: Api<k8s_openapi::api::core::v1::ServiceAccount> =
        Api::namespaced(admin.clone(), namespace);
    let request = k8s_openapi::api::authentication::v1::TokenRequest {
        spec: k8s_openapi::api::authentication::v1::TokenRequestSpec {
            expiration_seconds: Some(3600),
            ..Default::default()
        },
        ..Default::default()
    };
    accounts
        .create_token_request(name, &Default::default(), &request)
        .await
        .unwrap_or_else(|e| panic!("token of {namespace}/{name}: {e}"))
        .status
        .map(|s| s.token)
        .unwrap_or_default()
}

/// The metrics serving certificate of the replicas started in one folder: a CA and a certificate for
/// localhost / 127.0.0.1 that it issued, in `<dir>/metrics-tls/` (made by the first caller).
struct ServingCert {
    /// The CA certificate (PEM): what a scraper trusts, as Prometheus trusts the service-ca bundle.
    ca: String,
    ca_key: String,
    cert: PathBuf,
    key: PathBuf,
}

impl ServingCert {
    fn in_dir(dir: &Path) -> ServingCert {
        let tls = dir.join("metrics-tls");
        let serving = ServingCert {
            ca: String::new(),
            ca_key: String::new(),
            cert: tls.join("tls.crt"),
            key: tls.join("tls.key"),
        };
        if tls.join("ca.crt").exists() {
            return ServingCert {
                ca: std::fs::read_to_string(tls.join("ca.crt")).unwrap(),
                ca_key: std::fs::read_to_string(tls.join("ca.key")).unwrap(),
                ..serving
            };
        }
        std::fs::create_dir_all(&tls).unwrap();
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let ca = Self::ca_params().self_signed(&ca_key).unwrap();
        let serving = ServingCert {
            ca: ca.pem(),
            ca_key: ca_key.serialize_pem(),
            ..serving
        };
        std::fs::write(tls.join("ca.crt"), &serving.ca).unwrap();
        std::fs::write(tls.join("ca.key"), &serving.ca_key).unwrap();
        serving.rotate();
        serving
    }

    fn ca_params() -> rcgen::CertificateParams {
        let mut params = rcgen::CertificateParams::default();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "test-service-ca");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        params
    }

    /// Issues a new serving certificate and key and replaces the files as the kubelet updates a
    /// mounted Secret (each file renamed into place); returns the new certificate (PEM).
    fn rotate(&self) -> String {
        let issuer = rcgen::Issuer::new(
            Self::ca_params(),
            rcgen::KeyPair::from_pem(&self.ca_key).unwrap(),
        );
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params =
            rcgen::CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
                .unwrap();
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        let cert = params.signed_by(&key, &issuer).unwrap().pem();
        for (path, content) in [(&self.key, key.serialize_pem()), (&self.cert, cert.clone())] {
            let tmp = path.with_extension("new");
            std::fs::write(&tmp, content).unwrap();
            std::fs::rename(&tmp, path).unwrap();
        }
        cert
    }

    fn cert_pem(&self) -> String {
        std::fs::read_to_string(&self.cert).unwrap()
    }
}

fn der(pem: &str) -> Vec<u8> {
    use rustls::pki_types::pem::PemObject;
    rustls::pki_types::CertificateDer::from_pem_slice(pem.as_bytes())
        .unwrap()
        .to_vec()
}

/// GET over HTTPS, trusting only `ca`, as `localhost`, with a bearer token: (status, body).
async fn https_get(
    addr: SocketAddr,
    ca: &str,
    path: &str,
    token: Option<&str>,
) -> Option<(u16, String)> {
    let authorization = token.map(|t| format!("Bearer {t}"));
    https_request(addr, ca, path, authorization.as_deref())
        .await
        .map(|(code, body, _)| (code, body))
}

/// GET over HTTPS with an optional `Authorization` header: (status, body, the server's certificate).
/// `None` when nothing answers or the TLS handshake fails.
async fn https_request(
    addr: SocketAddr,
    ca: &str,
    path: &str,
    authorization: Option<&str>,
) -> Option<(u16, String, Vec<u8>)> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(der(ca).into()).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(addr).await.ok()?;
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut stream = tokio::time::timeout(Duration::from_secs(10), connector.connect(name, tcp))
        .await
        .ok()?
        .ok()?;
    let peer = stream.get_ref().1.peer_certificates()?.first()?.to_vec();
    let mut request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n");
    if let Some(value) = authorization {
        request.push_str(&format!("Authorization: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut response = Vec::new();
    // A server may close without TLS close_notify; what arrived is the whole response then.
    let _ = stream.read_to_end(&mut response).await;
    let response = String::from_utf8_lossy(&response);
    let status = response.split_whitespace().nth(1)?.parse().ok()?;
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Some((status, body, peer))
}

/// The certificate the server presents.
async fn served_cert(addr: SocketAddr, ca: &str) -> Option<Vec<u8>> {
    https_request(addr, ca, "/healthz", None).await.map(|r| r.2)
}
