//! The bound on `capi-operator.openshift.io/adopt-existing: always` ([`crate::reference::ADOPT_EXISTING`]),
//! as far as the bundle's text tells: never on a built-in object. The reference uses it on a
//! provider's own CRDs (the core profile's IPAM CRDs) and its own Deployment, never on an object of
//! Kubernetes or OpenShift; taking one over (a `system:` ClusterRole bound to every user, the
//! namespace's `kube-root-ca.crt` that kube-controller-manager writes) hands what it grants, or what it
//! holds, to whoever writes the bundle. What only the live object tells (who writes it, whose label it
//! carries) the apply engine checks before the first write ([`capi_apply::ownership::adoption_refusal`]).

use capi_apply::ownership::built_in;
use capi_apply::{ObjectKey, PlanInput};
use kube_core::DynamicObject;

use super::{Origin, Rule, Violation};

/// One [`Rule::Adoption`] violation per object of `inputs` (with their origins) that asks to be taken
/// over and may not be.
pub fn check<'a>(inputs: impl IntoIterator<Item = (&'a PlanInput, &'a Origin)>) -> Vec<Violation> {
    inputs
        .into_iter()
        .filter_map(|(input, origin)| {
            let key = capi_apply::key_of(&input.object)?;
            let detail = refusal(&key, &input.object, input.take_over)?;
            Some(Violation {
                origin: origin.clone(),
                object: key,
                rule: Rule::Adoption,
                detail,
            })
        })
        .collect()
}

/// Why `object` (asked to be taken over, `take_over`) may not be, or `None`.
pub fn refusal(key: &ObjectKey, object: &DynamicObject, take_over: bool) -> Option<String> {
    if !take_over {
        return None;
    }
    built_in(key, object.metadata.labels.as_ref())
        .map(|why| format!("adopt-existing on {why}: never taken over"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(yaml: &str) -> (ObjectKey, DynamicObject) {
        let o: DynamicObject = serde_saphyr::from_str(yaml).unwrap();
        (capi_apply::key_of(&o).unwrap(), o)
    }

    #[test]
    fn built_in_objects_are_never_taken_over() {
        for (yaml, expect) in [
            (
                "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: 'system:public-info-viewer'}\n",
                "the system: prefix",
            ),
            (
                "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: viewer, labels: {kubernetes.io/bootstrapping: rbac-defaults}}\n",
                "label kubernetes.io/bootstrapping=rbac-defaults",
            ),
            (
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kube-root-ca.crt, namespace: openshift-cluster-api}\n",
                "ConfigMap kube-root-ca.crt, which the cluster creates",
            ),
            (
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: openshift-service-ca.crt, namespace: openshift-cluster-api}\n",
                "ConfigMap openshift-service-ca.crt",
            ),
        ] {
            let (key, o) = object(yaml);
            let why = refusal(&key, &o, true).unwrap_or_else(|| panic!("{key} taken over"));
            assert!(why.contains(expect), "{why}");
            assert_eq!(
                refusal(&key, &o, false),
                None,
                "{key} without adopt-existing"
            );
        }
    }

    #[test]
    fn a_providers_own_objects_may_be_taken_over() {
        for yaml in [
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: ipaddresses.ipam.cluster.x-k8s.io}\n",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: capa-controller-manager, namespace: openshift-cluster-api}\n",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: capa-config, namespace: openshift-cluster-api}\n",
        ] {
            let (key, o) = object(yaml);
            assert_eq!(refusal(&key, &o, true), None, "{key}");
        }
    }
}
