//! Peak memory of the installer process under hostile transport ConfigMaps (issue 9): measured here,
//! never asserted in tests.
//!
//! ```text
//! cargo run --release -p capi-benchmarks --example hostile_rss
//! ```
//!
//! One control plane with workloads, platform AWS and the release payload (core + aws), set up as the
//! integration tests do. For each case a fresh `capi-installer run` (the release binary) installs the
//! payload until the ClusterOperator is Available; then the aws ConfigMap is replaced by the hostile one
//! (as the release payload would write it), and once a condition message names the failure the
//! process's VmHWM (peak RSS) is read from /proc and the process is killed. The good ConfigMap is put
//! back before the next case.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, Result};
use base64::Engine as _;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

use test_support::bench::{proc_status, release_binary, wait_until};
use test_support::{AWS_CM, CORE_CM, Env, NS, co_status, fixture_configmap, images, settled};

const TIMEOUT: Duration = Duration::from_secs(120);
/// How long the installer may take to report a case (it reacts to a ConfigMap change within seconds).
const REPORTED: Duration = Duration::from_secs(60);
/// How often the ClusterOperator is polled.
const POLL: Duration = Duration::from_millis(200);

struct Case {
    name: &'static str,
    /// What the hostile ConfigMap carries.
    describe: &'static str,
    configmap: Value,
    /// A condition message containing this means the installer has dealt with the case.
    expect: &'static str,
}

#[tokio::main]
async fn main() -> Result<()> {
    let bin = release_binary("capi-installer", "capi-installer")?;
    let env = Env::start(true).await;
    test_support::set_platform(&env.admin, "AWS").await;
    test_support::load_payload(&env.admin, &[CORE_CM, AWS_CM])
        .await
        .context("fixtures")?;
    let good = fixture_configmap(AWS_CM);

    println!("| case | hostile ConfigMap | VmHWM at Available | VmHWM after the case |");
    println!("|---|---|---|---|");
    // HOSTILE_CASES="cluster-admin binding,zstd bomb" runs only those cases.
    let only: Option<Vec<String>> = std::env::var("HOSTILE_CASES")
        .ok()
        .map(|v| v.split(',').map(str::to_string).collect());
    for case in cases(&good)? {
        if only
            .as_ref()
            .is_some_and(|o| !o.iter().any(|n| n == case.name))
        {
            continue;
        }
        match run_case(&bin, &env, &case).await {
            Ok((before, after)) => println!(
                "| {} | {} | {:.1} MiB | {:.1} MiB |",
                case.name,
                case.describe,
                before as f64 / 1024.0,
                after as f64 / 1024.0
            ),
            Err(e) => {
                println!("| {} | {} | – | not reported |", case.name, case.describe);
                eprintln!("{e:#}");
            }
        }
        put(&env.admin, &good).await?;
    }
    Ok(())
}

