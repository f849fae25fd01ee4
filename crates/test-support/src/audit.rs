//! The API server's audit log: who sent what, told apart by user agent.

use control_plane::AuditEvent;

use crate::Env;

pub type Timestamp = k8s_openapi::jiff::Timestamp;

/// Requests sent with user agent `ua`, optionally only those after `after`.
pub fn requests_of(events: &[AuditEvent], ua: &str, after: Option<Timestamp>) -> Vec<AuditEvent> {
    events
        .iter()
        .filter(|e| e.user_agent.as_deref() == Some(ua))
        .filter(|e| after.is_none_or(|t| e.stage_timestamp.0 > t))
        .cloned()
        .collect()
}

/// Whether `e` is a request for `key` itself (not a subresource of it). The resource is derived from
/// the kind as the fixtures' kinds pluralize (`Policy` → `policies`, `Service` → `services`).
pub fn names_object(e: &AuditEvent, key: &capi_manifests::ObjectKey) -> bool {
    let lower = key.kind.to_lowercase();
    let plural = match lower.strip_suffix('y') {
        Some(stem) => format!("{stem}ies"),
        None => format!("{lower}s"),
    };
    e.object_ref.as_ref().is_some_and(|o| {
        o.name.as_deref() == Some(key.name.as_str())
            && o.api_group == key.group
            && o.resource == plural
            && o.subresource.is_none()
    })
}

/// The writes among `events` (dry-runs are not writes).
pub fn writes(events: &[AuditEvent]) -> Vec<AuditEvent> {
    events.iter().filter(|e| e.is_write()).cloned().collect()
}

/// One line per request: `verb group/resource[/subresource] namespace/name (response code)`.
pub fn describe(e: &AuditEvent) -> String {
    let o = e.object_ref.clone().unwrap_or_default();
    format!(
        "{} {}/{}{} {}/{} ({:?})",
        e.verb,
        o.api_group,
        o.resource,
        o.subresource.map(|s| format!("/{s}")).unwrap_or_default(),
        o.namespace.unwrap_or_default(),
        o.name.unwrap_or_default(),
        e.response_code
    )
}

/// The time of the latest audit event, to look at later ones only.
pub fn audit_mark(env: &Env) -> Timestamp {
    env.audit()
        .iter()
        .map(|e| e.stage_timestamp.0)
        .max()
        .unwrap_or(Timestamp::UNIX_EPOCH)
}
