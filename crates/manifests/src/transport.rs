//! The transport ConfigMap (SPEC §2, ref §1.3): one per provider, carrying the provider's
//! customized components and its clusterctl metadata from the provider repository to the
//! cluster.

use std::io::Read;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::{Map, Value, json};

use crate::TARGET_NAMESPACE;
use crate::budget::{Budget, BudgetExceeded, Limit};
use crate::error::Error;
use crate::provider::{Provider, ProviderType};

pub const LABEL_NAME: &str = "provider.cluster.x-k8s.io/name";
pub const LABEL_TYPE: &str = "provider.cluster.x-k8s.io/type";
pub const LABEL_VERSION: &str = "provider.cluster.x-k8s.io/version";

pub(crate) const KEY_METADATA: &str = "metadata";
pub(crate) const KEY_COMPONENTS: &str = "components";
pub(crate) const KEY_COMPONENTS_ZSTD: &str = "components-zstd";

/// Components longer than this are stored zstd-compressed (the reference threshold; it leaves
/// about 98 kB under the ConfigMap limit for the metadata and the envelope).
pub const PLAIN_COMPONENTS_LIMIT: usize = 950_000;
/// The largest ConfigMap the API server (and CVO) accepts, serialized.
pub const CONFIGMAP_SIZE_LIMIT: usize = 1_048_576;
/// zstd level for `components-zstd`. Fixed so that output is byte-for-byte reproducible with a
/// given libzstd (the `zstd` crate bundles one), and high because the ConfigMap is written once
/// at build time and read rarely.
pub const ZSTD_LEVEL: i32 = 19;

/// The release-profile annotations every transport ConfigMap (and several kinds of provider
/// objects) carry, and the feature-set annotation.
pub(crate) const OPENSHIFT_ANNOTATIONS: [(&str, &str); 3] = [
    (
        "exclude.release.openshift.io/internal-openshift-hosted",
        "true",
    ),
    (
        "include.release.openshift.io/self-managed-high-availability",
        "true",
    ),
    ("include.release.openshift.io/single-node-developer", "true"),
];
pub(crate) const FEATURE_SET_ANNOTATION: (&str, &str) = (
    "release.openshift.io/feature-set",
    "CustomNoUpgrade,TechPreviewNoUpgrade",
);

/// How the components were (or are to be) stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// `data.components`
    Plain,
    /// `binaryData.components-zstd`: one zstd frame.
    Zstd,
    /// `binaryData.components`: gzip, the upstream cluster-api-operator form (decode only).
    Gzip,
}

/// The content of a transport ConfigMap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransportConfigMap {
    pub provider: Provider,
    /// The clusterctl `metadata.yaml`, verbatim.
    pub metadata: String,
    /// Multi-document YAML of the customized components.
    pub components: String,
}

/// A decoded ConfigMap: the content and how the components were stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    pub content: TransportConfigMap,
    pub encoding: Encoding,
}

impl TransportConfigMap {
    /// The encoding `encode` chooses for these components.
    pub fn encoding(&self) -> Encoding {
        if self.components.len() > PLAIN_COMPONENTS_LIMIT {
            Encoding::Zstd
        } else {
            Encoding::Plain
        }
    }

    /// Builds the ConfigMap object. Refuses (error naming the provider and the size) one whose
    /// serialization would exceed 1 MiB: the reference wrote such files and left CVO to fail.
    pub fn encode(&self) -> Result<Value, Error> {
        Ok(self.encode_checked(false)?.0)
    }

    /// The ConfigMap as YAML, written as the reference writes it ([`crate::goyaml`]), size-checked.
    pub fn to_yaml(&self) -> Result<String, Error> {
        Ok(self.encode_checked(false)?.1)
    }

    /// [`Self::to_yaml`] as a reference generator built before apimachinery's `omitzero` wrote it
    /// when `null_creation_timestamp` ([`crate::generator::GeneratorVersion`]): with
    /// `metadata.creationTimestamp: null`, which the typed ConfigMap then carried.
    pub fn to_yaml_as(&self, null_creation_timestamp: bool) -> Result<String, Error> {
        Ok(self.encode_checked(null_creation_timestamp)?.1)
    }

