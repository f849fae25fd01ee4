//! Shared setup of the controllers' integration tests: a real control plane, the objects OpenShift and
//! the installer would have created (Infrastructure, ClusterOperator, CRDs from the real transport
//! ConfigMaps, Machine API objects), and the controllers run in-process.
#![allow(dead_code)]

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use capi_cluster_controllers::kubeconfig::Settings;
use capi_cluster_controllers::{Config, ControllerKind, Controllers, Metrics, user_agent};
use control_plane::{AuditEvent, ControlPlane, ControlPlaneOptions};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

pub const NS: &str = "openshift-cluster-api";
pub const MAPI_NS: &str = "openshift-machine-api";
pub const INFRA_NAME: &str = "demo-x7k2p";

pub const CORE_CM: &str = "0000_30_cluster-api_04_cm.core-cluster-api.yaml";
pub const CORE_CRDS: &str = "0000_30_cluster-api_04_crd.core-cluster-api.yaml";
pub const AWS_CM: &str = "0000_30_cluster-api_04_cm.infrastructure-aws.yaml";
pub const GCP_CM: &str = "0000_30_cluster-api_04_cm.infrastructure-gcp.yaml";
pub const AZURE_CM: &str = "0000_30_cluster-api_04_cm.infrastructure-azure.yaml";
pub const VSPHERE_CM: &str = "0000_30_cluster-api_04_cm.infrastructure-vsphere.yaml";

/// Returns from the test (with a printed reason) when a fixture is missing outside CI.
#[macro_export]
macro_rules! require_fixture {
    ($rel:expr) => {
        match control_plane::shared_fixture($rel) {
            Some(p) => p,
            None => return,
        }
    };
}

pub struct Env {
    pub cp: ControlPlane,
    pub admin: Client,
}

impl Env {
    pub async fn start(with_workloads: bool) -> Env {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(
                tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
                    tracing_subscriber::EnvFilter::new("info,kube=warn,kube_client=off")
                }),
            )
            .with_test_writer()
            .try_init();
        let cp = ControlPlane::start(ControlPlaneOptions {
            with_workloads,
            ..Default::default()
        })
        .await
        .expect("control plane starts");
        let admin = cp.admin_client().await.expect("admin client");
        Env { cp, admin }
    }

    pub fn audit(&self) -> Vec<AuditEvent> {
        self.cp.audit_events().expect("audit log readable")
    }

    /// A client of the admin identity that sends the controllers' user agent.
    pub fn controllers_admin_client(&self) -> Client {
        with_user_agent(self.cp.admin_config())
    }

    /// Controller settings for this control plane (kubeconfig pointing at it).
    pub fn config(&self, controllers: &[ControllerKind]) -> Config {
        let mut config = Config::new(
            Settings::from_client_config(&self.cp.admin_config()).expect("admin config has a CA"),
        );
        config.controllers = controllers.to_vec();
        config.backoff_min = Duration::from_millis(500);
        config.backoff_max = Duration::from_secs(5);
        config
    }
}

pub fn with_user_agent(mut config: kube::Config) -> Client {
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_str(&user_agent()).unwrap(),
    ));
    Client::try_from(config).unwrap()
}

/// Controllers running in this process; stopped when dropped.
pub struct Running {
    task: tokio::task::JoinHandle<()>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    pub metrics: Arc<Metrics>,
}

impl Running {
    pub fn start(client: Client, config: Config) -> Running {
        let metrics = Arc::new(Metrics::unregistered());
        let controllers = Controllers::new(client, config, metrics.clone());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(controllers.run(async {
            let _ = stopped.await;
        }));
        Running {
            task,
            stop: Some(stop),
            metrics,
        }
    }

    pub async fn stop(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        let _ = tokio::time::timeout(Duration::from_secs(30), &mut self.task).await;
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub fn ar(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
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

pub fn namespaced(client: &Client, ns: &str, r: &ApiResource) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), ns, r)
}

pub fn secrets(client: &Client, ns: &str) -> Api<DynamicObject> {
    namespaced(client, ns, &ar("", "v1", "Secret", "secrets"))
}

