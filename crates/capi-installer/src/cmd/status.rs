//! `capi-installer status`: what the installer has installed, read from the cluster: one row per
//! provider (the sources selected for the cluster's platform), how many of its recorded objects are
//! ready, its last error (from the provider's record, kept with its inventory), and the
//! ClusterOperator's conditions. Read-only.

mod providers;

use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::Result;
use capi_apply::Phase;
use capi_cluster_controllers::ControllerKind;
use capi_commands::status::{
    self, Installed, Namespaces, Process, ProcessRef, ProviderStatus, Providers, Unselected,
};
use capi_installer_controller::desired::Desired;
use capi_installer_controller::inventory::ProviderRecord;
use capi_installer_controller::source::{Refused, SourceId};
use capi_openshift::CLUSTER_OPERATOR_NAME as CLUSTER_OPERATOR;
use capi_runtime::report::exit;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::DynamicObject;
use serde_json::Value;

use crate::args::namespace::NamespaceArgs;
use crate::table::{Table, table};

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

/// Exit code 0 when the ClusterOperator is Available and not Degraded, 1 otherwise (missing included),
/// so that scripts can wait on it; 2 when the cluster cannot be read.
pub async fn main(args: StatusArgs) -> Result<ExitCode> {
    let client = crate::inputs::connect(&args.kube).await?;
    let namespaces = &args.namespaces;
    let processes = [
        ProcessRef {
            namespace: &namespaces.installer.installer_namespace,
            name: "capi-installer",
            lease: capi_installer_controller::policy::LEADER_LEASE,
        },
        // It keeps the installer's Deployment: when the installer's pods do not come, this is where
        // to look next.
        ProcessRef {
            namespace: &namespaces.installer.installer_namespace,
            name: "capi-installer-deployer",
            lease: capi_deployer::LEADER_LEASE,
        },
        ProcessRef {
            namespace: &namespaces.namespace,
            name: "capi-controllers",
            lease: capi_cluster_controllers::names::LEASE,
        },
    ];
    let status = status::read(
        &client,
        &Namespaces {
            providers: &namespaces.namespace,
            installer: &namespaces.installer.installer_namespace,
        },
        &processes,
    )
    .await?;
    let co = status.cluster_operator.as_ref();
    let providers = status.providers.as_ref().map(providers_table);
    let requests = providers::requests_table(&status.requests);
    let revisions = providers::revisions_table(&status.revisions);
    let controllers = controllers_table(co);
    let processes = processes_table(&status.processes);
    let out = match args.output {
        Output::Text => {
            let mut out = platform_line(&status.desired);
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
            out.push_str(&operator(co));
            for section in [&controllers, &processes] {
                out.push('\n');
                out.push_str(&section.text());
            }
            out
        }
        Output::Json | Output::Yaml => {
            let document = serde_json::json!({
                "platform": platform_line(&status.desired).trim_end(),
                "providers": providers.as_ref().map(|(p, _)| p.json()),
                "infrastructureProviders": requests.json(),
                "revisions": revisions.json(),
                "clusterOperator": co.map(|co| serde_json::json!({
                    "name": CLUSTER_OPERATOR,
                    "status": co.data.get("status"),
                })),
                "controllers": controllers.json(),
                "processes": processes.json(),
                "healthy": status.healthy(),
            });
            match args.output {
                Output::Yaml => capi_manifests::yaml::to_yaml("the status", &document)?,
                _ => format!("{}\n", serde_json::to_string_pretty(&document)?),
            }
        }
    };
    capi_runtime::report::write_stdout(out)?;
    Ok(if status.healthy() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(exit::FAILED)
    })
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

/// The installer's, its deployer's and the controllers pod's processes, each in its namespace: Deployment readiness
/// and who holds the Lease.
fn processes_table(processes: &[Process]) -> Table {
    Table {
        title: "",
        empty: "",
        header: &["PROCESS", "DEPLOYMENT", "LEADER", "RENEWED"],
        rows: processes
            .iter()
            .map(|p| pod_row(&p.name, p.deployment.as_ref(), p.lease.as_ref()))
            .collect(),
    }
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
            let infra = wants.required_infrastructure();
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
fn providers_table(providers: &Providers) -> (Table, bool) {
    let mut rows: Vec<Vec<String>> = providers.selected.iter().map(provider_row).collect();
    rows.extend(other_rows(&providers.refused, &providers.unselected));
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
    (table, providers.selected.is_empty())
}

/// Rows of the sources that are not reconciled: a second ConfigMap of a provider (refused), and
/// providers no longer selected whose objects are left in place.
fn other_rows(refused: &[Refused], unselected: &[Unselected]) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for refused in refused {
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
    for u in unselected {
        let record = &u.record;
        rows.push(vec![
            or_dash(record.provider.clone()),
            or_dash(record.provider_type.clone()),
            record.version.clone().unwrap_or_else(|| "-".into()),
            source_column(&u.id),
            "NotSelected (objects left in place)".into(),
            format!("-/{}", u.objects),
            "-".into(),
        ]);
    }
    rows
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

fn provider_row(p: &ProviderStatus) -> Vec<String> {
    let source = &p.source;
    let last_error = p.record.as_ref().map(last_error).unwrap_or_default();
    let (state, ready) = match &p.installed {
        Installed::Unreadable(e) => (format!("inventory unreadable: {e}"), "-".to_string()),
        Installed::Objects {
            ready,
            total,
            first_pending,
        } => (
            state(first_pending.clone(), !last_error.is_empty()),
            format!("{ready}/{total}"),
        ),
        Installed::Nothing => ("NotInstalled".to_string(), "-".to_string()),
    };
    vec![
        source.name.clone(),
        source.provider_type.label().to_string(),
        source.version.clone().unwrap_or_else(|| "-".into()),
        source_column(&source.id),
        state,
        ready,
        if last_error.is_empty() {
            "-".into()
        } else {
            last_error
        },
    ]
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

#[cfg(test)]
mod tests {
    use super::*;
    use capi_manifests::ProviderType;

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
    fn refused_and_unselected_sources_get_rows_of_their_own() {
        use capi_installer_controller::source::{ProviderSource, Target};
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
        let refused = [Refused {
            target: aws("aws-copy"),
            kept: SourceId::ConfigMap("aws".into()),
        }];
        let unselected = [Unselected {
            id: SourceId::ConfigMap("gcp".into()),
            record: ProviderRecord {
                provider: "gcp".into(),
                provider_type: "infrastructure".into(),
                source: "ConfigMap gcp".into(),
                state: "Installed".into(),
                ..Default::default()
            },
            objects: 1,
        }];
        let rows = other_rows(&refused, &unselected);
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
}
