//! The controllers under their shipped RBAC (`manifests/0000_31_capi-controllers_*`), as their own
//! ServiceAccount: everything works without a single denied request, and the pod's identity can write
//! no CRD, no RBAC and no ServiceAccount token Secret.

mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use capi_cluster_controllers::ControllerKind;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use support::*;

const T: Duration = Duration::from_secs(90);
const SA_USER: &str = "system:serviceaccount:openshift-cluster-api:capi-controllers";

fn status_code(result: Result<DynamicObject, kube::Error>) -> u16 {
    match result {
        Ok(o) => panic!("allowed: {:?}", o.metadata.name),
        Err(kube::Error::Api(s)) => s.code,
        Err(e) => panic!("unexpected error: {e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controllers_work_under_their_shipped_rbac_and_cannot_escalate() {
    require_fixture!("transport-configmaps");
    let env = Env::start(false).await;
    openshift_on_aws(&env.admin).await;
    install_provider_crds(&env.admin, CORE_CM).await;
    install_provider_crds(&env.admin, AWS_CM).await;
    aws_machines(&env.admin).await;
    apply_as_release_payload(&env.admin, &repo_manifests("0000_31_capi-controllers")).await;

    let sa_config = env.service_account_config(NS, "capi-controllers").await;
    let client = controllers_client(sa_config);
    let _running = Running::start(client.clone(), env.config(&ControllerKind::ALL));

    for kind in ControllerKind::ALL {
        wait_condition(
            &env.admin,
            &format!("{}Available", kind.name()),
            "True",
            "AsExpected",
            T,
        )
        .await;
    }
    let requests = controller_requests(&env.audit(), None);
    let denied: Vec<String> = requests
        .iter()
        .filter(|e| e.response_code == Some(403))
        .map(describe)
        .collect();
    assert!(
        denied.is_empty(),
        "denied under the shipped RBAC: {denied:#?}"
    );
    let writers: BTreeSet<String> = writes(&requests)
        .iter()
        .map(|e| e.user.username.clone())
        .collect();
    assert_eq!(writers, BTreeSet::from([SA_USER.to_string()]));
    let written: BTreeSet<String> = writes(&requests)
        .iter()
        .filter_map(|e| e.object_ref.as_ref())
        .map(|o| {
            format!(
                "{}/{}",
                o.resource,
                o.subresource.clone().unwrap_or_default()
            )
        })
        .collect();
    assert_eq!(
        written,
        BTreeSet::from(
            [
                "awsclusters/",
                "awsclusters/status",
                "clusteroperators/status",
                "clusters/",
                "clusters/status",
                "secrets/",
                "serviceaccounts/token",
            ]
            .map(String::from)
        )
    );

    // The pod's identity cannot write CRDs or RBAC, nor mint tokens through Secrets.
    let create = |r: kube::api::ApiResource, ns: Option<&str>, body: Value| {
        let api: Api<DynamicObject> = match ns {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &r),
            None => Api::all_with(client.clone(), &r),
        };
        async move {
            let obj: DynamicObject = serde_json::from_value(body).unwrap();
            api.create(&PostParams::default(), &obj).await
        }
    };
    let crd = ar(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
    );
    let code = status_code(
        create(
            crd.clone(),
            None,
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": "widgets.example.com"},
                "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"kind": "Widget", "plural": "widgets"},
                    "versions": [{"name": "v1", "served": true, "storage": true,
                        "schema": {"openAPIV3Schema": {"type": "object"}}}]}}),
        )
        .await,
    );
    assert_eq!(code, 403, "create a CRD");
    let crds: Api<DynamicObject> = Api::all_with(client.clone(), &crd);
    let code = status_code(
        crds.patch(
            "clusters.cluster.x-k8s.io",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await,
    );
    assert_eq!(code, 403, "change a CRD it may read");
    let code = status_code(
        crds.delete(
            "awsclusters.infrastructure.cluster.x-k8s.io",
            &DeleteParams::default(),
        )
        .await
        .map(|_| DynamicObject::new("", &crd)),
    );
    assert_eq!(code, 403, "delete a CRD");

    let cluster_role = ar(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        "clusterroles",
    );
    let code = status_code(
        create(
            cluster_role.clone(),
            None,
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": "capi-controllers-more"},
                "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]}),
        )
        .await,
    );
    assert_eq!(code, 403, "create a ClusterRole");
    let code = status_code(
        Api::<DynamicObject>::all_with(client.clone(), &cluster_role)
            .patch(
                "capi-controllers",
                &PatchParams::default(),
                &Patch::Merge(
                    json!({"rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]}),
                ),
            )
            .await,
    );
    assert_eq!(code, 403, "widen its own ClusterRole");
    let code = status_code(
        create(
            ar("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings"),
            None,
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": "capi-controllers-admin"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
                "subjects": [{"kind": "ServiceAccount", "name": "capi-controllers", "namespace": NS}]}),
        )
        .await,
    );
    assert_eq!(code, 403, "bind cluster-admin");
    let code = status_code(
        create(
            ar("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings"),
            Some(NS),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": "capi-controllers-more", "namespace": NS},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
                "subjects": [{"kind": "ServiceAccount", "name": "capi-controllers", "namespace": NS}]}),
        )
        .await,
    );
    assert_eq!(code, 403, "create a RoleBinding");

    // Creating Secrets is allowed (the kubeconfig), but not token Secrets: the token controller would
    // fill one with a token of the installer's ServiceAccount.
    let code = status_code(
        create(
            ar("", "v1", "Secret", "secrets"),
            Some(NS),
            json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
                "metadata": {"name": "capi-installer-token", "namespace": NS,
                    "annotations": {"kubernetes.io/service-account.name": "capi-installer"}}}),
        )
        .await,
    );
    assert_eq!(code, 403, "create a ServiceAccount token Secret");
    // Nor tokens of any other ServiceAccount through the TokenRequest API.
    let accounts: Api<k8s_openapi::api::core::v1::ServiceAccount> =
        Api::namespaced(client.clone(), NS);
    let denied = accounts
        .create_token_request(
            "capi-controllers",
            &PostParams::default(),
            &Default::default(),
        )
        .await;
    assert!(
        matches!(&denied, Err(kube::Error::Api(s)) if s.code == 403),
        "a token of another ServiceAccount: {denied:?}"
    );
    // And it deletes nothing it keeps.
    let code = status_code(
        namespaced(
            &client,
            NS,
            &ar(
                "infrastructure.cluster.x-k8s.io",
                "v1beta2",
                "AWSCluster",
                "awsclusters",
            ),
        )
        .delete(INFRA_NAME, &DeleteParams::default())
        .await
        .map(|_| DynamicObject::new("", &crd)),
    );
    assert_eq!(code, 403, "delete its AWSCluster");
}
