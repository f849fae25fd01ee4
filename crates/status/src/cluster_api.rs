//! This installer's revisions in the fields of
//! `ClusterAPI/cluster` status (operator.openshift.io/v1alpha1) that the reference's revision and
//! installer controllers write (ref §3.3, §3.4), so that tools written for the reference read them.
//! Pure: the next status from the previous one and what this pass wants.
//!
//! This installer keeps revisions per provider (`capi-installer-revisions-*`); the reference keeps
//! one cluster-wide list of snapshots. A cluster-wide revision here is the list of every selected
//! provider's content, in install order, with the substitutions of the pass, identified by the
//! reference's content ID ([`capi_bundle::reference::content_id`]): a new one is added when that ID
//! changes, and it becomes `currentRevision` once every provider serves its content. For the same
//! profiles, images and substitutions the ID, and so the name, is the one the reference's revision
//! controller gives, so that after switching back the reference finds its own revision and rebuilds
//! it instead of adding another. Components are listed for the profiles whose image reference is known (their folder is the
//! volume of a release image, [`capi_bundle::images`]) and is a digest (the API refuses anything
//! else): `{name, type: Image, image: {ref, profile}}` in install order, `name` the profile's metadata
//! name as the reference names its components; transport ConfigMaps are
//! no image and are not listed.

use std::collections::BTreeMap;

use capi_openshift::controller_status::ControllerResult;
use serde_json::{Value, json};

use capi_bundle::reference::revision_name;
use capi_bundle::source::ImageComponent;

/// The release of a process started without one (the reference's default).
pub const UNKNOWN_RELEASE: &str = "0.0.1-snapshot";

/// At most this many revisions (the CRD's `maxItems`).
pub(crate) const MAX_REVISIONS: usize = 16;

/// One provider's part of a cluster-wide revision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Component {
    /// The provider's name (`cluster-api`, `aws`): letters, digits and `-`.
    pub name: String,
    /// Its part of the content ID (`Prepared::revision_part`): the reference's component ID for a
    /// profile of a known image, otherwise its content's digest.
    pub content_id: String,
    /// A profile of an image known by digest: what the revision lists for it.
    pub image: Option<ImageComponent>,
}

/// What this pass wants installed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Desired {
    /// In install order.
    pub components: Vec<Component>,
    pub substitutions: BTreeMap<String, String>,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StatusError {
    #[error(
        "ClusterAPI cluster: status.revisions would hold more than {MAX_REVISIONS} revisions; remove old ones once the newest is current"
    )]
    TooManyRevisions,
    #[error("ClusterAPI cluster: status.revisions[{index}]: {message}")]
    Invalid { index: usize, message: String },
}

/// How a pass's revision went into `ClusterAPI/cluster` status: what the reference's revision
/// controller's conditions say ([`Recording::result`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Recording {
    /// Nothing is installed on this platform (or the platform is not known yet): nothing to record.
    NotNeeded,
    /// `ClusterAPI/cluster` does not exist (or its kind is not served).
    NoObject,
    /// Providers that did not get as far as a plan, so what the revision holds is not known: each
    /// source (or required provider without one), with its failure when it failed (otherwise it
    /// waits, e.g. behind core, or for its source).
    Unplanned(Vec<(String, Option<String>)>),
    /// The next status would break the API's rules.
    Refused(StatusError),
    /// The status write failed (retried on the next pass).
    WriteFailed(String),
    /// The status shows this pass's revision (written now, or already).
    Recorded,
}