pub fn cluster_operators(client: &Client) -> Api<DynamicObject> {
    Api::all_with(
        client.clone(),
        &ar(
            "config.openshift.io",
            "v1",
            "ClusterOperator",
            "clusteroperators",
        ),
    )
}

/// Server-side apply as `manager` (force), namespaced when the object says so.
pub async fn apply(client: &Client, r: &ApiResource, obj: &Value, manager: &str) -> DynamicObject {
    let name = obj["metadata"]["name"].as_str().unwrap().to_string();
    let api: Api<DynamicObject> = match obj["metadata"]["namespace"].as_str() {
        Some(ns) => Api::namespaced_with(client.clone(), ns, r),
        None => Api::all_with(client.clone(), r),
    };
    api.patch(
        &name,
        &PatchParams::apply(manager).force(),
        &Patch::Apply(obj),
    )
    .await
    .unwrap_or_else(|e| panic!("applying {} {name}: {e}", r.kind))
}

pub async fn ensure_namespace(client: &Client, ns: &str) {
    apply(
        client,
        &ar("", "v1", "Namespace", "namespaces"),
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        "cluster-version-operator",
    )
    .await;
}

/// `Infrastructure/cluster` as the OpenShift installer writes it: the platform, the infrastructure name,
/// the internal API URL, plus `platform_status` merged into `status.platformStatus` and `spec`.
pub async fn set_infrastructure(
    client: &Client,
    platform: &str,
    platform_status: Value,
    spec: Value,
) {
    let r = ar(
        "config.openshift.io",
        "v1",
        "Infrastructure",
        "infrastructures",
    );
    let mut spec_obj = json!({"platformSpec": {"type": platform}});
    merge(&mut spec_obj, spec);
    apply(
        client,
        &r,
        &json!({"apiVersion": "config.openshift.io/v1", "kind": "Infrastructure",
            "metadata": {"name": "cluster"}, "spec": spec_obj}),
        "openshift-installer",
    )
    .await;
    let mut ps = json!({"type": platform});
    merge(&mut ps, platform_status);
    let status = json!({"apiVersion": "config.openshift.io/v1", "kind": "Infrastructure",
        "metadata": {"name": "cluster"},
        "status": {"platform": platform, "platformStatus": ps,
            "infrastructureName": INFRA_NAME, "apiServerURL": "https://api.demo.example.com:6443",
            "apiServerInternalURI": "https://api-int.demo.example.com:6443",
            "controlPlaneTopology": "HighlyAvailable", "infrastructureTopology": "HighlyAvailable",
            "cpuPartitioning": "None", "etcdDiscoveryDomain": ""}});
    Api::<DynamicObject>::all_with(client.clone(), &r)
        .patch_status(
            "cluster",
            &PatchParams::apply("openshift-installer").force(),
            &Patch::Apply(&status),
        )
        .await
        .expect("Infrastructure status applies");
}

fn merge(target: &mut Value, patch: Value) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                merge(t.entry(k).or_insert(Value::Null), v);
            }
        }
        (t, p) => *t = p,
    }
}

/// `ClusterOperator/cluster-api`, as the release payload creates it.
pub async fn create_cluster_operator(client: &Client) {
    apply(
        client,
        &ar(
            "config.openshift.io",
            "v1",
            "ClusterOperator",
            "clusteroperators",
        ),
        &json!({"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
            "metadata": {"name": "cluster-api"}, "spec": {}}),
        "cluster-version-operator",
    )
    .await;
}

pub fn fixture(relative: &str) -> Option<PathBuf> {
    control_plane::shared_fixture(relative)
}

pub fn read_documents(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("fixture readable");
    capi_manifests::yaml::parse_documents(&path.display().to_string(), &text)
        .expect("fixture parses")
        .into_iter()
        .map(|d| d.value)
        .collect()
}

