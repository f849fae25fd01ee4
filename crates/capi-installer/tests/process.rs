//! `capi-installer run` as a process, against a real control plane with workloads: two replicas elect a
//! leader on Lease `capi-installer-leader`, the leader installs the fixture providers, the standby takes
//! over when the leader is killed, and a SIGTERM releases the lease. Also probes /healthz and /readyz,
//! scrapes /metrics over TLS as cluster monitoring would (with the RBAC of `manifests/`), and reads the
//! result back with `capi-installer status`. The other tests: a leader that loses its Lease or whose
//! renewals hang exits; who may read /metrics (401, 403, 200) and certificate rotation.

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use control_plane::{AuditEvent, ControlPlane, ControlPlaneOptions};
use k8s_openapi::api::coordination::v1::Lease;
use kube::Client;
use kube::api::Api;
use serde_json::{Value, json};
use test_support::*;

const BIN: &str = env!("CARGO_BIN_EXE_capi-installer");
const LEASE: &str = "capi-installer-leader";

/// `capi-installer run` as replica `name`, with the images of `images`, a Deployment timeout of 3
/// minutes, the test release version and [`LEADER_TIMINGS`].
fn replica(name: &str, kubeconfig: &Path, images: &Path, dir: &Path) -> Replica {
    replica_with(name, kubeconfig, images, dir, &LEADER_TIMINGS)
}

/// With `extra` flags instead of [`LEADER_TIMINGS`].
fn replica_with(
    name: &str,
    kubeconfig: &Path,
    images: &Path,
    dir: &Path,
    extra: &[&str],
) -> Replica {
    let mut run = Command::new(BIN);
    run.arg("run")
        .arg("--images-json")
        .arg(images)
        .args(["--deployment-timeout", "3m"])
        .args(extra)
        .env("RELEASE_VERSION", RELEASE_VERSION);
    Replica::start(run, name, kubeconfig, dir)
}

async fn holder(client: &Client) -> Option<String> {
    lease_holder(client, INSTALLER_NS, LEASE).await
}

async fn holder_in(client: &Client, namespace: &str) -> Option<String> {
    lease_holder(client, namespace, LEASE).await
}

