//! `capi-installer diff` against a real control plane with core and aws installed: the release as
//! installed changes nothing (exit 0, with the images from a file or from the installer's ConfigMap);
//! an upgrade of aws (a changed argument, a dropped RoleBinding, a new CRD version) shows exactly those
//! changes, field by field — in text, the argument appended inside the long `args` list — and writes
//! nothing (audit log; exit 1); a bundle the policy refuses is named with its rule; a grant beyond the
//! release's RBAC ceiling is refused until the administrator extends the ceiling, as the installer
//! would judge it; extended for the policy alone (a file), the API server still refuses it to the
//! provider's identity, which the diff dry-runs as.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use capi_installer_controller::{policy, user_agent};
use serde_json::{Value, json};
use test_support::*;

const BIN: &str = env!("CARGO_BIN_EXE_capi-installer");

fn diff(env: &Env, dir: &Path, configmap: &Value, extra: &[&str]) -> Output {
    let file = dir.join("configmap.yaml");
    std::fs::write(&file, serde_json::to_string(configmap).unwrap()).unwrap();
    let images_json = dir.join("images.json");
    std::fs::write(&images_json, serde_json::to_string(&images()).unwrap()).unwrap();
    Command::new(BIN)
        .arg("diff")
        .arg(&file)
        .arg("--kubeconfig")
        .arg(env.cp.kubeconfig_path())
        .arg("--images-json")
        .arg(&images_json)
        .args(extra)
        .output()
        .expect("capi-installer runs")
}

