//! CRD compatibility requirements respected before the first write (issue 49): a provider's CRDs
//! judged against every `CompatibilityRequirement` that pins them ([`capi_compat::crd_write`], the one
//! verdict admission gives other writers, over the judgement the requirements' `Compatible` condition
//! uses too). A requirement whose `customResourceDefinitionSchemaValidation.action` is `Deny` refuses
//! the provider's version whole — nothing of it is written, and the installer keeps the last good
//! version running — with every finding named; `Warn` lets it apply and reports the findings. A
//! requirement without that stanza asks nothing of CRD changes.

use capi_compat::{Requirement, Verdict, crd_write};
use kube_core::DynamicObject;

/// Every CRD among `objects` judged against the requirements that pin it (by name).
pub fn judge<'a>(
    objects: impl IntoIterator<Item = &'a DynamicObject>,
    requirements: &[Requirement],
) -> Verdict {
    let mut verdict = Verdict::default();
    for object in objects {
        let is_crd = object.types.as_ref().is_some_and(|t| {
            t.kind == "CustomResourceDefinition" && t.api_version == "apiextensions.k8s.io/v1"
        });
        let Some(name) = object.metadata.name.as_deref().filter(|_| is_crd) else {
            continue;
        };
        if requirements.iter().any(|r| r.crd_name == name) {
            let candidate = serde_json::to_value(object).expect("an object serializes");
            verdict.extend(crd_write(requirements, name, Some(&candidate)));
        }
    }
    verdict
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn crd(properties: Value) -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "gadgets.infrastructure.cluster.x-k8s.io"},
            "spec": {"group": "infrastructure.cluster.x-k8s.io", "scope": "Namespaced",
                     "names": {"kind": "Gadget", "plural": "gadgets"},
                     "versions": [{"name": "v1beta2", "served": true, "storage": true,
                                   "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                       "spec": {"type": "object", "properties": properties}}}}}]},
        })
    }

    fn requirement(name: &str) -> Requirement {
        let pinned = crd(json!({"size": {"type": "string"}, "zone": {"type": "string"}}));
        Requirement::read(&json!({
            "apiVersion": "apiextensions.openshift.io/v1alpha1", "kind": "CompatibilityRequirement",
            "metadata": {"name": name},
            "spec": {"compatibilitySchema": {
                "customResourceDefinition": {"type": "YAML", "data": serde_json::to_string(&pinned).unwrap()},
                "requiredVersions": {"defaultSelection": "StorageOnly"}},
                "customResourceDefinitionSchemaValidation": {"action": "Deny"}},
        }))
        .unwrap()
    }

    fn object(value: Value) -> DynamicObject {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn only_the_bundles_crds_are_judged_each_by_its_name() {
        let requirements = [requirement("hypershift-pins-gadgets")];
        // `zone` removed, `size` now an integer.
        let broken = object(crd(json!({"size": {"type": "integer"}})));
        // Another kind under the pinned CRD's name is not a CRD.
        let other: DynamicObject = object(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "gadgets.infrastructure.cluster.x-k8s.io"}}),
        );
        let verdict = judge([&broken, &other], &requirements);
        assert_eq!(verdict.denied.len(), 2, "{verdict:#?}");
        assert!(verdict.warned.is_empty());
        assert_eq!(judge([&other], &requirements), Verdict::default());
    }
}
