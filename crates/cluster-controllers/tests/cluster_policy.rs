//! The management cluster's own Cluster protected by the API server itself
//! (`manifests/0000_31_capi-controllers_05_cluster-policy.yaml`, a ValidatingAdmissionPolicy with
//! `Infrastructure/cluster` as its parameter), on the real control plane with the real core and AWS
//! CRDs: the Cluster the controllers create is accepted; in `openshift-cluster-api` a Cluster of another
//! name, one referring to a kind that is no known InfraCluster, and any DELETE are refused with the
//! policy's message; elsewhere Clusters are not its business.

mod support;

use std::time::Duration;

use capi_cluster_controllers::ControllerKind;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;
use support::*;

const T: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clusters_own_cluster_is_kept_by_admission() {
    require_fixture!("transport-configmaps");
    let env = Env::start(false).await;
    openshift_on_aws(&env.admin).await;
    install_provider_crds(&env.admin, CORE_CM).await;
    install_provider_crds(&env.admin, AWS_CM).await;
    apply_release_manifests(&env.admin, "0000_31_capi-controllers_05_cluster-policy").await;
    let cluster_resource = ar("cluster.x-k8s.io", "v1beta2", "Cluster", "clusters");
    let clusters = namespaced(&env.admin, NS, &cluster_resource);
    let cluster = |name: &str, kind: &str| {
        serde_json::from_value::<kube::api::DynamicObject>(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io",
                "kind": kind, "name": name}}}))
        .unwrap()
    };

    // In force once the API server has compiled it: a Cluster of another name is refused.
    let refused = eventually(T, "the policy in force", || async {
        let e = clusters
            .create(
                &PostParams::default(),
                &cluster("not-this-cluster", "AWSCluster"),
            )
            .await
            .err()?;
        e.to_string()
            .contains("capi-controllers-protect-cluster")
            .then_some(e)
    })
    .await
    .to_string();
    assert!(
        refused.contains(&format!(
            "a Cluster in openshift-cluster-api must be named after Infrastructure/cluster's status.infrastructureName ({INFRA_NAME}), not not-this-cluster"
        )),
        "{refused}"
    );

    // The controllers' own Cluster is accepted.
    let _running = Running::start(
        env.controllers_admin_client(),
        env.config(&[ControllerKind::CoreCluster]),
    );
    apply(
        &env.admin,
        &ar(
            "infrastructure.cluster.x-k8s.io",
            "v1beta2",
            "AWSCluster",
            "awsclusters",
        ),
        &json!({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AWSCluster",
            "metadata": {"name": INFRA_NAME, "namespace": NS}, "spec": {"region": "eu-west-1"}}),
        "capi-controllers-infracluster",
    )
    .await;
    wait_condition(
        &env.admin,
        "CoreClusterControllerAvailable",
        "True",
        "AsExpected",
        T,
    )
    .await;
    assert!(clusters.get_opt(INFRA_NAME).await.unwrap().is_some());

    // Its InfraCluster kind may not become one OpenShift does not know.
    let unknown = clusters
        .patch(
            INFRA_NAME,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"infrastructureRef": {"kind": "DockerCluster"}}})),
        )
        .await
        .expect_err("an unknown InfraCluster kind");
    assert!(
        unknown.to_string().contains(&format!(
            "spec.infrastructureRef.kind of Cluster openshift-cluster-api/{INFRA_NAME}: DockerCluster is not an InfraCluster kind OpenShift knows (AWSCluster, AzureCluster, GCPCluster, IBMPowerVSCluster, OpenStackCluster, VSphereCluster, Metal3Cluster)"
        )),
        "{unknown}"
    );

    // And it may not be deleted, by anyone.
    let delete = clusters
        .delete(INFRA_NAME, &DeleteParams::default())
        .await
        .expect_err("the cluster's own Cluster deleted");
    assert!(
        delete.to_string().contains(&format!(
            "Cluster openshift-cluster-api/{INFRA_NAME} is this cluster's own: it may not be deleted"
        )),
        "{delete}"
    );
    let kept = clusters.get(INFRA_NAME).await.unwrap();
    assert!(kept.metadata.deletion_timestamp.is_none());
    assert_eq!(kept.data["spec"]["infrastructureRef"]["kind"], "AWSCluster");

    // Elsewhere, Clusters are not its business.
    ensure_namespace(&env.admin, "workloads").await;
    let elsewhere = namespaced(&env.admin, "workloads", &cluster_resource);
    let mut other = cluster("anything", "DockerCluster");
    other.metadata.namespace = Some("workloads".into());
    elsewhere
        .create(&PostParams::default(), &other)
        .await
        .unwrap();
    elsewhere
        .delete("anything", &DeleteParams::default())
        .await
        .unwrap();
}