/// Waits until the ClusterOperator is Available=True and Degraded=False (Progressing may be either).
async fn available_not_degraded(client: &Client, timeout: Duration) -> Value {
    eventually(
        timeout,
        "ClusterOperator cluster-api Available=True, Degraded=False",
        || async {
            let s = co_status(client).await?;
            let available = condition(&s, "Available")?.status == "True";
            let degraded = condition(&s, "Degraded")?.status == "True";
            (available && !degraded).then_some(s)
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn standby_takes_over_when_the_leader_dies_and_sigterm_releases_the_lease() {
    require_fixture!("transport-configmaps");
    let cp = ControlPlane::start(ControlPlaneOptions {
        with_workloads: true,
        ..Default::default()
    })
    .await
    .expect("control plane starts");
    let admin = cp.admin_client().await.unwrap();
    set_platform(&admin, "AWS").await;
    // The installer's own release manifests are accepted by the API server as they are.
    let applied = apply_release_manifests(&admin, "0000_").await;
    for expected in [
        "Namespace openshift-cluster-api",
        "Namespace openshift-cluster-api-operator",
        "ServiceAccount capi-installer",
        "ConfigMap capi-installer-images",
        "ServiceAccount capi-installer-deployer",
        "Deployment capi-installer-deployer",
        "ClusterOperator cluster-api",
    ] {
        assert!(
            applied.iter().any(|a| a == expected),
            "{expected} not in manifests/: {applied:?}"
        );
    }
    load_payload(&admin, &[CORE_CM, AWS_CM]).await.unwrap();

    let tmp = tempfile::tempdir().unwrap();
    let images = images_file(tmp.path());
    // The replicas run as the ServiceAccount of manifests/, with only the RBAC shipped there.
    let kubeconfig = cp
        .service_account_kubeconfig(INSTALLER_NS, "capi-installer")
        .await
        .expect("ServiceAccount kubeconfig");
    let mut replicas = vec![
        replica("replica-a", &kubeconfig, &images, tmp.path()),
        replica("replica-b", &kubeconfig, &images, tmp.path()),
    ];

    // One of them leads; the leader installs both providers.
    let first = eventually(Duration::from_secs(30), "a leader", || holder(&admin)).await;
    let started = Instant::now();
    let status = available_not_degraded(&admin, Duration::from_secs(240)).await;
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
    assert_eq!(
        http_get(leader.http, "/healthz").await.map(|r| r.0),
        Some(200)
    );
    assert_eq!(
        http_get(leader.http, "/readyz").await.map(|r| r.0),
        Some(200)
    );
    // A standby is ready too (documented: it stands by, having reached the API server).
    let standby_ready = eventually(Duration::from_secs(10), "standby /readyz", || async {
        http_get(standby.http, "/readyz").await
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
    assert_eq!(
        http_get(leader.http, "/metrics").await.map(|r| r.0),
        Some(404)
    );
    let (code, metrics) = eventually(
        Duration::from_secs(30),
        "/metrics for prometheus-k8s",
        || https_get(leader.metrics, &ca, "/metrics", Some(&prometheus)),
    )
    .await;
    assert_eq!(code, 200, "{metrics}");
    let series = metric_samples(&metrics);
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
        !metric_samples(&standby_metrics).contains_key("capi_installer_reconciles_total"),
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
            metric_samples(&m)
                .contains_key("capi_installer_reconciles_total")
                .then_some(())
        },
    )
    .await;
    let status = available_not_degraded(&admin, Duration::from_secs(60)).await;
    assert_eq!(
        condition(&status, "Progressing")
            .map(|c| c.status)
            .as_deref(),
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
    ensure_namespace(&admin, lease_ns).await;
    let tmp = tempfile::tempdir().unwrap();
    let images = images_file(tmp.path());
    let mut args = LEADER_TIMINGS.to_vec();
    args.extend(["--leader-elect-namespace", lease_ns]);
    let mut replica = replica_with(
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
        (http_get(replica.http, "/readyz").await?.0 == 200).then_some(())
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
    ensure_namespace(&admin, lease_ns).await;
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
            &ar(
                "rbac.authorization.k8s.io",
                "v1",
                "ClusterRoleBinding",
                "clusterrolebindings",
            ),
            &binding,
            "test",
        )
        .await;
        kubeconfigs.push(cp.service_account_kubeconfig(lease_ns, name).await.unwrap());
    }
    let proxy = Proxy::start(cp.server()).await;
    let through_proxy = proxy.kubeconfig(&kubeconfigs[0], cp.server(), tmp.path());
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
    let mut leader = replica_with("replica-a", &through_proxy, &images, tmp.path(), &timings);
    eventually(Duration::from_secs(60), "replica-a to lead", || async {
        (holder_in(&admin, lease_ns).await.as_deref() == Some("replica-a")).then_some(())
    })
    .await;
    let standby = replica_with("replica-b", &kubeconfigs[1], &images, tmp.path(), &timings);
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
    ensure_namespace(&admin, ns).await;
    let tmp = tempfile::tempdir().unwrap();
    let images = images_file(tmp.path());
    let serving = ServingCert::in_dir(tmp.path());
    // An admin runs this replica; the shipped RBAC for the reviews is exercised by the install test.
    let mut args = LEADER_TIMINGS.to_vec();
    args.extend(["--leader-elect-namespace", ns]);
    let replica = replica_with("metrics", &cp.kubeconfig_path(), &images, tmp.path(), &args);

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
        &ar(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRole",
            "clusterroles",
        ),
        &role,
        "test",
    )
    .await;
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "metrics-access-test"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "metrics-access-test"},
        "subjects": [{"kind": "ServiceAccount", "name": "scraper", "namespace": ns}]});
    apply(
        &admin,
        &ar(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRoleBinding",
            "clusterrolebindings",
        ),
        &binding,
        "test",
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
    let replica = replica("replica-a", &kubeconfig, &images, tmp.path());
    let (health, _) = eventually(Duration::from_secs(20), "/healthz", || {
        http_get(replica.http, "/healthz")
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
    let (ready, body) = http_get(replica.http, "/readyz").await.unwrap();
    assert_eq!(ready, 503, "{body}");
    // /metrics is served (without a token: 401, which needs no API server).
    let ca = ServingCert::in_dir(tmp.path()).ca;
    let (code, body) = https_get(replica.metrics, &ca, "/metrics", None)
        .await
        .expect("/metrics answers");
    assert_eq!(code, 401, "{body}");
}

/// Without `--images-json`, `run` reads the release's images from ConfigMap `capi-installer-images` of
/// its namespace, in the reference's format (every value an image reference). A missing ConfigMap or a
/// value that is not an image stops it before its first write (exit 2, as a bad images file), with one
/// error naming the ConfigMap and each bad key; once the ConfigMap is right, the same command starts and leads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_reads_the_images_configmap_and_refuses_a_malformed_one() {
    let cp = shared_control_plane().await;
    let admin = cp.admin_client().await.unwrap();
    let ns = "images-configmap";
    ensure_namespace(&admin, ns).await;
    let tmp = tempfile::tempdir().unwrap();
    let start = |name: &str| {
        let mut run = Command::new(BIN);
        run.args(["run", "--installer-namespace", ns])
            .args(LEADER_TIMINGS)
            .env("RELEASE_VERSION", RELEASE_VERSION);
        Replica::start(run, name, &cp.kubeconfig_path(), tmp.path())
    };
    let exit_of = |mut replica: Replica| async move {
        let status = eventually(Duration::from_secs(30), "the replica to exit", || {
            let status = replica.child.try_wait().unwrap();
            async move { status }
        })
        .await;
        (status.code(), replica.log())
    };
    let origin = format!("ConfigMap {ns}/capi-installer-images");

    let (code, log) = exit_of(start("no-configmap")).await;
    assert_eq!(code, Some(2), "{log}");
    let errors: Vec<&str> = log.lines().filter(|l| l.starts_with("error: ")).collect();
    assert_eq!(
        errors,
        [format!(
            "error: {origin}: the ConfigMap is not there (the release payload applies it)"
        )],
        "{log}"
    );

    // The shipped ConfigMap with one value that is no image reference and one in binaryData.
    let shipped = repo_manifests("0000_30_capi-installer_02_images-configmap").remove(0);
    let mut bad = shipped.clone();
    bad["metadata"]["namespace"] = json!(ns);
    bad["data"]["aws-cluster-api-controllers"] =
        json!("registry.ci.openshift.org/openshift:aws cluster");
    bad["binaryData"] = json!({"extra-controllers": "AAAA"});
    let configmaps: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(admin.clone(), ns);
    configmaps
        .create(&Default::default(), &serde_json::from_value(bad).unwrap())
        .await
        .unwrap();
    let mark = k8s_openapi::jiff::Timestamp::now();
    let (code, log) = exit_of(start("malformed")).await;
    assert_eq!(code, Some(2), "{log}");
    let errors: Vec<&str> = log.lines().filter(|l| l.starts_with("error: ")).collect();
    assert_eq!(errors.len(), 1, "{log}");
    assert!(
        errors[0].starts_with(&format!(
            "error: {origin}: key \"aws-cluster-api-controllers\": \"registry.ci.openshift.org/openshift:aws cluster\" is not an image reference"
        )) && errors[0].ends_with("; binaryData key \"extra-controllers\": an image reference is text, under data"),
        "{log}"
    );
    // Nothing written: no Lease taken, nothing in its namespace. (Only there: the other tests of this
    // file run installers on the same control plane meanwhile, with the same user agent, and their
    // cluster-wide writes cannot be told apart from this replica's; it exits before it campaigns, so
    // it reaches none.)
    let writes: Vec<_> = installer_writes(&cp.audit_events().unwrap(), Some(mark))
        .into_iter()
        .filter(|w| {
            w.object_ref
                .as_ref()
                .is_some_and(|o| o.namespace.as_deref() == Some(ns))
        })
        .collect();
    assert!(
        writes.is_empty(),
        "{:?}",
        writes.iter().map(describe).collect::<Vec<_>>()
    );
    assert_eq!(holder_in(&admin, ns).await, None);

    // The release's ConfigMap as shipped: the installer starts and leads.
    let mut good = shipped;
    good["metadata"]["namespace"] = json!(ns);
    configmaps
        .replace(
            "capi-installer-images",
            &Default::default(),
            &serde_json::from_value(good).unwrap(),
        )
        .await
        .unwrap();
    let replica = start("good");
    eventually(Duration::from_secs(30), "the replica to lead", || async {
        (holder_in(&admin, ns).await.as_deref() == Some("good")).then_some(())
    })
    .await;
    assert!(
        replica.log().contains("starting installer"),
        "{}",
        replica.log()
    );
}

/// One control plane (without workloads) for the tests of this file that do not need their own: each
/// uses its own Lease namespace. Shared while a test holds it, stopped — its folder removed — when the
/// last one lets go (a `static` is never dropped: its folder was left behind in `/tmp` by every run).
async fn shared_control_plane() -> Arc<ControlPlane> {
    static SHARED: tokio::sync::Mutex<Weak<ControlPlane>> =
        tokio::sync::Mutex::const_new(Weak::new());
    let mut shared = SHARED.lock().await;
    if let Some(cp) = shared.upgrade() {
        return cp;
    }
    let cp = Arc::new(
        ControlPlane::start(ControlPlaneOptions::default())
            .await
            .expect("control plane starts"),
    );
    *shared = Arc::downgrade(&cp);
    cp
}
