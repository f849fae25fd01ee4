//! Which transport ConfigMaps the installer applies, and in which order.

use k8s_openapi::api::core::v1::ConfigMap;

pub const NAME_LABEL: &str = "provider.cluster.x-k8s.io/name";
pub const TYPE_LABEL: &str = "provider.cluster.x-k8s.io/type";
pub const VERSION_LABEL: &str = "provider.cluster.x-k8s.io/version";

/// The kind of provider a transport ConfigMap carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProviderKind {
    Core,
    Infrastructure,
}

impl ProviderKind {
    pub fn label_value(self) -> &'static str {
        match self {
            ProviderKind::Core => "core",
            ProviderKind::Infrastructure => "infrastructure",
        }
    }
}

/// One transport ConfigMap chosen for this cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    /// Name of the ConfigMap (unique within the installer's namespace).
    pub configmap: String,
    /// Its `provider.cluster.x-k8s.io/name` label.
    pub provider_name: String,
    pub kind: ProviderKind,
    /// Its `provider.cluster.x-k8s.io/version` label, for status and logs only.
    pub version: Option<String>,
    /// The value of `cluster.x-k8s.io/provider` that every object of this source carries, so that the
    /// installer's watches find them: `cluster-api` for core, `infrastructure-<infra>` otherwise.
    pub provider_label: String,
}

/// The `(name, type)` label pairs of ref §2.3, in the order they are installed. The reference kept them
/// in a Go map and so applied core and infrastructure in random order (ref §6.15); here core comes first,
/// always, and the operator's own admission-policy ConfigMaps follow their provider.
pub fn wanted_pairs(infrastructure: Option<&str>) -> Vec<(String, ProviderKind)> {
    let mut pairs = vec![
        ("cluster-api".to_string(), ProviderKind::Core),
        ("openshift-cluster-api".to_string(), ProviderKind::Core),
    ];
    if let Some(infra) = infrastructure {
        pairs.push((infra.to_string(), ProviderKind::Infrastructure));
        pairs.push((
            format!("openshift-cluster-api-{infra}"),
            ProviderKind::Infrastructure,
        ));
    }
    pairs
}

/// The provider ConfigMaps a platform cannot do without (core and the platform's infrastructure provider)
/// that `selected` lacks. The `openshift-cluster-api*` ConfigMaps are optional.
pub fn missing(selected: &[Source], infrastructure: &str) -> Vec<(String, ProviderKind)> {
    [
        ("cluster-api", ProviderKind::Core),
        (infrastructure, ProviderKind::Infrastructure),
    ]
    .into_iter()
    .filter(|(name, kind)| {
        !selected
            .iter()
            .any(|s| s.provider_name == *name && s.kind == *kind)
    })
    .map(|(name, kind)| (name.to_string(), kind))
    .collect()
}

/// Picks the ConfigMaps of `configmaps` (all in the installer's namespace) that this cluster needs, in
/// install order: by pair order, then by ConfigMap name when several match one pair.
pub fn select(configmaps: &[ConfigMap], infrastructure: Option<&str>) -> Vec<Source> {
    let mut selected = Vec::new();
    for (name, kind) in wanted_pairs(infrastructure) {
        let mut matching: Vec<Source> = configmaps
            .iter()
            .filter(|cm| {
                let labels = cm.metadata.labels.as_ref();
                let label = |k: &str| labels.and_then(|l| l.get(k)).map(String::as_str);
                label(NAME_LABEL) == Some(name.as_str())
                    && label(TYPE_LABEL) == Some(kind.label_value())
            })
            .map(|cm| Source {
                configmap: cm.metadata.name.clone().unwrap_or_default(),
                provider_name: name.clone(),
                kind,
                version: cm
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(VERSION_LABEL))
                    .cloned(),
                provider_label: match kind {
                    ProviderKind::Core => "cluster-api".to_string(),
                    ProviderKind::Infrastructure => {
                        format!("infrastructure-{}", infrastructure.unwrap_or_default())
                    }
                },
            })
            .collect();
        matching.sort_by(|a, b| a.configmap.cmp(&b.configmap));
        selected.extend(matching);
    }
    selected
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn cm(name: &str, provider: &str, kind: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(
                    [
                        (NAME_LABEL, provider),
                        (TYPE_LABEL, kind),
                        (VERSION_LABEL, "v1.0.0"),
                    ]
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                ),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn core_comes_before_infrastructure_whatever_the_listing_order() {
        let cms = vec![
            cm(
                "openshift-cluster-api-aws-policies",
                "openshift-cluster-api-aws",
                "infrastructure",
            ),
            cm("aws", "aws", "infrastructure"),
            cm("gcp", "gcp", "infrastructure"),
            cm("policies-b", "openshift-cluster-api", "core"),
            cm("policies-a", "openshift-cluster-api", "core"),
            cm("cluster-api", "cluster-api", "core"),
            cm("mislabelled", "aws", "core"),
        ];
        let names: Vec<_> = select(&cms, Some("aws"))
            .into_iter()
            .map(|s| s.configmap)
            .collect();
        assert_eq!(
            names,
            [
                "cluster-api",
                "policies-a",
                "policies-b",
                "aws",
                "openshift-cluster-api-aws-policies"
            ]
        );
    }

    #[test]
    fn provider_labels_name_the_infrastructure() {
        let cms = vec![
            cm("cluster-api", "cluster-api", "core"),
            cm("p", "openshift-cluster-api-gcp", "infrastructure"),
        ];
        let sources = select(&cms, Some("gcp"));
        assert_eq!(sources[0].provider_label, "cluster-api");
        assert_eq!(sources[1].provider_label, "infrastructure-gcp");
        assert_eq!(sources[1].version.as_deref(), Some("v1.0.0"));
    }

    #[test]
    fn missing_names_the_required_configmaps_only() {
        let cms = vec![
            cm("policies", "openshift-cluster-api", "core"),
            cm("aws", "aws", "infrastructure"),
        ];
        let selected = select(&cms, Some("aws"));
        assert_eq!(
            missing(&selected, "aws"),
            vec![("cluster-api".to_string(), ProviderKind::Core)]
        );
        assert!(
            missing(
                &select(&[cm("c", "cluster-api", "core")], Some("gcp")),
                "gcp"
            )
            .contains(&("gcp".to_string(), ProviderKind::Infrastructure))
        );
    }

    #[test]
    fn without_infrastructure_only_core_is_selected() {
        let cms = vec![
            cm("cluster-api", "cluster-api", "core"),
            cm("aws", "aws", "infrastructure"),
        ];
        let names: Vec<_> = select(&cms, None)
            .into_iter()
            .map(|s| s.configmap)
            .collect();
        assert_eq!(names, ["cluster-api"]);
    }
}
