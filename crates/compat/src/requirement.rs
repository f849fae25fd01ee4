//! A `CompatibilityRequirement` as the API server returns it, read once into what the judgement needs.
//!
//! Reading refuses what the reference's admission of requirements refuses (data that is not one
//! `apiextensions.k8s.io/v1` CRD, an additional or excluded version the pinned CRD does not have, an
//! excluded path that names no field of the pinned schema), so that a requirement the reference
//! would not have admitted fails here as a configuration error, naming the field, instead of
//! judging against something else than its writer meant.

use capi_manifests::yaml::parse_documents;
use serde_json::Value;

use crate::schema::{self, str_at};

/// A CompatibilityRequirement (apiextensions.openshift.io/v1alpha1) as read from the cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct Requirement {
    /// `metadata.name`.
    pub name: String,
    /// The pinned CRD's `metadata.name`: the CRD this requirement applies to.
    pub crd_name: String,
    /// The pinned CRD (`spec.compatibilitySchema.customResourceDefinition.data`), parsed.
    pub pinned: Value,
    pub required: RequiredVersions,
    pub excluded: Vec<ExcludedField>,
    /// `spec.customResourceDefinitionSchemaValidation.action`; `None` when the stanza is absent, and
    /// then changes of the CRD are not judged (the reference's meaning).
    pub crd_action: Option<Action>,
    /// `spec.objectSchemaValidation`; `None` when the stanza is absent, and then the CRD's objects are
    /// not judged.
    pub objects: Option<ObjectValidation>,
}

/// `spec.objectSchemaValidation`: the CRD's objects judged against the pinned schema on admission.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectValidation {
    pub action: Action,
    /// `namespaceSelector` and `objectSelector` (`metav1.LabelSelector`), as written: they go into
    /// the webhook's registration unchanged, where the API server evaluates them. `None` when absent.
    pub namespace_selector: Option<Value>,
    pub object_selector: Option<Value>,
    /// `matchConditions` (CEL), as written, for the registration too.
    pub match_conditions: Vec<Value>,
}

/// `spec.compatibilitySchema.requiredVersions`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequiredVersions {
    pub default_selection: Selection,
    /// `additionalVersions`, each a version of the pinned CRD.
    pub additional: Vec<String>,
}

/// `requiredVersions.defaultSelection`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selection {
    /// The pinned CRD's storage version.
    StorageOnly,
    /// Every version the pinned CRD serves.
    AllServed,
}

/// One of `spec.compatibilitySchema.excludedFields`: a field left out of the judgement with everything
/// below it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExcludedField {
    /// Dot-separated field names from the version's schema root (`status.conditions.reason`).
    pub path: String,
    /// The versions it is excluded from; empty is every version.
    pub versions: Vec<String>,
}

impl ExcludedField {
    pub(crate) fn applies_to(&self, version: &str) -> bool {
        self.versions.is_empty() || self.versions.iter().any(|v| v == version)
    }
}

/// What an incompatible CRD change meets: refused, or admitted with a warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Deny,
    Warn,
}

/// A requirement that cannot be read: it names the requirement and the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("CompatibilityRequirement {requirement}: {path}: {message}")]
pub struct RequirementError {
    pub requirement: String,
    /// The field of the requirement (`spec.compatibilitySchema.customResourceDefinition.data`).
    pub path: String,
    pub message: String,
}

const SCHEMA: &str = "spec.compatibilitySchema";
const CRD_DATA: &str = "spec.compatibilitySchema.customResourceDefinition.data";
const CRD_TYPE: &str = "spec.compatibilitySchema.customResourceDefinition.type";
const ACTION: &str = "spec.customResourceDefinitionSchemaValidation.action";
const OBJECTS: &str = "spec.objectSchemaValidation";

