//! Prune: delete what a new plan no longer contains, in reverse order, and only what is still ours.

use std::fmt;

use kube::Client;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Preconditions, PropagationPolicy,
};
use serde_json::Value;

use crate::key::{ObjectKey, api_for};
use crate::ownership::OwnershipPolicy;
use crate::plan::{Phase, apply_order};

/// An object to prune. `resource` is `None` when the kind is no longer served (e.g. its CRD is
/// gone): no such object can exist then, so it counts as deleted.
#[derive(Debug, Clone)]
pub struct PruneTarget {
    pub key: ObjectKey,
    pub phase: Phase,
    pub resource: Option<ApiResource>,
    /// It existed before we first applied it ([`crate::Inventory::adopted`]): released, not deleted.
    pub adopted: bool,
    /// Recorded to be created and not confirmed ([`crate::Inventory::pending`]): deleted only if our
    /// apply created it.
    pub pending: bool,
    /// The UID our last write answered with ([`crate::Inventory::uids`]): an object under the name
    /// with another UID was created again since, and is deleted only if our apply re-created it.
    pub uid: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeepReason {
    /// The live object no longer carries our ownership label: someone else has it now. Drop it from
    /// the inventory; it is not ours to delete.
    NotOwned,
    /// Ours, but another of our owners holds it (its owner label, see
    /// [`crate::OwnershipPolicy::owner_label`]). Drop it from the inventory; it is not this owner's to
    /// delete.
    OwnedByOther { owner: String },
    /// A CRD that still has instances: deleting it would delete them (data loss). Keep it in the
    /// inventory so prune retries once they are gone.
    CrdHasInstances { kind: String },
    /// The object was replaced (different UID) between our read and our delete.
    Replaced,
    /// We adopted it (it existed before we applied it): it is released in place, our ownership label
    /// and field ownership removed, and dropped from the inventory. The installer deletes only what it
    /// created.
    Released,
    /// The request failed; keep it in the inventory and retry.
    Error(String),
}

impl KeepReason {
    /// Whether the object must stay in the inventory (to be retried).
    pub fn retry(&self) -> bool {
        !matches!(
            self,
            KeepReason::NotOwned | KeepReason::OwnedByOther { .. } | KeepReason::Released
        )
    }
}

impl fmt::Display for KeepReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeepReason::NotOwned => f.write_str("no longer carries the ownership label"),
            KeepReason::OwnedByOther { owner } => write!(f, "belongs to {owner}"),
            KeepReason::CrdHasInstances { kind } => write!(f, "instances of {kind} still exist"),
            KeepReason::Replaced => f.write_str("replaced by a new object (UID changed)"),
            KeepReason::Released => f.write_str(
                "adopted, not created by the installer: released in place (ownership label and field ownership removed)",
            ),
            KeepReason::Error(e) => write!(f, "delete failed: {e}"),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct PruneReport {
    /// In the order they were deleted (NotFound counts as deleted).
    pub deleted: Vec<ObjectKey>,
    pub kept: Vec<(ObjectKey, KeepReason)>,
}

impl PruneReport {
    /// Keys that must stay in the inventory so the next prune retries them.
    pub fn retry_keys(&self) -> impl Iterator<Item = &ObjectKey> {
        self.kept.iter().filter(|(_, r)| r.retry()).map(|(k, _)| k)
    }
}

/// Sorts into prune order: reverse phase order, reverse apply order inside a phase (so custom
/// resources go before their CRDs, bindings before roles, namespaces last in their phase).
pub(crate) fn sort_for_prune(items: &mut [(ObjectKey, Phase)]) {
    items.sort_by(|(ka, pa), (kb, pb)| pb.cmp(pa).then_with(|| apply_order(kb, ka)));
}

/// Deletes `stale` objects one by one in prune order: only those that still carry the ownership
/// label (and, when the policy has an owner label, `owner`'s value of it), with a UID precondition and
/// background propagation. A CRD with instances is kept.
pub async fn prune(
    client: &Client,
    stale: Vec<PruneTarget>,
    ownership: &OwnershipPolicy,
    owner: Option<&str>,
) -> PruneReport {
    prune_as(client, stale, ownership, owner, false).await
}

/// What [`prune`] would do, with the same decisions and server-side dry-run deletes: nothing is
/// deleted.
pub async fn prune_dry_run(
    client: &Client,
    stale: Vec<PruneTarget>,
    ownership: &OwnershipPolicy,
    owner: Option<&str>,
) -> PruneReport {
    prune_as(client, stale, ownership, owner, true).await
}

async fn prune_as(
    client: &Client,
    stale: Vec<PruneTarget>,
    ownership: &OwnershipPolicy,
    owner: Option<&str>,
    dry_run: bool,
) -> PruneReport {
    let mut stale = stale;
    stale.sort_by(|a, b| {
        b.phase
            .cmp(&a.phase)
            .then_with(|| apply_order(&b.key, &a.key))
    });
    let mut report = PruneReport::default();
    for target in stale {
        let key = target.key;
        let Some(resource) = target.resource else {
            report.deleted.push(key);
            continue;
        };
        let one = Pruned {
            key: &key,
            resource: &resource,
            adopted: target.adopted,
            pending: target.pending,
            uid: target.uid.as_deref(),
        };
        match prune_one(client, one, ownership, owner, dry_run).await {
            Ok(None) if dry_run => report.deleted.push(key),
            Ok(None) => {
                tracing::info!(object = %key, "pruned");
                report.deleted.push(key);
            }
            Ok(Some(reason)) => {
                tracing::info!(object = %key, %reason, "not pruned");
                report.kept.push((key, reason));
            }
            Err(e) => {
                tracing::warn!(object = %key, error = %e, "prune failed");
                report.kept.push((key, KeepReason::Error(e.to_string())));
            }
        }
    }
    report
}

/// One object [`prune_one`] deletes or releases.
struct Pruned<'a> {
    key: &'a ObjectKey,
    resource: &'a ApiResource,
    adopted: bool,
    pending: bool,
    uid: Option<&'a str>,
}

