//! Shared setup of the installer's integration tests: a real control plane, the OpenShift objects the
//! release payload would create, the fixtures' transport ConfigMaps, and an installer run in-process.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use capi_installer_controller::{Installer, InstallerConfig, Metrics, user_agent};
use control_plane::{AuditEvent, ControlPlane, ControlPlaneOptions};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

pub const NS: &str = "openshift-cluster-api";
pub const RELEASE_VERSION: &str = "4.21.0-test";

pub fn fixture(relative: &str) -> Option<PathBuf> {
    control_plane::shared_fixture(relative)
}

/// Returns from the test (with a printed reason) when a fixture is missing outside CI.
#[macro_export]
macro_rules! require_fixture {
    ($rel:expr) => {
        match support::fixture($rel) {
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

    /// A client of `config` that sends the installer's user agent.
    pub fn installer_client(mut config: kube::Config) -> Client {
        config.headers.push((
            http::header::USER_AGENT,
            http::HeaderValue::from_str(&user_agent()).unwrap(),
        ));
        Client::try_from(config).unwrap()
    }

    pub fn audit(&self) -> Vec<AuditEvent> {
        self.cp.audit_events().expect("audit log readable")
    }
}

/// Writes made by the installer (its user agent), optionally after a point in time.
pub fn installer_writes(events: &[AuditEvent], after: Option<&str>) -> Vec<AuditEvent> {
    let ua = user_agent();
    events
        .iter()
        .filter(|e| e.is_write() && e.user_agent.as_deref() == Some(ua.as_str()))
        .filter(|e| after.is_none_or(|t| e.stage_timestamp.0.to_string().as_str() > t))
        .cloned()
        .collect()
}

pub fn describe(e: &AuditEvent) -> String {
    let o = e.object_ref.clone().unwrap_or_default();
    format!(
        "{} {}/{} {}/{} ({:?})",
        e.verb,
        o.api_group,
        o.resource,
        o.namespace.unwrap_or_default(),
        o.name.unwrap_or_default(),
        e.response_code
    )
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

/// Creates `Infrastructure/cluster` with `status.platformStatus.type`, as the OpenShift installer does.
pub async fn set_platform(client: &Client, platform: &str) {
    let api: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ar(
            "config.openshift.io",
            "v1",
            "Infrastructure",
            "infrastructures",
        ),
    );
    let obj = json!({"apiVersion": "config.openshift.io/v1", "kind": "Infrastructure",
        "metadata": {"name": "cluster"}, "spec": {"platformSpec": {"type": platform}}});
    let pp = PatchParams::apply("openshift-installer").force();
    api.patch("cluster", &pp, &Patch::Apply(&obj))
        .await
        .expect("Infrastructure applies");
    let status = json!({"apiVersion": "config.openshift.io/v1", "kind": "Infrastructure",
        "metadata": {"name": "cluster"},
        "status": {"platform": platform, "platformStatus": {"type": platform},
            "infrastructureName": "test-abcde", "apiServerURL": "https://api.test:6443",
            "apiServerInternalURI": "https://api-int.test:6443", "controlPlaneTopology": "HighlyAvailable",
            "infrastructureTopology": "HighlyAvailable", "cpuPartitioning": "None", "etcdDiscoveryDomain": ""}});
    api.patch_status("cluster", &pp, &Patch::Apply(&status))
        .await
        .expect("Infrastructure status applies");
}

pub async fn ensure_namespace(client: &Client) {
    let api: Api<Namespace> = Api::all(client.clone());
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}});
    api.patch(
        NS,
        &PatchParams::apply("cluster-version-operator"),
        &Patch::Apply(&ns),
    )
    .await
    .expect("namespace");
}

/// Reads every document of a fixture YAML file.
pub fn read_documents(path: &std::path::Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("fixture readable");
    capi_manifests::yaml::parse_documents(&path.display().to_string(), &text)
        .expect("fixture parses")
        .into_iter()
        .map(|d| d.value)
        .collect()
}

/// Applies manifests as the release payload (CVO) would: server-side, as `cluster-version-operator`.
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
        .unwrap_or_else(|e| panic!("applying {}: {e}", obj.name_any()));
    }
}

