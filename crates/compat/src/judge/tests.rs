use serde_json::{Value, json};

use super::*;

/// A CRD `widgets.example.com` with these `spec.versions`.
fn crd(versions: Vec<Value>) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": versions,
        },
    })
}

fn version(name: &str, served: bool, storage: bool, schema: Value) -> Value {
    json!({"name": name, "served": served, "storage": storage,
           "schema": {"openAPIV3Schema": schema}})
}

/// One served storage version `v1` whose `spec` has one property, `field`, with this schema.
fn with_field(field: Value) -> Value {
    crd(vec![version("v1", true, true, root(field))])
}

fn root(field: Value) -> Value {
    json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"field": field}}}})
}

/// A requirement object pinning `pinned` (JSON is YAML), as the API server returns it.
fn object(pinned: &Value, required: Value, excluded: Option<Value>) -> Value {
    let mut schema = json!({
        "customResourceDefinition": {"type": "YAML", "data": pinned.to_string()},
        "requiredVersions": required,
    });
    if let Some(excluded) = excluded {
        schema["excludedFields"] = excluded;
    }
    json!({
        "apiVersion": "apiextensions.openshift.io/v1alpha1",
        "kind": "CompatibilityRequirement",
        "metadata": {"name": "pin-widgets"},
        "spec": {
            "compatibilitySchema": schema,
            "customResourceDefinitionSchemaValidation": {"action": "Deny"},
        },
    })
}

fn requirement(pinned: &Value, required: Value, excluded: Option<Value>) -> Requirement {
    Requirement::read(&object(pinned, required, excluded)).expect("a readable requirement")
}

fn storage_only(pinned: &Value) -> Requirement {
    requirement(pinned, json!({"defaultSelection": "StorageOnly"}), None)
}

/// The findings as (version, path, change), the rest being the same for every one.
fn changes(requirement: &Requirement, candidate: &Value) -> Vec<(String, String, Change)> {
    judge(requirement, candidate)
        .into_iter()
        .map(|f| {
            assert_eq!(f.requirement, "pin-widgets");
            assert_eq!(f.crd, "widgets.example.com");
            (f.version, f.path, f.change)
        })
        .collect()
}

fn num(n: i64) -> Number {
    Number::from(n)
}

