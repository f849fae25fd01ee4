//! Objects on the control plane: server-side apply as the manager that would write them, kinds found
//! by discovery, the release payload's manifests and this repository's own (`manifests/`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
    ValidationDirective,
};
use kube::discovery::{Discovery, Scope};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

/// The field manager of the release payload: what the cluster-version operator applies.
pub const CVO: &str = "cluster-version-operator";

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

/// [`apply`], retried while the API server cannot reach the object's admission webhook: a provider
/// just reported Available may still be missing from its Service's endpoints, or from the node's
/// NetworkPolicy rules, for a moment. Any other error, or `timeout` passed, fails.
pub async fn apply_through_webhooks(
    client: &Client,
    r: &ApiResource,
    obj: &Value,
    manager: &str,
    timeout: std::time::Duration,
) -> DynamicObject {
    let name = obj["metadata"]["name"].as_str().unwrap().to_string();
    let api: Api<DynamicObject> = match obj["metadata"]["namespace"].as_str() {
        Some(ns) => Api::namespaced_with(client.clone(), ns, r),
        None => Api::all_with(client.clone(), r),
    };
    let deadline = std::time::Instant::now() + timeout;
    loop {
        match api
            .patch(
                &name,
                &PatchParams::apply(manager).force(),
                &Patch::Apply(obj),
            )
            .await
        {
            Ok(applied) => return applied,
            Err(e)
                if e.to_string().contains("failed calling webhook")
                    && std::time::Instant::now() < deadline =>
            {
                // The webhook's Service has no reachable endpoint yet.
                eprintln!(
                    "{} {name}: webhook not reachable yet, retrying: {e}",
                    r.kind
                );
                // Polled: a refused connection comes back at once.
                tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            }
            Err(e) => panic!("applying {} {name}: {e}", r.kind),
        }
    }
}

/// Namespace `ns`, as the release payload creates it.
pub async fn ensure_namespace(client: &Client, ns: &str) {
    apply(
        client,
        &ar("", "v1", "Namespace", "namespaces"),
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        CVO,
    )
    .await;
}

/// The providers' namespace and the installer's, as the release payload creates them.
pub async fn ensure_namespaces(client: &Client) {
    ensure_namespace(client, crate::NS).await;
    ensure_namespace(client, crate::INSTALLER_NS).await;
}

/// Every document of a YAML file.
pub fn read_documents(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{} readable: {e}", path.display()));
    capi_manifests::yaml::parse_documents(&path.display().to_string(), &text)
        .unwrap_or_else(|e| panic!("{} parses: {e}", path.display()))
        .into_iter()
        .map(|d| d.value)
        .collect()
}

/// Applies manifests as the release payload (CVO) would: server-side, forced, kinds found by discovery.
pub async fn apply_as_release_payload(client: &Client, docs: &[Value]) {
    apply_documents(client, docs, &PatchParams::apply(CVO).force()).await;
}

/// Applies each document with `params`, its kind found by discovery; returns `Kind name` of each.
async fn apply_documents(client: &Client, docs: &[Value], params: &PatchParams) -> Vec<String> {
    let discovery = Discovery::new(client.clone())
        .run_aggregated()
        .await
        .expect("discovery");
    let mut applied = Vec::new();
    for doc in docs {
        let obj: DynamicObject = serde_json::from_value(doc.clone()).unwrap();
        let gvk = GroupVersionKind::try_from(obj.types.as_ref().unwrap()).unwrap();
        let (resource, caps) = discovery
            .resolve_gvk(&gvk)
            .unwrap_or_else(|| panic!("{} is not served", gvk.kind));
        let api: Api<DynamicObject> = match (caps.scope, obj.namespace()) {
            (Scope::Namespaced, Some(ns)) => Api::namespaced_with(client.clone(), &ns, &resource),
            _ => Api::all_with(client.clone(), &resource),
        };
        // A create-only manifest is created when missing and never written again.
        if obj
            .annotations()
            .get(RELEASE_CREATE_ONLY)
            .map(String::as_str)
            == Some("true")
            && api
                .get_opt(&obj.name_any())
                .await
                .unwrap_or_else(|e| panic!("reading {} {}: {e}", gvk.kind, obj.name_any()))
                .is_some()
        {
            continue;
        }
        api.patch(&obj.name_any(), params, &Patch::Apply(doc))
            .await
            .unwrap_or_else(|e| panic!("applying {} {}: {e}", gvk.kind, obj.name_any()));
        applied.push(format!("{} {}", gvk.kind, obj.name_any()));
    }
    applied
}

