//! Revisions: every version of a provider source that was applied, kept in the cluster, so that an
//! upgrade that never becomes Available can be rolled back, automatically or by hand. Pure: the
//! record, the choice of what to apply, and the stored form; the installer reads and writes it.
//!
//! One ConfigMap per source, `capi-installer-revisions-<source>` in the installer's namespace:
//! `data.revisions` holds the [`RevisionLog`] (JSON), `binaryData.revision-<n>` the rendered content of
//! revision `n` (the objects as applied, one JSON document each, zstd-compressed), and `data.rollback`
//! a [`RollbackRequest`] written by `capi-installer rollback`.
//!
//! Unlike the reference (ref §3.12), where objects a failed revision already updated stay at the new
//! content, a rollback here re-applies the last good revision's objects — except CRDs, which only
//! move forward: stored objects may already use a new CRD version.

use std::collections::{BTreeMap, BTreeSet};

use capi_manifests::Budget;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use capi_bundle::source::SourceId;

/// Revisions whose content is kept by default, besides the last good one.
pub const DEFAULT_KEPT: usize = 3;
/// Revisions recorded at most (without content beyond the last few); the oldest go first, never the
/// last good one.
pub(crate) const MAX_RECORDS: usize = 50;
/// Label of every revisions ConfigMap (the installer watches them).
pub const LABEL: &str = "capi-installer.openshift.io/revisions";
pub(crate) const KEY_LOG: &str = "revisions";
pub const KEY_ROLLBACK: &str = "rollback";
/// The field manager of a rollback request (`capi-installer rollback`): the installer never writes
/// that key.
pub const ROLLBACK_FIELD_MANAGER: &str = "capi-installer-rollback";
const NAME_PREFIX: &str = "capi-installer-revisions-";
/// The API server refuses a ConfigMap whose data and binaryData exceed 1 MiB together.
const CONFIGMAP_LIMIT: usize = capi_manifests::transport::CONFIGMAP_SIZE_LIMIT;
/// Room for keys, the rollback request and growth of the log between two writes.
const MARGIN: usize = 16 * 1024;

/// The key of revision `n`'s content in `binaryData`.
pub fn content_key(n: u32) -> String {
    format!("revision-{n}")
}

/// The revisions ConfigMap of a source: a DNS subdomain derived from its inventory key (hashed when
/// the key is not one already, as a profile's `_` makes it, or is too long).
pub fn configmap_name(id: &SourceId) -> String {
    let key = id.inventory_key();
    let valid = key.len() + NAME_PREFIX.len() <= 253
        && key
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
    if valid {
        return format!("{NAME_PREFIX}{key}");
    }
    let hash = &capi_apply::drift::hash_value(&Value::String(key.clone()))[..10];
    let clean: String = key
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .take(200)
        .collect();
    format!("{NAME_PREFIX}{}-{hash}", clean.trim_matches('-'))
}

/// One source's revisions.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RevisionLog {
    /// The source, as status names it (`ConfigMap aws`).
    pub source: String,
    /// `provider.cluster.x-k8s.io/name` of the source.
    pub provider: String,
    /// Ascending by number.
    pub revisions: Vec<Revision>,
    /// The revision that is live and was fully rolled out: the last good one, what a failed upgrade
    /// falls back to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<u32>,
    /// While set and the source still has content `hold.digest`, revision `hold.serving` is applied
    /// instead of the source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold: Option<Hold>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Revision {
    pub revision: u32,
    /// Digest of the rendered objects.
    pub digest: String,
    /// The source's version label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// When it was first applied (RFC 3339).
    pub applied_at: String,
    pub outcome: RevisionOutcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolled_out_at: Option<String>,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Whether its content is kept (a rollback needs it).
    #[serde(default)]
    pub content: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RevisionOutcome {
    /// Applied, not yet fully rolled out.
    Progressing,
    /// Every object applied and ready, every Deployment Available.
    RolledOut,
    /// Its Deployments did not become Available in time; rolled back.
    Failed,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hold {
    /// The source's content that is not applied while the hold lasts.
    pub digest: String,
    /// The revision applied instead.
    pub serving: u32,
    /// The revision that failed (an automatic rollback); `None` when rolled back by hand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<u32>,
    pub since: String,
}

/// `capi-installer rollback --to N`: serve revision `to` while the source's content is `from` (the
/// newest revision's digest when it was asked). A new content of the source ends it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RollbackRequest {
    pub to: u32,
    pub from: String,
    pub requested_at: String,
}

