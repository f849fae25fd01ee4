//! Conditions as OpenShift's ClusterOperators and Kubernetes' `metav1.Condition` carry them: a type, a
//! status, a reason and a message, and `lastTransitionTime`, which moves only when the status does.
//!
//! Every writer here computes its desired conditions, renders them keeping the live transition times
//! ([`render`]), and writes only when the live status does not already show them ([`unchanged`]):
//! linkerd's rule, so that an unchanged world writes nothing and timestamps alone never cause a write.

use serde_json::{Value, json};

/// One condition as a controller decides it. `R` is the reason: a controller's own enum (anything
/// that reads as a string) or a plain `String`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Condition<R = String> {
    pub type_: String,
    pub status: bool,
    pub reason: R,
    pub message: String,
}

impl<R> Condition<R> {
    pub fn new(
        type_: impl Into<String>,
        status: bool,
        reason: R,
        message: impl Into<String>,
    ) -> Self {
        Condition {
            type_: type_.into(),
            status,
            reason,
            message: message.into(),
        }
    }
}

fn status_str(status: bool) -> &'static str {
    if status { "True" } else { "False" }
}

/// The conditions of a status object (`status.conditions` items), empty when there are none.
pub fn live(status: Option<&Value>) -> &[Value] {
    status
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// The live condition of `type_` in a status object.
pub fn find<'a>(status: Option<&'a Value>, type_: &str) -> Option<&'a Value> {
    live(status).iter().find(|c| c["type"] == type_)
}

/// Whether the status object has condition `type_` with status `True`.
pub fn is_true(status: Option<&Value>, type_: &str) -> bool {
    find(status, type_).is_some_and(|c| c["status"] == "True")
}

/// `conditions` as the API writes them, each keeping the `lastTransitionTime` of the live condition of
/// its type (in `live_status`, a status object) while its status is unchanged, `now` otherwise. An
/// empty message is left out.
pub fn render<R: AsRef<str>>(
    conditions: &[Condition<R>],
    live_status: Option<&Value>,
    now: &str,
) -> Vec<Value> {
    render_keeping(conditions, live_status, now, |live, c| {
        live["status"] == status_str(c.status)
    })
}

/// [`render`], where `lastTransitionTime` also moves on a new reason or message: the rule of the
/// reference's per-controller conditions (its `operatorstatus.MergeConditions`), which tools written
/// for it may read as "when did this controller last report something new".
pub fn render_moving_on_any_change<R: AsRef<str>>(
    conditions: &[Condition<R>],
    live_status: Option<&Value>,
    now: &str,
) -> Vec<Value> {
    render_keeping(conditions, live_status, now, |live, c| {
        live["status"] == status_str(c.status)
            && live["reason"] == c.reason.as_ref()
            && live.get("message").and_then(Value::as_str).unwrap_or("") == c.message
    })
}

/// The rendering of both rules: the live condition's time is kept while `same` holds of it.
fn render_keeping<R: AsRef<str>>(
    conditions: &[Condition<R>],
    live_status: Option<&Value>,
    now: &str,
    same: impl Fn(&Value, &Condition<R>) -> bool,
) -> Vec<Value> {
    conditions
        .iter()
        .map(|c| {
            let status = status_str(c.status);
            let since = find(live_status, &c.type_)
                .filter(|l| same(l, c))
                .and_then(|l| l.get("lastTransitionTime").cloned())
                .unwrap_or_else(|| Value::String(now.to_string()));
            let mut condition = json!({
                "type": c.type_,
                "status": status,
                "reason": c.reason.as_ref(),
                "lastTransitionTime": since,
            });
            if !c.message.is_empty() {
                condition["message"] = Value::String(c.message.clone());
            }
            condition
        })
        .collect()
}

