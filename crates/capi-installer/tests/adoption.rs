//! Ownership from the installer's own record (issue 46, item 1; issue 29, item 5): an existing object
//! the installer did not create for a provider is never written for it, whoever manages it and whatever
//! it says of itself (the release payload's ClusterRole bound to every user; one carrying the
//! installer's own label, field manager and aws's provider label); `adopt-existing` takes over only what
//! the release ships for that provider (never a built-in object, another controller's ConfigMap or an
//! administrator's CRD); names and labels others reserve are never created. Each refusal names the
//! ConfigMap, the object and the rule, nothing of that version is written, no subject gains a
//! permission, and nothing is left when the good ConfigMap converges again. The legitimate adoption
//! (core's IPAM CRDs, which the release payload applied first) is recorded as such, released in place
//! when a version drops one and adopted again; what the installer created is deleted. One control plane
//! and one installer, running as its own ServiceAccount under the shipped RBAC.

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
const WIDGETS: &str = "awswidgets.infrastructure.cluster.x-k8s.io";

/// Whether RBAC lets an anonymous request list Secrets in every namespace.
async fn anonymous_lists_secrets(client: &Client) -> bool {
    lists_secrets(client, "system:anonymous", "system:unauthenticated").await
}

/// Whether RBAC lets any authenticated user list Secrets in every namespace.
async fn authenticated_lists_secrets(client: &Client) -> bool {
    lists_secrets(client, "someone", "system:authenticated").await
}