async fn prune_one(
    client: &Client,
    one: Pruned<'_>,
    ownership: &OwnershipPolicy,
    owner: Option<&str>,
    dry_run: bool,
) -> Result<Option<KeepReason>, kube::Error> {
    let Pruned {
        key,
        resource,
        adopted,
        pending,
        uid,
    } = one;
    let api = api_for(client, resource, key);
    let Some(live) = api.get_opt(&key.name).await? else {
        return Ok(None);
    };
    // A name recorded to be created, or whose object was created again since our write, holds
    // someone else's object unless our apply created it.
    let replaced = uid.is_some() && live.metadata.uid.as_deref() != uid;
    if !ownership.owns(&live) || ((pending || replaced) && !ownership.created_by_us(&live)) {
        return Ok(Some(KeepReason::NotOwned));
    }
    if let (Some(theirs), Some(ours)) = (ownership.owner_of(&live), owner)
        && theirs != ours
    {
        return Ok(Some(KeepReason::OwnedByOther {
            owner: theirs.to_string(),
        }));
    }
    // A built-in object is never ours to delete, whatever an inventory says: one that an earlier
    // version adopted (before adoption was bounded, and before adoptions were recorded) is released.
    if adopted || crate::ownership::built_in(key, live.metadata.labels.as_ref()).is_some() {
        let Some(patch) = release_patch(&live, ownership) else {
            return Ok(Some(KeepReason::Released));
        };
        let params = kube::api::PatchParams {
            dry_run,
            ..Default::default()
        };
        return match api
            .patch(&key.name, &params, &kube::api::Patch::<()>::Json(patch))
            .await
        {
            Ok(_) => Ok(Some(KeepReason::Released)),
            Err(e) if is_status(&e, 404) => Ok(None),
            // Written since our read (resourceVersion guard): retried by the next prune.
            Err(e) if is_status(&e, 409) => Ok(Some(KeepReason::Error(e.to_string()))),
            Err(e) => Err(e),
        };
    }
    if key.group == "apiextensions.k8s.io"
        && key.kind == "CustomResourceDefinition"
        && let Some(kind) = crd_has_instances(client, &live).await?
    {
        return Ok(Some(KeepReason::CrdHasInstances { kind }));
    }
    let params = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Background),
        preconditions: Some(Preconditions {
            uid: live.metadata.uid.clone(),
            resource_version: None,
        }),
        dry_run,
        ..Default::default()
    };
    let deleted = if dry_run {
        dry_run_delete(client, resource, key, &params).await
    } else {
        api.delete(&key.name, &params).await.map(|_| ())
    };
    match deleted {
        Ok(()) => Ok(None),
        Err(e) if is_status(&e, 404) => Ok(None),
        Err(e) if is_status(&e, 409) => Ok(Some(KeepReason::Replaced)),
        Err(e) => Err(e),
    }
}

