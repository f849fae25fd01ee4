//! An object of a pinned CRD judged against the pinned schema (`spec.objectSchemaValidation`): what
//! the requirement's writer relies on the objects to hold, checked on every create and update.
//!
//! The pinned version's structural schema is applied as the API server applies a CRD's: `type`
//! (`x-kubernetes-int-or-string`), `enum`, `required`, the bounds (`minimum`, `maximum` and their
//! `exclusive` forms, `multipleOf`, lengths in characters, item and property counts) and `pattern`
//! (RE2, as Kubernetes'), through `properties`, `items` and `additionalProperties`. A field the pinned
//! schema does not know is left as it is: a newer CRD may have added it, and the reference's pruning of
//! such fields from the object would silently drop what its writer set. `null` is not judged (the API
//! server prunes a `null` the schema does not allow before it stores the object). Not checked:
//! `format`, `x-kubernetes-validations` (CEL), list uniqueness (`x-kubernetes-list-type` set and
//! map keys), and what sits in `allOf`/`anyOf`/`oneOf`/`not`. A field under one of the requirement's
//! `excludedFields` is not judged, as in the CRD judgement. `apiVersion`, `kind` and `metadata` are
//! the API server's to validate.

use std::fmt;

use serde_json::{Map, Number, Value};

use crate::requirement::Requirement;
use crate::schema::{self, child, element, flag, str_at};

/// At most this many violations are reported for one object: enough to fix it, and an admission
/// answer stays small whatever the object holds.
const MOST: usize = 20;

/// One way an object breaks the pinned schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    /// The field, as Kubernetes names it (`spec.subnets[2].id`, `spec.tags[team]`).
    pub path: String,
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// Every way `object` (JSON, in one of the pinned CRD's versions) breaks the pinned schema of its
/// version, at most [`MOST`]. Empty when the object's version is not one the requirement pins.
pub fn validate(requirement: &Requirement, object: &Value) -> Vec<Violation> {
    let version = str_at(object, "/apiVersion")
        .rsplit_once('/')
        .map_or("", |(_, v)| v);
    if !requirement.versions().iter().any(|v| v == version) {
        return Vec::new();
    }
    let Some(pinned) = schema::version(&requirement.pinned, version) else {
        return Vec::new();
    };
    let excluded: Vec<&str> = requirement
        .excluded
        .iter()
        .filter(|e| e.applies_to(version))
        .map(|e| e.path.as_str())
        .collect();
    let mut check = Check {
        excluded: &excluded,
        found: Vec::new(),
    };
    let root = schema::open_api(pinned);
    if let (Some(fields), Some(properties)) = (
        object.as_object(),
        root.get("properties").and_then(Value::as_object),
    ) {
        for (name, value) in fields {
            if matches!(name.as_str(), "apiVersion" | "kind" | "metadata") {
                continue;
            }
            if let Some(field) = properties.get(name) {
                check.node(field, value, name, name);
            }
        }
        check.required(root, fields, "", "");
    }
    check.found.truncate(MOST);
    check.found
}

struct Check<'a> {
    excluded: &'a [&'a str],
    found: Vec<Violation>,
}

fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn number<'a>(schema: &'a Value, key: &str) -> Option<&'a Number> {
    match schema.get(key) {
        Some(Value::Number(n)) => Some(n),
        _ => None,
    }
}

fn count(schema: &Value, key: &str) -> Option<u64> {
    schema.get(key).and_then(Value::as_u64)
}

