//! Truthful status and exclusive ownership (issue 8) on the real control plane: the ClusterOperator never
//! claims what is not running, each object belongs to one provider, prune is honest, and what the
//! installer remembers survives a restart. Small synthetic providers and short timeouts keep each test
//! short; each test has its own control plane (the ClusterOperator is a singleton).

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use test_support::*;

const RELEASE_NEXT: &str = "4.22.0-test";
const MINUTE: Duration = Duration::from_secs(60);

fn core() -> Tiny<'static> {
    Tiny::new("cluster-api", "capt")
}

fn aws() -> Tiny<'static> {
    Tiny::new("aws", "capat")
}

async fn start(with_workloads: bool) -> Env {
    let env = Env::start(with_workloads).await;
    set_platform(&env.admin, "AWS").await;
    ensure_namespaces(&env.admin).await;
    env
}

fn installer(env: &Env, config: capi_installer_controller::InstallerConfig) -> Running {
    Running::as_admin(env, config)
}

async fn deployment(client: &Client, name: &str) -> Option<Deployment> {
    let api: Api<Deployment> = Api::namespaced(client.clone(), NS);
    api.get_opt(name).await.unwrap()
}

/// The stored inventory of one source (`objects` and `record`), if readable.
async fn inventory(client: &Client, key: &str) -> Option<Value> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), INSTALLER_NS);
    let cm = api.get_opt("capi-installer-inventory").await.unwrap()?;
    serde_json::from_str(cm.data?.get(key)?).ok()
}

fn inventory_names(inv: &Value) -> Vec<String> {
    inv["objects"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|o| {
            format!(
                "{} {}",
                o["kind"].as_str().unwrap(),
                o["name"].as_str().unwrap()
            )
        })
        .collect()
}