    fn encode_checked(&self, null_creation_timestamp: bool) -> Result<(Value, String), Error> {
        let p = &self.provider;
        let mut annotations = Map::new();
        for (k, v) in OPENSHIFT_ANNOTATIONS
            .iter()
            .chain([&FEATURE_SET_ANNOTATION])
        {
            annotations.insert((*k).to_owned(), Value::from(*v));
        }
        let mut cm = json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": p.name,
                "namespace": TARGET_NAMESPACE,
                "labels": {
                    LABEL_NAME: p.name,
                    LABEL_TYPE: p.provider_type.label(),
                    LABEL_VERSION: p.version,
                },
                "annotations": annotations,
            },
            "data": { KEY_METADATA: self.metadata },
        });
        let mut detail = String::new();
        match self.encoding() {
            Encoding::Zstd => {
                let compressed =
                    compress_zstd(self.components.as_bytes()).map_err(|e| Error::ConfigMapKey {
                        configmap: format!("{TARGET_NAMESPACE}/{}", self.provider.name),
                        key: format!("binaryData.{KEY_COMPONENTS_ZSTD}"),
                        message: format!("zstd compression failed: {e}"),
                    })?;
                detail = format!(
                    " (components compressed with zstd from {} to {} bytes)",
                    self.components.len(),
                    compressed.len()
                );
                cm["binaryData"] = json!({ KEY_COMPONENTS_ZSTD: B64.encode(compressed) });
            }
            Encoding::Plain | Encoding::Gzip => {
                cm["data"][KEY_COMPONENTS] = Value::from(self.components.as_str());
            }
        }
        if null_creation_timestamp {
            cm["metadata"]["creationTimestamp"] = Value::Null;
        }
        // Written as the reference writes it (sigs.k8s.io/yaml, then one final line break).
        let yaml = format!("{}\n", crate::goyaml::marshal(&cm).trim_end_matches('\n'));
        if yaml.len() > CONFIGMAP_SIZE_LIMIT {
            return Err(Error::TooLarge {
                provider: p.name.clone(),
                size: yaml.len(),
                limit: CONFIGMAP_SIZE_LIMIT,
                detail,
            });
        }
        Ok((cm, yaml))
    }

    /// The components as checked objects; errors name this ConfigMap and the document.
    pub fn objects(&self) -> Result<Vec<crate::yaml::Object>, Error> {
        crate::yaml::parse_objects(
            &format!("{} data.components", self.configmap_name()),
            &self.components,
        )
    }

    fn configmap_name(&self) -> String {
        format!("ConfigMap {TARGET_NAMESPACE}/{}", self.provider.name)
    }

    /// Reads a transport ConfigMap as the installer gets it from the API server.
    ///
    /// Provider identity comes from the three labels. Components come from exactly one of
    /// `binaryData.components-zstd`, `binaryData.components` (gzip, upstream form) and
    /// `data.components`; a ConfigMap with more than one is refused (SPEC §2: the forms are
    /// exclusive). Picking one would let a stale leftover of an earlier version, merged into the
    /// ConfigMap by an update rather than replaced, be installed silently. `binaryData.components`
    /// is read as gzip whether or not the upstream `provider.cluster.x-k8s.io/compressed` annotation
    /// is present: the key has no other meaning, and a corrupt payload is reported either way.
    pub fn decode(cm: &Value) -> Result<Decoded, Error> {
        Self::decode_with_budget(cm, &Budget::default())
    }

    /// [`TransportConfigMap::decode`] holding the components to `budget.max_bytes`, whatever their
    /// encoding: a compressed payload is decompressed only that far (and a zstd frame may not make
    /// the decoder allocate a larger window), so a ConfigMap of a megabyte never costs more than the
    /// budget. The YAML limits of the budget apply when the components are parsed
    /// ([`crate::yaml::parse_documents_with_budget`]).
    pub fn decode_with_budget(cm: &Value, budget: &Budget) -> Result<Decoded, Error> {
        let ns = cm
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("");
        let name = cm
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("<unnamed>");
        let configmap = if ns.is_empty() {
            name.to_string()
        } else {
            format!("{ns}/{name}")
        };
        let cm_err = |message: String| Error::ConfigMap {
            configmap: configmap.clone(),
            message,
        };
        if cm.get("kind").and_then(Value::as_str) != Some("ConfigMap") {
            return Err(cm_err("not a ConfigMap".to_owned()));
        }
        let label = |key: &str| {
            cm.pointer("/metadata/labels")
                .and_then(|l| l.get(key))
                .and_then(Value::as_str)
                .ok_or_else(|| cm_err(format!("label {key} is missing")))
        };
        let ptype = label(LABEL_TYPE)?;
        let provider_type = ProviderType::from_label(ptype).ok_or_else(|| {
            cm_err(format!(
                "label {LABEL_TYPE} is {ptype:?}, expected core or infrastructure"
            ))
        })?;
        let provider = Provider::new(label(LABEL_NAME)?, provider_type, label(LABEL_VERSION)?)
            .map_err(|e| cm_err(e.to_string()))?;

        let metadata = match cm.get("data").and_then(|d| d.get(KEY_METADATA)) {
            Some(Value::String(s)) => s.clone(),
            Some(v) if !v.is_null() => {
                return Err(Error::ConfigMapKey {
                    configmap: configmap.clone(),
                    key: format!("data.{KEY_METADATA}"),
                    message: "not a string".to_owned(),
                });
            }
            _ => {
                return Err(cm_err(format!(
                    "data.{KEY_METADATA} (clusterctl metadata) is missing"
                )));
            }
        };
        let (components, encoding) = read_components(cm, &configmap, budget)?;
        Ok(Decoded {
            content: TransportConfigMap {
                provider,
                metadata,
                components,
            },
            encoding,
        })
    }
}