/// Each kind of change on `spec.field` (or below it), tightening, with what it finds.
#[test]
fn each_tightening_is_found() {
    let s = |v: &str| Some(v.to_string());
    type Row = (&'static str, Value, Value, Vec<(&'static str, Change)>);
    let rows: Vec<Row> = vec![
        (
            "type changed",
            json!({"type": "string"}),
            json!({"type": "integer"}),
            vec![(
                "spec.field",
                Change::Type {
                    from: s("string"),
                    to: "integer".into(),
                },
            )],
        ),
        (
            "type set where any was allowed",
            json!({"x-kubernetes-preserve-unknown-fields": true}),
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
            vec![(
                "spec.field",
                Change::Type {
                    from: None,
                    to: "object".into(),
                },
            )],
        ),
        (
            "format added",
            json!({"type": "string"}),
            json!({"type": "string", "format": "date-time"}),
            vec![(
                "spec.field",
                Change::Format {
                    from: None,
                    to: "date-time".into(),
                },
            )],
        ),
        (
            "format changed",
            json!({"type": "string", "format": "date"}),
            json!({"type": "string", "format": "date-time"}),
            vec![(
                "spec.field",
                Change::Format {
                    from: s("date"),
                    to: "date-time".into(),
                },
            )],
        ),
        (
            "enum narrowed",
            json!({"type": "string", "enum": ["a", "b", "c"]}),
            json!({"type": "string", "enum": ["c", "a"]}),
            vec![(
                "spec.field",
                Change::EnumNarrowed {
                    removed: vec![json!("b")],
                },
            )],
        ),
        (
            "enum added",
            json!({"type": "string"}),
            json!({"type": "string", "enum": ["a"]}),
            vec![(
                "spec.field",
                Change::EnumAdded {
                    allowed: vec![json!("a")],
                },
            )],
        ),
        (
            "minimum raised, maximum added",
            json!({"type": "integer", "minimum": 1}),
            json!({"type": "integer", "minimum": 2, "maximum": 10}),
            vec![
                (
                    "spec.field",
                    Change::Bound {
                        keyword: "minimum",
                        from: Some(num(1)),
                        to: num(2),
                    },
                ),
                (
                    "spec.field",
                    Change::Bound {
                        keyword: "maximum",
                        from: None,
                        to: num(10),
                    },
                ),
            ],
        ),
        (
            "maximum lowered",
            json!({"type": "integer", "maximum": 10}),
            json!({"type": "integer", "maximum": 9}),
            vec![(
                "spec.field",
                Change::Bound {
                    keyword: "maximum",
                    from: Some(num(10)),
                    to: num(9),
                },
            )],
        ),
        (
            "exclusive bounds turned on",
            json!({"type": "number", "minimum": 0, "maximum": 1}),
            json!({"type": "number", "minimum": 0, "maximum": 1,
                   "exclusiveMinimum": true, "exclusiveMaximum": true}),
            vec![
                (
                    "spec.field",
                    Change::ExclusiveBound {
                        keyword: "exclusiveMinimum",
                    },
                ),
                (
                    "spec.field",
                    Change::ExclusiveBound {
                        keyword: "exclusiveMaximum",
                    },
                ),
            ],
        ),
        (
            "string lengths",
            json!({"type": "string", "minLength": 1, "maxLength": 63}),
            json!({"type": "string", "minLength": 2, "maxLength": 32}),
            vec![
                (
                    "spec.field",
                    Change::Bound {
                        keyword: "minLength",
                        from: Some(num(1)),
                        to: num(2),
                    },
                ),
                (
                    "spec.field",
                    Change::Bound {
                        keyword: "maxLength",
                        from: Some(num(63)),
                        to: num(32),
                    },
                ),
            ],
        ),
        (
            "list lengths",
            json!({"type": "array", "items": {"type": "string"}}),
            json!({"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 8}),
            vec![
                (
                    "spec.field",
                    Change::Bound {
                        keyword: "minItems",
                        from: None,
                        to: num(1),
                    },
                ),
                (
                    "spec.field",
                    Change::Bound {
                        keyword: "maxItems",
                        from: None,
                        to: num(8),
                    },
                ),
            ],
        ),
        (
            "map sizes",
            json!({"type": "object", "additionalProperties": {"type": "string"}, "maxProperties": 10}),
            json!({"type": "object", "additionalProperties": {"type": "string"},
                   "minProperties": 1, "maxProperties": 5}),
            vec![
                (
                    "spec.field",
                    Change::Bound {
                        keyword: "minProperties",
                        from: None,
                        to: num(1),
                    },
                ),
                (
                    "spec.field",
                    Change::Bound {
                        keyword: "maxProperties",
                        from: Some(num(10)),
                        to: num(5),
                    },
                ),
            ],
        ),
        (
            "pattern added",
            json!({"type": "string"}),
            json!({"type": "string", "pattern": "^[a-z]+$"}),
            vec![(
                "spec.field",
                Change::Pattern {
                    from: None,
                    to: "^[a-z]+$".into(),
                },
            )],
        ),
        (
            "pattern changed",
            json!({"type": "string", "pattern": "^[a-z]+$"}),
            json!({"type": "string", "pattern": "^[a-z]{1,8}$"}),
            vec![(
                "spec.field",
                Change::Pattern {
                    from: s("^[a-z]+$"),
                    to: "^[a-z]{1,8}$".into(),
                },
            )],
        ),
        (
            "multipleOf added",
            json!({"type": "integer"}),
            json!({"type": "integer", "multipleOf": 2}),
            vec![(
                "spec.field",
                Change::MultipleOf {
                    from: None,
                    to: num(2),
                },
            )],
        ),
        (
            "multipleOf changed to one the old is no multiple of",
            json!({"type": "integer", "multipleOf": 2}),
            json!({"type": "integer", "multipleOf": 3}),
            vec![(
                "spec.field",
                Change::MultipleOf {
                    from: Some(num(2)),
                    to: num(3),
                },
            )],
        ),
        (
            "CEL rule added and one changed",
            json!({"type": "string", "x-kubernetes-validations": [{"rule": "self.size() > 0"}]}),
            json!({"type": "string", "x-kubernetes-validations": [
                {"rule": "self.size() > 1", "message": "longer"},
                {"rule": "self == self.lowerAscii()"}]}),
            vec![
                (
                    "spec.field",
                    Change::RuleAdded {
                        rule: "self.size() > 1".into(),
                    },
                ),
                (
                    "spec.field",
                    Change::RuleAdded {
                        rule: "self == self.lowerAscii()".into(),
                    },
                ),
            ],
        ),
        (
            "unknown fields no longer preserved",
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
            json!({"type": "object"}),
            vec![("spec.field", Change::PreserveUnknownFieldsRemoved)],
        ),
        (
            "null no longer allowed",
            json!({"type": "string", "nullable": true}),
            json!({"type": "string"}),
            vec![("spec.field", Change::NullableRemoved)],
        ),
        (
            "int-or-string changed",
            json!({"x-kubernetes-int-or-string": true}),
            json!({"type": "string"}),
            vec![(
                "spec.field",
                Change::Type {
                    from: None,
                    to: "string".into(),
                },
            )],
        ),
        (
            "int-or-string taken away, untyped both",
            json!({"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]}),
            json!({"anyOf": [{"type": "integer"}, {"type": "string"}]}),
            vec![(
                "spec.field",
                Change::IntOrString {
                    from: true,
                    to: false,
                },
            )],
        ),
        (
            "list type and keys changed",
            json!({"type": "array", "x-kubernetes-list-type": "atomic",
                   "items": {"type": "object", "properties": {"name": {"type": "string"}}}}),
            json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                   "items": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}),
            vec![
                (
                    "spec.field",
                    Change::Merge {
                        keyword: "x-kubernetes-list-type",
                        from: Some(json!("atomic")),
                        to: Some(json!("map")),
                    },
                ),
                (
                    "spec.field",
                    Change::Merge {
                        keyword: "x-kubernetes-list-map-keys",
                        from: None,
                        to: Some(json!(["name"])),
                    },
                ),
                ("spec.field.name", Change::NewlyRequired),
            ],
        ),
        (
            "map type changed",
            json!({"type": "object", "x-kubernetes-map-type": "granular"}),
            json!({"type": "object", "x-kubernetes-map-type": "atomic"}),
            vec![(
                "spec.field",
                Change::Merge {
                    keyword: "x-kubernetes-map-type",
                    from: Some(json!("granular")),
                    to: Some(json!("atomic")),
                },
            )],
        ),
        (
            "field newly required, an existing one and a new one",
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": []}),
            json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                   "required": ["a", "b"]}),
            vec![
                ("spec.field.a", Change::NewlyRequired),
                ("spec.field.b", Change::NewlyRequired),
            ],
        ),
        (
            "field removed",
            json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}),
            json!({"type": "object", "properties": {"a": {"type": "string"}}}),
            vec![("spec.field.b", Change::FieldRemoved)],
        ),
        (
            "a field of a list's items removed, its path without an index",
            json!({"type": "array", "items": {"type": "object", "properties": {
                "type": {"type": "string"}, "lastTransitionTime": {"type": "string", "format": "date-time"}}}}),
            json!({"type": "array", "items": {"type": "object", "properties": {
                "type": {"type": "string"}}}}),
            vec![("spec.field.lastTransitionTime", Change::FieldRemoved)],
        ),
        (
            "a map's values change type",
            json!({"type": "object", "additionalProperties": {"type": "string"}}),
            json!({"type": "object", "additionalProperties": {"type": "integer"}}),
            vec![(
                "spec.field",
                Change::Type {
                    from: s("string"),
                    to: "integer".into(),
                },
            )],
        ),
        (
            "a map's values no longer allowed",
            json!({"type": "object", "additionalProperties": {"type": "string"}}),
            json!({"type": "object"}),
            vec![("spec.field", Change::MapValuesRemoved)],
        ),
    ];
    for (name, pinned, candidate, expected) in rows {
        let found = changes(&storage_only(&with_field(pinned)), &with_field(candidate));
        let expected: Vec<(String, String, Change)> = expected
            .into_iter()
            .map(|(path, change)| ("v1".to_string(), path.to_string(), change))
            .collect();
        assert_eq!(found, expected, "{name}");
    }
}

