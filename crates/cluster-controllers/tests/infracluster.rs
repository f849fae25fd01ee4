//! The InfraCluster controller against the real control plane, on the CRDs that the real transport
//! ConfigMaps of each provider install.

mod support;

use std::time::Duration;

use capi_cluster_controllers::ControllerKind;
use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::json;
use support::*;

const AVAILABLE: &str = "InfraClusterControllerAvailable";
const DEGRADED: &str = "InfraClusterControllerDegraded";
const T: Duration = Duration::from_secs(60);

fn infra_clusters(
    env: &Env,
    version: &str,
    kind: &str,
    plural: &str,
) -> kube::Api<kube::api::DynamicObject> {
    namespaced(
        &env.admin,
        NS,
        &ar("infrastructure.cluster.x-k8s.io", version, kind, plural),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aws_waits_for_its_crd_and_source_then_creates_repairs_and_leaves_a_foreign_one_alone() {
    require_fixture!("transport-configmaps");
    let env = Env::start(false).await;
    openshift_on_aws(&env.admin).await;
    install_machine_api_crds(&env.admin).await;
    let config = env.config(&[ControllerKind::InfraCluster]);
    let running = Running::start(env.controllers_admin_client(), config.clone());

    // Before the installer has installed the AWS provider's CRDs: waiting, not degraded, no error.
    let waiting = wait_condition(
        &env.admin,
        AVAILABLE,
        "False",
        "WaitingForCustomResourceDefinitions",
        T,
    )
    .await;
    assert!(
        waiting
            .message
            .contains("awsclusters.infrastructure.cluster.x-k8s.io"),
        "{waiting:?}"
    );
    assert_eq!(
        co_condition(&env.admin, DEGRADED).await.unwrap().status,
        "False"
    );
    let failed: Vec<String> = controller_requests(&env.audit(), None)
        .iter()
        .filter(|e| e.response_code.is_some_and(|c| c >= 400))
        .map(describe)
        .collect();
    assert!(
        failed.is_empty(),
        "failed requests while waiting: {failed:?}"
    );

    // The CRDs are there but no control-plane Machine yet: nothing to derive the load balancers from.
    install_provider_crds(&env.admin, AWS_CM).await;
    let degraded = wait_condition(&env.admin, DEGRADED, "True", "MissingSource", T).await;
    assert!(
        degraded.message.contains("no control-plane Machine"),
        "{degraded:?}"
    );
    let aws = infra_clusters(&env, "v1beta2", "AWSCluster", "awsclusters");
    assert!(aws.get_opt(INFRA_NAME).await.unwrap().is_none());

    // The source appears: the AWSCluster is created from it, externally managed and ready.
    create_control_plane_machine(
        &env.admin,
        "demo-x7k2p-master-0",
        json!({"apiVersion": "machine.openshift.io/v1beta1", "kind": "AWSMachineProviderConfig",
            "loadBalancers": [{"name": "demo-x7k2p-ext", "type": "network"},
                              {"name": "demo-x7k2p-int", "type": "network"}]}),
    )
    .await;
    wait_condition(&env.admin, AVAILABLE, "True", "AsExpected", T).await;
    assert_eq!(
        co_condition(&env.admin, DEGRADED).await.unwrap().status,
        "False"
    );
    let created = aws.get(INFRA_NAME).await.unwrap();
    assert_eq!(
        created.metadata.annotations.as_ref().unwrap()["cluster.x-k8s.io/managed-by"],
        "cluster-capi-operator-infracluster-controller"
    );
    let spec = &created.data["spec"];
    assert_eq!(spec["region"], "eu-west-1");
    assert_eq!(
        spec["controlPlaneEndpoint"],
        json!({"host": "api-int.demo.example.com", "port": 6443})
    );
    assert_eq!(spec["controlPlaneLoadBalancer"]["name"], "demo-x7k2p-int");
    assert_eq!(spec["controlPlaneLoadBalancer"]["scheme"], "internal");
    assert_eq!(
        spec["secondaryControlPlaneLoadBalancer"]["name"],
        "demo-x7k2p-ext"
    );
    assert_eq!(created.data["status"]["ready"], true);

    // Drift: someone changes the region and marks it not ready; both come back.
    aws.patch(
        INFRA_NAME,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"region": "us-east-1"}})),
    )
    .await
    .unwrap();
    aws.patch_status(
        INFRA_NAME,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"ready": false}})),
    )
    .await
    .unwrap();
    eventually(T, "drift repaired", || async {
        let o = aws.get(INFRA_NAME).await.ok()?;
        (o.data["spec"]["region"] == "eu-west-1" && o.data["status"]["ready"] == true).then_some(())
    })
    .await;

    // Someone else's AWSCluster (no managed-by annotation: its provider manages it) is left alone.
    running.stop().await;
    aws.delete(INFRA_NAME, &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(&aws, INFRA_NAME, T, "AWSCluster deleted").await;
    apply(
        &env.admin,
        &ar(
            "infrastructure.cluster.x-k8s.io",
            "v1beta2",
            "AWSCluster",
            "awsclusters",
        ),
        &json!({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AWSCluster",
            "metadata": {"name": INFRA_NAME, "namespace": NS}, "spec": {"region": "ap-south-1"}}),
        "someone-else",
    )
    .await;
    let mark = audit_mark(&env);
    let _running = Running::start(env.controllers_admin_client(), config);
    let foreign = wait_condition(&env.admin, AVAILABLE, "True", "ExternallyManaged", T).await;
    assert!(
        foreign
            .message
            .contains(&format!("AWSCluster {NS}/{INFRA_NAME}")),
        "{foreign:?}"
    );
    let after = aws.get(INFRA_NAME).await.unwrap();
    assert_eq!(after.data["spec"]["region"], "ap-south-1");
    assert!(after.data["status"]["ready"].is_null());
    let touched: Vec<String> = writes(&controller_requests(&env.audit(), Some(mark)))
        .iter()
        .filter(|e| {
            e.object_ref
                .as_ref()
                .is_some_and(|o| o.resource == "awsclusters")
        })
        .map(describe)
        .collect();
    assert!(
        touched.is_empty(),
        "wrote a foreign AWSCluster: {touched:?}"
    );
}

