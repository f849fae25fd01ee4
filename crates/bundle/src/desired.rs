//! What the cluster asks for: `Infrastructure/cluster` and the `InfrastructureProvider` objects → the
//! providers wanted, core first, then the platform's infrastructure provider, then the extra ones by
//! name; and the providers to uninstall. Pure.

use std::collections::BTreeMap;

use capi_manifests::ProviderType;
use serde_json::Value;

use crate::api::Request;
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

impl Wants {
    /// The names of the required infrastructure providers (the platform's), for people.
    pub fn required_infrastructure(&self) -> Vec<&str> {
        self.providers
            .iter()
            .filter(|w| w.required && w.provider_type == ProviderType::Infrastructure)
            .map(|w| w.name.as_str())
            .collect()
    }
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

/// The platforms whose infrastructure provider a source declares (a profile's `ocpPlatform`), by
/// `Infrastructure` platform type → provider name ([`crate::source::SourceCatalog::platforms`]). As
/// the reference filters its images' profiles by `ocpPlatform`, a release image that carries a
/// provider for a platform the table of [`capi_manifests::platform`] does not know makes that platform
/// supported; the table alone never decides that a platform has no provider.
pub type DeclaredPlatforms = BTreeMap<String, String>;

/// The platform and its infrastructure provider, or why there is none.
fn platform_choice(
    infrastructure_status: Option<&Value>,
    declared: &DeclaredPlatforms,
) -> Result<(String, String), Desired> {
    match platform::decide(infrastructure_status) {
        PlatformDecision::Unset => Err(Desired::WaitingForPlatform),
        PlatformDecision::Supported(p) => {
            Ok((p.type_name().to_string(), p.provider_name().to_string()))
        }
        // Only a platform the table has no row for: a known platform that is unsupported (Azure
        // Stack Hub) stays so whatever a profile says.
        PlatformDecision::Unsupported { platform, reason } => match declared.get(&platform) {
            Some(provider) if platform::Platform::from_type_name(&platform).is_none() => {
                Ok((platform, provider.clone()))
            }
            _ => Err(Desired::Unsupported { platform, reason }),
        },
    }
}

/// Decides from the `status` of `Infrastructure/cluster`, the platforms the sources declare and the
/// extra infrastructure providers asked for ([`Requests::install`]): the platform's provider first,
/// then the extra ones in the given order. On a platform without Cluster API support nothing is
/// installed, extra providers included.
pub fn desired(
    infrastructure_status: Option<&Value>,
    declared: &DeclaredPlatforms,
    extra: &[String],
) -> Desired {
    match platform_choice(infrastructure_status, declared) {
        Err(nothing) => nothing,
        Ok((platform, provider)) => {
            let mut infrastructure = vec![provider.as_str()];
            infrastructure.extend(extra.iter().map(String::as_str));
            Desired::Install(Wants {
                platform,
                providers: wanted(&infrastructure),
            })
        }
    }
}

/// The infrastructure provider `Infrastructure/cluster` names, if any.
pub fn platform_provider(
    infrastructure_status: Option<&Value>,
    declared: &DeclaredPlatforms,
) -> Option<String> {
    platform_choice(infrastructure_status, declared)
        .ok()
        .map(|(_, provider)| provider)
}

/// What one `InfrastructureProvider` object is to the installer, for its status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Role {
    /// An extra provider: installed beside the platform's.
    Extra,
    /// It names the platform's own provider, which is always installed; deleting the object does not
    /// uninstall it.
    Platform,
    /// Deleted: its provider is being uninstalled.
    Uninstalling,
    /// Cannot be acted on; why.
    Invalid(String),
}

/// A provider to remove: its `InfrastructureProvider` was deleted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Uninstall {
    pub name: String,
    /// The `cluster.x-k8s.io/provider` value of its objects (its companion's too).
    pub clusterctl_label: String,
    /// `spec.deleteCustomResourceDefinitions`.
    pub delete_crds: bool,
}

/// What the `InfrastructureProvider` objects ask for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Requests {
    /// Extra providers to install, by name (the platform's own left out: it is installed anyway).
    pub install: Vec<String>,
    /// Providers to remove, by name.
    pub uninstall: Vec<Uninstall>,
    /// Every object by name.
    pub roles: BTreeMap<String, Role>,
}

