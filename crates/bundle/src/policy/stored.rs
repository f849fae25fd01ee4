//! Judging what the API server will store, not only what the bundle says (issue 29).
//!
//! On the text ([`as_written`]): a bundle that says something the API server stores differently is
//! refused. A number written as a float: the kinds a bundle may contain have no float field outside a
//! CRD's schema, and the API server stores `runAsUser: 0.0` as 0 and `hostPort: 8080.0` as 8080, so a
//! rule reading integers would miss them. A deprecated alias: the API server copies `serviceAccount`
//! into an empty `serviceAccountName`, so `serviceAccountName: ""` beside it runs the pod as the
//! alias's account.
//!
//! On the stored object ([`Stored`]): the preflight's server-side dry-run returns each object as it
//! would be stored (defaults filled, aliases resolved, numbers typed), and the rules run again on
//! that, with the same bundle around it.

use std::collections::{BTreeMap, BTreeSet};

use capi_apply::ObjectKey;
use kube_core::DynamicObject;
use serde_json::Value;

use super::references::Among;
use super::{Bundle, BundleObject, Origin, PolicyConfig, Reading, Report, Rule, Violation};

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

/// The policy of one bundle, kept to judge its objects again as the API server would store them
/// (the answers of the preflight's dry-run).
#[derive(Debug, Clone)]
pub struct Stored {
    config: PolicyConfig,
    bundle: Bundle,
    provider: String,
    origins: BTreeMap<ObjectKey, Origin>,
}

impl Stored {
    pub fn new(
        objects: &[BundleObject<'_>],
        config: &PolicyConfig,
        payload_images: &BTreeSet<&str>,
        provider: &str,
    ) -> Self {
        Stored {
            // Judged within the provider's own bound, as the text was ([`super::check`]).
            config: config.for_provider(provider),
            bundle: Bundle::index(objects, payload_images),
            provider: provider.to_string(),
            origins: objects
                .iter()
                .filter_map(|o| Some((capi_apply::key_of(o.object)?, o.origin.clone())))
                .collect(),
        }
    }

    /// Every rule on `stored`, the object `key` as the API server would store it. Cross-provider
    /// rules are not judged again: labels, selectors and names are stored as written.
    pub fn violations(&self, key: &ObjectKey, stored: &DynamicObject) -> Vec<Violation> {
        let origin = self.origins.get(key).cloned().unwrap_or(Origin {
            source: String::new(),
            document: 0,
        });
        let mut out = Vec::new();
        let mut v = |rule: Rule, detail: String| {
            out.push(Violation {
                origin: origin.clone(),
                object: key.clone(),
                rule,
                detail: format!("as stored: {detail}"),
            })
        };
        if !self.config.enforce {
            return out;
        }
        let among = Among::alone(&self.provider);
        // The cluster's proxy was added after the policy judged the text ([`crate::proxy`]): the
        // stored object is judged without it, as the text was.
        let without_proxy;
        let stored = if key.group == "apps" && key.kind == "Deployment" {
            let mut object = stored.clone();
            crate::proxy::strip(&mut object);
            without_proxy = object;
            &without_proxy
        } else {
            stored
        };
        super::check_object(
            key,
            stored,
            &self.config,
            &self.bundle,
            &among,
            Reading::Stored,
            &mut v,
        );
        out
    }

    /// [`Stored::violations`] as the apply engine's judge wants it: one line per violation.
    pub fn judge(&self, key: &ObjectKey, stored: &DynamicObject) -> Result<(), String> {
        let violations = self.violations(key, stored);
        match violations.is_empty() {
            true => Ok(()),
            false => Err(violations
                .iter()
                .map(|v| format!("bundle policy: {v}"))
                .collect::<Vec<_>>()
                .join("; ")),
        }
    }
}