/// GCP on its provider's real CRDs, with the inputs the reference reads. GCP has a control plane of
/// its own: its CRDs share short names with Azure's (so both cannot be Established at once), and
/// deleting CRDs to make room is slow and unbounded (the API server's CRD finalizer retries with an
/// exponential back-off; on two loaded cores it took over four minutes), while a control plane starts
/// in seconds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gcp_infracluster_on_its_real_crds() {
    require_fixture!("transport-configmaps");
    let env = Env::start(false).await;
    openshift_cluster(
        &env.admin,
        "GCP",
        json!({"gcp": {"region": "us-east1", "projectID": "demo-project"}}),
        json!({}),
    )
    .await;
    install_machine_api_crds(&env.admin).await;
    install_provider_crds(&env.admin, GCP_CM).await;
    create_control_plane_machine(
        &env.admin,
        "demo-x7k2p-master-0",
        json!({"apiVersion": "machine.openshift.io/v1beta1", "kind": "GCPMachineProviderSpec",
            "projectID": "demo-project", "region": "us-east1",
            "networkInterfaces": [{"network": "demo-x7k2p-network", "subnetwork": "demo-x7k2p-master-subnet"}],
            // Fields GCP's derivation does not read (Azure's) are ignored.
            "location": "eastus", "vnet": "demo-vnet", "networkResourceGroup": "demo-rg-net",
            "resourceGroup": "demo-rg"}),
    )
    .await;
    let _running = Running::start(
        env.controllers_admin_client(),
        env.config(&[ControllerKind::InfraCluster]),
    );

    // GCP.
    let gcp = infra_clusters(&env, "v1beta1", "GCPCluster", "gcpclusters");
    let created = eventually(T, "GCPCluster ready", || async {
        let o = gcp.get_opt(INFRA_NAME).await.ok()??;
        (o.data["status"]["ready"] == true).then_some(o)
    })
    .await;
    assert_eq!(
        created.data["spec"]["network"]["name"],
        "demo-x7k2p-network"
    );
    assert_eq!(created.data["spec"]["project"], "demo-project");
    assert_eq!(created.data["spec"]["region"], "us-east1");
    wait_condition(&env.admin, AVAILABLE, "True", "AsExpected", T).await;
}

