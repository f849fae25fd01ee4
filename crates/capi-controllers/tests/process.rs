//! The `capi-controllers` process against the real control plane, as its own ServiceAccount under its
//! shipped RBAC: leader election on its own Lease, health and metrics endpoints, its own user agent,
//! the kubeconfig pointing where the process connects, and a clean stop on SIGTERM.

use std::process::Command;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use serde_json::json;
use test_support::*;

const BIN: &str = env!("CARGO_BIN_EXE_capi-controllers");
const T: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_as_its_service_account_with_its_lease_endpoints_and_user_agent() {
    let env = Env::start(false).await;
    let (cp, admin) = (&env.cp, &env.admin);
    openshift_on_aws(admin).await;
    apply_release_manifests(admin, "0000_31_capi-controllers").await;

    let kubeconfig = cp
        .service_account_kubeconfig(NS, "capi-controllers")
        .await
        .unwrap();
    let mut run = Command::new(BIN);
    run.arg("run").args(LEADER_TIMINGS);
    let mut process = Replica::start(run, "capi-controllers-0", &kubeconfig, cp.dir());
    let (http, metrics) = (process.http, process.metrics);
    let ca = ServingCert::in_dir(cp.dir()).ca;

    // Its own Lease, held by this replica.
    eventually(T, "the Lease held", || async {
        (lease_holder(admin, NS, "capi-controllers-leader").await? == "capi-controllers-0")
            .then_some(())
    })
    .await;
    assert_eq!(http_get(http, "/healthz").await.map(|r| r.0), Some(200));
    eventually(T, "ready", || async {
        (http_get(http, "/readyz").await?.0 == 200).then_some(())
    })
    .await;

    // The controllers run: the kubeconfig points where the process connects; the CRD-less
    // controllers wait for the installer without errors.
    let secret = eventually(T, "the kubeconfig Secret", || async {
        secrets(admin, NS)
            .get_opt("demo-x7k2p-kubeconfig")
            .await
            .ok()?
    })
    .await;
    let text = capi_cluster_controllers::kubeconfig::render::kubeconfig_of(
        &serde_json::to_value(&secret).unwrap(),
    )
    .unwrap();
    let parsed = kube::config::Kubeconfig::from_yaml(&text).unwrap();
    assert_eq!(
        parsed.clusters[0]
            .cluster
            .as_ref()
            .unwrap()
            .server
            .as_deref(),
        Some(cp.server())
    );
    eventually(T, "InfraCluster controller waiting for its CRD", || async {
        let c = co_condition(admin, "InfraClusterControllerAvailable").await?;
        (c.reason == "WaitingForCustomResourceDefinitions").then_some(())
    })
    .await;
    // /metrics over TLS, for a caller allowed to `get` it (as cluster monitoring is).
    apply(
        admin,
        &ar(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRole",
            "clusterroles",
        ),
        &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "test-metrics-reader"},
            "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]}),
        CVO,
    )
    .await;
    apply(
        admin,
        &ar("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings"),
        &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "test-metrics-reader"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "test-metrics-reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "scraper", "namespace": NS}]}),
        CVO,
    )
    .await;
    let token = token(admin, NS, "scraper").await;
    let body = eventually(T, "/metrics with our series", || async {
        let (status, body) = https_get(metrics, &ca, "/metrics", Some(&token)).await?;
        (status == 200 && body.contains("capi_controllers_reconciles_total{")).then_some(body)
    })
    .await;
    assert!(body.contains("capi_controllers_build_info{"), "{body}");
    // Measured, not asserted (BENCHMARKS.md, "the controllers pod's CPU"): the process's whole CPU
    // time so far (start, TLS, the caches' lists, every controller's first reconciles) bounds what any
    // one step could have held a worker thread for; the runtime's longest stall is the lateness seen.
    let stall = metric_samples(&body)
        .remove("capi_controllers_runtime_longest_stall_seconds")
        .unwrap_or_default();
    eprintln!(
        "controllers process: CPU {:?} since start, longest runtime stall {stall:?}",
        test_support::bench::process_cpu(process.child.id())
    );
    assert_eq!(
        http_get(http, "/metrics").await.map(|r| r.0),
        Some(404),
        "not on the plain port"
    );

    // Every request of the ServiceAccount carries the controllers' user agent, and none was denied.
    let user = "system:serviceaccount:openshift-cluster-api:capi-controllers";
    let ua = capi_cluster_controllers::user_agent();
    let events = cp.audit_events().unwrap();
    let ours: Vec<_> = events.iter().filter(|e| e.user.username == user).collect();
    assert!(!ours.is_empty());
    let other_agents: Vec<_> = ours
        .iter()
        .filter(|e| e.user_agent.as_deref() != Some(ua.as_str()))
        .map(|e| e.user_agent.clone())
        .collect();
    assert!(other_agents.is_empty(), "{other_agents:?}");
    let denied: Vec<_> = ours
        .iter()
        .filter(|e| e.response_code == Some(403))
        .map(|e| e.request_uri.clone())
        .collect();
    assert!(denied.is_empty(), "{denied:?}");

    // SIGTERM: the Lease is released and the process exits 0.
    process.terminate();
    let status = eventually(T, "exit", || {
        let status = process.child.try_wait().unwrap();
        async move { status }
    })
    .await;
    assert!(status.success(), "{status:?}");
    let leases: Api<Lease> = Api::namespaced(admin.clone(), NS);
    let lease = leases.get("capi-controllers-leader").await.unwrap();
    assert_eq!(
        lease
            .spec
            .and_then(|s| s.holder_identity)
            .unwrap_or_default(),
        ""
    );
}

