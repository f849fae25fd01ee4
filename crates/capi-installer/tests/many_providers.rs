//! Many providers on one management cluster (issue 20): core and every infrastructure provider of the
//! fixtures — aws (the platform's), gcp, azure, vsphere, and ibmcloud (PowerVS, from its stand-in in
//! `examples/providers/ibmcloud`: the fixtures have none) — installed together on one control plane.
//!
//! The real Azure and GCP bundles declare the same three short names (`amct`, `amcpt`, `ammpt`) in
//! `infrastructure.cluster.x-k8s.io`; before the installer checked names, whichever came second never
//! had those CRDs Established. Here gcp is installed first, then azure (which comes before gcp in
//! install order) and vsphere are asked for: gcp keeps the names it holds on the cluster, azure's CRDs
//! are applied without them and Established, and both statuses say so. Then a provider whose CRD
//! declares a kind that gcp's CRD holds (a real conflict) is refused naming both, and nothing of it is
//! written while the others stay untouched.

use std::time::Duration;

use kube::Client;
use kube::api::{Api, DynamicObject, ListParams};
use test_support::*;

const MINUTE: Duration = Duration::from_secs(60);
const GROUP: &str = "infrastructure.cluster.x-k8s.io";
/// The CRDs of Azure and GCP that declare the clashing short names, by short name.
const CLASHES: [(&str, &str, &str); 3] = [
    (
        "amct",
        "azuremanagedclustertemplates",
        "gcpmanagedclustertemplates",
    ),
    (
        "amcpt",
        "azuremanagedcontrolplanetemplates",
        "gcpmanagedcontrolplanetemplates",
    ),
    (
        "ammpt",
        "azuremanagedmachinepooltemplates",
        "gcpmanagedmachinepooltemplates",
    ),
];

fn crds(client: &Client) -> Api<DynamicObject> {
    Api::all_with(
        client.clone(),
        &ar(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
        ),
    )
}

