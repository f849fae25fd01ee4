//! The parts of a provider's top-level kustomization that manifests-gen reads before it runs
//! kustomize: which `transformers:` entries are the generator's KRM functions (applied natively,
//! [`crate::transformers`]), which `resources:` may hold their configuration, and the kustomization
//! kustomize renders instead: the same without those entries, in the order the kustomization lists
//! its resources (the reference ran kustomize in-process, unsorted).

use serde_json::{Map, Value};

use crate::error::Error;
use crate::transformers::{Function, Transformer};
use crate::yaml::{parse_documents, to_yaml};

/// The file names kustomize accepts for a kustomization, in the order it looks for them.
pub const FILE_NAMES: [&str; 3] = ["kustomization.yaml", "kustomization.yml", "Kustomization"];

/// A parsed top-level kustomization.
#[derive(Debug, Clone, PartialEq)]
pub struct Kustomization {
    source: String,
    map: Map<String, Value>,
}

impl Kustomization {
    /// Parses a kustomization file; `source` names it in errors.
    pub fn parse(source: &str, text: &str) -> Result<Self, Error> {
        let err = |message: String| Error::Kustomization {
            at: source.to_owned(),
            message,
        };
        let mut docs = parse_documents(source, text)?;
        if docs.len() != 1 {
            return Err(err(format!(
                "a kustomization is one YAML document, this file has {}",
                docs.len()
            )));
        }
        match docs.remove(0).value {
            Value::Object(map) => Ok(Kustomization {
                source: source.to_owned(),
                map,
            }),
            _ => Err(err("a kustomization is a map".to_owned())),
        }
    }

    /// The string entries of the list `field`; anything else in it is an error.
    fn entries(&self, field: &str) -> Result<Vec<&str>, Error> {
        match self.map.get(field) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    v.as_str().ok_or_else(|| Error::Kustomization {
                        at: self.source.clone(),
                        message: format!("{field}[{i}] is not a string"),
                    })
                })
                .collect(),
            Some(_) => Err(Error::Kustomization {
                at: self.source.clone(),
                message: format!("{field} is not a list"),
            }),
        }
    }

    /// `transformers:`: paths relative to the kustomization's folder, or inline configs (an entry
    /// with a line break).
    pub fn transformers(&self) -> Result<Vec<&str>, Error> {
        self.entries("transformers")
    }

    /// `resources:`: files, folders or URLs relative to the kustomization's folder.
    pub fn resources(&self) -> Result<Vec<&str>, Error> {
        self.entries("resources")
    }

    /// `components:`: folders (or URLs) of kustomize Components, relative to the kustomization's
    /// folder.
    pub fn components(&self) -> Result<Vec<&str>, Error> {
        self.entries("components")
    }

    /// Splits `transformers:` into what kustomize runs and the native functions manifests-gen
    /// applies after it, given each entry's [`Transformer`] (same order as
    /// [`Self::transformers`]). Kustomize runs its transformers before manifests-gen runs the
    /// functions, so a kustomize transformer listed after a function would change order: refused.
    pub fn plan(&self, classified: &[Transformer]) -> Result<Plan, Error> {
        let entries = self.transformers()?;
        assert_eq!(entries.len(), classified.len(), "one class per entry");
        let mut functions: Vec<Function> = Vec::new();
        let mut kept = Vec::new();
        for (entry, class) in entries.iter().zip(classified) {
            match class {
                Transformer::Native(f) => functions.extend(f),
                Transformer::Kustomize if functions.is_empty() => {
                    kept.push(Value::from(*entry));
                }
                Transformer::Kustomize => {
                    return Err(Error::Kustomization {
                        at: self.source.clone(),
                        message: format!(
                            "transformers: {entry:?} is listed after the generator's KRM functions, which manifests-gen applies after kustomize: list kustomize's own transformers first"
                        ),
                    });
                }
            }
        }
        let mut map = self.map.clone();
        if kept.is_empty() {
            map.remove("transformers");
        } else {
            map.insert("transformers".to_owned(), Value::Array(kept));
        }
        // The reference's order (kustomize in-process keeps the listed order); a kustomization
        // that sets its own is the reference's too.
        map.entry("sortOptions")
            .or_insert_with(|| serde_json::json!({"order": "fifo"}));
        Ok(Plan {
            functions,
            kustomization: to_yaml(&self.source, &Value::Object(map))?,
        })
    }
}

