//! What `Infrastructure/cluster` says: the platform, and the cluster facts every controller derives
//! from (infrastructure name, internal API endpoint). Pure.

use serde_json::Value;

use crate::error::InputError;

/// The platforms with a Cluster API infrastructure provider (ref §2.2).
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

/// The InfraCluster kind of a platform's provider. The served version is read from the installed CRD,
/// never assumed: providers move their storage version (AWS is on v1beta2, the others on v1beta1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InfraClusterKind {
    pub group: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
}

impl InfraClusterKind {
    pub fn crd_name(&self) -> String {
        format!("{}.{}", self.plural, self.group)
    }
}

pub const INFRASTRUCTURE_GROUP: &str = "infrastructure.cluster.x-k8s.io";

impl Platform {
    /// The `Infrastructure` platform type this is.
    pub fn type_name(self) -> &'static str {
        match self {
            Platform::Aws => "AWS",
            Platform::Gcp => "GCP",
            Platform::Azure => "Azure",
            Platform::PowerVs => "PowerVS",
            Platform::VSphere => "VSphere",
            Platform::OpenStack => "OpenStack",
            Platform::BareMetal => "BareMetal",
        }
    }

    fn from_type_name(name: &str) -> Option<Platform> {
        [
            Platform::Aws,
            Platform::Gcp,
            Platform::Azure,
            Platform::PowerVs,
            Platform::VSphere,
            Platform::OpenStack,
            Platform::BareMetal,
        ]
        .into_iter()
        .find(|p| p.type_name() == name)
    }

    pub fn infra_cluster(self) -> InfraClusterKind {
        // PowerVS and BareMetal do not follow "<Platform>Cluster"; a table avoids deriving names.
        let (kind, plural) = match self {
            Platform::Aws => ("AWSCluster", "awsclusters"),
            Platform::Gcp => ("GCPCluster", "gcpclusters"),
            Platform::Azure => ("AzureCluster", "azureclusters"),
            Platform::PowerVs => ("IBMPowerVSCluster", "ibmpowervsclusters"),
            Platform::VSphere => ("VSphereCluster", "vsphereclusters"),
            Platform::OpenStack => ("OpenStackCluster", "openstackclusters"),
            Platform::BareMetal => ("Metal3Cluster", "metal3clusters"),
        };
        InfraClusterKind {
            group: INFRASTRUCTURE_GROUP,
            kind,
            plural,
        }
    }
}

/// What the controllers should do on this cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlatformDecision {
    /// `status.platformStatus.type` is not set yet: wait.
    Unset,
    /// No Cluster API provider: the controllers do nothing and say so.
    Unsupported {
        platform: String,
        reason: String,
    },
    Supported(Platform),
}

/// Decides from the whole `Infrastructure/cluster` object (`None` while it does not exist).
pub fn decide(infrastructure: Option<&Value>) -> PlatformDecision {
    let platform_status = infrastructure.and_then(|i| i.pointer("/status/platformStatus"));
    let Some(name) = platform_status
        .and_then(|p| p.get("type"))
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
    else {
        return PlatformDecision::Unset;
    };
    let cloud_name = platform_status
        .and_then(|p| p.pointer("/azure/cloudName"))
        .and_then(Value::as_str);
    // Azure Stack Hub reports platform Azure, but the Azure provider does not support it.
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

/// A host and port, as Cluster API's `APIEndpoint`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
}

/// The facts of `Infrastructure/cluster` that every object derives from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterInfo {
    /// `status.infrastructureName`: the name of the InfraCluster, the Cluster and the kubeconfig.
    pub infrastructure_name: String,
    /// `status.apiServerInternalURI` as host and port.
    pub api_server_internal: Endpoint,
    /// Where the Cluster API objects live (the controllers' `--namespace`, openshift-cluster-api).
    pub namespace: String,
}

const INFRASTRUCTURE_OBJECT: &str = "Infrastructure cluster";

impl ClusterInfo {
    pub fn from_infrastructure(
        infrastructure: &Value,
        namespace: &str,
    ) -> Result<ClusterInfo, InputError> {
        let name = required_str(infrastructure, "/status/infrastructureName")?;
        let url = required_str(infrastructure, "/status/apiServerInternalURI")?;
        Ok(ClusterInfo {
            infrastructure_name: name.to_string(),
            api_server_internal: parse_endpoint(url).map_err(|message| InputError::Invalid {
                object: INFRASTRUCTURE_OBJECT.into(),
                field: "status.apiServerInternalURI".into(),
                message,
            })?,
            namespace: namespace.to_string(),
        })
    }
}