impl Requirement {
    /// Reads one object as the API server returns it (JSON value). Errors name the requirement and
    /// the field path.
    pub fn read(object: &Value) -> Result<Requirement, RequirementError> {
        let name = str_at(object, "/metadata/name").to_string();
        let fail = |path: &str, message: String| RequirementError {
            requirement: if name.is_empty() {
                "(without a name)".to_string()
            } else {
                name.clone()
            },
            path: path.to_string(),
            message,
        };
        if name.is_empty() {
            return Err(fail("metadata.name", "missing".into()));
        }
        let spec = object
            .pointer("/spec/compatibilitySchema")
            .ok_or_else(|| fail(SCHEMA, "missing".into()))?;

        let data_type = str_at(spec, "/customResourceDefinition/type");
        if data_type != "YAML" {
            return Err(fail(
                CRD_TYPE,
                format!("{data_type:?} is not supported, only \"YAML\""),
            ));
        }
        let data = spec
            .pointer("/customResourceDefinition/data")
            .and_then(Value::as_str)
            .ok_or_else(|| fail(CRD_DATA, "missing".into()))?;
        let pinned = read_crd(data).map_err(|message| fail(CRD_DATA, message))?;
        let crd_name = str_at(&pinned, "/metadata/name").to_string();
        let pinned_versions: Vec<&str> = schema::versions(&pinned)
            .iter()
            .map(|v| str_at(v, "/name"))
            .collect();
        let known = |path: String, version: &str| {
            if pinned_versions.contains(&version) {
                Ok(())
            } else {
                Err(fail(
                    &path,
                    format!("{version} is not a version of the pinned CRD {crd_name}"),
                ))
            }
        };

        let required_path = format!("{SCHEMA}.requiredVersions");
        let default_selection = match str_at(spec, "/requiredVersions/defaultSelection") {
            "StorageOnly" => Selection::StorageOnly,
            "AllServed" => Selection::AllServed,
            other => {
                return Err(fail(
                    &format!("{required_path}.defaultSelection"),
                    format!("{other:?} is neither \"StorageOnly\" nor \"AllServed\""),
                ));
            }
        };
        let additional = strings(spec.pointer("/requiredVersions/additionalVersions"))
            .map_err(|m| fail(&format!("{required_path}.additionalVersions"), m))?;
        for (i, version) in additional.iter().enumerate() {
            known(format!("{required_path}.additionalVersions[{i}]"), version)?;
        }

        let mut excluded = Vec::new();
        let entries = spec.get("excludedFields").map_or(Ok(&[][..]), |v| {
            v.as_array()
                .map(Vec::as_slice)
                .ok_or_else(|| fail(&format!("{SCHEMA}.excludedFields"), "not a list".into()))
        })?;
        for (i, entry) in entries.iter().enumerate() {
            let at = format!("{SCHEMA}.excludedFields[{i}]");
            let path = str_at(entry, "/path").to_string();
            if path.is_empty() {
                return Err(fail(&format!("{at}.path"), "missing".into()));
            }
            let versions =
                strings(entry.get("versions")).map_err(|m| fail(&format!("{at}.versions"), m))?;
            for (j, version) in versions.iter().enumerate() {
                known(format!("{at}.versions[{j}]"), version)?;
            }
            // A path that names no field excludes nothing: most likely a typo, which the reference
            // refuses too.
            let field = ExcludedField { path, versions };
            let found = schema::versions(&pinned)
                .iter()
                .filter(|v| field.applies_to(str_at(v, "/name")))
                .any(|v| schema::has_path(schema::open_api(v), &field.path));
            if !found {
                return Err(fail(
                    &format!("{at}.path"),
                    format!(
                        "{} names no field of the pinned CRD's schema{}",
                        field.path,
                        if field.versions.is_empty() {
                            String::new()
                        } else {
                            format!(" in {}", field.versions.join(", "))
                        }
                    ),
                ));
            }
            excluded.push(field);
        }

        let action = |stanza: &Value, path: &str| match str_at(stanza, "/action") {
            "Deny" => Ok(Action::Deny),
            "Warn" => Ok(Action::Warn),
            other => Err(fail(
                path,
                format!("{other:?} is neither \"Deny\" nor \"Warn\""),
            )),
        };
        let crd_action = match object.pointer("/spec/customResourceDefinitionSchemaValidation") {
            None | Some(Value::Null) => None,
            Some(stanza) => Some(action(stanza, ACTION)?),
        };
        let objects = match object.pointer("/spec/objectSchemaValidation") {
            None | Some(Value::Null) => None,
            Some(stanza) => {
                let selector = |key: &str| -> Result<Option<Value>, RequirementError> {
                    match stanza.get(key) {
                        None | Some(Value::Null) => Ok(None),
                        Some(v @ Value::Object(_)) => Ok(Some(v.clone())),
                        Some(_) => Err(fail(
                            &format!("{OBJECTS}.{key}"),
                            "not a label selector".into(),
                        )),
                    }
                };
                let match_conditions = match stanza.get("matchConditions") {
                    None | Some(Value::Null) => Vec::new(),
                    Some(Value::Array(conditions)) => conditions.clone(),
                    Some(_) => {
                        return Err(fail(
                            &format!("{OBJECTS}.matchConditions"),
                            "not a list".into(),
                        ));
                    }
                };
                Some(ObjectValidation {
                    action: action(stanza, &format!("{OBJECTS}.action"))?,
                    namespace_selector: selector("namespaceSelector")?,
                    object_selector: selector("objectSelector")?,
                    match_conditions,
                })
            }
        };

        Ok(Requirement {
            name,
            crd_name,
            pinned,
            required: RequiredVersions {
                default_selection,
                additional,
            },
            excluded,
            crd_action,
            objects,
        })
    }

