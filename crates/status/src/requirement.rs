//! The `status` of a `CompatibilityRequirement` (`apiextensions.openshift.io/v1alpha1`), in the
//! reference's fields, conditions and reasons: `crdName`, `observedCRD`, and `Progressing`, `Admitted`
//! and `Compatible`. `Compatible` is the same judgement the installer makes before it writes a CRD
//! ([`capi_compat::judge`]), against the live CRD.
//!
//! `Admitted` says whether the requirement is enforced by admission on every writer: `True` once the
//! webhook registration that matches what it pins ([`capi_compat::registration`]) is written, from
//! which moment every write it matches is judged or, while the webhook cannot answer, refused (the
//! webhooks fail closed); `False` with reason `NotAdmitted` while the registration is not written,
//! saying why. A tool that waits for `Admitted=True` before it relies on the requirement is not
//! misled. The installer's own writes are judged before admission, whatever `Admitted` says.

use capi_compat::{Requirement, RequirementError};
use capi_openshift::conditions::{self, Condition};
use serde_json::{Value, json};

/// How many findings the `Compatible` message lists before it counts the rest.
const LISTED_FINDINGS: usize = 10;

/// What a pass knows of one requirement: read or not, and the live CRD it pins.
pub enum Observed<'a> {
    /// The spec cannot be used (the error names the field).
    Invalid(&'a RequirementError),
    /// Read; `crd` is the live CRD of its `crd_name` (`None`: there is none).
    Read {
        requirement: &'a Requirement,
        crd: Option<&'a Value>,
        /// Whether its webhooks are registered: `Err` says why not.
        registered: Result<(), &'a str>,
    },
}

/// The three conditions of the reference, every one with a message (the API requires one).
pub fn conditions(observed: &Observed<'_>) -> Vec<Condition> {
    let not_admitted =
        |why: String| Condition::new("Admitted", false, "NotAdmitted".to_string(), why);
    match observed {
        Observed::Invalid(e) => vec![
            Condition::new(
                "Progressing",
                false,
                "ConfigurationError".to_string(),
                e.to_string(),
            ),
            not_admitted("the requirement cannot be read, so nothing enforces it".into()),
            Condition::new(
                "Compatible",
                false,
                "ConfigurationError".to_string(),
                e.to_string(),
            ),
        ],
        Observed::Read {
            requirement,
            crd,
            registered,
        } => {
            let admitted = match registered {
                Err(why) => {
                    not_admitted(format!("the admission webhooks are not registered: {why}"))
                }
                Ok(()) => Condition::new(
                    "Admitted",
                    true,
                    "Admitted".to_string(),
                    enforced(requirement),
                ),
            };
            let compatible = match crd {
                None => Condition::new(
                    "Compatible",
                    false,
                    "CRDNotFound".to_string(),
                    format!(
                        "CustomResourceDefinition {} does not exist",
                        requirement.crd_name
                    ),
                ),
                Some(crd) => {
                    let findings = capi_compat::judge(requirement, crd);
                    if findings.is_empty() {
                        Condition::new(
                            "Compatible",
                            true,
                            "Compatible".to_string(),
                            format!(
                                "CustomResourceDefinition {} meets the requirement",
                                requirement.crd_name
                            ),
                        )
                    } else {
                        let mut message: Vec<String> = findings
                            .iter()
                            .take(LISTED_FINDINGS)
                            .map(ToString::to_string)
                            .collect();
                        if findings.len() > LISTED_FINDINGS {
                            message.push(format!("and {} more", findings.len() - LISTED_FINDINGS));
                        }
                        Condition::new(
                            "Compatible",
                            false,
                            "RequirementsNotMet".to_string(),
                            message.join("; "),
                        )
                    }
                }
            };
            vec![
                Condition::new(
                    "Progressing",
                    false,
                    "UpToDate".to_string(),
                    "the requirement is read and judged",
                ),
                admitted,
                compatible,
            ]
        }
    }
}

/// What admission enforces of `requirement`, once registered.
fn enforced(requirement: &Requirement) -> String {
    let crd = &requirement.crd_name;
    match (requirement.crd_action, &requirement.objects) {
        (Some(_), Some(_)) => format!(
            "every write of CustomResourceDefinition {crd}, and of its objects in the pinned versions, is judged by admission"
        ),
        (Some(_), None) => {
            format!("every write of CustomResourceDefinition {crd} is judged by admission")
        }
        (None, Some(_)) => format!(
            "every write of the objects of CustomResourceDefinition {crd} in the pinned versions is judged by admission"
        ),
        (None, None) => "asks admission for nothing (neither customResourceDefinitionSchemaValidation nor objectSchemaValidation)".to_string(),
    }
}

