//! Taking over objects from a field manager that is gone for good (a predecessor of ours): its field
//! ownership moves to our field manager before our first apply. Pure, but for [`move_ownership`],
//! the one request that does it.
//!
//! Server-side apply removes a field only when its last owner stops sending it. An object adopted
//! from a manager that no longer runs would keep, for ever and unowned or owned by the departed, every
//! field that manager set and we do not: its marks (labels and annotations that say it manages the
//! object), and any field a later version of ours drops. Moving its ownership to us first (as
//! client-go's `csaupgrade` does for a client-side-apply manager, and boxcutter before each apply)
//! makes our apply the only word on those fields: what we send stays, what we do not send goes. A field
//! another manager still owns (the API server on `status`, an administrator's `kubectl`) stays theirs.

use std::collections::BTreeSet;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ManagedFieldsEntry, ObjectMeta};
use kube::api::{Api, Patch, PatchParams};
use serde_json::Value;

/// The managedFields of an object once the entries of the `retired` managers are merged into
/// `ours` (our Apply entry, created when missing), or `None` when no entry of theirs needs moving.
///
/// Only entries of the main resource move: a `status` subresource entry records a report, not an
/// intent, and our apply never sends `status`. A retired entry of another API version than our entry
/// cannot be merged (field sets are per version) and is dropped, its fields left unowned: a later
/// apply of ours then leaves them, which is what a plain adoption does anyway.
pub(crate) fn absorb(
    entries: &[ManagedFieldsEntry],
    retired: &BTreeSet<String>,
    ours: &str,
    api_version: &str,
) -> Option<Vec<ManagedFieldsEntry>> {
    let is_retired = |e: &ManagedFieldsEntry| {
        e.subresource.as_deref().unwrap_or("").is_empty()
            && e.manager.as_deref().is_some_and(|m| retired.contains(m))
            && e.manager.as_deref() != Some(ours)
    };
    if !entries.iter().any(is_retired) {
        return None;
    }
    let is_ours = |e: &ManagedFieldsEntry| {
        e.manager.as_deref() == Some(ours)
            && e.operation.as_deref() == Some("Apply")
            && e.subresource.as_deref().unwrap_or("").is_empty()
    };
    let mut target = entries
        .iter()
        .find(|e| is_ours(e))
        .cloned()
        .unwrap_or_else(|| ManagedFieldsEntry {
            manager: Some(ours.to_owned()),
            operation: Some("Apply".to_owned()),
            api_version: Some(api_version.to_owned()),
            fields_type: Some("FieldsV1".to_owned()),
            fields_v1: Some(FieldsV1(Value::Object(Default::default()))),
            time: None,
            subresource: None,
        });
    let mut fields = target
        .fields_v1
        .take()
        .map(|f| f.0)
        .unwrap_or_else(|| Value::Object(Default::default()));
    for entry in entries.iter().filter(|e| is_retired(e)) {
        if entry.api_version == target.api_version
            && let Some(FieldsV1(theirs)) = &entry.fields_v1
        {
            union(&mut fields, theirs);
        }
    }
    target.fields_v1 = Some(FieldsV1(fields));
    target.fields_type = Some("FieldsV1".to_owned());
    let mut out: Vec<ManagedFieldsEntry> = entries
        .iter()
        .filter(|e| !is_retired(e) && !is_ours(e))
        .cloned()
        .collect();
    out.insert(0, target);
    Some(out)
}

/// Adds every field of `other` to `into`. A FieldsV1 set is a trie of JSON objects (`f:name`,
/// `k:{key}`, `v:value`, `i:index` children, `.` for the node itself), so a union is a merge of
/// the objects, key by key.
fn union(into: &mut Value, other: &Value) {
    let (Value::Object(into), Value::Object(other)) = (into, other) else {
        return;
    };
    for (key, child) in other {
        match into.get_mut(key) {
            Some(existing) => union(existing, child),
            None => {
                into.insert(key.clone(), child.clone());
            }
        }
    }
}

/// The managers of the main resource in `entries` that are in `retired`: whether [`absorb`] has
/// anything to move.
pub fn retired_present(entries: &[ManagedFieldsEntry], retired: &BTreeSet<String>) -> bool {
    entries.iter().any(|e| {
        e.subresource.as_deref().unwrap_or("").is_empty()
            && e.manager.as_deref().is_some_and(|m| retired.contains(m))
    })
}

