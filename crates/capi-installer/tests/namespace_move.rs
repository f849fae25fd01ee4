//! The upgrade from a release whose installer ran in the providers' namespace to this one, whose
//! installer has a namespace of its own (issue 17 item 3; docs/admin/operating.md, "Upgrading from a
//! release without the installer's namespace"). The earlier release installs core and aws, upgrades
//! aws once (two revisions, one object pruned) and is killed, its Lease still held; the release payload
//! is applied as the cluster-version operator applies it on an upgrade (the earlier layout's objects
//! deleted first); the new installer, as its own ServiceAccount under the shipped RBAC, waits out the
//! earlier leader's term, carries the inventory and both revision logs over unchanged (one of them
//! copied already, as an interrupted attempt leaves it), deletes the old records and the old Lease, and
//! converges without writing a single provider object.

use std::collections::BTreeMap;
use std::time::Duration;

use capi_installer_controller::InstallerConfig;
use capi_installer_controller::revision::{LABEL as REVISIONS_LABEL, Stored};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, ListParams, ObjectMeta, PostParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use test_support::*;

const INVENTORY: &str = "capi-installer-inventory";
const LEASE: &str = "capi-installer-leader";
/// The earlier leader's lease duration: the tests' timings (as [`mover`] uses them).
const OLD_LEASE_SECONDS: i32 = 15;

/// The earlier release's settings: everything in the providers' namespace.
fn earlier_release() -> InstallerConfig {
    InstallerConfig {
        installer_namespace: NS.into(),
        ..config()
    }
}

/// Each source's inventory entry, by key, as stored.
async fn inventory(client: &Client, ns: &str) -> Option<BTreeMap<String, Value>> {
    let cm = Api::<ConfigMap>::namespaced(client.clone(), ns)
        .get_opt(INVENTORY)
        .await
        .unwrap()?;
    let entries = cm
        .data?
        .into_iter()
        .map(|(k, v)| {
            (
                k,
                serde_json::from_str(&v).expect("inventory entry is JSON"),
            )
        })
        .collect();
    Some(entries)
}

/// The objects of each source's inventory (what prune works from).
fn objects(inventory: &BTreeMap<String, Value>) -> BTreeMap<String, Value> {
    inventory
        .iter()
        .map(|(k, v)| (k.clone(), v["objects"].clone()))
        .collect()
}