async fn short_names(client: &Client, plural: &str) -> Vec<String> {
    let crd = crds(client)
        .get(&format!("{plural}.{GROUP}"))
        .await
        .unwrap_or_else(|e| panic!("CRD {plural}.{GROUP}: {e}"));
    crd.data["spec"]["names"]["shortNames"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The installer's CRDs that are not Established, with their `NamesAccepted` message.
async fn not_established(client: &Client) -> Vec<String> {
    let list = crds(client)
        .list(&ListParams::default().labels("app.kubernetes.io/managed-by=capi-installer"))
        .await
        .expect("CRDs listed");
    list.items
        .iter()
        .filter(|crd| {
            condition(&crd.data["status"], "Established").is_none_or(|c| c.status != "True")
        })
        .map(|crd| {
            let names = condition(&crd.data["status"], "NamesAccepted");
            format!(
                "{} ({names:?})",
                crd.metadata.name.clone().unwrap_or_default()
            )
        })
        .collect()
}

/// Every `InfrastructureProvider` of `names` Available, and the ClusterOperator settled; its status.
async fn all_available(client: &Client, names: &[&str], timeout: Duration) -> serde_json::Value {
    eventually(
        timeout,
        &format!("InfrastructureProviders {names:?} Available, ClusterOperator settled"),
        || async {
            for name in names {
                let obj = infrastructure_providers(client).get(name).await.ok()?;
                provider_condition(&obj, "Available").filter(|c| c.status == "True")?;
            }
            co_status(client).await.filter(settled)
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fixture_provider_on_one_cluster_with_names_that_clash() {
    let env = Env::start(true).await;
    let client = env.admin.clone();
    set_platform(&client, "AWS").await;
    if load_payload(
        &client,
        &[CORE_CM, AWS_CM, GCP_CM, AZURE_CM, VSPHERE_CM, IBMCLOUD_CM],
    )
    .await
    .is_none()
    {
        return;
    }
    load_infrastructure_provider_crd(&client).await;

    // 1. gcp alone beside aws: it holds the three short names.
    request_provider(&client, "gcp").await;
    let _running = Running::as_admin(&env, config());
    all_available(&client, &["gcp"], 5 * MINUTE).await;
    for (short, _, gcp) in CLASHES {
        assert!(
            short_names(&client, gcp).await.contains(&short.to_string()),
            "{gcp} keeps {short}"
        );
    }

    // 2. azure and vsphere asked for. azure comes before gcp in install order, but gcp had the names
    //    first: azure's CRDs go without them, and every CRD of every provider is Established.
    request_provider(&client, "azure").await;
    request_provider(&client, "vsphere").await;
    let status = all_available(&client, &["gcp", "azure", "vsphere"], 5 * MINUTE).await;
    let available = condition(&status, "Available").unwrap();
    for (short, azure, gcp) in CLASHES {
        assert!(
            !short_names(&client, azure)
                .await
                .contains(&short.to_string()),
            "{azure} applied without {short}"
        );
        assert!(
            short_names(&client, gcp).await.contains(&short.to_string()),
            "{gcp} keeps {short}"
        );
        let note = format!(
            "short name {short} of CustomResourceDefinition {azure}.{GROUP} dropped: held by CustomResourceDefinition {gcp}.{GROUP} (infrastructure-gcp, on the cluster)"
        );
        assert!(
            available.message.contains(&note),
            "ClusterOperator Available names the drop ({note}): {available:?}"
        );
        let azure_ip = infrastructure_providers(&client)
            .get("azure")
            .await
            .unwrap();
        let azure_available = provider_condition(&azure_ip, "Available").unwrap();
        assert!(
            azure_available.message.contains(&note),
            "InfrastructureProvider azure names the drop ({note}): {azure_available:?}"
        );
    }
    let stuck = not_established(&client).await;
    assert!(stuck.is_empty(), "CRDs not Established: {stuck:?}");
    for name in ["aws", "gcp", "azure", "vsphere"] {
        assert!(
            available.message.contains(&format!("{name} v")),
            "{name} in {available:?}"
        );
    }

    // 3. A provider with a CRD whose kind gcp's CRD holds: refused before its first write, naming
    //    both; nothing of it written, the others untouched.
    let components = capi_manifests::TransportConfigMap::decode(&ibmcloud_configmap())
        .expect("stand-in decodes")
        .content
        .components;
    let clashing = format!(
        "{components}\n---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: ibmgcpclusters.{GROUP}}}\nspec:\n  group: {GROUP}\n  names: {{kind: GCPCluster, listKind: GCPClusterList, plural: ibmgcpclusters, singular: ibmgcpcluster}}\n  scope: Namespaced\n  versions: [{{name: v1beta1, served: true, storage: true, schema: {{openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}}}}}]\n"
    );
    put_components(&client, IBMCLOUD_CM, &clashing).await;
    let from = env.audit().last().unwrap().stage_timestamp.0;
    request_provider(&client, "ibmcloud").await;
    // One round over six providers: about two minutes at load 25 on the 2 shared cores (debug build).
    let refused = eventually(
        5 * MINUTE,
        "InfrastructureProvider ibmcloud refused",
        || async {
            let obj = infrastructure_providers(&client)
                .get("ibmcloud")
                .await
                .ok()?;
            provider_condition(&obj, "Available")
                .filter(|c| c.reason == "CustomResourceDefinitionNameConflict")
        },
    )
    .await;
    assert!(
        refused.message.contains(&format!(
            "CustomResourceDefinition ibmgcpclusters.{GROUP}: kind GCPCluster is held by CustomResourceDefinition gcpclusters.{GROUP} (infrastructure-gcp"
        )),
        "{refused:?}"
    );
    // Written at the end of the same round as the provider's status (or of the next one).
    eventually(
        5 * MINUTE,
        "the ClusterOperator names the conflict",
        || async {
            let status = co_status(&client).await?;
            ["Available", "Progressing", "Degraded"]
                .iter()
                .filter_map(|t| condition(&status, t))
                .find(|c| c.message.contains(&format!("ibmgcpclusters.{GROUP}")))
        },
    )
    .await;
    // The objects of its bundle and gcp's (statuses, Events and the ClusterOperator aside).
    let bundle = |name: &str| {
        ["ibmpowervs", "ibmgcp", "capibmcloud", "gcp", "capg"]
            .iter()
            .any(|p| name.starts_with(p))
    };
    let written: Vec<String> = installer_writes(&env.audit(), Some(from))
        .iter()
        .filter(|e| {
            e.object_ref.as_ref().is_some_and(|o| {
                !["infrastructureproviders", "events", "clusteroperators"]
                    .contains(&o.resource.as_str())
                    && o.name.as_deref().is_some_and(bundle)
            })
        })
        .map(describe)
        .collect();
    assert!(
        written.is_empty(),
        "written for the refused provider or to gcp's objects: {written:?}"
    );
    // The others still serve, and Cluster API is still Available (a refused extra provider degrades
    // the operator, it does not make it unavailable).
    for name in ["gcp", "azure", "vsphere"] {
        let obj = infrastructure_providers(&client).get(name).await.unwrap();
        let available = provider_condition(&obj, "Available").unwrap();
        assert_eq!(available.status, "True", "{name}: {available:?}");
    }
    let status = co_status(&client).await.unwrap();
    assert_eq!(condition(&status, "Available").unwrap().status, "True");
}
