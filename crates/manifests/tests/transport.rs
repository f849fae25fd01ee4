//! Transport ConfigMap encode/decode: round trips, compression, size limit, upstream form,
//! corrupt input.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use capi_manifests::transport::{
    CONFIGMAP_SIZE_LIMIT, Encoding, PLAIN_COMPONENTS_LIMIT, TransportConfigMap,
};
use capi_manifests::{Error, Provider, ProviderType};
use serde_json::{Value, json};

const METADATA: &str = "# verbatim, comments included\napiVersion: clusterctl.cluster.x-k8s.io/v1alpha3\nkind: Metadata\nreleaseSeries:\n  - major: 2\n    minor: 10\n    contract: v1beta1\n";

fn provider() -> Provider {
    Provider::new("aws", ProviderType::Infrastructure, "v2.10.0").unwrap()
}

/// Compressible, realistic-looking components of about `size` bytes.
fn components(size: usize) -> String {
    let mut s = String::new();
    let mut i = 0;
    while s.len() < size {
        s.push_str(&format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\n  namespace: openshift-cluster-api\ndata:\n  key: value {i}\n---\n"
        ));
        i += 1;
    }
    s
}

/// Text that zstd cannot shrink much: pseudo-random letters from a fixed-seed LCG.
fn incompressible(size: usize) -> String {
    let mut x: u64 = 0x9E3779B97F4A7C15;
    let mut s =
        String::from("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata:\n  k: ");
    while s.len() < size {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        s.push((b'a' + ((x >> 33) % 26) as u8) as char);
    }
    s.push('\n');
    s
}

fn tcm(components: String) -> TransportConfigMap {
    TransportConfigMap {
        provider: provider(),
        metadata: METADATA.to_owned(),
        components,
    }
}

#[test]
fn plain_round_trip_and_shape() {
    let t = tcm(components(10_000));
    let cm = t.encode().unwrap();
    assert_eq!(cm["metadata"]["name"], "aws");
    assert_eq!(cm["metadata"]["namespace"], "openshift-cluster-api");
    assert_eq!(
        cm["metadata"]["labels"],
        json!({"provider.cluster.x-k8s.io/name": "aws", "provider.cluster.x-k8s.io/type": "infrastructure", "provider.cluster.x-k8s.io/version": "v2.10.0"})
    );
    assert_eq!(
        cm["metadata"]["annotations"]["release.openshift.io/feature-set"],
        "CustomNoUpgrade,TechPreviewNoUpgrade"
    );
    assert_eq!(cm["metadata"]["annotations"].as_object().unwrap().len(), 4);
    assert!(cm.get("binaryData").is_none());
    let d = TransportConfigMap::decode(&cm).unwrap();
    assert_eq!(d.encoding, Encoding::Plain);
    assert_eq!(d.content, t);

    // Through YAML text as well, as the installer reads a file or the API.
    let yaml = t.to_yaml().unwrap();
    let back = capi_manifests::yaml::parse_documents("cm", &yaml).unwrap();
    assert_eq!(
        TransportConfigMap::decode(&back[0].value).unwrap().content,
        t
    );
}

#[test]
fn compressed_round_trip_single_frame_and_deterministic() {
    let t = tcm(components(PLAIN_COMPONENTS_LIMIT + 1));
    assert_eq!(t.encoding(), Encoding::Zstd);
    let cm = t.encode().unwrap();
    assert!(
        cm["data"].get("components").is_none(),
        "no plain copy next to the compressed one"
    );
    let b64 = cm["binaryData"]["components-zstd"].as_str().unwrap();
    let frame = B64.decode(b64).unwrap();
    assert_eq!(&frame[..4], &[0x28, 0xB5, 0x2F, 0xFD], "zstd magic");
    assert_eq!(
        zstd::zstd_safe::find_frame_compressed_size(&frame).unwrap(),
        frame.len(),
        "exactly one frame"
    );
    let d = TransportConfigMap::decode(&cm).unwrap();
    assert_eq!(d.encoding, Encoding::Zstd);
    assert_eq!(d.content, t);
    assert_eq!(t.to_yaml().unwrap(), t.to_yaml().unwrap());

    // Exactly at the threshold stays plain.
    let at = tcm("x".repeat(PLAIN_COMPONENTS_LIMIT));
    assert_eq!(at.encoding(), Encoding::Plain);
}

