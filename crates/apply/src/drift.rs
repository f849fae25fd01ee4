//! Client-side drift detection: decide "unchanged" without a request. Pure.
//!
//! Three tests, cheapest first (see [`crate::apply::Applier`] for how they compose):
//! 1. the desired-hash annotation on the live object equals the hash of what we would apply now
//!    (catches every change of the desired object, including a field that was *removed* from it,
//!    which a subset test cannot see);
//! 2. the desired object is a semantic subset of the live object (catches drift made by others on
//!    the fields we own);
//! 3. for values the API server normalizes ("0.1" → "100m", defaults inside lists) the subset test
//!    fails forever, so the applier also remembers the live object's projection onto the desired
//!    object's shape right after its own apply ([`projection_hash`]); the same projection later means
//!    nobody touched our fields.

use std::borrow::Cow;
use std::collections::BTreeMap;

use capi_live::changes::managed_fields;
use capi_object::strip_nulls;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::DynamicObject;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// An object's top-level fields, sorted by key as the canonical hash wants them. Large fields are
/// borrowed from the object: hashing and comparing a huge object (the resource budget admits ~100,000
/// YAML nodes in one, about 26 MiB once parsed) must not copy it several times over.
pub(crate) type Fields<'a> = BTreeMap<&'a str, Cow<'a, Value>>;

/// The object as we send it and compare it: apiVersion, kind, `metadata.{name,namespace,labels,
/// annotations}` and every other top-level field except `status` (the engine never writes status; on
/// kinds with a status subresource the server would drop it anyway), with `null`s removed and a
/// Secret's `stringData` folded into `data`.
pub fn normalize(obj: &DynamicObject) -> Value {
    Value::Object(
        normalized_fields(obj)
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.into_owned()))
            .collect(),
    )
}

/// [`normalize`] as top-level fields, borrowing every field that has no `null` to remove.
pub(crate) fn normalized_fields(obj: &DynamicObject) -> Fields<'_> {
    let mut out = Fields::new();
    if let Some(t) = &obj.types {
        out.insert(
            "apiVersion",
            Cow::Owned(Value::String(t.api_version.clone())),
        );
        out.insert("kind", Cow::Owned(Value::String(t.kind.clone())));
    }
    out.insert("metadata", Cow::Owned(normalized_metadata(&obj.metadata)));
    let is_secret = obj
        .types
        .as_ref()
        .is_some_and(|t| t.api_version == "v1" && t.kind == "Secret");
    if let Value::Object(data) = &obj.data {
        for (k, v) in data {
            if matches!(k.as_str(), "status" | "apiVersion" | "kind" | "metadata") || v.is_null() {
                continue;
            }
            out.insert(k.as_str(), without_nulls(v));
        }
    }
    if is_secret {
        fold_string_data(&mut out);
    }
    out
}

/// The part of an object's metadata that [`normalize`] keeps: name, namespace (when not empty), labels
/// and annotations (when not empty). Small, so built rather than borrowed.
pub(crate) fn normalized_metadata(meta: &ObjectMeta) -> Value {
    let mut out = Map::new();
    if let Some(name) = &meta.name {
        out.insert("name".into(), Value::String(name.clone()));
    }
    if let Some(ns) = meta.namespace.as_ref().filter(|ns| !ns.is_empty()) {
        out.insert("namespace".into(), Value::String(ns.clone()));
    }
    for (field, map) in [("labels", &meta.labels), ("annotations", &meta.annotations)] {
        if let Some(map) = map.as_ref().filter(|m| !m.is_empty()) {
            let m = map
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect();
            out.insert(field.into(), Value::Object(m));
        }
    }
    Value::Object(out)
}

/// Whether `obj` is its own [`normalize`]d form, checked without copying its content.
pub(crate) fn is_normalized(obj: &DynamicObject) -> bool {
    let meta = &obj.metadata;
    let normalized_meta = ObjectMeta {
        name: meta.name.clone(),
        namespace: meta.namespace.clone().filter(|ns| !ns.is_empty()),
        labels: meta.labels.clone().filter(|m| !m.is_empty()),
        annotations: meta.annotations.clone().filter(|m| !m.is_empty()),
        ..ObjectMeta::default()
    };
    let is_secret = obj
        .types
        .as_ref()
        .is_some_and(|t| t.api_version == "v1" && t.kind == "Secret");
    let Value::Object(data) = &obj.data else {
        return false;
    };
    obj.types.is_some()
        && *meta == normalized_meta
        && !data.iter().any(|(k, v)| {
            matches!(k.as_str(), "status" | "apiVersion" | "kind" | "metadata")
                || (is_secret && k == "stringData")
                || v.is_null()
                || has_null_entries(v)
        })
}

