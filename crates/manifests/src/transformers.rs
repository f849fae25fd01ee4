//! The two KRM functions of the reference generator's kustomize Component, `exclude-resources` and
//! `rename-resources`, applied natively.
//!
//! A fork's `openshift/kustomization.yaml` lists them under `transformers:` (files of the vendored
//! Component: ConfigMaps whose `config.kubernetes.io/function` annotation names a starlark container
//! image), and configures them with two ConfigMaps among its `resources:` (marked
//! `config.kubernetes.io/local-config`, so kustomize never emits them). Stock kustomize cannot run
//! such a function without a container runtime, so manifests-gen renders the kustomization without
//! them and then does what their starlark does, with the same configuration, on kustomize's output:
//!
//! - `exclude-resources` (config `exclude-resources-config`, key `excludeCRDs`, one `plural.group` a
//!   line): removes those CRDs; removes from every ClusterRole rule and every admission webhook rule
//!   the resources of those kinds (sub-resources such as `/status` included; `*` in `resources`
//!   matches every excluded kind of the rule's groups, `*` in `apiGroups` every excluded group);
//!   drops a rule left without resources, a webhook left without rules, and a webhook configuration
//!   left without webhooks.
//! - `rename-resources` (config `rename-resources-config`, key `renameResources`, one
//!   `apiGroup/Kind/oldName=newName` a line): renames those objects, and the references the function
//!   knows: a binding's `roleRef` to a renamed ClusterRole or Role, a binding's ServiceAccount
//!   subjects, a webhook's `clientConfig.service`.
//!
//! Where the starlark accepts a line that can only be a mistake (an empty plural, group, kind or
//! name, a key given twice) this refuses it, naming the file and line, as it does the lines the
//! starlark refuses.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::error::Error;
use crate::object::{get_path_mut, get_str};
use crate::yaml::{Object, parse_documents, scalar_position};
use capi_object::ObjectKey;

/// The annotation that makes a transformer config a KRM function.
pub(crate) const FUNCTION_ANNOTATION: &str = "config.kubernetes.io/function";

/// One of the two functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Function {
    ExcludeResources,
    RenameResources,
}

impl Function {
    pub const ALL: [Function; 2] = [Function::ExcludeResources, Function::RenameResources];

    /// The function config's `metadata.name` in the generator's Component.
    pub fn name(self) -> &'static str {
        match self {
            Function::ExcludeResources => "exclude-resources",
            Function::RenameResources => "rename-resources",
        }
    }

    /// The ConfigMap that configures it.
    pub(crate) fn config_name(self) -> &'static str {
        match self {
            Function::ExcludeResources => "exclude-resources-config",
            Function::RenameResources => "rename-resources-config",
        }
    }

    /// The key of that ConfigMap's `data`.
    pub(crate) fn config_key(self) -> &'static str {
        match self {
            Function::ExcludeResources => "excludeCRDs",
            Function::RenameResources => "renameResources",
        }
    }

    fn from_name(name: &str) -> Option<Function> {
        Function::ALL.into_iter().find(|f| f.name() == name)
    }
}

impl fmt::Display for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What one `transformers:` entry of a kustomization is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transformer {
    /// Configs of kustomize's own transformers: left to kustomize.
    Kustomize,
    /// The generator's KRM functions, in the file's order: applied here.
    Native(Vec<Function>),
}

/// Classifies the text of a `transformers:` entry (a file's content, or an inline config);
/// `source` names it in errors. A KRM function other than the two is refused: kustomize could only
/// run it with a container runtime, and manifests-gen does not know what it does.
pub fn classify(source: &str, text: &str) -> Result<Transformer, Error> {
    let mut native = Vec::new();
    let mut others = 0;
    for doc in parse_documents(source, text)? {
        let annotated = doc
            .value
            .get("metadata")
            .and_then(|m| m.get("annotations"))
            .and_then(|a| a.get(FUNCTION_ANNOTATION))
            .is_some();
        if !annotated {
            others += 1;
            continue;
        }
        let kind = get_str(&doc.value, &["kind"]).unwrap_or("");
        let name = get_str(&doc.value, &["metadata", "name"]).unwrap_or("");
        match Function::from_name(name).filter(|_| kind == "ConfigMap") {
            Some(f) => native.push(f),
            None => {
                return Err(Error::Kustomization {
                    at: doc.location.to_string(),
                    message: format!(
                        "KRM function {kind} {name:?}: manifests-gen applies only the generator's exclude-resources and rename-resources functions (stock kustomize would need a container runtime for any other)"
                    ),
                });
            }
        }
    }
    match (native.is_empty(), others) {
        (true, _) => Ok(Transformer::Kustomize),
        (false, 0) => Ok(Transformer::Native(native)),
        (false, _) => Err(Error::Kustomization {
            at: source.to_owned(),
            message: "mixes KRM functions with other transformer configs: list them in separate files, so that each runs in its place".to_owned(),
        }),
    }
}