/// The CRDs a transport ConfigMap fixture installs (decoded with the data model, as the installer does).
pub fn crds_of_transport(file: &str) -> Vec<Value> {
    let path = fixture(&format!("transport-configmaps/{file}")).expect("fixture present");
    let cm = read_documents(&path).remove(0);
    let decoded = capi_manifests::TransportConfigMap::decode(&cm).expect("fixture decodes");
    capi_manifests::yaml::parse_objects(file, &decoded.content.components)
        .expect("components parse")
        .into_iter()
        .map(|o| o.value)
        .filter(|v| v["kind"] == "CustomResourceDefinition")
        .collect()
}

/// The same code `make demo` runs (see the example's doc for why the webhooks go).
#[path = "../../examples/without_webhooks.rs"]
mod without_webhooks_example;

/// A transport ConfigMap fixture without its admission webhook configurations.
pub fn transport_without_webhooks(file: &str) -> Value {
    let path = fixture(&format!("transport-configmaps/{file}")).expect("fixture present");
    let cm = read_documents(&path).remove(0);
    without_webhooks_example::without_webhooks(file, &cm).expect("fixture re-encodes")
}

/// How long a CRD may take to become Established. Generous: with several control planes on two loaded
/// cores, a CRD's names and storage take a while to settle.
const CRD_DEADLINE: Duration = Duration::from_secs(240);

/// Applies CRDs (as the installer would) and waits until each is Established.
pub async fn install_crds(client: &Client, crds: Vec<Value>) {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for mut crd in crds {
        if let Some(m) = crd.as_object_mut() {
            m.remove("status");
        }
        let name = crd["metadata"]["name"].as_str().unwrap().to_string();
        api.patch(
            &name,
            &PatchParams::apply("capi-installer").force(),
            &Patch::Apply(&crd),
        )
        .await
        .unwrap_or_else(|e| panic!("applying CRD {name}: {e}"));
        tokio::time::timeout(
            CRD_DEADLINE,
            await_condition(api.clone(), &name, conditions::is_crd_established()),
        )
        .await
        .unwrap_or_else(|_| panic!("CRD {name} Established"))
        .unwrap();
    }
}

/// The CRDs of a provider's transport ConfigMap, installed.
pub async fn install_provider_crds(client: &Client, file: &str) {
    install_crds(client, crds_of_transport(file)).await;
}

/// The Machine API CRDs (Machine, MachineSet, ControlPlaneMachineSet).
pub async fn install_machine_api_crds(client: &Client) {
    let dir = fixture("machine-api-crds").expect("fixture present");
    let mut crds = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for f in files {
        crds.extend(read_documents(&f));
    }
    install_crds(client, crds).await;
}

pub fn machines(client: &Client) -> Api<DynamicObject> {
    namespaced(
        client,
        MAPI_NS,
        &ar("machine.openshift.io", "v1beta1", "Machine", "machines"),
    )
}

/// A control-plane Machine with `provider_spec` (as the OpenShift installer creates them).
pub async fn create_control_plane_machine(client: &Client, name: &str, provider_spec: Value) {
    ensure_namespace(client, MAPI_NS).await;
    apply(
        client,
        &ar("machine.openshift.io", "v1beta1", "Machine", "machines"),
        &json!({"apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine",
            "metadata": {"name": name, "namespace": MAPI_NS, "labels": {
                "machine.openshift.io/cluster-api-machine-role": "master",
                "machine.openshift.io/cluster-api-machine-type": "master"}},
            "spec": {"providerSpec": {"value": provider_spec}}}),
        "openshift-installer",
    )
    .await;
}

/// The manifests of this repository's `manifests/` folder whose file names start with `prefix`.
pub fn manifests(prefix: &str) -> Vec<Value> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../manifests");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix) && n.ends_with(".yaml"))
        })
        .collect();
    files.sort();
    files.iter().flat_map(|f| read_documents(f)).collect()
}