/// The attempt number a condition message ends with: `... (attempt 3)`.
fn attempt(message: &str) -> u32 {
    message
        .rsplit("(attempt ")
        .next()
        .and_then(|rest| rest.split(')').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Items 1 and 5: without core, the infrastructure provider waits; a first install that cannot complete
/// is never Available (whatever the Deployment timeout) and sets no version; once fixed it is Available
/// at the release; an upgrade that does not roll out, picked up by a restarted installer of a new
/// release, leaves the rolled-out version serving (Available stays True) and the version unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn available_and_versions_follow_what_was_rolled_out() {
    let env = start(true).await;
    let client = || installer_client(env.cp.admin_config());
    aws().put(&env.admin).await;
    let running = Running::start(client(), short_config());

    // 5. No core source: aws waits, and nothing of it is written.
    let status = eventually(MINUTE, "aws waiting for core", || async {
        let s = co_status(&env.admin).await?;
        let p = condition(&s, "Progressing")?;
        p.message
            .contains("aws v1.0.0: waiting for cluster-api (core), which has no source")
            .then_some(s)
    })
    .await;
    let available = condition(&status, "Available").unwrap();
    assert_eq!(
        (available.status.as_str(), available.reason.as_str()),
        ("False", "WaitingForProviderConfigMaps")
    );
    assert!(deployment(&env.admin, &aws().deployment()).await.is_none());
    let written: Vec<String> = installer_writes(&env.audit(), None)
        .iter()
        .map(describe)
        .filter(|w| {
            !w.contains("clusteroperators")
                && !w.contains("events")
                && !w.contains("capi-installer-inventory")
        })
        .collect();
    assert!(written.is_empty(), "aws was written: {written:?}");

    // 1. A first install whose Deployment never becomes Available: Available=False naming the provider
    // and the Deployment, before and after the timeout; no version.
    let mut broken = core();
    broken.unschedulable = true;
    broken.put(&env.admin).await;
    fn never_available(s: &Value) -> Option<String> {
        (is(s, "Available", "True") || operator_version(s).is_some())
            .then(|| "Available=True or a version during a first install".to_string())
    }
    let available = until_never(
        &env.admin,
        2 * MINUTE,
        "core's Deployment timeout",
        never_available,
        |s| condition(s, "Available").filter(|a| a.reason == "DeploymentNotAvailable"),
    )
    .await;
    assert!(
        available.message.contains("ConfigMap cluster-api")
            && available
                .message
                .contains(&format!("Deployment {NS}/{}", core().deployment())),
        "{available:?}"
    );
    until_never(&env.admin, MINUTE, "Degraded", never_available, |s| {
        is(s, "Degraded", "True").then_some(())
    })
    .await;
    assert!(
        deployment(&env.admin, &aws().deployment()).await.is_none(),
        "aws waits while core does not serve"
    );

    // Fixed: Available, and only now at the release.
    core().put(&env.admin).await;
    let status = wait_available(&env.admin, 2 * MINUTE).await;
    assert_eq!(operator_version(&status).as_deref(), Some(RELEASE_VERSION));
    assert_eq!(
        condition(&status, "Available").unwrap().message,
        "Cluster API is installed on AWS: cluster-api v1.0.0, aws v1.0.0"
    );
    running.stop().await;

    // An upgrade to a Deployment that never rolls out, found by a new process of a new release: the
    // version rolled out before (recorded with the inventory) keeps serving, the version stays.
    let mut next = core();
    next.version = "v1.1.0";
    next.unschedulable = true;
    next.put(&env.admin).await;
    let config = capi_installer_controller::InstallerConfig {
        release_version: Some(RELEASE_NEXT.into()),
        ..short_config()
    };
    let _running = Running::start(client(), config);
    let degraded = until_never(
        &env.admin,
        2 * MINUTE,
        "the new core version to fail persistently",
        |s| {
            (!is(s, "Available", "True") || operator_version(s).as_deref() != Some(RELEASE_VERSION))
                .then(|| "Available dropped or the version moved during an upgrade".to_string())
        },
        |s| condition(s, "Degraded").filter(|d| d.status == "True"),
    )
    .await;
    // The upgrade is rolled back to the version rolled out before (issue 11), which keeps serving.
    assert_eq!(degraded.reason, "RevisionRolledBack", "{degraded:?}");
    let status = co_status(&env.admin).await.unwrap();
    assert_eq!(
        condition(&status, "Available").unwrap().message,
        "Cluster API is installed on AWS: cluster-api v1.0.0, aws v1.0.0"
    );
    let d = deployment(&env.admin, &core().deployment()).await.unwrap();
    assert!(
        d.status
            .and_then(|s| s.conditions)
            .into_iter()
            .flatten()
            .any(|c| c.type_ == "Available" && c.status == "True"),
        "the old pods still serve"
    );
}

/// Item 2: one provider per object. A provider that declares another's object is refused and the object
/// is left alone (written once, never in turns); a second ConfigMap of one provider is refused naming
/// both; prune never deletes another provider's object; a provider that is no longer selected keeps its
/// objects and is reported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_object_belongs_to_one_provider() {
    let env = start(true).await;
    let client = || installer_client(env.cp.admin_config());
    core().put(&env.admin).await;
    let mut greedy = aws();
    greedy.extra = vec![format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {}\nrules:\n- apiGroups: [test.cluster.x-k8s.io]\n  resources: [capattests]\n  verbs: [get, list, watch, create]",
        core().cluster_role()
    )];
    greedy.put(&env.admin).await;
    let running = Running::start(client(), short_config());

    let refused = wait_degraded(&env.admin, 2 * MINUTE, "aws refused, persistently").await;
    assert_eq!(refused.reason, "OwnershipConflict", "{refused:?}");
    assert!(
        refused.message.contains(&format!(
            "ClusterRole {} belongs to the provider of ConfigMap cluster-api",
            core().cluster_role()
        )),
        "{refused:?}"
    );
    let roles: Api<ClusterRole> = Api::all(env.admin.clone());
    let role = roles.get(&core().cluster_role()).await.unwrap();
    assert_eq!(
        role.labels()
            .get("cluster.x-k8s.io/provider")
            .map(String::as_str),
        Some("cluster-api")
    );
    assert_eq!(
        role.rules.unwrap()[0].resources.as_deref(),
        Some(&["capttests".to_string()][..])
    );
    let role_writes = installer_writes(&env.audit(), None)
        .iter()
        .filter(|e| {
            e.object_ref.as_ref().is_some_and(|o| {
                o.resource == "clusterroles" && o.name.as_deref() == Some(&core().cluster_role())
            })
        })
        .count();
    assert_eq!(
        role_writes, 1,
        "core's ClusterRole written once, never in turns"
    );
    assert!(deployment(&env.admin, &aws().deployment()).await.is_none());

    // Without the conflicting object aws installs.
    aws().put(&env.admin).await;
    wait_available(&env.admin, 2 * MINUTE).await;

    // A second ConfigMap of the same provider: refused, naming both; the first keeps its objects.
    let quiet_from = env.audit().last().unwrap().stage_timestamp.0;
    let mut copy = aws();
    copy.arg = Some("--v=4");
    put_configmap(&env.admin, &copy.configmap("aws-copy")).await;
    let duplicate = wait_degraded(&env.admin, 2 * MINUTE, "the copy refused, persistently").await;
    assert_eq!(duplicate.reason, "DuplicateProvider");
    assert!(
        duplicate.message.contains(
            "ConfigMap aws-copy: provider aws (infrastructure) is already provided by ConfigMap aws"
        ),
        "{duplicate:?}"
    );
    let status = co_status(&env.admin).await.unwrap();
    assert!(is(&status, "Available", "True"), "aws itself serves");
    let deployment_writes: Vec<String> = installer_writes(&env.audit(), Some(quiet_from))
        .iter()
        .map(describe)
        .filter(|w| w.contains("deployments"))
        .collect();
    assert!(deployment_writes.is_empty(), "{deployment_writes:?}");
    let cms: Api<ConfigMap> = Api::namespaced(env.admin.clone(), NS);
    cms.delete("aws-copy", &DeleteParams::default())
        .await
        .unwrap();
    wait_available(&env.admin, MINUTE).await;

    // Prune deletes only the pruning provider's objects: core's next version drops its ClusterRole,
    // which was given to aws in the meantime.
    running.stop().await;
    let relabel =
        json!({"metadata": {"labels": {"cluster.x-k8s.io/provider": "infrastructure-aws"}}});
    roles
        .patch(
            &core().cluster_role(),
            &PatchParams::default(),
            &Patch::Merge(&relabel),
        )
        .await
        .unwrap();
    let mut next = core();
    next.version = "v1.1.0";
    next.cluster_role = false;
    next.put(&env.admin).await;
    let running = Running::start(client(), short_config());
    eventually(
        MINUTE,
        "core's inventory without the ClusterRole",
        || async {
            let inv = inventory(&env.admin, "cluster-api").await?;
            let names = inventory_names(&inv);
            (!names.is_empty()
                && !names.contains(&format!("ClusterRole {}", core().cluster_role())))
            .then_some(())
        },
    )
    .await;
    assert!(
        roles
            .get_opt(&core().cluster_role())
            .await
            .unwrap()
            .is_some()
    );
    let events = operator_events(&env.admin).await;
    assert!(
        events
            .iter()
            .any(|(_, reason, note)| reason == "PruneSkipped"
                && note.contains("belongs to infrastructure-aws")),
        "{events:?}"
    );

    // A provider that is no longer selected (the platform changed) keeps its objects and is reported.
    Tiny::new("gcp", "capgt").put(&env.admin).await;
    set_platform(&env.admin, "GCP").await;
    let status = eventually(2 * MINUTE, "aws reported as not selected", || async {
        let s = co_status(&env.admin).await?;
        let u = condition(&s, "Upgradeable")?;
        (u.reason == "ProvidersNotSelected" && is(&s, "Available", "True")).then_some(s)
    })
    .await;
    let upgradeable = condition(&status, "Upgradeable").unwrap();
    assert_eq!(upgradeable.status, "False");
    assert!(
        upgradeable
            .message
            .contains("ConfigMap aws (provider aws (infrastructure)): 4 objects"),
        "{upgradeable:?}"
    );
    assert!(deployment(&env.admin, &aws().deployment()).await.is_some());
    assert!(
        condition(&status, "Available")
            .unwrap()
            .message
            .contains("gcp v1.0.0")
    );
    drop(running);
}