/// A line of a function's configuration: file and 1-based line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConfigLine {
    pub file: Arc<str>,
    pub line: usize,
}

impl fmt::Display for ConfigLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Exclusion {
    plural: String,
    group: String,
    at: ConfigLine,
}

impl Exclusion {
    /// The CRD's name, `plural.group`.
    fn crd_name(&self) -> String {
        format!("{}.{}", self.plural, self.group)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Rename {
    group: String,
    kind: String,
    old: String,
    new: String,
    at: ConfigLine,
}

/// The functions' configuration, read from the ConfigMaps a kustomization lists as resources.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// Per function: where its ConfigMap is (`file: document N (line L)`), `None` when absent.
    found: BTreeMap<Function, String>,
    exclusions: Vec<Exclusion>,
    renames: Vec<Rename>,
}

impl Config {
    /// Reads the `exclude-resources-config` and `rename-resources-config` ConfigMaps among `files`
    /// (each a source name, usually the path, and its text). A line that is not of the function's
    /// form is refused with its file and line; so is a second ConfigMap of the same name (the
    /// starlark would take the first it meets, in an order only kustomize knows).
    pub fn read(files: &[(String, String)]) -> Result<Config, Error> {
        let mut config = Config::default();
        for (source, text) in files {
            for doc in parse_documents(source, text)? {
                let is_configmap = get_str(&doc.value, &["kind"]) == Some("ConfigMap")
                    && get_str(&doc.value, &["apiVersion"]) == Some("v1");
                let name = get_str(&doc.value, &["metadata", "name"]).unwrap_or("");
                let Some(function) = Function::ALL
                    .into_iter()
                    .find(|f| is_configmap && f.config_name() == name)
                else {
                    continue;
                };
                let here = doc.location.to_string();
                if let Some(first) = config.found.get(&function) {
                    return Err(Error::Kustomization {
                        at: here,
                        message: format!(
                            "a second ConfigMap {name} (the first is in {first}): the {function} function reads one"
                        ),
                    });
                }
                config.found.insert(function, here.clone());
                let key = function.config_key();
                let value = match doc.value.get("data").and_then(|d| d.get(key)) {
                    None | Some(Value::Null) => continue,
                    Some(Value::String(s)) => s.as_str(),
                    Some(_) => {
                        return Err(Error::Kustomization {
                            at: here,
                            message: format!(
                                "ConfigMap {name}: data.{key} is not a string (one entry a line)"
                            ),
                        });
                    }
                };
                let position = scalar_position(text, doc.location.line, &["data", key]);
                let file: Arc<str> = Arc::from(source.as_str());
                let at = |index: usize| ConfigLine {
                    file: file.clone(),
                    line: position.map_or(doc.location.line, |p| p.line_of(index)),
                };
                // As the starlark reads them: one entry a line, surrounding blanks ignored.
                for (index, line) in value.split('\n').enumerate() {
                    let entry = line.trim();
                    if entry.is_empty() {
                        continue;
                    }
                    match function {
                        Function::ExcludeResources => {
                            config.exclusions.push(parse_exclusion(entry, at(index))?)
                        }
                        Function::RenameResources => {
                            let rename = parse_rename(entry, at(index))?;
                            if let Some(first) = config.renames.iter().find(|r| {
                                (&r.group, &r.kind, &r.old)
                                    == (&rename.group, &rename.kind, &rename.old)
                            }) {
                                return Err(Error::Kustomization {
                                    at: rename.at.to_string(),
                                    message: format!(
                                        "{entry:?}: {}/{}/{} is renamed already at {}",
                                        rename.group, rename.kind, rename.old, first.at
                                    ),
                                });
                            }
                            config.renames.push(rename);
                        }
                    }
                }
            }
        }
        Ok(config)
    }

