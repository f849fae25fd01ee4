//! The `capi-controllers` process against the real control plane, as its own ServiceAccount under its
//! shipped RBAC: leader election on its own Lease, health and metrics endpoints, its own user agent,
//! the kubeconfig pointing where the process connects, and a clean stop on SIGTERM.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const BIN: &str = env!("CARGO_BIN_EXE_capi-controllers");
const NS: &str = "openshift-cluster-api";
const T: Duration = Duration::from_secs(60);

struct Process {
    child: Child,
    log: PathBuf,
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!(
                "---- capi-controllers log ----\n{}",
                std::fs::read_to_string(&self.log).unwrap_or_default()
            );
        }
    }
}

fn free_port() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
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

async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + T;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn ar(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        api_version: if group.is_empty() {
            version.into()
        } else {
            format!("{group}/{version}")
        },
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}

async fn apply(client: &kube::Client, r: &ApiResource, obj: Value) {
    let name = obj["metadata"]["name"].as_str().unwrap().to_string();
    let api: Api<DynamicObject> = match obj["metadata"]["namespace"].as_str() {
        Some(ns) => Api::namespaced_with(client.clone(), ns, r),
        None => Api::all_with(client.clone(), r),
    };
    api.patch(
        &name,
        &PatchParams::apply("cluster-version-operator").force(),
        &Patch::Apply(&obj),
    )
    .await
    .unwrap_or_else(|e| panic!("{} {name}: {e}", r.kind));
}

