//! Issue 11 on the real control plane, with small synthetic providers and short timeouts: CRDs that
//! `ClusterAPI/cluster` leaves to someone else are never written, adopted or pruned (and a provider
//! whose unmanaged CRD does not fit is reported, not half-installed); an upgrade whose Deployment never
//! becomes Available is rolled back to the last good revision, and `capi-installer rollback` does it
//! by hand. One control plane for both: the rollbacks run on the provider whose CRD is unmanaged.

use std::process::Command;
use std::time::Duration;

use capi_installer_controller::revision::{RevisionLog, RevisionOutcome, Stored};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use test_support::*;

const MINUTE: Duration = Duration::from_secs(60);
const BIN: &str = env!("CARGO_BIN_EXE_capi-installer");

fn core() -> Tiny<'static> {
    Tiny::new("cluster-api", "capt")
}

fn aws(version: &'static str, arg: &'static str) -> Tiny<'static> {
    Tiny {
        version,
        arg: Some(arg),
        ..Tiny::new("aws", "capat")
    }
}

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

/// The CRD `aws()` ships, as its other owner writes it: `served` for v1alpha1, plus a version of its own.
fn foreign_crd(v1alpha1_served: bool) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "capattests.test.cluster.x-k8s.io", "labels": {"owner": "someone-else"}},
        "spec": {"group": "test.cluster.x-k8s.io", "scope": "Namespaced",
            "names": {"kind": "CapatTest", "listKind": "CapatTestList", "plural": "capattests", "singular": "capattest"},
            "versions": [
                {"name": "v1alpha1", "served": v1alpha1_served, "storage": false,
                 "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
                {"name": "v1alpha2", "served": true, "storage": true,
                 "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    })
}

/// Applies the CRD as `cluster-version-operator`, a field manager the installer would adopt from.
async fn put_foreign_crd(client: &Client, v1alpha1_served: bool) {
    crds(client)
        .patch(
            "capattests.test.cluster.x-k8s.io",
            &PatchParams::apply("cluster-version-operator").force(),
            &Patch::Apply(foreign_crd(v1alpha1_served)),
        )
        .await
        .expect("foreign CRD applies");
}

async fn set_unmanaged(client: &Client, names: &[&str]) {
    let api: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ar(
            "operator.openshift.io",
            "v1alpha1",
            "ClusterAPI",
            "clusterapis",
        ),
    );
    let obj = json!({"apiVersion": "operator.openshift.io/v1alpha1", "kind": "ClusterAPI",
        "metadata": {"name": "cluster"}, "spec": {"unmanagedCustomResourceDefinitions": names}});
    api.patch(
        "cluster",
        &PatchParams::apply("cluster-version-operator").force(),
        &Patch::Apply(obj),
    )
    .await
    .expect("ClusterAPI applies");
}

/// Whether the installer ever wrote (or adopted) the CRD: its label or its field manager.
fn touched_by_installer(crd: &DynamicObject) -> bool {
    crd.labels().contains_key("app.kubernetes.io/managed-by")
        || crd
            .managed_fields()
            .iter()
            .any(|m| m.manager.as_deref() == Some("capi-installer"))
}

async fn deployment_args(client: &Client, name: &str) -> Option<(Vec<String>, bool)> {
    let api: Api<Deployment> = Api::namespaced(client.clone(), NS);
    let d = api.get_opt(name).await.unwrap()?;
    let spec = d.spec?.template.spec?;
    let args = spec.containers[0].args.clone().unwrap_or_default();
    Some((args, spec.node_selector.is_some()))
}

async fn revisions(client: &Client) -> Stored {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), INSTALLER_NS);
    let cm = api
        .get("capi-installer-revisions-aws")
        .await
        .expect("the revisions of aws are recorded");
    Stored::from_configmap(&cm).expect("readable revisions")
}

/// Waits until aws's current revision (the last fully rolled out) has `version`.
async fn wait_current(client: &Client, version: &str) -> RevisionLog {
    eventually(MINUTE, &format!("aws {version} rolled out"), || async {
        let log = revisions(client).await.log;
        let current = log.get(log.current?)?.version.clone();
        (current.as_deref() == Some(version)).then_some(log)
    })
    .await
}

