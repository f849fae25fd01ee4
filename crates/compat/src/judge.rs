//! The one judgement: every way a candidate CRD breaks a requirement.
//!
//! Per pinned version (only those [`Requirement::versions`] returns; the reference checks every
//! version whatever `requiredVersions` says), the pinned schema and the candidate's are walked side by
//! side from `openAPIV3Schema`: `properties` by name, `items` and `additionalProperties` without a
//! path segment of their own, as the API's `excludedFields` paths go. A field under an excluded path is
//! skipped with everything below it, in the same walk for every caller (the reference prunes the
//! pinned CRD for its webhook but not for its `Compatible` condition).
//!
//! A change is a finding when an object or a client that worked with the pinned schema can fail with
//! the candidate's: a field gone, a value no longer accepted, a merge that behaves differently. The
//! opposite direction (a new optional field, a wider bound, a rule removed) is never one.

use std::fmt;

use serde_json::{Number, Value};

use crate::requirement::Requirement;
use crate::schema::{self, EMPTY, child, element, flag, str_at};

/// One incompatibility, naming the requirement, the CRD, the version and the field.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub requirement: String,
    /// The CRD's `metadata.name`.
    pub crd: String,
    /// The pinned version; `""` for a change of the whole CRD (scope, group, kind, plural).
    pub version: String,
    /// Dot-separated field names from the version's schema root; `""` for the version itself or the
    /// schema's root.
    pub path: String,
    pub change: Change,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CompatibilityRequirement {}: {}",
            self.requirement, self.crd
        )?;
        if !self.version.is_empty() {
            write!(f, " version {}", self.version)?;
        }
        if !self.path.is_empty() {
            write!(f, ", {}", self.path)?;
        }
        write!(f, ": {}", self.change)
    }
}

