//! `capi-installer status`: what the installer has installed, read from the cluster: one row per
//! provider (the sources selected for the cluster's platform), how many of its recorded objects are
//! ready, its last error (from the provider's record, kept with its inventory), and the
//! ClusterOperator's conditions. Read-only.

use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::{Context, Result};
use capi_apply::{Inventory, KindResolver, Phase, Readiness, readiness};
use capi_cluster_controllers::ControllerKind;
use capi_installer_controller::desired::{self, Desired, Wants};
use capi_installer_controller::inventory::ProviderRecord;
use capi_installer_controller::names::INVENTORY_CONFIGMAP;
use capi_installer_controller::source::{
    self, ProviderSource, Selection, SourceId, Target, configmap,
};
use capi_manifests::ProviderType;
use capi_openshift::resources::api_resource;
use capi_openshift::{
    CLUSTER_OPERATOR_NAME as CLUSTER_OPERATOR, INFRASTRUCTURE, INFRASTRUCTURE_NAME,
    cluster_operator,
};
use capi_runtime::report::exit;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, ListParams};
use serde_json::Value;

use crate::namespace_args::NamespaceArgs;

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Output {
    /// Tables for people.
    Text,
    /// One JSON document: every table as a list of objects keyed by its columns, the
    /// ClusterOperator's status as it is.
    Json,
    /// The JSON document as YAML.
    Yaml,
}

#[derive(clap::Args)]
pub struct StatusArgs {
    #[command(flatten)]
    kube: capi_runtime::args::KubeArgs,
    #[command(flatten)]
    namespaces: NamespaceArgs,
    /// `text` for people; `json` or `yaml` for scripts (the exit code is the same).
    #[arg(short, long, value_enum, default_value = "text", value_name = "FORMAT")]
    output: Output,
}

/// One row of the provider table.
struct Row {
    provider: String,
    kind: String,
    version: String,
    /// A ConfigMap's name, or `profile <image>/<profile>`.
    source: String,
    state: String,
    ready: String,
    last_error: String,
}

/// Exit code 0 when the ClusterOperator is Available and not Degraded, 1 otherwise (missing included),
/// so that scripts can wait on it; 2 when the cluster cannot be read.
pub async fn main(args: StatusArgs) -> Result<ExitCode> {
    let client = crate::connect(&args.kube).await?;
    let infra_api: Api<DynamicObject> =
        Api::all_with(client.clone(), &api_resource(&INFRASTRUCTURE));
    let infra = infra_api
        .get_opt(INFRASTRUCTURE_NAME)
        .await
        .context("reading Infrastructure cluster")?;
    let co = cluster_operator::api(&client)
        .get_opt(CLUSTER_OPERATOR)
        .await
        .with_context(|| format!("reading ClusterOperator {CLUSTER_OPERATOR}"))?;

    let status = infra.as_ref().and_then(|i| i.data.get("status"));
    let requests = crate::status_providers::requests(&client).await?;
    let requested: Vec<_> = requests.iter().map(|(r, _)| r.clone()).collect();
    let extra = desired::requests(desired::platform_provider(status), &requested).install;
    let desired = desired::desired(status, &extra);
    let providers = match &desired {
        Desired::Install(wants) => Some(providers(&client, &args.namespaces, wants).await?),
        _ => None,
    };
    let requests = crate::status_providers::requests_table(&requests);
    let installer_namespace = &args.namespaces.installer.installer_namespace;
    let revisions = crate::status_providers::revisions(&client, installer_namespace).await?;
    let controllers = controllers_table(co.as_ref());
    let processes = pods(&client, &args.namespaces).await?;
    let out = match args.output {
        Output::Text => {
            let mut out = platform_line(&desired);
            if let Some((providers, none_selected)) = &providers {
                out.push('\n');
                out.push_str(&providers.table());
                if *none_selected {
                    let _ = writeln!(
                        out,
                        "(no transport ConfigMaps or recorded profiles for this platform in namespace {})",
                        args.namespaces.namespace
                    );
                }
            }
            for section in [&requests, &revisions] {
                out.push('\n');
                out.push_str(&section.text());
            }
            out.push('\n');
            out.push_str(&operator(co.as_ref()));
            for section in [&controllers, &processes] {
                out.push('\n');
                out.push_str(&section.text());
            }
            out
        }
        Output::Json | Output::Yaml => {
            let document = serde_json::json!({
                "platform": platform_line(&desired).trim_end(),
                "providers": providers.as_ref().map(|(p, _)| p.json()),
                "infrastructureProviders": requests.json(),
                "revisions": revisions.json(),
                "clusterOperator": co.as_ref().map(|co| serde_json::json!({
                    "name": CLUSTER_OPERATOR,
                    "status": co.data.get("status"),
                })),
                "controllers": controllers.json(),
                "processes": processes.json(),
                "healthy": healthy(co.as_ref()),
            });
            match args.output {
                Output::Yaml => capi_manifests::yaml::to_yaml("the status", &document)?,
                _ => format!("{}\n", serde_json::to_string_pretty(&document)?),
            }
        }
    };
    capi_runtime::report::write_stdout(out)?;
    Ok(if healthy(co.as_ref()) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(exit::FAILED)
    })
}