fn text(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diff_shows_what_an_upgrade_would_change_and_writes_nothing() {
    require_fixture!("transport-configmaps");
    let env = Env::on_aws(&[CORE_CM, AWS_CM]).await;
    // As the release runs it: each provider's objects written by that provider's identity, which the
    // diff dry-runs as too.
    let installer = Running::under_release_rbac(&env, config()).await;
    wait_available(&env.admin, Duration::from_secs(240)).await;
    // From here on, the installer's user agent is the diff's alone.
    installer.stop().await;
    let dir = tempfile::tempdir().unwrap();

    // 1. The release as installed: nothing would change.
    let out = diff(&env, dir.path(), &fixture_configmap(AWS_CM), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("nothing would change"),
        "{}",
        text(&out)
    );

    // 1b. Without --images-json the images are the installer's own, from its ConfigMap in its
    // namespace, in the reference's format (every value an image): the same images, so nothing would
    // change either.
    let images_cm: k8s_openapi::api::core::v1::ConfigMap = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "capi-installer-images", "namespace": INSTALLER_NS},
        "data": images(),
    }))
    .unwrap();
    kube::Api::namespaced(env.admin.clone(), INSTALLER_NS)
        .create(&Default::default(), &images_cm)
        .await
        .unwrap();
    let file = dir.path().join("as-installed.yaml");
    std::fs::write(
        &file,
        serde_json::to_string(&fixture_configmap(AWS_CM)).unwrap(),
    )
    .unwrap();
    let out = Command::new(BIN)
        .arg("diff")
        .arg(&file)
        .arg("--kubeconfig")
        .arg(env.cp.kubeconfig_path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("nothing would change"),
        "{}",
        text(&out)
    );

    // 2. The upgrade: exactly its three changes, and no write.
    let upgrade = aws_upgrade(true);
    let crd = upgrade.crd.clone().unwrap();
    let upgraded = with_components(AWS_CM, &upgrade.components);
    let mark = env.audit().len();
    let out = diff(&env, dir.path(), &upgraded, &["--output", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    let providers = report["providers"].as_array().unwrap();
    let provider = |name: &str| {
        providers
            .iter()
            .find(|p| p["provider"] == name)
            .unwrap_or_else(|| panic!("{name} in {report}"))
    };
    assert_eq!(provider("cluster-api")["objects"], json!([]), "{report}");
    let aws = provider("aws");
    assert!(aws.get("refused").is_none(), "{aws}");
    let objects: Vec<(String, String)> = aws["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["object"].as_str().unwrap().to_string(),
                o["change"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let deployment = format!("Deployment {NS}/{}", upgrade.deployment);
    let crd_key = format!("CustomResourceDefinition {crd}");
    let rolebinding = format!("RoleBinding {NS}/{}", upgrade.dropped_rolebinding);
    let mut expected = vec![
        (crd_key.clone(), "changed".to_string()),
        (deployment.clone(), "changed".to_string()),
        (rolebinding, "pruned".to_string()),
    ];
    expected.sort();
    let mut seen = objects.clone();
    seen.sort();
    assert_eq!(seen, expected, "{aws}");
    let fields = |object: &str| -> Vec<Value> {
        aws["objects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["object"] == object)
            .unwrap()["fields"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    let args = fields(&deployment);
    assert_eq!(args.len(), 1, "{args:?}");
    let path = args[0]["path"].as_str().unwrap();
    assert!(
        path.starts_with("spec.template.spec.containers[name=") && path.ends_with("].args"),
        "{path}"
    );
    let after = args[0]["after"].as_array().unwrap();
    assert_eq!(after.last().unwrap(), "--v=4");
    assert_eq!(
        args[0]["before"].as_array().unwrap().as_slice(),
        &after[..after.len() - 1]
    );
    let versions = fields(&crd_key);
    assert_eq!(versions.len(), 1, "{versions:?}");
    assert_eq!(versions[0]["path"], "spec.versions[name=v1beta3]");
    assert!(versions[0].get("before").is_none_or(Value::is_null));
    assert_eq!(versions[0]["after"]["served"], true);
    // Nothing written: dry-runs only (the API server's answers are what the fields come from).
    tokio::time::sleep(Duration::from_secs(1)).await;
    let audit = env.audit();
    let writes = installer_writes(&audit[mark..], None);
    assert!(
        writes.is_empty(),
        "{:?}",
        writes.iter().map(describe).collect::<Vec<_>>()
    );
    let dry_runs = audit[mark..]
        .iter()
        .filter(|e| e.user_agent.as_deref() == Some(user_agent().as_str()) && e.is_dry_run())
        .count();
    assert!(dry_runs >= 3, "the dry-runs of the changes and the prune");

    // The same as text: one line per object, the fields below.
    let out = diff(&env, dir.path(), &upgraded, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("~ {deployment} changed")),
        "{stdout}"
    );
    assert!(stdout.contains(&format!("~ {crd_key} changed")), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "- RoleBinding {NS}/{} pruned",
            upgrade.dropped_rolebinding
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("spec.versions[name=v1beta3]: (absent) -> {"),
        "{stdout}"
    );
    // Inside the long `args` list: the one argument appended, at its index, not two values cut to
    // the same prefix.
    let n = after.len() - 1;
    assert!(
        stdout.contains(&format!(
            "].args: list of {n} -> {} items\n        + [{n}] \"--v=4\"\n",
            n + 1
        )),
        "{stdout}"
    );

    // 3. A bundle the policy refuses: named with its rule, nothing else of it listed.
    let hostile = format!(
        "{}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {{name: capa-everything}}\nroleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}}\nsubjects: [{{kind: ServiceAccount, name: capa-controller-manager, namespace: {NS}}}]",
        upgrade.components
    );
    let out = diff(
        &env,
        dir.path(),
        &with_components(AWS_CM, &hostile),
        &["--output", "json"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let aws = report["providers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["provider"] == "aws")
        .unwrap()
        .clone();
    let refused = aws["refused"].as_array().expect("refused");
    assert!(
        refused
            .iter()
            .any(|r| r.as_str().unwrap().contains("capa-everything")),
        "{aws}"
    );
    assert_eq!(
        aws["objects"],
        json!([]),
        "a refused version changes nothing"
    );

    // 4. A grant beyond the release's RBAC ceiling: refused; once the administrator extends the
    // ceiling with that grant (a ClusterRole labelled as the installer reads it), only the new role
    // would change.
    let node_proxy = format!(
        "{}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {{name: capa-node-proxy}}\nrules: [{{apiGroups: [\"\"], resources: [nodes/proxy], verbs: [get]}}]",
        fixture_components(AWS_CM)
    );
    let aws_report = |out: &Output| -> Value {
        assert_eq!(out.status.code(), Some(1), "{}", text(out));
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        report["providers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["provider"] == "aws")
            .unwrap()
            .clone()
    };
    let configmap = with_components(AWS_CM, &node_proxy);
    let aws = aws_report(&diff(&env, dir.path(), &configmap, &["--output", "json"]));
    let refused = aws["refused"].as_array().expect("refused");
    assert!(
        refused.iter().any(|r| {
            let r = r.as_str().unwrap();
            r.contains("capa-node-proxy") && r.contains("rbac-ceiling")
        }),
        "{aws}"
    );
    // A ceiling extended for the policy alone (--policy-ceiling, a file), not for the identities:
    // the policy allows the role, the API server refuses it to aws's identity, as it would refuse
    // the installer's write (issue 46); dry-run as the caller (cluster-admin) it passes.
    let file = dir.path().join("ceiling.yaml");
    std::fs::write(
        &file,
        format!(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {{name: node-proxy, labels: {{{}: {}}}}}\nrules: [{{apiGroups: [''], resources: [nodes/proxy], verbs: [get]}}]\n",
            policy::ceiling::LABEL,
            policy::ceiling::CLUSTER
        ),
    )
    .unwrap();
    let policy_file = [
        "--output",
        "json",
        "--policy-ceiling",
        file.to_str().unwrap(),
    ];
    let aws = aws_report(&diff(&env, dir.path(), &configmap, &policy_file));
    let refused = aws["refused"]
        .as_array()
        .expect("refused by the API server");
    assert!(
        refused.iter().any(|r| {
            let r = r.as_str().unwrap();
            r.contains("the API server refuses it: dry-run ClusterRole capa-node-proxy")
                && r.contains("capi-provider-infrastructure-aws")
        }),
        "{aws}"
    );
    let as_caller = [&policy_file[..], &["--provider-identities=false"]].concat();
    let aws = aws_report(&diff(&env, dir.path(), &configmap, &as_caller));
    assert!(aws.get("refused").is_none(), "{aws}");
    let extension: k8s_openapi::api::rbac::v1::ClusterRole = serde_json::from_value(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {
            "name": "provider-ceiling-node-proxy",
            "labels": {policy::ceiling::LABEL: policy::ceiling::CLUSTER},
        },
        "rules": [{"apiGroups": [""], "resources": ["nodes/proxy"], "verbs": ["get"]}],
    }))
    .unwrap();
    kube::Api::all(env.admin.clone())
        .create(&Default::default(), &extension)
        .await
        .unwrap();
    // The identities' ceilings aggregate the same extensions (docs/admin/rbac.md): once aws's holds
    // the grant, the API server allows the role too.
    let aws_ceiling = api_for(
        &env.admin,
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        None,
    )
    .await;
    eventually(
        Duration::from_secs(60),
        "aws's identity ceiling aggregates the extension",
        || async {
            let role = aws_ceiling
                .get("capi-provider-infrastructure-aws")
                .await
                .ok()?;
            role.data["rules"]
                .to_string()
                .contains("nodes/proxy")
                .then_some(())
        },
    )
    .await;
    let aws = aws_report(&diff(&env, dir.path(), &configmap, &["--output", "json"]));
    assert!(aws.get("refused").is_none(), "{aws}");
    let objects: Vec<(&str, &str)> = aws["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["object"].as_str().unwrap(), o["change"].as_str().unwrap()))
        .collect();
    assert_eq!(
        objects,
        [("ClusterRole capa-node-proxy", "created")],
        "{aws}"
    );
}
