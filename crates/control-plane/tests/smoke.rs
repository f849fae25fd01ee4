//! Smoke tests of the control plane against the real binaries (built by tools/control-plane/build.sh
//! on first use). Each test starts its own control plane.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use control_plane::{ControlPlane, ControlPlaneOptions, OpenShiftCrds};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::json;

fn plain() -> ControlPlaneOptions {
    ControlPlaneOptions {
        openshift_crds: OpenShiftCrds::Skip,
        ..Default::default()
    }
}

fn config_map(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some(
            data.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
        ),
        ..Default::default()
    }
}

fn pids(dir: &Path) -> Vec<(String, i32)> {
    let mut pids: Vec<(String, i32)> = std::fs::read_dir(dir.join("pids"))
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            let pid = std::fs::read_to_string(&path)
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            (name, pid)
        })
        .collect();
    pids.sort();
    pids
}

/// Alive and not a zombie (orphans of `up` may linger as zombies when pid 1 does not reap).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit_once(')').unwrap().1.trim_start().chars().next();
            !matches!(state, Some('Z') | Some('X'))
        }
        Err(_) => false,
    }
}

fn wait_all_gone(pids: &[(String, i32)], timeout: Duration) -> Vec<String> {
    let start = Instant::now();
    loop {
        let left: Vec<String> = pids
            .iter()
            .filter(|(_, pid)| alive(*pid))
            .map(|(name, pid)| format!("{name} ({pid})"))
            .collect();
        if left.is_empty() || start.elapsed() > timeout {
            return left;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[tokio::test]
async fn configmap_round_trip_idempotent_apply_and_cleanup() {
    let cp = ControlPlane::start(plain()).await.unwrap();
    let client = cp.admin_client().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client, "default");

    api.create(&PostParams::default(), &config_map("smoke", &[("a", "1")]))
        .await
        .unwrap();
    let read = api.get("smoke").await.unwrap();
    assert_eq!(read.data.unwrap()["a"], "1");
    api.delete("smoke", &DeleteParams::default()).await.unwrap();
    assert!(api.get_opt("smoke").await.unwrap().is_none());

    // The same server-side apply twice: the second is a no-op and must not bump resourceVersion.
    let params = PatchParams::apply("smoke-test");
    let desired = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "applied", "labels": {"x": "y"}},
        "data": {"k": "v"},
    });
    let first = api
        .patch("applied", &params, &Patch::Apply(&desired))
        .await
        .unwrap();
    let second = api
        .patch("applied", &params, &Patch::Apply(&desired))
        .await
        .unwrap();
    assert!(first.metadata.resource_version.is_some());
    assert_eq!(
        first.metadata.resource_version,
        second.metadata.resource_version
    );

    // Drop kills every process and removes the temporary folder.
    let dir = cp.dir().to_path_buf();
    let pids = pids(&dir);
    assert_eq!(
        pids.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        ["etcd", "kube-apiserver"]
    );
    cp.stop();
    assert_eq!(
        wait_all_gone(&pids, Duration::from_secs(5)),
        Vec::<String>::new()
    );
    assert!(!dir.exists(), "{} left behind", dir.display());
}