/// [`strip_nulls`], copying only when there is a `null` to remove.
fn without_nulls(v: &Value) -> Cow<'_, Value> {
    if has_null_entries(v) {
        Cow::Owned(strip_nulls(v))
    } else {
        Cow::Borrowed(v)
    }
}

/// Whether [`strip_nulls`] would remove anything from `v`.
fn has_null_entries(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.values().any(|v| v.is_null() || has_null_entries(v)),
        Value::Array(items) => items.iter().any(has_null_entries),
        _ => false,
    }
}

/// The top-level fields of `obj` as `serde_json::to_value(obj)` has them (type meta, the whole
/// metadata, then the other fields, which win over the first two on equal keys), without copying the
/// other fields.
fn serialized_fields(obj: &DynamicObject) -> Fields<'_> {
    let mut out = Fields::new();
    if let Some(t) = &obj.types {
        out.insert(
            "apiVersion",
            Cow::Owned(Value::String(t.api_version.clone())),
        );
        out.insert("kind", Cow::Owned(Value::String(t.kind.clone())));
    }
    out.insert(
        "metadata",
        Cow::Owned(serde_json::to_value(&obj.metadata).expect("ObjectMeta serializes")),
    );
    if let Value::Object(data) = &obj.data {
        out.extend(data.iter().map(|(k, v)| (k.as_str(), Cow::Borrowed(v))));
    }
    out
}

/// The top-level field `key` of `live` as `serde_json::to_value(live)` has it, for comparisons with a
/// normalized desired object: its metadata only as far as normalized metadata goes (name, namespace,
/// labels, annotations; managedFields of a large object are large).
fn live_field<'a>(live: &'a DynamicObject, key: &str) -> Option<Cow<'a, Value>> {
    if let Some(v) = live.data.as_object().and_then(|d| d.get(key)) {
        return Some(Cow::Borrowed(v));
    }
    let types = live.types.as_ref();
    match key {
        "apiVersion" => types.map(|t| Cow::Owned(Value::String(t.api_version.clone()))),
        "kind" => types.map(|t| Cow::Owned(Value::String(t.kind.clone()))),
        "metadata" => {
            let m = &live.metadata;
            let mut meta = Map::new();
            let strings = |map: &BTreeMap<String, String>| {
                Value::Object(
                    map.iter()
                        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                        .collect(),
                )
            };
            if let Some(name) = &m.name {
                meta.insert("name".into(), Value::String(name.clone()));
            }
            if let Some(ns) = &m.namespace {
                meta.insert("namespace".into(), Value::String(ns.clone()));
            }
            if let Some(labels) = &m.labels {
                meta.insert("labels".into(), strings(labels));
            }
            if let Some(annotations) = &m.annotations {
                meta.insert("annotations".into(), strings(annotations));
            }
            Some(Cow::Owned(Value::Object(meta)))
        }
        _ => None,
    }
}

/// A Secret's `stringData` is write-only: the API server folds it into `data` (base64) and never
/// returns it, so a desired object with `stringData` would never look applied. Fold it the same way
/// (as Flux does); `stringData` wins over `data` for the same key, as on the server.
fn fold_string_data(secret: &mut Fields<'_>) {
    let Some(string_data) = secret.remove("stringData") else {
        return;
    };
    let data = secret
        .entry("data")
        .or_insert_with(|| Cow::Owned(Value::Object(Map::new())));
    fold_into(data.to_mut(), string_data.into_owned());
}

/// `stringData` (when a map) into `data` (when a map), base64-encoded.
fn fold_into(data: &mut Value, string_data: Value) {
    use base64::Engine;
    if let (Value::Object(data), Value::Object(string_data)) = (data, string_data) {
        for (k, v) in string_data {
            if let Value::String(text) = v {
                let encoded = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
                data.insert(k, Value::String(encoded));
            }
        }
    }
}