#[test]
fn too_large_even_after_compression_is_an_error() {
    let t = tcm(incompressible(2 * CONFIGMAP_SIZE_LIMIT));
    let err = t.to_yaml().unwrap_err();
    match &err {
        Error::TooLarge {
            provider,
            size,
            limit,
            ..
        } => {
            assert_eq!(provider, "aws");
            assert!(*size > *limit);
            assert_eq!(*limit, 1_048_576);
        }
        other => panic!("{other}"),
    }
    let msg = err.to_string();
    assert!(
        msg.contains("provider aws") && msg.contains("compressed with zstd"),
        "{msg}"
    );

    // Plain components just under the threshold fit; with a huge metadata they do not.
    let mut t = tcm("x".repeat(PLAIN_COMPONENTS_LIMIT - 10));
    t.metadata = "y".repeat(120_000);
    assert!(matches!(t.encode(), Err(Error::TooLarge { .. })));
}

fn base_cm() -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "aws", "namespace": "openshift-cluster-api", "labels": {
            "provider.cluster.x-k8s.io/name": "aws",
            "provider.cluster.x-k8s.io/type": "infrastructure",
            "provider.cluster.x-k8s.io/version": "v2.10.0"}},
        "data": {"metadata": METADATA},
    })
}

#[test]
fn upstream_gzip_form_is_read() {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(b"kind: A\n").unwrap();
    let mut cm = base_cm();
    cm["metadata"]["annotations"] = json!({"provider.cluster.x-k8s.io/compressed": "true"});
    cm["binaryData"] = json!({"components": B64.encode(gz.finish().unwrap())});
    let d = TransportConfigMap::decode(&cm).unwrap();
    assert_eq!(d.encoding, Encoding::Gzip);
    assert_eq!(d.content.components, "kind: A\n");
}

#[test]
fn two_payload_forms_are_refused_naming_both_keys() {
    let zstd = B64.encode(zstd::encode_all(&b"fresh: true\n"[..], 3).unwrap());
    let mut plain_and_zstd = base_cm();
    plain_and_zstd["data"]["components"] = json!("stale: true\n");
    plain_and_zstd["binaryData"] = json!({"components-zstd": zstd});
    let mut zstd_and_gzip = base_cm();
    zstd_and_gzip["data"]
        .as_object_mut()
        .unwrap()
        .remove("components");
    zstd_and_gzip["binaryData"] = json!({"components-zstd": zstd, "components": "H4sI"});
    for (cm, keys) in [
        (
            plain_and_zstd,
            "binaryData.components-zstd and data.components",
        ),
        (
            zstd_and_gzip,
            "binaryData.components-zstd and binaryData.components",
        ),
    ] {
        let err = TransportConfigMap::decode(&cm).unwrap_err().to_string();
        assert!(err.contains(keys), "{err}");
        assert!(err.contains("openshift-cluster-api/aws"), "{err}");
    }
}

#[test]
fn corrupt_payloads_are_typed_errors_naming_configmap_and_key() {
    let cases = [
        (
            json!({"components-zstd": "!!!not base64"}),
            "binaryData.components-zstd",
            "invalid base64",
        ),
        (
            json!({"components-zstd": B64.encode(b"not zstd at all")}),
            "binaryData.components-zstd",
            "zstd",
        ),
        (
            json!({"components": B64.encode(b"not gzip")}),
            "binaryData.components",
            "gzip",
        ),
    ];
    for (binary, key, what) in cases {
        let mut cm = base_cm();
        cm["binaryData"] = binary;
        let err = TransportConfigMap::decode(&cm).unwrap_err();
        match &err {
            Error::ConfigMapKey {
                configmap,
                key: k,
                message,
            } => {
                assert_eq!(configmap, "openshift-cluster-api/aws");
                assert_eq!(k, key);
                assert!(message.contains(what), "{message}");
            }
            other => panic!("{other}"),
        }
    }
}

#[test]
fn missing_parts_are_errors() {
    let mut no_components = base_cm();
    let err = TransportConfigMap::decode(&no_components)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("ConfigMap openshift-cluster-api/aws: no components"),
        "{err}"
    );

    no_components["data"]["components"] = json!("a: b\n");
    no_components["metadata"]["labels"]
        .as_object_mut()
        .unwrap()
        .remove("provider.cluster.x-k8s.io/version");
    let err = TransportConfigMap::decode(&no_components)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("label provider.cluster.x-k8s.io/version is missing"),
        "{err}"
    );

    let mut bad_type = base_cm();
    bad_type["data"]["components"] = json!("a: b\n");
    bad_type["metadata"]["labels"]["provider.cluster.x-k8s.io/type"] = json!("bootstrap");
    let err = TransportConfigMap::decode(&bad_type)
        .unwrap_err()
        .to_string();
    assert!(err.contains("\"bootstrap\""), "{err}");

    let mut no_md = base_cm();
    no_md["data"] = json!({"components": "a: b\n"});
    let err = TransportConfigMap::decode(&no_md).unwrap_err().to_string();
    assert!(err.contains("data.metadata"), "{err}");
}