/// The loosening counterparts: never a finding.
#[test]
fn loosening_is_never_a_finding() {
    let rows: Vec<(&str, Value, Value)> = vec![
        ("type taken away", json!({"type": "string"}), json!({})),
        (
            "new optional field",
            json!({"type": "object", "properties": {"a": {"type": "string"}}}),
            json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}),
        ),
        (
            "format taken away",
            json!({"type": "string", "format": "date"}),
            json!({"type": "string"}),
        ),
        (
            "enum widened",
            json!({"type": "string", "enum": ["a"]}),
            json!({"type": "string", "enum": ["b", "a"]}),
        ),
        (
            "enum taken away",
            json!({"type": "string", "enum": ["a"]}),
            json!({"type": "string"}),
        ),
        (
            "bounds widened",
            json!({"type": "integer", "minimum": 2, "maximum": 9}),
            json!({"type": "integer", "minimum": 1, "maximum": 10}),
        ),
        (
            "bounds taken away",
            json!({"type": "string", "minLength": 2, "maxLength": 9, "pattern": "^a"}),
            json!({"type": "string"}),
        ),
        (
            "list and map sizes widened",
            json!({"type": "object", "properties": {
                "l": {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 3},
                "m": {"type": "object", "additionalProperties": {"type": "string"},
                      "minProperties": 2, "maxProperties": 3}}}),
            json!({"type": "object", "properties": {
                "l": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 4},
                "m": {"type": "object", "additionalProperties": {"type": "string"}, "maxProperties": 4}}}),
        ),
        (
            "exclusive bound turned off",
            json!({"type": "number", "minimum": 0, "exclusiveMinimum": true}),
            json!({"type": "number", "minimum": 0}),
        ),
        (
            "multipleOf to a divisor, then taken away",
            json!({"type": "object", "properties": {
                "a": {"type": "integer", "multipleOf": 4}, "b": {"type": "integer", "multipleOf": 4}}}),
            json!({"type": "object", "properties": {
                "a": {"type": "integer", "multipleOf": 2}, "b": {"type": "integer"}}}),
        ),
        (
            "CEL rule taken away",
            json!({"type": "string", "x-kubernetes-validations": [{"rule": "self.size() > 0"}]}),
            json!({"type": "string"}),
        ),
        (
            "required taken away",
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}),
            json!({"type": "object", "properties": {"a": {"type": "string"}}}),
        ),
        (
            "null and unknown fields allowed",
            json!({"type": "object"}),
            json!({"type": "object", "nullable": true, "x-kubernetes-preserve-unknown-fields": true}),
        ),
        (
            "a map's values kept as unknown fields",
            json!({"type": "object", "additionalProperties": {"type": "string"}}),
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
        ),
    ];
    for (name, pinned, candidate) in rows {
        let found = judge(&storage_only(&with_field(pinned)), &with_field(candidate));
        assert_eq!(found, vec![], "{name}");
    }
}