    /// The versions this requirement pins: the pinned CRD's storage version or all its served
    /// versions, plus `additionalVersions`, deduplicated, in the pinned CRD's order.
    pub fn versions(&self) -> Vec<String> {
        schema::versions(&self.pinned)
            .iter()
            .filter(|v| {
                let name = str_at(v, "/name");
                let selected = match self.required.default_selection {
                    Selection::StorageOnly => schema::flag(v, "storage"),
                    Selection::AllServed => schema::flag(v, "served"),
                };
                selected || self.required.additional.iter().any(|a| a == name)
            })
            .map(|v| str_at(v, "/name").to_string())
            .collect()
    }
}

/// The pinned CRD from its YAML: one `apiextensions.k8s.io/v1` CRD with a name and versions.
fn read_crd(data: &str) -> Result<Value, String> {
    let mut documents = parse_documents("the CRD", data).map_err(|e| match e {
        capi_manifests::Error::Yaml { message, .. } => format!("not YAML: {message}"),
        capi_manifests::Error::Budget { exceeded, .. } => format!("too large to read: {exceeded}"),
        other => format!("not YAML: {other}"),
    })?;
    if documents.len() != 1 {
        return Err(format!(
            "{} YAML documents, not one CustomResourceDefinition",
            documents.len()
        ));
    }
    let crd = documents.remove(0).value;
    let (api_version, kind) = (str_at(&crd, "/apiVersion"), str_at(&crd, "/kind"));
    if api_version != "apiextensions.k8s.io/v1" || kind != "CustomResourceDefinition" {
        return Err(format!(
            "not a CustomResourceDefinition (apiextensions.k8s.io/v1) but {kind:?} ({api_version:?})"
        ));
    }
    if str_at(&crd, "/metadata/name").is_empty() {
        return Err("the CRD has no metadata.name".into());
    }
    let versions = schema::versions(&crd);
    if versions.is_empty() {
        return Err("the CRD has no spec.versions".into());
    }
    if let Some(i) = versions.iter().position(|v| str_at(v, "/name").is_empty()) {
        return Err(format!("the CRD's spec.versions[{i}] has no name"));
    }
    Ok(crd)
}