/// Loads the core CRD manifest (as the payload would) and the transport ConfigMaps named.
pub async fn load_payload(client: &Client, configmaps: &[&str]) -> Option<()> {
    ensure_namespace(client).await;
    let crds = fixture("transport-configmaps/0000_30_cluster-api_04_crd.core-cluster-api.yaml")?;
    apply_as_release_payload(client, &read_documents(&crds)).await;
    for name in configmaps {
        let path = fixture(&format!("transport-configmaps/{name}"))?;
        apply_as_release_payload(client, &read_documents(&path)).await;
    }
    Some(())
}

pub const CORE_CM: &str = "0000_30_cluster-api_04_cm.core-cluster-api.yaml";
pub const AWS_CM: &str = "0000_30_cluster-api_04_cm.infrastructure-aws.yaml";
pub const GCP_CM: &str = "0000_30_cluster-api_04_cm.infrastructure-gcp.yaml";

/// Release image references, as the images JSON of a release would hold them.
pub fn images() -> BTreeMap<String, String> {
    [
        "cluster-capi-controllers",
        "aws-cluster-api-controllers",
        "gcp-cluster-api-controllers",
        "azure-cluster-api-controllers",
        "kube-rbac-proxy",
    ]
    .into_iter()
    .map(|k| {
        (
            k.to_string(),
            format!(
                "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:{}",
                digest(k)
            ),
        )
    })
    .collect()
}

fn digest(key: &str) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    for (i, b) in key.bytes().cycle().take(32).enumerate() {
        let _ = write!(out, "{:02x}", b.wrapping_add(i as u8));
    }
    out
}

pub fn config() -> InstallerConfig {
    InstallerConfig {
        images: images(),
        release_version: Some(RELEASE_VERSION.into()),
        deployment_timeout: Duration::from_secs(120),
        resync: Duration::from_secs(600),
        ..Default::default()
    }
}

/// An installer running in this process; stops when dropped (like a killed process: mid-flight work is
/// abandoned, nothing is cleaned up).
pub struct Running {
    task: tokio::task::JoinHandle<()>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    pub metrics: Arc<Metrics>,
}

impl Running {
    pub fn start(client: Client, config: InstallerConfig) -> Running {
        let metrics = Arc::new(Metrics::unregistered());
        let installer = Installer::new(client, config, metrics.clone());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(installer.run(async {
            let _ = stopped.await;
        }));
        Running {
            task,
            stop: Some(stop),
            metrics,
        }
    }

    /// Abandons the installer at once, wherever it is.
    pub fn kill(self) {}

    /// Graceful stop: finishes the current reconcile.
    pub async fn stop(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        let _ = tokio::time::timeout(Duration::from_secs(60), &mut self.task).await;
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
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
}

pub async fn co_status(client: &Client) -> Option<Value> {
    cluster_operators(client)
        .get_opt("cluster-api")
        .await
        .ok()
        .flatten()
        .and_then(|co| co.data.get("status").cloned())
}

pub fn condition(status: &Value, type_: &str) -> Option<Cond> {
    status["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .map(|c| Cond {
            status: c["status"].as_str().unwrap_or_default().into(),
            reason: c["reason"].as_str().unwrap_or_default().into(),
            message: c["message"].as_str().unwrap_or_default().into(),
        })
}

