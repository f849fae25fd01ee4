//! What a server-side apply would change in an object, field by field: the live object against the
//! API server's answer to a dry-run of the apply (`capi_apply::Applier::preview`), over the fields our
//! field manager owns in either. Fields of other managers (a `caBundle` service-ca injects), defaults
//! and `status` are left out: the apply would not touch them. Pure.

use serde::Serialize;
use serde_json::{Map, Value};

use kube_core::DynamicObject;

/// One field that the apply would set, change or remove.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldChange {
    /// `spec.template.spec.containers[name=manager].args`; list items by their keys (`[name=v1]`), set
    /// members by value (`[="x"]`), other items by index (`[0]`).
    pub path: String,
    /// `None`: the field is absent before (added) or after (removed).
    pub before: Option<Value>,
    pub after: Option<Value>,
}

/// The changes from `live` to `after` on the fields `field_manager` owns (through server-side apply)
/// in either, in the order of the field sets (sorted by field name).
pub fn managed_changes(
    live: Option<&DynamicObject>,
    after: &DynamicObject,
    field_manager: &str,
) -> Vec<FieldChange> {
    let mut fields = Map::new();
    for obj in live.into_iter().chain(Some(after)) {
        if let Some(f) = managed_fields(obj, field_manager) {
            merge_fields(&mut fields, &f);
        }
    }
    let value = |o: &DynamicObject| {
        let mut v = serde_json::to_value(o).unwrap_or(Value::Null);
        if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("managedFields");
        }
        v
    };
    let before = live.map(value);
    let after = value(after);
    let mut out = Vec::new();
    walk(
        &Value::Object(fields),
        before.as_ref(),
        Some(&after),
        String::new(),
        &mut out,
    );
    out
}