/// Whether `live_status` already shows every `rendered` condition: a live condition of its type with
/// the same value in every field the writer renders (`lastTransitionTime` aside; a missing message is
/// an empty one). Conditions of other types, other writers' on a shared object, are not looked at:
/// server-side apply keeps them, and comparing them would make two writers write forever.
pub fn unchanged(live_status: Option<&Value>, rendered: &[Value]) -> bool {
    let text = |c: &Value, key: &str| c.get(key).cloned().unwrap_or(Value::Null);
    rendered.iter().all(|r| {
        let Some(l) = find(live_status, r["type"].as_str().unwrap_or_default()) else {
            return false;
        };
        let message = |c: &Value| {
            c.get("message")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        message(l) == message(r)
            && r.as_object().into_iter().flatten().all(|(key, value)| {
                matches!(key.as_str(), "lastTransitionTime" | "message") || text(l, key) == *value
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(message: &str) -> Vec<Condition> {
        vec![
            Condition::new("XAvailable", true, "AsExpected".to_string(), message),
            Condition::new("XDegraded", false, "AsExpected".to_string(), ""),
        ]
    }

    #[test]
    fn transition_times_move_only_with_the_status() {
        let first = json!({"conditions": render(&ok("m"), None, "2026-01-01T00:00:00Z")});
        assert_eq!(
            first["conditions"][0]["lastTransitionTime"],
            "2026-01-01T00:00:00Z"
        );
        assert_eq!(
            first["conditions"][1].get("message"),
            None,
            "empty messages are left out"
        );
        let again = render(&ok("n"), Some(&first), "2026-02-02T00:00:00Z");
        assert_eq!(
            again[0]["lastTransitionTime"], "2026-01-01T00:00:00Z",
            "new message"
        );
        let failed = vec![Condition::new(
            "XAvailable",
            false,
            "Forbidden".to_string(),
            "f",
        )];
        let moved = render(&failed, Some(&first), "2026-02-02T00:00:00Z");
        assert_eq!(
            moved[0]["lastTransitionTime"], "2026-02-02T00:00:00Z",
            "new status"
        );
    }

    #[test]
    fn the_controllers_rule_moves_transition_times_on_any_change() {
        let first = json!({"conditions": render(&ok("m"), None, "2026-01-01T00:00:00Z")});
        let later = "2026-02-02T00:00:00Z";
        let same = render_moving_on_any_change(&ok("m"), Some(&first), later);
        assert_eq!(same[0]["lastTransitionTime"], "2026-01-01T00:00:00Z");
        assert_eq!(
            same[1]["lastTransitionTime"], "2026-01-01T00:00:00Z",
            "an empty message is the missing one"
        );
        let message = render_moving_on_any_change(&ok("n"), Some(&first), later);
        assert_eq!(message[0]["lastTransitionTime"], later, "new message");
        let reason = vec![Condition::new("XAvailable", true, "Other".to_string(), "m")];
        let reason = render_moving_on_any_change(&reason, Some(&first), later);
        assert_eq!(reason[0]["lastTransitionTime"], later, "new reason");
    }

    #[test]
    fn unchanged_ignores_times_and_other_writers_conditions() {
        let first = json!({"conditions": render(&ok("m"), None, "2026-01-01T00:00:00Z")});
        let later = render(&ok("m"), Some(&first), "2026-02-02T00:00:00Z");
        assert!(unchanged(Some(&first), &later));
        let mut shared = first.clone();
        shared["conditions"]
            .as_array_mut()
            .unwrap()
            .push(json!({"type": "Available", "status": "False", "reason": "Installing"}));
        assert!(
            unchanged(Some(&shared), &later),
            "another writer's condition"
        );
        assert!(!unchanged(None, &later));
        assert!(
            !unchanged(Some(&first), &render(&ok("n"), Some(&first), "t")),
            "message"
        );
        let mut generation = later.clone();
        generation[0]["observedGeneration"] = json!(2);
        assert!(
            !unchanged(Some(&first), &generation),
            "a field the writer renders"
        );
        let mut dropped = first.clone();
        dropped["conditions"].as_array_mut().unwrap().remove(1);
        assert!(!unchanged(Some(&dropped), &later), "a missing condition");
    }

    #[test]
    fn find_and_is_true() {
        let status = json!({"conditions": [{"type": "Available", "status": "True"},
            {"type": "Degraded", "status": "False"}]});
        assert!(is_true(Some(&status), "Available"));
        assert!(!is_true(Some(&status), "Degraded"));
        assert!(!is_true(None, "Available"));
        assert_eq!(find(Some(&status), "Degraded").unwrap()["status"], "False");
        assert!(live(Some(&json!({}))).is_empty());
    }
}