/// The JSON patch that gives an adopted object back: our ownership label and desired-hash annotation
/// removed, and so is every other label and annotation that only our field ownership holds (what we
/// added on adoption, such as the owner label: the object goes back with the metadata it had); our
/// field ownership (the managedFields entries that own our ownership label: only we set it) dropped,
/// so that every other field stays as it is, unowned, instead of being removed as a server-side apply
/// without them would (a CRD's versions must never go with it). Guarded by the resourceVersion read.
/// `None` when nothing of ours is left on it.
pub(crate) fn release_patch(
    live: &DynamicObject,
    ownership: &OwnershipPolicy,
) -> Option<json_patch::Patch> {
    let label = &ownership.label_key;
    let pointer = |key: &str| key.replace('~', "~0").replace('/', "~1");
    let mut ops = Vec::new();
    if live
        .metadata
        .labels
        .as_ref()
        .is_some_and(|l| l.contains_key(label))
    {
        ops.push(serde_json::json!({"op": "remove", "path": format!("/metadata/labels/{}", pointer(label))}));
    }
    if live
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(crate::ownership::DEFAULT_HASH_ANNOTATION))
    {
        ops.push(serde_json::json!({"op": "remove", "path": format!("/metadata/annotations/{}", pointer(crate::ownership::DEFAULT_HASH_ANNOTATION))}));
    }
    let entries = live.metadata.managed_fields.clone().unwrap_or_default();
    // Whether managedFields entry `e` holds key `key` of the object's `labels` or `annotations`.
    let held = |e: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry,
                map: &str,
                key: &str| {
        e.fields_v1
            .as_ref()
            .and_then(|f| f.0.pointer(&format!("/f:metadata/f:{map}")))
            .and_then(Value::as_object)
            .is_some_and(|m| m.contains_key(&format!("f:{key}")))
    };
    // Our entries: those that hold our ownership label (only we set it).
    let owns_label = |e: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry| {
        held(e, "labels", label)
    };
    let kept: Vec<_> = entries.iter().filter(|e| !owns_label(e)).cloned().collect();
    // Labels and annotations our entries hold and no other entry does: ours alone, added by us.
    for (map, present) in [
        ("labels", live.metadata.labels.as_ref()),
        ("annotations", live.metadata.annotations.as_ref()),
    ] {
        for key in present.into_iter().flat_map(|m| m.keys()) {
            let already = (map == "labels" && key == label)
                || (map == "annotations" && key == crate::ownership::DEFAULT_HASH_ANNOTATION);
            let ours_alone = entries.iter().any(|e| owns_label(e) && held(e, map, key))
                && !kept.iter().any(|e| held(e, map, key));
            if ours_alone && !already {
                ops.push(serde_json::json!({"op": "remove", "path": format!("/metadata/{map}/{}", pointer(key))}));
            }
        }
    }
    if kept.len() != entries.len() {
        // An empty list leaves managedFields as they are; one empty entry clears them.
        let value = if kept.is_empty() {
            serde_json::json!([{}])
        } else {
            serde_json::to_value(&kept).expect("managedFields serialize")
        };
        ops.push(
            serde_json::json!({"op": "replace", "path": "/metadata/managedFields", "value": value}),
        );
    }
    if ops.is_empty() {
        return None;
    }
    // `replace`, not `test`: etcd then refuses a stale write with a conflict (as takeover does).
    ops.push(serde_json::json!({"op": "replace", "path": "/metadata/resourceVersion", "value": live.metadata.resource_version}));
    Some(serde_json::from_value(Value::Array(ops)).expect("a JSON patch"))
}