/// Whether the ClusterOperator says Available=True and not Degraded=True.
fn healthy(co: Option<&DynamicObject>) -> bool {
    let conditions = co
        .and_then(|c| c.data.pointer("/status/conditions"))
        .and_then(Value::as_array);
    let status = |type_: &str| {
        conditions
            .into_iter()
            .flatten()
            .find(|c| c["type"] == type_)
            .and_then(|c| c["status"].as_str())
    };
    status("Available") == Some("True") && status("Degraded") != Some("True")
}

/// The controllers pod's controllers, as `status` prints them.
#[cfg(test)]
fn controllers(co: Option<&DynamicObject>) -> String {
    controllers_table(co).text()
}

/// The controllers pod's controllers, from the two conditions each keeps on the ClusterOperator.
fn controllers_table(co: Option<&DynamicObject>) -> Table {
    let conditions: Vec<Value> = co
        .and_then(|co| co.data.pointer("/status/conditions"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let find = |t: &str| conditions.iter().find(|c| c["type"] == t);
    let text = |c: Option<&Value>, k: &str| {
        c.and_then(|c| c.get(k))
            .and_then(Value::as_str)
            .unwrap_or("-")
            .to_string()
    };
    let rows = ControllerKind::ALL
        .iter()
        .map(|kind| {
            let name = kind.name();
            let available = find(&format!("{name}Available"));
            let degraded = find(&format!("{name}Degraded"));
            let message = match (available, degraded) {
                (None, _) => "no conditions yet (is the capi-controllers pod running?)".to_string(),
                (_, Some(d)) if d["status"] == "True" => text(Some(d), "message"),
                (a, _) => text(a, "message"),
            };
            vec![
                name.trim_end_matches("Controller").to_string(),
                text(available, "status"),
                text(degraded, "status"),
                text(available, "reason"),
                message,
            ]
        })
        .collect();
    Table {
        title: "Controllers pod (capi-controllers)",
        empty: "",
        header: &["CONTROLLER", "AVAILABLE", "DEGRADED", "REASON", "MESSAGE"],
        rows,
    }
}

/// The installer's and the controllers pod's processes, each in its namespace: Deployment readiness
/// and who holds the Lease.
async fn pods(client: &kube::Client, namespaces: &NamespaceArgs) -> Result<Table> {
    let mut rows = Vec::new();
    for (namespace, name, lease) in [
        (
            &namespaces.installer.installer_namespace,
            "capi-installer",
            crate::LEASE_NAME,
        ),
        (
            &namespaces.namespace,
            "capi-controllers",
            capi_cluster_controllers::names::LEASE,
        ),
    ] {
        let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
        let leases: Api<Lease> = Api::namespaced(client.clone(), namespace);
        let deployment = deployments
            .get_opt(name)
            .await
            .with_context(|| format!("reading Deployment {namespace}/{name}"))?;
        let lease = leases
            .get_opt(lease)
            .await
            .with_context(|| format!("reading Lease {namespace}/{lease}"))?;
        rows.push(pod_row(name, deployment.as_ref(), lease.as_ref()));
    }
    Ok(Table {
        title: "",
        empty: "",
        header: &["PROCESS", "DEPLOYMENT", "LEADER", "RENEWED"],
        rows,
    })
}

fn pod_row(name: &str, deployment: Option<&Deployment>, lease: Option<&Lease>) -> Vec<String> {
    let ready = match deployment {
        None => "-".to_string(),
        Some(d) => {
            let ready = d
                .status
                .as_ref()
                .and_then(|s| s.ready_replicas)
                .unwrap_or(0);
            let wanted = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
            format!("{ready}/{wanted} ready")
        }
    };
    let spec = lease.and_then(|l| l.spec.as_ref());
    let holder = spec
        .and_then(|s| s.holder_identity.clone())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "-".into());
    let renewed = spec
        .and_then(|s| s.renew_time.as_ref())
        .map(|t| capi_openshift::time::rfc3339(t.0))
        .unwrap_or_else(|| "-".into());
    vec![name.to_string(), ready, holder, renewed]
}

fn platform_line(desired: &Desired) -> String {
    match desired {
        Desired::Install(wants) => {
            let infra: Vec<&str> = wants
                .providers
                .iter()
                .filter(|w| w.required && w.provider_type == ProviderType::Infrastructure)
                .map(|w| w.name.as_str())
                .collect();
            format!(
                "Platform: {} (infrastructure provider {})\n",
                wants.platform,
                infra.join(", ")
            )
        }
        Desired::Unsupported { platform, reason } => {
            format!("Platform: {platform} ({reason}; nothing is installed)\n")
        }
        Desired::WaitingForPlatform => {
            "Platform: not set yet (Infrastructure cluster has no status.platformStatus.type)\n"
                .to_string()
        }
    }
}

/// The provider table: one row per selected source (and the sources not reconciled); whether none is
/// selected.
async fn providers(
    client: &kube::Client,
    namespaces: &NamespaceArgs,
    wants: &Wants,
) -> Result<(Table, bool)> {
    let namespace = &namespaces.namespace;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let list = cms
        .list(&ListParams::default().labels(configmap::SELECTOR))
        .await
        .with_context(|| format!("listing transport ConfigMaps in namespace {namespace}"))?;
    let records = &namespaces.installer.installer_namespace;
    let inventory = Api::<ConfigMap>::namespaced(client.clone(), records)
        .get_opt(INVENTORY_CONFIGMAP)
        .await
        .with_context(|| format!("reading ConfigMap {records}/{INVENTORY_CONFIGMAP}"))?;
    let mut candidates: Vec<ProviderSource> =
        list.items.iter().filter_map(configmap::candidate).collect();
    candidates.extend(profile_candidates(inventory.as_ref()));
    let stored = stored_inventories(inventory.as_ref());
    let owners = stored
        .iter()
        .filter(|(_, inv)| !inv.entries.is_empty())
        .filter_map(|(key, _)| SourceId::from_inventory_key(key))
        .collect();
    let selection = source::select(&wants.providers, &candidates, &owners);
    let selected = &selection.targets;
    let resolver = KindResolver::discover(client)
        .await
        .context("API discovery")?;
    let mut rows = Vec::new();
    for target in selected {
        let r = provider_row(client, &resolver, target, inventory.as_ref()).await;
        rows.push(vec![
            r.provider,
            r.kind,
            r.version,
            r.source,
            r.state,
            r.ready,
            r.last_error,
        ]);
    }
    rows.extend(other_rows(&selection, &stored));
    let table = Table {
        title: "",
        empty: "",
        header: &[
            "PROVIDER",
            "TYPE",
            "VERSION",
            "SOURCE",
            "STATE",
            "READY",
            "LAST ERROR",
        ],
        rows,
    };
    Ok((table, selected.is_empty()))
}

/// Rows of the sources that are not reconciled: a second ConfigMap of a provider (refused), and
/// providers no longer selected whose objects are left in place.
fn other_rows(selection: &Selection, stored: &[(String, Inventory)]) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for refused in &selection.refused {
        let source = &refused.target.source;
        rows.push(vec![
            source.name.clone(),
            source.provider_type.label().to_string(),
            source.version.clone().unwrap_or_else(|| "-".into()),
            source_column(&source.id),
            format!("Refused (provided by {})", refused.kept),
            "-".into(),
            "-".into(),
        ]);
    }
    let selected_ids = selection.ids();
    for (key, inv) in stored {
        let Some(id) = SourceId::from_inventory_key(key) else {
            continue;
        };
        if selected_ids.contains(&id) || inv.entries.is_empty() {
            continue;
        }
        let record = ProviderRecord::read(inv).unwrap_or_default();
        rows.push(vec![
            or_dash(record.provider),
            or_dash(record.provider_type),
            record.version.unwrap_or_else(|| "-".into()),
            source_column(&id),
            "NotSelected (objects left in place)".into(),
            format!("-/{}", inv.entries.len()),
            "-".into(),
        ]);
    }
    rows
}