    /// Where the ConfigMap of `function` was found, if it was.
    pub fn found(&self, function: Function) -> Option<&str> {
        self.found.get(&function).map(String::as_str)
    }
}

fn parse_exclusion(entry: &str, at: ConfigLine) -> Result<Exclusion, Error> {
    match entry.split_once('.') {
        Some((plural, group)) if !plural.is_empty() && !group.is_empty() => Ok(Exclusion {
            plural: plural.to_owned(),
            group: group.to_owned(),
            at,
        }),
        _ => Err(Error::Kustomization {
            at: at.to_string(),
            message: format!(
                "invalid CRD name {entry:?} in excludeCRDs (expected plural.group, e.g. machinepools.cluster.x-k8s.io)"
            ),
        }),
    }
}

fn parse_rename(entry: &str, at: ConfigLine) -> Result<Rename, Error> {
    let invalid = |why: &str| Error::Kustomization {
        at: at.to_string(),
        message: format!(
            "invalid rename {entry:?} in renameResources ({why}; expected apiGroup/Kind/oldName=newName, the apiGroup empty for the core group, e.g. rbac.authorization.k8s.io/ClusterRole/manager-role=openshift-manager-role)"
        ),
    };
    let Some((key, new)) = entry.split_once('=') else {
        return Err(invalid("no ="));
    };
    let (key, new) = (key.trim(), new.trim());
    if key.is_empty() || new.is_empty() {
        return Err(invalid("empty key or new name"));
    }
    let parts: Vec<&str> = key.split('/').collect();
    let [group, kind, old] = parts.as_slice() else {
        return Err(invalid("the key has not three parts"));
    };
    if kind.is_empty() || old.is_empty() {
        return Err(invalid("empty Kind or oldName"));
    }
    Ok(Rename {
        group: (*group).to_owned(),
        kind: (*kind).to_owned(),
        old: (*old).to_owned(),
        new: new.to_owned(),
        at,
    })
}

/// What the functions did, for the command's report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Objects removed (excluded CRDs, webhook configurations left without webhooks).
    pub removed: Vec<ObjectKey>,
    /// Objects whose rules or webhooks were filtered (they stay).
    pub filtered: Vec<ObjectKey>,
    /// Objects renamed, with their new name.
    pub renamed: Vec<(ObjectKey, String)>,
    /// Configuration lines that matched nothing (a typo, or a kind upstream dropped).
    pub unused: Vec<String>,
}

/// Applies `functions` in order to `objects` (kustomize's output), configured by `config`. A
/// function without its ConfigMap is refused: the starlark would do nothing, which is never what a
/// kustomization that lists it means.
pub fn apply(
    functions: &[Function],
    config: &Config,
    objects: Vec<Object>,
) -> Result<(Vec<Object>, Report), Error> {
    let mut report = Report::default();
    let mut objects = objects;
    for &function in functions {
        if config.found(function).is_none() {
            return Err(Error::InputRule {
                rule: "kustomize transformers",
                message: format!(
                    "the kustomization runs the {function} function, but none of the files it lists under resources: is a ConfigMap {} (data.{}); manifests-gen reads the function's configuration from there",
                    function.config_name(),
                    function.config_key()
                ),
            });
        }
        objects = match function {
            Function::ExcludeResources => exclude(&config.exclusions, objects, &mut report),
            Function::RenameResources => rename(&config.renames, objects, &mut report),
        };
    }
    Ok((objects, report))
}

/// The excluded kinds by API group, as the starlark's rules match them.
struct Excluded<'a> {
    by_group: BTreeMap<&'a str, BTreeSet<&'a str>>,
}

