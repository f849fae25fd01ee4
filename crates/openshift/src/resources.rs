//! The `config.openshift.io` resources both controllers read or write, and the names they use.

use capi_object::{KindOrigin, KnownKind};
use kube::api::ApiResource;

/// `Infrastructure`: the platform, the infrastructure name and the API URLs of the cluster.
pub const INFRASTRUCTURE: KnownKind = config("Infrastructure", "infrastructures");
/// `ClusterOperator`: where the installer and each controller report.
pub const CLUSTER_OPERATOR: KnownKind = config("ClusterOperator", "clusteroperators");
/// `APIServer`: the cluster's API server configuration, whose TLS profile the installer passes on to
/// the providers.
pub const APISERVER: KnownKind = config("APIServer", "apiservers");
/// `Proxy`: the cluster-wide proxy, which the installer passes on to the providers.
pub const PROXY: KnownKind = config("Proxy", "proxies");

/// `CompatibilityRequirement` (`apiextensions.openshift.io/v1alpha1`, cluster-scoped): what others
/// rely on of a CRD, which the installer respects before it writes one and reports on.
pub const COMPATIBILITY_REQUIREMENT: KnownKind = KnownKind {
    group: "apiextensions.openshift.io",
    version: "v1alpha1",
    kind: "CompatibilityRequirement",
    plural: "compatibilityrequirements",
    namespaced: false,
    origin: KindOrigin::OpenShift,
};

/// The one `Infrastructure` object OpenShift keeps.
pub const INFRASTRUCTURE_NAME: &str = "cluster";
/// The ClusterOperator of Cluster API: the installer's conditions, `versions` and `relatedObjects`, and
/// each controller's own two conditions.
pub const CLUSTER_OPERATOR_NAME: &str = "cluster-api";
/// The one `APIServer` object OpenShift keeps.
pub const APISERVER_NAME: &str = "cluster";
/// The one `Proxy` object OpenShift keeps.
pub const PROXY_NAME: &str = "cluster";

/// "Ours": the label key both pods stamp on the objects they create, each with its own value (the
/// installer `capi-installer`, the controllers pod `capi-controllers`).
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";

const fn config(kind: &'static str, plural: &'static str) -> KnownKind {
    KnownKind {
        group: "config.openshift.io",
        version: "v1",
        kind,
        plural,
        namespaced: false,
        origin: KindOrigin::OpenShift,
    }
}

/// `group/version`, or the version alone for the core group.
pub fn api_version(kind: &KnownKind) -> String {
    match kind.group {
        "" => kind.version.to_string(),
        group => format!("{group}/{}", kind.version),
    }
}

/// The kube-rs resource of a kind, for `Api::all_with` and watches.
pub fn api_resource(kind: &KnownKind) -> ApiResource {
    ApiResource {
        group: kind.group.into(),
        version: kind.version.into(),
        api_version: api_version(kind),
        kind: kind.kind.into(),
        plural: kind.plural.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_are_cluster_scoped_config_kinds() {
        let co = api_resource(&CLUSTER_OPERATOR);
        assert_eq!(co.api_version, "config.openshift.io/v1");
        assert_eq!(co.plural, "clusteroperators");
        assert_eq!(api_resource(&INFRASTRUCTURE).kind, "Infrastructure");
        assert_eq!(api_resource(&APISERVER).plural, "apiservers");
        for kind in [INFRASTRUCTURE, CLUSTER_OPERATOR, APISERVER, PROXY] {
            assert!(capi_object::is_cluster_scoped(kind.group, kind.kind));
        }
    }
}
