//! Adoption bounded, deletion owned (issue 29, item 5): `capi-operator.openshift.io/adopt-existing:
//! always` in a bundle never takes over a built-in object (a `system:` ClusterRole bound to every user,
//! the namespace's `kube-root-ca.crt`) nor an object another controller writes; the refusal names the
//! ConfigMap, the object and the rule, nothing of that version is written, no subject gains a permission,
//! and the built-in objects are neither changed nor deleted when the good ConfigMap converges again. A
//! legitimate adoption (a CRD of the provider's own group that existed before) is recorded as such, and
//! released in place, not deleted, when a later version drops it; what the installer created is still
//! deleted. One control plane and one installer, running as its own ServiceAccount under the shipped RBAC.

use std::time::Duration;

use k8s_openapi::api::authorization::v1::SubjectAccessReview;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::{Api, DynamicObject, PostParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use test_support::*;

/// A few reconciles of core + aws on a loaded machine.
const RECONCILES: Duration = Duration::from_secs(180);
const WIDGETS: &str = "widgets.infrastructure.cluster.x-k8s.io";

/// The aws ConfigMap with `extra` (YAML documents) added to its components.
fn aws_plus(extra: &str) -> Value {
    let mut objects: Vec<Value> =
        capi_manifests::yaml::parse_documents("aws", &fixture_components(AWS_CM))
            .unwrap()
            .into_iter()
            .map(|d| d.value)
            .collect();
    objects.extend(
        capi_manifests::yaml::parse_documents("extra", extra)
            .unwrap()
            .into_iter()
            .map(|d| d.value),
    );
    with_components(
        AWS_CM,
        &capi_manifests::yaml::to_multi_yaml(&objects).unwrap(),
    )
}

/// Whether RBAC lets an anonymous request list Secrets in every namespace.
async fn anonymous_lists_secrets(client: &Client) -> bool {
    let review = json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {"user": "system:anonymous", "groups": ["system:unauthenticated"],
            "resourceAttributes": {"verb": "list", "group": "", "resource": "secrets"}},
    });
    let api: Api<SubjectAccessReview> = Api::all(client.clone());
    api.create(
        &Default::default(),
        &serde_json::from_value(review).unwrap(),
    )
    .await
    .unwrap()
    .status
    .is_some_and(|s| s.allowed)
}

/// Waits until the installer's own condition reports a failure whose message has every one of
/// `expect`; the message.
async fn refused(client: &Client, what: &str, expect: &[&str]) -> String {
    eventually(RECONCILES, what, || async {
        let s = co_status(client).await?;
        let p = condition(&s, "InstallerControllerProgressing")?;
        expect
            .iter()
            .all(|e| p.message.contains(e))
            .then_some(p.message)
    })
    .await
}

/// Waits until the installer reports success again (InstallerController done, operator Available).
async fn converged(client: &Client) {
    wait_available(client, RECONCILES).await;
    eventually(RECONCILES, "InstallerController done", || async {
        let s = co_status(client).await?;
        let p = condition(&s, "InstallerControllerProgressing")?;
        (p.status == "False" && p.reason == "AsExpected").then_some(())
    })
    .await;
}

/// The installer's writes since audit event `mark`, but for its status, Events and inventory.
fn writes_since(env: &Env, mark: usize) -> Vec<String> {
    installer_writes(&env.audit()[mark..], None)
        .iter()
        .map(describe)
        .filter(|w| {
            !w.contains("config.openshift.io/clusteroperators")
                && !w.contains("/events ")
                && !w.contains(&format!(
                    "configmaps {INSTALLER_NS}/capi-installer-inventory"
                ))
        })
        .collect()
}

/// Every request (anyone's) that wrote `resource namespace/name` since audit event `mark`.
fn writes_to(env: &Env, mark: usize, object: &str) -> Vec<String> {
    env.audit()[mark..]
        .iter()
        .filter(|e| e.is_write())
        .map(|e| format!("{} by {:?}", describe(e), e.user_agent))
        .filter(|w| w.contains(object))
        .collect()
}

