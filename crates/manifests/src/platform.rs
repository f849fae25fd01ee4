//! Which Cluster API infrastructure provider a cluster's platform has (ref §2.2): the one table that the
//! installer (which provider to install) and the controllers pod (which InfraCluster to create) share, so
//! that they can never disagree about a platform.

use serde_json::Value;

/// The platforms with a Cluster API infrastructure provider.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Platform {
    Aws,
    Gcp,
    Azure,
    PowerVs,
    VSphere,
    OpenStack,
    BareMetal,
}

/// Platform, its `Infrastructure` type, its provider's `provider.cluster.x-k8s.io/name`. PowerVS and
/// BareMetal do not follow the "lower-cased platform" rule, which is why this is a table.
const TABLE: [(Platform, &str, &str); 7] = [
    (Platform::Aws, "AWS", "aws"),
    (Platform::Gcp, "GCP", "gcp"),
    (Platform::Azure, "Azure", "azure"),
    (Platform::PowerVs, "PowerVS", "ibmcloud"),
    (Platform::VSphere, "VSphere", "vsphere"),
    (Platform::OpenStack, "OpenStack", "openstack"),
    (Platform::BareMetal, "BareMetal", "metal3"),
];

impl Platform {
    fn row(self) -> &'static (Platform, &'static str, &'static str) {
        TABLE
            .iter()
            .find(|(p, _, _)| *p == self)
            .expect("every platform has a row")
    }

    /// The `Infrastructure` platform type, e.g. `AWS`.
    pub fn type_name(self) -> &'static str {
        self.row().1
    }

    /// The infrastructure provider's name (the transport ConfigMap's `provider.cluster.x-k8s.io/name`),
    /// e.g. `aws`.
    pub fn provider_name(self) -> &'static str {
        self.row().2
    }

    /// Every platform with a provider, in the table's order.
    pub fn all() -> impl Iterator<Item = Platform> {
        TABLE.iter().map(|(p, _, _)| *p)
    }

    /// The platform of an `Infrastructure` platform type; `None` for types without a provider.
    pub fn from_type_name(name: &str) -> Option<Platform> {
        TABLE
            .iter()
            .find(|(_, t, _)| *t == name)
            .map(|(p, _, _)| *p)
    }
}

/// The name of the infrastructure provider of platform type `name` as a provider image's profile
/// declares it (`ocpPlatform`): the table's name for the platforms this code knows (`PowerVS` →
/// `ibmcloud`), else the lower-cased type of any other platform OpenShift knows (`Nutanix` →
/// `nutanix`), so that a release image can bring a provider for a platform this code has not heard
/// of. An error (naming the types) for anything else, `None` included.
pub fn provider_name_of(name: &str) -> Result<String, String> {
    if let Some(p) = Platform::from_type_name(name) {
        return Ok(p.provider_name().to_string());
    }
    match parse_platform_type(name)? {
        "None" => Err("platform None has no infrastructure, so no infrastructure provider".into()),
        known => Ok(known.to_ascii_lowercase()),
    }
}

/// Every `Infrastructure` platform type OpenShift knows (`config.openshift.io/v1` `PlatformType`),
/// spelled as the API spells them: what a platform given by a person is checked against.
pub(crate) const PLATFORM_TYPES: [&str; 16] = [
    "AWS",
    "Azure",
    "BareMetal",
    "GCP",
    "Libvirt",
    "OpenStack",
    "None",
    "VSphere",
    "oVirt",
    "IBMCloud",
    "KubeVirt",
    "EquinixMetal",
    "PowerVS",
    "AlibabaCloud",
    "Nutanix",
    "External",
];

/// A platform type given by a person (a command-line flag), checked against [`PLATFORM_TYPES`] with
/// the API's exact spelling: `aws` is refused, and the error names the spelling meant and the known
/// types.
pub fn parse_platform_type(name: &str) -> Result<&'static str, String> {
    if let Some(known) = PLATFORM_TYPES.iter().find(|t| **t == name) {
        return Ok(known);
    }
    let hint = PLATFORM_TYPES
        .iter()
        .find(|t| t.eq_ignore_ascii_case(name))
        .map(|t| format!(" (did you mean {t}?)"))
        .unwrap_or_default();
    Err(format!(
        "{name:?} is not an Infrastructure platform type{hint}; the types, spelled exactly: {}",
        PLATFORM_TYPES.join(", ")
    ))
}

/// What a platform means for Cluster API on this cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlatformDecision {
    /// `status.platformStatus.type` is not set yet (the OpenShift installer writes it late): wait.
    Unset,
    /// No Cluster API provider for this platform: nothing to install or reconcile, and say so.
    Unsupported {
        platform: String,
        reason: String,
    },
    Supported(Platform),
}