impl Excluded<'_> {
    /// The excluded groups a rule's `apiGroups` name (`*` names every excluded group).
    fn groups_of(&self, rule: &Value) -> BTreeSet<&str> {
        let mut groups = BTreeSet::new();
        for g in strings(rule, "apiGroups") {
            if g == "*" {
                groups.extend(self.by_group.keys().copied());
            } else if let Some((group, _)) = self.by_group.get_key_value(g) {
                groups.insert(*group);
            }
        }
        groups
    }

    /// Whether `resource` (maybe `plural/subresource`, maybe `*`) of one of `groups` is excluded.
    fn excludes(&self, groups: &BTreeSet<&str>, resource: &str) -> bool {
        let base = resource.split('/').next().unwrap_or(resource);
        groups
            .iter()
            .any(|g| resource == "*" || self.by_group[g].contains(base))
    }

    /// A rule list without the excluded resources: a rule of no excluded group stays as it is; a
    /// rule left without resources goes.
    fn filter_rules(&self, rules: &[Value]) -> Vec<Value> {
        let mut kept = Vec::with_capacity(rules.len());
        for rule in rules {
            let groups = self.groups_of(rule);
            if groups.is_empty() {
                kept.push(rule.clone());
                continue;
            }
            let remaining: Vec<Value> = rule
                .get("resources")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|r| !r.as_str().is_some_and(|r| self.excludes(&groups, r)))
                .cloned()
                .collect();
            if !remaining.is_empty() {
                let mut rule = rule.clone();
                rule["resources"] = Value::Array(remaining);
                kept.push(rule);
            }
        }
        kept
    }
}

/// The string items of the list `key` of `value`.
fn strings<'a>(value: &'a Value, key: &str) -> impl Iterator<Item = &'a str> {
    value
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