#[test]
fn reference_configmaps_decode() {
    // The installer's inputs: every reference transport ConfigMap decodes, in both encodings.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures/transport-configmaps");
    if !dir.is_dir() {
        assert!(
            std::env::var("CI").map_or(true, |v| v != "true"),
            "{} missing (CI=true)",
            dir.display()
        );
        eprintln!("skipping: {} missing", dir.display());
        return;
    }
    let mut seen = 0;
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.contains("_04_cm.") {
            continue;
        }
        let text = std::fs::read_to_string(e.path()).unwrap();
        for doc in capi_manifests::yaml::parse_documents(&name, &text).unwrap() {
            let d = TransportConfigMap::decode(&doc.value).unwrap_or_else(|e| panic!("{e}"));
            let objects =
                capi_manifests::yaml::parse_objects(&name, &d.content.components).unwrap();
            assert!(objects.len() > 10, "{name}: {} objects", objects.len());
            seen += 1;
        }
    }
    assert!(seen >= 2, "decoded {seen} ConfigMaps");
}

#[test]
fn components_over_the_budget_are_refused_whatever_the_encoding() {
    use capi_manifests::Budget;
    use capi_manifests::budget::{BudgetExceeded, Limit};
    use std::io::Write;

    let budget = Budget {
        max_bytes: 64 * 1024,
        ..Budget::default()
    };
    // Zeros compress about a thousand to one: a few hundred bytes of payload ask for a megabyte.
    let bomb = vec![b'0'; 1024 * 1024];
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&bomb).unwrap();
    let gz = gz.finish().unwrap();
    let zst = zstd::encode_all(&bomb[..], 19).unwrap();
    assert!(
        gz.len() < 4096 && zst.len() < 4096,
        "{} {}",
        gz.len(),
        zst.len()
    );

    let over = |cm: &Value, key: &str| match TransportConfigMap::decode_with_budget(cm, &budget) {
        Err(Error::Budget { location, exceeded }) => {
            assert_eq!(
                location,
                format!("ConfigMap openshift-cluster-api/aws, {key}")
            );
            assert_eq!(
                exceeded,
                BudgetExceeded {
                    limit: Limit::Bytes,
                    max: 64 * 1024
                }
            );
        }
        other => panic!("{key}: {other:?}"),
    };
    let mut cm = base_cm();
    cm["binaryData"] = json!({"components-zstd": B64.encode(&zst)});
    over(&cm, "binaryData.components-zstd");
    let mut cm = base_cm();
    cm["binaryData"] = json!({"components": B64.encode(&gz)});
    over(&cm, "binaryData.components");
    let mut cm = base_cm();
    cm["data"]["components"] = json!("k: v\n".repeat(20_000));
    over(&cm, "data.components");

    // Exactly at the limit is fine.
    let mut cm = base_cm();
    let fits = "#".repeat(64 * 1024);
    cm["binaryData"] =
        json!({"components-zstd": B64.encode(zstd::encode_all(fits.as_bytes(), 3).unwrap())});
    let d = TransportConfigMap::decode_with_budget(&cm, &budget).unwrap();
    assert_eq!(d.content.components.len(), 64 * 1024);
}

#[test]
fn a_zstd_frame_costs_its_output_not_its_window() {
    use capi_manifests::Budget;
    // Frames without content size, written with a 16 MiB window: a streaming decoder allocates the
    // window before producing a byte. The decoder writes into one buffer of the budget's size instead,
    // so the window costs nothing, and more output than the budget is refused.
    let frame = |data: &str| {
        let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
        enc.include_contentsize(false).unwrap();
        enc.window_log(24).unwrap();
        std::io::Write::write_all(&mut enc, data.as_bytes()).unwrap();
        enc.finish().unwrap()
    };
    let budget = Budget {
        max_bytes: 1024 * 1024,
        ..Budget::default()
    };
    let small = "x".repeat(100);
    let mut cm = base_cm();
    cm["binaryData"] = json!({"components-zstd": B64.encode(frame(&small))});
    assert_eq!(
        TransportConfigMap::decode_with_budget(&cm, &budget)
            .unwrap()
            .content
            .components,
        small
    );
    cm["binaryData"] = json!({"components-zstd": B64.encode(frame(&"y".repeat(2 * 1024 * 1024)))});
    assert!(
        matches!(
            TransportConfigMap::decode_with_budget(&cm, &budget),
            Err(Error::Budget { .. })
        ),
        "{:?}",
        TransportConfigMap::decode_with_budget(&cm, &budget)
    );
}
