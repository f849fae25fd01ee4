//! kube-controller-manager, kube-scheduler and KWOK: enough of a cluster for Deployments to become
//! Available, with no container runtime. KWOK plays the kubelet of one fake node: it marks the node
//! Ready, keeps its lease fresh and moves every pod bound to it to Running/Ready. It never looks at
//! volumes, images or secrets, so a pod whose secret volume does not exist yet (service-ca would
//! create it in OpenShift) still becomes Ready.

use std::path::Path;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, PostParams};

use crate::error::{Error, io, kube as kube_err};
use crate::files::{Files, args, ignore_exists};

/// Starts a process of the control plane (its name, binary and arguments), as the control plane
/// runs its processes (inside the real node's namespaces when it has one).
pub(crate) type Spawn<'a> =
    dyn FnMut(&'static str, &Path, Vec<String>) -> Result<(), Error> + Send + 'a;

pub const NODE_NAME: &str = "kwok-node-0";

/// Which nodes KWOK manages: only those carrying this annotation, so a test may add real-looking
/// nodes of its own that stay NotReady.
const KWOK_ANNOTATION: (&str, &str) = ("kwok.x-k8s.io/node", "fake");

const STAGES: &str = include_str!("kwok-stages.yaml");

pub(crate) async fn start(
    spawn: &mut Spawn<'_>,
    bin: &Path,
    files: &Files,
    client: &kube::Client,
) -> Result<(), Error> {
    start_controllers(spawn, bin, files, &files.kubeconfig)?;
    let p = |path: &Path| path.display().to_string();
    let kubeconfig = format!("--kubeconfig={}", p(&files.kubeconfig));
    create_node(client).await?;
    std::fs::write(&files.kwok_config, STAGES)
        .map_err(io(format!("write {}", files.kwok_config.display())))?;
    spawn(
        "kwok",
        &bin.join("kwok"),
        args(&[
            &kubeconfig,
            &format!("--config={}", p(&files.kwok_config)),
            &format!(
                "--manage-nodes-with-annotation-selector={}={}",
                KWOK_ANNOTATION.0, KWOK_ANNOTATION.1
            ),
            // The node heartbeat stage renews status only every 10 minutes; the lease is what
            // keeps the node lifecycle controller from tainting the node unreachable.
            "--node-lease-duration-seconds=40",
            "--node-ip=10.0.1.1",
            "--cidr=10.1.0.0/16",
        ]),
    )?;
    Ok(())
}

/// kube-controller-manager and kube-scheduler, talking to the API server through `kubeconfig`.
pub(crate) fn start_controllers(
    spawn: &mut Spawn<'_>,
    bin: &Path,
    files: &Files,
    kubeconfig: &Path,
) -> Result<(), Error> {
    let p = |path: &Path| path.display().to_string();
    let kubeconfig = format!("--kubeconfig={}", p(kubeconfig));
    spawn(
        "kube-controller-manager",
        &bin.join("kube-controller-manager"),
        args(&[
            &kubeconfig,
            &format!("--service-account-private-key-file={}", p(&files.sa_key)),
            &format!("--root-ca-file={}", p(&files.ca_cert)),
            &format!("--cluster-signing-cert-file={}", p(&files.ca_cert)),
            &format!("--cluster-signing-key-file={}", p(&files.ca_key)),
            "--leader-elect=false",
            // A node whose heartbeat is late by the grace period (50 s by default) is marked
            // NotReady and every pod on it unready, so every provider Deployment turns unavailable,
            // which the installer rightly reports. On a loaded 2-core machine KWOK's (or the real
            // kubelet's) lease renewal can be that late; no test exercises a node that dies, so a
            // late heartbeat must never look like one.
            "--node-monitor-grace-period=10m",
            // No serving port: nothing scrapes it, and fixed default ports would collide between
            // control planes of parallel tests.
            "--secure-port=0",
            "--profiling=false",
        ]),
    )?;
    spawn(
        "kube-scheduler",
        &bin.join("kube-scheduler"),
        args(&[
            &kubeconfig,
            "--leader-elect=false",
            "--secure-port=0",
            "--profiling=false",
        ]),
    )?;
    Ok(())
}

/// The fake node, shaped like an OpenShift control-plane node as provider Deployments select it
/// (`node-role.kubernetes.io/master`/`control-plane`, `kubernetes.io/os: linux`), without taints and
/// with room for anything a test schedules.
fn node() -> Node {
    let capacity = serde_json::json!({"cpu": "64", "memory": "256Gi", "pods": "1000"});
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": NODE_NAME,
            "annotations": {
                KWOK_ANNOTATION.0: KWOK_ANNOTATION.1,
                "node.alpha.kubernetes.io/ttl": "0",
            },
            "labels": {
                "kubernetes.io/hostname": NODE_NAME,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node-role.kubernetes.io/master": "",
                "node-role.kubernetes.io/control-plane": "",
                "type": "kwok",
            },
        },
        "spec": {},
        "status": {"allocatable": capacity, "capacity": capacity},
    }))
    .expect("static Node")
}

async fn create_node(client: &kube::Client) -> Result<(), Error> {
    let nodes: Api<Node> = Api::all(client.clone());
    ignore_exists(nodes.create(&PostParams::default(), &node()).await)
        .map_err(kube_err(format!("create Node {NODE_NAME}")))
}

pub(crate) async fn wait_node_ready(
    client: &kube::Client,
    timeout: Duration,
    kwok_log: &Path,
) -> Result<(), Error> {
    let nodes: Api<Node> = Api::all(client.clone());
    let start = Instant::now();
    loop {
        let node = nodes
            .get(NODE_NAME)
            .await
            .map_err(kube_err(format!("get Node {NODE_NAME}")))?;
        let ready = node
            .status
            .and_then(|s| s.conditions)
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        let untainted = node
            .spec
            .and_then(|s| s.taints)
            .unwrap_or_default()
            .is_empty();
        if ready && untainted {
            return Ok(());
        }
        if start.elapsed() > timeout {
            return Err(Error::Timeout {
                what: format!("Node {NODE_NAME} to be Ready without taints (KWOK)"),
                seconds: timeout.as_secs(),
                log: Some(kwok_log.to_path_buf()),
                tail: crate::process::tail(kwok_log),
            });
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
