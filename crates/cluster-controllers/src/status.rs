//! Each controller's two conditions on `ClusterOperator/cluster-api` (`<Controller>Available`,
//! `<Controller>Degraded`, as in the reference), computed from its last reconcile. Pure, except
//! [`write`].
//!
//! Several writers share the ClusterOperator's status: the installer (its own conditions, `versions`,
//! `relatedObjects`) and each controller here. `status.conditions` is a list-map keyed by `type`, so
//! with server-side apply each field manager owns exactly the entries it sends; a controller sends its
//! two conditions and nothing else (never `versions` or `relatedObjects`, atomic lists the installer
//! owns). A write happens only when the status, reason or message of one of them changed, and
//! `lastTransitionTime` moves only when the status did: in steady state nothing is written.

use capi_openshift::{CLUSTER_OPERATOR_NAME, cluster_operator, conditions};
use serde_json::{Value, json};

use crate::error::{ControllerError, FailureReason};

/// Reasons of a controller that is not failing.
pub(crate) const AS_EXPECTED: &str = "AsExpected";
pub(crate) const PLATFORM_NOT_SUPPORTED: &str = "PlatformNotSupported";
pub(crate) const EXTERNALLY_MANAGED: &str = "ExternallyManaged";

/// Why a controller waits (`Available=False`, not degraded: nothing is wrong yet).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wait {
    /// `Infrastructure/cluster` has no platform yet.
    Platform,
    /// A CRD the controller writes or reads is not Established (the installer installs it).
    CustomResourceDefinitions,
    /// The InfraCluster the Cluster refers to does not exist yet.
    InfraCluster,
    /// The object the controller copies does not exist yet (it is created during installation).
    Source,
}

impl Wait {
    pub(crate) fn reason(self) -> &'static str {
        match self {
            Wait::Platform => "WaitingForPlatform",
            Wait::CustomResourceDefinitions => "WaitingForCustomResourceDefinitions",
            Wait::InfraCluster => "WaitingForInfraCluster",
            Wait::Source => "WaitingForSource",
        }
    }
}

/// Where a controller stands after a reconcile: the only input to its conditions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum State {
    /// Its objects are in place.
    Done {
        message: String,
    },
    /// The platform has no Cluster API provider: nothing to do.
    PlatformNotSupported {
        message: String,
    },
    /// The object exists but belongs to someone else: left alone.
    ExternallyManaged {
        message: String,
    },
    Waiting {
        wait: Wait,
        message: String,
    },
    Failed {
        reason: FailureReason,
        message: String,
    },
}

impl State {
    pub(crate) fn failed(e: &ControllerError) -> State {
        State::Failed {
            reason: e.reason(),
            message: e.to_string(),
        }
    }
}

/// A controller's condition: its reason is a plain string (its own [`Wait`] reasons and
/// [`FailureReason`]s).
pub(crate) type Condition = conditions::Condition;

/// `<name>Available` and `<name>Degraded` for a state; `name` is e.g. `InfraClusterController`.
pub(crate) fn conditions(name: &str, state: &State) -> [Condition; 2] {
    let c = |suffix: &str, status: bool, reason: &str, message: &str| {
        Condition::new(
            format!("{name}{suffix}"),
            status,
            reason.to_string(),
            message,
        )
    };
    let not_degraded = c("Degraded", false, AS_EXPECTED, "");
    match state {
        State::Done { message } => [c("Available", true, AS_EXPECTED, message), not_degraded],
        State::PlatformNotSupported { message } => [
            c("Available", true, PLATFORM_NOT_SUPPORTED, message),
            not_degraded,
        ],
        State::ExternallyManaged { message } => [
            c("Available", true, EXTERNALLY_MANAGED, message),
            not_degraded,
        ],
        State::Waiting { wait, message } => {
            [c("Available", false, wait.reason(), message), not_degraded]
        }
        State::Failed { reason, message } => [
            c("Available", false, reason.as_str(), message),
            c("Degraded", true, reason.as_str(), message),
        ],
    }
}

