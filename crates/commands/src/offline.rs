//! The installer's pipeline on files instead of a cluster: the input of `capi-installer render` (a
//! folder of release manifests and/or a folder of image-based profiles: [`Input`], [`Sources`]), its
//! selection and plans with the controller's own round and planner ([`round`], [`render`]), and the
//! transport ConfigMaps that `capi-installer diff` compares ([`transport_configmaps`]). No request.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use capi_apply::{KindResolver, Plan};
use capi_manifests::transport::LABEL_NAME;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::DynamicObject;
use serde_json::{Value, json};

use crate::desired::{self, Desired, Wants};
use crate::policy::PolicyConfig;
use crate::prepare::RenderContext;
use crate::round::Round;
use crate::source::profile::{ProfileCatalog, validate_profile_name};
use crate::source::{Payload, ProviderSource, SourceCatalog, SourceId, Target, configmap};

/// Why files cannot be read as the pipeline's input.
#[derive(Debug, thiserror::Error)]
pub enum OfflineError {
    /// `what` names the folder (`reading folder DIR`) or the file (`reading FILE`).
    #[error("{what}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Yaml(#[from] capi_manifests::Error),
    /// A document or a folder that cannot be the input, naming it.
    #[error("{0}")]
    Input(String),
}

/// The `*.yaml` and `*.yml` files of a folder, sorted by name.
fn yaml_files(dir: &Path) -> Result<Vec<PathBuf>, OfflineError> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|source| OfflineError::Io {
            what: format!("reading folder {}", dir.display()),
            source,
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .collect();
    files.sort();
    Ok(files)
}

/// The documents of a YAML file, a `kind: List` item by item (as `oc get -o yaml` writes one).
fn documents(file: &Path) -> Result<Vec<capi_manifests::Document>, OfflineError> {
    let text = std::fs::read_to_string(file).map_err(|source| OfflineError::Io {
        what: format!("reading {}", file.display()),
        source,
    })?;
    let docs = capi_manifests::yaml::parse_documents(&file.display().to_string(), &text)?;
    Ok(capi_manifests::yaml::unwrap_lists(docs))
}

/// The transport ConfigMaps (labelled with a provider name) of a file, or of every `*.yaml`/`*.yml`
/// file of a folder (release manifests), as JSON; and, of a file, its documents that are not one
/// (`<location>: not a transport ConfigMap, skipped`).
pub fn transport_configmaps(path: &Path) -> Result<(Vec<Value>, Vec<String>), OfflineError> {
    let files = if path.is_dir() {
        yaml_files(path)?
    } else {
        vec![path.to_path_buf()]
    };
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for file in files {
        for doc in documents(&file)? {
            let v = doc.value;
            let transport = v.get("apiVersion").and_then(Value::as_str) == Some("v1")
                && v.get("kind").and_then(Value::as_str) == Some("ConfigMap")
                && v.pointer("/metadata/labels")
                    .and_then(|l| l.get(LABEL_NAME))
                    .is_some();
            if transport {
                out.push(v);
            } else if !path.is_dir() {
                skipped.push(format!(
                    "{}: not a transport ConfigMap, skipped",
                    doc.location
                ));
            }
        }
    }
    Ok((out, skipped))
}

/// A ConfigMap of the input folder.
pub struct InputConfigMap {
    typed: ConfigMap,
    value: Value,
    /// `file: document N (line L)`.
    pub origin: String,
}

impl InputConfigMap {
    pub fn name(&self) -> &str {
        self.typed.metadata.name.as_deref().unwrap_or_default()
    }
}

/// What a folder of release manifests holds for the pipeline: its ConfigMaps, the kinds its CRDs
/// define, and notes on what it holds besides.
pub struct Input {
    pub(crate) configmaps: Vec<InputConfigMap>,
    pub(crate) resolver: KindResolver,
    pub notes: Vec<String>,
}

impl Default for Input {
    fn default() -> Self {
        Input {
            configmaps: Vec::new(),
            resolver: KindResolver::builtin(),
            notes: Vec::new(),
        }
    }
}