/// What changed, with what it was and what it is in the candidate.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// `spec.scope` (Namespaced, Cluster).
    Scope { from: String, to: String },
    /// `spec.group`.
    Group { from: String, to: String },
    /// `spec.names.kind`.
    Kind { from: String, to: String },
    /// `spec.names.plural`: the resource's path.
    Plural { from: String, to: String },
    /// The CRD itself deleted.
    Deleted,
    /// The pinned version is not in the candidate at all.
    VersionRemoved,
    /// The pinned version is in the candidate but no longer served.
    VersionNotServed,
    /// A property of the pinned schema is not in the candidate's.
    FieldRemoved,
    /// `type`; `from` is `None` where the pinned schema allowed any type.
    Type { from: Option<String>, to: String },
    /// `format` added or changed.
    Format { from: Option<String>, to: String },
    /// Values of the pinned `enum` the candidate's lacks.
    EnumNarrowed { removed: Vec<Value> },
    /// An `enum` where the pinned schema had none.
    EnumAdded { allowed: Vec<Value> },
    /// In the candidate's `required` of its object, not in the pinned one's.
    NewlyRequired,
    /// `minimum`, `minLength`, `minItems`, `minProperties` raised or `maximum`, `maxLength`,
    /// `maxItems`, `maxProperties` lowered; `from` is `None` where there was no bound.
    Bound {
        keyword: &'static str,
        from: Option<Number>,
        to: Number,
    },
    /// `exclusiveMinimum` or `exclusiveMaximum` turned on.
    ExclusiveBound { keyword: &'static str },
    /// `pattern` added or changed.
    Pattern { from: Option<String>, to: String },
    /// `multipleOf` added, or changed to a value the old one is not a multiple of.
    MultipleOf { from: Option<Number>, to: Number },
    /// An `x-kubernetes-validations` rule the pinned schema does not have (a changed rule is a new
    /// text).
    RuleAdded { rule: String },
    /// `x-kubernetes-preserve-unknown-fields: true` taken away: unknown fields are pruned now.
    PreserveUnknownFieldsRemoved,
    /// `nullable: true` taken away.
    NullableRemoved,
    /// `x-kubernetes-int-or-string` switched: a typed client's field type changes either way.
    IntOrString { from: bool, to: bool },
    /// `x-kubernetes-list-type`, `x-kubernetes-map-type` or `x-kubernetes-list-map-keys` changed:
    /// server-side apply merges the field differently.
    Merge {
        keyword: &'static str,
        from: Option<Value>,
        to: Option<Value>,
    },
    /// The pinned map's values (`additionalProperties`) have no place in the candidate: they would
    /// be pruned.
    MapValuesRemoved,
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Change::Scope { from, to } => write!(f, "scope changed from {from} to {to}"),
            Change::Group { from, to } => write!(f, "group changed from {from} to {to}"),
            Change::Kind { from, to } => write!(f, "kind changed from {from} to {to}"),
            Change::Plural { from, to } => write!(f, "plural changed from {from} to {to}"),
            Change::Deleted => f.write_str("the CRD would be deleted"),
            Change::VersionRemoved => f.write_str("the version is gone from the CRD"),
            Change::VersionNotServed => f.write_str("the version is no longer served"),
            Change::FieldRemoved => f.write_str("field removed"),
            Change::Type {
                from: Some(from),
                to,
            } => {
                write!(f, "type changed from {from} to {to}")
            }
            Change::Type { from: None, to } => write!(f, "type {to} where any type was allowed"),
            Change::Format {
                from: Some(from),
                to,
            } => write!(f, "format changed from {from} to {to}"),
            Change::Format { from: None, to } => write!(f, "format {to} added"),
            Change::EnumNarrowed { removed } => {
                write!(f, "enum no longer allows {}", values(removed))
            }
            Change::EnumAdded { allowed } => {
                write!(f, "enum added, allowing only {}", values(allowed))
            }
            Change::NewlyRequired => f.write_str("field newly required"),
            Change::Bound {
                keyword,
                from: Some(from),
                to,
            } => write!(f, "{keyword} tightened from {from} to {to}"),
            Change::Bound {
                keyword,
                from: None,
                to,
            } => write!(f, "{keyword} {to} added"),
            Change::ExclusiveBound { keyword } => write!(f, "{keyword} turned on"),
            Change::Pattern {
                from: Some(from),
                to,
            } => write!(f, "pattern changed from `{from}` to `{to}`"),
            Change::Pattern { from: None, to } => write!(f, "pattern `{to}` added"),
            Change::MultipleOf {
                from: Some(from),
                to,
            } => write!(f, "multipleOf changed from {from} to {to}"),
            Change::MultipleOf { from: None, to } => write!(f, "multipleOf {to} added"),
            Change::RuleAdded { rule } => write!(f, "new x-kubernetes-validations rule `{rule}`"),
            Change::PreserveUnknownFieldsRemoved => {
                f.write_str("x-kubernetes-preserve-unknown-fields: true taken away")
            }
            Change::NullableRemoved => f.write_str("nullable: true taken away"),
            Change::IntOrString { from, to } => {
                write!(f, "x-kubernetes-int-or-string changed from {from} to {to}")
            }
            Change::Merge { keyword, from, to } => write!(
                f,
                "{keyword} changed from {} to {}",
                marker(from.as_ref()),
                marker(to.as_ref())
            ),
            Change::MapValuesRemoved => {
                f.write_str("map values (additionalProperties) no longer allowed")
            }
        }
    }
}

