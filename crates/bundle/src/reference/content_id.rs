//! The reference's content ID of a cluster-wide revision, computed exactly as the reference's
//! revision generator computes it (openshift/cluster-capi-operator, current generation,
//! `pkg/revisiongenerator`: `renderedRevision.ContentID`), so that the reference can rebuild the
//! revisions this installer writes into `ClusterAPI/cluster` status once an administrator switches
//! back: its installer controller renders each revision from its own images and keeps only those
//! whose ID it gets again. Pure.
//!
//! What the reference hashes, read from its code:
//! - a component's ID is the lowercase hex sha256 of the concatenation, without separator, of every
//!   object's `encoding/json` output, in document order; an object is one document of the profile's
//!   `manifests.yaml` after `${...}` substitution (drone/envsubst: the revision's substitutions, then
//!   `EXP_BOOTSTRAP_FORMAT_IGNITION=true`, then the empty string), every occurrence of the profile's
//!   `selfImageRef` replaced by the image's own reference (a plain text replacement), parsed
//!   (sigs.k8s.io/yaml into `unstructured`: integers as int64), with the label
//!   [`COMPONENT_LABEL`]`: <the profile's metadata name>` set;
//! - the revision's ID is the lowercase hex sha256 of the components' IDs (as hex text) in install
//!   order, followed by the JSON of its substitutions: `[{"key":…,"value":…},…]` sorted by key, `null`
//!   when there are none.
//!
//! The substitution is drone/envsubst's own language and meaning ([`crate::envsubst`]): every operator,
//! nested expressions and its escapes give what the library gives, but for a substring that ends inside
//! a multi-byte character (U+FFFD where Go keeps the broken bytes); what it refuses renders nothing,
//! so there is no revision to name. The text replacement is the
//! reference's plain one, which the installer's render does not use (it replaces whole image
//! references only, [`capi_manifests::profile::replace_self_image`]); the caller parses that text again
//! for the ID when the two differ.
//!
//! Hand-written rather than `serde_json::to_vec`: the ID is a hash of bytes that no Rust serializer
//! writes. Go escapes `<`, `>`, `&`, U+2028 and U+2029 (`\u003c`, …), writes `\b` and `\f` short,
//! sorts map keys by bytes whatever the map, and writes a float in its own shortest form (`1e+21`,
//! `1e-7`); and the reference's objects went through JSON once before (YAML to JSON, then read back
//! keeping integers), so an integral float such as `1.0` is the integer `1` by then.

use std::collections::BTreeMap;

use serde_json::{Map, Number, Value};
use sha2::{Digest, Sha256};

use super::COMPONENT_LABEL;

/// A component's ID: `objects` (parsed, before anything of this installer's render) as the reference
/// holds them once labelled with `component`, the profile's metadata name.
pub(crate) fn component_id<'a>(
    component: &str,
    objects: impl IntoIterator<Item = &'a Value>,
) -> String {
    let mut hasher = Sha256::new();
    let mut buffer = Vec::new();
    for object in objects {
        buffer.clear();
        write_labelled(&mut buffer, object, component);
        hasher.update(&buffer);
    }
    hex(hasher)
}

/// A revision's ID: its components' IDs in install order, then its substitutions.
pub fn revision_id<'a>(
    components: impl IntoIterator<Item = &'a str>,
    substitutions: &BTreeMap<String, String>,
) -> String {
    let mut hasher = Sha256::new();
    for id in components {
        hasher.update(id.as_bytes());
    }
    let mut json = Vec::new();
    if substitutions.is_empty() {
        // The reference's substitutions are a nil slice then, which Go writes as `null`.
        json.extend_from_slice(b"null");
    } else {
        json.push(b'[');
        for (i, (key, value)) in substitutions.iter().enumerate() {
            if i > 0 {
                json.push(b',');
            }
            // `key` is `omitempty` (never empty: the API refuses it); `value` is a pointer, always set.
            json.extend_from_slice(b"{\"key\":");
            write_string(&mut json, key);
            json.extend_from_slice(b",\"value\":");
            write_string(&mut json, value);
            json.push(b'}');
        }
        json.push(b']');
    }
    hasher.update(&json);
    hex(hasher)
}

fn hex(hasher: Sha256) -> String {
    capi_object::lower_hex(&hasher.finalize())
}