/// `Some(kind)` when the CRD `crd` still has at least one instance (in any namespace).
pub(crate) async fn crd_has_instances(
    client: &Client,
    crd: &DynamicObject,
) -> Result<Option<String>, kube::Error> {
    let spec = crd.data.get("spec");
    let s = |p: &str| {
        spec.and_then(|s| s.pointer(p))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let (group, kind, plural) = (s("/group"), s("/names/kind"), s("/names/plural"));
    let versions = spec
        .and_then(|s| s.get("versions"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let Some(version) = versions
        .iter()
        .find(|v| v.get("served").and_then(Value::as_bool) == Some(true))
        .and_then(|v| v.get("name"))
        .and_then(Value::as_str)
    else {
        return Ok(None);
    };
    let resource = ApiResource {
        api_version: format!("{group}/{version}"),
        group,
        version: version.to_owned(),
        kind: kind.clone(),
        plural,
    };
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    match api.list_metadata(&ListParams::default().limit(1)).await {
        Ok(list) if list.items.is_empty() => Ok(None),
        Ok(_) => Ok(Some(kind)),
        // Not served (yet/any more): nothing to lose.
        Err(e) if is_status(&e, 404) => Ok(None),
        Err(e) => Err(e),
    }
}

/// A DELETE with `dryRun=All` in the query as well as in the body: kube sends it in the body only,
/// which an audit log at Metadata level cannot tell from a real delete.
async fn dry_run_delete(
    client: &Client,
    resource: &ApiResource,
    key: &ObjectKey,
    params: &DeleteParams,
) -> Result<(), kube::Error> {
    use kube::Resource;
    let url = DynamicObject::url_path(resource, key.namespace.as_deref());
    let mut request = kube::core::Request::new(url)
        .delete(&key.name, params)
        .map_err(kube::Error::BuildRequest)?;
    let uri: http::Uri =
        format!("{}dryRun=All", request.uri())
            .parse()
            .map_err(|e: http::uri::InvalidUri| {
                kube::Error::BuildRequest(kube::core::request::Error::BuildRequest(e.into()))
            })?;
    *request.uri_mut() = uri;
    client.request_text(request).await.map(|_| ())
}

fn is_status(e: &kube::Error, code: u16) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prune_order_is_reverse_phase_then_reverse_kind_order() {
        let k =
            |g: &str, kind: &str, ns: Option<&str>, n: &str| ObjectKey::new(g, "v1", kind, ns, n);
        let mut items = vec![
            (
                k(
                    "apiextensions.k8s.io",
                    "CustomResourceDefinition",
                    None,
                    "a.io",
                ),
                Phase::CustomResourceDefinitions,
            ),
            (k("", "Namespace", None, "ns"), Phase::Base),
            (
                k("rbac.authorization.k8s.io", "ClusterRole", None, "cr"),
                Phase::Base,
            ),
            (
                k(
                    "rbac.authorization.k8s.io",
                    "ClusterRoleBinding",
                    None,
                    "crb",
                ),
                Phase::Base,
            ),
            (k("a.io", "Thing", Some("ns"), "t"), Phase::Base),
            (k("apps", "Deployment", Some("ns"), "d"), Phase::Workloads),
            (
                k(
                    "admissionregistration.k8s.io",
                    "MutatingWebhookConfiguration",
                    None,
                    "m",
                ),
                Phase::Admission,
            ),
        ];
        sort_for_prune(&mut items);
        let names: Vec<&str> = items.iter().map(|(k, _)| k.name.as_str()).collect();
        assert_eq!(names, ["m", "d", "t", "crb", "cr", "ns", "a.io"]);
    }

    #[test]
    fn only_failures_and_crds_with_instances_are_retried() {
        let key = |n: &str| ObjectKey::new("", "v1", "ConfigMap", Some("ns"), n);
        let report = PruneReport {
            deleted: vec![key("gone")],
            kept: vec![
                (key("theirs"), KeepReason::NotOwned),
                (
                    key("another-owners"),
                    KeepReason::OwnedByOther {
                        owner: "infrastructure-gcp".into(),
                    },
                ),
                (
                    key("crd"),
                    KeepReason::CrdHasInstances {
                        kind: "Widget".into(),
                    },
                ),
                (key("err"), KeepReason::Error("boom".into())),
                (key("new-uid"), KeepReason::Replaced),
            ],
        };
        let retry: Vec<&str> = report.retry_keys().map(|k| k.name.as_str()).collect();
        assert_eq!(retry, ["crd", "err", "new-uid"]);
    }
}

#[cfg(test)]
mod release_tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn release_removes_our_marks_and_field_ownership_only() {
        let policy = OwnershipPolicy::new("app.kubernetes.io/managed-by", "capi-installer");
        let live: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.io", "resourceVersion": "42",
                "labels": {"app.kubernetes.io/managed-by": "capi-installer", "keep": "yes",
                    "cluster.x-k8s.io/provider": "cluster-api", "shared": "yes"},
                "annotations": {"capi-installer.openshift.io/desired-hash": "abc", "theirs": "x"},
                "managedFields": [
                    {"manager": "capi-installer", "operation": "Apply", "apiVersion": "apiextensions.k8s.io/v1",
                     "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {
                        "f:labels": {"f:app.kubernetes.io/managed-by": {}, "f:cluster.x-k8s.io/provider": {}, "f:shared": {}},
                        "f:annotations": {"f:capi-installer.openshift.io/desired-hash": {}}}, "f:spec": {}}},
                    {"manager": "cluster-version-operator", "operation": "Apply", "apiVersion": "apiextensions.k8s.io/v1",
                     "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {"f:keep": {}, "f:shared": {}}, "f:annotations": {"f:theirs": {}}}}},
                    {"manager": "kube-apiserver", "operation": "Update", "subresource": "status",
                     "apiVersion": "apiextensions.k8s.io/v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {}}}
                ]},
            "spec": {"group": "example.io"},
        }))
        .unwrap();
        let patch = serde_json::to_value(release_patch(&live, &policy).unwrap()).unwrap();
        // The label only we hold (the owner label we added) goes; one another manager holds too stays.
        assert_eq!(
            patch,
            json!([
                {"op": "remove", "path": "/metadata/labels/app.kubernetes.io~1managed-by"},
                {"op": "remove", "path": "/metadata/annotations/capi-installer.openshift.io~1desired-hash"},
                {"op": "remove", "path": "/metadata/labels/cluster.x-k8s.io~1provider"},
                {"op": "replace", "path": "/metadata/managedFields", "value": [
                    {"manager": "cluster-version-operator", "operation": "Apply", "apiVersion": "apiextensions.k8s.io/v1",
                     "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {"f:keep": {}, "f:shared": {}}, "f:annotations": {"f:theirs": {}}}}},
                    {"manager": "kube-apiserver", "operation": "Update", "subresource": "status",
                     "apiVersion": "apiextensions.k8s.io/v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {}}}
                ]},
                {"op": "replace", "path": "/metadata/resourceVersion", "value": "42"},
            ])
        );
        let mut bare = live.clone();
        bare.metadata.labels = None;
        bare.metadata.annotations = None;
        bare.metadata.managed_fields = None;
        assert!(release_patch(&bare, &policy).is_none());
    }
}