impl Input {
    /// Reads every `*.yaml`/`*.yml` file of `dir` (sorted by name): ConfigMaps in `namespace` are the
    /// input; the kinds of CRDs are added to the resolver (the release payload applies such CRDs
    /// directly, e.g. the core CRD manifest); everything else is noted and skipped.
    pub fn read(dir: &Path, namespace: &str) -> Result<Input, OfflineError> {
        let files = yaml_files(dir)?;
        if files.is_empty() {
            return Err(OfflineError::Input(format!(
                "{}: no *.yaml or *.yml files",
                dir.display()
            )));
        }
        let mut input = Input::default();
        for file in files {
            for doc in documents(&file)? {
                input.add(doc.location.to_string(), doc.value, namespace)?;
            }
        }
        Ok(input)
    }

    fn add(&mut self, origin: String, value: Value, namespace: &str) -> Result<(), OfflineError> {
        let text = |pointer: &str| value.pointer(pointer).and_then(Value::as_str);
        let kind = text("/kind").unwrap_or_default().to_string();
        let name = text("/metadata/name").unwrap_or("<unnamed>").to_string();
        match (text("/apiVersion").unwrap_or_default(), kind.as_str()) {
            ("v1", "ConfigMap") => {
                let typed: ConfigMap = serde_json::from_value(value.clone()).map_err(|e| {
                    OfflineError::Input(format!(
                        "{origin}: ConfigMap {name}: not a valid ConfigMap: {e}"
                    ))
                })?;
                let ns = typed.metadata.namespace.as_deref().unwrap_or(namespace);
                if ns != namespace {
                    self.notes.push(format!(
                        "{origin}: ConfigMap {ns}/{name} skipped: not in namespace {namespace}"
                    ));
                    return Ok(());
                }
                if self.configmaps.iter().any(|c| c.name() == name) {
                    return Err(OfflineError::Input(format!(
                        "{origin}: ConfigMap {namespace}/{name} appears twice"
                    )));
                }
                self.configmaps.push(InputConfigMap {
                    typed,
                    value,
                    origin,
                });
            }
            ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => {
                let crd: DynamicObject = serde_json::from_value(value).map_err(|e| {
                    OfflineError::Input(format!("{origin}: CustomResourceDefinition {name}: {e}"))
                })?;
                self.resolver.insert_crd(&crd).map_err(|e| {
                    OfflineError::Input(format!("{origin}: CustomResourceDefinition {name}: {e}"))
                })?;
                self.notes.push(format!(
                    "{origin}: CustomResourceDefinition {name} is not a transport ConfigMap: skipped, its kinds are known to the plan"
                ));
            }
            _ => self.notes.push(format!(
                "{origin}: {kind} {name} is not a transport ConfigMap: skipped"
            )),
        }
        Ok(())
    }
}

/// The image-based profiles under `dir` (`<image>/capi-operator-manifests/<profile>/`), only
/// `profile` of each image when given.
pub fn read_profiles(dir: &Path, profile: Option<&str>) -> Result<ProfileCatalog, OfflineError> {
    if let Some(profile) = profile {
        validate_profile_name(profile).map_err(OfflineError::Input)?;
    }
    ProfileCatalog::read(dir, profile).map_err(|source| OfflineError::Io {
        what: format!("reading profiles folder {}", dir.display()),
        source,
    })
}

/// Where the payloads of a render come from: the input folder's ConfigMaps and the profiles.
pub struct Sources {
    pub input: Input,
    pub profiles: ProfileCatalog,
}

impl Sources {
    /// Every source a render may select.
    pub(crate) fn candidates(&self) -> Vec<ProviderSource> {
        let mut candidates: Vec<ProviderSource> = self
            .input
            .configmaps
            .iter()
            .filter_map(|c| configmap::candidate(&c.typed))
            .collect();
        candidates.extend(self.profiles.candidates());
        candidates
    }

    fn configmap(&self, name: &str) -> &InputConfigMap {
        self.input
            .configmaps
            .iter()
            .find(|c| c.name() == name)
            .expect("selected from the input")
    }

    /// Where a selected source came from, as errors name it: the file and document of a ConfigMap.
    pub(crate) fn origin(&self, id: &SourceId) -> String {
        match id {
            SourceId::ConfigMap(name) => self.configmap(name).origin.clone(),
            other => other.to_string(),
        }
    }

    /// The payload of a selected source.
    fn payload(&self, id: &SourceId) -> Result<Payload, String> {
        match id {
            SourceId::ConfigMap(name) => {
                configmap::payload(&self.configmap(name).value).map_err(|e| e.to_string())
            }
            other => self
                .profiles
                .load(other)
                .expect("selected from the profiles")
                .map_err(|e| e.to_string()),
        }
    }