/// A kubeconfig without a CA cannot give Cluster API a kubeconfig of its own: the error names the file
/// and the context, and says what to add (issue 21). Nothing is contacted.
#[test]
fn a_kubeconfig_without_a_ca_is_refused_naming_the_file_and_the_fix() {
    let tmp = tempfile::tempdir().unwrap();
    let kubeconfig = tmp.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n\
         users:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n  context:\n    cluster: c\n    \
         user: u\ncurrent-context: x\n",
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["run", "--leader-elect=false", "--http-addr", "127.0.0.1:0"])
        .args(["--metrics-addr", "127.0.0.1:0", "--kubeconfig"])
        .arg(&kubeconfig)
        .env_remove("KUBECONFIG")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let line = err
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_default();
    assert!(
        line.contains(&format!("kubeconfig {} (context x", kubeconfig.display()))
            && line.contains("no CA certificate")
            && line.contains("add certificate-authority-data"),
        "{err}"
    );
}

/// Its health and metrics ports are not the installer's (9440, 8443): both run on one host without
/// flags. `run --help` states them, and the usage in docs/admin/controllers.md is the binary's: the
/// same flags, and each value written there that is not a placeholder (`NAME`, `text|json`) is the
/// flag's default.
#[test]
fn its_ports_are_its_own_and_the_documented_usage_is_the_binarys() {
    let out = Command::new(BIN).args(["run", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        help.contains("[default: 0.0.0.0:9441]") && help.contains("[default: 0.0.0.0:8444]"),
        "{help}"
    );

    let docs = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/admin/controllers.md"),
    )
    .unwrap();
    let usage = docs
        .split("```")
        .find(|b| b.trim_start().starts_with("capi-controllers run"))
        .expect("the usage block of controllers.md");
    // (flag, the value written after it)
    let mut documented: Vec<(String, Option<String>)> = Vec::new();
    let tokens: Vec<&str> = usage
        .split(|c: char| c.is_whitespace() || c == '[' || c == ']')
        .filter(|t| !t.is_empty())
        .collect();
    // A short flag (`-n`) stands for the long one `--help` pairs it with (`-n, --namespace`).
    let long_of = |short: &str| {
        help.lines()
            .map(str::trim_start)
            .find_map(|l| l.strip_prefix(&format!("{short}, --")))
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| {
                panic!("{short} of controllers.md is not a short flag of run:\n{help}")
            })
            .to_string()
    };
    for (i, token) in tokens.iter().enumerate() {
        let long;
        let flag = match token.strip_prefix("--") {
            Some(flag) => flag,
            None if token.len() == 2 && token.starts_with('-') => {
                long = long_of(token);
                &long
            }
            None => continue,
        };
        let (flag, value) = match flag.split_once('=') {
            Some((f, v)) => (f, Some(v)),
            None => (
                flag,
                tokens.get(i + 1).copied().filter(|v| !v.starts_with('-')),
            ),
        };
        documented.push((format!("--{flag}"), value.map(str::to_string)));
    }
    let placeholder = |v: &str| v.contains('|') || v.chars().all(|c| c.is_ascii_uppercase());
    let mut flags = Vec::new();
    for line in help.lines().map(str::trim_start) {
        if let Some(flag) = line
            .split_whitespace()
            .find(|t| t.starts_with("--") && *t != "--help")
            .filter(|_| line.starts_with('-'))
        {
            flags.push(flag.to_string());
        }
    }
    for flag in &flags {
        assert!(
            documented.iter().any(|(f, _)| f == flag),
            "{flag} is not in the usage of controllers.md:\n{usage}"
        );
    }
    for (flag, value) in &documented {
        assert!(
            flags.contains(flag),
            "{flag} of controllers.md is not a flag of run:\n{help}"
        );
        let Some(value) = value.as_deref().filter(|v| !placeholder(v)) else {
            continue;
        };
        let start = help.find(&format!("{flag} ")).unwrap();
        let mut lines = help[start..].lines();
        let block: Vec<&str> = std::iter::once(lines.next().unwrap())
            .chain(lines.take_while(|l| !l.trim_start().starts_with('-')))
            .collect();
        let block = block.join("\n");
        assert!(
            block.contains(&format!("[default: {value}]")),
            "{flag}: controllers.md says {value}:\n{block}"
        );
    }
}
