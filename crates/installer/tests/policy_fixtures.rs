//! Every real provider bundle of `../shared/fixtures/transport-configmaps` renders, passes the bundle
//! policy with its default (empty) configuration, and plans: the policy refuses nothing that real
//! providers ship. And the RBAC ceiling the release ships is exactly what those bundles grant: the
//! derivation is printed (`-- --nocapture`), with the rules to paste into
//! `manifests/0000_30_capi-installer_03_ceiling.yaml` when a fixture changes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use capi_apply::KindResolver;
use capi_installer_controller::policy::ceiling::{self, Coverage, Grants, Names, Scope, Triple};
use capi_installer_controller::policy::{self, Ceiling, PolicyConfig, Protected};
use capi_installer_controller::prepare::{self, RenderContext, Rendered};
use capi_installer_controller::source::{Target, configmap};
use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::Value;

const NS: &str = "openshift-cluster-api";

/// One real bundle, rendered as the installer renders it.
struct Real {
    path: PathBuf,
    name: String,
    rendered: Rendered,
    images: BTreeMap<String, String>,
    /// Its `cluster.x-k8s.io/provider` label.
    provider: String,
}

/// Every transport ConfigMap of the fixtures, rendered; `None` (after saying why) without fixtures.
fn real_bundles() -> Option<Vec<Real>> {
    let dir = control_plane::shared_fixture("transport-configmaps")?;
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains("_04_cm."))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let value: Value = serde_saphyr::from_str(&text).unwrap();
        let cm: ConfigMap = serde_json::from_value(value.clone()).unwrap();
        let name = cm.metadata.name.clone().unwrap();
        let source = configmap::candidate(&cm)
            .unwrap_or_else(|| panic!("{} declares no provider", path.display()));
        let target = Target {
            clusterctl_label: source.provider_type.clusterctl_label(&source.name),
            source,
        };
        let images: BTreeMap<String, String> = [
            "cluster-capi-controllers".to_string(),
            format!("{name}-cluster-api-controllers"),
        ]
        .into_iter()
        .map(|k| (k, "quay.io/example/image@sha256:0".to_string()))
        .collect();
        let ctx = RenderContext {
            namespace: NS.into(),
            images: images.clone(),
            substitutions: Default::default(),
            ..Default::default()
        };
        let rendered = configmap::payload(&value)
            .map_err(|e| e.to_string())
            .and_then(|payload| prepare::render(&payload, &target, &ctx).map_err(|e| e.to_string()))
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        out.push(Real {
            path,
            name,
            rendered,
            images,
            provider: target.clusterctl_label.clone(),
        });
    }
    Some(out)
}

#[test]
fn every_real_bundle_passes_the_policy() {
    let Some(bundles) = real_bundles() else {
        return;
    };
    let mut seen = BTreeSet::new();
    let mut crd_groups = BTreeSet::new();
    for real in bundles {
        let config = PolicyConfig::new(
            NS,
            Protected::installer(NS, "capi-installer-inventory", "capi-installer-leader"),
        );
        let payload: BTreeSet<&str> = real.images.values().map(String::as_str).collect();
        let among = policy::Among::alone(&real.provider);
        if let Err(v) = policy::check(&real.rendered.bundle(), &config, &payload, &among) {
            panic!("{}: {v}", real.path.display());
        }
        for input in &real.rendered.inputs {
            if input.object.types.as_ref().unwrap().kind == "CustomResourceDefinition" {
                crd_groups.insert(
                    input.object.data["spec"]["group"]
                        .as_str()
                        .unwrap()
                        .to_string(),
                );
            }
        }
        let plan = capi_apply::plan(real.rendered.inputs, &KindResolver::builtin())
            .unwrap_or_else(|e| panic!("{}: {e}", real.path.display()));
        assert!(!plan.is_empty());
        seen.insert(real.name);
    }
    assert_eq!(
        seen,
        ["aws", "azure", "cluster-api", "gcp", "vsphere"]
            .map(String::from)
            .into()
    );
    // The groups docs/maintainers/bundles.md lists as what real providers need.
    assert_eq!(
        crd_groups,
        [
            "addons.cluster.x-k8s.io",
            "bootstrap.cluster.x-k8s.io",
            "cluster.x-k8s.io",
            "controlplane.cluster.x-k8s.io",
            "infrastructure.cluster.x-k8s.io",
            "ipam.cluster.x-k8s.io",
            "runtime.cluster.x-k8s.io",
        ]
        .map(String::from)
        .into()
    );
}

/// Where a derived grant came from: `aws ClusterRole capa-manager-role rules[3]`.
type Provenance = BTreeMap<(Scope, Triple), BTreeSet<String>>;