#[tokio::test]
async fn unprivileged_service_account_is_denied_and_audit_log_has_user_agents() {
    let cp = ControlPlane::start(plain()).await.unwrap();

    let mut config = cp.admin_config();
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static("control-plane-smoke/1.0"),
    ));
    let admin = kube::Client::try_from(config).unwrap();
    Api::<ConfigMap>::namespaced(admin, "default")
        .create(&PostParams::default(), &config_map("audited", &[]))
        .await
        .unwrap();

    let sa = cp.service_account_client("smoke", "nobody").await.unwrap();
    let err = Api::<ConfigMap>::namespaced(sa, "smoke")
        .create(&PostParams::default(), &config_map("denied", &[]))
        .await
        .unwrap_err();
    match &err {
        kube::Error::Api(status) => assert_eq!(status.code, 403, "{status:?}"),
        other => panic!("expected 403, got {other}"),
    }
    let kubeconfig = cp.dir().join("kubeconfig-smoke-nobody");
    assert!(kubeconfig.is_file());

    let events = cp.audit_events().unwrap();
    let created = events
        .iter()
        .find(|e| {
            e.verb == "create"
                && e.object_ref.as_ref().and_then(|o| o.name.as_deref()) == Some("audited")
        })
        .expect("audit event of the admin create");
    assert_eq!(
        created.user_agent.as_deref(),
        Some("control-plane-smoke/1.0")
    );
    assert_eq!(created.user.username, "admin");
    assert!(created.user.groups.iter().any(|g| g == "system:masters"));
    assert_eq!(created.response_code, Some(201));
    let object = created.object_ref.as_ref().unwrap();
    assert_eq!(
        (object.resource.as_str(), object.namespace.as_deref()),
        ("configmaps", Some("default"))
    );

    let denied = events
        .iter()
        .find(|e| e.verb == "create" && e.response_code == Some(403))
        .expect("audit event of the denied create");
    assert_eq!(denied.user.username, "system:serviceaccount:smoke:nobody");
    assert!(events.iter().all(|e| e.stage != "RequestReceived"));
}

#[tokio::test]
async fn openshift_crds_are_established_and_infrastructure_status_is_writable() {
    // The default: the pinned openshift/api module's CRDs (tools/openshift-api) and this crate's own.
    let cp = ControlPlane::start(ControlPlaneOptions {
        openshift_crds: OpenShiftCrds::Default,
        ..Default::default()
    })
    .await
    .unwrap();
    let client = cp.admin_client().await.unwrap();

    let crds = Api::<CustomResourceDefinition>::all(client.clone())
        .list(&ListParams::default())
        .await
        .unwrap();
    let mut names: Vec<String> = crds
        .items
        .iter()
        .filter(|crd| {
            crd.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|c| {
                    c.iter()
                        .any(|c| c.type_ == "Established" && c.status == "True")
                })
        })
        .filter_map(|crd| crd.metadata.name.clone())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "apiservers.config.openshift.io",
            "clusterapis.operator.openshift.io",
            "clusteroperators.config.openshift.io",
            "clusterversions.config.openshift.io",
            "compatibilityrequirements.apiextensions.openshift.io",
            "credentialsrequests.cloudcredential.openshift.io",
            "featuregates.config.openshift.io",
            "infrastructures.config.openshift.io",
            "proxies.config.openshift.io",
        ]
    );

    let gvk = GroupVersionKind::gvk("config.openshift.io", "v1", "Infrastructure");
    let infrastructures: Api<DynamicObject> = Api::all_with(client, &ApiResource::from_gvk(&gvk));
    let infra: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "config.openshift.io/v1", "kind": "Infrastructure",
        "metadata": {"name": "cluster"},
        "spec": {"platformSpec": {"type": "AWS"}},
    }))
    .unwrap();
    infrastructures
        .create(&PostParams::default(), &infra)
        .await
        .unwrap();
    let status = json!({"status": {
        "platform": "AWS",
        "platformStatus": {"type": "AWS", "aws": {"region": "us-east-1"}},
        "infrastructureName": "smoke-abcde",
        "controlPlaneTopology": "HighlyAvailable",
        "infrastructureTopology": "HighlyAvailable",
    }});
    infrastructures
        .patch_status("cluster", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
    let read = infrastructures.get("cluster").await.unwrap();
    assert_eq!(read.data["status"]["platformStatus"]["type"], "AWS");
    assert_eq!(read.data["spec"]["platformSpec"]["type"], "AWS");
}