/// [`normalize`] of an object that is not needed any more, in place: its content is moved, not copied.
pub(crate) fn into_normalized(obj: DynamicObject) -> DynamicObject {
    let DynamicObject {
        types,
        metadata,
        data,
    } = obj;
    let is_secret = types
        .as_ref()
        .is_some_and(|t| t.api_version == "v1" && t.kind == "Secret");
    let mut data = match data {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    data.retain(|k, v| {
        !matches!(k.as_str(), "status" | "apiVersion" | "kind" | "metadata") && !v.is_null()
    });
    data.values_mut().for_each(strip_nulls_in_place);
    if is_secret && let Some(string_data) = data.remove("stringData") {
        let target = data
            .entry("data")
            .or_insert_with(|| Value::Object(Map::new()));
        fold_into(target, string_data);
    }
    DynamicObject {
        types,
        metadata: ObjectMeta {
            name: metadata.name,
            namespace: metadata.namespace.filter(|ns| !ns.is_empty()),
            labels: metadata.labels.filter(|m| !m.is_empty()),
            annotations: metadata.annotations.filter(|m| !m.is_empty()),
            ..ObjectMeta::default()
        },
        data: Value::Object(data),
    }
}

/// [`strip_nulls`] in place.
fn strip_nulls_in_place(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, v| !v.is_null());
            m.values_mut().for_each(strip_nulls_in_place);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_nulls_in_place),
        _ => {}
    }
}

/// sha256 (hex) of a value serialized canonically (object keys sorted), so the hash does not depend
/// on map order or on serde_json's `preserve_order` feature.
pub fn hash_value(v: &Value) -> String {
    let mut hasher = Sha256::new();
    write_canonical(v, &mut hasher);
    hex(hasher)
}

/// [`hash_value`] of top-level fields taken as one JSON object.
pub(crate) fn hash_fields(fields: &Fields<'_>) -> String {
    let mut hasher = Sha256::new();
    write_fields(fields, &mut hasher);
    hex(hasher)
}

/// [`hash_value`] of the array of `objects` as `serde_json::to_value` has them, without building that
/// array (a copy of every object).
pub fn hash_objects<'a>(objects: impl IntoIterator<Item = &'a DynamicObject>) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"[");
    for obj in objects {
        write_fields(&serialized_fields(obj), &mut hasher);
        hasher.update(b",");
    }
    hasher.update(b"]");
    hex(hasher)
}

fn hex(hasher: Sha256) -> String {
    capi_object::lower_hex(&hasher.finalize())
}

/// Writes sorted fields as [`write_canonical`] writes an object.
fn write_fields(fields: &Fields<'_>, h: &mut Sha256) {
    h.update(b"{");
    for (k, v) in fields {
        write_key(k, h);
        write_canonical(v, h);
        h.update(b",");
    }
    h.update(b"}");
}

fn write_key(k: &str, h: &mut Sha256) {
    h.update(Value::String(k.to_owned()).to_string().as_bytes());
    h.update(b":");
}

fn write_canonical(v: &Value, h: &mut Sha256) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            h.update(b"{");
            for k in keys {
                write_key(k, h);
                write_canonical(&m[k], h);
                h.update(b",");
            }
            h.update(b"}");
        }
        Value::Array(a) => {
            h.update(b"[");
            for x in a {
                write_canonical(x, h);
                h.update(b",");
            }
            h.update(b"]");
        }
        other => h.update(other.to_string().as_bytes()),
    }
}

/// The hash of the normalized desired object, ignoring the hash annotation itself.
pub(crate) fn desired_hash(desired: &DynamicObject, hash_annotation: &str) -> String {
    let mut fields = normalized_fields(desired);
    remove_annotation(&mut fields, hash_annotation);
    hash_fields(&fields)
}

/// Removes an annotation from normalized fields, and the annotations with it when it was the last.
pub(crate) fn remove_annotation(fields: &mut Fields<'_>, annotation: &str) {
    let Some(Value::Object(meta)) = fields.get_mut("metadata").map(Cow::to_mut) else {
        return;
    };
    if let Some(Value::Object(ann)) = meta.get_mut("annotations") {
        ann.remove(annotation);
        if ann.is_empty() {
            meta.remove("annotations");
        }
    }
}