impl Recording {
    /// The reference's revision controller in the same situation: waiting for its object, an error
    /// it retries (it cannot render, or cannot write), one it does not (more than
    /// `MAX_REVISIONS`, which needs an administrator), or done.
    pub fn result(&self) -> ControllerResult {
        match self {
            Recording::NotNeeded | Recording::Recorded => ControllerResult::Success,
            Recording::NoObject => ControllerResult::WaitingOnExternal("ClusterAPI cluster".into()),
            Recording::Unplanned(sources) => {
                let failures: Vec<&str> =
                    sources.iter().filter_map(|(_, f)| f.as_deref()).collect();
                match failures.is_empty() {
                    true => {
                        let names: Vec<&str> = sources.iter().map(|(s, _)| s.as_str()).collect();
                        ControllerResult::Progressing(format!(
                            "no revision until every provider is planned; waiting for {}",
                            names.join(", ")
                        ))
                    }
                    false => ControllerResult::EphemeralError(format!(
                        "no revision: {}",
                        failures.join("; ")
                    )),
                }
            }
            Recording::Refused(e) => ControllerResult::NonRetryableError(e.to_string()),
            Recording::WriteFailed(e) => {
                ControllerResult::EphemeralError(format!("writing ClusterAPI cluster status: {e}"))
            }
        }
    }
}

/// The content ID of `desired`: the reference's, over the components' parts in install order,
/// then the substitutions (a change of either is a new revision).
pub fn content_id(desired: &Desired) -> String {
    capi_bundle::reference::content_id::revision_id(
        desired.components.iter().map(|c| c.content_id.as_str()),
        &desired.substitutions,
    )
}