async fn lists_secrets(client: &Client, user: &str, group: &str) -> bool {
    let review = json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {"user": user, "groups": [group],
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

/// The inventory of source `key` (`aws`, `cluster-api`) as stored.
async fn inventory(client: &Client, key: &str) -> Value {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), INSTALLER_NS);
    let cm = api.get("capi-installer-inventory").await.unwrap();
    serde_json::from_str(&cm.data.unwrap()[key]).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adoption_is_bounded_and_an_adopted_object_is_released_not_deleted() {
    require_fixture!("transport-configmaps");
    let env = Env::on_aws(&[CORE_CM, AWS_CM]).await;
    let _installer = Running::under_release_rbac(&env, config()).await;
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
        &components_plus(AWS_CM,
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
        &components_plus(AWS_CM,
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

    // 3. adopt-existing on an object the release does not ship for aws (another controller's):
    // refused from the bundle's text, before anything is read.
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
        &components_plus(AWS_CM,
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: capa-settings\n  namespace: openshift-cluster-api\n  annotations: {capi-operator.openshift.io/adopt-existing: always}\ndata: {owner: aws}\n",
        ),
    )
    .await;
    refused(
        &env.admin,
        "capa-settings refused",
        &[
            "ConfigMap openshift-cluster-api/aws",
            "(ConfigMap openshift-cluster-api/capa-settings): rule adopt-existing-bounded: adopt-existing only on what the release ships for infrastructure-aws",
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

    // 4. The headline of issue 46: a ClusterRole the release payload applied (no annotation at all),
    // bound to every authenticated user, named by aws's bundle with rules that read every Secret. The
    // installer did not create it, so it is not aws's, whoever manages it: refused before the first
    // write. Then the same under labels that claim it is the installer's, aws's.
    let everyone = "capi-test-everyone-reads";
    apply_as_release_payload(
        &env.admin,
        &[
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": everyone},
                "rules": [{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"]}]}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": everyone},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": everyone},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:authenticated"}]}),
        ],
    )
    .await;
    let release_role = roles.get(everyone).await.unwrap();
    let secrets_role = format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {{name: {everyone}}}\nrules: [{{apiGroups: [''], resources: [secrets], verbs: [get, list, watch]}}]\n"
    );
    let mark = env.audit().len();
    put_configmap(&env.admin, &components_plus(AWS_CM, &secrets_role)).await;
    let message = refused(
        &env.admin,
        "the release's ClusterRole refused",
        &[
            &format!("ClusterRole {everyone} exists and the installer did not create it: this provider's inventory does not hold it; written by [cluster-version-operator]"),
        ],
    )
    .await;
    assert!(message.contains("ConfigMap aws"), "{message}");
    assert!(
        !authenticated_lists_secrets(&env.admin).await,
        "every user may list Secrets"
    );
    converge_back(&env, mark).await;
    // Forged: the installer's own label, aws's provider label and field manager on an object someone
    // else created. The record still says no.
    let forged: ClusterRole = serde_json::from_value(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "capa-forged", "labels": {
            "app.kubernetes.io/managed-by": "capi-installer",
            "cluster.x-k8s.io/provider": "infrastructure-aws"}},
        "rules": [{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"]}]}))
    .unwrap();
    let forged = roles
        .create(
            &PostParams {
                field_manager: Some("capi-installer".into()),
                ..Default::default()
            },
            &forged,
        )
        .await
        .unwrap();
    let mark = env.audit().len();
    put_configmap(
        &env.admin,
        &components_plus(AWS_CM, &secrets_role.replace(everyone, "capa-forged")),
    )
    .await;
    refused(
        &env.admin,
        "a ClusterRole that claims to be aws's refused",
        &["ClusterRole capa-forged exists and the installer did not create it"],
    )
    .await;
    converge_back(&env, mark).await;
    assert_eq!(
        roles
            .get("capa-forged")
            .await
            .unwrap()
            .metadata
            .resource_version,
        forged.metadata.resource_version
    );
    assert_eq!(
        roles.get(everyone).await.unwrap().metadata.resource_version,
        release_role.metadata.resource_version,
        "the release's ClusterRole changed"
    );

    // 5. Names and labels others reserve are never created: another provider's label (prune of aws
    // would never delete it) and the policy's own extension label (it would widen aws's ceiling).
    let mark = env.audit().len();
    put_configmap(
        &env.admin,
        &components_plus(AWS_CM,
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: capa-disguised\n  namespace: openshift-cluster-api\n  labels: {cluster.x-k8s.io/provider: cluster-api}\ndata: {a: b}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: capa-ceiling\n  labels: {capi-installer.openshift.io/provider-ceiling: cluster}\nrules: [{apiGroups: [''], resources: [nodes], verbs: [delete]}]\n",
        ),
    )
    .await;
    refused(
        &env.admin,
        "reserved labels refused",
        &[
            "(ConfigMap openshift-cluster-api/capa-disguised): rule reserved-names-and-labels: label cluster.x-k8s.io/provider=cluster-api names another provider",
            "(ClusterRole capa-ceiling): rule reserved-names-and-labels: label capi-installer.openshift.io/provider-ceiling",
        ],
    )
    .await;
    converge_back(&env, mark).await;

    // 6. An administrator's CRD, marked adopt-existing by aws: refused (aws does not ship it); the
    // CRD keeps no trace of aws (no conversion webhook, no label).
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
            "names": {"kind": "AWSWidget", "plural": "awswidgets", "singular": "awswidget", "listKind": "AWSWidgetList"},
            "versions": [{"name": "v1beta2", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}});
    let before: DynamicObject = crds
        .create(
            &PostParams {
                field_manager: Some("kubectl".into()),
                ..Default::default()
            },
            &serde_json::from_value(crd.clone()).unwrap(),
        )
        .await
        .unwrap();
    let mut marked = crd.clone();
    marked["metadata"]["annotations"] =
        json!({"capi-operator.openshift.io/adopt-existing": "always"});
    let mark = env.audit().len();
    put_configmap(
        &env.admin,
        &components_plus(AWS_CM, &serde_json::to_string(&marked).unwrap()),
    )
    .await;
    refused(
        &env.admin,
        "the administrator's CRD refused",
        &[&format!(
            "(CustomResourceDefinition {WIDGETS}): rule adopt-existing-bounded"
        )],
    )
    .await;
    converge_back(&env, mark).await;
    // The API server writes its status (Established) after the create; nothing else changes.
    let after = crds.get(WIDGETS).await.unwrap();
    assert_eq!(
        after.data["spec"], before.data["spec"],
        "no conversion, no change"
    );
    assert_eq!(after.metadata.labels, before.metadata.labels);
    assert_eq!(after.metadata.annotations, before.metadata.annotations);
    assert_eq!(
        capi_apply::ownership::field_managers(&after),
        ["kube-apiserver", "kubectl"],
        "only its creator and the API server wrote it"
    );

    // 7. What the release ships for core and the payload applied first (the IPAM CRDs) was adopted,
    // recorded as such; a core version that drops one releases it in place, and the good one adopts
    // it again. What aws created is deleted when dropped.
    let core_inventory = inventory(&env.admin, "cluster-api").await;
    let claims = "ipaddressclaims.ipam.cluster.x-k8s.io";
    let adopted = |inventory: &Value, name: &str| {
        inventory["objects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["name"] == name)
            .map(|o| o.get("adopted").cloned())
    };
    assert_eq!(
        adopted(&core_inventory, claims),
        Some(Some(json!(true))),
        "{core_inventory:#}"
    );
    let ipam_before = crds.get(claims).await.unwrap();
    // The CRD dropped, and the admission on its resource with it (a provider's admission acts only
    // on its own CRDs' resources).
    let without_claims: Vec<Value> =
        capi_manifests::yaml::parse_documents("core", &fixture_components(CORE_CM))
            .unwrap()
            .into_iter()
            .map(|d| d.value)
            .filter(|o| o["metadata"]["name"] != claims)
            .map(|mut o| {
                if let Some(hooks) = o["webhooks"].as_array_mut() {
                    hooks.retain(|h| !h["rules"].to_string().contains("\"ipaddressclaims"));
                }
                o
            })
            .collect();
    let mark = env.audit().len();
    put_configmap(
        &env.admin,
        &with_components(
            CORE_CM,
            &capi_manifests::yaml::to_multi_yaml(&without_claims).unwrap(),
        ),
    )
    .await;
    let released = eventually(RECONCILES, "the IPAM CRD released", || async {
        let crd = crds.get(claims).await.ok()?;
        (!crd.labels().contains_key("app.kubernetes.io/managed-by")).then_some(crd)
    })
    .await;
    assert_eq!(released.uid(), ipam_before.uid(), "released in place");
    // As it was found: the labels the installer added (its own, the provider's) are gone too.
    assert!(
        !released.labels().contains_key("cluster.x-k8s.io/provider"),
        "{:?}",
        released.labels()
    );
    assert!(
        !released
            .metadata
            .managed_fields
            .iter()
            .flatten()
            .any(|m| m.manager.as_deref() == Some("capi-installer")),
        "the installer still owns fields of {claims}"
    );
    let deletes: Vec<String> = writes_since(&env, mark)
        .into_iter()
        .filter(|w| w.starts_with("delete"))
        .collect();
    assert!(deletes.is_empty(), "{deletes:?}");
    put_configmap(&env.admin, &fixture_configmap(CORE_CM)).await;
    eventually(RECONCILES, "the IPAM CRD adopted again", || async {
        let inventory = inventory(&env.admin, "cluster-api").await;
        (adopted(&inventory, claims) == Some(Some(json!(true)))).then_some(())
    })
    .await;
    converged(&env.admin).await;
    assert_eq!(crds.get(claims).await.unwrap().uid(), ipam_before.uid());

    let mark = env.audit().len();
    put_configmap(
        &env.admin,
        &components_plus(AWS_CM,
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: capa-created, namespace: openshift-cluster-api}\ndata: {created: 'yes'}\n",
        ),
    )
    .await;
    eventually(RECONCILES, "capa-created created", || async {
        configmaps.get_opt("capa-created").await.ok()?.map(|_| ())
    })
    .await;
    converged(&env.admin).await;
    let aws = inventory(&env.admin, "aws").await;
    assert_eq!(adopted(&aws, "capa-created"), Some(None), "{aws:#}");
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
    let deletes: Vec<String> = writes_since(&env, mark)
        .into_iter()
        .filter(|w| w.starts_with("delete"))
        .collect();
    assert_eq!(deletes.len(), 1, "{deletes:?}");
    assert!(
        deletes[0].contains("configmaps openshift-cluster-api/capa-created"),
        "{deletes:?}"
    );

    // 8. An object aws's inventory records (with the UID of its creation), deleted and created again
    // by someone else while the installer was stopped, under the installer's own labels: another
    // object, not aws's. Refused and left as it is; once its creator deletes it, the installer
    // creates it again and records the new UID.
    let aws = inventory(&env.admin, "aws").await;
    let entry = aws["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "ClusterRole")
        .unwrap_or_else(|| panic!("a ClusterRole of aws's: {aws:#}"))
        .clone();
    let name = entry["name"].as_str().unwrap().to_string();
    let before = roles.get(&name).await.unwrap();
    assert_eq!(
        entry["uid"].as_str(),
        before.metadata.uid.as_deref(),
        "{entry}"
    );
    _installer.stop().await;
    roles.delete(&name, &Default::default()).await.unwrap();
    eventually(Duration::from_secs(60), "the ClusterRole gone", || async {
        roles.get_opt(&name).await.ok()?.is_none().then_some(())
    })
    .await;
    let again: ClusterRole = serde_json::from_value(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": name, "labels": before.metadata.labels}}))
    .unwrap();
    let again = roles
        .create(
            &PostParams {
                field_manager: Some("capi-test-someone".into()),
                ..Default::default()
            },
            &again,
        )
        .await
        .unwrap();
    let mark = env.audit().len();
    let installer = Running::under_release_rbac(&env, config()).await;
    refused(
        &env.admin,
        "an object created again by someone else refused",
        &[&format!(
            "ClusterRole {name} exists, the installer did not create it, and it is not adopted: the installer created it, but it was deleted and created again by [capi-test-someone]"
        )],
    )
    .await;
    assert!(
        writes_to(&env, mark, &format!("clusterroles {name}")).is_empty(),
        "{:?}",
        writes_to(&env, mark, &format!("clusterroles {name}"))
    );
    assert_eq!(
        roles.get(&name).await.unwrap().metadata.resource_version,
        again.metadata.resource_version
    );
    roles.delete(&name, &Default::default()).await.unwrap();
    converged(&env.admin).await;
    let recreated = eventually(RECONCILES, "the ClusterRole created again", || async {
        roles.get_opt(&name).await.ok()?
    })
    .await;
    assert_ne!(recreated.metadata.uid, again.metadata.uid);
    eventually(RECONCILES, "its new UID recorded", || async {
        let aws = inventory(&env.admin, "aws").await;
        aws["objects"]
            .as_array()?
            .iter()
            .any(|o| {
                o["name"] == name.as_str() && o["uid"].as_str() == recreated.metadata.uid.as_deref()
            })
            .then_some(())
    })
    .await;
    drop(installer);
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
    let _installer = Running::under_release_rbac(&env, config()).await;
    put_configmap(
        &env.admin,
        &components_plus(AWS_CM,
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