/// The aws inventory as stored.
async fn aws_inventory(client: &Client) -> Value {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), INSTALLER_NS);
    let cm = api.get("capi-installer-inventory").await.unwrap();
    serde_json::from_str(&cm.data.unwrap()["aws"]).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adoption_is_bounded_and_an_adopted_object_is_released_not_deleted() {
    require_fixture!("transport-configmaps");
    let env = Env::on_aws(&[CORE_CM, AWS_CM]).await;
    apply_as_release_payload(&env.admin, &installer_rbac()).await;
    let sa = env
        .service_account_config(INSTALLER_NS, "capi-installer")
        .await;
    let _installer = Running::start(installer_client(sa), config());
    converged(&env.admin).await;

    let roles: Api<ClusterRole> = Api::all(env.admin.clone());
    let viewer = roles.get("system:public-info-viewer").await.unwrap();
    let configmaps: Api<ConfigMap> = Api::namespaced(env.admin.clone(), NS);
    let root_ca = eventually(
        Duration::from_secs(60),
        "kube-root-ca.crt published",
        || async { configmaps.get_opt("kube-root-ca.crt").await.ok()? },
    )
    .await;
    assert!(
        !anonymous_lists_secrets(&env.admin).await,
        "before: anonymous may list Secrets"
    );

    // 1. The built-in role that every user, authenticated or not, is bound to.
    let mark = env.audit().len();
    put_configmap(
        &env.admin,
        &aws_plus(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: 'system:public-info-viewer'\n  annotations: {capi-operator.openshift.io/adopt-existing: always}\nrules: [{apiGroups: [''], resources: [secrets, configmaps], verbs: [get, list, watch, create, update, patch, delete]}]\n",
        ),
    )
    .await;
    let message = refused(
        &env.admin,
        "system:public-info-viewer refused",
        &[
            "ConfigMap openshift-cluster-api/aws",
            "(ClusterRole system:public-info-viewer): rule adopt-existing-bounded: adopt-existing on a built-in object",
        ],
    )
    .await;
    assert!(message.contains("system: prefix"), "{message}");
    assert!(
        !anonymous_lists_secrets(&env.admin).await,
        "anonymous may list Secrets"
    );
    converge_back(&env, mark).await;

    // 2. The namespace's CA bundle, which kube-controller-manager writes.
    let mark = env.audit().len();
    put_configmap(
        &env.admin,
        &aws_plus(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kube-root-ca.crt\n  namespace: openshift-cluster-api\n  annotations: {capi-operator.openshift.io/adopt-existing: always}\ndata: {ca.crt: not-a-ca}\n",
        ),
    )
    .await;
    refused(
        &env.admin,
        "kube-root-ca.crt refused",
        &[
            "ConfigMap openshift-cluster-api/aws",
            "(ConfigMap openshift-cluster-api/kube-root-ca.crt): rule adopt-existing-bounded",
        ],
    )
    .await;
    converge_back(&env, mark).await;
    let ca_writes = writes_to(
        &env,
        mark,
        "configmaps openshift-cluster-api/kube-root-ca.crt",
    );
    assert!(
        ca_writes.is_empty(),
        "kube-root-ca.crt written: {ca_writes:?}"
    );

    // 3. An object another controller writes, which only the live object tells: refused before the
    // first write (the preflight).
    let other = PostParams {
        field_manager: Some("another-controller".into()),
        ..Default::default()
    };
    let theirs: ConfigMap = serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "capa-settings", "namespace": NS}, "data": {"owner": "another-controller"}}))
    .unwrap();
    let theirs = configmaps.create(&other, &theirs).await.unwrap();
    let mark = env.audit().len();
    put_configmap(
        &env.admin,
        &aws_plus(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: capa-settings\n  namespace: openshift-cluster-api\n  annotations: {capi-operator.openshift.io/adopt-existing: always}\ndata: {owner: aws}\n",
        ),
    )
    .await;
    refused(
        &env.admin,
        "capa-settings refused",
        &[
            "ConfigMap openshift-cluster-api/capa-settings exists without our label and is not adopted",
            "adopt-existing takes over only a provider's own CRDs and objects an earlier version of it installed",
            "another-controller",
        ],
    )
    .await;
    converge_back(&env, mark).await;
    assert_eq!(
        configmaps.get("capa-settings").await.unwrap().metadata,
        theirs.metadata,
        "capa-settings changed"
    );

    // The built-in objects were neither changed nor deleted, and no subject gained a permission.
    assert_eq!(
        roles
            .get("system:public-info-viewer")
            .await
            .unwrap()
            .resource_version(),
        viewer.resource_version()
    );
    assert_eq!(
        configmaps
            .get("kube-root-ca.crt")
            .await
            .unwrap()
            .resource_version(),
        root_ca.resource_version()
    );
    assert!(
        !anonymous_lists_secrets(&env.admin).await,
        "after: anonymous may list Secrets"
    );

    // 4. A legitimate adoption: a CRD of the provider's own group that another operator applied
    // before, marked adopt-existing (as the core profile's IPAM CRDs are), beside a ConfigMap the
    // installer creates.
    let crds = api_for(
        &env.admin,
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        None,
    )
    .await;
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": WIDGETS},
        "spec": {"group": "infrastructure.cluster.x-k8s.io", "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1beta2", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}});
    let before: DynamicObject = crds
        .create(
            &PostParams {
                field_manager: Some("another-operator".into()),
                ..Default::default()
            },
            &serde_json::from_value(crd.clone()).unwrap(),
        )
        .await
        .unwrap();
    let mut marked = crd.clone();
    marked["metadata"]["annotations"] =
        json!({"capi-operator.openshift.io/adopt-existing": "always"});
    let extra = format!(
        "{}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: capa-created, namespace: openshift-cluster-api}}\ndata: {{created: 'yes'}}\n",
        serde_json::to_string(&marked).unwrap()
    );
    put_configmap(&env.admin, &aws_plus(&extra)).await;
    eventually(RECONCILES, "widgets adopted", || async {
        let crd = crds.get(WIDGETS).await.ok()?;
        (crd.labels()
            .get("app.kubernetes.io/managed-by")
            .map(String::as_str)
            == Some("capi-installer"))
        .then_some(())
    })
    .await;
    converged(&env.admin).await;
    let adopted = crds.get(WIDGETS).await.unwrap();
    assert_eq!(adopted.uid(), before.uid(), "adopted in place");
    let inventory = aws_inventory(&env.admin).await;
    let entry = |name: &str| {
        inventory["objects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} not in {inventory:#}"))
    };
    assert_eq!(entry(WIDGETS)["adopted"], json!(true), "{inventory:#}");
    assert_eq!(entry("capa-created").get("adopted"), None, "{inventory:#}");

    // 5. The good version drops both: the adopted CRD is released in place, the created ConfigMap
    // deleted.
    let mark = env.audit().len();
    put_configmap(&env.admin, &fixture_configmap(AWS_CM)).await;
    eventually(RECONCILES, "capa-created pruned", || async {
        configmaps
            .get_opt("capa-created")
            .await
            .ok()?
            .is_none()
            .then_some(())
    })
    .await;
    converged(&env.admin).await;
    let released = eventually(RECONCILES, "widgets released", || async {
        let crd = crds.get(WIDGETS).await.ok()?;
        (!crd.labels().contains_key("app.kubernetes.io/managed-by")).then_some(crd)
    })
    .await;
    assert_eq!(released.uid(), before.uid(), "released in place");
    assert_eq!(
        released.data["spec"], adopted.data["spec"],
        "its spec stays"
    );
    let managers: Vec<String> = released
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|m| m.manager.clone())
        .collect();
    assert!(
        !managers.iter().any(|m| m == "capi-installer"),
        "the installer still owns fields: {managers:?}"
    );
    let deletes: Vec<String> = writes_since(&env, mark)
        .into_iter()
        .filter(|w| w.starts_with("delete"))
        .collect();
    assert!(
        deletes
            .iter()
            .any(|w| w.contains("configmaps openshift-cluster-api/capa-created")),
        "{deletes:?}"
    );
    assert!(
        !deletes.iter().any(|w| w.contains(WIDGETS)),
        "the adopted CRD was deleted: {deletes:?}"
    );
    // The record is stored after the release: the prune releases, then the pass stores what is left.
    eventually(
        RECONCILES,
        "released, so no longer in the inventory",
        || async {
            (!aws_inventory(&env.admin)
                .await
                .to_string()
                .contains(WIDGETS))
            .then_some(())
        },
    )
    .await;
}