fn values(values: &[Value]) -> String {
    values
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn marker(value: Option<&Value>) -> String {
    match value {
        None => "(none)".into(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// The one judgement: every way `candidate` (a whole CRD as JSON) breaks `requirement`. Empty =
/// compatible. Changes of the whole CRD come first, then each pinned version's in the pinned CRD's
/// order.
pub fn judge(requirement: &Requirement, candidate: &Value) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut found = |version: &str, path: &str, change: Change| {
        findings.push(Finding {
            requirement: requirement.name.clone(),
            crd: requirement.crd_name.clone(),
            version: version.to_string(),
            path: path.to_string(),
            change,
        });
    };
    let pinned = &requirement.pinned;
    type Renamed = fn(String, String) -> Change;
    let whole: [(&str, Renamed); 4] = [
        ("/spec/scope", |from, to| Change::Scope { from, to }),
        ("/spec/group", |from, to| Change::Group { from, to }),
        ("/spec/names/kind", |from, to| Change::Kind { from, to }),
        ("/spec/names/plural", |from, to| Change::Plural { from, to }),
    ];
    for (pointer, change) in whole {
        let (from, to) = (str_at(pinned, pointer), str_at(candidate, pointer));
        if from != to {
            found("", "", change(from.into(), to.into()));
        }
    }

    for version in requirement.versions() {
        let Some(pinned_version) = schema::version(pinned, &version) else {
            continue;
        };
        let Some(candidate_version) = schema::version(candidate, &version) else {
            found(&version, "", Change::VersionRemoved);
            continue;
        };
        // A version the pinned CRD does not serve either (pinned through additionalVersions) is
        // still judged by its schema.
        if flag(pinned_version, "served") && !flag(candidate_version, "served") {
            found(&version, "", Change::VersionNotServed);
            continue;
        }
        let excluded: Vec<&str> = requirement
            .excluded
            .iter()
            .filter(|e| e.applies_to(&version))
            .map(|e| e.path.as_str())
            .collect();
        let mut walk = Walk {
            excluded: &excluded,
            found: &mut |path: &str, change| found(&version, path, change),
        };
        walk.node(
            schema::open_api(pinned_version),
            schema::open_api(candidate_version),
            "",
        );
    }
    findings
}

/// One version's schemas, walked side by side.
struct Walk<'a> {
    excluded: &'a [&'a str],
    found: &'a mut dyn FnMut(&str, Change),
}

/// Bounds and whether a larger value is the tighter one.
const BOUNDS: [(&str, bool); 8] = [
    ("minimum", true),
    ("maximum", false),
    ("minLength", true),
    ("maxLength", false),
    ("minItems", true),
    ("maxItems", false),
    ("minProperties", true),
    ("maxProperties", false),
];

const MERGE_MARKERS: [&str; 3] = [
    "x-kubernetes-list-type",
    "x-kubernetes-map-type",
    "x-kubernetes-list-map-keys",
];

fn text<'a>(schema: &'a Value, key: &str) -> Option<&'a str> {
    schema.get(key).and_then(Value::as_str)
}

fn number<'a>(schema: &'a Value, key: &str) -> Option<&'a Number> {
    match schema.get(key) {
        Some(Value::Number(n)) => Some(n),
        _ => None,
    }
}

fn list<'a>(schema: &'a Value, key: &str) -> Option<&'a [Value]> {
    schema.get(key).and_then(Value::as_array).map(Vec::as_slice)
}

/// Whether every multiple of `old` is a multiple of `new` (so `new` accepts all `old` did).
fn divides(new: &Number, old: &Number) -> bool {
    match (new.as_i64(), old.as_i64()) {
        (Some(new), Some(old)) if new != 0 => old % new == 0,
        _ => new.as_f64() == old.as_f64(),
    }
}