/// Decides from the `status` of `Infrastructure/cluster` (`None` while there is none).
pub fn decide(infrastructure_status: Option<&Value>) -> PlatformDecision {
    let platform_status = infrastructure_status.and_then(|s| s.get("platformStatus"));
    let Some(name) = platform_status
        .and_then(|p| p.get("type"))
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
    else {
        return PlatformDecision::Unset;
    };
    // Azure Stack Hub reports platform Azure, but the Azure provider does not support it.
    let cloud_name = platform_status
        .and_then(|p| p.pointer("/azure/cloudName"))
        .and_then(Value::as_str);
    if name == "Azure" && cloud_name == Some("AzureStackCloud") {
        return PlatformDecision::Unsupported {
            platform: name.to_string(),
            reason: "Azure with cloudName AzureStackCloud is not supported by the Azure provider"
                .into(),
        };
    }
    match Platform::from_type_name(name) {
        Some(p) => PlatformDecision::Supported(p),
        None => PlatformDecision::Unsupported {
            platform: name.to_string(),
            reason: format!("platform {name} has no Cluster API provider"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_profile_names_the_provider_of_any_platform_openshift_knows() {
        assert_eq!(provider_name_of("PowerVS").as_deref(), Ok("ibmcloud"));
        assert_eq!(provider_name_of("AWS").as_deref(), Ok("aws"));
        assert_eq!(provider_name_of("Nutanix").as_deref(), Ok("nutanix"));
        assert_eq!(
            provider_name_of("EquinixMetal").as_deref(),
            Ok("equinixmetal")
        );
        let err = provider_name_of("nutanix").unwrap_err();
        assert!(err.contains("did you mean Nutanix?"), "{err}");
        assert!(provider_name_of("None").is_err());
    }

    #[test]
    fn platform_types_are_spelled_as_the_api_spells_them() {
        assert_eq!(parse_platform_type("AWS"), Ok("AWS"));
        assert_eq!(parse_platform_type("oVirt"), Ok("oVirt"));
        let err = parse_platform_type("aws").unwrap_err();
        assert!(err.starts_with("\"aws\" is not an Infrastructure platform type (did you mean AWS?); the types, spelled exactly: AWS, Azure, BareMetal,"), "{err}");
        let err = parse_platform_type("Foo").unwrap_err();
        assert!(
            !err.contains("did you mean") && err.contains("Nutanix, External"),
            "{err}"
        );
        // Every platform with a provider is a known type.
        for (_, type_name, _) in TABLE {
            assert!(PLATFORM_TYPES.contains(&type_name), "{type_name}");
        }
    }

    fn status(platform_status: Value) -> Value {
        json!({ "platformStatus": platform_status })
    }

    #[test]
    fn maps_every_supported_platform_to_its_provider() {
        let cases = [
            ("AWS", Platform::Aws, "aws"),
            ("GCP", Platform::Gcp, "gcp"),
            ("Azure", Platform::Azure, "azure"),
            ("PowerVS", Platform::PowerVs, "ibmcloud"),
            ("VSphere", Platform::VSphere, "vsphere"),
            ("OpenStack", Platform::OpenStack, "openstack"),
            ("BareMetal", Platform::BareMetal, "metal3"),
        ];
        for (type_name, platform, provider) in cases {
            assert_eq!(
                decide(Some(&status(json!({"type": type_name})))),
                PlatformDecision::Supported(platform),
                "{type_name}"
            );
            assert_eq!(platform.type_name(), type_name);
            assert_eq!(platform.provider_name(), provider, "{type_name}");
        }
    }

    #[test]
    fn unset_platform_waits() {
        assert_eq!(decide(None), PlatformDecision::Unset);
        assert_eq!(decide(Some(&json!({}))), PlatformDecision::Unset);
        assert_eq!(
            decide(Some(&status(json!({"type": ""})))),
            PlatformDecision::Unset
        );
    }

    #[test]
    fn other_platforms_are_unsupported() {
        // Type names are case-sensitive in the Infrastructure API: `aws` is not `AWS`.
        for name in ["None", "Nutanix", "External", "IBMCloud", "Libvirt", "aws"] {
            let decision = decide(Some(&status(json!({"type": name}))));
            assert_eq!(
                decision,
                PlatformDecision::Unsupported {
                    platform: name.into(),
                    reason: format!("platform {name} has no Cluster API provider"),
                },
                "{name}"
            );
        }
    }

    #[test]
    fn azure_stack_hub_is_unsupported() {
        let stack = status(json!({"type": "Azure", "azure": {"cloudName": "AzureStackCloud"}}));
        assert!(matches!(
            decide(Some(&stack)),
            PlatformDecision::Unsupported { platform, reason }
                if platform == "Azure" && reason.contains("AzureStackCloud")
        ));
        let public = status(json!({"type": "Azure", "azure": {"cloudName": "AzurePublicCloud"}}));
        assert_eq!(
            decide(Some(&public)),
            PlatformDecision::Supported(Platform::Azure)
        );
    }
}
