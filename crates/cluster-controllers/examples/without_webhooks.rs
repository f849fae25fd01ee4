//! Dev-only (`make demo`, tests): rewrites transport ConfigMap files without their admission webhook
//! configurations, re-encoded as manifests-gen would.
//!
//! KWOK runs no containers, so on the local control plane no provider pod ever answers a webhook call,
//! and every write of an object a webhook covers (a Cluster, an InfraCluster) would be refused with
//! `failurePolicy: Fail`. A real cluster keeps its webhooks.
//!
//! ```text
//! cargo run -p capi-cluster-controllers --example without_webhooks -- FILE...
//! ```

use serde_json::Value;

/// The ConfigMap `cm` without MutatingWebhookConfigurations and ValidatingWebhookConfigurations.
pub fn without_webhooks(source: &str, cm: &Value) -> Result<Value, capi_manifests::Error> {
    let mut content = capi_manifests::TransportConfigMap::decode(cm)?.content;
    let kept: Vec<Value> = capi_manifests::yaml::parse_documents(source, &content.components)?
        .into_iter()
        .map(|d| d.value)
        .filter(|v| {
            !matches!(
                v["kind"].as_str(),
                Some("MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration")
            )
        })
        .collect();
    content.components = capi_manifests::yaml::to_multi_yaml(&kept)?;
    content.encode()
}

#[allow(dead_code)]
fn main() {
    for path in std::env::args().skip(1) {
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let cm = capi_manifests::yaml::parse_documents(&path, &text)
            .unwrap_or_else(|e| panic!("{e}"))
            .remove(0)
            .value;
        let stripped = without_webhooks(&path, &cm).unwrap_or_else(|e| panic!("{path}: {e}"));
        let yaml =
            capi_manifests::yaml::to_yaml(&path, &stripped).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(&path, yaml).unwrap_or_else(|e| panic!("{path}: {e}"));
    }
}