/// Puts the good aws ConfigMap back and waits for convergence; nothing but the status, Events and the
/// installer's record was written since audit event `mark` (the refused version wrote nothing).
async fn converge_back(env: &Env, mark: usize) {
    let writes = writes_since(env, mark);
    assert!(writes.is_empty(), "wrote {writes:?}");
    put_configmap(&env.admin, &fixture_configmap(AWS_CM)).await;
    converged(&env.admin).await;
}

/// No write fights (issue 29, item 6): a controller that keeps reverting a field of an object the
/// installer applies wins after a few repairs; the installer stops writing it and names both field
/// managers on the ClusterOperator, and the audit log shows its writes bounded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_fight_is_reported_and_stops() {
    require_fixture!("transport-configmaps");
    let env = Env::on_aws(&[CORE_CM, AWS_CM]).await;
    apply_as_release_payload(&env.admin, &installer_rbac()).await;
    let sa = env
        .service_account_config(INSTALLER_NS, "capi-installer")
        .await;
    let _installer = Running::start(installer_client(sa), config());
    put_configmap(
        &env.admin,
        &aws_plus(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: capa-fight, namespace: openshift-cluster-api}\ndata: {value: ours}\n",
        ),
    )
    .await;
    converged(&env.admin).await;
    let configmaps: Api<ConfigMap> = Api::namespaced(env.admin.clone(), NS);
    let value = |cm: &ConfigMap| {
        cm.data
            .as_ref()
            .and_then(|d| d.get("value"))
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(value(&configmaps.get("capa-fight").await.unwrap()), "ours");

    // Another controller owns the same field and puts its value back whenever it sees ours.
    let mark = env.audit().len();
    let rogue = {
        let api = configmaps.clone();
        tokio::spawn(async move {
            let patch = json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "capa-fight", "namespace": NS}, "data": {"value": "theirs"}});
            let params = kube::api::PatchParams::apply("rogue-controller").force();
            loop {
                if let Ok(cm) = api.get("capa-fight").await
                    && cm
                        .data
                        .as_ref()
                        .and_then(|d| d.get("value"))
                        .map(String::as_str)
                        != Some("theirs")
                {
                    let _ = api
                        .patch("capa-fight", &params, &kube::api::Patch::Apply(&patch))
                        .await;
                }
                // A controller's resync, not a test's wait.
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        })
    };
    let message = refused(
        &env.admin,
        "the write fight reported",
        &[
            "ConfigMap openshift-cluster-api/capa-fight: another writer keeps reverting fields the installer owns",
            "field managers: capi-installer and [",
            "rogue-controller",
        ],
    )
    .await;
    let status = co_status(&env.admin).await.unwrap();
    assert!(message.contains("repaired 3 times"), "{message}");
    // Bounded: at most the repairs the window allows, and no more while the other writer stays
    // (observed for a while: an absence of writes has no event to wait for).
    let installer_patches = || {
        installer_writes(&env.audit()[mark..], None)
            .iter()
            .map(describe)
            .filter(|w| w.contains("configmaps openshift-cluster-api/capa-fight"))
            .count()
    };
    let until = std::time::Instant::now() + Duration::from_secs(30);
    while std::time::Instant::now() < until {
        let n = installer_patches();
        assert!(
            n <= capi_apply::fight::REPAIRS,
            "{n} writes of capa-fight: {status:#}"
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    assert_eq!(
        value(&configmaps.get("capa-fight").await.unwrap()),
        "theirs"
    );
    rogue.abort();
}