/// This repository's `manifests/` folder.
pub fn manifests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../manifests")
}

/// The documents of `manifests/` whose file names start with `prefix`, in file name order (the
/// cluster-version operator's order).
pub fn repo_manifests(prefix: &str) -> Vec<Value> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(manifests_dir())
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

/// The installer's own RBAC as the release ships it: its rules (`..._03_rbac.yaml`), the provider
/// RBAC ceiling it holds (`..._03_ceiling.yaml`), the field bound, and the empty admission registration
/// it may fill (`..._03_compatibility-registration.yaml`).
pub fn installer_rbac() -> Vec<Value> {
    repo_manifests("0000_30_capi-installer_03_")
}

/// The cluster-version operator's annotation on a manifest of an object it creates when missing and
/// never updates (`ClusterAPI/cluster`, whose spec and status are the cluster's).
pub const RELEASE_CREATE_ONLY: &str = "release.openshift.io/create-only";

/// The cluster-version operator's annotation on a manifest of an object that a release removes: the
/// object is deleted (on upgrade; an install never creates it), in file order.
pub const RELEASE_DELETE: &str = "release.openshift.io/delete";

/// Whether a release manifest is one of removal ([`RELEASE_DELETE`]).
pub fn is_removal(doc: &Value) -> bool {
    doc["metadata"]["annotations"][RELEASE_DELETE] == "true"
}

/// Applies the manifests of `manifests/` whose file names start with `prefix` as the release payload
/// would, with strict field validation: an unknown or misspelt field fails the test instead of being
/// dropped. A manifest of removal ([`is_removal`]) deletes its object when it exists, as on an upgrade
/// (on a new cluster there is none: as an install skips it). Namespaces they use but do not declare
/// (owned by other components on a real cluster, such as `openshift-machine-api`) are created first;
/// cluster monitoring's kinds are skipped (its CRDs are not on the test control plane;
/// `tests/manifests.rs` checks the ServiceMonitors field by field). Returns `Kind name` of each
/// object applied (not of those deleted).
pub async fn apply_release_manifests(client: &Client, prefix: &str) -> Vec<String> {
    apply_release_manifests_edited(client, prefix, |_| {}).await
}

/// The deployer's flag for a node whose container runtime cannot mount image volumes.
pub const WITHOUT_IMAGE_VOLUMES: &str = "--without-image-volumes";

/// Tells the deployer's Deployment (when `doc` is it) [`WITHOUT_IMAGE_VOLUMES`]: the release payload
/// of a cluster whose nodes cannot mount image volumes, as the real node's containerd 1.6
/// (docs/known-gaps.md).
pub fn without_image_volumes(doc: &mut Value) {
    if doc["kind"] != "Deployment" || doc["metadata"]["name"] != "capi-installer-deployer" {
        return;
    }
    let args = doc["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array_mut()
        .expect("the deployer's container has args");
    args.push(Value::String(WITHOUT_IMAGE_VOLUMES.into()));
}

/// [`apply_release_manifests`] with each document changed by `edit` first.
pub async fn apply_release_manifests_edited(
    client: &Client,
    prefix: &str,
    edit: impl Fn(&mut Value),
) -> Vec<String> {
    let (removals, docs): (Vec<Value>, Vec<Value>) = repo_manifests(prefix)
        .into_iter()
        .map(|mut d| {
            edit(&mut d);
            d
        })
        .filter(|d| {
            !d["apiVersion"]
                .as_str()
                .is_some_and(|v| v.starts_with("monitoring.coreos.com/"))
        })
        .partition(is_removal);
    // The removals come first in the release's file order (0000_30_capi-installer_00_tombstones.yaml).
    delete_documents(client, &removals).await;
    let declared: BTreeSet<&str> = docs
        .iter()
        .filter(|d| d["kind"] == "Namespace")
        .filter_map(|d| d["metadata"]["name"].as_str())
        .collect();
    let used: BTreeSet<&str> = docs
        .iter()
        .filter_map(|d| d["metadata"]["namespace"].as_str())
        .collect();
    for ns in used.difference(&declared) {
        ensure_namespace(client, ns).await;
    }
    let mut params = PatchParams::apply(CVO).force();
    params.field_validation = Some(ValidationDirective::Strict);
    apply_documents(client, &docs, &params).await
}

/// Deletes the object of each document when it exists (its kind found by discovery), as the
/// cluster-version operator does for a manifest of removal: without waiting for it to be gone.
pub async fn delete_documents(client: &Client, docs: &[Value]) {
    for doc in docs {
        let api_version = doc["apiVersion"].as_str().unwrap();
        let kind = doc["kind"].as_str().unwrap();
        let name = doc["metadata"]["name"].as_str().unwrap();
        let api = api_for(
            client,
            api_version,
            kind,
            doc["metadata"]["namespace"].as_str(),
        )
        .await;
        match api.delete(name, &Default::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => panic!("deleting {kind} {name}: {e}"),
        }
    }
}

/// The API of a kind, found by discovery.
pub async fn api_for(
    client: &Client,
    api_version: &str,
    kind: &str,
    namespace: Option<&str>,
) -> Api<DynamicObject> {
    let discovery = Discovery::new(client.clone())
        .run_aggregated()
        .await
        .unwrap();
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let (resource, _) = discovery
        .resolve_gvk(&gvk)
        .unwrap_or_else(|| panic!("{api_version} {kind} served"));
    match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    }
}

