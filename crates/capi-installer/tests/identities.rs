//! Each provider written as its own identity (issue 46): with the bundle policy switched off (a
//! test-only setting no flag reaches), the API server itself refuses what the policy would, because
//! the installer impersonates ServiceAccount `capi-provider-<provider>` for every write of that
//! provider and that identity holds only its own provider's ceiling
//! (`manifests/0000_30_capi-installer_03_ceiling.yaml`); and with the policy on, a release image the
//! policy trusts is bounded by its provider's identity all the same. The installer runs as its own
//! ServiceAccount under exactly the shipped RBAC.

use std::time::Duration;

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::Api;
use test_support::*;

const MINUTE: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_policy_off_the_api_server_bounds_each_provider_by_its_own_identity() {
    require_fixture!("transport-configmaps");
    let env = Env::on_aws(&[CORE_CM, AWS_CM]).await;
    let mut unchecked = config();
    unchecked.policy.enforce = false;
    let _installer = Running::under_release_rbac(&env, unchecked).await;
    wait_available(&env.admin, 4 * MINUTE).await;
    let roles: Api<ClusterRole> = Api::all(env.admin.clone());
    let bindings: Api<ClusterRoleBinding> = Api::all(env.admin.clone());

    // Every write of core and aws was made as their identities, none as the installer itself.
    let writers: std::collections::BTreeSet<String> = installer_writes(&env.audit(), None)
        .iter()
        .filter(|e| {
            e.object_ref.as_ref().is_some_and(|o| {
                ["clusterroles", "deployments", "customresourcedefinitions"]
                    .contains(&o.resource.as_str())
            })
        })
        .map(|e| {
            e.impersonated_user
                .as_ref()
                .map(|u| u.username.clone())
                .unwrap_or_else(|| e.user.username.clone())
        })
        .collect();
    assert_eq!(
        writers,
        [
            "system:serviceaccount:openshift-cluster-api-operator:capi-provider-cluster-api",
            "system:serviceaccount:openshift-cluster-api-operator:capi-provider-infrastructure-aws",
        ]
        .map(String::from)
        .into(),
    );

    // 1. aws granting what only vSphere's bundles grant: RoleBindings anywhere, deleting Nodes.
    let mark = env.audit().len();
    put_configmap(
        &env.admin,
        &components_plus(AWS_CM,
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: capa-vsphere-grants}\nrules:\n- {apiGroups: [rbac.authorization.k8s.io], resources: [rolebindings], verbs: [create]}\n- {apiGroups: [''], resources: [nodes], verbs: [delete]}\n",
        ),
    )
    .await;
    let message = reported(&env.admin, "capa-vsphere-grants").await;
    for part in [
        "ConfigMap aws",
        "ClusterRole capa-vsphere-grants",
        "capi-provider-infrastructure-aws",
        "is attempting to grant RBAC permissions not currently held",
    ] {
        assert!(message.contains(part), "{part:?} not in {message}");
    }
    assert!(
        roles
            .get_opt("capa-vsphere-grants")
            .await
            .unwrap()
            .is_none()
    );
    let written: Vec<String> = installer_writes(&env.audit()[mark..], None)
        .iter()
        .filter(|e| e.response_code.is_some_and(|c| c < 300) && !e.request_uri.contains("dryRun"))
        .filter_map(|e| e.object_ref.as_ref()?.name.clone())
        .filter(|n| n == "capa-vsphere-grants")
        .collect();
    assert!(written.is_empty(), "{written:?}");

    // 2. aws binding its manager to core's ClusterRole: a binding's writer must hold what the role
    // grants, and aws's identity does not hold core's grants.
    put_configmap(
        &env.admin,
        &components_plus(AWS_CM,
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: capa-takes-core}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: capi-manager-role}\nsubjects: [{kind: ServiceAccount, name: capa-controller-manager, namespace: openshift-cluster-api}]\n",
        ),
    )
    .await;
    let message = reported(&env.admin, "capa-takes-core").await;
    assert!(
        message.contains("capi-provider-infrastructure-aws")
            && message.contains("is attempting to grant RBAC permissions not currently held"),
        "{message}"
    );
    assert!(bindings.get_opt("capa-takes-core").await.unwrap().is_none());

    // The good ConfigMap back: converged, nothing of the refused versions left.
    put_configmap(
        &env.admin,
        &with_components(AWS_CM, &fixture_components(AWS_CM)),
    )
    .await;
    eventually(4 * MINUTE, "settled again", || async {
        settled(&co_status(&env.admin).await?).then_some(())
    })
    .await;
    assert!(
        roles
            .get_opt("capa-vsphere-grants")
            .await
            .unwrap()
            .is_none()
    );
    assert!(bindings.get_opt("capa-takes-core").await.unwrap().is_none());
}

/// A release image is trusted by the policy (its own grants extend what it judges), not by the API
/// server: aws's profile from its release image granting what aws's shipped ceiling does not hold is
/// refused to aws's identity by the escalation check, before anything of that version is written, and
/// reported naming the identity (issue 46: Kubernetes enforces the per-provider bound too).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_images_grants_beyond_its_identity_are_refused_by_the_api_server() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(dir) = profiles_as_volumes(
        tmp.path(),
        &[
            ("core", "cluster-capi-controllers", "default"),
            ("aws", "aws-cluster-api-controllers", "default"),
        ],
    ) else {
        return;
    };
    let volume = capi_installer_controller::source::images::volume_name(
        &images()["aws-cluster-api-controllers"],
    );
    let manifests = dir
        .join(volume)
        .join("capi-operator-manifests/default/manifests.yaml");
    let text = std::fs::read_to_string(&manifests).unwrap();
    std::fs::remove_file(&manifests).unwrap();
    std::fs::write(
        &manifests,
        format!(
            "{}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {{name: capa-node-proxy, labels: {{cluster.x-k8s.io/provider: infrastructure-aws}}}}\nrules: [{{apiGroups: [''], resources: [nodes/proxy], verbs: [get]}}]\n",
            text.trim_end()
        ),
    )
    .unwrap();
    let env = Env::start(true).await;
    ensure_namespaces(&env.admin).await;
    set_platform(&env.admin, "AWS").await;
    apply_as_release_payload(&env.admin, &installer_rbac()).await;
    let mut config = config();
    config.profiles = Some(capi_installer_controller::config::ProfilesConfig {
        dir,
        ..Default::default()
    });
    let sa = env
        .service_account_config(INSTALLER_NS, "capi-installer")
        .await;
    let _installer = Running::as_installer(sa, config);

    let refused = reported(&env.admin, "capa-node-proxy").await;
    for part in [
        "system:serviceaccount:openshift-cluster-api-operator:capi-provider-infrastructure-aws",
        "attempting to grant RBAC permissions not currently held",
    ] {
        assert!(refused.contains(part), "{part:?} not in {refused}");
    }
    let roles: Api<ClusterRole> = Api::all(env.admin.clone());
    assert!(roles.get_opt("capa-node-proxy").await.unwrap().is_none());
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(env.admin.clone(), "openshift-cluster-api");
    assert!(
        deployments
            .get_opt("capa-controller-manager")
            .await
            .unwrap()
            .is_none(),
        "nothing of aws's version written"
    );
}
