//! The objects of a components text, parsed once and kept compressed for the next time the same text
//! is planned.
//!
//! A provider is planned again at every pass that reconciles it (a cold install's passes while its
//! gates wait, a drift's repair), from the same text, and parsing that YAML is most of what planning
//! costs (BENCHMARKS.md, "The components parsed once"). Keeping the parsed objects themselves would
//! cost several MiB per provider (issue 30's converged-memory aim); their JSON, compressed, costs a
//! few tens of kB and reads back in a few milliseconds. The memo is invisible to its callers: a hit
//! returns exactly what [`crate::yaml::parse_objects`] returned for that text (a test compares them on
//! every provider of the fixtures), and an error is never kept, so it is reported again each time.
//!
//! Bounded: one entry per source (a newer text of the source replaces the older), at most
//! [`ParseMemo::ENTRIES`] sources (the oldest goes), and an entry whose compressed form exceeds
//! [`ParseMemo::MAX_ENTRY_BYTES`] (text that does not compress, e.g. a hostile payload of random
//! strings) is not kept.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::Error;
use crate::yaml::{DocLocation, Object, parse_objects};
use capi_object::ObjectKey;

/// A cheap handle: clones share the entries.
#[derive(Clone, Default)]
pub struct ParseMemo {
    entries: Arc<Mutex<VecDeque<Entry>>>,
    /// Texts recalled rather than parsed ([`ParseMemo::stats`]).
    recalled: Arc<AtomicUsize>,
}

struct Entry {
    source: String,
    /// SHA-256 of the text: a payload is written by whoever may write the ConfigMap, so a collision
    /// must be out of reach, not merely unlikely.
    digest: [u8; 32],
    /// Each object's document index and first line, in order.
    locations: Vec<(usize, usize)>,
    /// The objects' values, a JSON array, zstd-compressed.
    compressed: Vec<u8>,
    /// The JSON's length: the exact buffer decompression needs.
    json_len: usize,
}

/// What a memo holds, for tests and diagnostics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoStats {
    /// Sources kept.
    pub entries: usize,
    /// Their compressed bytes.
    pub bytes: usize,
    /// Texts recalled rather than parsed, since the memo was made.
    pub recalled: usize,
}

/// A cache, not an input: its state is left out, so that what holds it (the rendering context, whose
/// `Debug` is part of a round's fingerprint) prints the same however full it is.
impl std::fmt::Debug for ParseMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParseMemo").finish_non_exhaustive()
    }
}

impl ParseMemo {
    /// Sources remembered at most: more than a cluster's providers.
    pub const ENTRIES: usize = 16;
    /// The largest compressed entry kept (a real provider's takes a few tens of kB).
    pub const MAX_ENTRY_BYTES: usize = 512 * 1024;
    /// zstd's fastest levels compress provider YAML's JSON ~20×; higher ones cost more than they save.
    const LEVEL: i32 = 1;

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What the memo holds now.
    pub fn stats(&self) -> MemoStats {
        let entries = self.lock();
        MemoStats {
            entries: entries.len(),
            bytes: entries.iter().map(|e| e.compressed.len()).sum(),
            recalled: self.recalled.load(Ordering::Relaxed),
        }
    }

    /// [`parse_objects`] of `text`, from the memo when `source` was parsed from the same text before.
    pub fn parse_objects(&self, source: &str, text: &str) -> Result<Vec<Object>, Error> {
        let digest: [u8; 32] = Sha256::digest(text.as_bytes()).into();
        if let Some(objects) = self.recall(source, &digest) {
            self.recalled.fetch_add(1, Ordering::Relaxed);
            return Ok(objects);
        }
        let objects = parse_objects(source, text)?;
        self.keep(source, digest, &objects);
        Ok(objects)
    }