/// The components of a transport ConfigMap from its one payload key, decompressed within `budget`.
fn read_components(
    cm: &Value,
    configmap: &str,
    budget: &Budget,
) -> Result<(String, Encoding), Error> {
    let present: Vec<String> = [
        ("binaryData", KEY_COMPONENTS_ZSTD),
        ("binaryData", KEY_COMPONENTS),
        ("data", KEY_COMPONENTS),
    ]
    .into_iter()
    .filter(|(map, key)| {
        cm.get(map)
            .and_then(|d| d.get(key))
            .is_some_and(|v| !v.is_null())
    })
    .map(|(map, key)| format!("{map}.{key}"))
    .collect();
    let cm_err = |message: String| Error::ConfigMap {
        configmap: configmap.to_string(),
        message,
    };
    if present.len() > 1 {
        return Err(cm_err(format!(
            "carries both {}: the components forms are exclusive, and one of them is a stale leftover; remove it",
            present.join(" and ")
        )));
    }
    if let Some(bytes) = binary_key(cm, configmap, KEY_COMPONENTS_ZSTD)? {
        let key = format!("binaryData.{KEY_COMPONENTS_ZSTD}");
        let raw =
            decompress_zstd(&bytes, budget).map_err(|e| decompress_error(e, configmap, &key))?;
        return Ok((utf8(configmap, key, raw)?, Encoding::Zstd));
    }
    if let Some(bytes) = binary_key(cm, configmap, KEY_COMPONENTS)? {
        let key = format!("binaryData.{KEY_COMPONENTS}");
        let raw =
            decompress_gzip(&bytes, budget).map_err(|e| decompress_error(e, configmap, &key))?;
        return Ok((utf8(configmap, key, raw)?, Encoding::Gzip));
    }
    match cm.get("data").and_then(|d| d.get(KEY_COMPONENTS)) {
        Some(Value::String(text)) => {
            budget
                .check_bytes(text.len())
                .map_err(|exceeded| Error::Budget {
                    location: format!("ConfigMap {configmap}, data.{KEY_COMPONENTS}"),
                    exceeded,
                })?;
            Ok((text.clone(), Encoding::Plain))
        }
        Some(v) if !v.is_null() => Err(Error::ConfigMapKey {
            configmap: configmap.to_string(),
            key: format!("data.{KEY_COMPONENTS}"),
            message: "not a string".to_owned(),
        }),
        _ => Err(cm_err(format!(
            "no components: none of binaryData.{KEY_COMPONENTS_ZSTD}, binaryData.{KEY_COMPONENTS}, data.{KEY_COMPONENTS}"
        ))),
    }
}

