//! Object identity, the table of well-known kinds, name rules, and small JSON and digest helpers.
//!
//! The lowest crate of the workspace: both the data model (`capi-manifests`, which must not depend on a
//! Kubernetes client) and the apply engine (`capi-apply`, which must not know about Cluster API) need
//! these, so they live here, once. Pure: depends on serde only.

#![warn(unreachable_pub)]

mod key;
pub mod kinds;
pub(crate) mod names;

pub use key::{ObjectKey, split_api_version};
pub use kinds::{KindOrigin, KnownKind, is_cluster_scoped};
pub use names::is_dns_label;

use serde_json::Value;

/// `v` without `null` map values, recursively. The API server drops them, and a YAML `~` means "absent"
/// to every reader here, so comparisons and hashes must not see them.
pub fn strip_nulls(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), strip_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(strip_nulls).collect()),
        other => other.clone(),
    }
}

/// `bytes` as lowercase hex, two digits a byte: how a sha256 digest is written wherever this
/// workspace names content by it (drift hashes, image volume names, the reference's content IDs).
pub fn lower_hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lower_hex_writes_two_lowercase_digits_a_byte() {
        assert_eq!(lower_hex(&[0x00, 0x0f, 0xab, 0xff]), "000fabff");
        assert_eq!(lower_hex(&[]), "");
    }

    #[test]
    fn strip_nulls_is_recursive_and_keeps_null_array_items() {
        let v = json!({"a": null, "b": {"c": null, "d": 1}, "e": [null, {"f": null}]});
        assert_eq!(strip_nulls(&v), json!({"b": {"d": 1}, "e": [null, {}]}));
    }
}
