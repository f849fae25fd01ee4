//! Provider identity: name, type and version.

use std::fmt;
use std::str::FromStr;

use crate::error::Error;

/// The clusterctl provider type. The command line uses clusterctl's names (`CoreProvider`,
/// `InfrastructureProvider`); labels and file names use the short form (`core`,
/// `infrastructure`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProviderType {
    Core,
    Infrastructure,
}

impl ProviderType {
    /// `core` | `infrastructure`: the `provider.cluster.x-k8s.io/type` label value.
    pub fn label(self) -> &'static str {
        match self {
            ProviderType::Core => "core",
            ProviderType::Infrastructure => "infrastructure",
        }
    }

    /// `CoreProvider` | `InfrastructureProvider`: the clusterctl name.
    pub(crate) fn clusterctl_name(self) -> &'static str {
        match self {
            ProviderType::Core => "CoreProvider",
            ProviderType::Infrastructure => "InfrastructureProvider",
        }
    }

    /// The value of the `cluster.x-k8s.io/provider` label that clusterctl puts on every object of the
    /// provider `name`: `cluster-api` for core, `infrastructure-<name>` otherwise.
    pub fn clusterctl_label(self, name: &str) -> String {
        match self {
            ProviderType::Core => "cluster-api".to_owned(),
            ProviderType::Infrastructure => format!("infrastructure-{name}"),
        }
    }

    pub fn from_label(s: &str) -> Option<Self> {
        match s {
            "core" => Some(ProviderType::Core),
            "infrastructure" => Some(ProviderType::Infrastructure),
            _ => None,
        }
    }
}

impl FromStr for ProviderType {
    type Err = Error;

    /// Accepts the clusterctl names (as the reference command line does).
    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "CoreProvider" => Ok(ProviderType::Core),
            "InfrastructureProvider" => Ok(ProviderType::Infrastructure),
            other => Err(Error::Provider {
                message: format!(
                    "provider type {other:?} is not supported: use CoreProvider or InfrastructureProvider"
                ),
            }),
        }
    }
}

impl fmt::Display for ProviderType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.clusterctl_name())
    }
}

/// A provider as it appears in a transport ConfigMap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provider {
    /// The clusterctl name (`cluster-api`, `aws`, `ibmcloud`, ...): ConfigMap name and label.
    pub name: String,
    pub provider_type: ProviderType,
    /// The version as given (`v2.10.0` or `1.8.4`); the label keeps it verbatim.
    pub version: String,
    /// The parsed version, leading `v` removed.
    pub semver: semver::Version,
}

impl Provider {
    /// Validates the name (a DNS-1123 label: it becomes the ConfigMap name) and the version
    /// (semver, leading `v` optional).
    pub fn new(name: &str, provider_type: ProviderType, version: &str) -> Result<Self, Error> {
        validate_name(name)?;
        let semver = parse_version(version)?;
        Ok(Provider {
            name: name.to_owned(),
            provider_type,
            version: version.to_owned(),
            semver,
        })
    }

    /// `cluster-api` for core, `infrastructure-<name>` otherwise: the value of the
    /// `cluster.x-k8s.io/provider` label that clusterctl puts on every object.
    pub fn clusterctl_label(&self) -> String {
        self.provider_type.clusterctl_label(&self.name)
    }

    /// `<core|infrastructure>-<name>`, the distinguishing part of the output file name.
    pub(crate) fn file_stem(&self) -> String {
        format!("{}-{}", self.provider_type.label(), self.name)
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {}",
            self.provider_type.label(),
            self.name,
            self.version
        )
    }
}

/// Parses a provider version: semver with an optional leading `v`.
pub(crate) fn parse_version(version: &str) -> Result<semver::Version, Error> {
    let bare = version.strip_prefix('v').unwrap_or(version);
    semver::Version::parse(bare).map_err(|e| Error::Provider {
        message: format!("version {version:?} is not a semantic version (like v1.2.3): {e}"),
    })
}

fn validate_name(name: &str) -> Result<(), Error> {
    if capi_object::is_dns_label(name) {
        Ok(())
    } else {
        Err(Error::Provider {
            message: format!(
                "provider name {name:?} is not a DNS-1123 label (lower-case letters, digits and '-', at most 63 characters); it becomes the ConfigMap name"
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_with_and_without_v() {
        let p = Provider::new("aws", ProviderType::Infrastructure, "v2.10.0").unwrap();
        assert_eq!(p.version, "v2.10.0");
        assert_eq!(p.semver, semver::Version::new(2, 10, 0));
        let p = Provider::new("cluster-api", ProviderType::Core, "1.8.4").unwrap();
        assert_eq!(p.semver, semver::Version::new(1, 8, 4));
        assert_eq!(p.clusterctl_label(), "cluster-api");
        assert_eq!(p.file_stem(), "core-cluster-api");
        for bad in ["", "v", "1.2", "latest", "vv1.2.3", "${PROVIDER_VERSION}"] {
            let err = Provider::new("aws", ProviderType::Infrastructure, bad).unwrap_err();
            assert!(err.to_string().contains("not a semantic version"), "{err}");
        }
    }

    #[test]
    fn types_and_names() {
        assert_eq!(
            "CoreProvider".parse::<ProviderType>().unwrap(),
            ProviderType::Core
        );
        assert_eq!(
            "InfrastructureProvider"
                .parse::<ProviderType>()
                .unwrap()
                .label(),
            "infrastructure"
        );
        assert!("core".parse::<ProviderType>().is_err());
        assert_eq!(
            ProviderType::from_label("infrastructure"),
            Some(ProviderType::Infrastructure)
        );
        let p = Provider::new("gcp", ProviderType::Infrastructure, "v1.0.0").unwrap();
        assert_eq!(p.clusterctl_label(), "infrastructure-gcp");
        for bad in ["AWS", "a_b", "-a", ""] {
            assert!(
                Provider::new(bad, ProviderType::Core, "1.0.0").is_err(),
                "{bad}"
            );
        }
    }
}
