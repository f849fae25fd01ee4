//! The real node (issues 16 and 31): pods run from the locally built images on containerd 2, the
//! service-ca stand-in issues serving certificates and injects CA bundles, nothing of the node
//! outlives it — neither when it is dropped nor when its test process dies without dropping it — and
//! the machine's kernel settings are the same after it ran.
//!
//! Needs the images of `hack/images.sh`, containerd 2 (`tools/containerd/build.sh`) and the
//! distribution's runc and CNI plugins (`hack/node-prerequisites.sh`); skips without the images
//! outside CI.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use control_plane::{ControlPlane, ControlPlaneOptions, NodeOptions, OpenShiftCrds};
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service};
use kube::api::{Api, ObjectMeta, PostParams};
use serde_json::json;

const T: Duration = Duration::from_secs(180);
/// Set for the child process of [`a_killed_test_process_leaves_nothing_behind`].
const ABORT_AFTER_START: &str = "CONTROL_PLANE_TEST_ABORT_AFTER_START";

fn node_options(images: PathBuf) -> ControlPlaneOptions {
    ControlPlaneOptions {
        node: Some(NodeOptions { images }),
        openshift_crds: OpenShiftCrds::Skip,
        ..Default::default()
    }
}

async fn eventually<T, Fut: Future<Output = Option<T>>>(
    what: &str,
    mut check: impl FnMut() -> Fut,
) -> T {
    let deadline = std::time::Instant::now() + T;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The processes whose pid namespace is `pid_ns` (`/proc/<pid>/ns/pid` link text).
fn processes_in(pid_ns: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter(|e| {
            std::fs::read_link(e.path().join("ns/pid")).is_ok_and(|l| l.to_string_lossy() == pid_ns)
        })
        // A zombie has exited already; whether the machine's pid 1 reaps it is not the node's doing.
        .filter(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            let state = stat
                .rsplit_once(')')
                .map(|(_, r)| r.trim_start().chars().next());
            !matches!(state, Some(Some('Z' | 'X')) | None)
        })
        .map(|e| {
            let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            String::from_utf8_lossy(&cmdline).replace('\0', " ")
        })
        .collect()
}

/// The cgroup folders of the node's containers, from containerd's bundles.
fn container_cgroups(dir: &Path) -> Vec<PathBuf> {
    let bundles = dir.join("node/containerd/state/io.containerd.runtime.v2.task/k8s.io");
    let mut found = Vec::new();
    for bundle in std::fs::read_dir(bundles).into_iter().flatten().flatten() {
        let Ok(spec) = std::fs::read(bundle.path().join("config.json")) else {
            continue;
        };
        let spec: serde_json::Value = serde_json::from_slice(&spec).unwrap();
        let path = spec["linux"]["cgroupsPath"].as_str().unwrap().to_string();
        for hierarchy in std::fs::read_dir("/sys/fs/cgroup").unwrap().flatten() {
            let cgroup = hierarchy.path().join(path.trim_start_matches('/'));
            if cgroup.exists() {
                found.push(cgroup);
            }
        }
    }
    found
}

/// The values of the kernel settings the kubelet sets, under `dir` (`/proc/sys`, or the node's copies,
/// whose names have dots for slashes).
fn kernel_settings(dir: &Path, dotted: bool) -> BTreeMap<&'static str, String> {
    control_plane::node::KUBELET_KERNEL_SETTINGS
        .iter()
        .map(|s| {
            let file = if dotted {
                s.replace('/', ".")
            } else {
                s.to_string()
            };
            let value = std::fs::read_to_string(dir.join(&file))
                .unwrap_or_else(|e| panic!("read {}: {e}", dir.join(&file).display()));
            (*s, value.trim().to_string())
        })
        .collect()
}

