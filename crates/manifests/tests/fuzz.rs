//! Bounded fuzzing of the two readers of untrusted input: the transport ConfigMap decoder and the YAML
//! reader. Each case must end in a value or an error: a panic fails, and so does a peak of heap memory
//! above what the budget allows ([`memory_bound`]), measured by a counting allocator.
//!
//! `cargo test` runs 128 cases per target (seconds); `make fuzz` runs many more (`FUZZ_CASES`,
//! default 20000, in release mode). Inputs are generated, not just random bytes: YAML trees with anchors and
//! aliases (alias bombs included), deep nesting, many documents, and compressed payloads that inflate
//! far past the budget.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::Write;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use capi_manifests::budget::Budget;
use capi_manifests::transport::TransportConfigMap;
use capi_manifests::yaml::parse_documents_with_budget;
use proptest::prelude::*;
use serde_json::{Value, json};

/// Counts the heap bytes each thread holds, and the peak since [`measure`] started.
struct Counting;

thread_local! {
    static CURRENT: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn add(delta: isize) {
    // `try_with`: the allocator also runs while a thread's locals are torn down.
    let _ = CURRENT.try_with(|c| {
        let now = c.get() + delta;
        c.set(now);
        let _ = PEAK.try_with(|p| p.set(p.get().max(now)));
    });
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            add(layout.size() as isize);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        add(-(layout.size() as isize));
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            add(new_size as isize - layout.size() as isize);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Runs `f` and returns its result and the peak of heap bytes it added on this thread.
fn measure<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let start = CURRENT.with(Cell::get);
    PEAK.with(|p| p.set(start));
    let out = f();
    let peak = PEAK.with(Cell::get) - start;
    (out, peak.max(0) as usize)
}

/// The budget the fuzz targets run under: small, so that a case that escapes it shows at once.
fn budget() -> Budget {
    Budget {
        max_bytes: 64 * 1024,
        max_nodes: 4_000,
        max_object_nodes: 4_000,
        max_alias_nodes: 1_000,
        max_depth: 32,
    }
}

/// [`Budget::memory_bound`]: everything the decoders allocate is Rust's heap but libzstd's context,
/// which the bound's fixed part covers.
fn memory_bound(b: &Budget) -> usize {
    b.memory_bound()
}

fn check_yaml(text: &str) -> Result<(), TestCaseError> {
    let b = budget();
    let (result, peak) = measure(|| parse_documents_with_budget("fuzz", text, &b));
    prop_assert!(
        peak <= memory_bound(&b),
        "peak {peak} bytes over the bound {} ({} input bytes, result {:?})",
        memory_bound(&b),
        text.len(),
        result.as_ref().map(Vec::len)
    );
    if let Ok(docs) = result {
        prop_assert!(docs.iter().all(|d| !d.value.is_null()));
    }
    Ok(())
}

fn configmap(binary: Option<(&str, Vec<u8>)>, plain: Option<String>) -> Value {
    let mut cm = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "fuzz", "namespace": "openshift-cluster-api", "labels": {
            "provider.cluster.x-k8s.io/name": "fuzz",
            "provider.cluster.x-k8s.io/type": "infrastructure",
            "provider.cluster.x-k8s.io/version": "v1.0.0"}},
        "data": {"metadata": "apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3\n"},
    });
    if let Some((key, bytes)) = binary {
        cm["binaryData"] = json!({ key: B64.encode(bytes) });
    }
    if let Some(text) = plain {
        cm["data"]["components"] = json!(text);
    }
    cm
}

fn check_configmap(cm: &Value) -> Result<(), TestCaseError> {
    let b = budget();
    let (result, peak) = measure(|| {
        TransportConfigMap::decode_with_budget(cm, &b).and_then(|d| {
            parse_documents_with_budget("fuzz", &d.content.components, &b).map(|docs| docs.len())
        })
    });
    prop_assert!(
        peak <= memory_bound(&b),
        "peak {peak} bytes over the bound {} (result {result:?})",
        memory_bound(&b)
    );
    Ok(())
}

/// A YAML node as text at `indent`: scalars, flow and block collections, anchors and aliases to
/// earlier anchors (`&a0`, `*a0`, ...).
fn yaml_tree() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        "[a-z]{0,12}".prop_map(|s| s),
        any::<i64>().prop_map(|n| n.to_string()),
        Just("~".to_string()),
        Just("'quoted: yes'".to_string()),
        (0u8..6).prop_map(|i| format!("*a{i}")),
        ("[a-z]{1,6}", 1usize..20_000).prop_map(|(s, n)| s.repeat(n)),
    ];
    leaf.prop_recursive(8, 256, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(|v| format!("[{}]", v.join(", "))),
            prop::collection::vec(("[a-z]{1,8}", inner.clone()), 0..6).prop_map(|kv| {
                let items: Vec<String> = kv.into_iter().map(|(k, v)| format!("{k}: {v}")).collect();
                format!("{{{}}}", items.join(", "))
            }),
            ((0u8..6), inner).prop_map(|(i, v)| format!("&a{i} {v}")),
        ]
    })
}

/// Cases per target: 128 in `cargo test` (a few seconds), `FUZZ_CASES` in `make fuzz`.
fn fuzz_cases() -> u32 {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(128)
}