/// A ValidatingAdmissionPolicy that refuses to delete objects labelled `test.capi-installer/keep`.
async fn refuse_deletes(client: &Client) {
    let docs = [
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "test-keep"},
            "spec": {"failurePolicy": "Fail",
                "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["DELETE"], "resources": ["configmaps"]}]},
                "validations": [{"expression": "false", "message": "kept by the test"}]}}),
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": "test-keep"},
            "spec": {"policyName": "test-keep", "validationActions": ["Deny"],
                "matchResources": {"objectSelector": {"matchLabels": {"test.capi-installer/keep": "true"}}}}}),
    ];
    apply_as_release_payload(client, &docs).await;
    // The policy takes effect once the API server has loaded it: probe with an object of our own.
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let probe: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "test-probe",
        "labels": {"test.capi-installer/keep": "true"}}}))
    .unwrap();
    cms.create(&PostParams::default(), &probe).await.unwrap();
    eventually(MINUTE, "the delete policy to take effect", || async {
        match cms.delete("test-probe", &DeleteParams::default()).await {
            Err(kube::Error::Api(s)) if s.code == 403 || s.code == 422 => Some(()),
            Ok(_) => {
                cms.create(&PostParams::default(), &probe).await.ok();
                None
            }
            Err(_) => None,
        }
    })
    .await;
}