    /// The input's ConfigMaps and the profiles that `round` does not reconcile.
    pub fn not_selected<'s>(&'s self, round: &Round) -> NotSelected<'s> {
        let selected = |id: &SourceId| round.selection.targets.iter().any(|t| &t.source.id == id);
        NotSelected {
            configmaps: (self.input.configmaps.iter())
                .filter(|c| !selected(&SourceId::ConfigMap(c.name().to_string())))
                .collect(),
            profiles: (self.profiles.candidates().into_iter())
                .filter(|c| !selected(&c.id))
                .collect(),
        }
    }
}

/// The sources of a render that its platform does not select.
pub struct NotSelected<'s> {
    pub configmaps: Vec<&'s InputConfigMap>,
    pub profiles: Vec<ProviderSource>,
}

/// What rendering needs offline: as on a cluster without a TLS profile of its own (the Intermediate
/// profile), with the installer's bundle policy.
pub fn context(
    namespace: &str,
    images: BTreeMap<String, String>,
    substitutions: &BTreeMap<String, String>,
    policy: PolicyConfig,
) -> RenderContext {
    let (substitutions, unavailable) = crate::tls::with_cluster_profile(None, substitutions);
    RenderContext {
        namespace: namespace.to_string(),
        images,
        substitutions,
        unavailable,
        policy,
        parsed: Default::default(),
        // As on a cluster without a proxy, unless the caller sets one.
        proxy: Default::default(),
        // As on a cluster without compatibility requirements.
        requirements: Vec::new(),
    }
}

/// What `platform` (an `Infrastructure` platform type) asks for, with the platforms `profiles`
/// declare.
pub fn desired(platform: &str, profiles: &ProfileCatalog) -> Desired {
    desired::desired(
        Some(&json!({"platformStatus": {"type": platform}})),
        &profiles.platforms(),
        &[],
    )
}

/// The round of `wants` on `sources`, as the controller selects (no source owns objects offline); the
/// round protects the input's transport ConfigMaps as they would be in the cluster.
pub fn round(wants: &Wants, sources: &Sources, ctx: &RenderContext) -> Round {
    Round::new(
        &wants.providers,
        &sources.candidates(),
        &Default::default(),
        ctx,
    )
}

/// One selected provider of a render: its plan and the fields removed because another controller
/// owns them, or every problem that prevents it (each naming the file and document, or the profile).
pub struct Rendered<'r> {
    pub target: &'r Target,
    pub plan: Result<(Plan, Vec<String>), Vec<String>>,
}

/// Renders and plans every selected provider of `round` (the others are still planned when one cannot
/// be), ahead of the cluster: later providers know the kinds of earlier ones' CRDs, and of the input's.
pub fn render<'r>(round: &'r Round, sources: &Sources) -> Vec<Rendered<'r>> {
    round
        .plan_all(&sources.input.resolver, |target| {
            sources.payload(&target.source.id)
        })
        .into_iter()
        .map(|planned| {
            let target = planned.target;
            let prepared = (planned.prepared.map_err(|e| vec![e]))
                .and_then(|prepared| prepared.map_err(|e| e.problems()));
            let origin = || sources.origin(&target.source.id);
            Rendered {
                target,
                plan: match prepared {
                    Ok(prepared) => Ok((prepared.plan, prepared.stripped)),
                    Err(problems) => Err(problems
                        .iter()
                        .map(|p| format!("{}: {p}", origin()))
                        .collect()),
                },
            }
        })
        .collect()
}

/// `ConfigMap openshift-cluster-api/aws`, or `profile <image>/<profile>`.
pub fn describe_source(namespace: &str, id: &SourceId) -> String {
    match id {
        SourceId::ConfigMap(name) => format!("ConfigMap {namespace}/{name}"),
        other => other.to_string(),
    }
}

/// The errors of the second sources of a provider that `round` refuses, as the installer refuses
/// them, naming the one kept.
pub fn refused(namespace: &str, round: &Round) -> Vec<String> {
    (round.selection.refused.iter())
        .map(|r| {
            format!(
                "{}: provider {} ({}) is already provided by {}; remove one of the two",
                describe_source(namespace, &r.target.source.id),
                r.target.source.name,
                r.target.source.provider_type.label(),
                describe_source(namespace, &r.kept)
            )
        })
        .collect()
}