/// Applies manifests as the release payload (CVO) would, kinds found by discovery.
pub async fn apply_as_release_payload(client: &Client, docs: &[Value]) {
    let discovery = kube::discovery::Discovery::new(client.clone())
        .run_aggregated()
        .await
        .unwrap();
    for doc in docs {
        let obj: DynamicObject = serde_json::from_value(doc.clone()).unwrap();
        let gvk = kube::api::GroupVersionKind::try_from(obj.types.as_ref().unwrap()).unwrap();
        let (resource, caps) = discovery.resolve_gvk(&gvk).expect("kind served");
        let api: Api<DynamicObject> = match (caps.scope, obj.namespace()) {
            (kube::discovery::Scope::Namespaced, Some(ns)) => {
                Api::namespaced_with(client.clone(), &ns, &resource)
            }
            _ => Api::all_with(client.clone(), &resource),
        };
        api.patch(
            &obj.name_any(),
            &PatchParams::apply("cluster-version-operator").force(),
            &Patch::Apply(doc),
        )
        .await
        .unwrap_or_else(|e| panic!("applying {} {}: {e}", gvk.kind, obj.name_any()));
    }
}

/// Polls `check` until it returns `Some`, or panics with `what` after `timeout`.
pub async fn eventually<T, F, Fut>(timeout: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        if Instant::now() > deadline {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Cond {
    pub status: String,
    pub reason: String,
    pub message: String,
    pub since: String,
}

pub async fn co_condition(client: &Client, type_: &str) -> Option<Cond> {
    let co = cluster_operators(client)
        .get_opt("cluster-api")
        .await
        .ok()
        .flatten()?;
    co.data["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .map(|c| Cond {
            status: c["status"].as_str().unwrap_or_default().into(),
            reason: c["reason"].as_str().unwrap_or_default().into(),
            message: c["message"].as_str().unwrap_or_default().into(),
            since: c["lastTransitionTime"].as_str().unwrap_or_default().into(),
        })
}

/// Waits until `<controller>Available` has `status` and `reason`; returns it.
pub async fn wait_condition(
    client: &Client,
    type_: &str,
    status: &str,
    reason: &str,
    timeout: Duration,
) -> Cond {
    let mut last = None;
    let deadline = Instant::now() + timeout;
    loop {
        let c = co_condition(client, type_).await;
        if let Some(c) = &c
            && c.status == status
            && c.reason == reason
        {
            return c.clone();
        }
        if c.is_some() {
            last = c;
        }
        if Instant::now() > deadline {
            panic!("{type_} is not {status}/{reason} after {timeout:?}; last: {last:?}");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

pub type Timestamp = k8s_openapi::jiff::Timestamp;

/// Requests sent with user agent `ua`, optionally only those after `after`.
pub fn requests_of(events: &[AuditEvent], ua: &str, after: Option<Timestamp>) -> Vec<AuditEvent> {
    events
        .iter()
        .filter(|e| e.user_agent.as_deref() == Some(ua))
        .filter(|e| after.is_none_or(|t| e.stage_timestamp.0 > t))
        .cloned()
        .collect()
}

/// Requests sent with the controllers' user agent, optionally only those after `after`.
pub fn controller_requests(events: &[AuditEvent], after: Option<Timestamp>) -> Vec<AuditEvent> {
    requests_of(events, &user_agent(), after)
}

pub fn writes(events: &[AuditEvent]) -> Vec<AuditEvent> {
    events.iter().filter(|e| e.is_write()).cloned().collect()
}

pub fn describe(e: &AuditEvent) -> String {
    let o = e.object_ref.clone().unwrap_or_default();
    format!(
        "{} {}/{}{} {}/{} ({:?})",
        e.verb,
        o.api_group,
        o.resource,
        o.subresource.map(|s| format!("/{s}")).unwrap_or_default(),
        o.namespace.unwrap_or_default(),
        o.name.unwrap_or_default(),
        e.response_code
    )
}

/// The time of the latest audit event, to filter later ones.
pub fn audit_mark(env: &Env) -> Timestamp {
    env.audit()
        .iter()
        .map(|e| e.stage_timestamp.0)
        .max()
        .unwrap_or(Timestamp::UNIX_EPOCH)
}
