//! The API server's audit log (`<dir>/audit.log`): one JSON event per line, at Metadata level, for
//! every request, without the RequestReceived stage (see [`POLICY`]).

use std::path::Path;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use serde::Deserialize;

use crate::error::{Error, io};

/// Every request at Metadata level: who (user, groups, user agent) did what (verb, object, response
/// code), without bodies. RequestReceived is omitted so that each request yields exactly one event
/// (ResponseComplete, or ResponseStarted for watches, or Panic).
pub(crate) const POLICY: &str = "\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages:
- RequestReceived
rules:
- level: Metadata
";

/// One audit event (`audit.k8s.io/v1` Event, the fields tests look at).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AuditEvent {
    #[serde(rename = "auditID")]
    pub audit_id: String,
    /// `ResponseComplete`, `ResponseStarted` (watches) or `Panic`.
    pub stage: String,
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`, ...
    pub verb: String,
    pub user: AuditUser,
    pub impersonated_user: Option<AuditUser>,
    /// Absent when the client sent none (kube-rs sends none unless configured: add a
    /// `User-Agent` header to [`kube::Config::headers`]).
    pub user_agent: Option<String>,
    pub object_ref: Option<AuditObjectRef>,
    #[serde(rename = "requestURI")]
    pub request_uri: String,
    #[serde(default, deserialize_with = "response_code")]
    #[serde(rename = "responseStatus")]
    pub response_code: Option<u16>,
    pub stage_timestamp: MicroTime,
    /// When the API server received the request (benchmarks: how long each request took).
    #[serde(default)]
    pub request_received_timestamp: Option<MicroTime>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct AuditUser {
    #[serde(default)]
    pub username: String,
    #[serde(default)]
    pub groups: Vec<String>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AuditObjectRef {
    /// Empty for the core group.
    #[serde(default)]
    pub api_group: String,
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub resource: String,
    pub subresource: Option<String>,
    pub namespace: Option<String>,
    pub name: Option<String>,
}

fn response_code<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u16>, D::Error> {
    #[derive(Deserialize)]
    struct Status {
        code: Option<u16>,
    }
    Ok(Option::<Status>::deserialize(d)?.and_then(|s| s.code))
}

impl AuditEvent {
    /// Whether the request changed (or tried to change) state. A server-side dry-run changes
    /// nothing and is not a write.
    pub fn is_write(&self) -> bool {
        matches!(
            self.verb.as_str(),
            "create" | "update" | "patch" | "delete" | "deletecollection"
        ) && !self.is_dry_run()
    }

    /// Whether the request was a server-side dry-run (`dryRun=All`).
    pub fn is_dry_run(&self) -> bool {
        self.request_uri
            .split_once('?')
            .is_some_and(|(_, query)| query.split('&').any(|p| p == "dryRun=All"))
    }
}

pub(crate) fn read(path: &Path) -> Result<Vec<AuditEvent>, Error> {
    // A line seen in pieces while the API server writes it (once seen on the loaded machine in the
    // middle of the file): read again before calling the log broken.
    let mut attempt = 0;
    loop {
        match read_once(path) {
            Err(Error::AuditLog { .. }) if attempt < 3 => {
                attempt += 1;
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
            result => return result,
        }
    }
}

fn read_once(path: &Path) -> Result<Vec<AuditEvent>, Error> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io(format!("read {}", path.display()))(e)),
    };
    let complete = text.ends_with('\n');
    let lines: Vec<&str> = text.lines().collect();
    let mut events = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(line) {
            Ok(event) => events.push(event),
            // The API server may be writing the last line right now.
            Err(_) if i + 1 == lines.len() && !complete => {}
            Err(source) => {
                return Err(Error::AuditLog {
                    path: path.to_path_buf(),
                    line: i + 1,
                    source,
                });
            }
        }
    }
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_an_api_server_event() {
        // Shape as written by kube-apiserver v1.37 with the policy above.
        let line = r#"{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"0b6c","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/default/configmaps?fieldManager=t","verb":"create","user":{"username":"admin","groups":["system:masters","system:authenticated"]},"sourceIPs":["127.0.0.1"],"userAgent":"smoke/1","objectRef":{"resource":"configmaps","namespace":"default","name":"c1","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":201},"requestReceivedTimestamp":"2026-11-29T15:00:00.000001Z","stageTimestamp":"2026-11-29T15:00:00.000002Z","annotations":{"authorization.k8s.io/decision":"allow"}}"#;
        let event: AuditEvent = serde_json::from_str(line).unwrap();
        assert_eq!(event.verb, "create");
        assert!(event.is_write());
        assert_eq!(event.user.username, "admin");
        assert_eq!(event.user.groups[0], "system:masters");
        assert_eq!(event.user_agent.as_deref(), Some("smoke/1"));
        let object = event.object_ref.unwrap();
        assert_eq!(object.api_group, "");
        assert_eq!(object.resource, "configmaps");
        assert_eq!(object.namespace.as_deref(), Some("default"));
        assert_eq!(object.name.as_deref(), Some("c1"));
        assert_eq!(object.subresource, None);
        assert_eq!(event.response_code, Some(201));
        assert_eq!(event.impersonated_user, None);
    }

    #[test]
    fn tolerates_a_half_written_last_line_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let full = r#"{"auditID":"a","stage":"ResponseComplete","verb":"get","user":{"username":"u"},"requestURI":"/x","stageTimestamp":"2026-11-29T15:00:00.000002Z"}"#;
        std::fs::write(&path, format!("{full}\n{{\"auditID\":")).unwrap();
        let events = read(&path).unwrap();
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].response_code, None);
        assert_eq!(events[0].user.groups, Vec::<String>::new());

        std::fs::write(&path, format!("{{\"auditID\":\n{full}\n")).unwrap();
        let err = read(&path).unwrap_err().to_string();
        assert!(err.contains("line 1"), "{err}");
    }
}