/// v1alpha1 served, v1beta1 served and stored, v1beta2 not served; `spec.field`'s type changes in
/// every one.
fn three_versions(field: &str) -> Value {
    let schema = root(json!({"type": field}));
    crd(vec![
        version("v1alpha1", true, false, schema.clone()),
        version("v1beta1", true, true, schema.clone()),
        version("v1beta2", false, false, schema),
    ])
}

#[test]
fn only_the_required_versions_are_judged() {
    let pinned = three_versions("string");
    let candidate = three_versions("integer");
    let rows = [
        (
            "storage only",
            json!({"defaultSelection": "StorageOnly"}),
            vec!["v1beta1"],
        ),
        (
            "all served",
            json!({"defaultSelection": "AllServed"}),
            vec!["v1alpha1", "v1beta1"],
        ),
        (
            "storage and additional versions, deduplicated, in the CRD's order",
            json!({"defaultSelection": "StorageOnly", "additionalVersions": ["v1beta2", "v1beta1"]}),
            vec!["v1beta1", "v1beta2"],
        ),
    ];
    for (name, required, versions) in rows {
        let requirement = requirement(&pinned, required, None);
        assert_eq!(requirement.versions(), versions, "{name}");
        let judged: Vec<String> = changes(&requirement, &candidate)
            .into_iter()
            .map(|(version, path, change)| {
                assert_eq!(path, "spec.field", "{name}");
                assert!(matches!(change, Change::Type { .. }), "{name}: {change:?}");
                version
            })
            .collect();
        assert_eq!(judged, versions, "{name}");
    }
}