/// The ceiling the real bundles imply: every rule of their ClusterRoles (cluster-wide) and Roles (in
/// the namespace), and `escalate` on the names of their aggregated ClusterRoles.
fn derive(bundles: &[Real]) -> (Ceiling, Provenance) {
    let mut derived = Ceiling::default();
    let mut from = Provenance::new();
    for real in bundles {
        for (input, origin) in real.rendered.inputs.iter().zip(&real.rendered.origins) {
            let kind = input.object.types.as_ref().unwrap().kind.as_str();
            let name = input.object.metadata.name.clone().unwrap_or_default();
            let data = &input.object.data;
            let (scope, grants) = match kind {
                "ClusterRole" => (Scope::Cluster, &mut derived.cluster),
                "Role" => (Scope::Namespaced, &mut derived.namespaced),
                _ => continue,
            };
            let mut add = |triple: Triple, names: Names, at: String| {
                from.entry((scope, triple.clone()))
                    .or_default()
                    .insert(format!(
                        "{} document {} {kind} {name} {at}",
                        real.name, origin.document
                    ));
                grants.insert(triple, names);
            };
            if data.get("aggregationRule").is_some_and(|r| !r.is_null()) {
                add(
                    Triple::new("rbac.authorization.k8s.io", "clusterroles", "escalate"),
                    Names::Only([name.clone()].into()),
                    "(aggregated: the installer needs escalate on it)".into(),
                );
            }
            for (i, rule) in data["rules"].as_array().into_iter().flatten().enumerate() {
                let one = Grants::of_rules(Some(&Value::Array(vec![rule.clone()])));
                for (triple, names) in one.iter() {
                    add(triple.clone(), names.clone(), format!("rules[{i}]"));
                }
            }
        }
    }
    (derived, from)
}

/// Leaves out what another entry of the same set already covers (a resource under a `*` of its group)
/// and, from the namespaced set, what the cluster-wide set covers: the rules the manifest ships.
fn minimal(ceiling: &Ceiling) -> Ceiling {
    let reduce = |grants: &Grants, also: Option<&Grants>| {
        let mut out = Grants::default();
        for (triple, names) in grants.iter() {
            let wanted: BTreeSet<&str> = match names {
                Names::Any => BTreeSet::new(),
                Names::Only(n) => n.iter().map(String::as_str).collect(),
            };
            let star = Triple::new(&triple.group, "*", &triple.verb);
            let under_star = triple.resource != "*"
                && grants.covers(&star, &BTreeSet::new()) == Coverage::Inside;
            let elsewhere = also.is_some_and(|a| a.covers(triple, &wanted) == Coverage::Inside);
            if !under_star && !elsewhere {
                out.insert(triple.clone(), names.clone());
            }
        }
        out
    };
    Ceiling {
        cluster: reduce(&ceiling.cluster, None),
        namespaced: reduce(&ceiling.namespaced, Some(&ceiling.cluster)),
    }
}

/// The entries of `inner` that `outer` does not cover in `scope`, with their names.
fn not_covered(outer: &Ceiling, scope: Scope, inner: &Grants) -> Vec<(Scope, Triple, String)> {
    inner
        .iter()
        .filter_map(|(triple, names)| {
            let wanted: BTreeSet<&str> = match names {
                Names::Any => BTreeSet::new(),
                Names::Only(n) => n.iter().map(String::as_str).collect(),
            };
            (outer.covers(scope, triple, &wanted) != Coverage::Inside)
                .then(|| (scope, triple.clone(), format!("{names:?}")))
        })
        .collect()
}

#[test]
fn the_shipped_ceiling_is_the_union_of_what_real_bundles_grant() {
    let Some(bundles) = real_bundles() else {
        return;
    };
    let (derived, from) = derive(&bundles);
    println!(
        "Derivation of the provider RBAC ceiling from ../shared/fixtures/transport-configmaps:"
    );
    for ((scope, triple), sources) in &from {
        println!("  {triple} {scope}");
        for s in sources {
            println!("      <- {s}");
        }
    }
    let minimal = minimal(&derived);
    for (label, grants) in [
        (ceiling::CLUSTER, &minimal.cluster),
        (ceiling::NAMESPACED, &minimal.namespaced),
    ] {
        println!(
            "\nrules of the ClusterRole labelled {}: {label}:",
            ceiling::LABEL
        );
        println!(
            "{}",
            serde_saphyr::to_string(&grants.to_rules()).expect("rules serialize")
        );
    }

    let shipped = Ceiling::release();
    // Every grant of a real bundle is inside the shipped ceiling...
    let mut missing = not_covered(&shipped, Scope::Cluster, &derived.cluster);
    missing.extend(not_covered(
        &shipped,
        Scope::Namespaced,
        &derived.namespaced,
    ));
    let missing: Vec<String> = missing
        .into_iter()
        .map(|(scope, triple, names)| {
            let sources = from
                .get(&(scope, triple.clone()))
                .cloned()
                .unwrap_or_default();
            let sources: Vec<String> = sources.into_iter().collect();
            format!(
                "{triple} {scope} names {names}, granted by {}",
                sources.join(", ")
            )
        })
        .collect();
    assert!(
        missing.is_empty(),
        "real bundles grant triples outside the shipped ceiling (manifests/0000_30_capi-installer_03_ceiling.yaml), one per line:\n{}",
        missing.join("\n")
    );
    // ...and the shipped ceiling grants nothing that no real bundle grants.
    let mut extra = not_covered(&derived, Scope::Cluster, &shipped.cluster);
    extra.extend(not_covered(
        &derived,
        Scope::Namespaced,
        &shipped.namespaced,
    ));
    let extra: Vec<String> = extra
        .into_iter()
        .map(|(scope, triple, names)| format!("{triple} {scope} names {names}"))
        .collect();
    assert!(
        extra.is_empty(),
        "the shipped ceiling grants triples no real bundle grants, one per line:\n{}",
        extra.join("\n")
    );
    // The cluster-wide and namespaced sets are judged apart: leader election's Lease deletion is
    // granted in the namespace only.
    let delete_leases = Triple::new("coordination.k8s.io", "leases", "delete");
    assert_eq!(
        shipped.covers(Scope::Cluster, &delete_leases, &BTreeSet::new()),
        Coverage::Outside
    );
}