/// The profile sources the installer has recorded. Profiles live on the installer's pod, not in the
/// cluster; which provider each declares is known from the record kept with its inventory.
fn profile_candidates(inventory: Option<&ConfigMap>) -> Vec<ProviderSource> {
    let Some(data) = inventory.and_then(|cm| cm.data.as_ref()) else {
        return Vec::new();
    };
    data.iter()
        .filter_map(|(key, json)| {
            let id @ SourceId::Profile(_) = SourceId::from_inventory_key(key)? else {
                return None;
            };
            let record = ProviderRecord::read(&Inventory::from_json(key, json).ok()?)?;
            Some(ProviderSource {
                id,
                name: record.provider,
                provider_type: ProviderType::from_label(&record.provider_type)?,
                version: record.version,
                created: None,
            })
        })
        .collect()
}

/// Every readable inventory of the inventory ConfigMap, by key.
fn stored_inventories(inventory: Option<&ConfigMap>) -> Vec<(String, Inventory)> {
    inventory
        .and_then(|cm| cm.data.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|(key, json)| Some((key.clone(), Inventory::from_json(key, json).ok()?)))
        .collect()
}

/// The SOURCE column: a ConfigMap's name, or `profile <image>/<profile>`.
fn source_column(id: &SourceId) -> String {
    match id {
        SourceId::ConfigMap(name) => name.clone(),
        other => other.to_string(),
    }
}

