//! The per-controller conditions the reference's current generation writes on its ClusterOperator
//! (its `operatorstatus` package): for a controller `<Name>` (`InstallerController`,
//! `RevisionController`), `<Name>Progressing` after every reconcile and `<Name>Available` once it
//! knows, with the reason of how the reconcile ended. Its own aggregator, and tools written for it,
//! read them; a writer that replaces the reference keeps them true. Pure.
//!
//! The rules, as the reference applies them:
//! - a success: `Progressing=False` and `Available=True`, both `AsExpected`;
//! - progressing, waiting on something outside, or an error that is retried: `Progressing=True`,
//!   and `Available` as it was (not written at all before the first success or terminal error), so
//!   that a controller that was once available is not called unavailable by a transient state;
//! - an error that is not retried (it needs an administrator): `Progressing=False` and
//!   `Available=False`, both `NonRetryableError`.
//!
//! Transition times move on a new status, reason or message, as the reference moves them
//! ([`crate::conditions::render_moving_on_any_change`]), unlike this project's own conditions,
//! whose times move with the status only.

use serde_json::Value;

use crate::conditions::{self, Condition};

/// The suffix of a controller's availability condition.
pub const AVAILABLE: &str = "Available";
/// The suffix of a controller's progress condition.
pub const PROGRESSING: &str = "Progressing";

/// The reasons of a controller's conditions, the reference's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ControllerReason {
    AsExpected,
    Progressing,
    WaitingOnExternal,
    EphemeralError,
    NonRetryableError,
}

impl ControllerReason {
    pub const ALL: &[ControllerReason] = &[
        ControllerReason::AsExpected,
        ControllerReason::Progressing,
        ControllerReason::WaitingOnExternal,
        ControllerReason::EphemeralError,
        ControllerReason::NonRetryableError,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ControllerReason::AsExpected => "AsExpected",
            ControllerReason::Progressing => "Progressing",
            ControllerReason::WaitingOnExternal => "WaitingOnExternal",
            ControllerReason::EphemeralError => "EphemeralError",
            ControllerReason::NonRetryableError => "NonRetryableError",
        }
    }
}

/// How a controller's reconcile ended: the only input to its two conditions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ControllerResult {
    /// Everything it is responsible for is done.
    Success,
    /// It made progress and expects to be reconciled again; the message says what it waits for.
    Progressing(String),
    /// It waits for something another component provides (`what`: `Infrastructure PlatformStatus`).
    WaitingOnExternal(String),
    /// It failed and retries.
    EphemeralError(String),
    /// It failed and does not retry until its input changes.
    NonRetryableError(String),
}

/// The message of a success, the reference's.
pub const SUCCESS_MESSAGE: &str = "Success";

impl ControllerResult {
    fn progressing(&self) -> (bool, ControllerReason, String) {
        match self {
            ControllerResult::Success => (
                false,
                ControllerReason::AsExpected,
                SUCCESS_MESSAGE.to_string(),
            ),
            ControllerResult::Progressing(m) => (true, ControllerReason::Progressing, m.clone()),
            ControllerResult::WaitingOnExternal(what) => (
                true,
                ControllerReason::WaitingOnExternal,
                format!("Waiting on {what}"),
            ),
            ControllerResult::EphemeralError(m) => {
                (true, ControllerReason::EphemeralError, m.clone())
            }
            ControllerResult::NonRetryableError(m) => {
                (false, ControllerReason::NonRetryableError, m.clone())
            }
        }
    }

    /// `Available` when this result decides it; `None`: it stays as it was.
    fn available(&self) -> Option<(bool, ControllerReason, String)> {
        match self {
            ControllerResult::Success => Some((
                true,
                ControllerReason::AsExpected,
                SUCCESS_MESSAGE.to_string(),
            )),
            ControllerResult::NonRetryableError(m) => {
                Some((false, ControllerReason::NonRetryableError, m.clone()))
            }
            _ => None,
        }
    }
}