/// Waits until object `name` of `api` is gone; panics with `what` after `timeout`.
pub async fn wait_gone(
    api: &Api<DynamicObject>,
    name: &str,
    timeout: std::time::Duration,
    what: &str,
) {
    crate::eventually(timeout, what, || async {
        api.get_opt(name).await.unwrap().is_none().then_some(())
    })
    .await;
}

/// Names of the objects of `api` that carry the installer's ownership label.
pub async fn managed(api: &Api<DynamicObject>) -> Vec<String> {
    api.list(&ListParams::default().labels("app.kubernetes.io/managed-by=capi-installer"))
        .await
        .map(|l| l.items.iter().map(|o| o.name_any()).collect())
        .unwrap_or_default()
}

/// How long a CRD may take to become Established. Generous: with several control planes on two loaded
/// cores, a CRD's names and storage take a while to settle.
pub const CRD_DEADLINE: std::time::Duration = std::time::Duration::from_secs(240);

/// Applies CRDs as the installer would (its field manager) and waits until each is Established.
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

/// Marks every node unschedulable (cordoned, as `kubectl cordon` does) or schedulable again: a pod
/// deleted meanwhile is replaced by one that stays Pending.
pub async fn cordon(client: &Client, unschedulable: bool) {
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(client.clone());
    for node in nodes.list(&ListParams::default()).await.expect("nodes") {
        nodes
            .patch(
                &node.name_any(),
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"unschedulable": unschedulable}})),
            )
            .await
            .unwrap_or_else(|e| panic!("cordon Node {}: {e}", node.name_any()));
    }
}