/// Waits for `ClusterOperator/cluster-api` to report Available=True, Progressing=False, Degraded=False.
pub async fn wait_available(client: &Client, timeout: Duration) -> Value {
    let deadline = Instant::now() + timeout;
    loop {
        let s = co_status(client).await;
        if let Some(s) = &s {
            let is = |t: &str, v: &str| condition(s, t).is_some_and(|c| c.status == v);
            if is("Available", "True") && is("Progressing", "False") && is("Degraded", "False") {
                return s.clone();
            }
        }
        if Instant::now() > deadline {
            let conditions = s
                .as_ref()
                .map(|s| s["conditions"].clone())
                .unwrap_or_default();
            panic!("ClusterOperator cluster-api not Available after {timeout:?}: {conditions:#}");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Every object of a transport ConfigMap fixture, decoded: (apiVersion, kind, namespace, name).
pub fn fixture_objects(file: &str) -> Vec<capi_manifests::ObjectKey> {
    let path = fixture(&format!("transport-configmaps/{file}")).expect("fixture present");
    let cm = read_documents(&path).remove(0);
    let decoded = capi_manifests::TransportConfigMap::decode(&cm).expect("fixture decodes");
    capi_manifests::yaml::parse_objects("fixture", &decoded.content.components)
        .unwrap()
        .into_iter()
        .map(|o| o.id)
        .collect()
}

/// The API of an object's kind, found by discovery.
pub async fn api_for(
    client: &Client,
    api_version: &str,
    kind: &str,
    namespace: Option<&str>,
) -> Api<DynamicObject> {
    let discovery = kube::discovery::Discovery::new(client.clone())
        .run_aggregated()
        .await
        .unwrap();
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let gvk = kube::api::GroupVersionKind::gvk(group, version, kind);
    let (resource, _) = discovery
        .resolve_gvk(&gvk)
        .unwrap_or_else(|| panic!("{api_version} {kind} served"));
    match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    }
}

/// Names of objects of a kind that carry the installer's ownership label.
pub async fn managed(client: &Client, api: &Api<DynamicObject>) -> Vec<String> {
    let _ = client;
    api.list(&ListParams::default().labels("app.kubernetes.io/managed-by=capi-installer"))
        .await
        .map(|l| l.items.iter().map(|o| o.name_any()).collect())
        .unwrap_or_default()
}

/// The transport ConfigMap of a fixture file, as a JSON value.
pub fn fixture_configmap(file: &str) -> Value {
    read_documents(&fixture(&format!("transport-configmaps/{file}")).expect("fixture present"))
        .remove(0)
}

/// Replaces a transport ConfigMap's components in place (an edit, as a new release payload would apply
/// it), encoded as manifests-gen would (zstd when large), keeping labels and metadata.
pub async fn put_components(client: &Client, file: &str, components: &str) {
    let cm = with_components(file, components);
    let name = cm["metadata"]["name"].as_str().unwrap().to_string();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    api.patch(
        &name,
        &PatchParams::apply("cluster-version-operator").force(),
        &Patch::Apply(&cm),
    )
    .await
    .expect("ConfigMap applies");
}

/// A fixture transport ConfigMap with other components, encoded as manifests-gen would.
pub fn with_components(file: &str, components: &str) -> Value {
    let mut content = capi_manifests::TransportConfigMap::decode(&fixture_configmap(file))
        .unwrap()
        .content;
    content.components = components.to_string();
    content.encode().expect("edited ConfigMap encodes")
}

/// The decoded components text of a fixture transport ConfigMap.
pub fn fixture_components(file: &str) -> String {
    capi_manifests::TransportConfigMap::decode(&fixture_configmap(file))
        .unwrap()
        .content
        .components
}

/// A small provider in the shape manifests-gen emits (CRD, ServiceAccount, ClusterRole, Deployment, plus
/// `extra` documents), for tests that need many installs and must stay short.
pub struct Tiny<'a> {
    /// `cluster-api`, `aws`, `gcp`, ...
    pub provider: &'a str,
    pub version: &'a str,
    /// Prefix of its object names, e.g. `capt`.
    pub prefix: &'a str,
    /// A nodeSelector no node matches: its Deployment never becomes Available.
    pub unschedulable: bool,
    /// One more container argument (to change the Deployment).
    pub arg: Option<&'a str>,
    /// Without its CRD / its ClusterRole (a version that dropped them).
    pub crd: bool,
    pub cluster_role: bool,
    /// The container image, default the placeholder manifests-gen writes.
    pub image: &'a str,
    pub extra: Vec<String>,
}

impl<'a> Tiny<'a> {
    pub fn new(provider: &'a str, prefix: &'a str) -> Self {
        Tiny {
            provider,
            version: "v1.0.0",
            prefix,
            unschedulable: false,
            arg: None,
            crd: true,
            cluster_role: true,
            image: "to.be/replaced:v99",
            extra: Vec::new(),
        }
    }

    /// The name of its CRD.
    pub fn crd_name(&self) -> String {
        format!("{}tests.test.cluster.x-k8s.io", self.prefix)
    }

    pub fn provider_type(&self) -> capi_manifests::ProviderType {
        if self.provider == "cluster-api" {
            capi_manifests::ProviderType::Core
        } else {
            capi_manifests::ProviderType::Infrastructure
        }
    }

    pub fn deployment(&self) -> String {
        format!("{}-controller-manager", self.prefix)
    }

    pub fn cluster_role(&self) -> String {
        format!("{}-manager-role", self.prefix)
    }

    pub fn components(&self) -> String {
        let p = self.prefix;
        let kind = format!("{}Test", p[..1].to_uppercase() + &p[1..]);
        let plural = format!("{p}tests");
        let node_selector = if self.unschedulable {
            "\n      nodeSelector: {test.capi-installer/no-such-node: \"true\"}"
        } else {
            ""
        };
        let arg = self.arg.map(|a| format!(", {a}")).unwrap_or_default();
        let image = self.image;
        let mut docs = vec![
            format!(
                "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: {plural}.test.cluster.x-k8s.io\nspec:\n  group: test.cluster.x-k8s.io\n  names: {{kind: {kind}, listKind: {kind}List, plural: {plural}, singular: {p}test}}\n  scope: Namespaced\n  versions:\n  - name: v1alpha1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}"
            ),
            format!(
                "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: {p}-manager\n  namespace: {NS}"
            ),
            format!(
                "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {p}-manager-role\nrules:\n- apiGroups: [test.cluster.x-k8s.io]\n  resources: [{plural}]\n  verbs: [get, list, watch]"
            ),
            format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {p}-controller-manager\n  namespace: {NS}\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {{app: {p}}}\n  template:\n    metadata:\n      labels: {{app: {p}}}\n    spec:\n      serviceAccountName: {p}-manager{node_selector}\n      containers:\n      - name: manager\n        image: {image}\n        args: [--leader-elect{arg}]"
            ),
        ];
        if !self.cluster_role {
            docs.remove(2);
        }
        if !self.crd {
            docs.remove(0);
        }
        docs.extend(self.extra.iter().cloned());
        docs.join("\n---\n") + "\n"
    }

    /// The transport ConfigMap, encoded as manifests-gen would, named `configmap`.
    pub fn configmap(&self, configmap: &str) -> Value {
        let provider =
            capi_manifests::Provider::new(self.provider, self.provider_type(), self.version)
                .expect("valid test provider");
        let content = capi_manifests::TransportConfigMap {
            provider,
            metadata: "apiVersion: clusterctl.cluster.x-k8s.io/v3\nkind: Metadata\nreleaseSeries:\n- major: 1\n  minor: 0\n  contract: v1beta1\n".into(),
            components: self.components(),
        };
        let mut cm = content.encode().expect("test ConfigMap encodes");
        cm["metadata"]["name"] = json!(configmap);
        cm
    }

    /// Applies the transport ConfigMap (named after the provider) as the release payload would.
    pub async fn put(&self, client: &Client) {
        put_configmap(client, &self.configmap(self.provider)).await;
    }
}

