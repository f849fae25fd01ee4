//! The installer's own API: `InfrastructureProvider` (group `installer.cluster-api.openshift.io`,
//! version `v1alpha1`, cluster-scoped; CRD in `manifests/`). One object per infrastructure provider a
//! user wants beside the platform's own, named after the provider (`gcp`, `azure`, ...); deleting it
//! uninstalls that provider. The installer reads the objects here (untrusted input: every problem names
//! the object and the field) and writes only their `status` and its finalizer. What is read is here
//! (pure); the finalizer's write is the installer library's.

use kube_core::ResourceExt;
use kube_core::{ApiResource, DynamicObject};
use serde_json::Value;

pub const GROUP: &str = "installer.cluster-api.openshift.io";
pub const VERSION: &str = "v1alpha1";
pub const KIND: &str = "InfrastructureProvider";
pub const PLURAL: &str = "infrastructureproviders";
/// Holds a deleted object until its provider is uninstalled.
pub const FINALIZER: &str = "installer.cluster-api.openshift.io/uninstall";

pub fn resource() -> ApiResource {
    ApiResource {
        group: GROUP.into(),
        version: VERSION.into(),
        api_version: format!("{GROUP}/{VERSION}"),
        kind: KIND.into(),
        plural: PLURAL.into(),
    }
}

/// What one `InfrastructureProvider` asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// `metadata.name`: the provider name (the transport ConfigMap's `provider.cluster.x-k8s.io/name`).
    pub name: String,
    /// `metadata.deletionTimestamp` is set: uninstall.
    pub deleting: bool,
    /// `spec.deleteCustomResourceDefinitions`: on uninstall, delete the provider's CRDs too, once they
    /// have no instances left. Default false: CRDs (and so every object of their kinds) are kept.
    pub delete_crds: bool,
    /// Whether the object holds [`FINALIZER`].
    pub finalized: bool,
    pub generation: Option<i64>,
    /// Why the object cannot be acted on (a name that is no provider name, a malformed spec); it is
    /// reported in its status and nothing is installed or removed for it.
    pub problem: Option<String>,
}

/// Reads one object. Never fails: a problem is carried in [`Request::problem`], so that the object's
/// status can say it.
pub fn read(obj: &DynamicObject) -> Request {
    let name = obj.name_any();
    let delete_crds = obj.data.pointer("/spec/deleteCustomResourceDefinitions");
    let problem = match (name_problem(&name), delete_crds) {
        (Some(p), _) => Some(p),
        (None, Some(v)) if !v.is_boolean() && !v.is_null() => Some(format!(
            "{KIND} {name}: spec.deleteCustomResourceDefinitions must be true or false, not {v}"
        )),
        (None, _) => match obj.data.get("spec") {
            Some(spec) if !spec.is_object() && !spec.is_null() => {
                Some(format!("{KIND} {name}: spec must be an object, not {spec}"))
            }
            _ => None,
        },
    };
    Request {
        deleting: obj.metadata.deletion_timestamp.is_some(),
        delete_crds: delete_crds.and_then(Value::as_bool).unwrap_or(false),
        finalized: obj.finalizers().iter().any(|f| f == FINALIZER),
        generation: obj.metadata.generation,
        name,
        problem,
    }
}

/// Why `name` cannot name an extra infrastructure provider: it must be a DNS label (it becomes part
/// of object labels), and not a name of the core provider or of a provider's companion ConfigMap
/// (`openshift-cluster-api*`), whose objects belong to another provider.
fn name_problem(name: &str) -> Option<String> {
    if !capi_object::is_dns_label(name) {
        return Some(format!(
            "{KIND} {name:?}: the name must be a provider name (a DNS label such as gcp or azure)"
        ));
    }
    if name == "cluster-api" || name.starts_with("openshift-cluster-api") {
        return Some(format!(
            "{KIND} {name}: {name} is not an infrastructure provider (the core provider and the openshift-cluster-api* policies are installed on their own)"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(yaml: &str) -> DynamicObject {
        serde_saphyr::from_str(yaml).unwrap()
    }

    #[test]
    fn reads_name_deletion_crd_policy_and_finalizer() {
        let r = read(&obj(
            "apiVersion: installer.cluster-api.openshift.io/v1alpha1\nkind: InfrastructureProvider\nmetadata: {name: gcp, generation: 2, deletionTimestamp: \"2026-11-30T18:00:00Z\", finalizers: [installer.cluster-api.openshift.io/uninstall]}\nspec: {deleteCustomResourceDefinitions: true}\n",
        ));
        assert_eq!(
            r,
            Request {
                name: "gcp".into(),
                deleting: true,
                delete_crds: true,
                finalized: true,
                generation: Some(2),
                problem: None,
            }
        );
        let plain = read(&obj(
            "apiVersion: installer.cluster-api.openshift.io/v1alpha1\nkind: InfrastructureProvider\nmetadata: {name: azure}\n",
        ));
        assert!(!plain.deleting && !plain.delete_crds && !plain.finalized);
        assert_eq!(plain.problem, None);
    }

    #[test]
    fn a_bad_name_or_spec_is_a_problem_naming_the_object_and_field() {
        let cases = [
            (
                "name: cluster-api",
                "cluster-api is not an infrastructure provider",
            ),
            (
                "name: openshift-cluster-api-aws",
                "openshift-cluster-api-aws is not an infrastructure provider",
            ),
            ("name: GCP", "must be a provider name"),
            ("name: gcp.example", "must be a provider name"),
        ];
        for (meta, want) in cases {
            let r = read(&obj(&format!(
                "apiVersion: v\nkind: InfrastructureProvider\nmetadata: {{{meta}}}\n"
            )));
            let problem = r.problem.unwrap_or_default();
            assert!(problem.contains(want), "{meta}: {problem}");
        }
        let r = read(&obj(
            "apiVersion: v\nkind: InfrastructureProvider\nmetadata: {name: gcp}\nspec: {deleteCustomResourceDefinitions: \"yes\"}\n",
        ));
        assert_eq!(
            r.problem.as_deref(),
            Some(
                "InfrastructureProvider gcp: spec.deleteCustomResourceDefinitions must be true or false, not \"yes\""
            )
        );
        assert!(!r.delete_crds, "a malformed value deletes nothing");
    }
}
