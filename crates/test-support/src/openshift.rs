//! What OpenShift leaves on a cluster before Cluster API is installed (`Infrastructure/cluster`, the
//! Machine API), and `ClusterOperator/cluster-api`, where the installer and the controllers report.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use capi_openshift::resources::api_resource;
use capi_openshift::{
    CLUSTER_OPERATOR, CLUSTER_OPERATOR_NAME, INFRASTRUCTURE, cluster_operator, conditions,
};
use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

use crate::{
    CVO, MAPI_NS, apply, ar, ensure_namespace, ensure_namespaces, fixture, install_crds,
    read_documents,
};

/// `status.infrastructureName` of every test cluster.
pub const INFRA_NAME: &str = "demo-x7k2p";

pub fn infrastructures(client: &Client) -> Api<DynamicObject> {
    Api::all_with(client.clone(), &api_resource(&INFRASTRUCTURE))
}

pub fn cluster_operators(client: &Client) -> Api<DynamicObject> {
    cluster_operator::api(client)
}

/// `Infrastructure/cluster` as the OpenShift installer writes it: the platform, the infrastructure name,
/// the internal API URL, plus `platform_status` merged into `status.platformStatus` and `spec`.
pub async fn set_infrastructure(
    client: &Client,
    platform: &str,
    platform_status: Value,
    spec: Value,
) {
    let mut spec_obj = json!({"platformSpec": {"type": platform}});
    merge(&mut spec_obj, spec);
    apply(
        client,
        &api_resource(&INFRASTRUCTURE),
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
    infrastructures(client)
        .patch_status(
            "cluster",
            &PatchParams::apply("openshift-installer").force(),
            &Patch::Apply(&status),
        )
        .await
        .expect("Infrastructure status applies");
}

/// What OpenShift leaves before Cluster API is installed: the namespaces of Cluster API (the
/// providers' and the installer's) and of the Machine API, `ClusterOperator/cluster-api`, and `Infrastructure/cluster` on `platform` (see
/// [`set_infrastructure`]).
pub async fn openshift_cluster(
    client: &Client,
    platform: &str,
    platform_status: Value,
    spec: Value,
) {
    ensure_namespaces(client).await;
    ensure_namespace(client, MAPI_NS).await;
    create_cluster_operator(client).await;
    set_infrastructure(client, platform, platform_status, spec).await;
}

/// [`openshift_cluster`] on AWS in eu-west-1.
pub async fn openshift_on_aws(client: &Client) {
    openshift_cluster(
        client,
        "AWS",
        json!({"aws": {"region": "eu-west-1"}}),
        json!({}),
    )
    .await;
}

/// `Infrastructure/cluster` with nothing but the platform type (and the fields every cluster has).
pub async fn set_platform(client: &Client, platform: &str) {
    set_infrastructure(client, platform, json!({}), json!({})).await;
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

/// The Machine API CRDs (Machine, MachineSet, ControlPlaneMachineSet) of the fixtures.
pub async fn install_machine_api_crds(client: &Client) {
    let dir = fixture("machine-api-crds").expect("fixture present");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    install_crds(
        client,
        files.iter().flat_map(|f| read_documents(f)).collect(),
    )
    .await;
}

pub fn machines(client: &Client) -> Api<DynamicObject> {
    Api::namespaced_with(
        client.clone(),
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

/// `ClusterOperator/cluster-api`, as the release payload creates it.
pub async fn create_cluster_operator(client: &Client) {
    let mut object = cluster_operator::manifest();
    object["spec"] = json!({});
    apply(client, &api_resource(&CLUSTER_OPERATOR), &object, CVO).await;
}

/// One condition of a status.
#[derive(Debug, Clone, PartialEq)]
pub struct Cond {
    pub status: String,
    pub reason: String,
    pub message: String,
    /// `lastTransitionTime`.
    pub since: String,
}

/// The status of `ClusterOperator/cluster-api`, when it has one.
pub async fn co_status(client: &Client) -> Option<Value> {
    cluster_operators(client)
        .get_opt(CLUSTER_OPERATOR_NAME)
        .await
        .ok()
        .flatten()
        .and_then(|co| co.data.get("status").cloned())
}

/// Condition `type_` of a status (a ClusterOperator's, an `InfrastructureProvider`'s...).
pub fn condition(status: &Value, type_: &str) -> Option<Cond> {
    conditions::find(Some(status), type_).map(|c| Cond {
        status: c["status"].as_str().unwrap_or_default().into(),
        reason: c["reason"].as_str().unwrap_or_default().into(),
        message: c["message"].as_str().unwrap_or_default().into(),
        since: c["lastTransitionTime"].as_str().unwrap_or_default().into(),
    })
}

/// Condition `type_` of `ClusterOperator/cluster-api`.
pub async fn co_condition(client: &Client, type_: &str) -> Option<Cond> {
    condition(&co_status(client).await?, type_)
}

/// The first message of `ClusterOperator/cluster-api`'s Available, Progressing or Degraded that
/// contains `text`, once one does (within 3 minutes).
pub async fn reported(client: &Client, text: &str) -> String {
    crate::eventually(std::time::Duration::from_secs(180), text, || async {
        let status = co_status(client).await?;
        ["Available", "Progressing", "Degraded"]
            .into_iter()
            .filter_map(|t| condition(&status, t))
            .map(|c| c.message)
            .find(|m| m.contains(text))
    })
    .await
}

/// Whether a condition has this status.
pub fn is(status: &Value, type_: &str, value: &str) -> bool {
    condition(status, type_).is_some_and(|c| c.status == value)
}

/// Available=True, Progressing=False and Degraded=False.
pub fn settled(status: &Value) -> bool {
    is(status, "Available", "True")
        && is(status, "Progressing", "False")
        && is(status, "Degraded", "False")
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

/// Waits until condition `type_` of the ClusterOperator has `status` and `reason`; returns it.
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

/// Waits until `ClusterOperator/cluster-api` says Degraded=True and returns that condition; `what`
/// names the awaited state in the timeout's panic.
pub async fn wait_degraded(client: &Client, timeout: Duration, what: &str) -> Cond {
    crate::eventually(timeout, what, || async {
        let s = co_status(client).await?;
        condition(&s, "Degraded").filter(|d| d.status == "True")
    })
    .await
}

/// Waits for `ClusterOperator/cluster-api` to report Available=True, Progressing=False,
/// Degraded=False; returns its status.
pub async fn wait_available(client: &Client, timeout: Duration) -> Value {
    match try_wait_available(client, timeout).await {
        Ok(status) => status,
        Err(conditions) => {
            panic!("ClusterOperator cluster-api not Available after {timeout:?}: {conditions:#}")
        }
    }
}

/// [`wait_available`] that returns the last conditions seen instead of panicking, for a caller that
/// has more to say about why (e.g. the pods of a real node).
pub async fn try_wait_available(client: &Client, timeout: Duration) -> Result<Value, Value> {
    let deadline = Instant::now() + timeout;
    loop {
        let s = co_status(client).await;
        if let Some(s) = &s
            && settled(s)
        {
            return Ok(s.clone());
        }
        if Instant::now() > deadline {
            return Err(s
                .as_ref()
                .map(|s| s["conditions"].clone())
                .unwrap_or_default());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
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