impl Check<'_> {
    fn violation(&mut self, path: &str, message: String) {
        if self.found.len() <= MOST {
            self.found.push(Violation {
                path: path.to_string(),
                message,
            });
        }
    }

    /// `value` at `path` (as shown) and `field` (the schema path `excludedFields` names) against
    /// `schema`.
    fn node(&mut self, schema: &Value, value: &Value, path: &str, field: &str) {
        if value.is_null() || self.excluded.contains(&field) || self.found.len() > MOST {
            return;
        }
        let actual = type_of(value);
        if flag(schema, "x-kubernetes-int-or-string") {
            if !matches!(actual, "integer" | "string") {
                self.violation(
                    path,
                    format!("must be an integer or a string, not {actual}"),
                );
                return;
            }
        } else if let Some(expected) = schema.get("type").and_then(Value::as_str) {
            let fits = expected == actual || (expected == "number" && actual == "integer");
            if !fits {
                self.violation(path, format!("must be of type {expected}, not {actual}"));
                return;
            }
        }
        if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
            && !allowed.contains(value)
        {
            let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
            self.violation(
                path,
                format!(
                    "{value} is not one of the allowed values: {}",
                    list.join(", ")
                ),
            );
        }
        match value {
            Value::Number(n) => self.number(schema, n, path),
            Value::String(s) => self.string(schema, s, path),
            Value::Array(items) => {
                self.counted(schema, items.len(), "minItems", "maxItems", "items", path);
                if let Some(item) = element(schema, "items") {
                    for (i, v) in items.iter().enumerate() {
                        self.node(item, v, &format!("{path}[{i}]"), field);
                    }
                }
            }
            Value::Object(fields) => {
                self.counted(
                    schema,
                    fields.len(),
                    "minProperties",
                    "maxProperties",
                    "properties",
                    path,
                );
                let properties = schema.get("properties").and_then(Value::as_object);
                let values = element(schema, "additionalProperties");
                for (name, v) in fields {
                    match properties.and_then(|p| p.get(name)) {
                        Some(property) => {
                            self.node(property, v, &child(path, name), &child(field, name))
                        }
                        None => {
                            if let Some(values) = values {
                                self.node(values, v, &format!("{path}[{name}]"), field);
                            }
                        }
                    }
                }
                self.required(schema, fields, path, field);
            }
            Value::Null | Value::Bool(_) => {}
        }
    }

    fn required(&mut self, schema: &Value, fields: &Map<String, Value>, path: &str, field: &str) {
        let Some(required) = schema.get("required").and_then(Value::as_array) else {
            return;
        };
        for name in required.iter().filter_map(Value::as_str) {
            let missing = fields.get(name).is_none_or(Value::is_null);
            if missing && !self.excluded.contains(&child(field, name).as_str()) {
                self.violation(&child(path, name), "required".into());
            }
        }
    }

    fn counted(&mut self, schema: &Value, n: usize, min: &str, max: &str, what: &str, path: &str) {
        let n = n as u64;
        if let Some(least) = count(schema, min).filter(|least| n < *least) {
            self.violation(path, format!("has {n} {what}, fewer than {min} {least}"));
        }
        if let Some(most) = count(schema, max).filter(|most| n > *most) {
            self.violation(path, format!("has {n} {what}, more than {max} {most}"));
        }
    }

    fn number(&mut self, schema: &Value, n: &Number, path: &str) {
        let value = n.as_f64().unwrap_or(f64::NAN);
        if let Some(min) = number(schema, "minimum").and_then(Number::as_f64) {
            let exclusive = flag(schema, "exclusiveMinimum");
            if value < min || (exclusive && value == min) {
                let than = if exclusive {
                    "greater than"
                } else {
                    "at least"
                };
                self.violation(path, format!("{n} must be {than} {min}"));
            }
        }
        if let Some(max) = number(schema, "maximum").and_then(Number::as_f64) {
            let exclusive = flag(schema, "exclusiveMaximum");
            if value > max || (exclusive && value == max) {
                let than = if exclusive { "less than" } else { "at most" };
                self.violation(path, format!("{n} must be {than} {max}"));
            }
        }
        if let Some(of) = number(schema, "multipleOf") {
            let fits = match (n.as_i64(), of.as_i64()) {
                (Some(n), Some(of)) if of != 0 => n % of == 0,
                _ => of
                    .as_f64()
                    .filter(|of| *of != 0.0)
                    .is_none_or(|of| (value / of).fract() == 0.0),
            };
            if !fits {
                self.violation(path, format!("{n} must be a multiple of {of}"));
            }
        }
    }

    fn string(&mut self, schema: &Value, s: &str, path: &str) {
        let length = s.chars().count();
        if let Some(least) = count(schema, "minLength").filter(|l| (length as u64) < *l) {
            self.violation(
                path,
                format!("{length} characters, fewer than minLength {least}"),
            );
        }
        if let Some(most) = count(schema, "maxLength").filter(|m| (length as u64) > *m) {
            self.violation(
                path,
                format!("{length} characters, more than maxLength {most}"),
            );
        }
        if let Some(pattern) = schema.get("pattern").and_then(Value::as_str)
            // A pattern that is not a valid expression was not one the API server accepted in a
            // CRD either; nothing to hold the value to.
            && let Ok(expression) = regex::Regex::new(pattern)
            && !expression.is_match(s)
        {
            self.violation(path, format!("{s:?} does not match `{pattern}`"));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const PINNED: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Gadget, plural: gadgets}
  versions:
  - name: v1alpha1
    served: true
    storage: false
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {size: {type: boolean}}}}}}
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [region]
            properties:
              region: {type: string, pattern: '^[a-z]+-[a-z]+-[0-9]$'}
              size: {type: integer, minimum: 1, maximum: 8, multipleOf: 2}
              ratio: {type: number, exclusiveMinimum: true, minimum: 0}
              tier: {type: string, enum: [small, large]}
              name: {type: string, minLength: 3, maxLength: 5}
              port: {x-kubernetes-int-or-string: true}
              zones: {type: array, maxItems: 2, items: {type: string}}
              subnets:
                type: array
                items: {type: object, required: [id], properties: {id: {type: string}}}
              tags: {type: object, additionalProperties: {type: string}}
              opaque: {type: object, x-kubernetes-preserve-unknown-fields: true}
              legacy: {type: string}
