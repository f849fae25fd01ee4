//! Reading a CRD and its schemas as JSON values, for both the requirement and the judgement.

use serde_json::{Map, Value};

/// The empty schema: every lookup in it finds nothing, so a subschema the candidate lacks compares as
/// one that allows anything but knows no field.
pub(crate) static EMPTY: Value = Value::Null;

/// The string at `pointer`, `""` when absent or not a string.
pub(crate) fn str_at<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The entries of a CRD's `spec.versions`.
pub(crate) fn versions(crd: &Value) -> &[Value] {
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The entry of `spec.versions` named `name`.
pub(crate) fn version<'a>(crd: &'a Value, name: &str) -> Option<&'a Value> {
    versions(crd).iter().find(|v| str_at(v, "/name") == name)
}

/// A version entry's `schema.openAPIV3Schema`, the empty schema when it has none.
pub(crate) fn open_api(version: &Value) -> &Value {
    version.pointer("/schema/openAPIV3Schema").unwrap_or(&EMPTY)
}

pub(crate) fn flag(schema: &Value, key: &str) -> bool {
    schema.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// The subschema of an array's items or a map's values: a field path goes through both without a
/// segment of its own, as the API's `excludedFields` paths go through arrays
/// (`status.conditions.lastTransitionTime`). `additionalProperties: true` is a schema that allows
/// anything; `false` is none.
pub(crate) fn element<'a>(schema: &'a Value, key: &str) -> Option<&'a Value> {
    match schema.get(key)? {
        Value::Bool(false) => None,
        Value::Bool(true) => Some(&EMPTY),
        other => Some(other),
    }
}

/// The `properties` of `schema`, or of the items or values it holds (as [`element`]).
fn fields(schema: &Value) -> Option<&Map<String, Value>> {
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        return Some(properties);
    }
    element(schema, "items")
        .or_else(|| element(schema, "additionalProperties"))
        .and_then(fields)
}

/// Whether the dot-separated field `path` names a property of `schema`.
pub(crate) fn has_path(schema: &Value, path: &str) -> bool {
    let mut at = schema;
    for segment in path.split('.') {
        match fields(at).and_then(|f| f.get(segment)) {
            Some(next) => at = next,
            None => return false,
        }
    }
    true
}

/// `parent.name`, or `name` at the root.
pub(crate) fn child(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}.{name}")
    }
}