/// Moves the field ownership of the `retired` managers of the object `live` (as read, with its
/// managedFields and resourceVersion) to `ours` ([`absorb`]) with one JSON patch of `managedFields`,
/// guarded by the object's resourceVersion: a concurrent write fails it with a conflict instead of
/// being overwritten. Returns whether anything moved (nothing does when no retired entry is there).
pub async fn move_ownership<K>(
    api: &Api<K>,
    live: &ObjectMeta,
    retired: &BTreeSet<String>,
    ours: &str,
    api_version: &str,
) -> Result<bool, kube::Error>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let entries = live.managed_fields.as_deref().unwrap_or_default();
    let Some(moved) = absorb(entries, retired, ours, api_version) else {
        return Ok(false);
    };
    let patch = serde_json::json!([
        {"op": "replace", "path": "/metadata/managedFields", "value": moved},
        // `replace`, not `test`: etcd then refuses a stale write with a conflict (as csaupgrade does).
        {"op": "replace", "path": "/metadata/resourceVersion", "value": live.resource_version},
    ]);
    let patch: json_patch::Patch =
        serde_json::from_value(patch).expect("a JSON patch of two operations");
    let name = live.name.as_deref().unwrap_or_default();
    api.patch(name, &PatchParams::default(), &Patch::<()>::Json(patch))
        .await?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn entry(
        manager: &str,
        operation: &str,
        subresource: Option<&str>,
        fields: Value,
    ) -> ManagedFieldsEntry {
        ManagedFieldsEntry {
            manager: Some(manager.into()),
            operation: Some(operation.into()),
            api_version: Some("apps/v1".into()),
            fields_type: Some("FieldsV1".into()),
            fields_v1: Some(FieldsV1(fields)),
            time: None,
            subresource: subresource.map(Into::into),
        }
    }

    fn retired() -> BTreeSet<String> {
        [
            "cluster-capi-operator",
            "capi-operator.openshift.io/InstallerController",
        ]
        .map(String::from)
        .into()
    }

    #[test]
    fn a_retired_client_side_manager_becomes_ours() {
        let entries = [
            entry(
                "cluster-capi-operator",
                "Update",
                None,
                json!({"f:metadata": {"f:annotations": {".": {}, "f:operator.openshift.io/pull-spec": {}}},
                       "f:spec": {"f:replicas": {}}}),
            ),
            entry(
                "kube-controller-manager",
                "Update",
                Some("status"),
                json!({"f:status": {"f:replicas": {}}}),
            ),
        ];
        let out = absorb(&entries, &retired(), "capi-installer", "apps/v1").unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].manager.as_deref(), Some("capi-installer"));
        assert_eq!(out[0].operation.as_deref(), Some("Apply"));
        assert_eq!(
            out[0].fields_v1.as_ref().unwrap().0,
            json!({"f:metadata": {"f:annotations": {".": {}, "f:operator.openshift.io/pull-spec": {}}},
                   "f:spec": {"f:replicas": {}}})
        );
        assert_eq!(
            out[1].manager.as_deref(),
            Some("kube-controller-manager"),
            "status stays with its writer"
        );
    }

    #[test]
    fn an_existing_entry_of_ours_gains_the_retired_fields() {
        let entries = [
            entry(
                "capi-installer",
                "Apply",
                None,
                json!({"f:metadata": {"f:labels": {"f:app.kubernetes.io/managed-by": {}}}}),
            ),
            entry(
                "capi-operator.openshift.io/InstallerController",
                "Apply",
                None,
                json!({"f:metadata": {"f:labels": {"f:app.kubernetes.io/managed-by": {}, "f:capi-operator.openshift.io/managed-by": {}},
                       "f:annotations": {"f:capi-operator.openshift.io/revision": {}}},
                       "f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"manager\"}": {".": {}, "f:image": {}}}}}}}),
            ),
            entry(
                "cluster-version-operator",
                "Update",
                None,
                json!({"f:metadata": {"f:annotations": {"f:include.release.openshift.io/x": {}}}}),
            ),
        ];
        let out = absorb(&entries, &retired(), "capi-installer", "apps/v1").unwrap();
        let managers: Vec<&str> = out.iter().filter_map(|e| e.manager.as_deref()).collect();
        assert_eq!(
            managers,
            ["capi-installer", "cluster-version-operator"],
            "a manager that is not retired keeps its fields"
        );
        assert_eq!(
            out[0].fields_v1.as_ref().unwrap().0,
            json!({"f:metadata": {"f:labels": {"f:app.kubernetes.io/managed-by": {}, "f:capi-operator.openshift.io/managed-by": {}},
                   "f:annotations": {"f:capi-operator.openshift.io/revision": {}}},
                   "f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"manager\"}": {".": {}, "f:image": {}}}}}}})
        );
    }

    #[test]
    fn nothing_to_move_is_none_and_other_versions_are_dropped() {
        let entries = [entry(
            "helm",
            "Update",
            None,
            json!({"f:spec": {"f:replicas": {}}}),
        )];
        assert_eq!(
            absorb(&entries, &retired(), "capi-installer", "apps/v1"),
            None
        );
        assert!(!retired_present(&entries, &retired()));
        let mut old = entry(
            "cluster-capi-operator",
            "Update",
            None,
            json!({"f:spec": {"f:old": {}}}),
        );
        old.api_version = Some("apps/v1beta1".into());
        assert!(retired_present(std::slice::from_ref(&old), &retired()));
        let out = absorb(&[old], &retired(), "capi-installer", "apps/v1").unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].fields_v1.as_ref().unwrap().0, json!({}));
    }
}