"#;

    fn requirement(spec: Value) -> Requirement {
        let mut object = json!({
            "metadata": {"name": "pin-gadgets"},
            "spec": {"compatibilitySchema": {
                "customResourceDefinition": {"type": "YAML", "data": PINNED},
                "requiredVersions": {"defaultSelection": "StorageOnly"}},
                "objectSchemaValidation": {"action": "Deny"}},
        });
        for (key, value) in spec.as_object().unwrap() {
            object["spec"]["compatibilitySchema"][key] = value.clone();
        }
        Requirement::read(&object).unwrap()
    }

    fn gadget(spec: Value) -> Value {
        json!({"apiVersion": "example.com/v1", "kind": "Gadget",
               "metadata": {"name": "g", "namespace": "default", "labels": {"x": "y"}},
               "spec": spec})
    }

    fn said(requirement: &Requirement, object: &Value) -> Vec<String> {
        validate(requirement, object)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn an_object_the_pinned_schema_accepts_passes_with_fields_it_does_not_know() {
        let requirement = requirement(json!({}));
        let good = gadget(json!({
            "region": "eu-west-1", "size": 4, "ratio": 0.5, "tier": "small", "name": "abcd",
            "port": "https", "zones": ["a", "b"], "subnets": [{"id": "s-1", "extra": 1}],
            "tags": {"team": "a"}, "opaque": {"anything": [1, {"x": null}]},
            "addedByANewerSchema": {"deep": true}, "legacy": null,
        }));
        assert_eq!(said(&requirement, &good), Vec::<String>::new());
        let integer_port = gadget(json!({"region": "eu-west-1", "port": 443}));
        assert_eq!(said(&requirement, &integer_port), Vec::<String>::new());
    }

    #[test]
    fn each_rule_of_the_pinned_schema_names_the_field() {
        let requirement = requirement(json!({}));
        let rows: Vec<(Value, &str)> = vec![
            (json!({}), "spec.region: required"),
            (
                json!({"region": "eu"}),
                r#"spec.region: "eu" does not match `^[a-z]+-[a-z]+-[0-9]$`"#,
            ),
            (
                json!({"region": 1}),
                "spec.region: must be of type string, not integer",
            ),
            (
                json!({"region": "eu-west-1", "size": 0}),
                "spec.size: 0 must be at least 1",
            ),
            (
                json!({"region": "eu-west-1", "size": 10}),
                "spec.size: 10 must be at most 8",
            ),
            (
                json!({"region": "eu-west-1", "size": 3}),
                "spec.size: 3 must be a multiple of 2",
            ),
            (
                json!({"region": "eu-west-1", "size": 2.5}),
                "spec.size: must be of type integer, not number",
            ),
            (
                json!({"region": "eu-west-1", "ratio": 0}),
                "spec.ratio: 0 must be greater than 0",
            ),
            (
                json!({"region": "eu-west-1", "tier": "huge"}),
                r#"spec.tier: "huge" is not one of the allowed values: "small", "large""#,
            ),
            (
                json!({"region": "eu-west-1", "name": "ab"}),
                "spec.name: 2 characters, fewer than minLength 3",
            ),
            (
                json!({"region": "eu-west-1", "name": "abcdéf"}),
                "spec.name: 6 characters, more than maxLength 5",
            ),
            (
                json!({"region": "eu-west-1", "port": true}),
                "spec.port: must be an integer or a string, not boolean",
            ),
            (
                json!({"region": "eu-west-1", "zones": ["a", "b", "c"]}),
                "spec.zones: has 3 items, more than maxItems 2",
            ),
            (
                json!({"region": "eu-west-1", "zones": ["a", 1]}),
                "spec.zones[1]: must be of type string, not integer",
            ),
            (
                json!({"region": "eu-west-1", "subnets": [{"id": "a"}, {}]}),
                "spec.subnets[1].id: required",
            ),
            (
                json!({"region": "eu-west-1", "tags": {"team": 1}}),
                "spec.tags[team]: must be of type string, not integer",
            ),
            (
                json!({"region": "eu-west-1", "opaque": []}),
                "spec.opaque: must be of type object, not array",
            ),
        ];
        for (spec, expected) in rows {
            assert_eq!(
                said(&requirement, &gadget(spec.clone())),
                [expected],
                "spec {spec}"
            );
        }
        let not_an_object = json!({"apiVersion": "example.com/v1", "kind": "Gadget", "spec": "x"});
        assert_eq!(
            said(&requirement, &not_an_object),
            ["spec: must be of type object, not string"]
        );
    }

    #[test]
    fn excluded_fields_and_unpinned_versions_are_not_judged() {
        let excluding = requirement(
            json!({"excludedFields": [{"path": "spec.region"}, {"path": "spec.subnets.id"}]}),
        );
        let object = gadget(json!({"size": 3, "subnets": [{"id": 1}]}));
        assert_eq!(
            said(&excluding, &object),
            ["spec.size: 3 must be a multiple of 2"]
        );
        // v1alpha1 is served but not pinned (StorageOnly).
        let requirement = requirement(json!({}));
        let old =
            json!({"apiVersion": "example.com/v1alpha1", "kind": "Gadget", "spec": {"size": "x"}});
        assert_eq!(said(&requirement, &old), Vec::<String>::new());
        let all_served = Requirement {
            required: crate::RequiredVersions {
                default_selection: crate::Selection::AllServed,
                additional: vec![],
            },
            ..requirement
        };
        assert_eq!(
            said(&all_served, &old),
            ["spec.size: must be of type boolean, not string"]
        );
    }

    #[test]
    fn the_answer_stays_small_whatever_the_object_holds() {
        let requirement = requirement(json!({}));
        let zones: Vec<Value> = (0..10_000).map(Value::from).collect();
        let found = validate(
            &requirement,
            &gadget(json!({"region": "eu-west-1", "zones": zones})),
        );
        assert_eq!(found.len(), MOST);
        assert_eq!(found[0].path, "spec.zones");
        assert_eq!(found[1].path, "spec.zones[0]");
    }
}