/// Items 3 and 7 (`PruneFailed`): an object a new version dropped that cannot be deleted is reported as
/// `PruneFailed` (not "Pruned"), kept in the inventory, reported by an Event, and deleted once possible.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prune_that_fails_is_reported_and_retried() {
    let env = start(true).await;
    core().put(&env.admin).await;
    let mut with_extra = aws();
    with_extra.extra = vec![format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: capat-extra\n  namespace: {NS}\n  labels: {{test.capi-installer/keep: \"true\"}}\ndata: {{a: b}}"
    )];
    with_extra.put(&env.admin).await;
    let _running = installer(&env, short_config());
    wait_available(&env.admin, 2 * MINUTE).await;

    refuse_deletes(&env.admin).await;
    let mut next = aws();
    next.version = "v1.1.0";
    next.put(&env.admin).await;
    let degraded = wait_degraded(&env.admin, 2 * MINUTE, "PruneFailed, persistently").await;
    assert_eq!(degraded.reason, "PruneFailed", "{degraded:?}");
    assert!(
        degraded
            .message
            .contains(&format!("cannot prune: ConfigMap {NS}/capat-extra")),
        "{degraded:?}"
    );
    let cms: Api<ConfigMap> = Api::namespaced(env.admin.clone(), NS);
    assert!(cms.get_opt("capat-extra").await.unwrap().is_some());
    let inv = inventory(&env.admin, "aws").await.unwrap();
    assert!(inventory_names(&inv).contains(&"ConfigMap capat-extra".to_string()));
    let events = operator_events(&env.admin).await;
    assert!(
        events.iter().any(|(t, reason, note)| t == "Warning"
            && reason == "PruneFailed"
            && note.contains("capat-extra")),
        "{events:?}"
    );
    assert!(
        !events
            .iter()
            .any(|(_, reason, note)| reason == "Pruned" && note.contains("capat-extra")),
        "reported as pruned while it stays: {events:?}"
    );

    // Once it can be deleted, the retry deletes it.
    let bindings = api_for(
        &env.admin,
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicyBinding",
        None,
    )
    .await;
    bindings
        .delete("test-keep", &DeleteParams::default())
        .await
        .unwrap();
    eventually(2 * MINUTE, "the dropped ConfigMap pruned", || async {
        cms.get_opt("capat-extra")
            .await
            .ok()?
            .is_none()
            .then_some(())
    })
    .await;
    let status = wait_available(&env.admin, MINUTE).await;
    assert_eq!(condition(&status, "Degraded").unwrap().reason, "AsExpected");
}

