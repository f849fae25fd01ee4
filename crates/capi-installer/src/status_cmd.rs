//! `capi-installer status`: what the installer has installed, read from the cluster: one row per
//! provider (transport ConfigMaps selected for the cluster's platform), how many of its recorded objects
//! are ready, its last error, and the ClusterOperator's conditions. Read-only.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{Context, Result};
use capi_apply::{Inventory, KindResolver, Phase, Readiness, readiness};
use capi_installer_controller::controller::{CLUSTER_OPERATOR, INVENTORY_CONFIGMAP};
use capi_installer_controller::platform::{self, PlatformDecision};
use capi_installer_controller::sources::{self, NAME_LABEL, Source};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use serde_json::Value;

#[derive(clap::Args)]
pub struct StatusArgs {
    /// Kubeconfig file; default: in-cluster configuration or $KUBECONFIG.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// The namespace of the transport ConfigMaps and of the inventory.
    #[arg(long, default_value = "openshift-cluster-api")]
    namespace: String,
}

fn config_resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: "config.openshift.io".into(),
        version: "v1".into(),
        api_version: "config.openshift.io/v1".into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// One row of the provider table.
struct Row {
    provider: String,
    kind: String,
    version: String,
    configmap: String,
    state: String,
    ready: String,
    last_error: String,
}

