//! The release's NetworkPolicies on the real node, whose agent enforces them (issue 33): the allowed
//! paths work and the denied ones are dropped. Connections are made from test pods (the pod sandbox
//! image the node's registry serves, which only waits) by entering their network namespaces, so that
//! each leaves with its pod's address, as a process of the pod would; they go to the pods' own
//! addresses on the node. A dropped connection is one that neither connects nor is refused within
//! [`DENIED_WITHIN`]: the agent drops the first packet, so nothing answers.
//!
//! The API server's calls to the webhooks are judged too (the node judges its connections to a
//! Service): the scenario's webhook checks, made with these policies in place, are the proof of those.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, PostParams};
use serde_json::json;
use test_support::*;

const T: Duration = Duration::from_secs(180);
/// How long a denied connection is given to connect or be refused.
const DENIED_WITHIN: Duration = Duration::from_secs(3);
const MONITORING_NS: &str = "openshift-monitoring";
/// The pod sandbox's image: served by the node's registry, it holds a process that only waits.
const PROBE_IMAGE: &str = "registry.ci.openshift.org/openshift:pod";
const INSTALLER_METRICS: u16 = 8443;
const HEALTH: u16 = 9440;
const PROVIDER_METRICS: u16 = 8443;
const WEBHOOK: u16 = 9443;

/// The pods the policies are about, running.
pub struct Targets {
    pub installer: Pod,
    pub deployer: Pod,
    pub aws_manager: Pod,
}

/// Each allowed path works and each denied one is dropped. `node_pid` is the real node's
/// ([`control_plane::ControlPlane::node_pid`]); `other_ns` a namespace of the test's, without policies.
pub async fn prove(
    admin: &Client,
    node_pid: i32,
    service_ca: &str,
    other_ns: &str,
    targets: &Targets,
) {
    ensure_namespace(admin, MONITORING_NS).await;
    // Cluster monitoring's ServiceAccount, which the release lets read the installer's /metrics.
    let prometheus_token = token(admin, MONITORING_NS, "prometheus-k8s").await;
    let monitoring = probe(admin, MONITORING_NS, "prometheus-k8s-0", "prometheus-k8s").await;
    let provider_ns = probe(admin, NS, "probe", "default").await;
    let other = probe(admin, other_ns, "probe", "default").await;
    let installer = pod_ip(&targets.installer);
    let deployer = pod_ip(&targets.deployer);
    let aws = pod_ip(&targets.aws_manager);

    // Allowed: monitoring scrapes the installer (its TLS certificate is the metrics Service's) and
    // reaches the AWS manager's metrics port; another namespace's pod reaches a provider's webhook
    // port; a provider's pod may leave on 443. Awaited: the agent judges a pod once it has seen it.
    let (status, body) = eventually(T, "monitoring scraping the installer's metrics", || async {
        let tcp = connect(
            node_pid,
            &monitoring,
            SocketAddr::new(installer, INSTALLER_METRICS),
            DENIED_WITHIN,
        )
        .await
        .ok()?;
        let authorization = format!("Bearer {prometheus_token}");
        https_request_over(
            tcp,
            service_ca,
            &format!("capi-installer-metrics.{INSTALLER_NS}.svc"),
            "/metrics",
            Some(&authorization),
        )
        .await
        .map(|(status, body, _)| (status, body))
    })
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("# TYPE"), "not metrics: {body}");
    for (from, to, what) in [
        (
            &monitoring,
            SocketAddr::new(aws, PROVIDER_METRICS),
            "monitoring to the AWS manager's metrics",
        ),
        (
            &other,
            SocketAddr::new(aws, WEBHOOK),
            "another namespace to the AWS manager's webhook port",
        ),
    ] {
        eventually(T, what, || async {
            connect(node_pid, from, to, DENIED_WITHIN).await.ok()
        })
        .await;
    }
    // Nothing listens on 443 in the other pod: refused means the packet got there and back.
    let other_ip = pod_ip(&other);
    eventually(T, "a provider's pod leaving on 443", || async {
        match connect(
            node_pid,
            &provider_ns,
            SocketAddr::new(other_ip, 443),
            DENIED_WITHIN,
        )
        .await
        {
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => Some(()),
            Ok(_) => Some(()),
            Err(_) => None,
        }
    })
    .await;

    // Denied: no pod of the providers' namespace reaches the installer or the deployer; no pod outside
    // monitoring reaches metrics (the installer's or a provider's), nor the installer's health port.
    let denied = [
        (
            &provider_ns,
            installer,
            INSTALLER_METRICS,
            "providers' pod to the installer's metrics",
        ),
        (
            &provider_ns,
            installer,
            HEALTH,
            "providers' pod to the installer's health port",
        ),
        (
            &provider_ns,
            deployer,
            HEALTH,
            "providers' pod to the deployer's health port",
        ),
        (
            &other,
            installer,
            INSTALLER_METRICS,
            "another namespace to the installer's metrics",
        ),
        (
            &other,
            installer,
            HEALTH,
            "another namespace to the installer's health port",
        ),
        (
            &other,
            aws,
            PROVIDER_METRICS,
            "another namespace to the AWS manager's metrics",
        ),
    ];
    let attempts = denied.iter().map(|(from, ip, port, what)| async move {
        let result = connect(node_pid, from, SocketAddr::new(*ip, *port), DENIED_WITHIN).await;
        (what, result)
    });
    for (what, result) in futures::future::join_all(attempts).await {
        match result {
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            Ok(_) => panic!("{what}: connected"),
            Err(e) => panic!("{what}: not dropped but {e} ({:?})", e.kind()),
        }
    }
}

/// A pod of the sandbox image in `ns`, Running with an address.
async fn probe(admin: &Client, ns: &str, name: &str, account: &str) -> Pod {
    let pods: Api<Pod> = Api::namespaced(admin.clone(), ns);
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": "netpol-probe"}},
        "spec": {"serviceAccountName": account, "automountServiceAccountToken": false,
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "probe", "image": PROBE_IMAGE}]}});
    pods.create(
        &PostParams::default(),
        &serde_json::from_value(pod).unwrap(),
    )
    .await
    .unwrap_or_else(|e| panic!("create Pod {ns}/{name}: {e}"));
    eventually(T, &format!("Pod {ns}/{name} running"), || async {
        let pod = pods.get(name).await.ok()?;
        let status = pod.status.as_ref()?;
        (status.phase.as_deref() == Some("Running") && status.pod_ip.is_some()).then_some(pod)
    })
    .await
}

fn pod_ip(pod: &Pod) -> IpAddr {
    pod.status
        .as_ref()
        .and_then(|s| s.pod_ip.as_deref())
        .unwrap()
        .parse()
        .unwrap()
}

/// A connection from `from`'s network namespace, as a tokio stream.
async fn connect(
    node_pid: i32,
    from: &Pod,
    to: SocketAddr,
    timeout: Duration,
) -> std::io::Result<tokio::net::TcpStream> {
    let IpAddr::V4(ip) = pod_ip(from) else {
        panic!("the node's pods have IPv4 addresses");
    };
    let stream = tokio::task::spawn_blocking(move || {
        control_plane::netpol::connect_from_pod(node_pid, ip, to, timeout)
    })
    .await
    .expect("the connecting task")?;
    stream.set_nonblocking(true)?;
    tokio::net::TcpStream::from_std(stream)
}
