//! What every requirement pinning one CRD says of a write of it: the findings of the requirements whose
//! action is `Deny` (the write is refused) apart from those whose action is `Warn` (admitted, and the
//! writer told). The installer asks it of its own writes, admission of everyone else's.

use serde_json::Value;

use crate::judge::{Change, Finding, judge};
use crate::requirement::{Action, Requirement};

/// What the requirements say of one write.
#[derive(Debug, Default, PartialEq)]
pub struct Verdict {
    /// Findings of requirements whose action is Deny: the write is refused.
    pub denied: Vec<Finding>,
    /// Findings of requirements whose action is Warn: admitted, and reported.
    pub warned: Vec<Finding>,
}

impl Verdict {
    fn add(&mut self, action: Action, findings: impl IntoIterator<Item = Finding>) {
        match action {
            Action::Deny => self.denied.extend(findings),
            Action::Warn => self.warned.extend(findings),
        }
    }

    pub fn extend(&mut self, other: Verdict) {
        self.denied.extend(other.denied);
        self.warned.extend(other.warned);
    }
}

/// A write of the CRD named `name` judged by every requirement among `requirements` that pins it and
/// asks for CRD changes to be judged (`customResourceDefinitionSchemaValidation`): `candidate` is the
/// CRD as it would be (JSON), `None` for its deletion, which breaks every such requirement.
pub fn crd_write<'a>(
    requirements: impl IntoIterator<Item = &'a Requirement>,
    name: &str,
    candidate: Option<&Value>,
) -> Verdict {
    let mut verdict = Verdict::default();
    for requirement in requirements.into_iter().filter(|r| r.crd_name == name) {
        let Some(action) = requirement.crd_action else {
            continue;
        };
        match candidate {
            Some(candidate) => verdict.add(action, judge(requirement, candidate)),
            None => verdict.add(
                action,
                [Finding {
                    requirement: requirement.name.clone(),
                    crd: requirement.crd_name.clone(),
                    version: String::new(),
                    path: String::new(),
                    change: Change::Deleted,
                }],
            ),
        }
    }
    verdict
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

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

    const NAME: &str = "gadgets.infrastructure.cluster.x-k8s.io";

    #[test]
    fn deny_refuses_warn_reports_and_no_action_asks_nothing() {
        let requirements = [
            requirement("hypershift-pins-gadgets", Some("Deny")),
            requirement("acm-watches-gadgets", Some("Warn")),
            requirement("only-objects", None),
        ];
        // `zone` removed, `size` now an integer.
        let broken = crd(json!({"size": {"type": "integer"}}));
        let verdict = crd_write(&requirements, NAME, Some(&broken));
        let denied: Vec<String> = verdict.denied.iter().map(ToString::to_string).collect();
        assert_eq!(denied.len(), 2, "{denied:#?}");
        assert!(denied.iter().all(|d| d.starts_with(
            "CompatibilityRequirement hypershift-pins-gadgets: gadgets.infrastructure.cluster.x-k8s.io version v1beta2, spec."
        )));
        assert!(denied.iter().any(|d| d.contains("spec.zone")));
        assert!(denied.iter().any(|d| d.contains("spec.size")));
        assert_eq!(verdict.warned.len(), 2);
        assert!(
            verdict
                .warned
                .iter()
                .all(|f| f.requirement == "acm-watches-gadgets")
        );
        // The pinned CRD itself, or one that only adds a field, breaks nothing; another CRD's write
        // is not theirs to judge.
        let grown = crd(
            json!({"size": {"type": "string"}, "zone": {"type": "string"}, "new": {"type": "string"}}),
        );
        assert_eq!(
            crd_write(&requirements, NAME, Some(&grown)),
            Verdict::default()
        );
        assert_eq!(
            crd_write(&requirements, "other.example.com", Some(&broken)),
            Verdict::default()
        );
    }

    #[test]
    fn a_deletion_breaks_every_requirement_that_judges_the_crd() {
        let requirements = [
            requirement("hypershift-pins-gadgets", Some("Deny")),
            requirement("acm-watches-gadgets", Some("Warn")),
            requirement("only-objects", None),
        ];
        let verdict = crd_write(&requirements, NAME, None);
        let said = |findings: &[Finding]| -> Vec<String> {
            findings.iter().map(ToString::to_string).collect()
        };
        assert_eq!(
            said(&verdict.denied),
            [
                "CompatibilityRequirement hypershift-pins-gadgets: gadgets.infrastructure.cluster.x-k8s.io: the CRD would be deleted"
            ]
        );
        assert_eq!(
            said(&verdict.warned),
            [
                "CompatibilityRequirement acm-watches-gadgets: gadgets.infrastructure.cluster.x-k8s.io: the CRD would be deleted"
            ]
        );
    }
}