/// The next `status` of `ClusterAPI/cluster` (`previous`: its status now, `Value::Null` when
/// unset), for `desired` of release `release`, observed at `generation`; `complete`: every
/// provider of `desired` serves its content. Fields of the status this installer does not write are
/// kept.
pub fn next_status(
    previous: &Value,
    release: &str,
    desired: &Desired,
    complete: bool,
    generation: i64,
) -> Result<Value, StatusError> {
    let mut revisions: Vec<Value> = previous
        .get("revisions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let number = |r: &Value| r.get("revision").and_then(Value::as_i64);
    for (index, r) in revisions.iter().enumerate() {
        if number(r).is_none() || r.get("name").and_then(Value::as_str).is_none() {
            return Err(StatusError::Invalid {
                index,
                message: "needs a name and a revision number".into(),
            });
        }
    }
    revisions.sort_by_key(|r| std::cmp::Reverse(number(r)));
    let id = content_id(desired);
    let newest_matches = revisions
        .first()
        .and_then(|r| r.get("contentID"))
        .and_then(Value::as_str)
        == Some(id.as_str());
    if !newest_matches {
        let n = revisions.first().and_then(number).unwrap_or(0) + 1;
        let mut revision = json!({
            "name": revision_name(release, &id, n),
            "revision": n,
            "contentID": id,
        });
        let components: Vec<Value> = desired
            .components
            .iter()
            .filter_map(|c| {
                let image = c.image.as_ref()?;
                Some(json!({"name": image.name, "type": "Image",
                    "image": {"ref": image.image, "profile": image.profile}}))
            })
            .collect();
        if !components.is_empty() {
            revision["components"] = Value::Array(components);
        }
        if !desired.substitutions.is_empty() {
            revision["manifestSubstitutions"] = desired
                .substitutions
                .iter()
                .map(|(k, v)| json!({"key": k, "value": v}))
                .collect();
        }
        revisions.insert(0, revision);
    }
    if revisions.len() > MAX_REVISIONS {
        return Err(StatusError::TooManyRevisions);
    }
    let newest = revisions[0]["name"].clone();
    let mut status = match previous {
        Value::Object(_) => previous.clone(),
        _ => json!({}),
    };
    let current = match complete {
        true => Some(newest.clone()),
        false => status.get("currentRevision").cloned(),
    };
    // Once the newest is current the older ones are done with (the reference trims them too).
    if current.as_ref() == Some(&newest) {
        revisions.truncate(1);
    }
    // The API wants the current revision among the revisions.
    let current = current.filter(|c| revisions.iter().any(|r| &r["name"] == c));
    if current.is_none()
        && let Some(status) = status.as_object_mut()
    {
        status.remove("currentRevision");
    }
    status["revisions"] = Value::Array(revisions);
    status["desiredRevision"] = newest;
    if let Some(current) = current {
        status["currentRevision"] = current;
    }
    let observed = status
        .get("observedRevisionGeneration")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    // It may not decrease (a CEL rule of the CRD).
    status["observedRevisionGeneration"] = json!(observed.max(generation));
    Ok(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desired(digests: &[(&str, &str)]) -> Desired {
        Desired {
            components: digests
                .iter()
                .map(|(name, content_id)| Component {
                    name: name.to_string(),
                    content_id: content_id.to_string(),
                    image: None,
                })
                .collect(),
            substitutions: [("TLS_MIN_VERSION".to_string(), "VersionTLS12".to_string())].into(),
        }
    }

    #[test]
    fn a_new_content_is_a_new_revision_that_becomes_current_once_served() {
        let first = desired(&[("cluster-api", "a"), ("aws", "b")]);
        let s1 = next_status(&Value::Null, "4.22.0", &first, false, 1).unwrap();
        let id = content_id(&first);
        assert_eq!(s1["desiredRevision"], format!("4.22.0-{}-1", &id[..8]));
        assert_eq!(s1.get("currentRevision"), None);
        assert_eq!(
            s1["revisions"][0]["manifestSubstitutions"],
            json!([{"key": "TLS_MIN_VERSION", "value": "VersionTLS12"}])
        );
        assert_eq!(s1["revisions"][0].get("components"), None);
        assert_eq!(s1["observedRevisionGeneration"], 1);

        // Served: current, nothing else changes.
        let s2 = next_status(&s1, "4.22.0", &first, true, 1).unwrap();
        assert_eq!(s2["currentRevision"], s1["desiredRevision"]);
        assert_eq!(s2["revisions"], s1["revisions"]);

        // An upgrade: revision 2 prepended, revision 1 current until 2 is served, then trimmed.
        let second = desired(&[("cluster-api", "a"), ("aws", "c")]);
        let s3 = next_status(&s2, "4.22.1", &second, false, 1).unwrap();
        let names: Vec<&str> = s3["revisions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert_eq!(names.len(), 2);
        assert!(
            names[0].starts_with("4.22.1-") && names[0].ends_with("-2"),
            "{names:?}"
        );
        assert_eq!(s3["currentRevision"], s2["currentRevision"]);
        let s4 = next_status(&s3, "4.22.1", &second, true, 2).unwrap();
        assert_eq!(s4["revisions"].as_array().unwrap().len(), 1);
        assert_eq!(s4["currentRevision"], s4["desiredRevision"]);
        assert_eq!(s4["observedRevisionGeneration"], 2);
        // A new substitution alone is new content.
        let mut third = second.clone();
        third
            .substitutions
            .insert("TLS_CIPHER_SUITES".into(), "X".into());
        assert_ne!(content_id(&third), content_id(&second));
    }

    #[test]
    fn limits_of_the_api_are_kept() {
        let long = "9".repeat(300);
        let name = revision_name(&long, &"f".repeat(64), 12);
        assert_eq!(name.len(), 255);
        assert!(name.ends_with("-ffffffff-12"));
        let mut status = Value::Null;
        for i in 0..MAX_REVISIONS {
            status = next_status(
                &status,
                "4.22",
                &desired(&[("aws", &i.to_string())]),
                false,
                1,
            )
            .unwrap();
        }
        assert_eq!(
            next_status(&status, "4.22", &desired(&[("aws", "x")]), false, 1),
            Err(StatusError::TooManyRevisions)
        );
        // The observed generation never goes down.
        let back = next_status(&status, "4.22", &desired(&[("aws", "15")]), false, 0).unwrap();
        assert_eq!(back["observedRevisionGeneration"], 1);
    }
}