/// A required string field of `Infrastructure/cluster` (`pointer` in JSON-pointer form).
pub(crate) fn required_str<'a>(
    infrastructure: &'a Value,
    pointer: &str,
) -> Result<&'a str, InputError> {
    infrastructure
        .pointer(pointer)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| InputError::Missing {
            object: INFRASTRUCTURE_OBJECT.into(),
            field: pointer.trim_start_matches('/').replace('/', "."),
        })
}

/// `https://host:port` → host (brackets of an IPv6 literal removed) and port. The port is required, as
/// in the reference: OpenShift always writes it, and guessing 443 would point Cluster API at a port the
/// API server may not serve.
pub fn parse_endpoint(url: &str) -> Result<Endpoint, String> {
    let uri: http::Uri = url
        .parse()
        .map_err(|e| format!("{url:?} is not a URL: {e}"))?;
    let host = uri
        .host()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| format!("{url:?} has no host"))?;
    let port = uri
        .port_u16()
        .ok_or_else(|| format!("{url:?} has no port"))?;
    Ok(Endpoint {
        host: host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string(),
        port,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn infra(platform_status: Value) -> Value {
        json!({"status": {"platformStatus": platform_status}})
    }

    #[test]
    fn decides_each_platform() {
        let cases = [
            ("AWS", Some(Platform::Aws)),
            ("GCP", Some(Platform::Gcp)),
            ("Azure", Some(Platform::Azure)),
            ("PowerVS", Some(Platform::PowerVs)),
            ("VSphere", Some(Platform::VSphere)),
            ("OpenStack", Some(Platform::OpenStack)),
            ("BareMetal", Some(Platform::BareMetal)),
            ("None", None),
            ("Nutanix", None),
            ("External", None),
            ("IBMCloud", None),
        ];
        for (name, expected) in cases {
            let decision = decide(Some(&infra(json!({"type": name}))));
            match expected {
                Some(p) => assert_eq!(decision, PlatformDecision::Supported(p), "{name}"),
                None => assert!(
                    matches!(&decision, PlatformDecision::Unsupported { platform, .. } if platform == name),
                    "{name}: {decision:?}"
                ),
            }
        }
    }

    #[test]
    fn unset_platform_waits_and_azure_stack_hub_is_unsupported() {
        assert_eq!(decide(None), PlatformDecision::Unset);
        assert_eq!(decide(Some(&json!({}))), PlatformDecision::Unset);
        assert_eq!(
            decide(Some(&infra(json!({"type": ""})))),
            PlatformDecision::Unset
        );
        let stack = infra(json!({"type": "Azure", "azure": {"cloudName": "AzureStackCloud"}}));
        assert!(matches!(
            decide(Some(&stack)),
            PlatformDecision::Unsupported { .. }
        ));
        let public = infra(json!({"type": "Azure", "azure": {"cloudName": "AzurePublicCloud"}}));
        assert_eq!(
            decide(Some(&public)),
            PlatformDecision::Supported(Platform::Azure)
        );
    }

    #[test]
    fn infra_cluster_kinds_and_crd_names() {
        assert_eq!(
            Platform::PowerVs.infra_cluster().crd_name(),
            "ibmpowervsclusters.infrastructure.cluster.x-k8s.io"
        );
        assert_eq!(Platform::BareMetal.infra_cluster().kind, "Metal3Cluster");
        assert_eq!(Platform::Aws.infra_cluster().kind, "AWSCluster");
    }

    #[test]
    fn endpoints() {
        let ok = [
            (
                "https://api-int.demo.example.com:6443",
                "api-int.demo.example.com",
                6443,
            ),
            ("https://10.0.0.5:6443", "10.0.0.5", 6443),
            ("https://[fd00::5]:6443", "fd00::5", 6443),
        ];
        for (url, host, port) in ok {
            assert_eq!(
                parse_endpoint(url),
                Ok(Endpoint {
                    host: host.into(),
                    port
                }),
                "{url}"
            );
        }
        for bad in ["https://api-int.example.com", "not a url", ""] {
            assert!(parse_endpoint(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn cluster_info_names_the_missing_field() {
        let err = ClusterInfo::from_infrastructure(
            &json!({"status": {"apiServerInternalURI": "https://a:6443"}}),
            "ns",
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Infrastructure cluster: status.infrastructureName is not set"
        );
        let err = ClusterInfo::from_infrastructure(
            &json!({"status": {"infrastructureName": "x", "apiServerInternalURI": "https://a"}}),
            "ns",
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("Infrastructure cluster: status.apiServerInternalURI: ")
        );
        let info = ClusterInfo::from_infrastructure(
            &json!({"status": {"infrastructureName": "x", "apiServerInternalURI": "https://a:6443"}}),
            "ns",
        )
        .unwrap();
        assert_eq!(info.infrastructure_name, "x");
        assert_eq!(info.api_server_internal.port, 6443);
    }
}