#[test]
fn excluded_fields_for_all_versions_and_for_one() {
    let schema = json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "a": {"type": "string"},
            "b": {"type": "object", "properties": {"c": {"type": "string"}}}}},
        "status": {"type": "object", "properties": {
            "conditions": {"type": "array", "items": {"type": "object", "properties": {
                "type": {"type": "string"}, "lastTransitionTime": {"type": "string"}}}}}}}});
    let two = |schema: &Value| {
        crd(vec![
            version("v1beta1", true, false, schema.clone()),
            version("v1", true, true, schema.clone()),
        ])
    };
    let pinned = two(&schema);
    // Each version loses spec.a, spec.b (with spec.b.c) and the conditions' lastTransitionTime, and
    // newly requires spec.a.
    let mut cut = schema.clone();
    let spec = &mut cut["properties"]["spec"];
    spec["properties"] = json!({});
    spec["required"] = json!(["a"]);
    cut["properties"]["status"]["properties"]["conditions"]["items"]["properties"]
        .as_object_mut()
        .unwrap()
        .remove("lastTransitionTime");
    let candidate = two(&cut);
    let all_served = json!({"defaultSelection": "AllServed"});

    let none = requirement(&pinned, all_served.clone(), None);
    let everything = |version: &str| {
        vec![
            (
                version.to_string(),
                "spec.a".to_string(),
                Change::NewlyRequired,
            ),
            (
                version.to_string(),
                "spec.a".to_string(),
                Change::FieldRemoved,
            ),
            (
                version.to_string(),
                "spec.b".to_string(),
                Change::FieldRemoved,
            ),
            (
                version.to_string(),
                "status.conditions.lastTransitionTime".to_string(),
                Change::FieldRemoved,
            ),
        ]
    };
    assert_eq!(
        changes(&none, &candidate),
        [everything("v1beta1"), everything("v1")].concat()
    );

    let all_versions = requirement(
        &pinned,
        all_served.clone(),
        Some(json!([
            {"path": "spec.a"}, {"path": "spec.b"},
            {"path": "status.conditions.lastTransitionTime"}])),
    );
    assert_eq!(changes(&all_versions, &candidate), vec![]);

    let one_version = requirement(
        &pinned,
        all_served,
        Some(json!([
            {"path": "spec.a", "versions": ["v1beta1"]},
            {"path": "spec.b", "versions": ["v1beta1"]},
            {"path": "status.conditions.lastTransitionTime", "versions": ["v1beta1"]}])),
    );
    assert_eq!(changes(&one_version, &candidate), everything("v1"));
}

