//! Replacing the reference in a running cluster (issue 18): a cluster populated as OpenShift's
//! cluster-capi-operator leaves it — by its first generation (transport ConfigMaps, client-side
//! creates as `cluster-capi-operator`) or its current one (image-based profiles, boxcutter's
//! server-side apply as `capi-operator.openshift.io/InstallerController`, with its labels and
//! annotation) — is refused as it is, naming the reference and `--take-over-reference`; with that flag
//! it is taken over in place: the same objects (UIDs), none deleted, no Deployment rolled out (no
//! ReplicaSet created, every Deployment spec unchanged), the reference's marks and field managers gone, the
//! aggregated ClusterRole's rules kept (its aggregation controller never counts as an owner).

use std::collections::BTreeMap;
use std::time::Duration;

use capi_installer_controller::InstallerConfig;
use capi_installer_controller::config::ProfilesConfig;
use kube::Client;
use kube::api::DynamicObject;
use serde_json::Value;
use test_support::*;

const CORE_CM: &str = "0000_30_cluster-api_04_cm.core-cluster-api.yaml";
const AWS_CM: &str = "0000_30_cluster-api_04_cm.infrastructure-aws.yaml";

/// What identifies an object on the cluster: its UID and, for a Deployment, its spec. Not its
/// generation: Kubernetes counts a change of a Deployment's annotations as a new generation (they are
/// copied onto its ReplicaSet), and taking over replaces the reference's annotations; a rollout is a
/// change of the spec's pod template, and a new ReplicaSet (the audit log).
#[derive(Debug, PartialEq)]
struct Seen {
    uid: String,
    spec: Value,
}

/// The JSON pointers at which `a` and `b` differ.
fn differences(a: &Value, b: &Value, at: String, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for key in x.keys().chain(y.keys().filter(|k| !x.contains_key(*k))) {
                let null = Value::Null;
                let (l, r) = (x.get(key).unwrap_or(&null), y.get(key).unwrap_or(&null));
                differences(l, r, format!("{at}/{key}"), out);
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (l, r)) in x.iter().zip(y).enumerate() {
                differences(l, r, format!("{at}/{i}"), out);
            }
        }
        _ if a != b => out.push(format!("{at}: {a} -> {b}")),
        _ => {}
    }
}

async fn live(client: &Client, object: &Value) -> DynamicObject {
    let api = api_for(
        client,
        object["apiVersion"].as_str().unwrap(),
        object["kind"].as_str().unwrap(),
        object["metadata"]["namespace"].as_str(),
    )
    .await;
    api.get(object["metadata"]["name"].as_str().unwrap())
        .await
        .unwrap_or_else(|e| panic!("{} {}: {e}", object["kind"], object["metadata"]["name"]))
}

fn id(object: &Value) -> String {
    format!(
        "{} {}",
        object["kind"].as_str().unwrap(),
        object["metadata"]["name"].as_str().unwrap()
    )
}

async fn snapshot(client: &Client, objects: &[Value]) -> BTreeMap<String, Seen> {
    let mut seen = BTreeMap::new();
    for object in objects {
        let o = live(client, object).await;
        seen.insert(
            id(object),
            Seen {
                uid: o.metadata.uid.clone().unwrap(),
                spec: match object["kind"] == "Deployment" {
                    true => o.data["spec"].clone(),
                    false => Value::Null,
                },
            },
        );
    }
    seen
}

/// Waits until every Deployment among `objects` is Available (KWOK runs their pods): the cluster works
/// as the reference left it.
async fn deployments_available(client: &Client, objects: &[Value]) {
    for d in objects.iter().filter(|o| o["kind"] == "Deployment") {
        eventually(
            Duration::from_secs(120),
            &format!("{} Available", id(d)),
            || async {
                let o = live(client, d).await;
                o.data["status"]["conditions"]
                    .as_array()?
                    .iter()
                    .any(|c| c["type"] == "Available" && c["status"] == "True")
                    .then_some(())
            },
        )
        .await;
    }
}

/// The installer refuses the reference's objects without `--take-over-reference`, and says so.
async fn refused_without_the_flag(env: &Env, config: InstallerConfig, objects: &[Value]) {
    let mark = audit_mark(env);
    let installer = Running::as_admin(env, config);
    let available = eventually(
        Duration::from_secs(120),
        "Available=False naming the ownership conflict",
        || async {
            let status = co_status(&env.admin).await?;
            condition(&status, "Available").filter(|c| c.reason == "OwnershipConflict")
        },
    )
    .await;
    assert_eq!(available.status, "False");
    for hint in ["cluster-capi-operator", "--take-over-reference"] {
        assert!(
            available.message.contains(hint),
            "{hint} not in {}",
            available.message
        );
    }
    installer.stop().await;
    let names: Vec<String> = objects
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    let touched: Vec<String> = installer_writes(&env.audit(), Some(mark))
        .iter()
        .filter(|e| {
            e.object_ref
                .as_ref()
                .and_then(|o| o.name.as_ref())
                .is_some_and(|n| names.contains(n))
        })
        .map(describe)
        .collect();
    assert!(touched.is_empty(), "refused, yet written: {touched:?}");
}

