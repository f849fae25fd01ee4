//! Which infrastructure provider a cluster needs, read from `Infrastructure/cluster`.

use serde_json::Value;

/// What the installer should do for the platform reported by `Infrastructure/cluster`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlatformDecision {
    /// `status.platformStatus.type` is not set yet (the installer program writes it late): wait for it.
    Unset,
    /// Cluster API has no provider for this platform: install nothing and say so in status.
    Unsupported { platform: String, reason: String },
    /// Install the core provider and this infrastructure provider.
    Supported(InfrastructureProvider),
}

/// The infrastructure provider of a supported platform.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InfrastructureProvider {
    /// The `Infrastructure` platform type, e.g. `AWS`.
    pub platform: String,
    /// The transport ConfigMap's `provider.cluster.x-k8s.io/name`, e.g. `aws`.
    pub provider_name: &'static str,
}

/// Maps the platform types that have a Cluster API provider to the provider's name (ref §2.2).
/// PowerVS and BareMetal do not follow the "lower-cased platform" rule, which is why this is a table.
const PROVIDERS: &[(&str, &str)] = &[
    ("AWS", "aws"),
    ("GCP", "gcp"),
    ("Azure", "azure"),
    ("PowerVS", "ibmcloud"),
    ("VSphere", "vsphere"),
    ("OpenStack", "openstack"),
    ("BareMetal", "metal3"),
];

/// The infrastructure provider of a platform type (`AWS` → `aws`), `None` for platforms without one.
pub fn provider_name(platform: &str) -> Option<&'static str> {
    PROVIDERS
        .iter()
        .find(|(p, _)| *p == platform)
        .map(|(_, name)| *name)
}

/// Decides from the `status` of `Infrastructure/cluster`.
pub fn decide(infrastructure_status: Option<&Value>) -> PlatformDecision {
    let platform_status = infrastructure_status.and_then(|s| s.get("platformStatus"));
    let Some(platform) = platform_status
        .and_then(|p| p.get("type"))
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
    else {
        return PlatformDecision::Unset;
    };
    // Azure Stack Hub runs on platform type Azure but the Azure provider does not support it.
    let cloud_name = platform_status
        .and_then(|p| p.pointer("/azure/cloudName"))
        .and_then(Value::as_str);
    if platform == "Azure" && cloud_name == Some("AzureStackCloud") {
        return PlatformDecision::Unsupported {
            platform: platform.to_string(),
            reason: "Azure with cloudName AzureStackCloud is not supported by the Azure provider"
                .into(),
        };
    }
    match provider_name(platform) {
        Some(name) => PlatformDecision::Supported(InfrastructureProvider {
            platform: platform.to_string(),
            provider_name: name,
        }),
        None => PlatformDecision::Unsupported {
            platform: platform.to_string(),
            reason: format!("platform {platform} has no Cluster API provider"),
        },
    }
}

/// The key of a provider's controller image in the images JSON (ref §2.1); `None` for names that have no
/// image of their own (the `openshift-cluster-api*` ConfigMaps carry only admission policies).
pub fn image_key(provider_name: &str) -> Option<String> {
    match provider_name {
        "cluster-api" => Some("cluster-capi-controllers".into()),
        "metal3" => Some("baremetal-cluster-api-controllers".into()),
        n if n.starts_with("openshift-cluster-api") => None,
        n => Some(format!("{n}-cluster-api-controllers")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decide_type(status: Value) -> PlatformDecision {
        decide(Some(&status))
    }

    #[test]
    fn maps_every_supported_platform_to_its_provider() {
        let cases = [
            ("AWS", "aws"),
            ("GCP", "gcp"),
            ("Azure", "azure"),
            ("PowerVS", "ibmcloud"),
            ("VSphere", "vsphere"),
            ("OpenStack", "openstack"),
            ("BareMetal", "metal3"),
        ];
        for (platform, provider) in cases {
            let decision = decide_type(json!({"platformStatus": {"type": platform}}));
            assert_eq!(
                decision,
                PlatformDecision::Supported(InfrastructureProvider {
                    platform: platform.into(),
                    provider_name: provider
                }),
                "{platform}"
            );
        }
    }

    #[test]
    fn unset_platform_waits() {
        assert_eq!(decide(None), PlatformDecision::Unset);
        assert_eq!(decide_type(json!({})), PlatformDecision::Unset);
        assert_eq!(
            decide_type(json!({"platformStatus": {"type": ""}})),
            PlatformDecision::Unset
        );
    }

    #[test]
    fn other_platforms_are_unsupported() {
        for platform in ["None", "Nutanix", "External", "IBMCloud", "Libvirt"] {
            let decision = decide_type(json!({"platformStatus": {"type": platform}}));
            assert!(
                matches!(&decision, PlatformDecision::Unsupported { platform: p, .. } if p == platform),
                "{platform}: {decision:?}"
            );
        }
    }

    #[test]
    fn azure_stack_hub_is_unsupported() {
        let decision = decide_type(
            json!({"platformStatus": {"type": "Azure", "azure": {"cloudName": "AzureStackCloud"}}}),
        );
        assert!(matches!(decision, PlatformDecision::Unsupported { .. }));
        let public = decide_type(
            json!({"platformStatus": {"type": "Azure", "azure": {"cloudName": "AzurePublicCloud"}}}),
        );
        assert!(matches!(public, PlatformDecision::Supported(_)));
    }

    #[test]
    fn image_keys_follow_the_release_images_json() {
        assert_eq!(
            image_key("cluster-api").as_deref(),
            Some("cluster-capi-controllers")
        );
        assert_eq!(
            image_key("aws").as_deref(),
            Some("aws-cluster-api-controllers")
        );
        assert_eq!(
            image_key("metal3").as_deref(),
            Some("baremetal-cluster-api-controllers")
        );
        assert_eq!(
            image_key("ibmcloud").as_deref(),
            Some("ibmcloud-cluster-api-controllers")
        );
        assert_eq!(image_key("openshift-cluster-api-aws"), None);
    }
}