fn array(value: &Value, key: &str) -> Vec<Value> {
    value
        .get(key)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn exclude(exclusions: &[Exclusion], objects: Vec<Object>, report: &mut Report) -> Vec<Object> {
    if exclusions.is_empty() {
        return objects;
    }
    let mut excluded = Excluded {
        by_group: BTreeMap::new(),
    };
    for e in exclusions {
        excluded
            .by_group
            .entry(e.group.as_str())
            .or_default()
            .insert(e.plural.as_str());
    }
    let crd_names: BTreeMap<String, &Exclusion> =
        exclusions.iter().map(|e| (e.crd_name(), e)).collect();
    let mut crds_seen = BTreeSet::new();
    let mut kept = Vec::with_capacity(objects.len());
    for mut o in objects {
        match o.id.kind.as_str() {
            "CustomResourceDefinition" if crd_names.contains_key(&o.id.name) => {
                crds_seen.insert(o.id.name.clone());
                report.removed.push(o.id);
                continue;
            }
            "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration" => {
                let webhooks = array(&o.value, "webhooks");
                let mut remaining = Vec::with_capacity(webhooks.len());
                for mut webhook in webhooks {
                    let rules = excluded.filter_rules(&array(&webhook, "rules"));
                    if !rules.is_empty() {
                        webhook["rules"] = Value::Array(rules);
                        remaining.push(webhook);
                    }
                }
                if remaining.is_empty() {
                    report.removed.push(o.id);
                    continue;
                }
                if o.value.get("webhooks") != Some(&Value::Array(remaining.clone())) {
                    report.filtered.push(o.id.clone());
                }
                o.value["webhooks"] = Value::Array(remaining);
            }
            "ClusterRole" => {
                // Set even where there were none, as the starlark does (`rules: []`).
                let rules = excluded.filter_rules(&array(&o.value, "rules"));
                if o.value.get("rules").and_then(Value::as_array) != Some(&rules) {
                    report.filtered.push(o.id.clone());
                }
                o.value["rules"] = Value::Array(rules);
            }
            _ => {}
        }
        kept.push(o);
    }
    for (name, e) in &crd_names {
        if !crds_seen.contains(name) {
            report.unused.push(format!(
                "{}: excludeCRDs names {name}, which is not among the rendered CRDs",
                e.at
            ));
        }
    }
    kept
}

fn rename(renames: &[Rename], mut objects: Vec<Object>, report: &mut Report) -> Vec<Object> {
    let mut used = vec![false; renames.len()];
    let find = |group: &str, kind: &str, name: &str| {
        renames.iter().position(|r| {
            (r.group.as_str(), r.kind.as_str(), r.old.as_str()) == (group, kind, name)
        })
    };
    // References by name only, as the starlark keeps them: a ServiceAccount or Service of that name
    // in any namespace.
    let renamed_as = |kind: &str, name: &str| {
        renames
            .iter()
            .find(|r| r.kind == kind && r.old == name)
            .map(|r| r.new.clone())
    };
    let mut was_renamed = vec![false; objects.len()];
    for (o, renamed) in objects.iter_mut().zip(&mut was_renamed) {
        if let Some(i) = find(&o.id.group, &o.id.kind, &o.id.name) {
            *renamed = true;
            used[i] = true;
            let new = renames[i].new.clone();
            o.value["metadata"]["name"] = Value::from(new.as_str());
            report.renamed.push((o.id.clone(), new.clone()));
            o.id.name = new;
        }
        match o.id.kind.as_str() {
            "ClusterRoleBinding" | "RoleBinding" => {
                if let Some(role_ref) = o.value.get_mut("roleRef") {
                    let key = ["apiGroup", "kind", "name"]
                        .map(|k| role_ref.get(k).and_then(Value::as_str).unwrap_or(""));
                    let is_role = matches!(key[1], "ClusterRole" | "Role");
                    if let Some(i) = find(key[0], key[1], key[2]).filter(|_| is_role) {
                        role_ref["name"] = Value::from(renames[i].new.as_str());
                    }
                }
                if let Some(subjects) = o.value.get_mut("subjects").and_then(Value::as_array_mut) {
                    for s in subjects {
                        let is_sa = s.get("kind").and_then(Value::as_str) == Some("ServiceAccount");
                        let new = s
                            .get("name")
                            .and_then(Value::as_str)
                            .and_then(|n| renamed_as("ServiceAccount", n));
                        if let Some(new) = new.filter(|_| is_sa) {
                            s["name"] = Value::from(new);
                        }
                    }
                }
            }
            "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration" => {
                if let Some(webhooks) = o.value.get_mut("webhooks").and_then(Value::as_array_mut) {
                    for w in webhooks {
                        let Some(service) = get_path_mut(w, &["clientConfig", "service"]) else {
                            continue;
                        };
                        let new = service
                            .get("name")
                            .and_then(Value::as_str)
                            .and_then(|n| renamed_as("Service", n));
                        if let Some(new) = new {
                            service["name"] = Value::from(new);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    for (r, used) in renames.iter().zip(used) {
        if !used {
            report.unused.push(format!(
                "{}: renameResources names {}/{}/{}, which is not among the rendered objects",
                r.at, r.group, r.kind, r.old
            ));
        }
    }
    // Kustomize takes a function's output back object by object: those whose identity is unchanged
    // keep their place, the renamed ones come after all of them (in their order). The reference's
    // output has them there (the aws and core forks' renamed ClusterRole is their last object).
    let mut moved = Vec::new();
    let mut kept = Vec::with_capacity(objects.len());
    for (renamed, o) in was_renamed.into_iter().zip(objects) {
        if renamed {
            moved.push(o);
        } else {
            kept.push(o);
        }
    }
    kept.extend(moved);
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::parse_objects;
    use serde_json::json;

    const EXCLUDE_FN: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: exclude-resources\n  annotations:\n    config.kubernetes.io/function: |\n      container:\n        image: ghcr.io/kptdev/krm-functions-catalog/starlark\ndata:\n  source: pass\n";
    const RENAME_FN: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: rename-resources\n  annotations:\n    config.kubernetes.io/function: |\n      container:\n        image: ghcr.io/kptdev/krm-functions-catalog/starlark\n";

    fn configmap(name: &str, key: &str, block: &str) -> String {
        let indented: String = block.lines().map(|l| format!("    {l}\n")).collect();
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\ndata:\n  {key}: |\n{indented}"
        )
    }

    fn config(files: &[(&str, String)]) -> Result<Config, Error> {
        let files: Vec<(String, String)> = files
            .iter()
            .map(|(n, t)| ((*n).to_owned(), t.clone()))
            .collect();
        Config::read(&files)
    }

    fn objects(values: &[Value]) -> Vec<Object> {
        parse_objects("in", &crate::yaml::to_multi_yaml(values).unwrap()).unwrap()
    }

    fn names(objects: &[Object]) -> Vec<String> {
        objects.iter().map(|o| o.id.to_string()).collect()
    }

    #[test]
    fn transformer_entries_are_told_apart() {
        assert_eq!(
            classify("t.yaml", EXCLUDE_FN).unwrap(),
            Transformer::Native(vec![Function::ExcludeResources])
        );
        assert_eq!(
            classify("t.yaml", &format!("{RENAME_FN}---\n{EXCLUDE_FN}")).unwrap(),
            Transformer::Native(vec![Function::RenameResources, Function::ExcludeResources])
        );
        // kustomize's own transformer configs are kustomize's.
        let builtin = "apiVersion: builtin\nkind: PrefixSuffixTransformer\nmetadata:\n  name: p\nprefix: x-\n";
        assert_eq!(classify("t.yaml", builtin).unwrap(), Transformer::Kustomize);
        for (text, want) in [
            (
                EXCLUDE_FN.replace("exclude-resources", "my-function"),
                "t.yaml: document 0 (line 1): KRM function ConfigMap \"my-function\"",
            ),
            (
                format!("{EXCLUDE_FN}---\n{builtin}"),
                "t.yaml: mixes KRM functions",
            ),
        ] {
            let err = classify("t.yaml", &text).unwrap_err().to_string();
            assert!(err.starts_with(want), "{err}");
        }
    }

    #[test]
    fn malformed_configuration_lines_are_refused_with_file_and_line() {
        let exclude = |block: &str| configmap("exclude-resources-config", "excludeCRDs", block);
        let rename = |block: &str| configmap("rename-resources-config", "renameResources", block);
        // The block's first line is line 9 of the file.
        for (file, want) in [
            (
                exclude("a.b\n\nnodot"),
                "ex.yaml:11: invalid CRD name \"nodot\"",
            ),
            (exclude(".group"), "ex.yaml:9: invalid CRD name \".group\""),
            (
                exclude("plural."),
                "ex.yaml:9: invalid CRD name \"plural.\"",
            ),
            (
                rename("g/K/a=b\ng/K/c"),
                "ex.yaml:10: invalid rename \"g/K/c\" in renameResources (no =;",
            ),
            (
                rename("g/K/=b"),
                "ex.yaml:9: invalid rename \"g/K/=b\" in renameResources (empty Kind or oldName;",
            ),
            (
                rename("K/a=b"),
                "ex.yaml:9: invalid rename \"K/a=b\" in renameResources (the key has not three parts;",
            ),
            (
                rename("g/K/a="),
                "ex.yaml:9: invalid rename \"g/K/a=\" in renameResources (empty key or new name;",
            ),
            (
                rename("g/K/a=b\n  g/K/a = c"),
                "ex.yaml:10: \"g/K/a = c\": g/K/a is renamed already at ex.yaml:9",
            ),
        ] {
            let err = config(&[("ex.yaml", file)]).unwrap_err().to_string();
            assert!(err.starts_with(want), "{want}\n{err}");
        }
        // In a second document, after another object.
        let two = format!(
            "apiVersion: v1\nkind: ServiceAccount\nmetadata: {{name: x}}\n---\n{}",
            exclude("good.x\nbad")
        );
        let err = config(&[("two.yaml", two)]).unwrap_err().to_string();
        assert!(
            err.starts_with("two.yaml:14: invalid CRD name \"bad\""),
            "{err}"
        );
        // Only the line where a quoted value starts is known.
        let quoted = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: exclude-resources-config}\ndata:\n  excludeCRDs: \"a.b\\nbad\"\n";
        let err = config(&[("q.yaml", quoted.to_owned())])
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("q.yaml:5: invalid CRD name \"bad\""),
            "{err}"
        );
        // One ConfigMap per function; data that is not a string.
        let err = config(&[("a.yaml", exclude("a.b")), ("b.yaml", exclude("c.d"))])
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("b.yaml: document 0 (line 1): a second ConfigMap exclude-resources-config (the first is in a.yaml: document 0 (line 1))"),
            "{err}"
        );
        let listed = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: rename-resources-config}\ndata:\n  renameResources: [a]\n";
        let err = config(&[("l.yaml", listed.to_owned())])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("data.renameResources is not a string"),
            "{err}"
        );
    }

    #[test]
    fn a_listed_function_needs_its_configuration() {
        let err = apply(&[Function::RenameResources], &Config::default(), vec![])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("runs the rename-resources function, but none of the files it lists under resources: is a ConfigMap rename-resources-config (data.renameResources)"),
            "{err}"
        );
        // A ConfigMap without the key configures nothing, as in the starlark.
        let empty = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: exclude-resources-config}\n";
        let cfg = config(&[("e.yaml", empty.to_owned())]).unwrap();
        let input = objects(&[
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r"}}),
        ]);
        let (out, report) = apply(&[Function::ExcludeResources], &cfg, input.clone()).unwrap();
        assert_eq!(
            out, input,
            "nothing configured, nothing changed (no rules: [] either)"
        );
        assert_eq!(report, Report::default());
    }

    fn crd(name: &str) -> Value {
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": name}})
    }

    #[test]
    fn exclusion_cascades_to_rbac_rules_and_webhooks() {
        let cfg = config(&[(
            "ex.yaml",
            configmap(
                "exclude-resources-config",
                "excludeCRDs",
                "machinepools.cluster.x-k8s.io\nclusterclasses.cluster.x-k8s.io\nextensionconfigs.runtime.cluster.x-k8s.io\ngone.example.com",
            ),
        )])
        .unwrap();
        let rule = |groups: &[&str], resources: &[&str]| json!({"apiGroups": groups, "resources": resources, "verbs": ["get"]});
        let webhook = |name: &str, rules: Vec<Value>| json!({"name": name, "clientConfig": {"service": {"name": "svc"}}, "rules": rules});
        let input = objects(&[
            crd("machinepools.cluster.x-k8s.io"),
            crd("machines.cluster.x-k8s.io"),
            crd("extensionconfigs.runtime.cluster.x-k8s.io"),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "manager"}, "rules": [
                rule(&["cluster.x-k8s.io"], &["machines", "machinepools", "machinepools/status", "clusterclasses/finalizers"]),
                rule(&["cluster.x-k8s.io"], &["machinepools", "machinepools/status"]),
                rule(&["runtime.cluster.x-k8s.io"], &["*"]),
                rule(&["*"], &["machinepools", "extensionconfigs", "secrets"]),
                rule(&[""], &["machinepools"]),
                {"nonResourceURLs": ["/metrics"], "verbs": ["get"]},
            ]}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "aggregated"}, "aggregationRule": {}}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "role", "namespace": "ns"}, "rules": [rule(&["cluster.x-k8s.io"], &["machinepools"])]}),
            json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "v"}, "webhooks": [
                webhook("machinepool", vec![rule(&["cluster.x-k8s.io"], &["machinepools"])]),
                webhook("machine", vec![rule(&["cluster.x-k8s.io"], &["machines", "machinepools"]), rule(&["cluster.x-k8s.io"], &["machinepools"])]),
            ]}),
            json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration", "metadata": {"name": "m"}, "webhooks": [
                webhook("only", vec![rule(&["runtime.cluster.x-k8s.io"], &["extensionconfigs"])]),
            ]}),
        ]);
        let (out, report) = apply(&[Function::ExcludeResources], &cfg, input).unwrap();
        assert_eq!(
            names(&out),
            [
                "CustomResourceDefinition machines.cluster.x-k8s.io",
                "ClusterRole manager",
                "ClusterRole aggregated",
                "Role ns/role",
                "ValidatingWebhookConfiguration v",
            ]
        );
        let by_name = |n: &str| &out.iter().find(|o| o.id.name == n).unwrap().value;
        assert_eq!(
            by_name("manager")["rules"],
            json!([
                rule(&["cluster.x-k8s.io"], &["machines"]),
                rule(&["*"], &["secrets"]),
                rule(&[""], &["machinepools"]),
                {"nonResourceURLs": ["/metrics"], "verbs": ["get"]},
            ])
        );
        // The starlark sets the filtered list on every ClusterRole, so an aggregated one gets
        // `rules: []`; Roles are not filtered.
        assert_eq!(by_name("aggregated")["rules"], json!([]));
        assert_eq!(
            by_name("role")["rules"][0]["resources"],
            json!(["machinepools"])
        );
        assert_eq!(
            by_name("v")["webhooks"],
            json!([webhook(
                "machine",
                vec![rule(&["cluster.x-k8s.io"], &["machines"])]
            )])
        );
        let removed: Vec<String> = report.removed.iter().map(|k| k.name.clone()).collect();
        assert_eq!(
            removed,
            [
                "machinepools.cluster.x-k8s.io",
                "extensionconfigs.runtime.cluster.x-k8s.io",
                "m"
            ]
        );
        assert_eq!(report.filtered.len(), 3, "{:?}", report.filtered);
        assert_eq!(report.unused.len(), 2, "{:?}", report.unused);
        assert!(
            report.unused[0]
                .starts_with("ex.yaml:10: excludeCRDs names clusterclasses.cluster.x-k8s.io"),
            "{:?}",
            report.unused
        );
        assert!(
            report.unused[1].starts_with("ex.yaml:12: excludeCRDs names gone.example.com"),
            "{:?}",
            report.unused
        );
    }

    #[test]
    fn renames_follow_the_references_the_function_knows() {
        let cfg = config(&[(
            "rn.yaml",
            configmap(
                "rename-resources-config",
                "renameResources",
                "rbac.authorization.k8s.io/ClusterRole/manager-role=openshift-manager-role\n/ServiceAccount/manager=capi-manager\n/Service/webhook-service=capi-webhook-service\nrbac.authorization.k8s.io/Role/absent=x",
            ),
        )])
        .unwrap();
        let binding = |kind: &str, role_kind: &str, role: &str| {
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": {"name": format!("{kind}-{role_kind}")},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
                "subjects": [{"kind": "ServiceAccount", "name": "manager", "namespace": "ns"}, {"kind": "User", "name": "manager"}]})
        };
        let input = objects(&[
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "manager-role"}}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "manager-role", "namespace": "ns"}}),
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "manager", "namespace": "ns"}}),
            binding("ClusterRoleBinding", "ClusterRole", "manager-role"),
            binding("RoleBinding", "Role", "manager-role"),
            json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration", "metadata": {"name": "m"},
                "webhooks": [{"name": "a", "clientConfig": {"service": {"name": "webhook-service", "namespace": "ns"}}}, {"name": "b", "clientConfig": {"url": "https://x"}}]}),
        ]);
        let (out, report) = apply(&[Function::RenameResources], &cfg, input).unwrap();
        // The renamed objects (input 0 and 2) come after the others, in their order, where
        // kustomize puts a function's renamed output.
        let names: Vec<&str> = out.iter().map(|o| o.id.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "manager-role",
                "ClusterRoleBinding-ClusterRole",
                "RoleBinding-Role",
                "m",
                "openshift-manager-role",
                "capi-manager"
            ]
        );
        // By input position.
        let v = |i: usize| &out[[4, 0, 5, 1, 2, 3][i]].value;
        assert_eq!(v(0)["metadata"]["name"], "openshift-manager-role");
        assert_eq!(out[4].id.name, "openshift-manager-role", "identity follows");
        assert_eq!(
            v(1)["metadata"]["name"],
            "manager-role",
            "a Role of that name is another object"
        );
        assert_eq!(v(2)["metadata"]["name"], "capi-manager");
        assert_eq!(v(3)["roleRef"]["name"], "openshift-manager-role");
        assert_eq!(v(4)["roleRef"]["name"], "manager-role");
        for i in [3, 4] {
            assert_eq!(v(i)["subjects"][0]["name"], "capi-manager");
            assert_eq!(
                v(i)["subjects"][1]["name"],
                "manager",
                "not a ServiceAccount"
            );
        }
        assert_eq!(
            v(5)["webhooks"][0]["clientConfig"]["service"]["name"],
            "capi-webhook-service"
        );
        assert_eq!(
            v(5)["webhooks"][1]["clientConfig"],
            json!({"url": "https://x"})
        );
        assert_eq!(report.renamed.len(), 2);
        assert_eq!(report.unused.len(), 2, "{:?}", report.unused);
        assert!(
            report.unused[0]
                .starts_with("rn.yaml:11: renameResources names /Service/webhook-service"),
            "{:?}",
            report.unused
        );
        assert!(
            report.unused[1].starts_with("rn.yaml:12: "),
            "{:?}",
            report.unused
        );
    }
}