/// The classic bomb: each anchor holds `width` aliases of the one before.
fn alias_bomb(levels: usize, width: usize) -> String {
    let mut s = String::from("a0: &a0 [x, y]\n");
    for i in 1..=levels {
        let refs = vec![format!("*a{}", i - 1); width].join(", ");
        s.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: fuzz_cases(),
        // A failing case is printed with its minimal input; nothing is written next to the sources.
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn yaml_reader_survives_arbitrary_text(bytes in prop::collection::vec(any::<u8>(), 0..4096)) {
        check_yaml(&String::from_utf8_lossy(&bytes))?;
    }

    #[test]
    fn yaml_reader_survives_generated_documents(
        docs in prop::collection::vec(yaml_tree(), 1..12),
        block in any::<bool>(),
    ) {
        let text = if block {
            docs.iter().map(|d| format!("root: {d}\n")).collect::<Vec<_>>().join("---\n")
        } else {
            docs.join("\n---\n")
        };
        check_yaml(&text)?;
    }

    #[test]
    fn yaml_reader_survives_bombs_and_depth(
        levels in 1usize..40,
        width in 2usize..10,
        depth in 1usize..5_000,
        copies in 1usize..30,
    ) {
        check_yaml(&alias_bomb(levels, width))?;
        check_yaml(&format!("{}x{}", "[".repeat(depth), "]".repeat(depth)))?;
        check_yaml(&format!("{}x\n", (0..depth.min(300)).map(|i| format!("{}k:\n", "  ".repeat(i))).collect::<String>()))?;
        check_yaml(&vec![alias_bomb(levels.min(8), width); copies].join("---\n"))?;
    }

    #[test]
    fn decoder_survives_arbitrary_payloads(
        key in prop_oneof![Just("components-zstd"), Just("components")],
        bytes in prop::collection::vec(any::<u8>(), 0..2048),
    ) {
        check_configmap(&configmap(Some((key, bytes)), None))?;
    }

    #[test]
    fn decoder_survives_compression_bombs(
        size in 1usize..(8 * 1024 * 1024),
        fill in any::<u8>(),
        gzip in any::<bool>(),
    ) {
        let data = vec![fill; size];
        let (key, bytes) = if gzip {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(&data).unwrap();
            ("components", gz.finish().unwrap())
        } else {
            ("components-zstd", zstd::encode_all(&data[..], 1).unwrap())
        };
        drop(data);
        check_configmap(&configmap(Some((key, bytes)), None))?;
    }

    #[test]
    fn decoder_survives_corrupted_frames(
        docs in prop::collection::vec(yaml_tree(), 1..6),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..8),
        window_log in 10u32..28,
    ) {
        let text = docs.join("\n---\n");
        let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
        enc.include_contentsize(false).unwrap();
        enc.window_log(window_log).unwrap();
        enc.write_all(text.as_bytes()).unwrap();
        let mut frame = enc.finish().unwrap();
        for (at, byte) in flips {
            let i = at.index(frame.len());
            frame[i] ^= byte;
        }
        check_configmap(&configmap(Some(("components-zstd", frame)), None))?;
        check_configmap(&configmap(None, Some(text)))?;
    }
}

/// The measurement behind BENCHMARKS.md's "heap of decode + parse" table: the real core provider under
/// the default budget, and the worst inputs of the fuzz targets under it.
#[test]
fn real_core_provider_fits_the_default_budget() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures/transport-configmaps/0000_30_cluster-api_04_cm.core-cluster-api.yaml");
    let Ok(text) = std::fs::read_to_string(&path) else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "fixture {} is missing (CI=true)",
            path.display()
        );
        eprintln!("skipping: fixture {} is missing", path.display());
        return;
    };
    let cm: Value = serde_saphyr::from_str(&text).unwrap();
    let b = Budget::default();
    let (docs, peak) = measure(|| {
        let d = TransportConfigMap::decode_with_budget(&cm, &b).unwrap();
        parse_documents_with_budget("core", &d.content.components, &b).unwrap()
    });
    assert_eq!(docs.len(), 25);
    eprintln!(
        "core provider: decode + parse peak heap {:.1} MiB (bound for the default budget {:.1} MiB)",
        peak as f64 / 1048576.0,
        memory_bound(&b) as f64 / 1048576.0
    );
    assert!(peak <= memory_bound(&b));
}

/// Every object of every real bundle (transport ConfigMaps and profiles) fits half the per-object
/// limit: the limit leaves providers room to grow (the largest, AWS's `awsmanagedcontrolplanes` CRD,
/// has 6,415 nodes of the 20,000).
#[test]
fn real_objects_fit_the_object_limit_with_room() {
    let fixtures =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures");
    let dir = fixtures.join("transport-configmaps");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "fixture {} is missing (CI=true)",
            dir.display()
        );
        eprintln!("skipping: fixture {} is missing", dir.display());
        return;
    };
    let mut bundles = Vec::new();
    for e in entries.flatten() {
        let text = std::fs::read_to_string(e.path()).unwrap();
        let cm = capi_manifests::yaml::parse_documents("fixture", &text).unwrap()[0]
            .value
            .clone();
        if cm["kind"] == "ConfigMap" {
            let decoded = TransportConfigMap::decode(&cm).unwrap();
            bundles.push((e.path(), decoded.content.components));
        }
    }
    for provider in ["aws", "core"] {
        let path = fixtures
            .join("profiles")
            .join(provider)
            .join("manifests.yaml");
        bundles.push((path.clone(), std::fs::read_to_string(&path).unwrap()));
    }
    assert!(bundles.len() >= 7, "{bundles:?}");
    let default = Budget::default();
    let half = Budget {
        max_object_nodes: default.max_object_nodes / 2,
        ..default
    };
    for (path, components) in bundles {
        if let Err(e) = parse_documents_with_budget("real", &components, &half) {
            panic!("{}: {e}", path.display());
        }
    }
}
