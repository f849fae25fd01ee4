//! What holding the provider RBAC ceiling instead of `escalate`/`bind` costs at install time (issue
//! 17): measured here, never asserted in tests.
//!
//! ```text
//! cargo run --release -p capi-benchmarks --example ceiling_cost -- [RUNS]
//! ```
//!
//! Each run (default 3) installs core + aws (the fixtures) twice, each time on a fresh control plane
//! with workloads (KWOK) and the installer in this process as its own ServiceAccount:
//!
//! - **escalate/bind**: the installer's RBAC as it was before issue 17 (`..._03_rbac.yaml` plus
//!   `escalate`, `bind` on ClusterRoles and Roles; no ceiling);
//! - **ceiling**: the shipped RBAC (`..._03_rbac.yaml` and `..._03_ceiling.yaml`).
//!
//! For each: the time from the installer's start until `ClusterOperator/cluster-api` is Available, the
//! span of its RBAC writes (first to last ClusterRole/ClusterRoleBinding/Role/RoleBinding write, from the
//! audit log, dry-runs apart), and the requests the API server denied it. The API server checks a role
//! or binding write against the writer's own rules only when the writer lacks `escalate`/`bind`, so the
//! difference is that check (and the wait for the ceiling's aggregated ClusterRole to be filled).

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use serde_json::{Value, json};
use test_support::*;

#[tokio::main]
async fn main() -> Result<()> {
    let runs: usize = std::env::args()
        .nth(1)
        .map_or(Ok(3), |n| n.parse())
        .unwrap_or(3);
    if control_plane::shared_fixture("transport-configmaps").is_none() {
        bail!("the fixtures are missing");
    }
    let mut rows: Vec<(&str, Vec<Measured>)> =
        vec![("escalate/bind", Vec::new()), ("ceiling", Vec::new())];
    for run in 0..runs {
        for (variant, results) in &mut rows {
            let rbac = match *variant {
                "ceiling" => installer_rbac(),
                _ => with_escalate_and_bind(repo_manifests("0000_30_capi-installer_03_rbac")),
            };
            let measured = install(&rbac).await;
            eprintln!(
                "run {run} {variant}: available after {:?}, RBAC writes over {:?}, {} denied",
                measured.0, measured.1, measured.2
            );
            results.push(measured);
        }
    }
    println!("| RBAC | start → Available (median) | RBAC writes, first → last (median) | denied |");
    println!("|---|---|---|---|");
    for (variant, mut results) in rows {
        results.sort();
        let available = results[results.len() / 2].0;
        let mut spans: Vec<Duration> = results.iter().map(|r| r.1).collect();
        spans.sort();
        let denied: usize = results.iter().map(|r| r.2).sum();
        println!(
            "| {variant} | {:.2} s | {:.2} s | {denied} |",
            available.as_secs_f64(),
            spans[spans.len() / 2].as_secs_f64()
        );
    }
    Ok(())
}

/// (start → Available, first → last RBAC write, requests denied) of one install.
type Measured = (Duration, Duration, usize);

/// The installer's RBAC before issue 17: `escalate` and `bind` on ClusterRoles and (in the namespace)
/// Roles.
fn with_escalate_and_bind(mut docs: Vec<Value>) -> Vec<Value> {
    for doc in &mut docs {
        let resource = match (doc["kind"].as_str(), doc["metadata"]["name"].as_str()) {
            (Some("ClusterRole"), Some("capi-installer")) => "clusterroles",
            (Some("Role"), Some("capi-installer")) => "roles",
            _ => continue,
        };
        doc["rules"].as_array_mut().unwrap().push(json!({
            "apiGroups": ["rbac.authorization.k8s.io"],
            "resources": [resource],
            "verbs": ["escalate", "bind"],
        }));
    }
    docs
}

/// (start → Available, first → last RBAC write, requests denied) of one cold install under `rbac`.
async fn install(rbac: &[Value]) -> Measured {
    let env = Env::on_aws(&[CORE_CM, AWS_CM]).await;
    apply_as_release_payload(&env.admin, rbac).await;
    let sa = env
        .service_account_config(INSTALLER_NS, "capi-installer")
        .await;
    let started = Instant::now();
    let installer = Running::start(installer_client(sa), config());
    wait_available(&env.admin, Duration::from_secs(600)).await;
    let available = started.elapsed();
    drop(installer);
    let ua = capi_installer_controller::user_agent();
    let audit = env.audit();
    let mine = audit
        .iter()
        .filter(|e| e.user_agent.as_deref() == Some(ua.as_str()));
    let denied = mine
        .clone()
        .filter(|e| e.response_code == Some(403))
        .count();
    let rbac_writes: Vec<_> = installer_writes(&audit, None)
        .into_iter()
        .filter(|e| {
            e.object_ref
                .as_ref()
                .is_some_and(|o| o.api_group == "rbac.authorization.k8s.io")
        })
        .map(|e| e.stage_timestamp.0)
        .collect();
    let span = match (rbac_writes.iter().min(), rbac_writes.iter().max()) {
        (Some(first), Some(last)) => {
            Duration::from_millis((last.as_millisecond() - first.as_millisecond()).max(0) as u64)
        }
        _ => Duration::ZERO,
    };
    (available, span, denied)
}