/// What to apply for a source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Choice {
    /// The source's content.
    Source,
    /// A recorded revision instead.
    Serve(Hold),
}

/// A rollback that cannot be done.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RevisionError {
    #[error("{source_name}: no revision {revision} (known: {known})")]
    Unknown {
        source_name: String,
        revision: u32,
        known: String,
    },
    #[error(
        "{source_name}: the content of revision {revision} is no longer kept; only the last revisions' content is"
    )]
    NoContent { source_name: String, revision: u32 },
    #[error("no revisions of provider {provider} are recorded (recorded: {known})")]
    NoProvider { provider: String, known: String },
    #[error(
        "provider {provider} has several sources with revisions: {sources}; remove the one that is not selected"
    )]
    Ambiguous { provider: String, sources: String },
    #[error("{source_name}: revision {revision} is the newest; there is nothing to roll back")]
    Newest { source_name: String, revision: u32 },
    #[error("ConfigMap {configmap}, {key}: {message}")]
    Stored {
        configmap: String,
        key: String,
        message: String,
    },
}

impl RevisionLog {
    pub fn new(source: &str, provider: &str) -> Self {
        RevisionLog {
            source: source.to_string(),
            provider: provider.to_string(),
            ..Default::default()
        }
    }

    pub fn get(&self, n: u32) -> Option<&Revision> {
        self.revisions.iter().find(|r| r.revision == n)
    }

    fn get_mut(&mut self, n: u32) -> Option<&mut Revision> {
        self.revisions.iter_mut().find(|r| r.revision == n)
    }

    pub fn newest(&self) -> Option<&Revision> {
        self.revisions.last()
    }

    /// What to apply when the source's rendered content has `digest`: a rollback asked by hand for
    /// this content, else the hold of an automatic rollback of this content, else the source.
    pub fn choose(
        &self,
        digest: &str,
        request: Option<&RollbackRequest>,
    ) -> Result<Choice, RevisionError> {
        if let Some(r) = request.filter(|r| r.from == digest) {
            if let Some(h) = self
                .hold
                .as_ref()
                .filter(|h| h.digest == digest && h.serving == r.to)
            {
                return Ok(Choice::Serve(h.clone()));
            }
            self.servable(r.to)?;
            return Ok(Choice::Serve(Hold {
                digest: digest.to_string(),
                serving: r.to,
                failed: None,
                since: r.requested_at.clone(),
            }));
        }
        Ok(match &self.hold {
            Some(h) if h.digest == digest => Choice::Serve(h.clone()),
            _ => Choice::Source,
        })
    }

    /// The revision that serves while a new content is refused before its first write: the one a
    /// rollback holds, else the last one rolled out; `None` when it cannot be applied again (a first
    /// install, or its content was not kept).
    pub fn last_good(&self) -> Option<u32> {
        let serving = match &self.hold {
            Some(hold) => Some(hold.serving),
            None => self.current,
        };
        serving.filter(|n| self.servable(*n).is_ok())
    }