/// Sorts the objects into providers to install and to remove. `platform` is the platform's provider
/// (`None` while the platform is unset or unsupported: then nothing is the platform's, and nothing
/// extra is installed — see [`desired`] — but deletions still uninstall).
pub fn requests(platform: Option<&str>, objects: &[Request]) -> Requests {
    let mut out = Requests::default();
    for r in objects {
        let role = match &r.problem {
            Some(problem) => Role::Invalid(problem.clone()),
            None if Some(r.name.as_str()) == platform => Role::Platform,
            None if r.deleting => {
                out.uninstall.push(Uninstall {
                    name: r.name.clone(),
                    clusterctl_label: ProviderType::Infrastructure.clusterctl_label(&r.name),
                    delete_crds: r.delete_crds,
                });
                Role::Uninstalling
            }
            None => {
                out.install.push(r.name.clone());
                Role::Extra
            }
        };
        out.roles.insert(r.name.clone(), role);
    }
    out.install.sort();
    out.uninstall.sort_by(|a, b| a.name.cmp(&b.name));
    out
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
        let Desired::Install(wants) = desired(
            Some(&json!({"platformStatus": {"type": "GCP"}})),
            &DeclaredPlatforms::new(),
            &[],
        ) else {
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
        let extra = ["gcp".to_string()];
        let none = DeclaredPlatforms::new();
        assert_eq!(desired(None, &none, &extra), Desired::WaitingForPlatform);
        let nutanix = json!({"platformStatus": {"type": "Nutanix"}});
        assert!(matches!(
            desired(Some(&nutanix), &none, &extra),
            Desired::Unsupported { platform, .. } if platform == "Nutanix"
        ));
        assert_eq!(platform_provider(Some(&nutanix), &none), None);
    }

    #[test]
    fn a_platform_a_profile_declares_is_supported_by_that_profile_s_provider() {
        let declared = DeclaredPlatforms::from([("Nutanix".into(), "nutanix".into())]);
        let nutanix = json!({"platformStatus": {"type": "Nutanix"}});
        let Desired::Install(wants) = desired(Some(&nutanix), &declared, &[]) else {
            panic!("a profile declares Nutanix");
        };
        assert_eq!(wants.platform, "Nutanix");
        assert_eq!(wants.providers[2].name, "nutanix");
        assert_eq!(
            wants.providers[2].clusterctl_label,
            "infrastructure-nutanix"
        );
        assert_eq!(
            platform_provider(Some(&nutanix), &declared).as_deref(),
            Some("nutanix")
        );
        // The table's platforms keep their provider, and one it knows to be unsupported stays so.
        let declared = DeclaredPlatforms::from([
            ("AWS".into(), "other".into()),
            ("Azure".into(), "azure".into()),
        ]);
        let aws = json!({"platformStatus": {"type": "AWS"}});
        assert_eq!(
            platform_provider(Some(&aws), &declared).as_deref(),
            Some("aws")
        );
        let stack =
            json!({"platformStatus": {"type": "Azure", "azure": {"cloudName": "AzureStackCloud"}}});
        assert!(matches!(
            desired(Some(&stack), &declared, &[]),
            Desired::Unsupported { .. }
        ));
    }

    fn request(name: &str, deleting: bool, problem: Option<&str>) -> Request {
        Request {
            name: name.into(),
            deleting,
            delete_crds: deleting,
            finalized: true,
            generation: Some(1),
            problem: problem.map(Into::into),
        }
    }

    #[test]
    fn extra_providers_follow_the_platform_s_by_name_and_deleted_ones_are_removed() {
        let objects = [
            request("vsphere", false, None),
            request("aws", false, None),
            request("azure", true, None),
            request("gcp", false, None),
            request("bad", false, Some("InfrastructureProvider bad: ...")),
        ];
        let r = requests(Some("aws"), &objects);
        assert_eq!(r.install, ["gcp", "vsphere"]);
        assert_eq!(
            r.uninstall,
            [Uninstall {
                name: "azure".into(),
                clusterctl_label: "infrastructure-azure".into(),
                delete_crds: true
            }]
        );
        assert_eq!(r.roles["aws"], Role::Platform);
        assert_eq!(r.roles["gcp"], Role::Extra);
        assert_eq!(r.roles["azure"], Role::Uninstalling);
        assert!(matches!(r.roles["bad"], Role::Invalid(_)));

        let Desired::Install(wants) = desired(
            Some(&json!({"platformStatus": {"type": "AWS"}})),
            &DeclaredPlatforms::new(),
            &r.install,
        ) else {
            panic!("AWS is supported");
        };
        let names: Vec<&str> = wants.providers.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "cluster-api",
                "openshift-cluster-api",
                "aws",
                "openshift-cluster-api-aws",
                "gcp",
                "openshift-cluster-api-gcp",
                "vsphere",
                "openshift-cluster-api-vsphere"
            ]
        );
    }

    #[test]
    fn deleting_the_platform_s_own_provider_uninstalls_nothing() {
        let r = requests(Some("aws"), &[request("aws", true, None)]);
        assert!(r.uninstall.is_empty() && r.install.is_empty());
        assert_eq!(r.roles["aws"], Role::Platform);
        // Without a known platform, a deleted object still uninstalls its provider.
        let r = requests(None, &[request("aws", true, None)]);
        assert_eq!(r.uninstall.len(), 1);
    }
}