/// Item 7: the failure series survives a restart (Degraded does not drop to False and come back), and
/// every failed attempt is reported by a Warning Event carrying the reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failure_history_survives_a_restart() {
    let env = start(false).await;
    let mut bad = core();
    bad.image = "registry.ci.openshift.org/openshift:does-not-exist";
    bad.put(&env.admin).await;
    let client = || installer_client(env.cp.admin_config());
    let running = Running::start(client(), short_config());
    let degraded = wait_degraded(&env.admin, 2 * MINUTE, "Degraded").await;
    let before = attempt(&degraded.message);
    assert!(before >= 3, "{degraded:?}");
    let events = operator_events(&env.admin).await;
    assert!(
        events
            .iter()
            .any(|(t, reason, _)| t == "Warning" && *reason == degraded.reason),
        "a Warning Event with the failure's reason: {events:?}"
    );
    running.stop().await;

    let _running = Running::start(client(), short_config());
    let after = until_never(
        &env.admin,
        2 * MINUTE,
        "the new process's next attempt",
        |s| (!is(s, "Degraded", "True")).then(|| "Degraded dropped after a restart".to_string()),
        |s| {
            let d = condition(s, "Degraded")?;
            (attempt(&d.message) > before).then_some(d)
        },
    )
    .await;
    assert_eq!(after.reason, "InvalidProviderManifests");
    let record = inventory(&env.admin, "cluster-api").await.unwrap()["record"].clone();
    assert_eq!(record["state"], "Failed", "{record}");
    assert!(record["failure"]["attempts"].as_u64().unwrap() > before as u64);
}