/// `live` restricted to `fields` (a fieldsV1 set), in the object's own shape.
fn project_plain(fields: &Value, live: &Value) -> Value {
    let Some(fields) = fields.as_object().filter(|f| f.keys().any(|k| k != ".")) else {
        return live.clone();
    };
    match live {
        Value::Object(map) => Value::Object(
            fields
                .iter()
                .filter_map(|(k, sub)| {
                    let name = k.strip_prefix("f:")?;
                    Some((name.to_owned(), project_plain(sub, map.get(name)?)))
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(
            fields
                .iter()
                .filter_map(|(k, sub)| Some(project_plain(sub, item(items, k)?)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The item of a list that a fieldsV1 key (`k:`, `v:`, `i:`) names.
fn item<'a>(items: &'a [Value], key: &str) -> Option<&'a Value> {
    if let Some(keys) = key.strip_prefix("k:") {
        let keys: Map<String, Value> = serde_json::from_str(keys).ok()?;
        items
            .iter()
            .find(|i| keys.iter().all(|(f, want)| i.get(f) == Some(want)))
    } else if let Some(value) = key.strip_prefix("v:") {
        let value: Value = serde_json::from_str(value).ok()?;
        items.iter().find(|i| **i == value)
    } else {
        items.get(key.strip_prefix("i:")?.parse::<usize>().ok()?)
    }
}

/// How a fieldsV1 key reads in a path.
fn segment(path: &str, key: &str) -> Option<String> {
    if let Some(name) = key.strip_prefix("f:") {
        let plain = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        return Some(match (path.is_empty(), plain) {
            (true, _) => name.to_owned(),
            (false, true) => format!("{path}.{name}"),
            (false, false) => format!("{path}[{}]", Value::String(name.to_owned())),
        });
    }
    if let Some(keys) = key.strip_prefix("k:") {
        let keys: Map<String, Value> = serde_json::from_str(keys).ok()?;
        let keys: Vec<String> = keys
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => format!("{k}={s}"),
                other => format!("{k}={other}"),
            })
            .collect();
        return Some(format!("{path}[{}]", keys.join(",")));
    }
    if let Some(value) = key.strip_prefix("v:") {
        return Some(format!("{path}[={value}]"));
    }
    key.strip_prefix("i:").map(|i| format!("{path}[{i}]"))
}

fn walk(
    fields: &Value,
    before: Option<&Value>,
    after: Option<&Value>,
    path: String,
    out: &mut Vec<FieldChange>,
) {
    let children: Vec<(&String, &Value)> = fields
        .as_object()
        .map(|f| f.iter().filter(|(k, _)| *k != ".").collect())
        .unwrap_or_default();
    // A node that exists on one side only: one change for the whole of it.
    if before.is_none() || after.is_none() {
        let before = before.map(|v| project_plain(fields, v));
        let after = after.map(|v| project_plain(fields, v));
        if before != after {
            out.push(FieldChange {
                path,
                before,
                after,
            });
        }
        return;
    }
    // A leaf: we own the whole value (an atomic list such as a CRD's `versions`).
    if children.is_empty() {
        value_changes(path, before, after, out);
        return;
    }
    for (key, sub) in children {
        let Some(child) = segment(&path, key) else {
            continue;
        };
        let pick = |v: Option<&Value>| -> Option<Value> {
            let v = v?;
            if let Some(name) = key.strip_prefix("f:") {
                return v.get(name).cloned();
            }
            item(v.as_array()?, key).cloned()
        };
        walk(sub, pick(before).as_ref(), pick(after).as_ref(), child, out);
    }
}

/// The changes inside a value owned whole: maps field by field, lists of named items (a CRD's
/// `versions`, a Deployment's containers when owned whole) item by item, anything else at once.
fn value_changes(
    path: String,
    before: Option<&Value>,
    after: Option<&Value>,
    out: &mut Vec<FieldChange>,
) {
    if before == after {
        return;
    }
    let change = |out: &mut Vec<FieldChange>| {
        out.push(FieldChange {
            path: path.clone(),
            before: before.cloned(),
            after: after.cloned(),
        })
    };
    match (before, after) {
        (Some(Value::Object(b)), Some(Value::Object(a))) => {
            let mut keys: Vec<&String> = b.keys().chain(a.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let child = segment(&path, &format!("f:{k}")).unwrap_or_default();
                value_changes(child, b.get(k), a.get(k), out);
            }
        }
        (Some(Value::Array(b)), Some(Value::Array(a))) => {
            let (Some(b_names), Some(a_names)) = (names(b), names(a)) else {
                return change(out);
            };
            let mut all: Vec<&str> = b_names.iter().chain(&a_names).copied().collect();
            all.sort();
            all.dedup();
            let find = |items: &'_ [Value], name: &str| {
                items
                    .iter()
                    .find(|i| i["name"].as_str() == Some(name))
                    .cloned()
            };
            for name in all {
                value_changes(
                    format!("{path}[name={name}]"),
                    find(b, name).as_ref(),
                    find(a, name).as_ref(),
                    out,
                );
            }
        }
        _ => change(out),
    }
}

/// What changed inside a value, for a person to read ([`FieldChange::detail`]): a list's items or a
/// long string's lines are many, and two values cut to one line look alike when the change is at
/// the end (an argument appended to a long `args` list).
#[derive(Debug, Clone, PartialEq)]
pub enum Detail<'a> {
    /// Set, removed, or replaced whole: a value absent on one side, a scalar, a short string.
    Whole,
    /// A list (of items without names, or owned whole): the items removed (their index before) and
    /// added (their index after), in order; items kept are not listed.
    Items {
        before: usize,
        after: usize,
        edits: Vec<Edit<&'a Value>>,
    },
    /// A multi-line string: the lines removed (their number before) and added (their number after).
    Lines {
        before: usize,
        after: usize,
        edits: Vec<Edit<&'a str>>,
    },
    /// A long one-line string: where the two first differ (a character index) and each side from
    /// there up to what both end with.
    Span {
        at: usize,
        len_before: usize,
        len_after: usize,
        /// The characters both sides share just before `at` (at most [`SPAN_CONTEXT`]).
        context: &'a str,
        before: &'a str,
        after: &'a str,
    },
}

/// One item (or line) removed or added; `index` counts from 0 (lines: from 1) on its own side.
#[derive(Debug, Clone, PartialEq)]
pub struct Edit<T> {
    pub added: bool,
    pub index: usize,
    pub item: T,
}

/// A one-line string longer than this is shown by where it changed ([`Detail::Span`]).
pub const LONG_STRING: usize = 80;

/// Characters of shared context shown before a [`Detail::Span`].
pub const SPAN_CONTEXT: usize = 20;

impl FieldChange {
    /// What changed inside the value (see [`Detail`]).
    pub fn detail(&self) -> Detail<'_> {
        match (&self.before, &self.after) {
            (Some(Value::Array(b)), Some(Value::Array(a))) => items(b, a),
            (Some(Value::String(b)), Some(Value::String(a)))
                if b.contains('\n') || a.contains('\n') =>
            {
                lines(b, a)
            }
            (Some(Value::String(b)), Some(Value::String(a)))
                if b.chars().count().max(a.chars().count()) > LONG_STRING =>
            {
                span(b, a)
            }
            _ => Detail::Whole,
        }
    }
}

fn edit<T>(added: bool, index: usize, item: T) -> Edit<T> {
    Edit { added, index, item }
}

fn diff_ops<T: Ord + std::hash::Hash>(before: &[T], after: &[T]) -> Vec<(bool, usize)> {
    use similar::{Algorithm, DiffOp, capture_diff_slices};
    let mut out = Vec::new();
    for op in capture_diff_slices(Algorithm::Myers, before, after) {
        match op {
            DiffOp::Equal { .. } => {}
            DiffOp::Delete {
                old_index, old_len, ..
            } => out.extend((old_index..old_index + old_len).map(|i| (false, i))),
            DiffOp::Insert {
                new_index, new_len, ..
            } => out.extend((new_index..new_index + new_len).map(|i| (true, i))),
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => {
                out.extend((old_index..old_index + old_len).map(|i| (false, i)));
                out.extend((new_index..new_index + new_len).map(|i| (true, i)));
            }
        }
    }
    out
}

fn items<'a>(before: &'a [Value], after: &'a [Value]) -> Detail<'a> {
    // Items compared by their JSON text: `Value` is not `Hash`.
    let text = |items: &[Value]| items.iter().map(Value::to_string).collect::<Vec<_>>();
    let edits = diff_ops(&text(before), &text(after))
        .into_iter()
        .map(|(added, i)| edit(added, i, if added { &after[i] } else { &before[i] }))
        .collect();
    Detail::Items {
        before: before.len(),
        after: after.len(),
        edits,
    }
}

fn lines<'a>(before: &'a str, after: &'a str) -> Detail<'a> {
    let b: Vec<&str> = before.lines().collect();
    let a: Vec<&str> = after.lines().collect();
    let edits = diff_ops(&b, &a)
        .into_iter()
        .map(|(added, i)| edit(added, i + 1, if added { a[i] } else { b[i] }))
        .collect();
    Detail::Lines {
        before: b.len(),
        after: a.len(),
        edits,
    }
}

fn span<'a>(before: &'a str, after: &'a str) -> Detail<'a> {
    // Shared prefix and suffix in characters (byte offsets kept on char boundaries).
    let prefix: Vec<(usize, char)> = before
        .char_indices()
        .zip(after.chars())
        .take_while(|((_, b), a)| b == a)
        .map(|(bc, _)| bc)
        .collect();
    let at = prefix.len();
    let start = prefix.last().map_or(0, |(i, c)| i + c.len_utf8());
    let (b_rest, a_rest) = (&before[start..], &after[start..]);
    let suffix = b_rest
        .chars()
        .rev()
        .zip(a_rest.chars().rev())
        .take_while(|(b, a)| b == a)
        .map(|(c, _)| c.len_utf8())
        .sum::<usize>();
    let context_start = prefix
        .len()
        .checked_sub(SPAN_CONTEXT)
        .map_or(0, |i| prefix[i].0);
    Detail::Span {
        at,
        len_before: before.chars().count(),
        len_after: after.chars().count(),
        context: &before[context_start..start],
        before: &b_rest[..b_rest.len() - suffix],
        after: &a_rest[..a_rest.len() - suffix],
    }
}

/// The `name` of each item, when every item is a map with a distinct string `name`.
fn names(items: &[Value]) -> Option<Vec<&str>> {
    let names: Option<Vec<&str>> = items.iter().map(|i| i.get("name")?.as_str()).collect();
    let names = names?;
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    (unique.len() == names.len()).then_some(names)
}

/// The fieldsV1 set that `field_manager` owns through server-side apply on the main resource (its
/// `Apply` entries, merged); `None` when it has none.
pub fn managed_fields(obj: &DynamicObject, field_manager: &str) -> Option<Value> {
    let mut merged: Option<Map<String, Value>> = None;
    for entry in obj.metadata.managed_fields.iter().flatten() {
        let ours = entry.manager.as_deref() == Some(field_manager)
            && entry.operation.as_deref() == Some("Apply")
            && entry.subresource.as_deref().unwrap_or("").is_empty()
            && entry.fields_type.as_deref() == Some("FieldsV1");
        if let (true, Some(fields)) = (ours, &entry.fields_v1) {
            merge_fields(merged.get_or_insert_with(Map::new), &fields.0);
        }
    }
    merged.map(Value::Object)
}

/// Union of two fieldsV1 sets (a manager may hold one Apply entry per apiVersion).
pub fn merge_fields(into: &mut Map<String, Value>, from: &Value) {
    let Some(from) = from.as_object() else { return };
    for (k, v) in from {
        // A leaf (`{}`) owns the whole value: it absorbs children from the other set.
        let leaf = |v: &Value| v.as_object().is_some_and(Map::is_empty);
        match into.get_mut(k) {
            Some(existing) if leaf(existing) => {}
            Some(Value::Object(existing)) if !leaf(v) => merge_fields(existing, v),
            _ => {
                into.insert(k.clone(), v.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(v: Value) -> DynamicObject {
        serde_json::from_value(v).unwrap()
    }

    fn deployment(args: Value, image: &str, extra_container: bool) -> DynamicObject {
        let mut containers = vec![json!({"name": "manager", "image": image, "args": args})];
        let mut fields = json!({"k:{\"name\":\"manager\"}": {".": {}, "f:name": {}, "f:args": {}}});
        if extra_container {
            containers.push(json!({"name": "proxy", "image": "p"}));
            fields["k:{\"name\":\"proxy\"}"] = json!({".": {}, "f:name": {}, "f:image": {}});
        }
        object(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "ns",
                "annotations": {"example.io/hash": "h1", "deployment.kubernetes.io/revision": "3"},
                "managedFields": [
                    {"manager": "us", "operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": {
                        "f:metadata": {"f:annotations": {"f:example.io/hash": {}}},
                        "f:spec": {"f:template": {"f:spec": {"f:containers": fields}}}}},
                    {"manager": "kube-controller-manager", "operation": "Update", "fieldsType": "FieldsV1",
                     "fieldsV1": {"f:metadata": {"f:annotations": {"f:deployment.kubernetes.io/revision": {}}}}}
                ]},
            "spec": {"replicas": 1, "template": {"spec": {"containers": containers}}},
            "status": {"replicas": 1}
        }))
    }

    #[test]
    fn only_what_our_apply_changes() {
        let live = deployment(json!(["--a"]), "i:1", false);
        let mut after = deployment(json!(["--a", "--v=4"]), "i:2", true);
        // Other managers' fields and status differ too: not ours, not shown.
        after
            .metadata
            .annotations
            .as_mut()
            .unwrap()
            .insert("deployment.kubernetes.io/revision".into(), "4".into());
        after.data["status"]["replicas"] = json!(2);
        let changes = managed_changes(Some(&live), &after, "us");
        assert_eq!(
            changes,
            [
                FieldChange {
                    path: "spec.template.spec.containers[name=manager].args".into(),
                    before: Some(json!(["--a"])),
                    after: Some(json!(["--a", "--v=4"])),
                },
                FieldChange {
                    path: "spec.template.spec.containers[name=proxy]".into(),
                    before: None,
                    after: Some(json!({"name": "proxy", "image": "p"})),
                },
            ],
            "the image is not ours (no f:image for manager): not shown"
        );
        assert!(managed_changes(Some(&live), &live, "us").is_empty());
        // Removed on the way: our field set shrinks, the old value shows as removed.
        let removed = managed_changes(Some(&after), &live, "us");
        assert_eq!(removed[1].path, "spec.template.spec.containers[name=proxy]");
        assert_eq!(removed[1].after, None);
    }

    #[test]
    fn an_atomic_list_of_named_items_is_compared_item_by_item() {
        let crd = |versions: Value| {
            object(json!({
                "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": "w.x.io", "managedFields": [{"manager": "us", "operation": "Apply",
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:versions": {}}}}]},
                "spec": {"versions": versions}
            }))
        };
        let v1 = json!({"name": "v1", "served": true, "storage": true});
        let live = crd(json!([v1.clone()]));
        let mut v1_unserved = v1.clone();
        v1_unserved["served"] = json!(false);
        let v2 = json!({"name": "v2", "served": true, "storage": false});
        let after = crd(json!([v1_unserved, v2.clone()]));
        assert_eq!(
            managed_changes(Some(&live), &after, "us"),
            [
                FieldChange {
                    path: "spec.versions[name=v1].served".into(),
                    before: Some(json!(true)),
                    after: Some(json!(false)),
                },
                FieldChange {
                    path: "spec.versions[name=v2]".into(),
                    before: None,
                    after: Some(v2),
                },
            ]
        );
    }

    #[test]
    fn paths_quote_what_is_not_a_plain_name() {
        let live = deployment(json!([]), "i", false);
        let mut after = live.clone();
        after
            .metadata
            .annotations
            .as_mut()
            .unwrap()
            .insert("example.io/hash".into(), "h2".into());
        let changes = managed_changes(Some(&live), &after, "us");
        assert_eq!(changes.len(), 1);
        assert_eq!(
            changes[0].path,
            r#"metadata.annotations["example.io/hash"]"#
        );
        assert_eq!(changes[0].before, Some(json!("h1")));
    }

    fn change(before: Option<Value>, after: Option<Value>) -> FieldChange {
        FieldChange {
            path: "p".into(),
            before,
            after,
        }
    }

    #[test]
    fn an_appended_argument_is_the_one_item_added() {
        let mut args: Vec<Value> = (0..12)
            .map(|i| json!(format!("--flag-{i}=a-long-value")))
            .collect();
        let before = json!(args.clone());
        args.push(json!("--v=4"));
        let c = change(Some(before), Some(json!(args)));
        let Detail::Items {
            before,
            after,
            edits,
        } = c.detail()
        else {
            panic!("{:?}", c.detail());
        };
        assert_eq!((before, after), (12, 13));
        assert_eq!(edits, [edit(true, 12, &json!("--v=4"))]);
    }

    #[test]
    fn items_removed_and_replaced_keep_their_own_side_s_index() {
        let c = change(
            Some(json!(["a", "b", "c", {"x": 1}])),
            Some(json!(["a", "c", {"x": 2}, "d"])),
        );
        let Detail::Items { edits, .. } = c.detail() else {
            panic!()
        };
        assert_eq!(
            edits,
            [
                edit(false, 1, &json!("b")),
                edit(false, 3, &json!({"x": 1})),
                edit(true, 2, &json!({"x": 2})),
                edit(true, 3, &json!("d")),
            ]
        );
    }

    #[test]
    fn a_multi_line_string_shows_its_changed_lines() {
        let c = change(
            Some(json!("a: 1\nb: 2\nc: 3\n")),
            Some(json!("a: 1\nb: 20\nc: 3\nd: 4\n")),
        );
        assert_eq!(
            c.detail(),
            Detail::Lines {
                before: 3,
                after: 4,
                edits: vec![
                    edit(false, 2, "b: 2"),
                    edit(true, 2, "b: 20"),
                    edit(true, 4, "d: 4"),
                ]
            }
        );
    }

    #[test]
    fn a_long_string_shows_where_it_changed() {
        let head = "x".repeat(100);
        let c = change(
            Some(json!(format!("{head}é-old-tail"))),
            Some(json!(format!("{head}é-new!-tail"))),
        );
        assert_eq!(
            c.detail(),
            Detail::Span {
                at: 102,
                len_before: 110,
                len_after: 111,
                context: &format!("{}é-", "x".repeat(18)),
                before: "old",
                after: "new!",
            }
        );
    }

    #[test]
    fn short_scalars_and_one_sided_values_change_whole() {
        for (before, after) in [
            (Some(json!("short")), Some(json!("other"))),
            (Some(json!(1)), Some(json!(2))),
            (None, Some(json!(["a"]))),
            (Some(json!("x".repeat(100))), None),
            (Some(json!({"a": 1})), Some(json!({"a": 2}))),
        ] {
            assert_eq!(change(before, after).detail(), Detail::Whole);
        }
    }
}