/// Every revisions ConfigMap of `ns`, decoded, by name.
async fn revisions(client: &Client, ns: &str) -> BTreeMap<String, Stored> {
    Api::<ConfigMap>::namespaced(client.clone(), ns)
        .list(&ListParams::default().labels(REVISIONS_LABEL))
        .await
        .unwrap()
        .items
        .iter()
        .map(|cm| {
            (
                cm.name_any(),
                Stored::from_configmap(cm).expect("readable revisions"),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_moves_the_installer_into_its_namespace_with_its_records() {
    require_fixture!("transport-configmaps");
    let env = Env::on_aws(&[CORE_CM, AWS_CM]).await;
    let admin = env.admin.clone();

    // The earlier release: its objects in the providers' namespace, core and aws installed, aws
    // upgraded once.
    let old_account = json!({"apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": "capi-installer", "namespace": NS}});
    let old_deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "capi-installer", "namespace": NS},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"k8s-app": "capi-installer"}},
            "template": {"metadata": {"labels": {"k8s-app": "capi-installer"}},
                "spec": {"serviceAccountName": "capi-installer",
                    "containers": [{"name": "installer",
                        "image": "registry.ci.openshift.org/openshift:capi-installer"}]}}}});
    apply_as_release_payload(&admin, &[old_account, old_deployment]).await;
    let earlier = Running::as_admin(&env, earlier_release());
    // Generous: a cold install took over 4 minutes at load 32 on the shared 2 cores.
    wait_available(&admin, Duration::from_secs(600)).await;
    let upgrade = aws_upgrade(false);
    put_components(&admin, AWS_CM, &upgrade.components).await;
    let before = eventually(
        Duration::from_secs(600),
        "aws's upgrade rolled out (revision 2 current)",
        || async {
            let revisions = revisions(&admin, NS).await;
            let aws = revisions.get("capi-installer-revisions-aws")?;
            (aws.log.current == Some(2) && revisions.len() == 2).then_some(revisions)
        },
    )
    .await;
    // Settled: nothing left to prune and every provider's record says Installed — the upgrade's
    // rollout recorded (the prune may be recorded while the new Deployment still rolls out).
    let old_inventory = eventually(
        Duration::from_secs(300),
        "the prune and the rollout recorded",
        || async {
            let inventory = inventory(&admin, NS).await?;
            let text = serde_json::to_string(&inventory).unwrap();
            let installed = inventory
                .values()
                .filter_map(|entry| entry.get("record"))
                .all(|record| record["state"] == "Installed");
            (installed && !text.contains(&upgrade.dropped_rolebinding)).then_some(inventory)
        },
    )
    .await;
    assert_eq!(revisions(&admin, NS).await, before);

    // Killed while leading: its Lease stays held until its term runs out.
    earlier.kill();
    let renewed = k8s_openapi::jiff::Timestamp::now();
    let lease = Lease {
        metadata: ObjectMeta {
            name: Some(LEASE.into()),
            namespace: Some(NS.into()),
            ..Default::default()
        },
        spec: Some(k8s_openapi::api::coordination::v1::LeaseSpec {
            holder_identity: Some("capi-installer-earlier-release".into()),
            lease_duration_seconds: Some(OLD_LEASE_SECONDS),
            acquire_time: Some(MicroTime(renewed)),
            renew_time: Some(MicroTime(renewed)),
            ..Default::default()
        }),
    };
    Api::<Lease>::namespaced(admin.clone(), NS)
        .create(&PostParams::default(), &lease)
        .await
        .unwrap();
    // An attempt of the move interrupted after its first copy.
    let aws_revisions = Api::<ConfigMap>::namespaced(admin.clone(), NS)
        .get("capi-installer-revisions-aws")
        .await
        .unwrap();
    let partial = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "capi-installer-revisions-aws", "namespace": INSTALLER_NS,
            "labels": {REVISIONS_LABEL: "true"}},
        "data": aws_revisions.data, "binaryData": aws_revisions.binary_data});
    apply(
        &admin,
        &ar("", "v1", "ConfigMap", "configmaps"),
        &partial,
        "capi-installer",
    )
    .await;

    // The new release's payload, as the cluster-version operator applies it on an upgrade.
    apply_release_manifests(&admin, "0000_30_capi-installer_0").await;
    for gone in [
        Api::<Deployment>::namespaced(admin.clone(), NS)
            .get_opt("capi-installer")
            .await
            .unwrap()
            .map(|d| d.name_any()),
        Api::<ServiceAccount>::namespaced(admin.clone(), NS)
            .get_opt("capi-installer")
            .await
            .unwrap()
            .map(|d| d.name_any()),
    ] {
        assert_eq!(gone, None, "the earlier layout's object is removed");
    }

    // The new installer, as its own ServiceAccount.
    let account = env
        .service_account_config(INSTALLER_NS, "capi-installer")
        .await;
    let user = format!("system:serviceaccount:{INSTALLER_NS}:capi-installer");
    let _installer = Running::as_installer(account, config());
    let after = eventually(
        Duration::from_secs(300),
        "the records carried over and the old ones deleted",
        || async {
            let old_gone = inventory(&admin, NS).await.is_none()
                && revisions(&admin, NS).await.is_empty()
                && Api::<Lease>::namespaced(admin.clone(), NS)
                    .get_opt(LEASE)
                    .await
                    .unwrap()
                    .is_none();
            let moved = inventory(&admin, INSTALLER_NS).await?;
            old_gone.then_some(moved)
        },
    )
    .await;
    wait_available(&admin, Duration::from_secs(300)).await;
    // The new installer's own status (naming its namespace), then a steady state without a write.
    eventually(
        Duration::from_secs(300),
        "the installer's namespace in relatedObjects",
        || async {
            let status = co_status(&admin).await?;
            let related = status["relatedObjects"].as_array()?;
            related
                .iter()
                .any(|r| r["resource"] == "namespaces" && r["name"] == INSTALLER_NS)
                .then_some(())
        },
    )
    .await;
    let steady = installer_writes_over(&env, Duration::from_secs(20)).await;
    assert!(
        steady.is_empty(),
        "written in steady state after the move: {:?}",
        steady.iter().map(describe).collect::<Vec<_>>()
    );

    // Nothing lost: the same objects per source, the same revision logs and contents.
    assert_eq!(objects(&after), objects(&old_inventory));
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        old_inventory.keys().collect::<Vec<_>>()
    );
    for (key, entry) in &old_inventory {
        assert_eq!(
            after[key]["record"], entry["record"],
            "{key}: the provider's record (rolled-out version, failure series)"
        );
    }
    assert_eq!(revisions(&admin, INSTALLER_NS).await, before);

    // Nothing of the earlier records touched before the earlier leader's term was over.
    let events = env.audit();
    let mine: Vec<_> = events
        .iter()
        .filter(|e| e.user.username == user && e.is_write())
        .collect();
    let term_over = renewed + Duration::from_secs(OLD_LEASE_SECONDS as u64);
    for e in &mine {
        let o = e.object_ref.clone().unwrap_or_default();
        if o.resource == "configmaps" {
            assert!(
                e.stage_timestamp.0 >= term_over,
                "{} at {} before the earlier leader's term ended at {term_over}",
                describe(e),
                e.stage_timestamp.0
            );
        }
    }
    // And no provider object written: no re-create, no re-apply, no prune. Its writes are its records,
    // the old Lease, its status, the revision it records in the `ClusterAPI/cluster` the new payload
    // created, and Events.
    let provider_writes: Vec<String> = mine
        .iter()
        .filter(|e| {
            let o = e.object_ref.clone().unwrap_or_default();
            let record = o.resource == "configmaps"
                && o.name
                    .as_deref()
                    .is_some_and(|n| n.starts_with("capi-installer-"));
            let revision =
                o.resource == "clusterapis" && o.subresource.as_deref() == Some("status");
            !(record
                || revision
                || o.resource == "leases"
                || o.resource == "events"
                || o.resource == "clusteroperators")
        })
        .map(|e| describe(e))
        .collect();
    assert!(
        provider_writes.is_empty(),
        "written by the moved installer: {provider_writes:?}"
    );
}