/// Item 8: the inventory is watched and repaired: deleted or corrupted while the installer runs, it is
/// written back at once (prune-retry entries included); unreadable when a new process starts, it is
/// rebuilt from the labelled live objects, blocks nothing and deletes nothing. And conditions that other
/// components write on the ClusterOperator cause no installer write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inventory_is_watched_and_repaired() {
    let env = start(true).await;
    let client = || installer_client(env.cp.admin_config());
    core().put(&env.admin).await;
    aws().put(&env.admin).await;
    let running = Running::start(client(), short_config());
    wait_available(&env.admin, 2 * MINUTE).await;

    // A prune to retry: core's next version drops its CRD while an instance exists.
    let instances = api_for(
        &env.admin,
        "test.cluster.x-k8s.io/v1alpha1",
        "CaptTest",
        Some(NS),
    )
    .await;
    let instance: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "test.cluster.x-k8s.io/v1alpha1", "kind": "CaptTest",
        "metadata": {"name": "keep-me", "namespace": NS}}))
    .unwrap();
    instances
        .create(&PostParams::default(), &instance)
        .await
        .unwrap();
    let mut next = core();
    next.version = "v1.1.0";
    next.crd = false;
    next.put(&env.admin).await;
    let crd_entry = format!("CustomResourceDefinition {}", core().crd_name());
    eventually(MINUTE, "the CRD kept for a retry", || async {
        let events = operator_events(&env.admin).await;
        events
            .iter()
            .any(|(_, r, n)| r == "PruneSkipped" && n.contains("instances of CaptTest"))
            .then_some(())
    })
    .await;
    let stored = inventory(&env.admin, "cluster-api").await.unwrap();
    assert!(inventory_names(&stored).contains(&crd_entry));

    // Deleted: written back, the retry entry included.
    let cms: Api<ConfigMap> = Api::namespaced(env.admin.clone(), INSTALLER_NS);
    // The providers' sources stay in the providers' namespace; the installer's records are in its own.
    let sources: Api<ConfigMap> = Api::namespaced(env.admin.clone(), NS);
    cms.delete("capi-installer-inventory", &DeleteParams::default())
        .await
        .unwrap();
    eventually(MINUTE, "the inventory written back", || async {
        let inv = inventory(&env.admin, "cluster-api").await?;
        inventory_names(&inv).contains(&crd_entry).then_some(())
    })
    .await;

    // Corrupted while running: written back.
    let corrupt = json!({"data": {"aws": "{not json"}});
    cms.patch(
        "capi-installer-inventory",
        &PatchParams::default(),
        &Patch::Merge(&corrupt),
    )
    .await
    .unwrap();
    eventually(MINUTE, "the aws inventory written back", || async {
        inventory(&env.admin, "aws").await.map(|_| ())
    })
    .await;

    // Unreadable when a new process starts: rebuilt from the labelled objects; nothing deleted.
    running.stop().await;
    let uid = deployment(&env.admin, &aws().deployment())
        .await
        .unwrap()
        .metadata
        .uid;
    cms.patch(
        "capi-installer-inventory",
        &PatchParams::default(),
        &Patch::Merge(&corrupt),
    )
    .await
    .unwrap();
    let _running = Running::start(client(), short_config());
    eventually(MINUTE, "the aws inventory rebuilt", || async {
        let inv = inventory(&env.admin, "aws").await?;
        inventory_names(&inv)
            .contains(&format!("Deployment {}", aws().deployment()))
            .then_some(())
    })
    .await;
    wait_available(&env.admin, MINUTE).await;
    let events = operator_events(&env.admin).await;
    assert!(
        events.iter().any(|(t, r, n)| t == "Warning"
            && r == "InventoryRebuilt"
            && n.contains("ConfigMap aws")),
        "{events:?}"
    );
    let now = deployment(&env.admin, &aws().deployment()).await.unwrap();
    assert_eq!(
        now.metadata.uid, uid,
        "the Deployment was neither deleted nor recreated"
    );

    // Another component's condition on the ClusterOperator: the installer leaves it and writes nothing.
    // (First the pending prune ends, so that the window is steady: a retry writes an Event.)
    instances
        .delete("keep-me", &DeleteParams::default())
        .await
        .unwrap();
    // Instances are not watched: the retry comes with the next reconcile (any change, or the resync).
    let touch =
        json!({"metadata": {"annotations": {"test.capi-installer/touched": "instance gone"}}});
    sources
        .patch(
            "cluster-api",
            &PatchParams::default(),
            &Patch::Merge(&touch),
        )
        .await
        .unwrap();
    let crds = api_for(
        &env.admin,
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        None,
    )
    .await;
    eventually(
        2 * MINUTE,
        "the CRD pruned once its instance is gone",
        || async {
            crds.get_opt(&core().crd_name())
                .await
                .ok()?
                .is_none()
                .then_some(())
        },
    )
    .await;
    wait_available(&env.admin, MINUTE).await;
    let foreign = json!({"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
        "metadata": {"name": "cluster-api"},
        "status": {"conditions": [{"type": "InfraClusterControllerAvailable", "status": "True",
            "reason": "AsExpected", "lastTransitionTime": "2026-11-30T00:00:00Z"}]}});
    cluster_operators(&env.admin)
        .patch_status(
            "cluster-api",
            &PatchParams::apply("capi-controllers").force(),
            &Patch::Apply(&foreign),
        )
        .await
        .unwrap();
    let quiet_from = env.audit().last().unwrap().stage_timestamp.0;
    // A change of a watched source makes the installer reconcile (and compare its status) at once.
    let touch = json!({"metadata": {"annotations": {"test.capi-installer/touched": "yes"}}});
    sources
        .patch("aws", &PatchParams::default(), &Patch::Merge(&touch))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(10)).await;
    let writes: Vec<String> = installer_writes(&env.audit(), Some(quiet_from))
        .iter()
        .map(describe)
        .collect();
    assert!(writes.is_empty(), "writes in steady state: {writes:?}");
    let status = co_status(&env.admin).await.unwrap();
    assert!(is(&status, "InfraClusterControllerAvailable", "True"));
    assert!(is(&status, "Available", "True"));
}