pub async fn main(args: StatusArgs) -> Result<()> {
    let client = crate::client(args.kubeconfig.as_deref()).await?;
    let infra_api: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &config_resource("Infrastructure", "infrastructures"),
    );
    let infra = infra_api
        .get_opt("cluster")
        .await
        .context("reading Infrastructure cluster")?;
    let co_api: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &config_resource("ClusterOperator", "clusteroperators"),
    );
    let co = co_api
        .get_opt(CLUSTER_OPERATOR)
        .await
        .with_context(|| format!("reading ClusterOperator {CLUSTER_OPERATOR}"))?;
    let conditions: Vec<Value> = co
        .as_ref()
        .and_then(|c| c.data.pointer("/status/conditions"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();

    let mut out = String::new();
    let decision = platform::decide(infra.as_ref().and_then(|i| i.data.get("status")));
    let infra_name = match &decision {
        PlatformDecision::Supported(p) => {
            let _ = writeln!(
                out,
                "Platform: {} (infrastructure provider {})",
                p.platform, p.provider_name
            );
            Some(p.provider_name)
        }
        PlatformDecision::Unsupported { platform, reason } => {
            let _ = writeln!(out, "Platform: {platform} ({reason}; nothing is installed)");
            None
        }
        PlatformDecision::Unset => {
            let _ = writeln!(
                out,
                "Platform: not set yet (Infrastructure cluster has no status.platformStatus.type)"
            );
            None
        }
    };

    if let Some(infra_name) = infra_name {
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &args.namespace);
        let list = cms
            .list(&ListParams::default().labels(NAME_LABEL))
            .await
            .with_context(|| {
                format!(
                    "listing transport ConfigMaps in namespace {}",
                    args.namespace
                )
            })?;
        let selected = sources::select(&list.items, Some(infra_name));
        let inventory = cms.get_opt(INVENTORY_CONFIGMAP).await.with_context(|| {
            format!("reading ConfigMap {}/{INVENTORY_CONFIGMAP}", args.namespace)
        })?;
        let resolver = KindResolver::discover(&client)
            .await
            .context("API discovery")?;
        let mut rows = Vec::new();
        for source in &selected {
            rows.push(
                provider_row(&client, &resolver, source, inventory.as_ref(), &conditions).await,
            );
        }
        out.push('\n');
        out.push_str(&table(
            &[
                "PROVIDER",
                "TYPE",
                "VERSION",
                "CONFIGMAP",
                "STATE",
                "READY",
                "LAST ERROR",
            ],
            rows.iter()
                .map(|r| {
                    vec![
                        r.provider.clone(),
                        r.kind.clone(),
                        r.version.clone(),
                        r.configmap.clone(),
                        r.state.clone(),
                        r.ready.clone(),
                        r.last_error.clone(),
                    ]
                })
                .collect(),
        ));
        if selected.is_empty() {
            let _ = writeln!(
                out,
                "(no transport ConfigMaps for this platform in namespace {})",
                args.namespace
            );
        }
    }

    out.push('\n');
    if co.is_none() {
        let _ = writeln!(
            out,
            "ClusterOperator {CLUSTER_OPERATOR}: not found (the installer has not run yet)"
        );
    } else {
        let _ = writeln!(out, "ClusterOperator {CLUSTER_OPERATOR}:");
        let field = |c: &Value, k: &str| {
            c.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        out.push_str(&table(
            &["CONDITION", "STATUS", "REASON", "SINCE", "MESSAGE"],
            conditions
                .iter()
                .map(|c| {
                    vec![
                        field(c, "type"),
                        field(c, "status"),
                        field(c, "reason"),
                        field(c, "lastTransitionTime"),
                        field(c, "message"),
                    ]
                })
                .collect(),
        ));
        if let Some(v) = co
            .as_ref()
            .and_then(|c| c.data.pointer("/status/versions"))
            .and_then(Value::as_array)
        {
            for v in v {
                let _ = writeln!(out, "version {}: {}", field(v, "name"), field(v, "version"));
            }
        }
    }
    print!("{out}");
    Ok(())
}

async fn provider_row(
    client: &kube::Client,
    resolver: &KindResolver,
    source: &Source,
    inventory: Option<&ConfigMap>,
    conditions: &[Value],
) -> Row {
    let recorded = inventory
        .and_then(|cm| cm.data.as_ref())
        .and_then(|d| d.get(&source.configmap))
        .map(|json| Inventory::from_json(&source.configmap, json));
    let last_error = last_error(conditions, &source.configmap);
    let (state, ready) = match recorded {
        None => ("NotInstalled".to_string(), "-".to_string()),
        Some(Err(e)) => (format!("inventory unreadable: {e}"), "-".to_string()),
        Some(Ok(inv)) => {
            let total = inv.entries.len();
            let mut ready = 0;
            // The first phase (in apply order) with an object that is not ready is where the install stands.
            let mut first_pending: Option<(Phase, String)> = None;
            let mut entries: Vec<_> = inv.entries.iter().collect();
            entries.sort_by_key(|(_, phase)| **phase);
            for (key, phase) in entries {
                let r = match resolver.resolve_key(key) {
                    None => Readiness::NotFound,
                    Some(kind) => {
                        let api: Api<DynamicObject> = match &key.namespace {
                            Some(ns) if kind.namespaced => {
                                Api::namespaced_with(client.clone(), ns, &kind.resource)
                            }
                            _ => Api::all_with(client.clone(), &kind.resource),
                        };
                        match api.get_opt(&key.name).await {
                            Ok(Some(obj)) => readiness(&key.group, &key.kind, &obj),
                            Ok(None) => Readiness::NotFound,
                            Err(e) => Readiness::InProgress(format!("cannot read: {e}")),
                        }
                    }
                };
                if r.is_current() {
                    ready += 1;
                } else if first_pending.is_none() {
                    first_pending = Some((*phase, format!("{key}: {r}")));
                }
            }
            let state = match first_pending {
                None if last_error.is_empty() => "Installed".to_string(),
                None => "Installed (last attempt failed)".to_string(),
                Some((phase, what)) => format!(
                    "{}: {phase} ({what})",
                    if last_error.is_empty() {
                        "Progressing"
                    } else {
                        "Failing"
                    }
                ),
            };
            (state, format!("{ready}/{total}"))
        }
    };
    Row {
        provider: source.provider_name.clone(),
        kind: source.kind.label_value().to_string(),
        version: source.version.clone().unwrap_or_else(|| "-".into()),
        configmap: source.configmap.clone(),
        state,
        ready,
        last_error: if last_error.is_empty() {
            "-".into()
        } else {
            last_error
        },
    }
}

/// The failure the ClusterOperator reports for one transport ConfigMap. The installer's messages name it
/// as `ConfigMap <name>: <message>`, several joined by `; ` (see `status::conditions`); Degraded wins
/// over Available over Progressing because it carries the persistent failures.
fn last_error(conditions: &[Value], configmap: &str) -> String {
    let marker = format!("ConfigMap {configmap}: ");
    for type_ in ["Degraded", "Available", "Progressing"] {
        let Some(c) = conditions.iter().find(|c| c["type"] == type_) else {
            continue;
        };
        let message = c["message"].as_str().unwrap_or_default();
        if let Some(start) = message.find(&marker) {
            let rest = &message[start + marker.len()..];
            let end = rest.find("; ConfigMap ").unwrap_or(rest.len());
            let reason = c["reason"].as_str().unwrap_or_default();
            return format!("{reason}: {}", &rest[..end]);
        }
    }
    String::new()
}

/// Left-aligned columns; the last column is not padded.
fn table(header: &[&str], rows: Vec<Vec<String>>) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let all = std::iter::once(header.iter().map(|h| h.to_string()).collect::<Vec<_>>()).chain(rows);
    for row in all {
        let last = row.len() - 1;
        for (i, cell) in row.iter().enumerate() {
            if i == last {
                out.push_str(cell);
            } else {
                let _ = write!(out, "{cell:<w$}  ", w = widths[i]);
            }
        }
        let trimmed = out.trim_end_matches(' ').len();
        out.truncate(trimmed);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn last_error_is_the_configmaps_part_of_the_most_severe_condition() {
        let conditions = vec![
            json!({"type": "Available", "status": "False", "reason": "InvalidProviderManifests",
                "message": "ConfigMap aws: document 6 (Deployment openshift-cluster-api/capa): no image (attempt 1)"}),
            json!({"type": "Progressing", "status": "True", "reason": "Installing",
                "message": "cluster-api v1.11.3: waiting; aws v2.10.0: retrying after ConfigMap aws: document 6 (Deployment openshift-cluster-api/capa): no image (attempt 1)"}),
            json!({"type": "Degraded", "status": "True", "reason": "Forbidden",
                "message": "ConfigMap cluster-api: patch Deployment x: forbidden; a; b (attempt 3); ConfigMap gcp: other (attempt 4)"}),
        ];
        let cases = [
            (
                "aws",
                "InvalidProviderManifests: document 6 (Deployment openshift-cluster-api/capa): no image (attempt 1)",
            ),
            // A message with "; " inside stays whole up to the next ConfigMap.
            (
                "cluster-api",
                "Forbidden: patch Deployment x: forbidden; a; b (attempt 3)",
            ),
            ("gcp", "Forbidden: other (attempt 4)"),
            ("vsphere", ""),
        ];
        for (configmap, expected) in cases {
            assert_eq!(last_error(&conditions, configmap), expected, "{configmap}");
        }
        // "aws" must not match "openshift-cluster-api-aws".
        let other = vec![json!({"type": "Degraded", "reason": "ApplyFailed",
            "message": "ConfigMap openshift-cluster-api-aws: boom"})];
        assert_eq!(last_error(&other, "aws"), "");
    }

    #[test]
    fn table_pads_all_but_the_last_column() {
        let out = table(
            &["A", "LONGER", "LAST"],
            vec![
                vec!["xyz".into(), "1".into(), "".into()],
                vec!["x".into(), "22".into(), "msg".into()],
            ],
        );
        assert_eq!(out, "A    LONGER  LAST\nxyz  1\nx    22      msg\n");
    }
}