fn cli(env: &Env, args: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .args(args)
        .arg("--kubeconfig")
        .arg(env.cp.kubeconfig_path())
        .output()
        .expect("capi-installer runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unmanaged_crds_are_left_alone_and_failed_upgrades_roll_back() {
    let env = Env::start(true).await;
    set_platform(&env.admin, "AWS").await;
    ensure_namespaces(&env.admin).await;
    let client = env.admin.clone();
    put_foreign_crd(&client, true).await;
    set_unmanaged(&client, &["capattests.test.cluster.x-k8s.io"]).await;
    core().put(&client).await;
    aws("v1.0.0", "--v1").put(&client).await;
    let config = capi_installer_controller::InstallerConfig {
        deployment_timeout: Duration::from_secs(20),
        ..short_config()
    };
    let _running = Running::as_admin(&env, config);
    wait_available(&client, 3 * MINUTE).await;

    unmanaged_crds(&env).await;
    automatic_rollback(&env).await;
    rollback_by_hand(&env).await;
}

/// Install, drift (the owner changes its CRD), an incompatible change (reported, nothing applied),
/// and prune (a version without the CRD; a CRD that becomes unmanaged) never touch an unmanaged CRD.
async fn unmanaged_crds(env: &Env) {
    let client = &env.admin;
    let crd = crds(client)
        .get("capattests.test.cluster.x-k8s.io")
        .await
        .unwrap();
    assert!(!touched_by_installer(&crd), "installed: {crd:?}");
    let (args, _) = deployment_args(client, "capat-controller-manager")
        .await
        .unwrap();
    assert!(args.contains(&"--v1".to_string()), "{args:?}");

    // Its owner stops serving the version the provider needs: the next version is refused whole.
    put_foreign_crd(client, false).await;
    aws("v2.0.0", "--v2").put(client).await;
    let message = eventually(MINUTE, "the unmanaged CRD reported", || async {
        let s = co_status(client).await?;
        ["Progressing", "Degraded"]
            .into_iter()
            .filter_map(|t| condition(&s, t))
            .find(|c| c.message.contains("is unmanaged"))
            .map(|c| c.message)
    })
    .await;
    assert!(
        message.contains("capattests.test.cluster.x-k8s.io is unmanaged (ClusterAPI cluster, spec.unmanagedCustomResourceDefinitions) and is incompatible: does not serve version v1alpha1"),
        "{message}"
    );
    let (args, _) = deployment_args(client, "capat-controller-manager")
        .await
        .unwrap();
    assert!(
        !args.contains(&"--v2".to_string()),
        "not half-installed: {args:?}"
    );

    // Back to a compatible CRD (the installer does not revert its owner's changes either way).
    put_foreign_crd(client, true).await;
    eventually(MINUTE, "aws v2 installed", || async {
        let (args, _) = deployment_args(client, "capat-controller-manager").await?;
        args.contains(&"--v2".to_string()).then_some(())
    })
    .await;
    wait_available(client, MINUTE).await;

    // A version without its CRD, and core's CRD made unmanaged before core drops it: neither is pruned.
    set_unmanaged(
        client,
        &[
            "capattests.test.cluster.x-k8s.io",
            "capttests.test.cluster.x-k8s.io",
        ],
    )
    .await;
    Tiny {
        crd: false,
        arg: Some("--core-v2"),
        ..core()
    }
    .put(client)
    .await;
    Tiny {
        crd: false,
        ..aws("v3.0.0", "--v3")
    }
    .put(client)
    .await;
    eventually(MINUTE, "core v2 and aws v3 installed", || async {
        let (core_args, _) = deployment_args(client, "capt-controller-manager").await?;
        let (aws_args, _) = deployment_args(client, "capat-controller-manager").await?;
        (core_args.contains(&"--core-v2".to_string()) && aws_args.contains(&"--v3".to_string()))
            .then_some(())
    })
    .await;
    wait_available(client, MINUTE).await;
    for name in [
        "capattests.test.cluster.x-k8s.io",
        "capttests.test.cluster.x-k8s.io",
    ] {
        assert!(
            crds(client).get_opt(name).await.unwrap().is_some(),
            "{name} was pruned"
        );
    }
    let crd = crds(client)
        .get("capattests.test.cluster.x-k8s.io")
        .await
        .unwrap();
    assert!(!touched_by_installer(&crd), "after prune: {crd:?}");
    let writes: Vec<String> = installer_writes(&env.audit(), None)
        .iter()
        .filter(|e| {
            e.object_ref
                .as_ref()
                .is_some_and(|o| o.name.as_deref() == Some("capattests.test.cluster.x-k8s.io"))
        })
        .map(describe)
        .collect();
    assert!(
        writes.is_empty(),
        "the installer wrote the unmanaged CRD: {writes:?}"
    );
}

/// aws v4 never becomes Available: revision 4 fails, revision 3's Deployment spec is live again, the
/// operator is Degraded naming revision 4, and v4 is not retried until the content changes.
async fn automatic_rollback(env: &Env) {
    let client = &env.admin;
    let good = wait_current(client, "v3.0.0").await.current.unwrap();
    Tiny {
        crd: false,
        unschedulable: true,
        ..aws("v4.0.0", "--v4")
    }
    .put(client)
    .await;
    let degraded = eventually(2 * MINUTE, "the rollback reported", || async {
        let s = co_status(client).await?;
        let c = condition(&s, "Degraded")?;
        (c.status == "True" && c.reason == "RevisionRolledBack").then_some(c.message)
    })
    .await;
    let log: RevisionLog = revisions(client).await.log;
    let failed = log.newest().unwrap();
    assert_eq!(failed.outcome, RevisionOutcome::Failed);
    assert_eq!(failed.version.as_deref(), Some("v4.0.0"));
    assert!(
        degraded.contains(&format!(
            "revision {} (v4.0.0) did not become Available",
            failed.revision
        )) && degraded.contains(&format!("rolled back to revision {good} (v3.0.0)")),
        "{degraded}"
    );
    assert_eq!(log.current, Some(good));
    eventually(MINUTE, "revision 3's Deployment live again", || async {
        let (args, unschedulable) = deployment_args(client, "capat-controller-manager").await?;
        (args.contains(&"--v3".to_string()) && !unschedulable).then_some(())
    })
    .await;
    let s = co_status(client).await.unwrap();
    assert!(is(&s, "Available", "True"), "the last good revision serves");

    // A content change is tried again.
    Tiny {
        crd: false,
        ..aws("v5.0.0", "--v5")
    }
    .put(client)
    .await;
    eventually(2 * MINUTE, "aws v5 rolled out", || async {
        let s = co_status(client).await?;
        let (args, _) = deployment_args(client, "capat-controller-manager").await?;
        (is(&s, "Degraded", "False") && args.contains(&"--v5".to_string())).then_some(())
    })
    .await;
    let out = cli(env, &["status"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Revisions") && text.contains("Failed") && text.contains("v4.0.0"),
        "{text}"
    );
}

/// `capi-installer rollback --provider aws --to N` serves revision N until aws's content changes.
async fn rollback_by_hand(env: &Env) {
    let client = &env.admin;
    let log = wait_current(client, "v5.0.0").await;
    let v3 = log
        .revisions
        .iter()
        .find(|r| r.version.as_deref() == Some("v3.0.0"))
        .expect("v3 recorded")
        .revision;
    let out = cli(
        env,
        &[
            "rollback",
            "--provider",
            "aws",
            "--to",
            &v3.to_string(),
            "--wait",
            "2m",
            "-o",
            "json",
        ],
    );
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // For scripts: one document, written once the revision is live.
    let done: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(
        done,
        serde_json::json!({"provider": "aws", "revision": v3, "configMap": done["configMap"], "live": true}),
        "{done}"
    );
    assert!(
        done["configMap"]
            .as_str()
            .is_some_and(|c| c.starts_with(&format!("{INSTALLER_NS}/"))),
        "{done}"
    );
    let (args, _) = deployment_args(client, "capat-controller-manager")
        .await
        .unwrap();
    assert!(args.contains(&"--v3".to_string()), "{args:?}");
    let s = wait_available(client, MINUTE).await;
    let available = condition(&s, "Available").unwrap();
    assert!(
        available
            .message
            .contains(&format!("aws v3.0.0 (revision {v3}, rolled back by hand)")),
        "{available:?}"
    );
    let refused = cli(
        env,
        &[
            "rollback",
            "--provider",
            "aws",
            "--to",
            "99",
            "--wait",
            "0s",
        ],
    );
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("no revision 99"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );

    // New content ends the rollback.
    Tiny {
        crd: false,
        ..aws("v6.0.0", "--v6")
    }
    .put(client)
    .await;
    eventually(2 * MINUTE, "aws v6 rolled out", || async {
        let (args, _) = deployment_args(client, "capat-controller-manager").await?;
        args.contains(&"--v6".to_string()).then_some(())
    })
    .await;
    let log = wait_current(client, "v6.0.0").await;
    assert_eq!(log.hold, None);
}
