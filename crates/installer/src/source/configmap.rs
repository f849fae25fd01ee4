//! The first source kind: transport ConfigMaps (SPEC §2) in the installer's namespace.

use capi_manifests::transport::{LABEL_NAME, LABEL_TYPE, LABEL_VERSION};
use capi_manifests::{ProviderType, TransportConfigMap};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::runtime::reflector;
use serde_json::{Value, json};

use super::{Payload, ProviderSource, SourceCatalog, SourceError, SourceId};

/// The label selector of the ConfigMap watch: every ConfigMap that declares a provider.
pub const SELECTOR: &str = LABEL_NAME;

/// The provider a ConfigMap declares with its labels; `None` without a name or with an unknown type.
pub fn candidate(cm: &ConfigMap) -> Option<ProviderSource> {
    let labels = cm.metadata.labels.as_ref()?;
    let provider_type = ProviderType::from_label(labels.get(LABEL_TYPE)?)?;
    Some(ProviderSource {
        id: SourceId::ConfigMap(cm.metadata.name.clone()?),
        name: labels.get(LABEL_NAME)?.clone(),
        provider_type,
        version: labels.get(LABEL_VERSION).cloned(),
        created: cm
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| capi_openshift::time::rfc3339(t.0)),
    })
}

/// Decodes a transport ConfigMap (as JSON, the way the API server returns it).
pub fn payload(configmap: &Value) -> Result<Payload, SourceError> {
    let decoded = TransportConfigMap::decode(configmap).map_err(SourceError::Decode)?;
    let name = configmap
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let namespace = configmap
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    Ok(Payload {
        origin: format!("ConfigMap {namespace}/{name}"),
        components: decoded.content.components,
        self_image_ref: None,
        image: None,
        component: None,
        version: configmap
            .pointer("/metadata/labels")
            .and_then(|l| l.get(LABEL_VERSION))
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

/// The transport ConfigMaps of the installer's namespace, from a watch cache.
pub(crate) struct ConfigMapCatalog {
    pub(crate) store: reflector::Store<ConfigMap>,
    pub(crate) namespace: String,
}

impl SourceCatalog for ConfigMapCatalog {
    fn candidates(&self) -> Vec<ProviderSource> {
        self.store
            .state()
            .iter()
            .filter_map(|cm| candidate(cm))
            .collect()
    }

    fn load(&self, id: &SourceId) -> Option<Result<Payload, SourceError>> {
        let SourceId::ConfigMap(name) = id else {
            return None;
        };
        let Some(cm) = self.named(name) else {
            return Some(Err(SourceError::Gone { id: id.clone() }));
        };
        let mut value = serde_json::to_value(&*cm).expect("a ConfigMap serializes");
        value["apiVersion"] = json!("v1");
        value["kind"] = json!("ConfigMap");
        Some(payload(&value))
    }

    fn revision(&self, id: &SourceId) -> Option<String> {
        let SourceId::ConfigMap(name) = id else {
            return None;
        };
        self.named(name)?.metadata.resource_version.clone()
    }
}

impl ConfigMapCatalog {
    /// The ConfigMap `name` of the installer's namespace, as the watch cache holds it.
    fn named(&self, name: &str) -> Option<std::sync::Arc<ConfigMap>> {
        self.store
            .get(&reflector::ObjectRef::new(name).within(&self.namespace))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn cm(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    /// The payload says which version its components came with, from the object it decoded.
    #[test]
    fn a_payload_carries_the_version_of_its_configmap() {
        let provider =
            capi_manifests::Provider::new("aws", ProviderType::Infrastructure, "v3.0.0").unwrap();
        let configmap = TransportConfigMap {
            provider,
            metadata: "apiVersion: clusterctl.cluster.x-k8s.io/v3\nkind: Metadata\n".into(),
            components: "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: a}\n".into(),
        }
        .encode()
        .unwrap();
        let payload = payload(&configmap).unwrap();
        assert_eq!(payload.version.as_deref(), Some("v3.0.0"));
        assert!(payload.components.contains("ServiceAccount"));
    }

    #[test]
    fn labels_declare_the_provider() {
        let aws = candidate(&cm(
            "aws",
            &[
                (LABEL_NAME, "aws"),
                (LABEL_TYPE, "infrastructure"),
                (LABEL_VERSION, "v2.10.0"),
            ],
        ))
        .unwrap();
        assert_eq!(aws.id, SourceId::ConfigMap("aws".into()));
        assert_eq!(aws.provider_type, ProviderType::Infrastructure);
        assert_eq!(aws.describe(), "aws v2.10.0");
        assert!(candidate(&cm("x", &[(LABEL_NAME, "aws"), (LABEL_TYPE, "bootstrap")])).is_none());
        assert!(candidate(&cm("x", &[(LABEL_TYPE, "core")])).is_none());
    }
}