/// Issue 8, item 7: nothing is decided before every watch has listed once (on empty stores a healthy
/// cluster would look like one without a platform or providers). A new process, running as its
/// ServiceAccount under the shipped RBAC but not yet allowed to list Infrastructures, finds a
/// ClusterOperator that says Available with a stale message: it writes nothing while that list is
/// refused; once allowed, it corrects the message without ever dropping Available, and the audit log
/// shows the initial list of each watch before its first write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_process_writes_no_status_before_its_watches_have_listed() {
    use futures::StreamExt;
    use kube::runtime::{WatchStreamExt, watcher};

    let env = start(true).await;
    core().put(&env.admin).await;
    aws().put(&env.admin).await;
    let running = installer(&env, short_config());
    let status = wait_available(&env.admin, 2 * MINUTE).await;
    let installed = condition(&status, "Available").unwrap().message;
    running.stop().await;

    // The status as the previous process left it, but for a stale Available message.
    let mut conditions = status["conditions"].clone();
    for c in conditions.as_array_mut().unwrap() {
        if c["type"] == "Available" {
            c["message"] = json!("stale");
        }
    }
    cluster_operators(&env.admin)
        .patch_status(
            "cluster-api",
            &PatchParams::default(),
            &Patch::Merge(&json!({"status": {"conditions": conditions}})),
        )
        .await
        .unwrap();

    // The shipped RBAC without the Infrastructure rule: that watch cannot list yet.
    let mut rbac = installer_rbac();
    for doc in &mut rbac {
        if let Some(rules) = doc.get_mut("rules").and_then(Value::as_array_mut) {
            rules.retain(|r| !r["resources"].to_string().contains("\"infrastructures\""));
        }
    }
    apply_as_release_payload(&env.admin, &rbac).await;
    let sa_config = env
        .service_account_config(INSTALLER_NS, "capi-installer")
        .await;

    // Every version of the status from now on (a watch sees each write, not just the latest).
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<Value>::new()));
    let watch = {
        let seen = seen.clone();
        let config = watcher::Config::default().fields("metadata.name=cluster-api");
        let stream = watcher(cluster_operators(&env.admin), config).applied_objects();
        tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            while let Some(Ok(co)) = stream.next().await {
                seen.lock().unwrap().push(co.data["status"].clone());
            }
        })
    };
    let message = |s: &Value| condition(s, "Available").map(|c| c.message);
    let saw = |text: &str| {
        seen.lock()
            .unwrap()
            .iter()
            .any(|s| message(s).as_deref() == Some(text))
    };
    eventually(MINUTE, "the watch to see the stale status", || async {
        saw("stale").then_some(())
    })
    .await;

    let mark = audit_mark(&env);
    let ua = capi_installer_controller::user_agent();
    let _running = Running::as_installer(sa_config, short_config());
    let refused_lists = |events: &[control_plane::AuditEvent]| {
        events
            .iter()
            .filter(|e| e.verb == "list" && e.response_code == Some(403))
            .filter(|e| e.request_uri.contains("/infrastructures"))
            .count()
    };
    // Two refusals: the watch has retried, well after a reconcile would have started without the wait.
    let early = eventually(MINUTE, "the Infrastructure list refused twice", || async {
        let events = requests_of(&env.audit(), &ua, Some(mark));
        (refused_lists(&events) >= 2).then_some(events)
    })
    .await;
    let written: Vec<String> = writes(&early).iter().map(describe).collect();
    assert!(
        written.is_empty(),
        "written before the watches listed: {written:?}"
    );

    let reader = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "test-infrastructure-reader"},
        "rules": [{"apiGroups": ["config.openshift.io"], "resources": ["infrastructures"],
            "verbs": ["get", "list", "watch"]}]});
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "test-infrastructure-reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
            "name": "test-infrastructure-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "capi-installer", "namespace": INSTALLER_NS}]});
    apply_as_release_payload(&env.admin, &[reader, binding]).await;
    eventually(2 * MINUTE, "the Available message corrected", || async {
        saw(&installed).then_some(())
    })
    .await;
    watch.abort();

    let seen = seen.lock().unwrap().clone();
    for s in &seen {
        assert!(
            is(s, "Available", "True") && operator_version(s).as_deref() == Some(RELEASE_VERSION),
            "a status inconsistent with the installed providers: {s}\nall: {seen:#?}"
        );
    }
    let requests = requests_of(&env.audit(), &ua, Some(mark));
    let first_write = requests
        .iter()
        .position(|e| e.is_write())
        .expect("the stale message is corrected by a write");
    // The initial list of each watch, completed before the first write (404: a kind not served, which
    // the installer then knows; 403 is no list).
    let listed: Vec<&str> = requests[..first_write]
        .iter()
        .filter(|e| e.verb == "list" && matches!(e.response_code, Some(200 | 404)))
        .map(|e| e.request_uri.as_str())
        .collect();
    for (resource, selector) in [
        ("/infrastructures", ""),
        ("/configmaps", "labelSelector="),
        ("/configmaps", "capi-installer-inventory"),
        ("/infrastructureproviders", ""),
        ("/clusterapis", ""),
    ] {
        assert!(
            listed.iter().any(|uri| {
                uri.split('?').next().unwrap().ends_with(resource) && uri.contains(selector)
            }),
            "no list of {resource} ({selector}) before the first write, {}: {listed:#?}",
            describe(&requests[first_write])
        );
    }
    assert!(
        listed.iter().filter(|u| u.contains("/configmaps")).count() >= 3,
        "three ConfigMap watches (transport, inventory, revisions): {listed:#?}"
    );
}