/// How to render a kustomization whose transformers include the generator's functions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The native functions, in the order the kustomization lists them.
    pub functions: Vec<Function>,
    /// The kustomization for kustomize: without the functions, in listed order.
    pub kustomization: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    const K: &str = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n# comment\nresources:\n- ../config/default\n- exclude-resources-config.yaml\ntransformers:\n- builtin-prefix.yaml\n- tools/exclude-resources.yaml\n- tools/rename-resources.yaml\npatches:\n- target: {kind: Deployment}\n  patch: |-\n    - op: add\n      path: /x\n      value: y\n";

    #[test]
    fn the_functions_are_taken_out_and_the_order_kept() {
        let k = Kustomization::parse("k.yaml", K).unwrap();
        assert_eq!(
            k.resources().unwrap(),
            ["../config/default", "exclude-resources-config.yaml"]
        );
        assert_eq!(k.transformers().unwrap().len(), 3);
        let plan = k
            .plan(&[
                Transformer::Kustomize,
                Transformer::Native(vec![Function::ExcludeResources]),
                Transformer::Native(vec![Function::RenameResources]),
            ])
            .unwrap();
        assert_eq!(
            plan.functions,
            [Function::ExcludeResources, Function::RenameResources]
        );
        let rewritten = parse_documents("plan", &plan.kustomization).unwrap();
        let mut want = parse_documents("k", K).unwrap().remove(0).value;
        want["transformers"] = serde_json::json!(["builtin-prefix.yaml"]);
        want["sortOptions"] = serde_json::json!({"order": "fifo"});
        assert_eq!(rewritten[0].value, want, "everything else as it was");

        // Without kustomize transformers the field goes; a sortOptions of the fork's own stays.
        let own = format!("{K}sortOptions: {{order: legacy}}\n");
        let k = Kustomization::parse("k.yaml", &own).unwrap();
        let plan = k
            .plan(&[
                Transformer::Native(vec![Function::ExcludeResources]),
                Transformer::Native(vec![]),
                Transformer::Native(vec![Function::RenameResources]),
            ])
            .unwrap();
        let v = &parse_documents("plan", &plan.kustomization).unwrap()[0].value;
        assert!(v.get("transformers").is_none(), "{v}");
        assert_eq!(v["sortOptions"]["order"], "legacy");
    }

    #[test]
    fn what_cannot_be_planned_is_refused() {
        let k = Kustomization::parse("k.yaml", K).unwrap();
        let err = k
            .plan(&[
                Transformer::Native(vec![Function::ExcludeResources]),
                Transformer::Kustomize,
                Transformer::Native(vec![Function::RenameResources]),
            ])
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("k.yaml: transformers: \"tools/exclude-resources.yaml\" is listed after the generator's KRM functions"),
            "{err}"
        );
        for (text, want) in [
            ("resources: x\n", "k.yaml: resources is not a list"),
            (
                "transformers: [1]\n",
                "k.yaml: transformers[0] is not a string",
            ),
            ("- a\n", "k.yaml: a kustomization is a map"),
            (
                "a: 1\n---\nb: 2\n",
                "k.yaml: a kustomization is one YAML document, this file has 2",
            ),
        ] {
            let got = Kustomization::parse("k.yaml", text).and_then(|k| {
                k.resources()?;
                k.transformers().map(|_| ())
            });
            let err = got.unwrap_err().to_string();
            assert!(err.starts_with(want), "{want}: {err}");
        }
    }
}
