//! What the cluster asks for: `Infrastructure/cluster` → the providers wanted, core first. Pure.
//!
//! Today only the platform's infrastructure provider is wanted; the shape is a list so that more
//! infrastructure providers (e.g. from `InfrastructureProvider` objects) are one more input here.

use capi_manifests::ProviderType;
use serde_json::Value;

use crate::platform::{self, PlatformDecision};

/// One provider the cluster needs: a (`provider.cluster.x-k8s.io/name`, `/type`) pair that selects its
/// source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wanted {
    pub name: String,
    pub provider_type: ProviderType,
    /// Without it the cluster cannot use Cluster API (core, the platform's infrastructure provider); the
    /// `openshift-cluster-api*` companions, which carry only the operator's own admission policies, are
    /// optional.
    pub required: bool,
    /// The value of `cluster.x-k8s.io/provider` on every object of this provider: `cluster-api`, or
    /// `infrastructure-<infra>` (also for the `openshift-cluster-api-<infra>` companion).
    pub clusterctl_label: String,
}

impl Wanted {
    /// `name (type)`, as status messages name a provider whose source is missing.
    pub fn describe(&self) -> String {
        format!("{} ({})", self.name, self.provider_type.label())
    }
}

/// The providers a supported platform needs, in install order: core first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wants {
    /// The `Infrastructure` platform type, e.g. `AWS`.
    pub platform: String,
    pub providers: Vec<Wanted>,
}

/// What the installer should do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Desired {
    /// `status.platformStatus.type` is not set yet: wait.
    WaitingForPlatform,
    /// No Cluster API provider for this platform: install nothing.
    Unsupported {
        platform: String,
        reason: String,
    },
    Install(Wants),
}

/// Decides from the `status` of `Infrastructure/cluster`.
pub fn desired(infrastructure_status: Option<&Value>) -> Desired {
    match platform::decide(infrastructure_status) {
        PlatformDecision::Unset => Desired::WaitingForPlatform,
        PlatformDecision::Unsupported { platform, reason } => {
            Desired::Unsupported { platform, reason }
        }
        PlatformDecision::Supported(p) => Desired::Install(Wants {
            platform: p.platform,
            providers: wanted(&[p.provider_name]),
        }),
    }
}

/// The (name, type) pairs of ref §2.3 for these infrastructure providers, in install order. The
/// reference kept them in a Go map and so applied core and infrastructure in random order (ref §6.15);
/// here core comes first, always, and each companion ConfigMap follows its provider.
pub fn wanted(infrastructure: &[&str]) -> Vec<Wanted> {
    let core = ProviderType::Core.clusterctl_label("cluster-api");
    let mut out = vec![
        pair("cluster-api", ProviderType::Core, true, &core),
        pair("openshift-cluster-api", ProviderType::Core, false, &core),
    ];
    for infra in infrastructure {
        let label = ProviderType::Infrastructure.clusterctl_label(infra);
        out.push(pair(infra, ProviderType::Infrastructure, true, &label));
        out.push(pair(
            &format!("openshift-cluster-api-{infra}"),
            ProviderType::Infrastructure,
            false,
            &label,
        ));
    }
    out
}

fn pair(name: &str, provider_type: ProviderType, required: bool, label: &str) -> Wanted {
    Wanted {
        name: name.to_string(),
        provider_type,
        required,
        clusterctl_label: label.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn core_comes_first_then_each_infrastructure_provider_with_its_companion() {
        let Desired::Install(wants) = desired(Some(&json!({"platformStatus": {"type": "GCP"}})))
        else {
            panic!("GCP is supported");
        };
        assert_eq!(wants.platform, "GCP");
        let got: Vec<(String, &str, bool, String)> = wants
            .providers
            .iter()
            .map(|w| {
                (
                    w.name.clone(),
                    w.provider_type.label(),
                    w.required,
                    w.clusterctl_label.clone(),
                )
            })
            .collect();
        let row = |n: &str, t, r, l: &str| (n.to_string(), t, r, l.to_string());
        assert_eq!(
            got,
            [
                row("cluster-api", "core", true, "cluster-api"),
                row("openshift-cluster-api", "core", false, "cluster-api"),
                row("gcp", "infrastructure", true, "infrastructure-gcp"),
                row(
                    "openshift-cluster-api-gcp",
                    "infrastructure",
                    false,
                    "infrastructure-gcp"
                ),
            ]
        );
        assert_eq!(
            wanted(&["aws", "gcp"]).len(),
            6,
            "several infrastructure providers"
        );
    }

    #[test]
    fn unset_and_unsupported_platforms_want_nothing() {
        assert_eq!(desired(None), Desired::WaitingForPlatform);
        assert!(matches!(
            desired(Some(&json!({"platformStatus": {"type": "Nutanix"}}))),
            Desired::Unsupported { platform, .. } if platform == "Nutanix"
        ));
    }
}