/// The status patch that makes the live ClusterOperator status show `desired`, or `None` when it
/// already does (same status, reason and message). `lastTransitionTime` is kept from the live
/// condition when its status is unchanged. Only these conditions are sent: never `versions` or
/// `relatedObjects`.
pub(crate) fn patch(
    desired: &[Condition],
    live_status: Option<&Value>,
    now: &str,
) -> Option<Value> {
    let rendered = conditions::render(desired, live_status, now);
    if conditions::unchanged(live_status, &rendered) {
        return None;
    }
    Some(cluster_operator::with_status(
        json!({"conditions": rendered}),
    ))
}

/// Applies a patch from [`patch`] to the status subresource, as `field_manager`.
pub(crate) async fn write(
    client: &kube::Client,
    field_manager: &str,
    body: &Value,
) -> Result<(), ControllerError> {
    cluster_operator::apply_status(client, field_manager, body)
        .await
        .map(drop)
        .map_err(|e| {
            ControllerError::api(
                "apply status of",
                format!("ClusterOperator {CLUSTER_OPERATOR_NAME}"),
                e,
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cond<'a>(patch: &'a Value, t: &str) -> &'a Value {
        patch["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == t)
            .unwrap()
    }

    #[test]
    fn each_state_gives_its_two_conditions() {
        let failed = conditions(
            "SecretSyncController",
            &State::Failed {
                reason: FailureReason::MissingSource,
                message: "Secret x: data.userData is not set".into(),
            },
        );
        assert_eq!(failed[0].type_, "SecretSyncControllerAvailable");
        assert!(!failed[0].status);
        assert_eq!(failed[1].type_, "SecretSyncControllerDegraded");
        assert!(failed[1].status);
        assert_eq!(failed[1].reason, "MissingSource");

        let waiting = conditions(
            "CoreClusterController",
            &State::Waiting {
                wait: Wait::CustomResourceDefinitions,
                message: "m".into(),
            },
        );
        assert!(!waiting[0].status);
        assert_eq!(waiting[0].reason, "WaitingForCustomResourceDefinitions");
        assert!(!waiting[1].status, "waiting is not degraded");

        for state in [
            State::Done {
                message: "ok".into(),
            },
            State::PlatformNotSupported {
                message: "n".into(),
            },
            State::ExternallyManaged {
                message: "e".into(),
            },
        ] {
            let [a, d] = conditions("X", &state);
            assert!(a.status && !d.status, "{state:?}");
        }
    }

    #[test]
    fn writes_only_changes_and_keeps_transition_times() {
        let ok = conditions(
            "KubeconfigController",
            &State::Done {
                message: "m".into(),
            },
        );
        let first = patch(&ok, None, "2026-01-01T00:00:00Z").unwrap();
        assert_eq!(
            cond(&first, "KubeconfigControllerAvailable")["lastTransitionTime"],
            "2026-01-01T00:00:00Z"
        );
        // Only our two conditions are sent: never versions or relatedObjects.
        assert_eq!(
            first["status"]
                .as_object()
                .unwrap()
                .keys()
                .collect::<Vec<_>>(),
            ["conditions"]
        );

        // The live status holds them (plus the installer's): nothing to write.
        let mut live = first["status"].clone();
        live["conditions"]
            .as_array_mut()
            .unwrap()
            .push(json!({"type": "Available", "status": "True", "reason": "AsExpected"}));
        live["versions"] = json!([{"name": "operator", "version": "4.21"}]);
        assert_eq!(patch(&ok, Some(&live), "2026-02-02T00:00:00Z"), None);

        // A new message keeps the time; a new status moves it.
        let other = conditions(
            "KubeconfigController",
            &State::Done {
                message: "n".into(),
            },
        );
        let p = patch(&other, Some(&live), "2026-02-02T00:00:00Z").unwrap();
        assert_eq!(
            cond(&p, "KubeconfigControllerAvailable")["lastTransitionTime"],
            "2026-01-01T00:00:00Z"
        );
        let failed = conditions(
            "KubeconfigController",
            &State::Failed {
                reason: FailureReason::Forbidden,
                message: "f".into(),
            },
        );
        let p = patch(&failed, Some(&live), "2026-02-02T00:00:00Z").unwrap();
        assert_eq!(
            cond(&p, "KubeconfigControllerDegraded")["lastTransitionTime"],
            "2026-02-02T00:00:00Z"
        );
        assert_eq!(cond(&p, "KubeconfigControllerDegraded")["status"], "True");
    }
}