impl Walk<'_> {
    fn excluded(&self, path: &str) -> bool {
        self.excluded.contains(&path)
    }

    fn node(&mut self, pinned: &Value, candidate: &Value, path: &str) {
        let mut found = |change| (self.found)(path, change);
        if let Some(to) = text(candidate, "type") {
            let from = text(pinned, "type");
            if from != Some(to) {
                // Below a changed type, every comparison would only repeat this one.
                found(Change::Type {
                    from: from.map(str::to_string),
                    to: to.to_string(),
                });
                return;
            }
        }
        if let Some(to) = text(candidate, "format") {
            let from = text(pinned, "format");
            if from != Some(to) {
                found(Change::Format {
                    from: from.map(str::to_string),
                    to: to.to_string(),
                });
            }
        }
        if let Some(allowed) = list(candidate, "enum") {
            match list(pinned, "enum") {
                None => found(Change::EnumAdded {
                    allowed: allowed.to_vec(),
                }),
                Some(before) => {
                    let removed: Vec<Value> = before
                        .iter()
                        .filter(|v| !allowed.contains(v))
                        .cloned()
                        .collect();
                    if !removed.is_empty() {
                        found(Change::EnumNarrowed { removed });
                    }
                }
            }
        }
        for (keyword, larger_is_tighter) in BOUNDS {
            let Some(to) = number(candidate, keyword) else {
                continue;
            };
            let from = number(pinned, keyword);
            let tighter = from.is_none_or(|from| {
                let (from, to) = (from.as_f64(), to.as_f64());
                if larger_is_tighter {
                    to > from
                } else {
                    to < from
                }
            });
            if tighter {
                found(Change::Bound {
                    keyword,
                    from: from.cloned(),
                    to: to.clone(),
                });
            }
        }
        for keyword in ["exclusiveMinimum", "exclusiveMaximum"] {
            if flag(candidate, keyword) && !flag(pinned, keyword) {
                found(Change::ExclusiveBound { keyword });
            }
        }
        if let Some(to) = text(candidate, "pattern") {
            let from = text(pinned, "pattern");
            if from != Some(to) {
                found(Change::Pattern {
                    from: from.map(str::to_string),
                    to: to.to_string(),
                });
            }
        }
        if let Some(to) = number(candidate, "multipleOf") {
            let from = number(pinned, "multipleOf");
            if from.is_none_or(|from| !divides(to, from)) {
                found(Change::MultipleOf {
                    from: from.cloned(),
                    to: to.clone(),
                });
            }
        }
        let rules = |schema: &Value| -> Vec<String> {
            list(schema, "x-kubernetes-validations")
                .unwrap_or_default()
                .iter()
                .filter_map(|r| text(r, "rule").map(str::to_string))
                .collect()
        };
        let pinned_rules = rules(pinned);
        for rule in rules(candidate) {
            if !pinned_rules.contains(&rule) {
                found(Change::RuleAdded { rule });
            }
        }
        let preserve = "x-kubernetes-preserve-unknown-fields";
        if flag(pinned, preserve) && !flag(candidate, preserve) {
            found(Change::PreserveUnknownFieldsRemoved);
        }
        if flag(pinned, "nullable") && !flag(candidate, "nullable") {
            found(Change::NullableRemoved);
        }
        let int_or_string = "x-kubernetes-int-or-string";
        let (from, to) = (flag(pinned, int_or_string), flag(candidate, int_or_string));
        if from != to {
            found(Change::IntOrString { from, to });
        }
        for keyword in MERGE_MARKERS {
            let (from, to) = (pinned.get(keyword), candidate.get(keyword));
            if from != to {
                found(Change::Merge {
                    keyword,
                    from: from.cloned(),
                    to: to.cloned(),
                });
            }
        }

        let names = |schema: &Value| -> Vec<String> {
            list(schema, "required")
                .unwrap_or_default()
                .iter()
                .filter_map(|n| n.as_str().map(str::to_string))
                .collect()
        };
        let pinned_required = names(pinned);
        for name in names(candidate) {
            let field = child(path, &name);
            if !pinned_required.contains(&name) && !self.excluded(&field) {
                (self.found)(&field, Change::NewlyRequired);
            }
        }

        if let Some(properties) = pinned.get("properties").and_then(Value::as_object) {
            for (name, pinned_field) in properties {
                let field = child(path, name);
                if self.excluded(&field) {
                    continue;
                }
                match candidate.get("properties").and_then(|p| p.get(name)) {
                    Some(candidate_field) => self.node(pinned_field, candidate_field, &field),
                    None => (self.found)(&field, Change::FieldRemoved),
                }
            }
        }
        if let Some(items) = element(pinned, "items") {
            self.node(items, element(candidate, "items").unwrap_or(&EMPTY), path);
        }
        if let Some(values) = element(pinned, "additionalProperties") {
            match element(candidate, "additionalProperties") {
                Some(candidate_values) => self.node(values, candidate_values, path),
                // Unknown keys are kept, just no longer typed: what a schema that knows no field
                // says of the pinned values' fields.
                None if flag(candidate, preserve) => self.node(values, &EMPTY, path),
                None => (self.found)(path, Change::MapValuesRemoved),
            }
        }
    }
}

#[cfg(test)]
mod tests;