    /// Whether revision `n` can be applied again: recorded, with its content kept.
    pub fn servable(&self, n: u32) -> Result<(), RevisionError> {
        match self.get(n) {
            Some(r) if r.content => Ok(()),
            Some(_) => Err(RevisionError::NoContent {
                source_name: self.source.clone(),
                revision: n,
            }),
            None => Err(RevisionError::Unknown {
                source_name: self.source.clone(),
                revision: n,
                known: self
                    .revisions
                    .iter()
                    .map(|r| r.revision.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }

    /// Records that the source's content `digest` is about to be applied (before the first write): a
    /// new revision unless it is the newest one already. Ends any hold. Returns the revision.
    pub fn begin(&mut self, digest: &str, version: Option<&str>, now: &str) -> u32 {
        self.hold = None;
        if let Some(newest) = self.newest().filter(|r| r.digest == digest) {
            return newest.revision;
        }
        let n = self.newest().map_or(1, |r| r.revision + 1);
        self.revisions.push(Revision {
            revision: n,
            digest: digest.to_string(),
            version: version.map(String::from),
            applied_at: now.to_string(),
            outcome: RevisionOutcome::Progressing,
            rolled_out_at: None,
            message: None,
            content: true,
        });
        self.trim();
        n
    }

    /// Revision `n` is fully rolled out: it becomes the current one.
    pub fn rolled_out(&mut self, n: u32, now: &str) {
        if let Some(r) = self.get_mut(n) {
            if r.outcome != RevisionOutcome::RolledOut {
                r.outcome = RevisionOutcome::RolledOut;
                r.rolled_out_at = Some(now.to_string());
                r.message = None;
            }
            self.current = Some(n);
        }
    }

    /// Revision `n` did not become Available. Returns the hold that rolls it back to the current
    /// revision, when there is one to go back to (a first install has none: it keeps trying).
    pub fn failed(&mut self, n: u32, message: &str, now: &str) -> Option<Hold> {
        let to = self
            .current
            .filter(|c| *c != n && self.servable(*c).is_ok())?;
        let r = self.get_mut(n)?;
        r.outcome = RevisionOutcome::Failed;
        r.message = Some(message.to_string());
        let hold = Hold {
            digest: r.digest.clone(),
            serving: to,
            failed: Some(n),
            since: now.to_string(),
        };
        self.hold = Some(hold.clone());
        Some(hold)
    }

    /// A held revision was applied and is fully rolled out again.
    pub fn served(&mut self, hold: &Hold) {
        self.current = Some(hold.serving);
        self.hold = Some(hold.clone());
    }

    /// At most [`MAX_RECORDS`], dropping the oldest but never the current one.
    fn trim(&mut self) {
        while self.revisions.len() > MAX_RECORDS {
            let Some(i) = self
                .revisions
                .iter()
                .position(|r| Some(r.revision) != self.current)
            else {
                return;
            };
            self.revisions.remove(i);
        }
    }
}

/// The request `capi-installer rollback --provider P --to N` writes, into the ConfigMap of the log
/// found among `logs` (ConfigMap name, log): revision `to` must be kept, and older than the newest (or
/// the newest itself while an older one is served instead). Pure.
pub fn rollback_request<'a>(
    logs: &'a [(String, RevisionLog)],
    provider: &str,
    to: u32,
    now: &str,
) -> Result<(&'a str, RollbackRequest), RevisionError> {
    let found: Vec<&(String, RevisionLog)> = logs
        .iter()
        .filter(|(_, l)| l.provider == provider)
        .collect();
    let (configmap, log) = match found.as_slice() {
        [one] => *one,
        [] => {
            let mut known: Vec<&str> = logs.iter().map(|(_, l)| l.provider.as_str()).collect();
            known.sort();
            return Err(RevisionError::NoProvider {
                provider: provider.to_string(),
                known: known.join(", "),
            });
        }
        several => {
            return Err(RevisionError::Ambiguous {
                provider: provider.to_string(),
                sources: several
                    .iter()
                    .map(|(_, l)| l.source.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
    };
    log.servable(to)?;
    let newest = log.newest().expect("a servable revision exists");
    if newest.revision == to && log.hold.is_none() {
        return Err(RevisionError::Newest {
            source_name: log.source.clone(),
            revision: to,
        });
    }
    let request = RollbackRequest {
        to,
        from: newest.digest.clone(),
        requested_at: now.to_string(),
    };
    Ok((configmap.as_str(), request))
}

/// Whether the installer has carried out `request`: revision `to` is live, held against the
/// content it was asked for.
pub fn carried_out(log: &RevisionLog, request: &RollbackRequest) -> bool {
    log.current == Some(request.to)
        && log
            .hold
            .as_ref()
            .is_some_and(|h| h.serving == request.to && h.digest == request.from)
}

/// Which revisions keep their content: the current one, then the newest `kept`, newest first, as
/// long as they fit in `budget` bytes together (a revision that does not fit is skipped, an older
/// smaller one may still fit). Pure.
pub fn select_contents(
    log: &RevisionLog,
    sizes: &BTreeMap<u32, usize>,
    kept: usize,
    budget: usize,
) -> BTreeSet<u32> {
    let newest = log.revisions.iter().rev().map(|r| r.revision).take(kept);
    let order = log.current.into_iter().chain(newest);
    let mut selected = BTreeSet::new();
    let mut used = 0usize;
    for n in order {
        let Some(size) = sizes.get(&n) else { continue };
        if !selected.contains(&n) && used + size <= budget {
            used += size;
            selected.insert(n);
        }
    }
    selected
}

/// What a revisions ConfigMap holds, decoded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stored {
    pub log: RevisionLog,
    /// Compressed content by revision.
    pub contents: BTreeMap<u32, Vec<u8>>,
    pub request: Option<RollbackRequest>,
}

impl Stored {
    /// Decodes the `data` and `binaryData` of ConfigMap `configmap` (untrusted: anyone who can write
    /// ConfigMaps in the namespace can edit it; errors name the key).
    pub fn decode(
        configmap: &str,
        data: &BTreeMap<String, String>,
        binary: &BTreeMap<String, Vec<u8>>,
    ) -> Result<Stored, RevisionError> {
        let fail = |key: &str, message: String| RevisionError::Stored {
            configmap: configmap.to_string(),
            key: key.to_string(),
            message,
        };
        let log: RevisionLog = match data.get(KEY_LOG) {
            Some(json) => serde_json::from_str(json).map_err(|e| fail(KEY_LOG, e.to_string()))?,
            None => RevisionLog::default(),
        };
        let request = data
            .get(KEY_ROLLBACK)
            .map(|json| serde_json::from_str(json).map_err(|e| fail(KEY_ROLLBACK, e.to_string())))
            .transpose()?;
        let contents = log
            .revisions
            .iter()
            .filter_map(|r| {
                let bytes = binary.get(&content_key(r.revision))?;
                Some((r.revision, bytes.clone()))
            })
            .collect();
        Ok(Stored {
            log,
            contents,
            request,
        })
    }

    /// The ConfigMap's `data` (the log) and `binaryData` (the contents that fit, see
    /// [`select_contents`]); marks in the log which revisions keep their content.
    pub fn encode(&mut self, kept: usize) -> (BTreeMap<String, String>, BTreeMap<String, Vec<u8>>) {
        let log_size = serde_json::to_string(&self.log).map_or(0, |s| s.len());
        let request_size = self
            .request
            .as_ref()
            .and_then(|r| serde_json::to_string(r).ok())
            .map_or(0, |s| s.len());
        let budget = CONFIGMAP_LIMIT.saturating_sub(log_size + request_size + MARGIN);
        let sizes = self.contents.iter().map(|(n, c)| (*n, c.len())).collect();
        let selected = select_contents(&self.log, &sizes, kept, budget);
        self.contents.retain(|n, _| selected.contains(n));
        for r in &mut self.log.revisions {
            r.content = selected.contains(&r.revision);
        }
        let data = [(
            KEY_LOG.to_string(),
            serde_json::to_string(&self.log).expect("a revision log serializes"),
        )]
        .into();
        let binary = self
            .contents
            .iter()
            .map(|(n, c)| (content_key(*n), c.clone()))
            .collect();
        (data, binary)
    }
}

impl Stored {
    /// [`Stored::decode`] of a ConfigMap.
    pub fn from_configmap(
        cm: &k8s_openapi::api::core::v1::ConfigMap,
    ) -> Result<Self, RevisionError> {
        let binary: BTreeMap<String, Vec<u8>> = cm
            .binary_data
            .iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.0.clone()))
            .collect();
        Stored::decode(
            cm.metadata.name.as_deref().unwrap_or_default(),
            cm.data.as_ref().unwrap_or(&BTreeMap::new()),
            &binary,
        )
    }
}

/// The objects a rollback to revision `target` applies: its own, except CRDs, which only move forward
/// (objects may already be stored in a version only the newer CRD serves): the CRDs of `newest` (the
/// latest revision applied), plus those of `target` that `newest` lacks (still in place: nothing is
/// pruned before a revision is fully rolled out). Pure.
pub fn rollback_objects(target: Vec<Value>, newest: &[Value]) -> Vec<Value> {
    fn crd_name(o: &Value) -> Option<&str> {
        let api_version = o["apiVersion"].as_str().unwrap_or_default();
        (o["kind"] == "CustomResourceDefinition"
            && api_version.starts_with("apiextensions.k8s.io/"))
        .then(|| o.pointer("/metadata/name").and_then(Value::as_str))
        .flatten()
    }
    let forward: Vec<&Value> = newest.iter().filter(|o| crd_name(o).is_some()).collect();
    let names: BTreeSet<&str> = forward.iter().filter_map(|o| crd_name(o)).collect();
    let mut out: Vec<Value> = forward.into_iter().cloned().collect();
    out.extend(
        target
            .into_iter()
            .filter(|o| crd_name(o).is_none_or(|n| !names.contains(n))),
    );
    out
}

/// zstd level of a revision's content. Not the transport ConfigMap's 19: that is compressed once, at
/// build time; a revision is compressed by the installer whenever a new version arrives, and level 19
/// took 150–250 ms of CPU for a real provider and peaked at ~50 MiB for the largest bundle the budget
/// accepts (its match tables grow with the input). Level 3 takes 1–2 ms and under 1 MiB whatever the
/// input, for revisions a quarter larger (aws 51 kB instead of 41 kB: four fit in a ConfigMap many
/// times over). BENCHMARKS.md, `reconcile_cpu` with `COMPRESSION_CANDIDATES`.
const ZSTD_LEVEL: i32 = 3;

/// The stored form of rendered objects: one JSON document each, compressed. The objects are written
/// straight into one text (no JSON value or string per object first: a plan holds up to the resource
/// budget's ~26 MiB of parsed objects, and a copy of it would double the installer's peak).
pub fn compress<T: serde::Serialize>(objects: impl IntoIterator<Item = T>) -> Vec<u8> {
    let mut text = Vec::new();
    for (i, o) in objects.into_iter().enumerate() {
        if i > 0 {
            text.extend_from_slice(b"\n---\n");
        }
        serde_json::to_writer(&mut text, &o).expect("an object serializes");
    }
    capi_manifests::transport::compress_zstd_at(&text, ZSTD_LEVEL)
        .expect("zstd compresses in memory")
}

/// The objects of stored content, read within twice the default resource budget (rendering adds
/// labels and annotations to what the source's budget admitted).
pub fn decompress(origin: &str, bytes: &[u8]) -> Result<Vec<Value>, String> {
    let budget = Budget {
        max_bytes: 2 * Budget::DEFAULT_MAX_BYTES,
        max_object_nodes: 2 * Budget::default().max_object_nodes,
        ..Budget::default()
    };
    let text = capi_manifests::transport::decompress_zstd(bytes, &budget).map_err(|e| match e {
        capi_manifests::transport::Decompress::Exceeded(x) => x.to_string(),
        capi_manifests::transport::Decompress::Corrupt(m) => m,
    })?;
    let text = String::from_utf8(text).map_err(|e| format!("not UTF-8: {e}"))?;
    let documents = capi_manifests::yaml::parse_documents_with_budget(origin, &text, &budget)
        .map_err(|e| e.to_string())?;
    Ok(documents.into_iter().map(|d| d.value).collect())
}

#[cfg(test)]
mod tests;
