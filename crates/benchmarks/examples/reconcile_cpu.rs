//! CPU time of each pure step of a reconcile, per provider of the fixtures (issue 22), and what the
//! stored form of a new revision costs in time, memory and size (issue 20 item 3). Measured here,
//! never asserted in tests.
//!
//! ```text
//! cargo run --release -p capi-benchmarks --example reconcile_cpu [-- ROUNDS]
//! ```
//!
//! Each step is the installer's own function, run ROUNDS times (default 5) on this thread, after one
//! round that warms caches; the figure is the median of the thread's CPU time
//! (`CLOCK_THREAD_CPUTIME_ID`), which other work on the machine changes little. The steps:
//!
//! - decode: the transport ConfigMap as the watch cache holds it → the components (ConfigMap to JSON,
//!   base64, zstd) — `source::configmap::payload`;
//! - prepare: render, bundle policy, digest, plan — `prepare::prepare`, of a text not parsed before;
//! - prepare again: the same, of a text the context's `ParseMemo` parsed before (every later pass);
//! - compress: the stored form of a new revision — `revision::compress`;
//! - decompress: reading a revision back for a rollback — `revision::decompress`.
//!
//! For compress also the peak memory it adds (VmHWM, reset through `/proc/self/clear_refs` before each
//! run, over VmRSS before it; zstd allocates with C's allocator, which a Rust allocator does not see)
//! and the size of the result. The last row is the byte-densest bundle the resource budget accepts
//! (`hostile_rss`'s "most bytes accepted": 4 MiB of strings in one object).

use std::time::Duration;

use anyhow::{Context, Result};
use capi_apply::KindResolver;
use capi_installer_controller::prepare::{self, RenderContext};
use capi_installer_controller::revision;
use capi_installer_controller::source::{Target, configmap};
use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::{Value, json};
use test_support::{AWS_CM, AZURE_CM, CORE_CM, GCP_CM, NS, VSPHERE_CM, fixture_configmap};

fn main() -> Result<()> {
    let rounds: usize = std::env::args()
        .nth(1)
        .map(|r| r.parse().context("ROUNDS"))
        .transpose()?
        .unwrap_or(5);
    let ctx = test_support::render_context();
    let mut resolver = KindResolver::builtin();
    let mut sources: Vec<(String, Value)> = [CORE_CM, AWS_CM, AZURE_CM, GCP_CM, VSPHERE_CM]
        .iter()
        .map(|f| (f.to_string(), fixture_configmap(f)))
        .collect();
    sources.push(("most bytes accepted".into(), densest_bytes(&sources[1].1)?));

    let mut candidates: Vec<(String, Vec<u8>)> = Vec::new();
    println!(
        "| source | components | decode | prepare | prepare again | compress | decompress | revision size | compress peak |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for (name, value) in &sources {
        // As the watch cache holds it: a typed ConfigMap, turned back into JSON by the catalog.
        let cm: ConfigMap = serde_json::from_value(value.clone())?;
        let target = target(&cm).with_context(|| format!("{name}: labels"))?;
        let as_json = || {
            let mut v = serde_json::to_value(&cm).expect("a ConfigMap serializes");
            v["apiVersion"] = json!("v1");
            v["kind"] = json!("ConfigMap");
            v
        };
        let decode = cpu(rounds, || configmap::payload(&as_json()).expect("decodes"));
        let payload = configmap::payload(&as_json()).expect("decodes");
        let prepared = match prepare::prepare(&payload, &target, &ctx, &resolver) {
            Ok(prepared) => prepared,
            Err(e) => {
                println!("| {} | not prepared: {e} |", short(name));
                continue;
            }
        };
        // A first plan of the text (each round with a memo of its own), then a plan of a text
        // planned before (the memo the installer's passes share: `ParseMemo`).
        let prepare = cpu(rounds, || {
            let first = RenderContext {
                parsed: Default::default(),
                ..ctx.clone()
            };
            prepare::prepare(&payload, &target, &first, &resolver).expect("prepares")
        });
        let again = cpu(rounds, || {
            prepare::prepare(&payload, &target, &ctx, &resolver).expect("prepares")
        });
        let objects = || prepared.plan.objects().map(|o| &o.object);
        let compress = cpu(rounds, || revision::compress(objects()));
        let stored = revision::compress(objects());
        let decompress = cpu(rounds, || {
            revision::decompress("revision", &stored).expect("decompresses")
        });
        let peak = peak_kib(|| revision::compress(objects()))?;
        println!(
            "| {} | {:.2} MB | {} | {} | {} | {} | {} | {:.0} kB | {:.1} MiB |",
            short(name),
            payload.components.len() as f64 / 1e6,
            ms(decode),
            ms(prepare),
            ms(again),
            ms(compress),
            ms(decompress),
            stored.len() as f64 / 1e3,
            peak as f64 / 1024.0
        );
        candidates.push((short(name), text(objects())));
        // Later providers may use the kinds of earlier ones, as in a cluster.
        for o in prepared
            .plan
            .objects()
            .filter(|o| o.key.kind == "CustomResourceDefinition")
        {
            let _ = resolver.insert_crd(&o.object);
        }
    }
    if std::env::var_os("COMPRESSION_CANDIDATES").is_some() {
        compare_settings(rounds, &candidates)?;
    }
    Ok(())
}