fn cases(good: &Value) -> Result<Vec<Case>> {
    let with = |data: Option<String>, binary: Option<Vec<u8>>| -> Value {
        let mut cm = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "aws", "namespace": NS, "labels": good["metadata"]["labels"]},
            "data": {"metadata": good["data"]["metadata"]},
        });
        if let Some(text) = data {
            cm["data"]["components"] = json!(text);
        }
        if let Some(bytes) = binary {
            cm["binaryData"] = json!({
                "components-zstd": base64::engine::general_purpose::STANDARD.encode(bytes)
            });
        }
        cm
    };
    let zstd = |text: &[u8]| zstd::encode_all(text, 19).context("zstd");

    let mut bomb = String::from(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb, namespace: openshift-cluster-api}\nl0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n",
    );
    for i in 1..=9 {
        let refs = vec![format!("*l{}", i - 1); 9].join(", ");
        bomb.push_str(&format!("l{i}: &l{i} [{refs}]\n"));
    }
    let zeros = vec![b'#'; 1024 * 1024 * 1024];
    let zstd_bomb = zstd::encode_all(&zeros[..], 3).context("zstd")?;
    drop(zeros);
    let deep = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: deep, namespace: openshift-cluster-api}}\nx: {}{}\n",
        "[".repeat(200_000),
        "]".repeat(200_000)
    );
    // Nested one-entry maps, the shape that costs the most memory per node once parsed (7 nodes per
    // item, 13 for the rest of the object). The API server refuses such a ConfigMap at dry-run.
    let nodes = |name: &str, items: usize| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: openshift-cluster-api}}\nx:\n{}",
            "- {a: {b: {c: 1}}}\n".repeat(items)
        )
    };
    // Over the per-object limit (20,000 nodes), under the total (100,000): refused by the budget.
    let one_huge = nodes("hostile-nodes", 14_000);
    // Just under the per-object limit: 19,613 nodes.
    let one_dense = nodes("hostile-nodes", 2_800);
    // Just under the node budget: five such objects, 98,065 nodes.
    let five_dense = (0..5)
        .map(|i| nodes(&format!("hostile-nodes-{i}"), 2_800))
        .collect::<Vec<_>>()
        .join("---\n");
    // Just under the byte budget (4 MiB): long strings, compressed as manifests-gen would.
    let bytes = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: hostile-bytes, namespace: openshift-cluster-api}}\ndata:\n{}",
        (0..64)
            .map(|i| format!("  k{i}: {}\n", "y".repeat(64 * 1024 - 16)))
            .collect::<String>()
    );
    let admin = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: own-the-cluster}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\nsubjects: [{kind: ServiceAccount, name: capa-controller-manager, namespace: openshift-cluster-api}]\n";

    Ok(vec![
        Case {
            name: "alias bomb",
            describe: "9 levels of 9 aliases (9^10 nodes expanded), 1 kB",
            configmap: with(Some(bomb), None),
            expect: "YAML nodes added by aliases",
        },
        Case {
            name: "zstd bomb",
            describe: format!("1 GiB of one byte in a {} byte zstd frame", zstd_bomb.len()).leak(),
            configmap: with(None, Some(zstd_bomb)),
            expect: "over budget",
        },
        Case {
            name: "deep nesting",
            describe: "200,000 nested flow sequences",
            configmap: with(Some(deep), None),
            expect: "levels of nesting",
        },
        Case {
            name: "one object over the node limit",
            describe: "98,000 nodes of nested one-entry maps in one object",
            configmap: with(None, Some(zstd(one_huge.as_bytes())?)),
            expect: "in one document",
        },
        Case {
            name: "densest object accepted",
            describe: "19,613 nodes of nested one-entry maps in one object",
            configmap: with(None, Some(zstd(one_dense.as_bytes())?)),
            expect: "hostile-nodes",
        },
        Case {
            name: "most nodes accepted",
            describe: "98,065 nodes of nested one-entry maps in five objects",
            configmap: with(None, Some(zstd(five_dense.as_bytes())?)),
            expect: "hostile-nodes-0",
        },
        Case {
            name: "most bytes accepted",
            describe: "4 MiB of strings in one object",
            configmap: with(None, Some(zstd(bytes.as_bytes())?)),
            expect: "hostile-bytes",
        },
        Case {
            name: "cluster-admin binding",
            describe: "the aws bundle plus a ClusterRoleBinding of cluster-admin",
            configmap: {
                let mut content = capi_manifests::TransportConfigMap::decode(good)?.content;
                if !content.components.ends_with('\n') {
                    content.components.push('\n');
                }
                content.components.push_str("---\n");
                content.components.push_str(admin);
                let mut cm = content.encode()?;
                cm["metadata"]["labels"] = good["metadata"]["labels"].clone();
                cm
            },
            expect: "own-the-cluster",
        },
    ])
}

async fn put(client: &Client, cm: &Value) -> Result<()> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    api.patch(
        "aws",
        &PatchParams::apply("cluster-version-operator").force(),
        &Patch::Apply(cm),
    )
    .await
    .context("apply the aws ConfigMap")?;
    Ok(())
}

async fn messages(client: &Client) -> String {
    co_status(client)
        .await
        .and_then(|s| s["conditions"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .map(|c| c["message"].as_str().unwrap_or_default().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

async fn available(client: &Client) -> bool {
    let Some(status) = co_status(client).await else {
        return false;
    };
    settled(&status)
}

/// (VmHWM once Available, VmHWM once the case is reported), in KiB.
async fn run_case(bin: &Path, env: &Env, case: &Case) -> Result<(u64, u64)> {
    let dir = tempfile::tempdir()?;
    let images_json = dir.path().join("images.json");
    std::fs::write(&images_json, serde_json::to_string(&images())?)?;
    let log = dir.path().join("installer.log");
    let mut child = tokio::process::Command::new(bin)
        .arg("run")
        .arg("--kubeconfig")
        .arg(env.cp.kubeconfig_path())
        .arg("--images-json")
        .arg(&images_json)
        .args(["--http-addr", "127.0.0.1:0", "--leader-elect=false"])
        .env("RUST_LOG", "info,kube=warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log)?)
        .kill_on_drop(true)
        .spawn()
        .context("starting capi-installer run")?;
    let pid = child.id().context("pid")?;
    let result = async {
        wait_until(TIMEOUT, POLL, "Available", || available(&env.admin)).await?;
        let before = proc_status(pid)?.1;
        put(&env.admin, &case.configmap).await?;
        wait_until(REPORTED, POLL, case.expect, || async {
            messages(&env.admin).await.contains(case.expect)
        })
        .await?;
        Ok::<_, anyhow::Error>((before, proc_status(pid)?.1))
    }
    .await;
    let _ = child.kill().await;
    result.with_context(|| {
        let log = std::fs::read_to_string(&log).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(20).collect();
        format!(
            "case {}; installer log (last lines):\n{}",
            case.name,
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        )
    })
}