/// The bytes of `binaryData.<key>`, `None` when absent.
fn binary_key(cm: &Value, configmap: &str, key: &str) -> Result<Option<Vec<u8>>, Error> {
    let key_err = |message: String| Error::ConfigMapKey {
        configmap: configmap.to_string(),
        key: format!("binaryData.{key}"),
        message,
    };
    match cm.get("binaryData").and_then(|d| d.get(key)) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => {
            // The API server returns base64 without line breaks; files written by hand may wrap it.
            let compact: String = s.split_ascii_whitespace().collect();
            B64.decode(compact)
                .map(Some)
                .map_err(|e| key_err(format!("invalid base64: {e}")))
        }
        Some(_) => Err(key_err("not a string".to_owned())),
    }
}

fn decompress_error(e: Decompress, configmap: &str, key: &str) -> Error {
    match e {
        Decompress::Exceeded(exceeded) => Error::Budget {
            location: format!("ConfigMap {configmap}, {key}"),
            exceeded,
        },
        Decompress::Corrupt(message) => Error::ConfigMapKey {
            configmap: configmap.to_string(),
            key: key.to_owned(),
            message,
        },
    }
}

fn utf8(configmap: &str, key: String, bytes: Vec<u8>) -> Result<String, Error> {
    String::from_utf8(bytes).map_err(|e| Error::ConfigMapKey {
        configmap: configmap.to_string(),
        key,
        message: format!("decompressed components are not UTF-8: {e}"),
    })
}

/// One zstd frame with content size and checksum, at [`ZSTD_LEVEL`], single-threaded:
/// the same input always gives the same bytes.
pub fn compress_zstd(data: &[u8]) -> std::io::Result<Vec<u8>> {
    compress_zstd_at(data, ZSTD_LEVEL)
}

/// [`compress_zstd`] at another level. What a level costs grows with it: level 19's match tables are
/// sized to the input (about 50 MiB for 4 MiB), level 3's are fixed at under 1 MiB (BENCHMARKS.md,
/// `reconcile_cpu`).
pub fn compress_zstd_at(data: &[u8], level: i32) -> std::io::Result<Vec<u8>> {
    let mut c = zstd::bulk::Compressor::new(level)?;
    c.include_checksum(true)?;
    c.include_contentsize(true)?;
    c.compress(data)
}

/// Why compressed components could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decompress {
    /// More than the budget's `max_bytes` (or a zstd window larger than that).
    Exceeded(BudgetExceeded),
    Corrupt(String),
}

/// Decompresses one or more zstd frames, refusing output over `budget.max_bytes`.
///
/// In one shot, into a buffer of the budget's size: the buffer is the decoder's history, so the
/// frame's window is never allocated (8 MiB for what manifests-gen and the reference generator write,
/// which a streaming decoder allocated for every read of a ConfigMap: most of the installer's peak
/// heap). What a frame declares costs nothing; the memory is the budget's whatever it says. The
/// buffer's untouched pages cost nothing either; it is shrunk to the output.
pub fn decompress_zstd(data: &[u8], budget: &Budget) -> Result<Vec<u8>, Decompress> {
    let capacity = budget.max_bytes.saturating_add(1);
    let mut out = zstd::bulk::Decompressor::new()
        .and_then(|mut d| d.decompress(data, capacity))
        .map_err(|e| {
            if e.to_string().contains("too small") {
                Decompress::Exceeded(BudgetExceeded {
                    limit: Limit::Bytes,
                    max: budget.max_bytes,
                })
            } else {
                Decompress::Corrupt(format!("corrupt zstd data: {e}"))
            }
        })?;
    budget
        .check_bytes(out.len())
        .map_err(Decompress::Exceeded)?;
    out.shrink_to_fit();
    Ok(out)
}

pub(crate) fn decompress_gzip(data: &[u8], budget: &Budget) -> Result<Vec<u8>, Decompress> {
    read_limited(flate2::read::GzDecoder::new(data), budget, "gzip")
}

fn read_limited(r: impl Read, budget: &Budget, what: &str) -> Result<Vec<u8>, Decompress> {
    let mut out = Vec::new();
    let n = r
        .take(budget.max_bytes as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| Decompress::Corrupt(format!("corrupt {what} data: {e}")))?;
    budget.check_bytes(n).map_err(Decompress::Exceeded)?;
    Ok(out)
}