/// Azure, then vSphere on the same control plane (their CRDs coexist), each with its provider's
/// real CRDs and the inputs the reference reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azure_then_vsphere_infraclusters_on_their_real_crds() {
    require_fixture!("transport-configmaps");
    let env = Env::start(false).await;
    openshift_cluster(
        &env.admin,
        "Azure",
        json!({"azure": {"cloudName": "AzurePublicCloud"}}),
        json!({}),
    )
    .await;
    install_machine_api_crds(&env.admin).await;
    create_control_plane_machine(
        &env.admin,
        "demo-x7k2p-master-0",
        json!({"apiVersion": "machine.openshift.io/v1beta1", "kind": "AzureMachineProviderSpec",
            "location": "eastus", "vnet": "demo-vnet", "networkResourceGroup": "demo-rg-net",
            "resourceGroup": "demo-rg"}),
    )
    .await;
    let _running = Running::start(
        env.controllers_admin_client(),
        env.config(&[ControllerKind::InfraCluster]),
    );

    // Azure: the identity and its secret come from the cloud credential operator's Secret.
    let b64 = |s: &str| {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(s)
    };
    install_provider_crds(&env.admin, AZURE_CM).await;
    apply(
        &env.admin,
        &ar("", "v1", "Secret", "secrets"),
        &json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "capz-manager-bootstrap-credentials", "namespace": NS},
            "data": {"azure_client_id": b64("client-1"), "azure_tenant_id": b64("tenant-1"),
                     "azure_client_secret": b64("s3cret")}}),
        "cloud-credential-operator",
    )
    .await;
    let azure = infra_clusters(&env, "v1beta1", "AzureCluster", "azureclusters");
    let created = eventually(T, "AzureCluster ready", || async {
        let o = azure.get_opt(INFRA_NAME).await.ok()??;
        (o.data["status"]["ready"] == true).then_some(o)
    })
    .await;
    let spec = &created.data["spec"];
    assert_eq!(spec["location"], "eastus");
    assert_eq!(spec["resourceGroup"], "demo-rg");
    assert_eq!(spec["networkSpec"]["vnet"]["name"], "demo-vnet", "{spec:#}");
    assert_eq!(spec["identityRef"]["kind"], "AzureClusterIdentity");
    let identity = infra_clusters(
        &env,
        "v1beta1",
        "AzureClusterIdentity",
        "azureclusteridentities",
    )
    .get(INFRA_NAME)
    .await
    .unwrap();
    assert_eq!(identity.data["spec"]["clientID"], "client-1");
    assert_eq!(identity.data["spec"]["type"], "ServicePrincipal");
    let secret = secrets(&env.admin, NS)
        .get("capz-manager-cluster-credential")
        .await
        .unwrap();
    assert_eq!(secret.data["data"]["clientSecret"], b64("s3cret"));

    // vSphere: the server from the Infrastructure spec, credentials copied from kube-system.
    install_provider_crds(&env.admin, VSPHERE_CM).await;
    apply(
        &env.admin,
        &ar("", "v1", "Secret", "secrets"),
        &json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "vsphere-creds", "namespace": "kube-system"},
            "data": {"vc.example.com.username": b64("admin"), "vc.example.com.password": b64("pw")}}),
        "openshift-installer",
    )
    .await;
    set_infrastructure(
        &env.admin,
        "VSphere",
        json!({}),
        json!({"platformSpec": {"vsphere": {"vcenters": [{"server": "vc.example.com", "port": 443, "datacenters": ["dc1"]}]}}}),
    )
    .await;
    let vsphere = infra_clusters(&env, "v1beta1", "VSphereCluster", "vsphereclusters");
    let created = eventually(T, "VSphereCluster ready", || async {
        let o = vsphere.get_opt(INFRA_NAME).await.ok()??;
        (o.data["status"]["ready"] == true).then_some(o)
    })
    .await;
    assert_eq!(created.data["spec"]["server"], "vc.example.com");
    assert_eq!(
        created.data["spec"]["identityRef"],
        json!({"kind": "Secret", "name": INFRA_NAME})
    );
    let credentials = secrets(&env.admin, NS).get(INFRA_NAME).await.unwrap();
    assert_eq!(credentials.data["data"]["username"], b64("admin"));
    assert_eq!(credentials.data["data"]["password"], b64("pw"));
    wait_condition(&env.admin, AVAILABLE, "True", "AsExpected", T).await;
}
