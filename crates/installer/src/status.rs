//! The `ClusterOperator/cluster-api` status the installer reports, computed from what it did. Pure: the
//! controller feeds in provider states and writes the result only when it differs from the live status.

use std::time::Duration;

use serde_json::{Value, json};

/// Failure reasons, one per kind of problem an administrator acts on differently. They appear as the
/// reason of `Degraded` (and of `Available` when nothing usable is installed) and as metric labels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FailureReason {
    /// The transport ConfigMap or its components cannot be decoded, parsed, rendered or validated.
    InvalidProviderManifests,
    /// The API server refused a request for lack of permission.
    Forbidden,
    /// An object exists and is managed by someone else; the installer does not take it over.
    OwnershipConflict,
    /// The API server rejected an object or a request failed.
    ApplyFailed,
    /// A Deployment did not become Available in time.
    DeploymentNotAvailable,
    /// A CustomResourceDefinition did not become Established in time.
    CustomResourceDefinitionNotEstablished,
    /// Objects a new version dropped could not be deleted.
    PruneFailed,
}

impl FailureReason {
    pub fn as_str(self) -> &'static str {
        match self {
            FailureReason::InvalidProviderManifests => "InvalidProviderManifests",
            FailureReason::Forbidden => "Forbidden",
            FailureReason::OwnershipConflict => "OwnershipConflict",
            FailureReason::ApplyFailed => "ApplyFailed",
            FailureReason::DeploymentNotAvailable => "DeploymentNotAvailable",
            FailureReason::CustomResourceDefinitionNotEstablished => {
                "CustomResourceDefinitionNotEstablished"
            }
            FailureReason::PruneFailed => "PruneFailed",
        }
    }
}

/// Where one provider (one transport ConfigMap) stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProviderState {
    /// Every object is applied and ready.
    Installed,
    /// Applying, or waiting for a readiness gate.
    Progressing { message: String },
    /// Not started: an earlier provider (core before infrastructure) has not completed.
    Blocked { behind: String },
    /// The last attempt failed. `previously_installed` says whether an earlier version is still in place
    /// (a bad new version applies nothing, so the old one keeps serving).
    Failed {
        reason: FailureReason,
        message: String,
        attempts: u32,
        failing_for: Duration,
        previously_installed: bool,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProviderStatus {
    pub configmap: String,
    pub provider_name: String,
    pub version: Option<String>,
    pub state: ProviderState,
}

/// What the controller knows at the end of a reconcile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InstallerView {
    WaitingForPlatform,
    Unsupported {
        platform: String,
        reason: String,
    },
    Installing {
        platform: String,
        /// Core and infrastructure ConfigMaps that the platform needs but that do not exist (yet).
        missing: Vec<String>,
        providers: Vec<ProviderStatus>,
    },
}

/// A failure becomes `Degraded=True` only once it persists, never on one transient error.
pub const DEGRADED_AFTER_ATTEMPTS: u32 = 3;
pub const DEGRADED_AFTER: Duration = Duration::from_secs(120);

pub const NOT_IMPLEMENTED_MESSAGE: &str = "Cluster API is not yet implemented on this platform";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Condition {
    pub type_: &'static str,
    pub status: bool,
    pub reason: String,
    pub message: String,
}

/// The four top-level conditions plus the reference's installer conditions, in a fixed order.
pub fn conditions(view: &InstallerView) -> Vec<Condition> {
    let c = |type_, status, reason: &str, message: String| Condition {
        type_,
        status,
        reason: reason.to_string(),
        message,
    };
    let (available, progressing, degraded) = match view {
        InstallerView::WaitingForPlatform => {
            let m = "waiting for status.platformStatus.type of Infrastructure cluster".to_string();
            (
                c("Available", false, "WaitingForPlatform", m.clone()),
                c("Progressing", true, "WaitingForPlatform", m),
                c("Degraded", false, "AsExpected", String::new()),
            )
        }
        InstallerView::Unsupported { platform, reason } => {
            let m = format!("{NOT_IMPLEMENTED_MESSAGE} ({platform}: {reason})");
            (
                c("Available", true, "PlatformNotSupported", m),
                c("Progressing", false, "AsExpected", String::new()),
                c("Degraded", false, "AsExpected", String::new()),
            )
        }
        InstallerView::Installing {
            platform,
            missing,
            providers,
        } => installing(platform, missing, providers),
    };
    let upgradeable = if degraded.status {
        c(
            "Upgradeable",
            false,
            "InstallerDegraded",
            "the installer is degraded; see the Degraded condition".into(),
        )
    } else {
        c("Upgradeable", true, "AsExpected", String::new())
    };
    // The reference's own pair, kept for consumers that read them (ref §2.8).
    let installer_available = c(
        "CapiInstallerControllerAvailable",
        available.status,
        if available.status {
            "AsExpected"
        } else {
            &available.reason
        },
        available.message.clone(),
    );
    let installer_degraded = c(
        "CapiInstallerControllerDegraded",
        degraded.status,
        if degraded.status {
            "SyncingFailed"
        } else {
            "AsExpected"
        },
        degraded.message.clone(),
    );
    vec![
        available,
        progressing,
        degraded,
        upgradeable,
        installer_available,
        installer_degraded,
    ]
}