    fn recall(&self, source: &str, digest: &[u8; 32]) -> Option<Vec<Object>> {
        let (locations, compressed, json_len) = {
            let entries = self.lock();
            let entry = entries
                .iter()
                .find(|e| e.source == source && e.digest == *digest)?;
            (
                entry.locations.clone(),
                entry.compressed.clone(),
                entry.json_len,
            )
        };
        // Our own output: a failure here is a bug, answered by parsing the text again.
        let json = zstd::bulk::decompress(&compressed, json_len).ok();
        let values: Vec<Value> = serde_json::from_slice(json.as_deref()?).ok()?;
        if values.len() != locations.len() {
            return None;
        }
        let shared: Arc<str> = Arc::from(source);
        values
            .into_iter()
            .zip(locations)
            .map(|(value, (index, line))| {
                Some(Object {
                    location: DocLocation {
                        source: shared.clone(),
                        index,
                        line,
                    },
                    id: ObjectKey::from_value(&value)?,
                    value,
                })
            })
            .collect()
    }

    fn keep(&self, source: &str, digest: [u8; 32], objects: &[Object]) {
        let values: Vec<&Value> = objects.iter().map(|o| &o.value).collect();
        let Ok(json) = serde_json::to_vec(&values) else {
            return;
        };
        let Ok(compressed) = zstd::bulk::compress(&json, Self::LEVEL) else {
            return;
        };
        let json_len = json.len();
        drop(json);
        let mut entries = self.lock();
        entries.retain(|e| e.source != source);
        if compressed.len() > Self::MAX_ENTRY_BYTES {
            return;
        }
        if entries.len() >= Self::ENTRIES {
            entries.pop_front();
        }
        entries.push_back(Entry {
            source: source.to_string(),
            digest,
            locations: objects
                .iter()
                .map(|o| (o.location.index, o.location.line))
                .collect(),
            compressed,
            json_len,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: ns}\ndata: {n: '1', f: 1.5, big: 18446744073709551615}\n---\n# comment\n\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: b\nspec:\n  ports: [{port: 443, targetPort: 9443}]\n";

    #[test]
    fn a_recalled_parse_is_the_parse() {
        let memo = ParseMemo::default();
        let first = memo.parse_objects("src", TEXT).unwrap();
        assert_eq!(first, parse_objects("src", TEXT).unwrap());
        assert_eq!(memo.lock().len(), 1);
        let digest: [u8; 32] = Sha256::digest(TEXT.as_bytes()).into();
        let recalled = memo.recall("src", &digest).expect("kept");
        assert_eq!(recalled, first, "values, identities and locations");
    }

    #[test]
    fn another_text_or_source_is_parsed_and_replaces_its_sources_entry() {
        let memo = ParseMemo::default();
        memo.parse_objects("src", TEXT).unwrap();
        let other = TEXT.replace("name: b", "name: c");
        let objects = memo.parse_objects("src", &other).unwrap();
        assert_eq!(objects[1].id.name, "c");
        assert_eq!(memo.lock().len(), 1, "the source's older text is dropped");
        let digest: [u8; 32] = Sha256::digest(TEXT.as_bytes()).into();
        assert!(memo.recall("src", &digest).is_none());
        assert!(memo.recall("elsewhere", &digest).is_none());
    }

    #[test]
    fn errors_are_not_kept_and_the_memo_is_bounded() {
        let memo = ParseMemo::default();
        let bad = "apiVersion: v1\nkind: ConfigMap\n";
        for _ in 0..2 {
            let e = memo.parse_objects("src", bad).unwrap_err();
            assert!(e.to_string().contains("metadata.name"), "{e}");
        }
        assert!(memo.lock().is_empty());
        for i in 0..ParseMemo::ENTRIES + 3 {
            memo.parse_objects(&format!("src-{i}"), TEXT).unwrap();
        }
        let entries = memo.lock();
        assert_eq!(entries.len(), ParseMemo::ENTRIES);
        assert_eq!(
            entries.front().unwrap().source,
            "src-3",
            "the oldest went first"
        );
    }

    #[test]
    fn an_entry_that_does_not_compress_is_not_kept() {
        // Pseudo-random strings (xorshift), too many bytes to keep once compressed.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut data = String::new();
        for i in 0..800 {
            let mut s = String::new();
            for _ in 0..1200 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                s.push(char::from(b'a' + (x % 26) as u8));
            }
            data.push_str(&format!("  k{i}: {s}\n"));
        }
        let text = format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: a}}\ndata:\n{data}");
        let memo = ParseMemo::default();
        assert_eq!(memo.parse_objects("src", &text).unwrap().len(), 1);
        assert!(memo.lock().is_empty());
    }
}
