//! Why a provider is not where it should be, and the one place where each kind of problem becomes a
//! status reason.

use std::fmt;
use std::time::Duration;

use capi_apply::{ApplyError, InventoryError, ObjectKey, Phase, Readiness};

use crate::revision::RevisionError;
use capi_bundle::prepare::RenderError;
use capi_bundle::source::{SourceError, SourceId};
use capi_bundle::unmanaged::{UnmanagedCrd, UnmanagedError};

/// An object a readiness gate waits for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pending {
    pub key: ObjectKey,
    pub readiness: Readiness,
}

impl fmt::Display for Pending {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.key, self.readiness)
    }
}

/// Every reason the installer writes on the ClusterOperator's conditions. The reason table of
/// `docs/admin/status.md` lists exactly these (a unit test checks it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reason {
    AsExpected,
    WaitingForPlatform,
    PlatformNotSupported,
    WaitingForProviderConfigMaps,
    Installing,
    /// The source or its components cannot be decoded, parsed, rendered or validated.
    InvalidProviderManifests,
    /// The rendered bundle breaks the bundle policy (see [`capi_bundle::policy`]).
    BundlePolicyViolation,
    /// A CRD change would strand stored data (found before anything was written).
    UnsafeCustomResourceDefinitionChange,
    /// A CRD's plural, singular name, kind or list kind is held by another CRD of its group (another
    /// provider's, or one on the cluster), or two providers bring the same CRD (found before anything
    /// was written).
    CustomResourceDefinitionNameConflict,
    /// A CRD of the provider breaks a `CompatibilityRequirement` whose action is Deny (found before
    /// anything was written).
    CompatibilityRequirementNotMet,
    /// The API server refused a request for lack of permission.
    Forbidden,
    /// An object exists and is managed by someone else (another field manager, or another provider);
    /// the installer does not take it over.
    OwnershipConflict,
    /// Another writer keeps reverting fields an object of the installer's owns; the installer stopped
    /// repairing it for a while ([`capi_apply::fight`]).
    WriteFight,
    /// A second source declares the same provider (name and type) as the one that provides it.
    DuplicateProvider,
    /// The API server rejected an object or a request failed.
    ApplyFailed,
    /// A Deployment did not become Available in time.
    DeploymentNotAvailable,
    /// A workload of a version that was rolled out is not Available now (its pods were lost, are not
    /// Ready, or crash): `Available=False` at once, `Degraded=True` once it lasts.
    ProviderUnavailable,
    /// A CustomResourceDefinition did not become Established in time.
    CustomResourceDefinitionNotEstablished,
    /// Objects a new version dropped could not be deleted.
    PruneFailed,
    /// (Upgradeable) the installer is Degraded.
    InstallerDegraded,
    /// (Upgradeable) objects of providers that are no longer selected are left in place.
    ProvidersNotSelected,
    /// (CapiInstallerControllerDegraded) same as Degraded=True.
    SyncingFailed,
    /// `ClusterAPI/cluster` cannot be read: which CRDs are unmanaged is unknown.
    InvalidClusterAPI,
    /// A provider needs an unmanaged CRD that is missing or incompatible.
    UnmanagedCustomResourceDefinition,
    /// A new revision's Deployments did not become Available in time; the last good one was applied
    /// again.
    RevisionRolledBack,
    /// A rollback asked by hand cannot be done.
    RollbackNotPossible,
    /// (InfrastructureProvider) the object cannot be acted on.
    InvalidInfrastructureProvider,
    /// (InfrastructureProvider) its provider is being removed.
    Uninstalling,
    /// (InfrastructureProvider `Uninstallable`) it names the platform's own provider.
    PlatformProvider,
}