/// After the take-over: same objects, nothing deleted, no rollout, marks and managers gone.
async fn assert_taken_over_in_place(
    env: &Env,
    objects: &[Value],
    before: &BTreeMap<String, Seen>,
    since: Timestamp,
    reference_managers: &[&str],
) {
    let after = snapshot(&env.admin, objects).await;
    let mut changed = Vec::new();
    for (id, seen) in &after {
        if let Some(was) = before.get(id) {
            differences(&was.spec, &seen.spec, id.clone(), &mut changed);
        }
    }
    assert!(changed.is_empty(), "specs changed: {changed:#?}");
    assert_eq!(&after, before, "same objects");
    let events = env.audit();
    let after: Vec<_> = events
        .iter()
        .filter(|e| e.stage_timestamp.0 > since && e.is_write())
        .collect();
    let deletes: Vec<String> = after
        .iter()
        .filter(|e| e.verb == "delete" || e.verb == "deletecollection")
        .map(|e| describe(e))
        .collect();
    assert!(deletes.is_empty(), "deleted: {deletes:?}");
    let rollouts: Vec<String> = after
        .iter()
        .filter(|e| {
            e.verb == "create"
                && e.object_ref
                    .as_ref()
                    .is_some_and(|o| o.resource == "replicasets")
        })
        .map(|e| describe(e))
        .collect();
    assert!(rollouts.is_empty(), "rolled out: {rollouts:?}");
    for object in objects {
        let o = live(&env.admin, object).await;
        let labels = o.metadata.labels.clone().unwrap_or_default();
        let annotations = o.metadata.annotations.clone().unwrap_or_default();
        assert_eq!(
            labels
                .get("app.kubernetes.io/managed-by")
                .map(String::as_str),
            Some("capi-installer"),
            "{}",
            id(object)
        );
        for mark in [
            "capi-operator.openshift.io/managed-by",
            "capi-operator.openshift.io/revision",
            "operator.openshift.io/pull-spec",
        ] {
            assert!(
                !labels.contains_key(mark) && !annotations.contains_key(mark),
                "{} keeps the reference's {mark}",
                id(object)
            );
        }
        let managers: Vec<&str> = o
            .metadata
            .managed_fields
            .iter()
            .flatten()
            .filter(|m| m.subresource.as_deref().unwrap_or("").is_empty())
            .filter_map(|m| m.manager.as_deref())
            .collect();
        for m in reference_managers {
            assert!(
                !managers.contains(m),
                "{} is still managed by {m}",
                id(object)
            );
        }
        if object["kind"] == "ClusterRole" && object.get("aggregationRule").is_some() {
            assert!(
                o.data["rules"].as_array().is_some_and(|r| !r.is_empty()),
                "{}: the aggregated rules stay",
                id(object)
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_generation_is_taken_over_in_place() {
    require_fixture!("transport-configmaps");
    let env = Env::on_aws(&[CORE_CM, AWS_CM]).await;
    let objects: Vec<Value> = [CORE_CM, AWS_CM]
        .iter()
        .flat_map(|cm| rendered_configmap(cm))
        .collect();
    install_as_first_generation(&env.admin, &objects).await;
    deployments_available(&env.admin, &objects).await;
    let before = snapshot(&env.admin, &objects).await;

    let mut config = config();
    config.substitutions = reference_substitutions();
    refused_without_the_flag(&env, config.clone(), &objects).await;

    let since = audit_mark(&env);
    config.retired_managers = capi_installer_controller::reference::FIELD_MANAGERS
        .map(String::from)
        .to_vec();
    let _installer = Running::as_admin(&env, config);
    let status = wait_available(&env.admin, Duration::from_secs(240)).await;
    assert_eq!(
        condition(&status, "Available").unwrap().reason,
        "AsExpected"
    );
    assert_taken_over_in_place(&env, &objects, &before, since, &[FIRST_GENERATION_MANAGER]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_current_generation_is_taken_over_in_place() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(dir) = profiles_as_images(tmp.path(), &["core", "aws"]) else {
        return;
    };
    let env = Env::start(true).await;
    ensure_namespaces(&env.admin).await;
    set_platform(&env.admin, "AWS").await;
    let mut objects = Vec::new();
    for (revision, provider) in ["cluster-api", "aws"].iter().enumerate() {
        let (component, rendered) = rendered_profile(&dir, provider);
        install_as_current_generation(&env.admin, &component, revision as u32 + 1, &rendered).await;
        objects.extend(rendered);
    }
    deployments_available(&env.admin, &objects).await;
    let before = snapshot(&env.admin, &objects).await;

    let mut config = config();
    config.substitutions = reference_substitutions();
    config.profiles = Some(ProfilesConfig {
        dir,
        ..Default::default()
    });
    let since = audit_mark(&env);
    config.retired_managers = capi_installer_controller::reference::FIELD_MANAGERS
        .map(String::from)
        .to_vec();
    let _installer = Running::as_admin(&env, config);
    let status = wait_available(&env.admin, Duration::from_secs(240)).await;
    assert_eq!(
        condition(&status, "Available").unwrap().reason,
        "AsExpected"
    );
    assert_taken_over_in_place(
        &env,
        &objects,
        &before,
        since,
        &[CURRENT_GENERATION_MANAGER],
    )
    .await;
}