/// True iff every field `desired` sets is present and equal in `live`: maps recursively, lists of the
/// same length element by element, `null` in desired means "absent", an empty map or list in
/// desired also matches an absent field (the API server drops empty ones), and a quantity matches
/// its canonical form (`"0.1"` and `"100m"`, `1` and `"1"`).
pub fn is_subset(desired: &Value, live: &Value) -> bool {
    match (desired, live) {
        (Value::Null, _) => true,
        (Value::Object(d), Value::Object(l)) => d.iter().all(|(k, dv)| match l.get(k) {
            Some(lv) => is_subset(dv, lv),
            None => is_empty_like(dv),
        }),
        (Value::Object(d), Value::Null) => d.values().all(is_empty_like),
        (Value::Array(d), Value::Array(l)) => {
            d.len() == l.len() && d.iter().zip(l).all(|(dv, lv)| is_subset(dv, lv))
        }
        (Value::Array(d), Value::Null) => d.is_empty(),
        (Value::Number(d), Value::Number(l)) => d == l || d.as_f64() == l.as_f64(),
        // The API server stores resource quantities in canonical form ("0.1" → "100m", 1 → "1").
        (Value::String(_) | Value::Number(_), Value::String(l)) if desired != live => {
            same_quantity(desired, l)
        }
        (d, l) => d == l,
    }
}

/// Whether `desired` and the string `live` are the same Kubernetes quantity written differently.
/// Only a *string* on the live side can be a canonicalized quantity; the server never turns one
/// plain string into another outside quantity fields, so an accidental match means an edit from a
/// value to an equal quantity, which changes nothing.
fn same_quantity(desired: &Value, live: &str) -> bool {
    let d = match desired {
        Value::String(s) => parse_quantity(s),
        Value::Number(n) => n.as_f64(),
        _ => None,
    };
    match (d, parse_quantity(live)) {
        (Some(a), Some(b)) => a == b || (a - b).abs() <= 1e-12 * a.abs().max(b.abs()),
        _ => false,
    }
}

/// A Kubernetes quantity (`<decimal>[e<exponent>|<suffix>]`) as a number; `None` when it is not one.
fn parse_quantity(s: &str) -> Option<f64> {
    const SUFFIXES: [(&str, f64); 15] = [
        ("Ki", 1024.0),
        ("Mi", 1_048_576.0),
        ("Gi", 1_073_741_824.0),
        ("Ti", 1_099_511_627_776.0),
        ("Pi", 1_125_899_906_842_624.0),
        ("Ei", 1_152_921_504_606_846_976.0),
        ("n", 1e-9),
        ("u", 1e-6),
        ("m", 1e-3),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
        ("P", 1e15),
        ("E", 1e18),
    ];
    let (number, factor) = SUFFIXES
        .iter()
        .find_map(|(suffix, f)| s.strip_suffix(suffix).map(|n| (n, *f)))
        .unwrap_or((s, 1.0));
    let (mantissa, exponent) = match number.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i32>().ok()?),
        None => (number, 0),
    };
    let digits = mantissa.strip_prefix(['+', '-']).unwrap_or(mantissa);
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let all_digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
    if (int.is_empty() && frac.is_empty()) || !all_digits(int) || !all_digits(frac) {
        return None;
    }
    let value: f64 = mantissa.parse().ok()?;
    Some(value * 10f64.powi(exponent) * factor)
}

fn is_empty_like(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(m) => m.values().all(is_empty_like),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// `live` restricted to the shape of `desired`: only the fields desired sets (lists of equal length
/// element by element, otherwise whole). Differences outside our fields (status, defaults, other
/// managers' fields) do not change it. What [`projection_hash`] hashes without building it; built only
/// by the tests that check the two agree.
#[cfg(test)]
pub(crate) fn project(desired: &Value, live: &Value) -> Value {
    match (desired, live) {
        (Value::Object(d), Value::Object(l)) => Value::Object(
            d.iter()
                .map(|(k, dv)| (k.clone(), project(dv, l.get(k).unwrap_or(&Value::Null))))
                .collect(),
        ),
        (Value::Array(d), Value::Array(l)) if d.len() == l.len() => {
            Value::Array(d.iter().zip(l).map(|(dv, lv)| project(dv, lv)).collect())
        }
        (_, l) => l.clone(),
    }
}

/// Hash of `project(normalize(desired), live)` (`live` restricted to the shape of the normalized
/// `desired`), without building either.
pub(crate) fn projection_hash(desired: &DynamicObject, live: &DynamicObject) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"{");
    for (k, dv) in &normalized_fields(desired) {
        write_key(k, &mut hasher);
        match live_field(live, k) {
            Some(lv) => write_projection(dv, &lv, &mut hasher),
            None => write_projection(dv, &Value::Null, &mut hasher),
        }
        hasher.update(b",");
    }
    hasher.update(b"}");
    hex(hasher)
}