/// A list of strings, empty when absent.
fn strings(value: Option<&Value>) -> Result<Vec<String>, String> {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(Vec::new());
    };
    let items = value.as_array().ok_or("not a list")?;
    items
        .iter()
        .map(|item| {
            item.as_str()
                .map(str::to_string)
                .ok_or_else(|| format!("{item} is not a string"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const PINNED: &str = "\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets}
  versions:
  - name: v1alpha1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
          status:
            type: object
            properties:
              conditions:
                type: array
                items: {type: object, properties: {lastTransitionTime: {type: string}}}
";

    /// A requirement object pinning `data`, with `spec` merged over the rest of a valid spec.
    fn object(data: &str, spec: Value) -> Value {
        let mut object = json!({
            "metadata": {"name": "pin-widgets"},
            "spec": {
                "compatibilitySchema": {
                    "customResourceDefinition": {"type": "YAML", "data": data},
                    "requiredVersions": {"defaultSelection": "AllServed"},
                },
            },
        });
        for (key, value) in spec.as_object().expect("an object") {
            match (key.as_str(), value) {
                ("customResourceDefinitionSchemaValidation" | "objectSchemaValidation", _) => {
                    object["spec"][key] = value.clone()
                }
                (_, Value::Null) => {
                    object["spec"]["compatibilitySchema"]
                        .as_object_mut()
                        .unwrap()
                        .remove(key);
                }
                _ => object["spec"]["compatibilitySchema"][key] = value.clone(),
            }
        }
        object
    }

    #[test]
    fn reads_what_the_judgement_needs() {
        let read = Requirement::read(&object(
            PINNED,
            json!({
                "requiredVersions": {"defaultSelection": "StorageOnly", "additionalVersions": ["v1alpha1"]},
                "excludedFields": [
                    {"path": "status.conditions.lastTransitionTime", "versions": ["v1"]},
                    {"path": "spec.size"}],
                "customResourceDefinitionSchemaValidation": {"action": "Warn"},
                "objectSchemaValidation": {
                    "action": "Deny",
                    "namespaceSelector": {"matchLabels": {"team": "hosted"}},
                    "matchConditions": [{"name": "not-paused", "expression": "!has(object.spec.paused)"}],
                },
            }),
        ))
        .expect("readable");
        assert_eq!(read.name, "pin-widgets");
        assert_eq!(read.crd_name, "widgets.example.com");
        assert_eq!(str_at(&read.pinned, "/spec/group"), "example.com");
        assert_eq!(
            read.required,
            RequiredVersions {
                default_selection: Selection::StorageOnly,
                additional: vec!["v1alpha1".into()]
            }
        );
        assert_eq!(
            read.excluded,
            vec![
                ExcludedField {
                    path: "status.conditions.lastTransitionTime".into(),
                    versions: vec!["v1".into()]
                },
                ExcludedField {
                    path: "spec.size".into(),
                    versions: vec![]
                },
            ]
        );
        assert_eq!(read.crd_action, Some(Action::Warn));
        assert_eq!(
            read.objects,
            Some(ObjectValidation {
                action: Action::Deny,
                namespace_selector: Some(json!({"matchLabels": {"team": "hosted"}})),
                object_selector: None,
                match_conditions: vec![
                    json!({"name": "not-paused", "expression": "!has(object.spec.paused)"})
                ],
            })
        );
        assert_eq!(read.versions(), vec!["v1alpha1", "v1"]);

        let without_stanza = Requirement::read(&object(PINNED, json!({}))).expect("readable");
        assert_eq!(without_stanza.crd_action, None);
        assert_eq!(without_stanza.objects, None);
        assert_eq!(without_stanza.versions(), vec!["v1alpha1", "v1"]);
    }

    #[test]
    fn errors_name_the_requirement_and_the_field() {
        let data = "spec.compatibilitySchema.customResourceDefinition.data";
        let no_versions = PINNED.split("  versions:").next().unwrap().to_string();
        let rows: Vec<(&str, Value, String)> = vec![
            (
                "bad YAML",
                object("kind: [unclosed", json!({})),
                format!("{data}: not YAML: "),
            ),
            (
                "type not YAML",
                {
                    let mut o = object(PINNED, json!({}));
                    o["spec"]["compatibilitySchema"]["customResourceDefinition"]["type"] =
                        json!("JSON");
                    o
                },
                "spec.compatibilitySchema.customResourceDefinition.type: \"JSON\" is not supported, only \"YAML\""
                    .into(),
            ),
            (
                "no versions",
                object(&no_versions, json!({})),
                format!("{data}: the CRD has no spec.versions"),
            ),
            (
                "two documents",
                object(&format!("{PINNED}---\n{PINNED}"), json!({})),
                format!("{data}: 2 YAML documents, not one CustomResourceDefinition"),
            ),
            (
                "not a CRD",
                object("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", json!({})),
                format!(
                    "{data}: not a CustomResourceDefinition (apiextensions.k8s.io/v1) but \"ConfigMap\" (\"v1\")"
                ),
            ),
            (
                "no default selection",
                object(PINNED, json!({"requiredVersions": {}})),
                "spec.compatibilitySchema.requiredVersions.defaultSelection: \"\" is neither \"StorageOnly\" nor \"AllServed\"".into(),
            ),
            (
                "an additional version the CRD lacks",
                object(
                    PINNED,
                    json!({"requiredVersions": {"defaultSelection": "StorageOnly", "additionalVersions": ["v1", "v2"]}}),
                ),
                "spec.compatibilitySchema.requiredVersions.additionalVersions[1]: v2 is not a version of the pinned CRD widgets.example.com".into(),
            ),
            (
                "an excluded version the CRD lacks",
                object(PINNED, json!({"excludedFields": [{"path": "spec.size", "versions": ["v2"]}]})),
                "spec.compatibilitySchema.excludedFields[0].versions[0]: v2 is not a version of the pinned CRD widgets.example.com".into(),
            ),
            (
                "an excluded path that names no field of its version",
                object(
                    PINNED,
                    json!({"excludedFields": [
                        {"path": "spec.size"},
                        {"path": "status.conditions.lastTransitionTime", "versions": ["v1alpha1"]}]}),
                ),
                "spec.compatibilitySchema.excludedFields[1].path: status.conditions.lastTransitionTime names no field of the pinned CRD's schema in v1alpha1".into(),
            ),
            (
                "an unknown action",
                object(PINNED, json!({"customResourceDefinitionSchemaValidation": {"action": "Block"}})),
                "spec.customResourceDefinitionSchemaValidation.action: \"Block\" is neither \"Deny\" nor \"Warn\"".into(),
            ),
            (
                "an unknown object action",
                object(PINNED, json!({"objectSchemaValidation": {"action": ""}})),
                "spec.objectSchemaValidation.action: \"\" is neither \"Deny\" nor \"Warn\"".into(),
            ),
            (
                "a selector that is not one",
                object(PINNED, json!({"objectSchemaValidation": {"action": "Deny", "objectSelector": "app=x"}})),
                "spec.objectSchemaValidation.objectSelector: not a label selector".into(),
            ),
            (
                "no compatibility schema",
                json!({"metadata": {"name": "pin-widgets"}, "spec": {}}),
                "spec.compatibilitySchema: missing".into(),
            ),
        ];
        for (name, object, expected) in rows {
            let error = Requirement::read(&object).expect_err(name).to_string();
            let expected = format!("CompatibilityRequirement pin-widgets: {expected}");
            assert!(
                error.starts_with(&expected),
                "{name}:\n  got      {error}\n  expected {expected}"
            );
        }
    }
}