fn installing(
    platform: &str,
    missing: &[String],
    providers: &[ProviderStatus],
) -> (Condition, Condition, Condition) {
    let describe = |p: &ProviderStatus| match &p.version {
        Some(v) => format!("{} {v}", p.provider_name),
        None => p.provider_name.clone(),
    };
    let persistent: Vec<&ProviderStatus> = providers
        .iter()
        .filter(|p| {
            matches!(p.state, ProviderState::Failed { attempts, failing_for, .. }
            if attempts >= DEGRADED_AFTER_ATTEMPTS || failing_for >= DEGRADED_AFTER)
        })
        .collect();
    let failed: Vec<&ProviderStatus> = providers
        .iter()
        .filter(|p| matches!(p.state, ProviderState::Failed { .. }))
        .collect();
    let serving = |p: &&ProviderStatus| match &p.state {
        ProviderState::Installed => true,
        ProviderState::Failed {
            previously_installed,
            ..
        } => *previously_installed,
        _ => false,
    };
    let all_serving =
        missing.is_empty() && !providers.is_empty() && providers.iter().all(|p| serving(&p));

    let failure_message = |p: &ProviderStatus| match &p.state {
        ProviderState::Failed {
            message, attempts, ..
        } => {
            format!("ConfigMap {}: {message} (attempt {attempts})", p.configmap)
        }
        _ => String::new(),
    };
    let first_reason = |list: &[&ProviderStatus]| {
        list.iter()
            .find_map(|p| match p.state {
                ProviderState::Failed { reason, .. } => Some(reason.as_str()),
                _ => None,
            })
            .unwrap_or("AsExpected")
    };

    let degraded = if persistent.is_empty() {
        Condition {
            type_: "Degraded",
            status: false,
            reason: "AsExpected".into(),
            message: String::new(),
        }
    } else {
        Condition {
            type_: "Degraded",
            status: true,
            reason: first_reason(&persistent).into(),
            message: persistent
                .iter()
                .map(|p| failure_message(p))
                .collect::<Vec<_>>()
                .join("; "),
        }
    };

    let mut waiting: Vec<String> = Vec::new();
    if !missing.is_empty() {
        waiting.push(format!(
            "waiting for transport ConfigMaps: {}",
            missing.join(", ")
        ));
    }
    for p in providers {
        match &p.state {
            ProviderState::Progressing { message } => {
                waiting.push(format!("{}: {message}", describe(p)))
            }
            ProviderState::Failed { .. }
                if !persistent.iter().any(|d| d.configmap == p.configmap) =>
            {
                waiting.push(format!(
                    "{}: retrying after {}",
                    describe(p),
                    failure_message(p)
                ))
            }
            _ => {}
        }
    }
    let progressing = if waiting.is_empty() {
        Condition {
            type_: "Progressing",
            status: false,
            reason: "AsExpected".into(),
            message: String::new(),
        }
    } else {
        let reason = if missing.is_empty() {
            "Installing"
        } else {
            "WaitingForProviderConfigMaps"
        };
        Condition {
            type_: "Progressing",
            status: true,
            reason: reason.into(),
            message: waiting.join("; "),
        }
    };

    let available = if all_serving {
        let installed: Vec<String> = providers.iter().map(describe).collect();
        Condition {
            type_: "Available",
            status: true,
            reason: "AsExpected".into(),
            message: format!(
                "Cluster API is installed on {platform}: {}",
                installed.join(", ")
            ),
        }
    } else if !failed.is_empty() {
        Condition {
            type_: "Available",
            status: false,
            reason: first_reason(&failed).into(),
            message: failed
                .iter()
                .map(|p| failure_message(p))
                .collect::<Vec<_>>()
                .join("; "),
        }
    } else {
        let reason = if missing.is_empty() {
            "Installing"
        } else {
            "WaitingForProviderConfigMaps"
        };
        Condition {
            type_: "Available",
            status: false,
            reason: reason.into(),
            message: if waiting.is_empty() {
                "installing".into()
            } else {
                waiting.join("; ")
            },
        }
    };
    (available, progressing, degraded)
}