async fn running_pod(client: &kube::Client, name: &str) -> Pod {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "pause", "image": control_plane::registry::SANDBOX_IMAGE,
            "imagePullPolicy": "Always"}]}
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    eventually("the pod to run", || async {
        let pod = pods.get(name).await.ok()?;
        let status = pod.status.as_ref()?;
        (status.phase.as_deref() == Some("Running") && status.pod_ip.is_some()).then_some(pod)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_runs_and_the_node_leaves_nothing_behind() {
    let Some(images) = control_plane::images_dir() else {
        return;
    };
    // The machine's, before the node starts.
    let machine = kernel_settings(Path::new("/proc/sys"), false);
    let cp = ControlPlane::start(node_options(images))
        .await
        .expect("control plane with a real node");
    let client = cp.admin_client().await.unwrap();

    let pod = running_pod(&client, "pause").await;
    // The kubelet set what it sets (vm.overcommit_memory=1, kernel.panic=10, ...) on the node's
    // copies, not on the machine.
    let copies = kernel_settings(
        &cp.dir().join(control_plane::node::KERNEL_SETTINGS_DIR),
        true,
    );
    assert_eq!(
        (
            copies["vm/overcommit_memory"].as_str(),
            copies["kernel/panic"].as_str(),
            copies["kernel/panic_on_oops"].as_str()
        ),
        ("1", "10", "1"),
        "the kubelet's kernel settings: {copies:?}"
    );
    assert_eq!(
        kernel_settings(Path::new("/proc/sys"), false),
        machine,
        "the machine's kernel settings changed while the node ran"
    );
    // Not only unchanged because the machine had the kubelet's values already (a node of an earlier
    // version may have set them): in the node's mount namespace every one of them is a copy.
    let mountinfo =
        std::fs::read_to_string(format!("/proc/{}/mountinfo", cp.node_pid().unwrap())).unwrap();
    for setting in control_plane::node::KUBELET_KERNEL_SETTINGS {
        let target = format!(" /proc/sys/{setting} ");
        assert!(
            mountinfo.lines().any(|l| l.contains(&target)),
            "/proc/sys/{setting} is the machine's in the node: {mountinfo}"
        );
    }
    let ip = pod.status.unwrap().pod_ip.unwrap();
    assert!(
        ip.starts_with("10.88."),
        "pod IP {ip} is not from the bridge's range"
    );

    // The `kubernetes` Service points at the node, where pods reach the API server.
    let endpoints = client
        .request_text(
            http::Request::get("/api/v1/namespaces/default/endpoints/kubernetes")
                .body(Vec::new())
                .unwrap(),
        )
        .await
        .unwrap();
    assert!(
        endpoints.contains(&control_plane::node::NODE_IP.to_string()),
        "the kubernetes Service does not point at the node: {endpoints}"
    );

    let dir = cp.dir().to_path_buf();
    let pid_ns = std::fs::read_link(format!("/proc/{}/ns/pid", cp.node_pid().unwrap()))
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(!processes_in(&pid_ns).is_empty());
    let cgroups = container_cgroups(&dir);
    assert!(!cgroups.is_empty(), "found no cgroup of the running pod");

    drop(cp);
    assert_eq!(
        processes_in(&pid_ns),
        Vec::<String>::new(),
        "processes left"
    );
    let left: Vec<&PathBuf> = cgroups.iter().filter(|c| c.exists()).collect();
    assert!(left.is_empty(), "cgroups left: {left:?}");
    assert_eq!(
        kernel_settings(Path::new("/proc/sys"), false),
        machine,
        "the machine's kernel settings changed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_ca_issues_serving_certificates_and_injects_bundles() {
    let Some(images) = control_plane::images_dir() else {
        return;
    };
    let cp = ControlPlane::start(node_options(images)).await.unwrap();
    let client = cp.admin_client().await.unwrap();
    let ca = cp.service_ca_pem().unwrap().to_string();

    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let service: Service = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "webhook", "annotations":
            {"service.beta.openshift.io/serving-cert-secret-name": "webhook-cert"}},
        "spec": {"ports": [{"port": 443, "targetPort": 9443}]}
    }))
    .unwrap();
    let service = services
        .create(&PostParams::default(), &service)
        .await
        .unwrap();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let secret = eventually("the serving certificate", || async {
        secrets.get_opt("webhook-cert").await.ok().flatten()
    })
    .await;
    assert_eq!(secret.type_.as_deref(), Some("kubernetes.io/tls"));
    let data = secret.data.unwrap();
    let chain = String::from_utf8(data["tls.crt"].0.clone()).unwrap();
    assert!(
        chain.ends_with(&ca),
        "the chain does not end with the service CA"
    );
    assert!(
        data["tls.key"]
            .0
            .starts_with(b"-----BEGIN PRIVATE KEY-----")
    );
    let owner = &secret.metadata.owner_references.unwrap()[0];
    assert_eq!(Some(&owner.uid), service.metadata.uid.as_ref());

    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some("bundle".into()),
            annotations: Some(BTreeMap::from([(
                "service.beta.openshift.io/inject-cabundle".to_string(),
                "true".to_string(),
            )])),
            ..Default::default()
        },
        ..Default::default()
    };
    configmaps
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
    let injected = eventually("the injected bundle", || async {
        configmaps
            .get("bundle")
            .await
            .ok()?
            .data?
            .remove("service-ca.crt")
    })
    .await;
    assert_eq!(injected, ca);
}

/// The child of [`a_killed_test_process_leaves_nothing_behind`]: starts a node with a running pod,
/// prints its pid 1 and folder, and aborts (no destructor runs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by a_killed_test_process_leaves_nothing_behind"]
async fn start_a_node_and_abort() {
    if std::env::var_os(ABORT_AFTER_START).is_none() {
        return;
    }
    let images = control_plane::images_dir().unwrap();
    let cp = ControlPlane::start(node_options(images)).await.unwrap();
    running_pod(&cp.admin_client().await.unwrap(), "pause").await;
    println!("node {} {}", cp.node_pid().unwrap(), cp.dir().display());
    std::process::abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_test_process_leaves_nothing_behind() {
    let Some(images) = control_plane::images_dir() else {
        return;
    };
    let output = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "start_a_node_and_abort",
            "--ignored",
            "--nocapture",
        ])
        .env(ABORT_AFTER_START, "1")
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("node "))
        .unwrap_or_else(|| {
            panic!(
                "the child started no node: {stdout}{}",
                String::from_utf8_lossy(&output.stderr)
            )
        });
    let (pid, dir) = line.split_once(' ').unwrap();
    let dir = PathBuf::from(dir);
    // The child's node died with it (parent-death signal, then pid 1's death).
    eventually("the aborted node's pid 1 to be gone", || async {
        (!Path::new(&format!("/proc/{pid}")).exists()).then_some(())
    })
    .await;
    let cgroups = container_cgroups(&dir);
    assert!(
        !cgroups.is_empty(),
        "the aborted node left no cgroup to sweep"
    );
    // Its containers' cgroups are what the next node sweeps.
    let cp = ControlPlane::start(node_options(images)).await.unwrap();
    let left: Vec<&PathBuf> = cgroups.iter().filter(|c| c.exists()).collect();
    assert!(left.is_empty(), "cgroups left: {left:?}");
    drop(cp);
    let _ = std::fs::remove_dir_all(dir);
}