impl Reason {
    /// Every reason (the reason table's test compares them with the documentation).
    #[cfg(test)]
    pub const ALL: &[Reason] = &[
        Reason::AsExpected,
        Reason::WaitingForPlatform,
        Reason::PlatformNotSupported,
        Reason::WaitingForProviderConfigMaps,
        Reason::Installing,
        Reason::InvalidProviderManifests,
        Reason::BundlePolicyViolation,
        Reason::UnsafeCustomResourceDefinitionChange,
        Reason::CustomResourceDefinitionNameConflict,
        Reason::CompatibilityRequirementNotMet,
        Reason::Forbidden,
        Reason::OwnershipConflict,
        Reason::WriteFight,
        Reason::DuplicateProvider,
        Reason::ApplyFailed,
        Reason::DeploymentNotAvailable,
        Reason::ProviderUnavailable,
        Reason::CustomResourceDefinitionNotEstablished,
        Reason::PruneFailed,
        Reason::InstallerDegraded,
        Reason::ProvidersNotSelected,
        Reason::SyncingFailed,
        Reason::InvalidClusterAPI,
        Reason::UnmanagedCustomResourceDefinition,
        Reason::RevisionRolledBack,
        Reason::RollbackNotPossible,
        Reason::InvalidInfrastructureProvider,
        Reason::Uninstalling,
        Reason::PlatformProvider,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Reason::AsExpected => "AsExpected",
            Reason::WaitingForPlatform => "WaitingForPlatform",
            Reason::PlatformNotSupported => "PlatformNotSupported",
            Reason::WaitingForProviderConfigMaps => "WaitingForProviderConfigMaps",
            Reason::Installing => "Installing",
            Reason::InvalidProviderManifests => "InvalidProviderManifests",
            Reason::BundlePolicyViolation => "BundlePolicyViolation",
            Reason::UnsafeCustomResourceDefinitionChange => "UnsafeCustomResourceDefinitionChange",
            Reason::CustomResourceDefinitionNameConflict => "CustomResourceDefinitionNameConflict",
            Reason::CompatibilityRequirementNotMet => "CompatibilityRequirementNotMet",
            Reason::Forbidden => "Forbidden",
            Reason::OwnershipConflict => "OwnershipConflict",
            Reason::WriteFight => "WriteFight",
            Reason::DuplicateProvider => "DuplicateProvider",
            Reason::ApplyFailed => "ApplyFailed",
            Reason::DeploymentNotAvailable => "DeploymentNotAvailable",
            Reason::ProviderUnavailable => "ProviderUnavailable",
            Reason::CustomResourceDefinitionNotEstablished => {
                "CustomResourceDefinitionNotEstablished"
            }
            Reason::PruneFailed => "PruneFailed",
            Reason::InstallerDegraded => "InstallerDegraded",
            Reason::ProvidersNotSelected => "ProvidersNotSelected",
            Reason::SyncingFailed => "SyncingFailed",
            Reason::InvalidClusterAPI => "InvalidClusterAPI",
            Reason::UnmanagedCustomResourceDefinition => "UnmanagedCustomResourceDefinition",
            Reason::RevisionRolledBack => "RevisionRolledBack",
            Reason::RollbackNotPossible => "RollbackNotPossible",
            Reason::InvalidInfrastructureProvider => "InvalidInfrastructureProvider",
            Reason::Uninstalling => "Uninstalling",
            Reason::PlatformProvider => "PlatformProvider",
        }
    }
}