/// Builds the `status` of the ClusterOperator, keeping `lastTransitionTime` of every condition whose
/// status did not change, so that an unchanged world produces an identical status (and no write).
pub fn cluster_operator_status(
    conditions: &[Condition],
    current: Option<&Value>,
    now: &str,
    version: Option<&str>,
    related_objects: &[Value],
) -> Value {
    let current_conditions = current
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array);
    let rendered: Vec<Value> = conditions
        .iter()
        .map(|c| {
            let status = if c.status { "True" } else { "False" };
            let since = current_conditions
                .and_then(|cs| cs.iter().find(|x| x["type"] == c.type_))
                .filter(|x| x["status"] == status)
                .and_then(|x| x.get("lastTransitionTime").cloned())
                .unwrap_or_else(|| Value::String(now.to_string()));
            let mut condition = json!({
                "type": c.type_,
                "status": status,
                "reason": c.reason,
                "lastTransitionTime": since,
            });
            if !c.message.is_empty() {
                condition["message"] = Value::String(c.message.clone());
            }
            condition
        })
        .collect();
    let mut status = json!({ "conditions": rendered, "relatedObjects": related_objects });
    // OpenShift reports an operator's version once it has rolled out; while installing, the version of
    // the previous report stays.
    let available = conditions
        .iter()
        .any(|c| c.type_ == "Available" && c.status);
    match (available, version) {
        (true, Some(v)) => status["versions"] = json!([{ "name": "operator", "version": v }]),
        _ => {
            if let Some(previous) = current.and_then(|s| s.get("versions")) {
                status["versions"] = previous.clone();
            }
        }
    }
    status
}

