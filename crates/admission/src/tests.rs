//! The answers to reviews as the API server sends them (`admission.k8s.io/v1`), from requirements
//! read as the API server returns them.

use serde_json::{Value, json};

use super::*;

const CRD: &str = "gadgets.infrastructure.cluster.x-k8s.io";

fn crd(properties: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD},
        "spec": {"group": "infrastructure.cluster.x-k8s.io", "scope": "Namespaced",
                 "names": {"kind": "Gadget", "plural": "gadgets"},
                 "versions": [{"name": "v1beta2", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                   "spec": {"type": "object", "properties": properties}}}}}]},
    })
}

fn requirement(
    name: &str,
    crd_action: Option<&str>,
    object_action: Option<&str>,
) -> Arc<Requirement> {
    let pinned =
        crd(json!({"size": {"type": "string"}, "zone": {"type": "string", "enum": ["a", "b"]}}));
    let mut object = json!({
        "apiVersion": "apiextensions.openshift.io/v1alpha1", "kind": "CompatibilityRequirement",
        "metadata": {"name": name},
        "spec": {"compatibilitySchema": {
            "customResourceDefinition": {"type": "YAML", "data": pinned.to_string()},
            "requiredVersions": {"defaultSelection": "StorageOnly"}}},
    });
    if let Some(action) = crd_action {
        object["spec"]["customResourceDefinitionSchemaValidation"] = json!({"action": action});
    }
    if let Some(action) = object_action {
        object["spec"]["objectSchemaValidation"] = json!({"action": action});
    }
    Arc::new(Requirement::read(&object).unwrap())
}

fn review(
    operation: &str,
    kind: (&str, &str, &str),
    name: &str,
    object: Option<Value>,
    old: Option<Value>,
) -> AdmissionRequest<DynamicObject> {
    let (group, version, kind) = kind;
    let review = json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "kind": {"group": group, "version": version, "kind": kind},
            "resource": {"group": group, "version": version, "resource": "whatever"},
            "name": name, "namespace": if kind == "Gadget" { json!("hosted") } else { Value::Null },
            "operation": operation,
            "userInfo": {"username": "admin"},
            "object": object, "oldObject": old,
        },
    });
    let review: Review = serde_json::from_value(review).unwrap();
    review.try_into().unwrap()
}

fn crd_review(operation: &str, object: Option<Value>) -> AdmissionRequest<DynamicObject> {
    review(
        operation,
        ("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
        CRD,
        object,
        None,
    )
}

fn gadget(spec: Value) -> Value {
    json!({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "Gadget",
           "metadata": {"name": "g", "namespace": "hosted"}, "spec": spec})
}

fn gadget_review(spec: Value) -> AdmissionRequest<DynamicObject> {
    review(
        "CREATE",
        ("infrastructure.cluster.x-k8s.io", "v1beta2", "Gadget"),
        "g",
        Some(gadget(spec)),
        None,
    )
}

#[test]
fn a_crd_change_that_breaks_a_deny_requirement_is_refused_naming_every_finding() {
    let requirements = [
        requirement("hypershift", Some("Deny"), None),
        requirement("acm", Some("Warn"), None),
    ];
    let broken = crd(json!({"size": {"type": "integer"}}));
    let response = crd_answer(Some(&requirements), &crd_review("UPDATE", Some(broken)));
    assert!(!response.allowed);
    assert_eq!(response.uid, "705ab4f5-6393-11e8-b7cc-42010a800002");
    let message = &response.result.message;
    assert!(message.starts_with(&format!("CustomResourceDefinition {CRD} breaks what CompatibilityRequirements pin: CompatibilityRequirement hypershift: {CRD} version v1beta2, spec.")), "{message}");
    assert!(
        message.contains("spec.size: type changed from string to integer"),
        "{message}"
    );
    assert!(message.contains("spec.zone: field removed"), "{message}");
    assert_eq!(response.warnings.as_ref().map(Vec::len), Some(2));
}

#[test]
fn a_warn_requirement_admits_with_warnings_and_a_compatible_change_passes_silently() {
    let warn_only = [requirement("acm", Some("Warn"), None)];
    let broken = crd(json!({"size": {"type": "integer"}}));
    let response = crd_answer(Some(&warn_only), &crd_review("UPDATE", Some(broken)));
    assert!(response.allowed);
    let warnings = response.warnings.unwrap();
    assert!(
        warnings
            .iter()
            .all(|w| w.starts_with("CompatibilityRequirement acm: ")),
        "{warnings:?}"
    );

    let deny = [requirement("hypershift", Some("Deny"), None)];
    let grown = crd(
        json!({"size": {"type": "string"}, "zone": {"type": "string", "enum": ["a", "b", "c"]}, "new": {}}),
    );
    let response = crd_answer(Some(&deny), &crd_review("CREATE", Some(grown)));
    assert!(response.allowed, "{:?}", response.result);
    assert_eq!(response.warnings, None);
}

#[test]
fn deleting_a_pinned_crd_is_refused() {
    let requirements = [requirement("hypershift", Some("Deny"), None)];
    let response = crd_answer(Some(&requirements), &crd_review("DELETE", None));
    assert!(!response.allowed);
    assert!(response.result.message.ends_with("CompatibilityRequirement hypershift: gadgets.infrastructure.cluster.x-k8s.io: the CRD would be deleted"), "{}", response.result.message);
}

#[test]
fn nothing_is_let_through_before_the_requirements_are_read() {
    let broken = crd(json!({}));
    let response = crd_answer(None, &crd_review("UPDATE", Some(broken)));
    assert!(!response.allowed);
    assert_eq!(response.result.message, NOT_READ);
    let response = object_answer(None, "hypershift", &gadget_review(json!({})));
    assert!(!response.allowed);
}

#[test]
fn an_object_that_breaks_the_pinned_schema_is_refused_or_warned_as_the_requirement_says() {
    let requirements = [
        requirement("hypershift", None, Some("Deny")),
        requirement("acm", None, Some("Warn")),
    ];
    let bad = json!({"size": 3, "zone": "c", "addedLater": true});
    let response = object_answer(
        Some(&requirements),
        "hypershift",
        &gadget_review(bad.clone()),
    );
    assert!(!response.allowed);
    assert_eq!(
        response.result.message,
        "Gadget hosted/g breaks the schema CompatibilityRequirement hypershift pins: spec.size: must be of type string, not integer; spec.zone: \"c\" is not one of the allowed values: \"a\", \"b\""
    );
    let response = object_answer(Some(&requirements), "acm", &gadget_review(bad));
    assert!(response.allowed);
    assert_eq!(
        response.warnings.unwrap(),
        [
            "CompatibilityRequirement acm: spec.size: must be of type string, not integer",
            "CompatibilityRequirement acm: spec.zone: \"c\" is not one of the allowed values: \"a\", \"b\""
        ]
    );
    // Good objects pass; a requirement gone since the registration judges nothing.
    let good = json!({"size": "3", "zone": "a", "addedLater": true});
    assert!(object_answer(Some(&requirements), "hypershift", &gadget_review(good)).allowed);
    assert!(
        object_answer(
            Some(&requirements),
            "deleted",
            &gadget_review(json!({"size": 3}))
        )
        .allowed
    );
}

#[test]
fn a_review_that_is_not_one_is_answered_invalid() {
    let review: Review = serde_json::from_value(
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}),
    )
    .unwrap();
    let answered = answer(review, |_| unreachable!("no request to judge"));
    let response = answered.response.unwrap();
    assert!(!response.allowed);
}
