//! What `Infrastructure/cluster` says: the platform, and the cluster facts every controller derives
//! from (infrastructure name, internal API endpoint). Pure.

use serde_json::Value;

use crate::error::InputError;

pub(crate) use capi_manifests::platform::{Platform, PlatformDecision};

/// The InfraCluster kind of a platform's provider. The served version is read from the installed CRD,
/// never assumed: providers move their storage version (AWS is on v1beta2, the others on v1beta1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct InfraClusterKind {
    pub(crate) group: &'static str,
    pub(crate) kind: &'static str,
    pub(crate) plural: &'static str,
}

impl InfraClusterKind {
    pub(crate) fn crd_name(&self) -> String {
        format!("{}.{}", self.plural, self.group)
    }
}

pub(crate) const INFRASTRUCTURE_GROUP: &str = "infrastructure.cluster.x-k8s.io";

/// The InfraCluster kind of a platform's provider.
pub(crate) fn infra_cluster(platform: Platform) -> InfraClusterKind {
    // PowerVS and BareMetal do not follow "<Platform>Cluster"; a table avoids deriving names.
    let (kind, plural) = match platform {
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

/// Decides from the whole `Infrastructure/cluster` object (`None` while it does not exist), with the
/// installer's table (`capi_manifests::platform`).
pub(crate) fn decide(infrastructure: Option<&Value>) -> PlatformDecision {
    capi_manifests::platform::decide(infrastructure.and_then(|i| i.get("status")))
}

/// A host and port, as Cluster API's `APIEndpoint`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Endpoint {
    pub(crate) host: String,
    pub(crate) port: u16,
}

/// The facts of `Infrastructure/cluster` that every object derives from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ClusterInfo {
    /// `status.infrastructureName`: the name of the InfraCluster, the Cluster and the kubeconfig.
    pub(crate) infrastructure_name: String,
    /// `status.apiServerInternalURI` as host and port.
    pub(crate) api_server_internal: Endpoint,
    /// Where the Cluster API objects live (the controllers' `--namespace`, openshift-cluster-api).
    pub(crate) namespace: String,
}

const INFRASTRUCTURE_OBJECT: &str = "Infrastructure cluster";

impl ClusterInfo {
    pub(crate) fn from_infrastructure(
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
pub(crate) fn parse_endpoint(url: &str) -> Result<Endpoint, String> {
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
    fn decides_from_the_whole_object() {
        assert_eq!(
            decide(Some(&infra(json!({"type": "GCP"})))),
            PlatformDecision::Supported(Platform::Gcp)
        );
        assert_eq!(decide(None), PlatformDecision::Unset);
        // The platform status outside `status` is not the platform.
        assert_eq!(
            decide(Some(&json!({"platformStatus": {"type": "AWS"}}))),
            PlatformDecision::Unset
        );
    }

    #[test]
    fn infra_cluster_kinds_and_crd_names() {
        assert_eq!(
            infra_cluster(Platform::PowerVs).crd_name(),
            "ibmpowervsclusters.infrastructure.cluster.x-k8s.io"
        );
        assert_eq!(infra_cluster(Platform::BareMetal).kind, "Metal3Cluster");
        assert_eq!(infra_cluster(Platform::Aws).kind, "AWSCluster");
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
