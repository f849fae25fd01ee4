//! Status from outcomes: the ClusterOperator's conditions, `relatedObjects` and version, computed only
//! from what the providers' reconciles returned ([`Outcome`]). Pure, except [`operator::write`].

pub mod operator;

use std::collections::BTreeSet;
use std::time::Duration;

use capi_apply::Plan;
use serde_json::{Value, json};

use crate::desired::{Desired, Wanted};
use crate::error::Reason;
use crate::outcome::{Outcome, ProviderState};

/// A failure becomes `Degraded=True` only once it persists, never on one transient error.
pub const DEGRADED_AFTER_ATTEMPTS: u32 = 3;
pub const DEGRADED_AFTER: Duration = Duration::from_secs(120);

pub const NOT_IMPLEMENTED_MESSAGE: &str = "Cluster API is not yet implemented on this platform";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Condition {
    pub type_: &'static str,
    pub status: bool,
    pub reason: Reason,
    pub message: String,
}

fn condition(type_: &'static str, status: bool, reason: Reason, message: String) -> Condition {
    Condition {
        type_,
        status,
        reason,
        message,
    }
}

/// The four top-level conditions plus the reference's installer conditions, in a fixed order.
pub fn conditions(desired: &Desired, missing: &[Wanted], outcomes: &[Outcome]) -> Vec<Condition> {
    let (available, progressing, degraded) = match desired {
        Desired::WaitingForPlatform => {
            let m = "waiting for status.platformStatus.type of Infrastructure cluster".to_string();
            (
                condition("Available", false, Reason::WaitingForPlatform, m.clone()),
                condition("Progressing", true, Reason::WaitingForPlatform, m),
                condition("Degraded", false, Reason::AsExpected, String::new()),
            )
        }
        Desired::Unsupported { platform, reason } => {
            let m = format!("{NOT_IMPLEMENTED_MESSAGE} ({platform}: {reason})");
            (
                condition("Available", true, Reason::PlatformNotSupported, m),
                condition("Progressing", false, Reason::AsExpected, String::new()),
                condition("Degraded", false, Reason::AsExpected, String::new()),
            )
        }
        Desired::Install(wants) => (
            available(&wants.platform, missing, outcomes),
            progressing(missing, outcomes),
            degraded(outcomes),
        ),
    };
    let upgradeable = if degraded.status {
        condition(
            "Upgradeable",
            false,
            Reason::InstallerDegraded,
            "the installer is degraded; see the Degraded condition".into(),
        )
    } else {
        condition("Upgradeable", true, Reason::AsExpected, String::new())
    };
    // The reference's own pair, kept for consumers that read them (ref §2.8).
    let installer_available = condition(
        "CapiInstallerControllerAvailable",
        available.status,
        if available.status {
            Reason::AsExpected
        } else {
            available.reason
        },
        available.message.clone(),
    );
    let installer_degraded = condition(
        "CapiInstallerControllerDegraded",
        degraded.status,
        if degraded.status {
            Reason::SyncingFailed
        } else {
            Reason::AsExpected
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

/// Whether a failure has lasted long enough to degrade the operator.
fn persistent(o: &Outcome) -> bool {
    matches!(o.state, ProviderState::Failed { attempts, failing_for, .. }
        if attempts >= DEGRADED_AFTER_ATTEMPTS || failing_for >= DEGRADED_AFTER)
}

fn first_failure_reason<'a>(outcomes: impl IntoIterator<Item = &'a Outcome>) -> Reason {
    outcomes
        .into_iter()
        .find_map(|o| match &o.state {
            ProviderState::Failed { error, .. } => Some(error.reason()),
            _ => None,
        })
        .unwrap_or(Reason::AsExpected)
}

fn degraded(outcomes: &[Outcome]) -> Condition {
    let failing: Vec<&Outcome> = outcomes.iter().filter(|o| persistent(o)).collect();
    if failing.is_empty() {
        return condition("Degraded", false, Reason::AsExpected, String::new());
    }
    let message = failing
        .iter()
        .filter_map(|o| o.failure_message())
        .collect::<Vec<_>>()
        .join("; ");
    condition(
        "Degraded",
        true,
        first_failure_reason(failing.iter().copied()),
        message,
    )
}

/// What the installer is waiting for, one entry per provider (and one for missing sources).
fn waiting(missing: &[Wanted], outcomes: &[Outcome]) -> Vec<String> {
    let mut waiting = Vec::new();
    if !missing.is_empty() {
        let names: Vec<String> = missing.iter().map(Wanted::describe).collect();
        waiting.push(format!(
            "waiting for transport ConfigMaps: {}",
            names.join(", ")
        ));
    }
    for o in outcomes {
        let describe = o.target.source.describe();
        if let Some(message) = o.state.waiting_message() {
            waiting.push(format!("{describe}: {message}"));
        } else if let Some(failure) = o.failure_message().filter(|_| !persistent(o)) {
            waiting.push(format!("{describe}: retrying after {failure}"));
        }
    }
    waiting
}

fn waiting_reason(missing: &[Wanted]) -> Reason {
    if missing.is_empty() {
        Reason::Installing
    } else {
        Reason::WaitingForProviderConfigMaps
    }
}

fn progressing(missing: &[Wanted], outcomes: &[Outcome]) -> Condition {
    let waiting = waiting(missing, outcomes);
    if waiting.is_empty() {
        return condition("Progressing", false, Reason::AsExpected, String::new());
    }
    condition(
        "Progressing",
        true,
        waiting_reason(missing),
        waiting.join("; "),
    )
}

fn available(platform: &str, missing: &[Wanted], outcomes: &[Outcome]) -> Condition {
    let all_serving =
        missing.is_empty() && !outcomes.is_empty() && outcomes.iter().all(Outcome::serving);
    if all_serving {
        let installed: Vec<String> = outcomes
            .iter()
            .map(|o| o.target.source.describe())
            .collect();
        return condition(
            "Available",
            true,
            Reason::AsExpected,
            format!(
                "Cluster API is installed on {platform}: {}",
                installed.join(", ")
            ),
        );
    }
    let failed: Vec<String> = outcomes
        .iter()
        .filter_map(Outcome::failure_message)
        .collect();
    if !failed.is_empty() {
        return condition(
            "Available",
            false,
            first_failure_reason(outcomes),
            failed.join("; "),
        );
    }
    let waiting = waiting(missing, outcomes);
    let message = if waiting.is_empty() {
        "installing".to_string()
    } else {
        waiting.join("; ")
    };
    condition("Available", false, waiting_reason(missing), message)
}

/// `relatedObjects`: the namespace, then every provider's related objects without duplicates.
pub fn related(namespace: &str, outcomes: &[Outcome]) -> Vec<Value> {
    let mut seen = BTreeSet::new();
    let mut out = vec![json!({"group": "", "resource": "namespaces", "name": namespace})];
    for o in outcomes {
        for r in &o.related {
            if seen.insert(r.to_string()) {
                out.push(r.clone());
            }
        }
    }
    // Sorted as before: the order of providers must not reorder the list between reconciles.
    out[1..].sort_by_key(|v| v.to_string());
    out
}

/// `relatedObjects` entries for a plan: its cluster-scoped objects, and the instance kinds of its CRDs
/// (so `oc adm inspect` gathers the Cluster API resources too).
pub fn related_objects(plan: &Plan) -> Vec<Value> {
    let mut out = Vec::new();
    for o in plan.objects() {
        if !o.namespaced {
            out.push(json!({"group": o.resource.group, "resource": o.resource.plural, "name": o.key.name}));
        }
        if o.key.kind == "CustomResourceDefinition" {
            let spec = o.object.data.get("spec");
            if let (Some(group), Some(plural)) = (
                spec.and_then(|s| s.get("group")).and_then(Value::as_str),
                spec.and_then(|s| s.pointer("/names/plural"))
                    .and_then(Value::as_str),
            ) {
                out.push(json!({"group": group, "resource": plural, "name": ""}));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
