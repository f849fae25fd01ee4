//! What the installer's watch of CustomResourceDefinitions costs (issue 50): measured here, never
//! asserted in tests.
//!
//! ```text
//! cargo run --release -p capi-benchmarks --example crd_cache_cost
//! ```
//!
//! The installer watches every CRD of the cluster (the applier judges its own CRDs' changes, the
//! planner claims names against everyone's). Its watch cache keeps a slim copy of each (`slim`: the
//! labels, a digest of our managed fields, the group, the accepted names, each version's name,
//! `served` and `storage`: what readiness, CRD safety and the name claims read), never the schema;
//! a list or a relist still sends and parses each whole object before it is slimmed. A watch of
//! metadata alone would not do: the group, the names and the versions are `spec` and `status`.
//!
//! For the CRDs of each fixture provider, as the installer applies them (planned by `prepare`),
//! prints their number, the JSON size of the whole objects (what a list transfers and parses, a live
//! CRD adds its `status` and `managedFields`) and of their slim copies (what the cache holds), and
//! the heap the whole objects take once parsed (what a list's page holds before each is slimmed) and
//! the heap of the slim copies (the cache's form), each measured by the allocator's count of bytes in
//! use before and after building them (the sum of what was asked of the allocator, without its own
//! overhead).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, Result};
use capi_apply::slim::Slimmer;
use capi_apply::{DEFAULT_HASH_ANNOTATION, KindResolver};
use capi_installer_controller::prepare;
use capi_installer_controller::source::{Target, configmap};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::DynamicObject;
use serde_json::json;
use test_support::{AWS_CM, AZURE_CM, CORE_CM, GCP_CM, VSPHERE_CM, fixture_configmap};

/// The system allocator, counting the bytes in use: the heap a set of values takes, without a
/// process's noise.
struct Counting;

static IN_USE: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        IN_USE.fetch_add(layout.size(), Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        IN_USE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn main() -> Result<()> {
    let ctx = test_support::render_context();
    let slimmer = Slimmer {
        field_manager: capi_installer_controller::names::FIELD_MANAGER.to_owned(),
        annotations: vec![DEFAULT_HASH_ANNOTATION.to_owned()],
    };
    let mut resolver = KindResolver::builtin();
    println!(
        "| provider | CRDs | whole (JSON) | whole, parsed, on the heap | slim (JSON) | slim copies on the heap |"
    );
    println!("|---|---|---|---|---|---|");
    let mut totals = (0, 0, 0, 0, 0);
    for fixture in [CORE_CM, AWS_CM, AZURE_CM, GCP_CM, VSPHERE_CM] {
        let cm: ConfigMap = serde_json::from_value(fixture_configmap(fixture))?;
        let source = configmap::candidate(&cm).context("a provider's labels")?;
        let target = Target {
            clusterctl_label: source.provider_type.clusterctl_label(&source.name),
            source,
        };
        let mut value = serde_json::to_value(&cm)?;
        value["apiVersion"] = json!("v1");
        value["kind"] = json!("ConfigMap");
        let payload = configmap::payload(&value)?;
        let prepared = prepare::prepare(&payload, &target, &ctx, &resolver)
            .with_context(|| format!("{fixture}: prepare"))?;
        let crds: Vec<&DynamicObject> = prepared
            .plan
            .objects()
            .filter(|o| o.key.kind == "CustomResourceDefinition")
            .map(|o| &o.object)
            .collect();
        let whole: usize = crds.iter().map(|o| json_len(o)).sum();
        // As a list's page holds them before each is slimmed: parsed from the JSON.
        let texts: Vec<Vec<u8>> = crds
            .iter()
            .map(serde_json::to_vec)
            .collect::<Result<_, _>>()?;
        let before = IN_USE.load(Ordering::Relaxed);
        let parsed: Vec<DynamicObject> = texts
            .iter()
            .map(|t| serde_json::from_slice(t))
            .collect::<Result<_, _>>()?;
        let whole_heap = IN_USE.load(Ordering::Relaxed).saturating_sub(before);
        drop(parsed);
        let before = IN_USE.load(Ordering::Relaxed);
        let slim: Vec<DynamicObject> = crds.iter().map(|o| slimmer.slim(o)).collect();
        let heap = IN_USE.load(Ordering::Relaxed).saturating_sub(before);
        let slim_json: usize = slim.iter().map(json_len).sum();
        println!(
            "| {} | {} | {} | {} | {} | {} |",
            target.source.name,
            crds.len(),
            kib(whole),
            kib(whole_heap),
            kib(slim_json),
            kib(heap)
        );
        totals = (
            totals.0 + crds.len(),
            totals.1 + whole,
            totals.2 + whole_heap,
            totals.3 + slim_json,
            totals.4 + heap,
        );
        drop(slim);
        for crd in crds {
            let _ = resolver.insert_crd(crd);
        }
    }
    println!(
        "| all five | {} | {} | {} | {} | {} |",
        totals.0,
        kib(totals.1),
        kib(totals.2),
        kib(totals.3),
        kib(totals.4)
    );
    Ok(())
}

fn json_len(o: &DynamicObject) -> usize {
    serde_json::to_vec(o).map(|v| v.len()).unwrap_or_default()
}

fn kib(bytes: usize) -> String {
    format!("{:.1} KiB", bytes as f64 / 1024.0)
}