/// Applies a ConfigMap in the installer's namespace as the release payload would.
pub async fn put_configmap(client: &Client, cm: &Value) {
    let name = cm["metadata"]["name"].as_str().unwrap().to_string();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    api.patch(
        &name,
        &PatchParams::apply("cluster-version-operator").force(),
        &Patch::Apply(cm),
    )
    .await
    .unwrap_or_else(|e| panic!("ConfigMap {name}: {e}"));
}

/// A configuration with short timeouts, for tests that wait for them.
pub fn short_config() -> InstallerConfig {
    InstallerConfig {
        deployment_timeout: Duration::from_secs(5),
        crd_timeout: Duration::from_secs(20),
        ..config()
    }
}

/// Polls the ClusterOperator's status until `done` returns `Some`, failing at once if `never` holds
/// for any status seen on the way; at most `timeout`.
pub async fn until_never<T>(
    client: &Client,
    timeout: Duration,
    what: &str,
    never: impl Fn(&Value) -> Option<String>,
    done: impl Fn(&Value) -> Option<T>,
) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(s) = co_status(client).await {
            if let Some(broken) = never(&s) {
                panic!("while waiting for {what}: {broken}: {:#}", s["conditions"]);
            }
            if let Some(v) = done(&s) {
                return v;
            }
        }
        if Instant::now() > deadline {
            let s = co_status(client).await.unwrap_or_default();
            panic!(
                "timed out after {timeout:?} waiting for {what}: {:#}",
                s["conditions"]
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// `versions[operator]` of a ClusterOperator status.
pub fn operator_version(status: &Value) -> Option<String> {
    status["versions"]
        .as_array()?
        .iter()
        .find(|v| v["name"] == "operator")
        .and_then(|v| v["version"].as_str())
        .map(String::from)
}

/// Whether a condition has this status.
pub fn is(status: &Value, type_: &str, value: &str) -> bool {
    condition(status, type_).is_some_and(|c| c.status == value)
}

/// The Events regarding the ClusterOperator: (type, reason, note).
pub async fn operator_events(client: &Client) -> Vec<(String, String, String)> {
    let events: Api<k8s_openapi::api::events::v1::Event> =
        Api::namespaced(client.clone(), "default");
    events
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("cluster-api"))
        .map(|e| {
            (
                e.type_.unwrap_or_default(),
                e.reason.unwrap_or_default(),
                e.note.unwrap_or_default(),
            )
        })
        .collect()
}

/// An upgrade of the aws provider, as a new release would ship it: one RoleBinding dropped, `--v=4`
/// added to the Deployment's first container, and (when asked) a new served version `v1beta3` of one
/// CRD (a copy of its storage version's schema, not stored).
pub struct Upgrade {
    pub components: String,
    pub dropped_rolebinding: String,
    pub deployment: String,
    /// The CRD that got the new version, when asked for.
    pub crd: Option<String>,
}

pub fn aws_upgrade(new_crd_version: bool) -> Upgrade {
    let components = fixture_components(AWS_CM);
    let docs: Vec<&str> = components.split("\n---\n").collect();
    let dropped_index = docs
        .iter()
        .position(|d| d.contains("kind: RoleBinding"))
        .expect("aws has a RoleBinding");
    let parse = |doc: &str| {
        capi_manifests::yaml::parse_documents("doc", doc)
            .unwrap()
            .remove(0)
            .value
    };
    let to_yaml = |v: &Value| {
        capi_manifests::yaml::to_yaml("doc", v)
            .unwrap()
            .trim_end()
            .to_string()
    };
    let dropped_rolebinding = parse(docs[dropped_index])["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    let (mut deployment, mut crd) = (String::new(), None);
    let mut kept: Vec<String> = Vec::new();
    for (i, doc) in docs.iter().enumerate() {
        if i == dropped_index {
            continue;
        }
        if doc.contains("kind: Deployment") {
            let mut v = parse(doc);
            deployment = v["metadata"]["name"].as_str().unwrap().to_string();
            v.pointer_mut("/spec/template/spec/containers/0/args")
                .and_then(Value::as_array_mut)
                .unwrap()
                .push(json!("--v=4"));
            kept.push(to_yaml(&v));
        } else if new_crd_version && crd.is_none() && doc.contains("kind: CustomResourceDefinition")
        {
            let mut v = parse(doc);
            let versions = v
                .pointer_mut("/spec/versions")
                .and_then(Value::as_array_mut)
                .unwrap();
            let mut added = versions
                .iter()
                .find(|v| v["storage"] == true)
                .unwrap()
                .clone();
            added["name"] = json!("v1beta3");
            added["storage"] = json!(false);
            versions.push(added);
            crd = Some(v["metadata"]["name"].as_str().unwrap().to_string());
            kept.push(to_yaml(&v));
        } else {
            kept.push(doc.to_string());
        }
    }
    Upgrade {
        components: kept.join("\n---\n"),
        dropped_rolebinding,
        deployment,
        crd,
    }
}
