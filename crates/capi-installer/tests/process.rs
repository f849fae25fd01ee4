//! `capi-installer run` as a process, against a real control plane with workloads: two replicas elect a
//! leader on Lease `capi-installer-leader`, the leader installs the fixture providers, the standby takes
//! over when the leader is killed, and a SIGTERM releases the lease. Also scrapes /healthz, /readyz and
//! /metrics, and reads the result back with `capi-installer status`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use control_plane::{ControlPlane, ControlPlaneOptions};
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
    log: PathBuf,
}

impl Replica {
    fn start(name: &str, kubeconfig: &Path, images: &Path, dir: &Path) -> Replica {
        let http = free_port();
        let log = dir.join(format!("{name}.log"));
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
                "--deployment-timeout",
                "3m",
            ])
            // Short leader election timings (the defaults are OpenShift's 137s / 107s / 26s).
            .args([
                "--leader-elect-lease-duration",
                "15s",
                "--leader-elect-renew-deadline",
                "10s",
                "--leader-elect-retry-period",
                "2s",
            ])
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
    let mut pp = PatchParams::apply("cluster-version-operator").force();
    pp.field_validation = Some(ValidationDirective::Strict);
    let mut applied = Vec::new();
    for file in files {
        for doc in documents(&file) {
            let obj: DynamicObject = serde_json::from_value(doc.clone()).unwrap();
            let types = obj.types.clone().unwrap();
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
    let leases: Api<Lease> = Api::namespaced(client.clone(), NS);
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
    let (code, metrics) = get(leader.http, "/metrics")
        .await
        .expect("/metrics answers");
    assert_eq!(code, 200);
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
    let (_, standby_metrics) = get(standby.http, "/metrics").await.unwrap();
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
            let (_, m) = get(new_leader.http, "/metrics").await?;
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
    let cp = ControlPlane::start(ControlPlaneOptions::default())
        .await
        .expect("control plane starts");
    let admin = cp.admin_client().await.unwrap();
    let namespaces: Api<Namespace> = Api::all(admin.clone());
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}});
    namespaces
        .patch(NS, &PatchParams::apply("test").force(), &Patch::Apply(&ns))
        .await
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let images = images_file(tmp.path());
    let mut replica = Replica::start("replica-a", &cp.kubeconfig_path(), &images, tmp.path());
    eventually(Duration::from_secs(30), "replica-a to lead", || async {
        (holder(&admin).await.as_deref() == Some("replica-a")).then_some(())
    })
    .await;
    eventually(Duration::from_secs(10), "/readyz of the leader", || async {
        (get(replica.http, "/readyz").await?.0 == 200).then_some(())
    })
    .await;

    // Another party takes the lease over (as after a network partition that outlasted the lease).
    let leases: Api<Lease> = Api::namespaced(admin.clone(), NS);
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
        holder(&admin).await.as_deref(),
        Some("intruder"),
        "the exiting replica does not release a lease it lost"
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
    let (_, metrics) = get(replica.http, "/metrics").await.unwrap();
    assert!(metrics.contains("capi_installer_build_info"), "{metrics}");
}
