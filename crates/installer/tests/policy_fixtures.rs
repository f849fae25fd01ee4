//! Every real provider bundle of `../shared/fixtures/transport-configmaps` renders, passes the bundle
//! policy with its default (empty) configuration, and plans: the policy refuses nothing that real
//! providers ship.

use std::collections::{BTreeMap, BTreeSet};

use capi_apply::KindResolver;
use capi_installer_controller::policy::{self, PolicyConfig, Protected};
use capi_installer_controller::prepare::{self, RenderContext};
use capi_installer_controller::source::{Target, configmap};
use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::Value;

const NS: &str = "openshift-cluster-api";

#[test]
fn every_real_bundle_passes_the_policy() {
    let Some(dir) = control_plane::shared_fixture("transport-configmaps") else {
        return;
    };
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains("_04_cm."))
        .collect();
    files.sort();
    let mut seen = BTreeSet::new();
    let mut crd_groups = BTreeSet::new();
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
            images,
            substitutions: Default::default(),
            ..Default::default()
        };
        let rendered = configmap::payload(&value)
            .map_err(|e| e.to_string())
            .and_then(|payload| prepare::render(&payload, &target, &ctx).map_err(|e| e.to_string()))
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let config = PolicyConfig::new(
            NS,
            Protected::installer(NS, "capi-installer-inventory", "capi-installer-leader"),
        );
        if let Err(v) = policy::check(&rendered.bundle(), &config) {
            panic!("{}: {v}", path.display());
        }
        for input in &rendered.inputs {
            if input.object.types.as_ref().unwrap().kind == "CustomResourceDefinition" {
                crd_groups.insert(
                    input.object.data["spec"]["group"]
                        .as_str()
                        .unwrap()
                        .to_string(),
                );
            }
        }
        let plan = capi_apply::plan(rendered.inputs, &KindResolver::builtin())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(!plan.is_empty());
        seen.insert(name);
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
