//! `capi-installer status`, the parts of issue 11: the `InfrastructureProvider` objects (what each
//! asks for and its status) and every provider's revision history.

use capi_installer_controller::api::Request;
use capi_installer_controller::revision::RevisionLog;
use serde_json::Value;

use crate::table::Table;

/// One row per `InfrastructureProvider`: its conditions as the installer wrote them.
pub fn requests_table(requests: &[(Request, Option<Value>)]) -> Table {
    let rows = requests
        .iter()
        .map(|(r, status)| {
            let status = status.as_ref();
            let condition = |t: &str, k: &str| {
                status
                    .and_then(|s| s["conditions"].as_array())
                    .and_then(|cs| cs.iter().find(|c| c["type"] == t))
                    .and_then(|c| c[k].as_str())
                    .unwrap_or("-")
                    .to_string()
            };
            let field = |k: &str| match status.and_then(|s| s.get(k)) {
                Some(Value::String(v)) => v.clone(),
                Some(Value::Number(n)) => n.to_string(),
                _ => "-".to_string(),
            };
            let message = match (condition("Degraded", "status").as_str(), r.deleting) {
                ("True", _) => condition("Degraded", "message"),
                (_, true) => condition("Progressing", "message"),
                _ => condition("Available", "message"),
            };
            vec![
                r.name.clone(),
                condition("Available", "status"),
                condition("Degraded", "status"),
                field("version"),
                field("revision"),
                if r.deleting { "deleting" } else { "-" }.to_string(),
                message,
            ]
        })
        .collect();
    Table {
        title: "InfrastructureProviders",
        empty: "none (only the platform's provider is installed)",
        header: &[
            "NAME",
            "AVAILABLE",
            "DEGRADED",
            "VERSION",
            "REVISION",
            "DELETION",
            "MESSAGE",
        ],
        rows,
    }
}

/// Every source's revisions, oldest first: number, version, digest, when applied, outcome, whether
/// its content is kept (what `capi-installer rollback --to` needs) and which one is live.
pub fn revisions_table(logs: &[(String, RevisionLog)]) -> Table {
    let mut rows = Vec::new();
    for (_, log) in logs {
        for r in &log.revisions {
            let mut live = Vec::new();
            if log.current == Some(r.revision) {
                live.push("current".to_string());
            }
            if let Some(h) = log.hold.as_ref().filter(|h| h.serving == r.revision) {
                live.push(match h.failed {
                    Some(n) => format!("rolled back from {n}"),
                    None => "rolled back by hand".to_string(),
                });
            }
            rows.push(vec![
                log.provider.clone(),
                log.source.clone(),
                r.revision.to_string(),
                r.version.clone().unwrap_or_else(|| "-".into()),
                r.digest.chars().take(12).collect(),
                r.applied_at.clone(),
                format!("{:?}", r.outcome),
                if r.content { "kept" } else { "-" }.to_string(),
                if live.is_empty() {
                    "-".to_string()
                } else {
                    live.join(", ")
                },
            ]);
        }
    }
    Table {
        title: "Revisions (capi-installer rollback --provider NAME --to REVISION)",
        empty: "none recorded yet",
        header: &[
            "PROVIDER", "SOURCE", "REVISION", "VERSION", "DIGEST", "APPLIED", "OUTCOME", "CONTENT",
            "LIVE",
        ],
        rows,
    }
}
