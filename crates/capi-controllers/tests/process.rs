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

/// A CA and a serving certificate for localhost signed by it, written to `dir/tls.{crt,key}` (what
/// service-ca would issue into the metrics Secret); returns the CA (PEM) a scraper trusts.
fn serving_certificate(dir: &Path) -> String {
    let mut ca_params = rcgen::CertificateParams::default();
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "test-service-ca");
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    let cert = params.signed_by(&key, &issuer).unwrap();
    std::fs::write(dir.join("tls.crt"), cert.pem()).unwrap();
    std::fs::write(dir.join("tls.key"), key.serialize_pem()).unwrap();
    ca.pem()
}

/// GET over HTTPS, trusting `ca`, with a bearer token: (status, body). `None` when nothing answers.
async fn https_get(addr: SocketAddr, ca: &str, path: &str, token: &str) -> Option<(u16, String)> {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls::pki_types::CertificateDer::from_pem_slice(ca.as_bytes()).unwrap())
        .unwrap();
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
    let mut stream = connector.connect(name, tcp).await.ok()?;
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response).await;
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
    // Strict: a misspelt field in a manifest fails the test instead of being pruned.
    let mut params = PatchParams::apply("cluster-version-operator").force();
    params.field_validation = Some(kube::api::ValidationDirective::Strict);
    api.patch(&name, &params, &Patch::Apply(&obj))
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
    let metrics = free_port();
    let ca = serving_certificate(cp.dir());
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
            .args([
                "--metrics-addr",
                &metrics.to_string(),
                "--metrics-cert-file",
            ])
            .arg(cp.dir().join("tls.crt"))
            .arg("--metrics-key-file")
            .arg(cp.dir().join("tls.key"))
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
    // /metrics over TLS, for a caller allowed to `get` it (as cluster monitoring is).
    apply(
        &admin,
        &ar(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRole",
            "clusterroles",
        ),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "test-metrics-reader"},
            "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]}),
    )
    .await;
    apply(
        &admin,
        &ar("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings"),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "test-metrics-reader"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "test-metrics-reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "scraper", "namespace": NS}]}),
    )
    .await;
    let scraper =
        std::fs::read_to_string(cp.service_account_kubeconfig(NS, "scraper").await.unwrap())
            .unwrap();
    let token = scraper
        .lines()
        .find_map(|l| l.trim().strip_prefix("token: "))
        .expect("the kubeconfig holds a token")
        .to_string();
    let body = eventually("/metrics with our series", || async {
        let (status, body) = https_get(metrics, &ca, "/metrics", &token).await?;
        (status == 200 && body.contains("capi_controllers_reconciles_total{")).then_some(body)
    })
    .await;
    assert!(body.contains("capi_controllers_build_info{"), "{body}");
    assert_eq!(
        get(http, "/metrics").await.map(|r| r.0),
        Some(404),
        "not on the plain port"
    );

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