/// What an administrator does for a provider the release ships no identity for
/// (docs/admin/rbac.md, "Each provider's identity"): ServiceAccount `capi-provider-<label>` in the
/// installer's namespace, a ceiling of its own (`cluster_rules` cluster-wide, `namespaced_rules` in
/// the providers' namespace, ClusterRoles labelled for that provider, so the policy reads them too),
/// bound to it with the writes every identity has, and `impersonate` on it for the installer; applied
/// as an administrator, none of the shipped objects edited. Returns the two ceiling ClusterRoles.
pub async fn give_identity(
    client: &Client,
    label: &str,
    cluster_rules: &Value,
    namespaced_rules: &Value,
) -> Vec<Value> {
    let installer_ns = capi_manifests::INSTALLER_NAMESPACE;
    let ns = capi_manifests::TARGET_NAMESPACE;
    let account = capi_bundle::names::provider_identity(label);
    let subject = json!([{"kind": "ServiceAccount", "name": account, "namespace": installer_ns}]);
    let rbac = "rbac.authorization.k8s.io/v1";
    let role = |name: &str, scope: &str, rules: &Value| {
        json!({"apiVersion": rbac, "kind": "ClusterRole", "metadata": {"name": name, "labels": {
            "capi-installer.openshift.io/provider-ceiling": scope,
            "capi-installer.openshift.io/ceiling-provider": label}}, "rules": rules})
    };
    let bind = |kind: &str, name: &str, namespace: Option<&str>, role_kind: &str, role: &str| {
        let mut metadata = json!({"name": name});
        if let Some(n) = namespace {
            metadata["namespace"] = json!(n);
        }
        json!({"apiVersion": rbac, "kind": kind, "metadata": metadata,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
            "subjects": subject})
    };
    let ceiling = format!("provider-ceiling-{label}");
    let namespaced = format!("provider-namespaced-ceiling-{label}");
    let docs = vec![
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": account, "namespace": installer_ns},
            "automountServiceAccountToken": false}),
        role(&ceiling, "cluster", cluster_rules),
        role(&namespaced, "namespaced", namespaced_rules),
        bind(
            "ClusterRoleBinding",
            &account,
            None,
            "ClusterRole",
            &ceiling,
        ),
        bind(
            "RoleBinding",
            &account,
            Some(ns),
            "ClusterRole",
            &namespaced,
        ),
        bind(
            "ClusterRoleBinding",
            &format!("{account}-writer"),
            None,
            "ClusterRole",
            "capi-provider-writer",
        ),
        bind(
            "RoleBinding",
            &format!("{account}-writer"),
            Some(ns),
            "Role",
            "capi-provider-writer",
        ),
        json!({"apiVersion": rbac, "kind": "Role",
            "metadata": {"name": format!("impersonate-{account}"), "namespace": installer_ns},
            "rules": [{"apiGroups": [""], "resources": ["serviceaccounts"],
                "resourceNames": [account], "verbs": ["impersonate"]}]}),
        json!({"apiVersion": rbac, "kind": "RoleBinding",
            "metadata": {"name": format!("impersonate-{account}"), "namespace": installer_ns},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                "name": format!("impersonate-{account}")},
            "subjects": [{"kind": "ServiceAccount", "name": "capi-installer",
                "namespace": installer_ns}]}),
    ];
    for doc in &docs {
        let (group, version) = doc["apiVersion"]
            .as_str()
            .unwrap()
            .split_once('/')
            .unwrap_or(("", "v1"));
        let kind = doc["kind"].as_str().unwrap();
        let plural = format!("{}s", kind.to_lowercase());
        apply(
            client,
            &ar(group, version, kind, &plural),
            doc,
            "administrator",
        )
        .await;
    }
    docs[1..3].to_vec()
}

/// The Cloud Credential Operator's namespace, where the release's CredentialsRequests are.
pub const CLOUD_CREDENTIAL_NS: &str = "openshift-cloud-credential-operator";

/// The Cloud Credential Operator's part, played for the tests (the operator is not part of this
/// project): from CredentialsRequest `request` of [`CLOUD_CREDENTIAL_NS`], as the release payload
/// applied it, the Secret its `spec.secretRef` names, in the namespace it names, holding `data` (what
/// the operator would mint for that cloud), written as the operator's field manager. Returns the
/// Secret's namespace and name. Panics when the request is missing.
pub async fn mint_credentials(
    client: &Client,
    request: &str,
    data: &serde_json::Map<String, Value>,
) -> (String, String) {
    let requests = namespaced(
        client,
        CLOUD_CREDENTIAL_NS,
        &ar(
            "cloudcredential.openshift.io",
            "v1",
            "CredentialsRequest",
            "credentialsrequests",
        ),
    );
    let request = requests
        .get(request)
        .await
        .unwrap_or_else(|e| panic!("CredentialsRequest {CLOUD_CREDENTIAL_NS}/{request}: {e}"));
    let secret_ref = &request.data["spec"]["secretRef"];
    let (namespace, name) = (
        secret_ref["namespace"]
            .as_str()
            .expect("secretRef.namespace")
            .to_string(),
        secret_ref["name"]
            .as_str()
            .expect("secretRef.name")
            .to_string(),
    );
    apply(
        client,
        &ar("", "v1", "Secret", "secrets"),
        &json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": name, "namespace": namespace},
            "stringData": data}),
        "cloud-credential-operator",
    )
    .await;
    (namespace, name)
}
