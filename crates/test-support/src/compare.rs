//! Semantic comparison of object sets and of transport ConfigMaps, for the tests of `capi-manifests`
//! and `manifests-gen` (their output against the reference generator's fixtures). Test-only, so it
//! lives here rather than in a shipped crate.
//!
//! Objects are matched by [`ObjectKey`]; order of objects and of map keys does not matter.
//! Normalization before comparing (fixtures README, and what the reference's Go serialization
//! adds without meaning anything):
//! - a `null` value counts as an absent field;
//! - the `status` of a CustomResourceDefinition is ignored (the reference leaves
//!   `acceptedNames` with empty strings and null conditions: never applied);
//! - an empty `status: {}` on any object, and an empty `spec.strategy: {}` on a Deployment,
//!   count as absent: Go writes zero-value structs that have no `omitempty` effect, and the API
//!   server treats `{}` there exactly like absence. Empty maps elsewhere (`emptyDir: {}`) keep
//!   their meaning and are compared.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

use capi_manifests::{Error, ObjectKey, TransportConfigMap};
use capi_object::strip_nulls;

/// One differing field.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldDiff {
    /// Like `spec.template.spec.containers[0].image`; keys with dots or slashes in brackets:
    /// `metadata.annotations["service.beta.openshift.io/inject-cabundle"]`.
    pub path: String,
    /// `None`: absent on that side.
    pub expected: Option<Value>,
    pub actual: Option<Value>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ObjectSetDiff {
    pub missing: Vec<ObjectKey>,
    pub extra: Vec<ObjectKey>,
    /// Per object present on both sides, its differing fields.
    pub changed: Vec<(ObjectKey, Vec<FieldDiff>)>,
    /// Objects on one side that have no identity or appear twice.
    pub problems: Vec<String>,
}

impl ObjectSetDiff {
    pub fn is_empty(&self) -> bool {
        self.missing.is_empty()
            && self.extra.is_empty()
            && self.changed.is_empty()
            && self.problems.is_empty()
    }
}

fn short(v: &Option<Value>) -> String {
    match v {
        None => "<absent>".to_owned(),
        Some(v) => {
            let s = v.to_string();
            if s.len() > 300 {
                let mut end = 300;
                while !s.is_char_boundary(end) {
                    end -= 1;
                }
                format!("{}… ({} bytes)", &s[..end], s.len())
            } else {
                s
            }
        }
    }
}

impl fmt::Display for ObjectSetDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return writeln!(f, "no differences");
        }
        for p in &self.problems {
            writeln!(f, "problem: {p}")?;
        }
        for m in &self.missing {
            writeln!(f, "missing: {m}")?;
        }
        for e in &self.extra {
            writeln!(f, "extra:   {e}")?;
        }
        for (id, diffs) in &self.changed {
            writeln!(f, "changed: {id}")?;
            for d in diffs {
                writeln!(f, "  {}", d.path)?;
                writeln!(f, "    expected: {}", short(&d.expected))?;
                writeln!(f, "    actual:   {}", short(&d.actual))?;
            }
        }
        Ok(())
    }
}

/// Applies the normalization described in the module docs.
pub fn normalize(object: &Value) -> Value {
    let mut v = strip_nulls(object);
    let kind = v
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    if let Some(map) = v.as_object_mut() {
        let drop_status =
            kind == "CustomResourceDefinition" || map.get("status").is_some_and(is_empty_map);
        if drop_status {
            map.remove("status");
        }
        if kind == "Deployment"
            && let Some(spec) = map.get_mut("spec").and_then(Value::as_object_mut)
            && spec.get("strategy").is_some_and(is_empty_map)
        {
            spec.remove("strategy");
        }
    }
    v
}

fn is_empty_map(v: &Value) -> bool {
    v.as_object().is_some_and(|m| m.is_empty())
}

fn index<'a>(
    side: &str,
    objects: impl IntoIterator<Item = &'a Value>,
    problems: &mut Vec<String>,
) -> BTreeMap<ObjectKey, &'a Value> {
    let mut out = BTreeMap::new();
    for (i, o) in objects.into_iter().enumerate() {
        match ObjectKey::from_value(o) {
            Some(id) => {
                if out.insert(id.clone(), o).is_some() {
                    problems.push(format!("{side}: {id} appears more than once"));
                }
            }
            None => problems.push(format!(
                "{side}: object {i} has no apiVersion/kind/metadata.name"
            )),
        }
    }
    out
}