/// Shaped like a real provider Deployment: system-cluster-critical, pinned to control-plane nodes,
/// tolerating their taints, and mounting a serving-cert secret that only service-ca would create.
fn provider_like_deployment() -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "capi-controller-manager", "namespace": "openshift-cluster-api"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "capi"}},
            "template": {
                "metadata": {"labels": {"app": "capi"}},
                "spec": {
                    "priorityClassName": "system-cluster-critical",
                    "nodeSelector": {"node-role.kubernetes.io/master": ""},
                    "tolerations": [
                        {"key": "node-role.kubernetes.io/master", "effect": "NoSchedule", "operator": "Exists"},
                        {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule", "operator": "Exists"},
                        {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute", "operator": "Exists", "tolerationSeconds": 120},
                    ],
                    "containers": [{
                        "name": "manager",
                        "image": "registry.ci.openshift.org/openshift:cluster-api",
                        "resources": {"requests": {"cpu": "10m", "memory": "50Mi"}},
                        "terminationMessagePolicy": "FallbackToLogsOnError",
                        "volumeMounts": [{"name": "cert", "mountPath": "/tmp/k8s-webhook-server/serving-certs", "readOnly": true}],
                    }],
                    "volumes": [{"name": "cert", "secret": {"secretName": "capi-webhook-service-cert", "defaultMode": 420}}],
                },
            },
        },
    }))
    .unwrap()
}

#[tokio::test]
async fn provider_like_deployment_becomes_available_under_kwok() {
    let cp = ControlPlane::start(ControlPlaneOptions {
        with_workloads: true,
        openshift_crds: OpenShiftCrds::Skip,
        ..Default::default()
    })
    .await
    .unwrap();
    let client = cp.admin_client().await.unwrap();
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "openshift-cluster-api"}}))
                .unwrap(),
        )
        .await
        .unwrap();
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "openshift-cluster-api");
    deployments
        .create(&PostParams::default(), &provider_like_deployment())
        .await
        .unwrap();

    let start = Instant::now();
    let available = wait_until(Duration::from_secs(60), || rolled_out(&deployments)).await;
    let pods: Api<Pod> = Api::namespaced(client, "openshift-cluster-api");
    let list = pods.list(&ListParams::default()).await.unwrap();
    assert!(
        available,
        "Deployment not Available after 60s; pods: {:#?}",
        list.items.iter().map(|p| &p.status).collect::<Vec<_>>()
    );
    eprintln!("Deployment Available after {:?}", start.elapsed());
    assert_eq!(list.items.len(), 1);
    let pod = &list.items[0];
    assert_eq!(
        pod.spec.as_ref().unwrap().node_name.as_deref(),
        Some("kwok-node-0")
    );
    let ready = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
    assert!(ready, "{:#?}", pod.status);

    // A rollout (what an upgrade does) replaces the pod: KWOK deletes the old one once it is
    // terminating, as a kubelet would.
    let first_pod = pod.metadata.name.clone().unwrap();
    let image = json!({"spec": {"template": {"spec": {"containers": [
        {"name": "manager", "image": "registry.ci.openshift.org/openshift:cluster-api-v2"}
    ]}}}});
    deployments
        .patch(
            "capi-controller-manager",
            &PatchParams::default(),
            &Patch::Strategic(&image),
        )
        .await
        .unwrap();
    let replaced = wait_until(Duration::from_secs(60), || async {
        let names: Vec<String> = pods
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter_map(|p| p.metadata.name)
            .collect();
        names.len() == 1 && names[0] != first_pod && rolled_out(&deployments).await
    })
    .await;
    assert!(replaced, "rollout did not replace pod {first_pod}");

    // Deleting the Deployment takes its pods along (garbage collector + KWOK).
    deployments
        .delete("capi-controller-manager", &DeleteParams::default())
        .await
        .unwrap();
    let gone = wait_until(Duration::from_secs(60), || async {
        pods.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    })
    .await;
    assert!(gone, "pods left after deleting their Deployment");
}

/// Available, with every replica updated and ready for the current generation.
async fn rolled_out(deployments: &Api<Deployment>) -> bool {
    let d = deployments.get("capi-controller-manager").await.unwrap();
    let generation = d.metadata.generation;
    let status = d.status.unwrap_or_default();
    let available = status
        .conditions
        .unwrap_or_default()
        .iter()
        .any(|c| c.type_ == "Available" && c.status == "True");
    available
        && status.observed_generation == generation
        && status.updated_replicas == Some(1)
        && status.ready_replicas == Some(1)
        && status.replicas == Some(1)
}