/// Issue 16: a provider whose pod is lost after it was rolled out (deleted while no node takes its
/// replacement) is reported at once, Available=False naming its Deployment, without claiming a rollout
/// (Progressing stays False) or moving the version; Degraded once that lasts the Deployment timeout;
/// meanwhile the installer neither writes anything but the ClusterOperator's status nor polls; back to
/// Available when the pod runs again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_that_loses_its_pod_is_reported_until_it_is_back() {
    let env = start(true).await;
    core().put(&env.admin).await;
    aws().put(&env.admin).await;
    let _running = installer(&env, short_config());
    wait_available(&env.admin, 2 * MINUTE).await;
    let mark = audit_mark(&env);

    cordon(&env.admin, true).await;
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(env.admin.clone(), NS);
    let selector = format!("app={}", aws().prefix);
    pods.delete_collection(
        &DeleteParams::default().grace_period(0),
        &kube::api::ListParams::default().labels(&selector),
    )
    .await
    .unwrap();
    let deployment = format!("Deployment {NS}/{}", aws().deployment());
    let status = eventually(MINUTE, "Available=False for the lost pod", || async {
        let s = co_status(&env.admin).await?;
        (!is(&s, "Available", "True")).then_some(s)
    })
    .await;
    let available = condition(&status, "Available").unwrap();
    assert_eq!(available.reason, "ProviderUnavailable", "{available:?}");
    assert!(
        available.message.starts_with(&format!(
            "aws v1.0.0: {deployment} is not Available: available replicas 0 of 1; Available=False: MinimumReplicasUnavailable"
        )),
        "{available:?}"
    );
    assert!(is(&status, "Progressing", "False"), "{status:#}");
    assert_eq!(operator_version(&status).as_deref(), Some(RELEASE_VERSION));

    let degraded = wait_degraded(&env.admin, MINUTE, "Degraded for the lasting loss").await;
    assert_eq!(degraded.reason, "ProviderUnavailable", "{degraded:?}");
    assert!(
        degraded
            .message
            .contains(&format!("{deployment} has not been Available for 5s")),
        "{degraded:?}"
    );
    // Nothing changes while the pod stays Pending, and nothing is reconciled: no poll (every
    // reconcile reads the ClusterOperator), no write. (The InfrastructureProvider watch retries its
    // list meanwhile, for want of its CRD, without waking the installer.)
    let reconciles: Vec<String> = installer_requests_over(&env, Duration::from_secs(15))
        .await
        .iter()
        .filter(|e| {
            e.is_write()
                || e.object_ref
                    .as_ref()
                    .is_some_and(|o| o.resource == "clusteroperators")
        })
        .map(describe)
        .collect();
    assert!(
        reconciles.is_empty(),
        "reconciled while nothing changed: {reconciles:#?}"
    );

    cordon(&env.admin, false).await;
    wait_condition(&env.admin, "Available", "True", "AsExpected", MINUTE).await;
    let status = wait_available(&env.admin, MINUTE).await;
    assert_eq!(operator_version(&status).as_deref(), Some(RELEASE_VERSION));
    // Reading availability is not drift: from the loss to the recovery only the ClusterOperator's
    // status was written.
    let writes: Vec<String> = installer_writes(&env.audit(), Some(mark))
        .iter()
        .map(describe)
        .filter(|w| !w.contains("clusteroperators/status /cluster-api"))
        .collect();
    assert!(writes.is_empty(), "written besides the status: {writes:#?}");
}
