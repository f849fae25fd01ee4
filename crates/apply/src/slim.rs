//! What the watch cache keeps of a live object: what the ownership decision, drift detection, readiness
//! and CRD safety read, never the whole object. Pure.
//!
//! A cached CRD used to carry its whole schema and every object its `managedFields`: for core + aws
//! that was most of the installer's memory, to answer questions that need a few fields each:
//!
//! | who | reads |
//! |---|---|
//! | ownership ([`crate::OwnershipPolicy::check`]) | labels, field managers (names, operation, subresource), `deletionTimestamp` (the owner's record is the caller's) |
//! | drift ([`crate::Applier`]) | the desired-hash annotation, `resourceVersion`, the digest of our managed fields ([`drift::managed_digest`]) |
//! | readiness ([`crate::readiness()`]) | `generation`, [`readiness::READS`] of the kind |
//! | CRD safety and prune ([`crate::crd_safety`]) | [`crd_safety::READS`], each version's name, `served` and `storage` |
//! | CRD names ([`crate::crd_names`]) | [`crd_names::READS`]: the group and the accepted names |
//!
//! A slim object is marked (see [`is_slim`]); the applier never sends one, and reads the full object
//! when a slim one cannot answer (after a restart, before it has seen its own apply).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use kube::api::DynamicObject;
use kube::core::ObjectMeta;
use serde_json::{Map, Value};

use crate::{crd_names, crd_safety, drift, readiness};

/// The key in a slim object's body that marks it and carries the digest of our managed fields. No
/// Kubernetes object has a top-level field of this name.
pub(crate) const SLIM_KEY: &str = "capi-apply.openshift.io/slim";

/// What to keep of each object: the names the ownership decision and drift detection look for.
/// Public for the tests that hold it to what each judgment of `capi-live` reads
/// (`tests/readiness.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slimmer {
    /// Our field manager: the digest covers the fields it owns.
    pub field_manager: String,
    /// Annotations worth keeping (the desired hash); labels are kept whole.
    pub annotations: Vec<String>,
}

impl Slimmer {
    /// `obj` reduced to what the cache needs (see the module docs).
    pub fn slim(&self, obj: &DynamicObject) -> DynamicObject {
        let managed = drift::managed_digest(obj, &self.field_manager);
        let meta = &obj.metadata;
        let metadata = ObjectMeta {
            name: meta.name.clone(),
            namespace: meta.namespace.clone(),
            uid: meta.uid.clone(),
            resource_version: meta.resource_version.clone(),
            generation: meta.generation,
            deletion_timestamp: meta.deletion_timestamp.clone(),
            labels: meta.labels.clone(),
            annotations: meta.annotations.as_ref().map(|a| {
                a.iter()
                    .filter(|(k, _)| self.annotations.contains(k))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            }),
            managed_fields: meta.managed_fields.as_ref().map(|entries| {
                entries
                    .iter()
                    .map(|e| ManagedFieldsEntry {
                        manager: e.manager.clone(),
                        operation: e.operation.clone(),
                        subresource: e.subresource.clone(),
                        ..Default::default()
                    })
                    .collect()
            }),
            ..Default::default()
        };
        let (group, kind) = obj
            .types
            .as_ref()
            .map(|t| {
                let group = t.api_version.rsplit_once('/').map_or("", |(g, _)| g);
                (group, t.kind.as_str())
            })
            .unwrap_or_default();
        let mut data = Value::Object(Map::new());
        let names = match (group, kind) {
            ("apiextensions.k8s.io", "CustomResourceDefinition") => crd_names::READS,
            _ => &[],
        };
        for pointer in readiness::reads(group, kind)
            .iter()
            .chain(crd_safety::reads(group, kind))
            .chain(names)
        {
            if let Some(v) = obj.data.pointer(pointer) {
                put(&mut data, pointer, v.clone());
            }
        }
        if let Some(versions) = crd_safety::versions_of(group, kind, &obj.data) {
            put(&mut data, "/spec/versions", versions);
        }
        data[SLIM_KEY] = serde_json::json!({ "managed": managed });
        DynamicObject {
            types: obj.types.clone(),
            metadata,
            data,
        }
    }
}

/// Whether `obj` is a cache's slim copy rather than an object read from the API server.
pub fn is_slim(obj: &DynamicObject) -> bool {
    obj.data.get(SLIM_KEY).is_some()
}

/// The digest of our managed fields that a slim copy carries; `None` for a full object or when we
/// owned no fields of it.
pub(crate) fn slim_digest(obj: &DynamicObject) -> Option<&str> {
    obj.data.get(SLIM_KEY)?.get("managed")?.as_str()
}

