//! Small helpers over `serde_json::Value` objects. Object identity is [`capi_object::ObjectKey`].

use serde_json::{Map, Value};

/// `object.metadata`, created when absent. Panics only if `object` is not a map, which parsing
/// rules out.
pub(crate) fn metadata_mut(object: &mut Value) -> &mut Map<String, Value> {
    let map = object.as_object_mut().expect("objects are maps");
    let md = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !md.is_object() {
        *md = Value::Object(Map::new());
    }
    md.as_object_mut().expect("just made a map")
}

/// A string map under `metadata` (`labels`, `annotations`), created when absent.
pub(crate) fn metadata_map_mut<'a>(object: &'a mut Value, key: &str) -> &'a mut Map<String, Value> {
    let md = metadata_mut(object);
    let m = md.entry(key).or_insert_with(|| Value::Object(Map::new()));
    if !m.is_object() {
        *m = Value::Object(Map::new());
    }
    m.as_object_mut().expect("just made a map")
}

/// Follows a path of map keys.
pub(crate) fn get_path<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, k| v.get(k))
}

pub(crate) fn get_path_mut<'a>(value: &'a mut Value, path: &[&str]) -> Option<&'a mut Value> {
    path.iter().try_fold(value, |v, k| v.get_mut(k))
}

pub(crate) fn get_str<'a>(value: &'a Value, path: &[&str]) -> Option<&'a str> {
    get_path(value, path).and_then(Value::as_str)
}