/// `<controller>Progressing` and (when decided now or known before) `<controller>Available` for
/// `result`; `live_status` is the ClusterOperator's status now, from which an undecided
/// `Available` is kept as it is.
pub fn conditions(
    controller: &str,
    result: &ControllerResult,
    live_status: Option<&Value>,
) -> Vec<Condition> {
    let (status, reason, message) = result.progressing();
    let mut out = vec![Condition::new(
        format!("{controller}{PROGRESSING}"),
        status,
        reason.as_str().to_string(),
        message,
    )];
    let available_type = format!("{controller}{AVAILABLE}");
    let available = match result.available() {
        Some((status, reason, message)) => Some(Condition::new(
            available_type,
            status,
            reason.as_str().to_string(),
            message,
        )),
        None => conditions::find(live_status, &available_type).map(|live| {
            let text = |key: &str| live.get(key).and_then(Value::as_str).unwrap_or_default();
            Condition::new(
                available_type.clone(),
                text("status") == "True",
                text("reason").to_string(),
                text("message"),
            )
        }),
    };
    out.extend(available);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn get<'a>(cs: &'a [Condition], t: &str) -> Option<&'a Condition> {
        cs.iter().find(|c| c.type_ == t)
    }

    #[test]
    fn success_decides_both() {
        let cs = conditions("InstallerController", &ControllerResult::Success, None);
        let p = get(&cs, "InstallerControllerProgressing").unwrap();
        assert_eq!((p.status, p.reason.as_str()), (false, "AsExpected"));
        let a = get(&cs, "InstallerControllerAvailable").unwrap();
        assert_eq!(
            (a.status, a.reason.as_str(), a.message.as_str()),
            (true, "AsExpected", "Success")
        );
    }

    #[test]
    fn a_transient_state_leaves_available_as_it_was() {
        // Before any success, there is no Available at all.
        let waiting = ControllerResult::WaitingOnExternal("Infrastructure PlatformStatus".into());
        let cs = conditions("RevisionController", &waiting, None);
        assert_eq!(cs.len(), 1, "{cs:?}");
        assert_eq!(cs[0].type_, "RevisionControllerProgressing");
        assert_eq!(
            (cs[0].status, cs[0].reason.as_str(), cs[0].message.as_str()),
            (
                true,
                "WaitingOnExternal",
                "Waiting on Infrastructure PlatformStatus"
            )
        );
        // Once available, an error that is retried keeps it so.
        let live = json!({"conditions": [
            {"type": "RevisionControllerAvailable", "status": "True", "reason": "AsExpected",
             "message": "Success", "lastTransitionTime": "2026-01-01T00:00:00Z"}]});
        let cs = conditions(
            "RevisionController",
            &ControllerResult::EphemeralError("writing: conflict".into()),
            Some(&live),
        );
        let p = get(&cs, "RevisionControllerProgressing").unwrap();
        assert_eq!((p.status, p.reason.as_str()), (true, "EphemeralError"));
        let a = get(&cs, "RevisionControllerAvailable").unwrap();
        assert_eq!(
            (a.status, a.reason.as_str(), a.message.as_str()),
            (true, "AsExpected", "Success")
        );
        // And a rendered Available keeps its transition time.
        let rendered = conditions::render(&cs, Some(&live), "2026-02-02T00:00:00Z");
        assert_eq!(rendered[1]["lastTransitionTime"], "2026-01-01T00:00:00Z");
    }

    #[test]
    fn a_terminal_error_is_unavailable_and_not_progressing() {
        let live = json!({"conditions": [
            {"type": "InstallerControllerAvailable", "status": "True", "reason": "AsExpected"}]});
        let cs = conditions(
            "InstallerController",
            &ControllerResult::NonRetryableError("rolled back".into()),
            Some(&live),
        );
        for (t, status) in [
            ("InstallerControllerProgressing", false),
            ("InstallerControllerAvailable", false),
        ] {
            let c = get(&cs, t).unwrap();
            assert_eq!(
                (c.status, c.reason.as_str(), c.message.as_str()),
                (status, "NonRetryableError", "rolled back"),
                "{t}"
            );
        }
    }
}