/// The whole `status`: the conditions (each with the requirement's `generation`, keeping
/// `lastTransitionTime` while its status is unchanged), `crdName` and `observedCRD`.
pub fn status(
    observed: &Observed<'_>,
    generation: Option<i64>,
    current: Option<&Value>,
    now: &str,
) -> Value {
    let conditions: Vec<Value> = conditions::render(&conditions(observed), current, now)
        .into_iter()
        .map(|mut c| {
            if let Some(g) = generation {
                c["observedGeneration"] = json!(g);
            }
            c
        })
        .collect();
    let mut status = json!({"conditions": conditions});
    if let Observed::Read {
        requirement, crd, ..
    } = observed
    {
        status["crdName"] = json!(requirement.crd_name);
        let uid = crd.and_then(|c| c.pointer("/metadata/uid"));
        let crd_generation = crd.and_then(|c| c.pointer("/metadata/generation"));
        if let (Some(uid), Some(crd_generation)) = (uid, crd_generation) {
            status["observedCRD"] = json!({"uid": uid, "generation": crd_generation});
        }
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    fn requirement() -> Requirement {
        let pinned = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "gadgets.infrastructure.cluster.x-k8s.io"},
            "spec": {"group": "infrastructure.cluster.x-k8s.io", "scope": "Namespaced",
                     "names": {"kind": "Gadget", "plural": "gadgets"},
                     "versions": [{"name": "v1", "served": true, "storage": true,
                                   "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                       "spec": {"type": "object", "properties": {"size": {"type": "string"}}}}}}}]},
        });
        Requirement::read(&json!({
            "metadata": {"name": "pin-gadgets"},
            "spec": {"compatibilitySchema": {
                "customResourceDefinition": {"type": "YAML", "data": pinned.to_string()},
                "requiredVersions": {"defaultSelection": "StorageOnly"}}},
        }))
        .unwrap()
    }

    fn by_type(status: &Value, type_: &str) -> (String, String, String) {
        let c = conditions::find(Some(status), type_).unwrap();
        let text = |k: &str| c[k].as_str().unwrap().to_string();
        (text("status"), text("reason"), text("message"))
    }

    #[test]
    fn compatible_not_found_not_met_and_invalid() {
        let r = requirement();
        let mut live = serde_json::from_str::<Value>(r.pinned.to_string().as_str()).unwrap();
        live["metadata"]["uid"] = json!("0f1e2d3c-0000-4000-8000-000000000001");
        live["metadata"]["generation"] = json!(3);
        let now = "2026-12-05T10:00:00Z";
        let ok = status(
            &Observed::Read {
                requirement: &r,
                crd: Some(&live),
                registered: Ok(()),
            },
            Some(2),
            None,
            now,
        );
        assert_eq!(by_type(&ok, "Compatible").1, "Compatible");
        assert_eq!(by_type(&ok, "Progressing").1, "UpToDate");
        assert_eq!(
            by_type(&ok, "Admitted"),
            (
                "True".into(),
                "Admitted".into(),
                "asks admission for nothing (neither customResourceDefinitionSchemaValidation nor objectSchemaValidation)".into()
            )
        );
        assert_eq!(ok["crdName"], "gadgets.infrastructure.cluster.x-k8s.io");
        assert_eq!(
            ok["observedCRD"],
            json!({"uid": "0f1e2d3c-0000-4000-8000-000000000001", "generation": 3})
        );
        assert!(
            ok["conditions"]
                .as_array()
                .unwrap()
                .iter()
                .all(|c| c["observedGeneration"] == 2
                    && c["message"].as_str().is_some_and(|m| !m.is_empty()))
        );

        let missing = status(
            &Observed::Read {
                requirement: &r,
                crd: None,
                registered: Err("forbidden"),
            },
            Some(2),
            Some(&ok),
            now,
        );
        assert_eq!(by_type(&missing, "Compatible").1, "CRDNotFound");
        assert_eq!(
            by_type(&missing, "Admitted"),
            (
                "False".into(),
                "NotAdmitted".into(),
                "the admission webhooks are not registered: forbidden".into()
            )
        );
        assert!(missing.get("observedCRD").is_none());

        live["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
            ["size"]["type"] = json!("integer");
        let broken = status(
            &Observed::Read {
                requirement: &r,
                crd: Some(&live),
                registered: Ok(()),
            },
            Some(2),
            Some(&ok),
            now,
        );
        let (s, reason, message) = by_type(&broken, "Compatible");
        assert_eq!(
            (s.as_str(), reason.as_str()),
            ("False", "RequirementsNotMet")
        );
        assert!(message.contains("spec.size"), "{message}");
        let mut enforcing = r.clone();
        enforcing.crd_action = Some(capi_compat::Action::Deny);
        assert_eq!(
            enforced(&enforcing),
            "every write of CustomResourceDefinition gadgets.infrastructure.cluster.x-k8s.io is judged by admission"
        );

        let error = RequirementError {
            requirement: "pin-gadgets".into(),
            path: "spec.compatibilitySchema.customResourceDefinition.data".into(),
            message: "not YAML".into(),
        };
        let invalid = status(&Observed::Invalid(&error), Some(2), None, now);
        assert_eq!(by_type(&invalid, "Progressing").1, "ConfigurationError");
        assert_eq!(by_type(&invalid, "Admitted").1, "NotAdmitted");
        assert!(by_type(&invalid, "Compatible").2.contains("not YAML"));
    }
}