/// `object` with `metadata.labels[COMPONENT_LABEL] = component`, as the reference's
/// `unstructured` accessors set it: labels that are not all strings read as none (so only the new
/// one is left), a missing `metadata` is created, a `metadata` that is not a map stays as it is.
fn write_labelled(out: &mut Vec<u8>, object: &Value, component: &str) {
    let Value::Object(map) = object else {
        return write_value(out, object);
    };
    let mut metadata = match map.get("metadata") {
        None => Map::new(),
        Some(Value::Object(metadata)) => metadata.clone(),
        Some(_) => return write_value(out, object),
    };
    let mut labels = match metadata.get("labels") {
        Some(Value::Object(labels)) if labels.values().all(Value::is_string) => labels.clone(),
        _ => Map::new(),
    };
    labels.insert(COMPONENT_LABEL.into(), Value::String(component.into()));
    metadata.insert("labels".into(), Value::Object(labels));
    let metadata = Value::Object(metadata);
    if map.contains_key("metadata") {
        // Only `metadata` is copied: the rest of an object (a CRD's schema) can be large.
        write_map(out, map, |key, value| match key {
            "metadata" => &metadata,
            _ => value,
        });
    } else {
        let mut with = map.clone();
        with.insert("metadata".into(), metadata);
        write_value(out, &Value::Object(with));
    }
}

/// Go's `encoding/json` output of `value`.
fn write_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(out, item);
            }
            out.push(b']');
        }
        Value::Object(map) => write_map(out, map, |_, value| value),
    }
}

/// A map with its keys sorted by bytes (Go sorts a map's keys so), each value through `value_of`.
fn write_map<'a>(
    out: &mut Vec<u8>,
    map: &'a Map<String, Value>,
    value_of: impl Fn(&str, &'a Value) -> &'a Value,
) {
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    out.push(b'{');
    for (i, key) in keys.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_string(out, key);
        out.push(b':');
        write_value(out, value_of(key, &map[key]));
    }
    out.push(b'}');
}

fn write_number(out: &mut Vec<u8>, n: &Number) {
    if let Some(i) = n.as_i64() {
        out.extend_from_slice(i.to_string().as_bytes());
    } else if let Some(f) = n.as_f64() {
        // Past int64 (a u64) or not integral: Go read it back as a float64.
        write_float(out, f);
    }
}

/// A float as the reference has it: Go's text of the float64, which, read back keeping integers,
/// is an int64 when it is an integer literal that fits (`-0` is `0` then).
fn write_float(out: &mut Vec<u8>, f: f64) {
    let text = go_float(f);
    let integral = !text.contains(['.', 'e']);
    match text.parse::<i64>() {
        Ok(i) if integral => out.extend_from_slice(i.to_string().as_bytes()),
        _ => out.extend_from_slice(text.as_bytes()),
    }
}

/// Go's `encoding/json` text of a float64: the shortest digits that read back the same, without an
/// exponent for 1e-6 <= |f| < 1e21, otherwise with one (`e+21`, `e-7`: Go's `e-07` trimmed).
fn go_float(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let text = format!("{f:e}");
        let (mantissa, exponent) = text.split_once('e').expect("{:e} writes an exponent");
        match exponent.strip_prefix('-') {
            Some(negative) => format!("{mantissa}e-{negative}"),
            None => format!("{mantissa}e+{exponent}"),
        }
    } else {
        format!("{f}")
    }
}