/// The objects of `manifests/0000_31_capi-controllers_*`, applied as the release payload would.
async fn apply_manifests(client: &kube::Client) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../manifests");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("0000_31_capi-controllers") && n.ends_with(".yaml"))
        })
        .collect();
    files.sort();
    let discovery = kube::discovery::Discovery::new(client.clone())
        .run_aggregated()
        .await
        .unwrap();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for doc in
            capi_manifests::yaml::parse_documents(&file.display().to_string(), &text).unwrap()
        {
            let types: kube::api::TypeMeta = serde_json::from_value(doc.value.clone()).unwrap();
            let gvk = kube::api::GroupVersionKind::try_from(&types).unwrap();
            let (resource, _) = discovery.resolve_gvk(&gvk).expect("kind served");
            apply(client, &resource, doc.value).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_as_its_service_account_with_its_lease_endpoints_and_user_agent() {
    let cp = control_plane::ControlPlane::start(Default::default())
        .await
        .expect("control plane starts");
    let admin = cp.admin_client().await.unwrap();
    for ns in [NS, "openshift-machine-api"] {
        apply(
            &admin,
            &ar("", "v1", "Namespace", "namespaces"),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        )
        .await;
    }
    apply(
        &admin,
        &ar(
            "config.openshift.io",
            "v1",
            "ClusterOperator",
            "clusteroperators",
        ),
        json!({"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
            "metadata": {"name": "cluster-api"}, "spec": {}}),
    )
    .await;
    let infrastructures = ar(
        "config.openshift.io",
        "v1",
        "Infrastructure",
        "infrastructures",
    );
    apply(
        &admin,
        &infrastructures,
        json!({"apiVersion": "config.openshift.io/v1", "kind": "Infrastructure",
            "metadata": {"name": "cluster"}, "spec": {"platformSpec": {"type": "AWS"}}}),
    )
    .await;
    Api::<DynamicObject>::all_with(admin.clone(), &infrastructures)
        .patch_status(
            "cluster",
            &PatchParams::apply("openshift-installer").force(),
            &Patch::Apply(json!({"apiVersion": "config.openshift.io/v1", "kind": "Infrastructure",
                "metadata": {"name": "cluster"},
                "status": {"platform": "AWS", "platformStatus": {"type": "AWS", "aws": {"region": "eu-west-1"}},
                    "infrastructureName": "demo-x7k2p", "apiServerURL": "https://api.demo.example.com:6443",
                    "apiServerInternalURI": "https://api-int.demo.example.com:6443",
                    "controlPlaneTopology": "HighlyAvailable", "infrastructureTopology": "HighlyAvailable",
                    "cpuPartitioning": "None", "etcdDiscoveryDomain": ""}})),
        )
        .await
        .unwrap();
    apply_manifests(&admin).await;

    let kubeconfig = cp
        .service_account_kubeconfig(NS, "capi-controllers")
        .await
        .unwrap();
    let http = free_port();
    let log = cp.dir().join("capi-controllers.log");
    let mut process = Process {
        child: Command::new(BIN)
            .args(["run", "--kubeconfig"])
            .arg(&kubeconfig)
            .args([
                "--instance",
                "capi-controllers-0",
                "--http-addr",
                &http.to_string(),
            ])
            .args([
                "--leader-elect-lease-duration",
                "15s",
                "--leader-elect-renew-deadline",
                "10s",
            ])
            .args(["--leader-elect-retry-period", "2s"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("capi-controllers starts"),
        log,
    };

    // Its own Lease, held by this replica.
    let leases: Api<Lease> = Api::namespaced(admin.clone(), NS);
    eventually("the Lease held", || async {
        let lease = leases.get_opt("capi-controllers-leader").await.ok()??;
        (lease.spec?.holder_identity?.as_str() == "capi-controllers-0").then_some(())
    })
    .await;
    assert_eq!(get(http, "/healthz").await.map(|r| r.0), Some(200));
    eventually("ready", || async {
        (get(http, "/readyz").await?.0 == 200).then_some(())
    })
    .await;

    // The controllers run: the kubeconfig points where the process connects; the CRD-less
    // controllers wait for the installer without errors.
    let secrets: Api<DynamicObject> =
        Api::namespaced_with(admin.clone(), NS, &ar("", "v1", "Secret", "secrets"));
    let secret = eventually("the kubeconfig Secret", || async {
        secrets.get_opt("demo-x7k2p-kubeconfig").await.ok()?
    })
    .await;
    let text = capi_cluster_controllers::kubeconfig::render::kubeconfig_of(
        &serde_json::to_value(&secret).unwrap(),
    )
    .unwrap();
    let parsed = kube::config::Kubeconfig::from_yaml(&text).unwrap();
    assert_eq!(
        parsed.clusters[0]
            .cluster
            .as_ref()
            .unwrap()
            .server
            .as_deref(),
        Some(cp.server())
    );
    let cos: Api<DynamicObject> = Api::all_with(
        admin.clone(),
        &ar(
            "config.openshift.io",
            "v1",
            "ClusterOperator",
            "clusteroperators",
        ),
    );
    eventually("InfraCluster controller waiting for its CRD", || async {
        let co = cos.get("cluster-api").await.ok()?;
        co.data["status"]["conditions"]
            .as_array()?
            .iter()
            .any(|c| {
                c["type"] == "InfraClusterControllerAvailable"
                    && c["reason"] == "WaitingForCustomResourceDefinitions"
            })
            .then_some(())
    })
    .await;
    let (status, metrics) = get(http, "/metrics").await.unwrap();
    assert_eq!(status, 200);
    for series in [
        "capi_controllers_reconciles_total{",
        "capi_controllers_build_info{",
    ] {
        assert!(metrics.contains(series), "{series} missing:\n{metrics}");
    }

    // Every request of the ServiceAccount carries the controllers' user agent, and none was denied.
    let user = "system:serviceaccount:openshift-cluster-api:capi-controllers";
    let ua = capi_cluster_controllers::user_agent();
    let events = cp.audit_events().unwrap();
    let ours: Vec<_> = events.iter().filter(|e| e.user.username == user).collect();
    assert!(!ours.is_empty());
    let other_agents: Vec<_> = ours
        .iter()
        .filter(|e| e.user_agent.as_deref() != Some(ua.as_str()))
        .map(|e| e.user_agent.clone())
        .collect();
    assert!(other_agents.is_empty(), "{other_agents:?}");
    let denied: Vec<_> = ours
        .iter()
        .filter(|e| e.response_code == Some(403))
        .map(|e| e.request_uri.clone())
        .collect();
    assert!(denied.is_empty(), "{denied:?}");

    // SIGTERM: the Lease is released and the process exits 0.
    // SAFETY: signalling our own child by its pid.
    assert_eq!(
        unsafe { libc::kill(process.child.id() as i32, libc::SIGTERM) },
        0
    );
    let status = eventually("exit", || {
        let status = process.child.try_wait().unwrap();
        async move { status }
    })
    .await;
    assert!(status.success(), "{status:?}");
    let lease = leases.get("capi-controllers-leader").await.unwrap();
    assert_eq!(
        lease
            .spec
            .and_then(|s| s.holder_identity)
            .unwrap_or_default(),
        ""
    );
}