/// Writes `project(desired, live)` as [`write_canonical`] would.
fn write_projection(desired: &Value, live: &Value, h: &mut Sha256) {
    match (desired, live) {
        (Value::Object(d), Value::Object(l)) => {
            let mut keys: Vec<&String> = d.keys().collect();
            keys.sort();
            h.update(b"{");
            for k in keys {
                write_key(k, h);
                write_projection(&d[k], l.get(k).unwrap_or(&Value::Null), h);
                h.update(b",");
            }
            h.update(b"}");
        }
        (Value::Array(d), Value::Array(l)) if d.len() == l.len() => {
            h.update(b"[");
            for (dv, lv) in d.iter().zip(l) {
                write_projection(dv, lv, h);
                h.update(b",");
            }
            h.update(b"]");
        }
        (_, l) => write_canonical(l, h),
    }
}

/// The part of `live` that a `managedFields` entry's `fieldsV1` set names, in the set's own shape:
/// `f:<field>` a map field, `k:<keys>` the list item whose key fields match, `v:<value>` whether a set
/// holds the value, `i:<n>` the n-th item; a leaf (`{}`) is the whole value, `.` alone the existence of
/// the item. A field that is gone projects to `null`, so removing what a manager owns changes the
/// projection as much as changing it.
pub(crate) fn project_fields(fields: &Value, live: &Value) -> Value {
    let Some(fields) = fields.as_object() else {
        return live.clone();
    };
    if fields.is_empty() {
        return live.clone();
    }
    if fields.keys().all(|k| k == ".") {
        return Value::Bool(!live.is_null());
    }
    let null = Value::Null;
    let mut out = Map::new();
    for (path, sub) in fields {
        let projected = if let Some(name) = path.strip_prefix("f:") {
            project_fields(sub, live.get(name).unwrap_or(&null))
        } else if let Some(keys) = path.strip_prefix("k:") {
            let keys: Value = serde_json::from_str(keys).unwrap_or(Value::Null);
            let item = live.as_array().and_then(|items| {
                items.iter().find(|item| {
                    keys.as_object().is_some_and(|k| {
                        k.iter().all(|(field, want)| item.get(field) == Some(want))
                    })
                })
            });
            project_fields(sub, item.unwrap_or(&null))
        } else if let Some(value) = path.strip_prefix("v:") {
            let value: Value = serde_json::from_str(value).unwrap_or(Value::Null);
            Value::Bool(live.as_array().is_some_and(|a| a.contains(&value)))
        } else if let Some(index) = path.strip_prefix("i:") {
            let item = index
                .parse::<usize>()
                .ok()
                .and_then(|i| live.as_array().and_then(|a| a.get(i)));
            project_fields(sub, item.unwrap_or(&null))
        } else {
            // "." beside children: the children say more.
            continue;
        };
        out.insert(path.clone(), projected);
    }
    Value::Object(out)
}

/// The sha256 of `live` projected onto the fields that `field_manager` owns through server-side apply
/// (its `Apply` entries of the main resource, not of `status`), as the API server tracks them; `None`
/// when it owns nothing there or `managedFields` were dropped.
///
/// This is what "nobody touched our fields" means without keeping the object: another manager that
/// changes one of our fields takes it over (it leaves our set, and the projection changes), a removed
/// field projects to `null`, and fields of other managers, defaults and `status` are not part of it.
pub(crate) fn managed_digest(live: &DynamicObject, field_manager: &str) -> Option<String> {
    let fields = managed_fields(live, field_manager)?;
    let mut value = serde_json::to_value(live).unwrap_or(Value::Null);
    if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    Some(hash_value(&project_fields(&fields, &value)))
}

/// Pure part of the steady-state test: `false` (nothing to do) iff `live` exists, carries the same
/// desired-hash annotation as `desired`, and `desired` is a semantic subset of it.
///
/// `desired` is the object as the applier stamps it (ownership label and hash annotation set).
pub fn needs_apply(
    desired: &DynamicObject,
    live: Option<&DynamicObject>,
    hash_annotation: &str,
) -> bool {
    let Some(live) = live else {
        return true;
    };
    let annotation = |o: &DynamicObject| {
        o.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(hash_annotation))
            .cloned()
    };
    let want = annotation(desired);
    if want.is_none() || annotation(live) != want {
        return true;
    }
    // `is_subset(normalize(desired), to_value(live))`, field by field.
    !normalized_fields(desired)
        .iter()
        .all(|(k, dv)| match live_field(live, k) {
            Some(lv) => is_subset(dv, &lv),
            None => is_empty_like(dv),
        })
}

#[cfg(test)]
#[path = "drift_tests.rs"]
mod tests;