#[test]
fn pinned_versions_missing_or_no_longer_served() {
    let schema = root(json!({"type": "string"}));
    let pinned = crd(vec![
        version("v1alpha1", true, false, schema.clone()),
        version("v1beta1", true, true, schema.clone()),
        version("v1beta2", false, false, schema.clone()),
    ]);
    // v1alpha1 gone, v1beta1 not served, v1beta2 still not served and judged by its schema.
    let candidate = crd(vec![
        version("v1beta1", false, false, schema.clone()),
        version("v1beta2", false, false, root(json!({"type": "integer"}))),
        version("v1", true, true, schema),
    ]);
    let required =
        json!({"defaultSelection": "StorageOnly", "additionalVersions": ["v1alpha1", "v1beta2"]});
    assert_eq!(
        changes(&requirement(&pinned, required, None), &candidate),
        vec![
            ("v1alpha1".into(), String::new(), Change::VersionRemoved),
            ("v1beta1".into(), String::new(), Change::VersionNotServed),
            (
                "v1beta2".into(),
                "spec.field".into(),
                Change::Type {
                    from: Some("string".into()),
                    to: "integer".into()
                }
            ),
        ]
    );
}

#[test]
fn scope_group_and_names_of_the_whole_crd() {
    let pinned = with_field(json!({"type": "string"}));
    let mut candidate = pinned.clone();
    candidate["spec"]["scope"] = json!("Cluster");
    candidate["spec"]["group"] = json!("example.org");
    candidate["spec"]["names"] = json!({"kind": "Gadget", "plural": "gadgets"});
    let change = |from: &str, to: &str| (from.to_string(), to.to_string());
    let (s, g, k, p) = (
        change("Namespaced", "Cluster"),
        change("example.com", "example.org"),
        change("Widget", "Gadget"),
        change("widgets", "gadgets"),
    );
    assert_eq!(
        changes(&storage_only(&pinned), &candidate),
        vec![
            (
                String::new(),
                String::new(),
                Change::Scope { from: s.0, to: s.1 }
            ),
            (
                String::new(),
                String::new(),
                Change::Group { from: g.0, to: g.1 }
            ),
            (
                String::new(),
                String::new(),
                Change::Kind { from: k.0, to: k.1 }
            ),
            (
                String::new(),
                String::new(),
                Change::Plural { from: p.0, to: p.1 }
            ),
        ]
    );
}

#[test]
fn a_finding_names_the_requirement_the_crd_the_version_and_the_field() {
    let pinned = three_versions("string");
    let mut candidate = pinned.clone();
    candidate["spec"]["versions"][1]["schema"]["openAPIV3Schema"] =
        root(json!({"type": "integer"}));
    candidate["spec"]["versions"][0]["served"] = json!(false);
    candidate["spec"]["scope"] = json!("Cluster");
    let requirement = requirement(&pinned, json!({"defaultSelection": "AllServed"}), None);
    let found: Vec<String> = judge(&requirement, &candidate)
        .iter()
        .map(Finding::to_string)
        .collect();
    assert_eq!(
        found,
        vec![
            "CompatibilityRequirement pin-widgets: widgets.example.com: scope changed from Namespaced to Cluster",
            "CompatibilityRequirement pin-widgets: widgets.example.com version v1alpha1: the version is no longer served",
            "CompatibilityRequirement pin-widgets: widgets.example.com version v1beta1, spec.field: type changed from string to integer",
        ]
    );
}