/// Whether two statuses differ in anything but `lastTransitionTime` (linkerd's rule: writing only
/// timestamps is noise, and the installer promises zero writes in steady state).
pub fn differs(a: Option<&Value>, b: &Value) -> bool {
    fn strip(v: &Value) -> Value {
        let mut v = v.clone();
        if let Some(conditions) = v.get_mut("conditions").and_then(Value::as_array_mut) {
            for c in conditions {
                if let Some(m) = c.as_object_mut() {
                    m.remove("lastTransitionTime");
                }
            }
        }
        if let Some(m) = v.as_object_mut() {
            m.retain(|_, x| !x.is_null() && *x != json!([]));
        }
        v
    }
    match a {
        None => true,
        Some(a) => strip(a) != strip(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider(name: &str, state: ProviderState) -> ProviderStatus {
        ProviderStatus {
            configmap: name.into(),
            provider_name: name.into(),
            version: Some("v1.0.0".into()),
            state,
        }
    }

    fn failed(attempts: u32, secs: u64, previously_installed: bool) -> ProviderState {
        ProviderState::Failed {
            reason: FailureReason::InvalidProviderManifests,
            message: "document 3 (Deployment openshift-cluster-api/x): bad".into(),
            attempts,
            failing_for: Duration::from_secs(secs),
            previously_installed,
        }
    }

    fn get<'a>(cs: &'a [Condition], t: &str) -> &'a Condition {
        cs.iter().find(|c| c.type_ == t).unwrap()
    }

    fn installing(providers: Vec<ProviderStatus>) -> Vec<Condition> {
        conditions(&InstallerView::Installing {
            platform: "AWS".into(),
            missing: vec![],
            providers,
        })
    }

    #[test]
    fn installed_providers_are_available() {
        let cs = installing(vec![
            provider("cluster-api", ProviderState::Installed),
            provider("aws", ProviderState::Installed),
        ]);
        assert!(get(&cs, "Available").status);
        assert_eq!(
            get(&cs, "Available").message,
            "Cluster API is installed on AWS: cluster-api v1.0.0, aws v1.0.0"
        );
        assert!(!get(&cs, "Progressing").status);
        assert!(!get(&cs, "Degraded").status);
        assert!(get(&cs, "Upgradeable").status);
        assert!(get(&cs, "CapiInstallerControllerAvailable").status);
        assert_eq!(
            get(&cs, "CapiInstallerControllerDegraded").reason,
            "AsExpected"
        );
    }

    #[test]
    fn one_failure_is_not_degraded_but_a_persistent_one_is() {
        let transient = installing(vec![provider("cluster-api", failed(1, 5, false))]);
        assert!(!get(&transient, "Degraded").status);
        assert!(get(&transient, "Progressing").status);
        assert!(get(&transient, "Progressing").message.contains("retrying"));
        assert_eq!(
            get(&transient, "Available").reason,
            "InvalidProviderManifests"
        );

        for (attempts, secs) in [(3, 5), (1, 121)] {
            let persistent =
                installing(vec![provider("cluster-api", failed(attempts, secs, false))]);
            let degraded = get(&persistent, "Degraded");
            assert!(degraded.status, "{attempts} attempts over {secs}s");
            assert_eq!(degraded.reason, "InvalidProviderManifests");
            assert!(
                degraded
                    .message
                    .contains("ConfigMap cluster-api: document 3"),
                "{}",
                degraded.message
            );
            assert!(!get(&persistent, "Upgradeable").status);
            assert_eq!(
                get(&persistent, "CapiInstallerControllerDegraded").reason,
                "SyncingFailed"
            );
        }
    }

    #[test]
    fn a_bad_new_version_keeps_the_old_one_available() {
        let cs = installing(vec![
            provider("cluster-api", ProviderState::Installed),
            provider("aws", failed(5, 300, true)),
        ]);
        assert!(get(&cs, "Available").status);
        assert!(get(&cs, "Degraded").status);
    }

    #[test]
    fn waiting_providers_are_progressing() {
        let cs = installing(vec![
            provider(
                "cluster-api",
                ProviderState::Progressing {
                    message:
                        "waiting for Deployment openshift-cluster-api/capi to become Available"
                            .into(),
                },
            ),
            provider(
                "aws",
                ProviderState::Blocked {
                    behind: "cluster-api".into(),
                },
            ),
        ]);
        assert!(!get(&cs, "Available").status);
        assert_eq!(get(&cs, "Progressing").reason, "Installing");
        assert!(
            get(&cs, "Progressing")
                .message
                .contains("Deployment openshift-cluster-api/capi")
        );
        let missing = conditions(&InstallerView::Installing {
            platform: "AWS".into(),
            missing: vec!["aws (infrastructure)".into()],
            providers: vec![provider("cluster-api", ProviderState::Installed)],
        });
        assert_eq!(
            get(&missing, "Progressing").reason,
            "WaitingForProviderConfigMaps"
        );
        assert!(!get(&missing, "Available").status);
    }

    #[test]
    fn unsupported_platform_is_available_with_the_reference_message() {
        let cs = conditions(&InstallerView::Unsupported {
            platform: "Nutanix".into(),
            reason: "no provider".into(),
        });
        let available = get(&cs, "Available");
        assert!(available.status);
        assert!(available.message.starts_with(NOT_IMPLEMENTED_MESSAGE));
        assert!(!get(&cs, "Progressing").status && !get(&cs, "Degraded").status);
    }

    #[test]
    fn unchanged_conditions_keep_their_transition_time_and_compare_equal() {
        let cs = installing(vec![provider("cluster-api", ProviderState::Installed)]);
        let first = cluster_operator_status(&cs, None, "2026-01-01T00:00:00Z", Some("4.21.0"), &[]);
        assert_eq!(first["versions"][0]["version"], "4.21.0");
        let second = cluster_operator_status(
            &cs,
            Some(&first),
            "2026-01-01T00:05:00Z",
            Some("4.21.0"),
            &[],
        );
        assert_eq!(first, second);
        assert!(!differs(Some(&first), &second));

        let failing = installing(vec![provider("cluster-api", failed(9, 999, false))]);
        let third = cluster_operator_status(
            &failing,
            Some(&second),
            "2026-01-01T00:10:00Z",
            Some("4.22.0"),
            &[],
        );
        assert!(differs(Some(&second), &third));
        let degraded = third["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "Degraded")
            .unwrap();
        assert_eq!(degraded["lastTransitionTime"], "2026-01-01T00:10:00Z");
        // Not available: the version stays what was last rolled out.
        assert_eq!(third["versions"][0]["version"], "4.21.0");
    }
}
