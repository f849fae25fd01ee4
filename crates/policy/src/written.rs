//! On the text: a bundle that says something the API server stores differently is refused (issue
//! 29). A number written as a float: the kinds a bundle may contain have no float field outside a
//! CRD's schema, and the API server stores `runAsUser: 0.0` as 0 and `hostPort: 8080.0` as 8080, so a
//! rule reading integers would miss them. A deprecated alias: the API server copies `serviceAccount`
//! into an empty `serviceAccountName`, so `serviceAccountName: ""` beside it runs the pod as the
//! alias's account. The stored object itself is judged by [`super::stored`].

use capi_apply::ObjectKey;
use serde_json::Value;

use super::report::{Report, Rule};

/// Deprecated fields of a pod spec that the API server resolves into another: (alias, field).
const POD_ALIASES: [(&str, &str); 1] = [("serviceAccount", "serviceAccountName")];

/// The rules only the text can break: floats and aliases.
pub(super) fn as_written(key: &ObjectKey, data: &Value, v: &mut Report<'_>) {
    let crd = key.group == "apiextensions.k8s.io" && key.kind == "CustomResourceDefinition";
    let mut floats = Vec::new();
    find_floats(data, &mut String::new(), crd, &mut floats);
    for (at, number) in floats {
        let stored = match number.fract() == 0.0 && number.abs() < 9.0e15 {
            true => format!("the API server stores the integer {}", number as i64),
            false => "the field holds an integer, the API server refuses or truncates it".into(),
        };
        v(
            Rule::StoredAsWritten,
            format!("{at} is written as the float {number:?}: {stored}; write an integer"),
        );
    }
    if key.group == "apps"
        && key.kind == "Deployment"
        && let Some(pod) = data.pointer("/spec/template/spec")
    {
        for (alias, field) in POD_ALIASES {
            if pod.get(alias).is_some_and(|a| !a.is_null()) {
                v(
                    Rule::StoredAsWritten,
                    format!(
                        "spec.template.spec.{alias} is the deprecated alias of {field}: the API server copies it into an empty {field}; write {field} only"
                    ),
                );
            }
        }
    }
}

/// Every number written as a float, with its field path. In a CRD, its schemas are left out: a
/// schema's `minimum` or `default` may be any JSON number.
fn find_floats(value: &Value, at: &mut String, crd: bool, out: &mut Vec<(String, f64)>) {
    match value {
        Value::Number(n) if n.is_f64() => out.push((at.clone(), n.as_f64().unwrap_or_default())),
        Value::Object(map) => {
            for (k, child) in map {
                let len = at.len();
                if !at.is_empty() {
                    at.push('.');
                }
                at.push_str(k);
                let schema = crd
                    && (at == "spec.validation"
                        || (at.starts_with("spec.versions[") && k == "schema"));
                if !schema {
                    find_floats(child, at, crd, out);
                }
                at.truncate(len);
            }
        }
        Value::Array(list) => {
            for (i, child) in list.iter().enumerate() {
                let len = at.len();
                at.push_str(&format!("[{i}]"));
                find_floats(child, at, crd, out);
                at.truncate(len);
            }
        }
        _ => {}
    }
}
