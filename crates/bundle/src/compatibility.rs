//! CRD compatibility requirements respected before the first write (issue 49): a provider's CRDs
//! judged against every `CompatibilityRequirement` that pins them ([`capi_compat::judge`], the one
//! judgement the requirements' `Compatible` condition uses too). A requirement whose
//! `customResourceDefinitionSchemaValidation.action` is `Deny` refuses the provider's version whole —
//! nothing of it is written, and the installer keeps the last good version running — with every
//! finding named; `Warn` lets it apply and reports the findings. A requirement without that stanza asks
//! nothing of CRD changes.

use capi_compat::{Action, Finding, Requirement};
use kube_core::DynamicObject;

/// What the requirements say of one provider's CRDs.
#[derive(Debug, Default, PartialEq)]
pub struct Judged {
    /// Findings of requirements whose action is Deny: the version is refused.
    pub denied: Vec<Finding>,
    /// Findings of requirements whose action is Warn: applied, and reported.
    pub warned: Vec<Finding>,
}

/// Every CRD among `objects` judged against the requirements that pin it (by name).
pub fn judge<'a>(
    objects: impl IntoIterator<Item = &'a DynamicObject>,
    requirements: &[Requirement],
) -> Judged {
    let mut judged = Judged::default();
    for object in objects {
        let is_crd = object.types.as_ref().is_some_and(|t| {
            t.kind == "CustomResourceDefinition" && t.api_version == "apiextensions.k8s.io/v1"
        });
        let Some(name) = object.metadata.name.as_deref().filter(|_| is_crd) else {
            continue;
        };
        let pinning = requirements.iter().filter(|r| r.crd_name == name);
        for requirement in pinning {
            let Some(action) = requirement.crd_action else {
                continue;
            };
            let candidate = serde_json::to_value(object).expect("an object serializes");
            let findings = capi_compat::judge(requirement, &candidate);
            match action {
                Action::Deny => judged.denied.extend(findings),
                Action::Warn => judged.warned.extend(findings),
            }
        }
    }
    judged
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

    fn requirement(name: &str, action: Option<&str>) -> Requirement {
        let pinned = crd(json!({"size": {"type": "string"}, "zone": {"type": "string"}}));
        let mut object = json!({
            "apiVersion": "apiextensions.openshift.io/v1alpha1", "kind": "CompatibilityRequirement",
            "metadata": {"name": name},
            "spec": {"compatibilitySchema": {
                "customResourceDefinition": {"type": "YAML", "data": serde_json::to_string(&pinned).unwrap()},
                "requiredVersions": {"defaultSelection": "StorageOnly"}}},
        });
        if let Some(action) = action {
            object["spec"]["customResourceDefinitionSchemaValidation"] = json!({"action": action});
        }
        Requirement::read(&object).unwrap()
    }

    fn object(value: Value) -> DynamicObject {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn deny_refuses_warn_reports_and_no_action_asks_nothing() {
        let requirements = [
            requirement("hypershift-pins-gadgets", Some("Deny")),
            requirement("acm-watches-gadgets", Some("Warn")),
            requirement("only-objects", None),
        ];
        // `zone` removed, `size` now an integer.
        let broken = object(crd(json!({"size": {"type": "integer"}})));
        let other: DynamicObject = object(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "gadgets.infrastructure.cluster.x-k8s.io"}}),
        );
        let judged = judge([&broken, &other], &requirements);
        let denied: Vec<String> = judged.denied.iter().map(ToString::to_string).collect();
        assert_eq!(denied.len(), 2, "{denied:#?}");
        assert!(denied.iter().all(|d| d.starts_with(
            "CompatibilityRequirement hypershift-pins-gadgets: gadgets.infrastructure.cluster.x-k8s.io version v1beta2, spec."
        )));
        assert!(denied.iter().any(|d| d.contains("spec.zone")));
        assert!(denied.iter().any(|d| d.contains("spec.size")));
        assert_eq!(judged.warned.len(), 2);
        assert!(
            judged
                .warned
                .iter()
                .all(|f| f.requirement == "acm-watches-gadgets")
        );
        // The pinned CRD itself, or one that only adds a field, breaks nothing.
        let grown = object(crd(
            json!({"size": {"type": "string"}, "zone": {"type": "string"}, "new": {"type": "string"}}),
        ));
        assert_eq!(judge([&grown], &requirements), Judged::default());
    }
}