/// The AWSMachine CRD of the AWS provider the project pins (`tools/capi-managers/go.mod`), from the Go
/// module cache: its own judge, and each single break found as exactly that. Skipped with a note
/// when the module is not downloaded.
#[test]
fn the_aws_machine_crd() {
    let Some(text) = aws_machine_crd() else {
        return;
    };
    let pinned: Value = capi_manifests::yaml::parse_documents("awsmachines", &text)
        .expect("the AWSMachine CRD")
        .remove(0)
        .value;
    let requirement = Requirement::read(&json!({
        "metadata": {"name": "pin-awsmachines"},
        "spec": {"compatibilitySchema": {
            "customResourceDefinition": {"type": "YAML", "data": text},
            "requiredVersions": {"defaultSelection": "StorageOnly"}}},
    }))
    .expect("a requirement pinning the AWSMachine CRD");
    assert_eq!(
        requirement.crd_name,
        "awsmachines.infrastructure.cluster.x-k8s.io"
    );
    assert_eq!(requirement.versions(), vec!["v1beta2"]);
    assert_eq!(judge(&requirement, &pinned), vec![]);

    let storage = schema::versions(&pinned)
        .iter()
        .position(|v| str_at(v, "/name") == "v1beta2")
        .expect("v1beta2");
    let spec =
        format!("/spec/versions/{storage}/schema/openAPIV3Schema/properties/spec/properties");

    let mut removed = pinned.clone();
    removed
        .pointer_mut(&spec)
        .and_then(Value::as_object_mut)
        .and_then(|p| p.remove("instanceType"))
        .expect("spec.instanceType");
    let mut retyped = pinned.clone();
    *retyped
        .pointer_mut(&format!("{spec}/instanceType/type"))
        .expect("spec.instanceType.type") = json!("integer");

    for (candidate, change, message) in [
        (removed, Change::FieldRemoved, "field removed"),
        (
            retyped,
            Change::Type {
                from: Some("string".into()),
                to: "integer".into(),
            },
            "type changed from string to integer",
        ),
    ] {
        let found = judge(&requirement, &candidate);
        assert_eq!(
            found,
            vec![Finding {
                requirement: "pin-awsmachines".into(),
                crd: "awsmachines.infrastructure.cluster.x-k8s.io".into(),
                version: "v1beta2".into(),
                path: "spec.instanceType".into(),
                change,
            }]
        );
        assert_eq!(
            found[0].to_string(),
            format!(
                "CompatibilityRequirement pin-awsmachines: awsmachines.infrastructure.cluster.x-k8s.io \
                 version v1beta2, spec.instanceType: {message}"
            )
        );
    }
}

/// The AWSMachine CRD's YAML at the version `tools/capi-managers/go.mod` pins, from the Go module
/// cache (`GOMODCACHE`, else `GOPATH/pkg/mod`, else `~/go/pkg/mod`).
fn aws_machine_crd() -> Option<String> {
    const MODULE: &str = "sigs.k8s.io/cluster-api-provider-aws/v2";
    let go_mod =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/capi-managers/go.mod");
    let go_mod = std::fs::read_to_string(&go_mod).expect("tools/capi-managers/go.mod");
    let pinned = go_mod
        .lines()
        .find_map(|line| line.trim().strip_prefix(MODULE)?.split_whitespace().next())
        .expect("the AWS provider pinned in tools/capi-managers/go.mod")
        .to_string();
    let cache = std::env::var_os("GOMODCACHE")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("GOPATH").map(|p| std::path::PathBuf::from(p).join("pkg/mod")))
        .or_else(|| {
            std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join("go/pkg/mod"))
        })?;
    let path = cache.join(format!(
        "{MODULE}@{pinned}/config/crd/bases/infrastructure.cluster.x-k8s.io_awsmachines.yaml"
    ));
    match std::fs::read_to_string(&path) {
        Ok(text) => Some(text),
        Err(e) => {
            eprintln!(
                "skipped: {}: {e} (the Go module is not downloaded)",
                path.display()
            );
            None
        }
    }
}