/// Sets `value` at the JSON pointer `pointer` (plain keys, no escapes), creating maps on the way.
fn put(root: &mut Value, pointer: &str, value: Value) {
    let mut at = root;
    let mut parts = pointer.trim_start_matches('/').split('/').peekable();
    while let Some(part) = parts.next() {
        if !at.is_object() {
            *at = Value::Object(Map::new());
        }
        let map = at.as_object_mut().expect("made a map above");
        if parts.peek().is_none() {
            map.insert(part.to_owned(), value);
            return;
        }
        at = map
            .entry(part.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd_safety::check_crd_change;
    use crate::readiness::readiness;
    use crate::testutil::obj;

    fn slimmer() -> Slimmer {
        Slimmer {
            field_manager: "us".into(),
            annotations: vec!["hash".into(), "adopt".into()],
        }
    }

    #[test]
    fn a_slim_object_keeps_what_each_reader_needs_and_nothing_else() {
        let deployment = obj(r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: d
  namespace: ns
  uid: u1
  resourceVersion: "7"
  generation: 2
  labels: {managed-by: us}
  annotations: {hash: abc, adopt: "true", kubectl.kubernetes.io/last-applied-configuration: "{...}"}
  managedFields:
  - {manager: us, operation: Apply, fieldsType: FieldsV1, fieldsV1: {"f:spec": {"f:replicas": {}}}}
  - {manager: kube-controller-manager, operation: Update, subresource: status, fieldsType: FieldsV1, fieldsV1: {"f:status": {}}}
spec:
  replicas: 2
  progressDeadlineSeconds: 600
  template: {spec: {containers: [{name: c, image: i, args: [--a, --b]}]}}
status:
  observedGeneration: 2
  replicas: 2
  updatedReplicas: 2
  readyReplicas: 1
  availableReplicas: 1
  conditions: [{type: Available, status: "False", reason: MinimumReplicasUnavailable}]
"#);
        let slim = slimmer().slim(&deployment);
        assert!(is_slim(&slim) && !is_slim(&deployment));
        assert_eq!(
            readiness("apps", "Deployment", &slim),
            readiness("apps", "Deployment", &deployment)
        );
        assert!(
            slim.data.pointer("/spec/template").is_none(),
            "no pod template"
        );
        let annotations = slim.metadata.annotations.clone().unwrap();
        assert_eq!(
            annotations.keys().collect::<Vec<_>>(),
            ["adopt", "hash"],
            "only the annotations asked for"
        );
        let managers: Vec<_> = slim
            .metadata
            .managed_fields
            .iter()
            .flatten()
            .map(|e| {
                (
                    e.manager.clone(),
                    e.subresource.clone(),
                    e.fields_v1.is_some(),
                )
            })
            .collect();
        assert_eq!(
            managers,
            [
                (Some("us".into()), None, false),
                (
                    Some("kube-controller-manager".into()),
                    Some("status".into()),
                    false
                )
            ]
        );
        assert_eq!(
            slim_digest(&slim),
            drift::managed_digest(&deployment, "us").as_deref()
        );
        assert!(slim_digest(&slim).is_some());
        assert_eq!(slim.metadata.resource_version.as_deref(), Some("7"));
    }

    #[test]
    fn a_slim_crd_answers_crd_safety_without_its_schema() {
        let crd = |versions: &str, stored: &str| {
            obj(&format!(
                "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: widgets.x.io}}\nspec: {{group: x.io, scope: Namespaced, names: {{kind: Widget, plural: widgets}}, versions: {versions}}}\nstatus: {{storedVersions: {stored}, conditions: [{{type: Established, status: \"True\"}}]}}\n"
            ))
        };
        let schema =
            "schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object}}}}";
        let live = crd(
            &format!(
                "[{{name: v1, served: true, storage: true, {schema}}}, {{name: v1beta1, served: true, storage: false, {schema}}}]"
            ),
            "[v1beta1, v1]",
        );
        let desired = crd(
            &format!("[{{name: v1, served: true, storage: true, {schema}}}]"),
            "[v1]",
        );
        let slim = slimmer().slim(&live);
        assert!(
            !serde_json::to_string(&slim.data)
                .unwrap()
                .contains("openAPIV3Schema")
        );
        assert_eq!(
            check_crd_change(&slim, &desired, true),
            check_crd_change(&live, &desired, true)
        );
        assert!(!check_crd_change(&slim, &desired, true).is_empty());
        assert_eq!(
            readiness("apiextensions.k8s.io", "CustomResourceDefinition", &slim),
            readiness::Readiness::Current
        );
        assert_eq!(slim.data["spec"]["names"]["plural"], "widgets");
        assert_eq!(slim_digest(&slim), None, "no managedFields: no digest");
    }
}