async fn wait_until<F, Fut>(timeout: Duration, mut condition: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    loop {
        if condition().await {
            return true;
        }
        if start.elapsed() > timeout {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[test]
fn up_and_down_leave_no_process_behind() {
    let dir = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_control-plane");
    let up = std::process::Command::new(bin)
        .args(["up", "--with-workloads", "--skip-openshift-crds", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&up.stdout);
    assert!(
        up.status.success(),
        "up failed: {}{}",
        stdout,
        String::from_utf8_lossy(&up.stderr)
    );
    let kubeconfig = dir.path().join("kubeconfig");
    assert_eq!(
        stdout.trim(),
        format!("kubeconfig: {}", kubeconfig.display())
    );

    let pids = pids(dir.path());
    assert_eq!(
        pids.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        [
            "etcd",
            "kube-apiserver",
            "kube-controller-manager",
            "kube-scheduler",
            "kwok"
        ]
    );
    assert!(pids.iter().all(|(_, pid)| alive(*pid)), "{pids:?}");

    // The processes outlived `up`, and kubectl works with the kubeconfig it wrote.
    let kubectl = control_plane::bin_dir().unwrap().join("kubectl");
    let get = std::process::Command::new(kubectl)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["get", "--raw", "/readyz"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&get.stdout).trim(), "ok");

    let down = std::process::Command::new(bin)
        .args(["down", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        down.status.success(),
        "{}",
        String::from_utf8_lossy(&down.stderr)
    );
    // `down` waits until everything is gone, so nothing may be left right after it returns.
    assert_eq!(wait_all_gone(&pids, Duration::ZERO), Vec::<String>::new());
    assert_eq!(
        std::fs::read_dir(dir.path().join("pids")).unwrap().count(),
        0
    );
}

/// The guarantee behind PR_SET_PDEATHSIG: even a SIGKILLed owner (no drop, no cleanup) takes its
/// control plane down with it.
#[test]
fn killed_owner_takes_its_processes_down() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let mut run = std::process::Command::new(env!("CARGO_BIN_EXE_control-plane"))
        .args(["run", "--skip-openshift-crds", "--dir"])
        .arg(dir.path())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(run.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("kubeconfig: "), "{line:?}");
    let pids = pids(dir.path());
    assert_eq!(pids.len(), 2);
    assert!(pids.iter().all(|(_, pid)| alive(*pid)), "{pids:?}");

    run.kill().unwrap();
    run.wait().unwrap();
    assert_eq!(
        wait_all_gone(&pids, Duration::from_secs(10)),
        Vec::<String>::new()
    );
}

/// A component that dies during startup fails `up` with its name and the end of its log, and
/// whatever was already started is stopped.
#[test]
fn startup_failure_reports_the_log_and_stops_the_rest() {
    use std::os::unix::fs::PermissionsExt;
    let fake_bin = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let script = |name: &str, body: &str| {
        let path = fake_bin.path().join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    // etcd keeps running, the API server fails after a moment (as on a bad flag).
    let marker = dir.path().join("etcd-pid");
    script(
        "etcd",
        &format!("echo $$ > {}\nexec sleep 60", marker.display()),
    );
    script(
        "kube-apiserver",
        "sleep 0.3\necho 'E1129 run.go:72] \"command failed\" err=\"simulated\"' >&2\nexit 1",
    );

    let up = std::process::Command::new(env!("CARGO_BIN_EXE_control-plane"))
        .args(["up", "--skip-openshift-crds", "--dir"])
        .arg(dir.path())
        .env("CAPI_CONTROL_PLANE_BIN_DIR", fake_bin.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&up.stderr);
    assert!(!up.status.success());
    assert!(
        stderr.contains("kube-apiserver exited during startup (exit status: 1)"),
        "{stderr}"
    );
    assert!(stderr.contains("err=\"simulated\""), "{stderr}");

    let etcd: i32 = std::fs::read_to_string(&marker)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let left = wait_all_gone(&[("etcd".into(), etcd)], Duration::from_secs(5));
    assert_eq!(left, Vec::<String>::new());
    assert_eq!(
        std::fs::read_dir(dir.path().join("pids")).unwrap().count(),
        0
    );
}