fn write_string(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    let mut utf8 = [0u8; 4];
    for c in s.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            '\u{8}' => out.extend_from_slice(b"\\b"),
            '\u{c}' => out.extend_from_slice(b"\\f"),
            '\u{2028}' => out.extend_from_slice(b"\\u2028"),
            '\u{2029}' => out.extend_from_slice(b"\\u2029"),
            c if (c as u32) < 0x20 || matches!(c, '<' | '>' | '&') => {
                let b = c as u8;
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(b >> 4)]);
                out.push(HEX[usize::from(b & 0xf)]);
            }
            c => out.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes()),
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn go_json(value: &Value) -> String {
        let mut out = Vec::new();
        write_value(&mut out, value);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn go_json_is_written_byte_for_byte() {
        let cases = [
            (
                json!({"b": 1, "a": [true, null], "B": {}}),
                r#"{"B":{},"a":[true,null],"b":1}"#,
            ),
            (json!("<a & b>"), r#""\u003ca \u0026 b\u003e""#),
            // DEL is not escaped.
            (
                json!("\u{8}\u{c}\n\r\t\u{1}\u{1f}\u{7f}"),
                "\"\\b\\f\\n\\r\\t\\u0001\\u001f\u{7f}\"",
            ),
            (json!("\u{2028}\u{2029}é\"\\/"), r#""\u2028\u2029é\"\\/""#),
            (json!(1.0), "1"),
            (json!(-0.0), "0"),
            (json!(0.5), "0.5"),
            (json!(1e-7), "1e-7"),
            (json!(1.5e-10), "1.5e-10"),
            (json!(1e21), "1e+21"),
            (json!(1e20), "100000000000000000000"),
            (json!(123456789.125), "123456789.125"),
            (json!(u64::MAX), "18446744073709552000"),
            (json!(i64::MIN), "-9223372036854775808"),
        ];
        for (value, want) in cases {
            assert_eq!(go_json(&value), want, "{value:?}");
        }
    }

    #[test]
    fn the_component_label_is_set_as_unstructured_sets_it() {
        let labelled = |object: Value| {
            let mut out = Vec::new();
            write_labelled(&mut out, &object, "cluster-api");
            serde_json::from_slice::<Value>(&out).unwrap()
        };
        let label =
            |labels: Value| json!({"kind": "A", "metadata": {"name": "a", "labels": labels}});
        assert_eq!(
            labelled(label(json!({"x": "y"}))),
            label(json!({"x": "y", COMPONENT_LABEL: "cluster-api"}))
        );
        // Labels that are not all strings read as none.
        assert_eq!(
            labelled(label(json!({"x": 1}))),
            label(json!({COMPONENT_LABEL: "cluster-api"}))
        );
        assert_eq!(
            labelled(label(Value::Null)),
            label(json!({COMPONENT_LABEL: "cluster-api"}))
        );
        assert_eq!(
            labelled(json!({"kind": "A"})),
            json!({"kind": "A", "metadata": {"labels": {COMPONENT_LABEL: "cluster-api"}}})
        );
        assert_eq!(
            labelled(json!({"kind": "A", "metadata": "x"})),
            json!({"kind": "A", "metadata": "x"})
        );
    }

    // Known answers of the reference's own code: `NewRenderedRevision(profiles,
    // WithManifestSubstitutions(subs))` then `ContentID()` and `ForInstall(release, 1).RevisionName()`
    // of openshift/cluster-capi-operator `pkg/revisiongenerator` at commit 409c6b44c (main,
    // 2026-12; drone/envsubst v2.0.0-20210730161058, sigs.k8s.io/yaml v1.6.0, k8s.io/apimachinery
    // v0.36.2 as it vendors them; Go 1.26.8), called from a throwaway `main` outside this repository
    // over the profiles below (`metadata.yaml` of `EDGE_METADATA`, the manifests as files) with
    // profile `default` and the image references given, and printing the two values.

    const EDGE_METADATA: &str = "name: edge-provider\ninstallOrder: 20\nselfImageRef: registry.ci.openshift.org/openshift:edge-controllers\n";
    const EDGE_IMAGE: &str = "quay.io/example/edge@sha256:eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee";
    /// What the ID is sensitive to: Go's escapes and numbers, envsubst's forms (a bare `$HOME` is
    /// text, `$$` one `$`, an unset variable empty, `EXP_BOOTSTRAP_FORMAT_IGNITION` true), the label
    /// beside one of the object's own, an object without labels.
    const EDGE: &str = r##"---
apiVersion: v1
kind: ConfigMap
metadata:
  name: edge
  namespace: openshift-cluster-api
  labels:
    app: edge
data:
  html: "<a href='x'>&</a>"
  bare: "$HOME, $$, $${NOT} and $"
  set: "${TLS_MIN_VERSION}"
  unset: "[${UNSET}]"
  default: "${UNSET_TOO:=fall back}"
  dash: "${UNSET_TOO:-dash}"
  ignition: "${EXP_BOOTSTRAP_FORMAT_IGNITION:=false}"
  image: registry.ci.openshift.org/openshift:edge-controllers
  controls: "tab\there\u2028\b\f\x01\x7f é"
---
apiVersion: example.io/v1
kind: Thing
metadata:
  name: numbers
spec:
  int: 42
  negative: -7
  float: 0.5
  integral: 1.0
  small: 1.0e-7
  big: 1.0e+21
  exp: 1e3
  zero: -0.0
  nothing: null
  empty: {}
  list: [1, "two", true, ~]
  quoted: "yes"
  multi: |
    line one
    line two
"##;
    /// `selfImageRef` inside a longer reference: replaced by the reference, not by this installer's
    /// render, so the ID is taken from the reference's text parsed again.
    const LONGER: &str = r##"apiVersion: v1
kind: ConfigMap
metadata:
  name: longer
  namespace: openshift-cluster-api
data:
  image: registry.ci.openshift.org/openshift:edge-controllers
  longer: registry.ci.openshift.org/openshift:edge-controllers-v2
"##;

    /// The reference's ID of `manifests` as component `name`, through this installer's render.
    fn component(
        metadata: &str,
        manifests: &str,
        image: &str,
        substitutions: &BTreeMap<String, String>,
    ) -> String {
        use crate::source::ProfileRef;
        use crate::source::{Payload, ProviderSource, SourceId, Target};
        let metadata = capi_manifests::profile::ProfileMetadata::parse("metadata.yaml", metadata)
            .expect("metadata");
        let payload = Payload {
            origin: "manifests.yaml".into(),
            components: manifests.into(),
            self_image_ref: metadata.self_image_ref.clone(),
            image: Some(image.into()),
            component: Some(metadata.name.clone()),
            version: None,
        };
        let target = Target {
            source: ProviderSource {
                id: SourceId::Profile(ProfileRef {
                    image: "image".into(),
                    profile: "default".into(),
                }),
                name: metadata.name.clone(),
                provider_type: capi_manifests::ProviderType::Infrastructure,
                version: None,
                created: None,
            },
            clusterctl_label: "infrastructure-test".into(),
        };
        let ctx = crate::prepare::RenderContext {
            namespace: "openshift-cluster-api".into(),
            substitutions: substitutions.clone(),
            ..Default::default()
        };
        crate::prepare::render(&payload, &target, &ctx)
            .expect("renders")
            .reference_id
            .expect("a profile of a known image has a reference ID")
    }

    fn subs(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_ids_are_the_references() {
        let tls13 = subs(&[("TLS_MIN_VERSION", "VersionTLS13")]);
        let edge = component(EDGE_METADATA, EDGE, EDGE_IMAGE, &tls13);
        let id = revision_id([edge.as_str()], &tls13);
        assert_eq!(
            id,
            "31b5788d393c96ab64f04463af2c8fbda3cb308a4173c87a4699604575c2243b"
        );
        assert_eq!(
            crate::reference::revision_name("4.22.0", &id, 1),
            "4.22.0-31b5788d-1"
        );
        // No substitutions: Go's `null`.
        let longer = component(EDGE_METADATA, LONGER, EDGE_IMAGE, &BTreeMap::new());
        assert_eq!(
            revision_id([longer.as_str()], &BTreeMap::new()),
            "7a218e482c79f6d8f6644cecfd5528905e969dc4e1034c0da2aa6d90e8cbae7c"
        );
        // Components in order, then the substitutions.
        let longer = component(EDGE_METADATA, LONGER, EDGE_IMAGE, &tls13);
        assert_eq!(
            revision_id([edge.as_str(), longer.as_str()], &tls13),
            "e08192bc2b482eb2f9899f2c160740eeead0aefcc4aa5676436f3496f4d25da1"
        );
    }

    /// The committed profiles of the core and AWS forks (`../shared/fixtures/manifests-gen-profiles`,
    /// `expected/default`), with the substitutions of the Intermediate TLS profile.
    #[test]
    fn the_ids_of_real_profiles_are_the_references() {
        let Some(dir) = control_plane::shared_fixture("manifests-gen-profiles") else {
            return;
        };
        let read = |provider: &str, file: &str| {
            std::fs::read_to_string(dir.join(provider).join("expected/default").join(file))
                .expect("fixture")
        };
        let core_image = format!("quay.io/openshift/core@sha256:{}", "1".repeat(64));
        let aws_image = format!("quay.io/openshift/aws@sha256:{}", "2".repeat(64));
        let none = BTreeMap::new();
        let core = component(
            &read("core", "metadata.yaml"),
            &read("core", "manifests.yaml"),
            &core_image,
            &none,
        );
        assert_eq!(
            revision_id([core.as_str()], &none),
            "843fbef6253740359456428449efc0485b5a8d26c2a9e7565bcb4f9f5d3ce4fe"
        );
        let intermediate = crate::tls::cluster_substitutions(None).expect("Intermediate");
        assert_eq!(
            intermediate.keys().collect::<Vec<_>>(),
            ["TLS_CIPHER_SUITES", "TLS_MIN_VERSION"]
        );
        let core = component(
            &read("core", "metadata.yaml"),
            &read("core", "manifests.yaml"),
            &core_image,
            &intermediate,
        );
        let aws = component(
            &read("aws", "metadata.yaml"),
            &read("aws", "manifests.yaml"),
            &aws_image,
            &intermediate,
        );
        assert_eq!(
            revision_id([aws.as_str()], &intermediate),
            "b4821c6143542dda64f0b277dec53fed0c48bd16388926df0ba6a8f4edd8dd82"
        );
        let id = revision_id([core.as_str(), aws.as_str()], &intermediate);
        assert_eq!(
            id,
            "b2a4ad10a3b321afbf97bb35442cdc998a337ead3c328d9e1ec60fde39884b21"
        );
        assert_eq!(
            crate::reference::revision_name("4.22.0-0.nightly-2026-12-01-000000", &id, 1),
            "4.22.0-0.nightly-2026-12-01-000000-b2a4ad10-1"
        );
    }
}