fn or_dash(s: String) -> String {
    if s.is_empty() { "-".into() } else { s }
}

/// The ClusterOperator's conditions and versions.
fn operator(co: Option<&DynamicObject>) -> String {
    let Some(co) = co else {
        return format!(
            "ClusterOperator {CLUSTER_OPERATOR}: not found (the installer has not run yet)\n"
        );
    };
    let field = |c: &Value, k: &str| {
        c.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let list = |path: &str| {
        co.data
            .pointer(path)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let mut out = format!("ClusterOperator {CLUSTER_OPERATOR}:\n");
    let rows = list("/status/conditions")
        .iter()
        .map(|c| {
            ["type", "status", "reason", "lastTransitionTime", "message"]
                .map(|k| field(c, k))
                .to_vec()
        })
        .collect();
    out.push_str(&table(
        &["CONDITION", "STATUS", "REASON", "SINCE", "MESSAGE"],
        rows,
    ));
    for v in list("/status/versions") {
        let _ = writeln!(
            out,
            "version {}: {}",
            field(&v, "name"),
            field(&v, "version")
        );
    }
    out
}

async fn provider_row(
    client: &kube::Client,
    resolver: &KindResolver,
    target: &Target,
    inventory: Option<&ConfigMap>,
) -> Row {
    let source = &target.source;
    let key = source.id.inventory_key();
    let stored = inventory
        .and_then(|cm| cm.data.as_ref())
        .and_then(|d| d.get(&key))
        .map(|json| Inventory::from_json(&key, json));
    let record = stored
        .as_ref()
        .and_then(|s| s.as_ref().ok())
        .and_then(ProviderRecord::read);
    let last_error = record.as_ref().map(last_error).unwrap_or_default();
    let (state, ready) = match stored {
        Some(Err(e)) => (format!("inventory unreadable: {e}"), "-".to_string()),
        Some(Ok(inv)) if !inv.entries.is_empty() => {
            let (ready, first_pending) = readiness_of(client, resolver, &inv).await;
            (
                state(first_pending, !last_error.is_empty()),
                format!("{ready}/{}", inv.entries.len()),
            )
        }
        _ => ("NotInstalled".to_string(), "-".to_string()),
    };
    Row {
        provider: source.name.clone(),
        kind: source.provider_type.label().to_string(),
        version: source.version.clone().unwrap_or_else(|| "-".into()),
        source: source_column(&source.id),
        state,
        ready,
        last_error: if last_error.is_empty() {
            "-".into()
        } else {
            last_error
        },
    }
}

/// How many recorded objects are ready, and the first one that is not (in apply order), with its phase.
async fn readiness_of(
    client: &kube::Client,
    resolver: &KindResolver,
    inv: &Inventory,
) -> (usize, Option<(Phase, String)>) {
    let mut ready = 0;
    let mut first_pending = None;
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
    (ready, first_pending)
}

/// The STATE column: where the install stands is the first phase with an object that is not ready.
fn state(first_pending: Option<(Phase, String)>, failing: bool) -> String {
    match first_pending {
        None if !failing => "Installed".to_string(),
        None => "Installed (last attempt failed)".to_string(),
        Some((phase, what)) => format!(
            "{}: {phase} ({what})",
            if failing { "Failing" } else { "Progressing" }
        ),
    }
}

/// The LAST ERROR column, from the provider's record: `reason: message (attempt n)`.
fn last_error(record: &ProviderRecord) -> String {
    match &record.failure {
        Some(f) => format!("{}: {} (attempt {})", f.reason, f.message, f.attempts),
        None => String::new(),
    }
}

/// One table of the status: printed with its title for people, or as a list of objects keyed by its
/// columns (`LAST ERROR` → `lastError`) for scripts.
pub(crate) struct Table {
    /// The line above the table (none when empty).
    pub title: &'static str,
    /// What the title line says instead of a table without rows (a table without it prints its header).
    pub empty: &'static str,
    pub header: &'static [&'static str],
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// The title line and the table.
    pub fn text(&self) -> String {
        match (self.title, self.rows.is_empty() && !self.empty.is_empty()) {
            ("", _) => self.table(),
            (title, true) => format!("{title}: {}\n", self.empty),
            (title, false) => format!("{title}:\n{}", self.table()),
        }
    }

    /// The header and the rows in columns.
    pub fn table(&self) -> String {
        table(self.header, self.rows.clone())
    }

    /// The rows as objects keyed by the columns in lowerCamelCase.
    pub fn json(&self) -> Value {
        let keys: Vec<String> = self.header.iter().map(|h| camel(h)).collect();
        Value::Array(
            self.rows
                .iter()
                .map(|row| {
                    Value::Object(
                        keys.iter()
                            .cloned()
                            .zip(row.iter().map(|c| Value::String(c.clone())))
                            .collect(),
                    )
                })
                .collect(),
        )
    }
}

/// `LAST ERROR` → `lastError`.
fn camel(header: &str) -> String {
    let mut out = String::new();
    for (i, word) in header.split(' ').enumerate() {
        let lower = word.to_lowercase();
        if i == 0 {
            out.push_str(&lower);
        } else {
            let mut chars = lower.chars();
            out.extend(chars.next().map(|c| c.to_ascii_uppercase()));
            out.push_str(chars.as_str());
        }
    }
    out
}

/// Left-aligned columns; the last column is not padded.
pub(crate) fn table(header: &[&str], rows: Vec<Vec<String>>) -> String {
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

    #[test]
    fn state_and_last_error_come_from_the_record() {
        use capi_installer_controller::inventory::FailureRecord;
        let mut record = ProviderRecord {
            provider: "aws".into(),
            provider_type: "infrastructure".into(),
            source: "ConfigMap aws".into(),
            state: "Installed".into(),
            ..Default::default()
        };
        assert_eq!(last_error(&record), "");
        record.failure = Some(FailureRecord {
            reason: "Forbidden".into(),
            message: "apply Deployment ns/d: forbidden; and more".into(),
            attempts: 3,
            since: "2026-11-30T10:00:00Z".into(),
        });
        assert_eq!(
            last_error(&record),
            "Forbidden: apply Deployment ns/d: forbidden; and more (attempt 3)"
        );
        let pending = Some((Phase::Workloads, "Deployment ns/d: NotFound".to_string()));
        assert_eq!(state(None, false), "Installed");
        assert_eq!(state(None, true), "Installed (last attempt failed)");
        assert_eq!(
            state(pending.clone(), false),
            "Progressing: Workloads (Deployment ns/d: NotFound)"
        );
        assert_eq!(
            state(pending, true),
            "Failing: Workloads (Deployment ns/d: NotFound)"
        );
    }

    #[test]
    fn the_controllers_rows_come_from_their_conditions() {
        let co: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator", "metadata": {"name": "cluster-api"},
            "status": {"conditions": [
                {"type": "Available", "status": "True", "reason": "AsExpected"},
                {"type": "InfraClusterControllerAvailable", "status": "True", "reason": "AsExpected",
                 "message": "AWSCluster ns/x is in place"},
                {"type": "InfraClusterControllerDegraded", "status": "False", "reason": "AsExpected"},
                {"type": "SecretSyncControllerAvailable", "status": "False", "reason": "MissingSource",
                 "message": "Secret a/b: data.userData is not set"},
                {"type": "SecretSyncControllerDegraded", "status": "True", "reason": "MissingSource",
                 "message": "Secret a/b: data.userData is not set"}]}}))
        .unwrap();
        let out = controllers(Some(&co));
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "Controllers pod (capi-controllers):");
        assert!(lines[1].starts_with("CONTROLLER"), "{out}");
        let row = |name: &str| {
            lines
                .iter()
                .find(|l| l.split_whitespace().next() == Some(name))
                .map(|l| l.split_whitespace().collect::<Vec<_>>())
                .unwrap_or_else(|| panic!("no {name} row: {out}"))
        };
        assert_eq!(row("InfraCluster")[1..4], ["True", "False", "AsExpected"]);
        assert_eq!(row("SecretSync")[1..4], ["False", "True", "MissingSource"]);
        assert!(out.contains("data.userData is not set"), "{out}");
        assert_eq!(row("Kubeconfig")[1..3], ["-", "-"]);
        assert!(
            out.contains("is the capi-controllers pod running?"),
            "{out}"
        );
    }

    #[test]
    fn pod_rows_show_readiness_and_the_leader() {
        let deployment: Deployment = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "capi-controllers"}, "spec": {"replicas": 2, "selector": {},
            "template": {}}, "status": {"readyReplicas": 1}}))
        .unwrap();
        let lease: Lease = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "capi-controllers-leader"},
            "spec": {"holderIdentity": "capi-controllers-6d9f-x2", "renewTime": "2026-11-30T10:00:00.000000Z"}}))
        .unwrap();
        assert_eq!(
            pod_row("capi-controllers", Some(&deployment), Some(&lease)),
            [
                "capi-controllers",
                "1/2 ready",
                "capi-controllers-6d9f-x2",
                "2026-11-30T10:00:00Z"
            ]
        );
        assert_eq!(
            pod_row("capi-installer", None, None),
            ["capi-installer", "-", "-", "-"]
        );
    }

    #[test]
    fn healthy_means_available_and_not_degraded() {
        let co = |available: &str, degraded: &str| -> DynamicObject {
            serde_json::from_value(serde_json::json!({
                "apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
                "metadata": {"name": "cluster-api"},
                "status": {"conditions": [
                    {"type": "Available", "status": available},
                    {"type": "Degraded", "status": degraded}]}}))
            .unwrap()
        };
        assert!(healthy(Some(&co("True", "False"))));
        assert!(!healthy(Some(&co("True", "True"))));
        assert!(!healthy(Some(&co("False", "False"))));
        assert!(!healthy(None));
    }

    #[test]
    fn refused_and_unselected_sources_get_rows_of_their_own() {
        use capi_installer_controller::source::{ProviderSource, Refused};
        let aws = |id: &str| Target {
            source: ProviderSource {
                id: SourceId::ConfigMap(id.into()),
                name: "aws".into(),
                provider_type: ProviderType::Infrastructure,
                version: Some("v2.10.0".into()),
                created: None,
            },
            clusterctl_label: "infrastructure-aws".into(),
        };
        let selection = Selection {
            targets: vec![aws("aws")],
            missing: vec![],
            refused: vec![Refused {
                target: aws("aws-copy"),
                kept: SourceId::ConfigMap("aws".into()),
            }],
        };
        let mut gcp = Inventory::new("gcp");
        gcp.insert(
            capi_apply::ObjectKey::new("apps", "v1", "Deployment", Some("ns"), "capg"),
            Phase::Workloads,
        );
        gcp.record = Some(
            serde_json::json!({"provider": "gcp", "type": "infrastructure",
            "source": "ConfigMap gcp", "state": "Installed"}),
        );
        let stored = vec![
            ("aws".to_string(), Inventory::new("aws")),
            ("gcp".to_string(), gcp),
        ];
        let rows = other_rows(&selection, &stored);
        assert_eq!(
            rows,
            [
                vec![
                    "aws",
                    "infrastructure",
                    "v2.10.0",
                    "aws-copy",
                    "Refused (provided by ConfigMap aws)",
                    "-",
                    "-"
                ],
                vec![
                    "gcp",
                    "infrastructure",
                    "-",
                    "gcp",
                    "NotSelected (objects left in place)",
                    "-/1",
                    "-"
                ]
            ]
        );
    }

    #[test]
    fn tables_as_json_are_keyed_by_their_columns() {
        let t = Table {
            title: "T",
            empty: "none",
            header: &["PROVIDER", "LAST ERROR"],
            rows: vec![vec!["aws".into(), "-".into()]],
        };
        assert_eq!(
            t.json(),
            serde_json::json!([{"provider": "aws", "lastError": "-"}])
        );
        assert_eq!(t.text(), "T:\nPROVIDER  LAST ERROR\naws       -\n");
        let empty = Table { rows: vec![], ..t };
        assert_eq!(empty.text(), "T: none\n");
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