/// zstd settings a revision could be compressed with: (name, level, window log, hash log, chain log);
/// 0 leaves a parameter to the level.
const SETTINGS: [(&str, i32, u32, u32, u32); 6] = [
    ("level 19", 19, 0, 0, 0),
    ("level 19, tables 2^20", 19, 20, 20, 20),
    ("level 19, tables 2^18", 19, 18, 18, 18),
    ("level 12, tables 2^20", 12, 20, 20, 20),
    ("level 9", 9, 0, 0, 0),
    ("level 3", 3, 0, 0, 0),
];

/// Each candidate setting on the stored text of each source: size, CPU time, peak memory.
fn compare_settings(rounds: usize, texts: &[(String, Vec<u8>)]) -> Result<()> {
    println!();
    println!(
        "| setting | {} |",
        texts
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>()
            .join(" | ")
    );
    println!("|---|{}", "---|".repeat(texts.len()));
    for (name, level, window, hash, chain) in SETTINGS {
        let compress = |text: &[u8]| -> Vec<u8> {
            let mut c = zstd::bulk::Compressor::new(level).expect("a compressor");
            use zstd::zstd_safe::CParameter;
            for (p, v) in [
                (CParameter::WindowLog(window), window),
                (CParameter::HashLog(hash), hash),
                (CParameter::ChainLog(chain), chain),
            ] {
                if v != 0 {
                    c.set_parameter(p).expect("a valid parameter");
                }
            }
            c.compress(text).expect("compresses")
        };
        let cells: Vec<String> = texts
            .iter()
            .map(|(_, text)| {
                let size = compress(text).len();
                let took = cpu(rounds, || compress(text));
                let peak = peak_kib(|| compress(text)).unwrap_or_default();
                format!(
                    "{:.0} kB, {}, {:.1} MiB",
                    size as f64 / 1e3,
                    ms(took),
                    peak as f64 / 1024.0
                )
            })
            .collect();
        println!("| {name} | {} |", cells.join(" | "));
    }
    Ok(())
}

/// What [`revision::compress`] compresses: the objects as JSON documents.
fn text<'a>(objects: impl IntoIterator<Item = &'a kube::api::DynamicObject>) -> Vec<u8> {
    let mut text = Vec::new();
    for (i, o) in objects.into_iter().enumerate() {
        if i > 0 {
            text.extend_from_slice(b"\n---\n");
        }
        serde_json::to_writer(&mut text, &o).expect("an object serializes");
    }
    text
}

fn short(name: &str) -> String {
    name.trim_start_matches("0000_30_cluster-api_04_cm.")
        .trim_end_matches(".yaml")
        .to_string()
}

fn target(cm: &ConfigMap) -> Option<Target> {
    let source = configmap::candidate(cm)?;
    Some(Target {
        clusterctl_label: source.provider_type.clusterctl_label(&source.name),
        source,
    })
}

/// The aws ConfigMap with hostile_rss's "most bytes accepted" components: 4 MiB of strings in one
/// object, zstd-compressed as manifests-gen would.
fn densest_bytes(aws: &Value) -> Result<Value> {
    let text = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: hostile-bytes, namespace: {NS}}}\ndata:\n{}",
        (0..64)
            .map(|i| format!("  k{i}: {}\n", "y".repeat(64 * 1024 - 16)))
            .collect::<String>()
    );
    let compressed = capi_manifests::transport::compress_zstd(text.as_bytes())?;
    let mut cm = aws.clone();
    let data = cm["data"].as_object_mut().context("data")?;
    data.remove("components");
    cm["binaryData"] = json!({
        "components-zstd": base64::Engine::encode(&base64::engine::general_purpose::STANDARD, compressed)
    });
    Ok(cm)
}

/// The median CPU time of this thread for `step`, over `rounds` runs after one that warms caches.
fn cpu<T>(rounds: usize, mut step: impl FnMut() -> T) -> Duration {
    drop(step());
    let mut times: Vec<Duration> = (0..rounds.max(1))
        .map(|_| {
            let start = thread_cpu();
            let out = step();
            let took = thread_cpu() - start;
            drop(out);
            took
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

fn thread_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// How far above the resident memory before it the peak rose while `step` ran, in KiB.
fn peak_kib<T>(step: impl FnOnce() -> T) -> Result<u64> {
    // Freed pages back to the system first, so the step's allocations show as growth.
    // SAFETY: malloc_trim only returns unused pages of the allocator's arenas.
    unsafe { libc::malloc_trim(0) };
    let pid = std::process::id();
    let (before, _) = test_support::bench::proc_status(pid)?;
    // "5" resets VmHWM to the current RSS (Linux 4.0+).
    std::fs::write("/proc/self/clear_refs", "5").context("resetting VmHWM")?;
    let out = step();
    let (_, peak) = test_support::bench::proc_status(pid)?;
    drop(out);
    Ok(peak.saturating_sub(before))
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}