/// Compares two sets of objects, matched by [`ObjectKey`], after [`normalize`].
pub fn diff_objects<'a>(
    expected: impl IntoIterator<Item = &'a Value>,
    actual: impl IntoIterator<Item = &'a Value>,
) -> ObjectSetDiff {
    let mut diff = ObjectSetDiff::default();
    let exp = index("expected", expected, &mut diff.problems);
    let act = index("actual", actual, &mut diff.problems);
    for (id, e) in &exp {
        match act.get(id) {
            None => diff.missing.push(id.clone()),
            Some(a) => {
                let fields = diff_values(&normalize(e), &normalize(a));
                if !fields.is_empty() {
                    diff.changed.push((id.clone(), fields));
                }
            }
        }
    }
    diff.extra = act
        .keys()
        .filter(|id| !exp.contains_key(*id))
        .cloned()
        .collect();
    diff
}

/// Field-by-field differences of two values (no normalization). Lists are compared by index.
pub(crate) fn diff_values(expected: &Value, actual: &Value) -> Vec<FieldDiff> {
    let mut out = Vec::new();
    walk(expected, actual, String::new(), &mut out);
    out
}

fn push_key(path: &str, key: &str) -> String {
    let simple = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'$');
    if simple {
        if path.is_empty() {
            key.to_owned()
        } else {
            format!("{path}.{key}")
        }
    } else {
        format!("{path}[{}]", Value::from(key))
    }
}

fn walk(e: &Value, a: &Value, path: String, out: &mut Vec<FieldDiff>) {
    match (e, a) {
        (Value::Object(em), Value::Object(am)) => {
            for (k, ev) in em {
                match am.get(k) {
                    Some(av) => walk(ev, av, push_key(&path, k), out),
                    None => out.push(FieldDiff {
                        path: push_key(&path, k),
                        expected: Some(ev.clone()),
                        actual: None,
                    }),
                }
            }
            for (k, av) in am.iter().filter(|(k, _)| !em.contains_key(*k)) {
                out.push(FieldDiff {
                    path: push_key(&path, k),
                    expected: None,
                    actual: Some(av.clone()),
                });
            }
        }
        (Value::Array(ea), Value::Array(aa)) => {
            for i in 0..ea.len().max(aa.len()) {
                let p = format!("{path}[{i}]");
                match (ea.get(i), aa.get(i)) {
                    (Some(x), Some(y)) => walk(x, y, p, out),
                    (x, y) => out.push(FieldDiff {
                        path: p,
                        expected: x.cloned(),
                        actual: y.cloned(),
                    }),
                }
            }
        }
        _ if e == a => {}
        _ => out.push(FieldDiff {
            path,
            expected: Some(e.clone()),
            actual: Some(a.clone()),
        }),
    }
}

/// Differences of two transport ConfigMaps: the outer object (without the component and
/// metadata payloads), the metadata document, and the component objects.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TransportDiff {
    pub outer: Vec<FieldDiff>,
    pub metadata: Vec<FieldDiff>,
    pub objects: ObjectSetDiff,
}

impl TransportDiff {
    pub fn is_empty(&self) -> bool {
        self.outer.is_empty() && self.metadata.is_empty() && self.objects.is_empty()
    }
}

impl fmt::Display for TransportDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return writeln!(f, "no differences");
        }
        for (title, diffs) in [("ConfigMap", &self.outer), ("metadata", &self.metadata)] {
            for d in diffs {
                writeln!(
                    f,
                    "{title}: {}\n    expected: {}\n    actual:   {}",
                    d.path,
                    short(&d.expected),
                    short(&d.actual)
                )?;
            }
        }
        if !self.objects.is_empty() {
            write!(f, "components:\n{}", self.objects)?;
        }
        Ok(())
    }
}

/// The ConfigMap without `data` and `binaryData` (whose encodings may legitimately differ).
fn outer(cm: &Value) -> Value {
    let mut v = normalize(cm);
    if let Some(m) = v.as_object_mut() {
        m.remove("data");
        m.remove("binaryData");
    }
    v
}

/// Decodes both ConfigMaps (plain, zstd or gzip) and compares them semantically.
pub fn diff_transport(expected: &Value, actual: &Value) -> Result<TransportDiff, Error> {
    let e = TransportConfigMap::decode(expected)?.content;
    let a = TransportConfigMap::decode(actual)?.content;
    let md = |side: &str, text: &str| -> Result<Value, Error> {
        capi_manifests::yaml::parse_documents(&format!("{side} data.metadata"), text)
            .map(|d| d.into_iter().next().map_or(Value::Null, |d| d.value))
    };
    let objs = |side: &str, text: &str| -> Result<Vec<Value>, Error> {
        Ok(
            capi_manifests::yaml::parse_documents(&format!("{side} components"), text)?
                .into_iter()
                .map(|d| d.value)
                .collect(),
        )
    };
    let eo = objs("expected", &e.components)?;
    let ao = objs("actual", &a.components)?;
    Ok(TransportDiff {
        outer: diff_values(&outer(expected), &outer(actual)),
        metadata: diff_values(&md("expected", &e.metadata)?, &md("actual", &a.metadata)?),
        objects: diff_objects(&eo, &ao),
    })
}