impl AsRef<str> for Reason {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One provider's failure. Messages name the object (and document) concerned; the source is added by
/// whoever reports it.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("{0}")]
    Source(#[from] SourceError),
    #[error("{0}")]
    Render(#[from] RenderError),
    #[error("discovery: {0}")]
    Discovery(#[source] kube::Error),
    /// Every object of a version that the checks before the first write refused (ownership, CRD
    /// safety, server-side dry-run): nothing of the version was written.
    #[error("nothing written: {}{}", join(.0), reference_hint(.0))]
    Preflight(Vec<ApplyError>),
    /// Every object of a phase that could not be applied (the others were).
    #[error("{}{}", join(.0), reference_hint(.0))]
    Apply(Vec<ApplyError>),
    #[error("{0}")]
    Inventory(#[from] InventoryError),
    #[error("not ready after {}s: {}", .timeout.as_secs(), join(.pending))]
    GateTimeout {
        phase: Phase,
        timeout: Duration,
        pending: Vec<Pending>,
    },
    /// This source declares a provider that another source already provides.
    #[error("provider {provider} is already provided by {kept}; remove one of the two")]
    DuplicateSource { provider: String, kept: SourceId },
    /// The plan contains an object that another provider's inventory holds.
    #[error("{key} belongs to the provider of {owner}; not taking it over")]
    Claimed {
        // Boxed: keeps `Result<_, ProviderError>` small on the happy path (clippy::result_large_err).
        key: Box<ObjectKey>,
        owner: SourceId,
    },
    /// Objects the new version dropped that could not be deleted (kept in the inventory, retried).
    #[error("cannot prune: {}", .failed.iter().map(|(k, e)| format!("{k}: {e}")).collect::<Vec<_>>().join("; "))]
    Prune { failed: Vec<(ObjectKey, String)> },
    #[error("{0}")]
    ClusterApi(#[from] UnmanagedError),
    #[error("{0}")]
    Unmanaged(#[from] UnmanagedCrd),
    /// A request of the reconcile's own (reading an unmanaged CRD, recording revisions) failed.
    #[error("{what}: {source}")]
    Request {
        what: String,
        #[source]
        source: kube::Error,
    },
    /// The provider's identity cannot write (none assigned, or no client for it).
    #[error("{0}")]
    Identity(#[from] capi_apply::IdentityError),
    /// A rollback asked by hand that cannot be done.
    #[error("rollback: {0}")]
    Revision(#[from] RevisionError),
    /// A new revision did not become Available in time and the last good one serves again.
    #[error(
        "revision {failed} ({failed_version}) did not become Available: {cause}; rolled back to revision {serving} ({serving_version}); the new content is tried again once it changes"
    )]
    RolledBack {
        failed: u32,
        failed_version: String,
        serving: u32,
        serving_version: String,
        cause: String,
    },
}

/// What to do about objects the reference applied, when some of `errors` are refused for that: the
/// administrator who replaces the reference learns how from the status, not from a search.
fn reference_hint(errors: &[ApplyError]) -> String {
    let by_reference = errors.iter().any(|e| {
        matches!(e, ApplyError::Conflict { managers, .. }
            if managers.iter().any(|m| capi_bundle::reference::FIELD_MANAGERS.contains(&m.as_str())))
    });
    match by_reference {
        true => " (applied by OpenShift's cluster-capi-operator: once it is stopped, --take-over-reference takes its objects over in place; see docs/admin/switching.md)".into(),
        false => String::new(),
    }
}

fn join<T: fmt::Display>(items: &[T]) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

impl ProviderError {
    /// The one place that maps an error to a status reason (and a metric label).
    pub fn reason(&self) -> Reason {
        match self {
            ProviderError::Render(RenderError::Policy(_)) => Reason::BundlePolicyViolation,
            ProviderError::Render(RenderError::NameConflict(_)) => {
                Reason::CustomResourceDefinitionNameConflict
            }
            ProviderError::Render(RenderError::Incompatible { .. }) => {
                Reason::CompatibilityRequirementNotMet
            }
            ProviderError::Source(SourceError::Decode(_) | SourceError::Profile(_))
            | ProviderError::Render(_) => Reason::InvalidProviderManifests,
            ProviderError::Source(SourceError::Gone { .. }) => Reason::ApplyFailed,
            ProviderError::Discovery(e) => kube_reason(e),
            // What the API server would store breaks the bundle policy: a policy refusal, whatever
            // else failed beside it.
            ProviderError::Preflight(errors)
                if errors
                    .iter()
                    .any(|e| matches!(e, ApplyError::Refused { .. })) =>
            {
                Reason::BundlePolicyViolation
            }
            ProviderError::Preflight(errors) | ProviderError::Apply(errors) => {
                match errors.first() {
                    Some(
                        ApplyError::Conflict { .. }
                        | ApplyError::AdoptionRefused { .. }
                        | ApplyError::Preempted { .. },
                    ) => Reason::OwnershipConflict,
                    Some(ApplyError::WriteFight { .. }) => Reason::WriteFight,
                    Some(ApplyError::UnsafeCrdChange { .. }) => {
                        Reason::UnsafeCustomResourceDefinitionChange
                    }
                    Some(ApplyError::Api { source, .. } | ApplyError::DryRun { source, .. }) => {
                        kube_reason(source)
                    }
                    _ => Reason::ApplyFailed,
                }
            }
            ProviderError::Inventory(InventoryError::Api { source, .. }) => kube_reason(source),
            ProviderError::Inventory(_) => Reason::ApplyFailed,
            ProviderError::GateTimeout { phase, .. } => match phase {
                Phase::CustomResourceDefinitions => Reason::CustomResourceDefinitionNotEstablished,
                _ => Reason::DeploymentNotAvailable,
            },
            ProviderError::DuplicateSource { .. } => Reason::DuplicateProvider,
            ProviderError::Claimed { .. } => Reason::OwnershipConflict,
            ProviderError::Prune { .. } => Reason::PruneFailed,
            ProviderError::ClusterApi(_) => Reason::InvalidClusterAPI,
            ProviderError::Unmanaged(_) => Reason::UnmanagedCustomResourceDefinition,
            ProviderError::Request { source, .. } => kube_reason(source),
            ProviderError::Revision(RevisionError::Stored { .. }) | ProviderError::Identity(_) => {
                Reason::ApplyFailed
            }
            ProviderError::Revision(_) => Reason::RollbackNotPossible,
            ProviderError::RolledBack { .. } => Reason::RevisionRolledBack,
        }
    }

    /// A failure that retrying cannot mend, only a change of the input: a rollback holds until the
    /// source's content changes. It degrades at once and is not retried on a timer.
    pub fn waits_for_change(&self) -> bool {
        matches!(self, ProviderError::RolledBack { .. })
    }
}

fn kube_reason(e: &kube::Error) -> Reason {
    match e {
        kube::Error::Api(status) if status.code == 403 => Reason::Forbidden,
        _ => Reason::ApplyFailed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use capi_apply::{ObjectKey, Readiness};

    fn api_error(code: u16) -> kube::Error {
        kube::Error::Api(Box::new(kube::core::Status {
            code,
            message: "no".into(),
            ..Default::default()
        }))
    }

    #[test]
    fn each_error_maps_to_one_reason() {
        let key = ObjectKey::new("apps", "v1", "Deployment", Some("ns"), "d");
        let cases = [
            (
                ProviderError::Apply(vec![ApplyError::Conflict {
                    key: key.clone(),
                    managers: vec!["helm".into()],
                }]),
                Reason::OwnershipConflict,
            ),
            (
                ProviderError::Apply(vec![ApplyError::Api {
                    key: key.clone(),
                    source: api_error(403),
                }]),
                Reason::Forbidden,
            ),
            (
                ProviderError::Apply(vec![ApplyError::Api {
                    key: key.clone(),
                    source: api_error(422),
                }]),
                Reason::ApplyFailed,
            ),
            (ProviderError::Discovery(api_error(403)), Reason::Forbidden),
            (
                ProviderError::Apply(vec![ApplyError::AdoptionRefused {
                    key: key.clone(),
                    reason: "another owner's object (cluster.x-k8s.io/provider=infrastructure-gcp) is never adopted".into(),
                }]),
                Reason::OwnershipConflict,
            ),
            (
                ProviderError::Claimed {
                    key: Box::new(key.clone()),
                    owner: SourceId::ConfigMap("cluster-api".into()),
                },
                Reason::OwnershipConflict,
            ),
            (
                ProviderError::DuplicateSource {
                    provider: "aws (infrastructure)".into(),
                    kept: SourceId::ConfigMap("aws".into()),
                },
                Reason::DuplicateProvider,
            ),
            (
                ProviderError::Preflight(vec![ApplyError::DryRun {
                    key: key.clone(),
                    source: api_error(422),
                }]),
                Reason::ApplyFailed,
            ),
            (
                ProviderError::Preflight(vec![ApplyError::UnsafeCrdChange {
                    key: key.clone(),
                    problems: vec![capi_apply::CrdProblem::ScopeChanged {
                        from: "Namespaced".into(),
                        to: "Cluster".into(),
                    }],
                }]),
                Reason::UnsafeCustomResourceDefinitionChange,
            ),
            (
                ProviderError::Render(RenderError::Policy(capi_bundle::policy::Violations(vec![]))),
                Reason::BundlePolicyViolation,
            ),
            (
                ProviderError::Render(RenderError::Incompatible {
                    origin: "ConfigMap openshift-cluster-api/aws".into(),
                    findings: vec!["CompatibilityRequirement pin: x version v1, spec.a: field removed".into()],
                }),
                Reason::CompatibilityRequirementNotMet,
            ),
            (
                ProviderError::Prune {
                    failed: vec![(key.clone(), "forbidden".into())],
                },
                Reason::PruneFailed,
            ),
            (
                ProviderError::GateTimeout {
                    phase: Phase::Workloads,
                    timeout: Duration::from_secs(5),
                    pending: vec![Pending {
                        key: key.clone(),
                        readiness: Readiness::NotFound,
                    }],
                },
                Reason::DeploymentNotAvailable,
            ),
            (
                ProviderError::GateTimeout {
                    phase: Phase::CustomResourceDefinitions,
                    timeout: Duration::from_secs(5),
                    pending: vec![],
                },
                Reason::CustomResourceDefinitionNotEstablished,
            ),
        ];
        let more = [
            (
                ProviderError::ClusterApi(UnmanagedError {
                    field: "spec".into(),
                    message: "no".into(),
                }),
                Reason::InvalidClusterAPI,
            ),
            (
                ProviderError::Unmanaged(UnmanagedCrd {
                    name: "a.b.c".into(),
                    problem: capi_bundle::unmanaged::UnmanagedProblem::Missing,
                }),
                Reason::UnmanagedCustomResourceDefinition,
            ),
            (
                ProviderError::Request {
                    what: "reading CustomResourceDefinition a.b.c".into(),
                    source: api_error(403),
                },
                Reason::Forbidden,
            ),
            (
                ProviderError::Revision(RevisionError::NoContent {
                    source_name: "ConfigMap aws".into(),
                    revision: 1,
                }),
                Reason::RollbackNotPossible,
            ),
            (
                ProviderError::RolledBack {
                    failed: 3,
                    failed_version: "v2".into(),
                    serving: 2,
                    serving_version: "v1".into(),
                    cause: "not ready".into(),
                },
                Reason::RevisionRolledBack,
            ),
        ];
        for (error, reason) in cases.into_iter().chain(more) {
            assert_eq!(error.reason(), reason, "{error}");
        }
    }

    #[test]
    fn messages_name_the_objects() {
        let key = ObjectKey::new("apps", "v1", "Deployment", Some("ns"), "d");
        let timeout = ProviderError::GateTimeout {
            phase: Phase::Workloads,
            timeout: Duration::from_secs(300),
            pending: vec![Pending {
                key,
                readiness: Readiness::NotFound,
            }],
        };
        assert_eq!(
            timeout.to_string(),
            "not ready after 300s: Deployment ns/d: NotFound"
        );
    }

    #[test]
    fn the_reason_table_lists_exactly_the_reasons_the_code_produces() {
        let doc = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/admin/status.md"
        ))
        .expect("docs/admin/status.md readable");
        let start = doc
            .find("## Reasons and troubleshooting")
            .expect("docs/admin/status.md has the reason table");
        let documented: std::collections::BTreeSet<&str> = doc[start..]
            .lines()
            .skip_while(|l| !l.starts_with("| reason"))
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .filter_map(|l| l.split('`').nth(1))
            .collect();
        // The installer's reasons and those of the reference's per-controller conditions it writes.
        let controller_reasons = capi_openshift::controller_status::ControllerReason::ALL;
        let produced: std::collections::BTreeSet<&str> = Reason::ALL
            .iter()
            .map(|r| r.as_str())
            .chain(controller_reasons.iter().map(|r| r.as_str()))
            .filter(|r| *r != "AsExpected")
            .collect();
        assert_eq!(documented, produced);
    }
}
