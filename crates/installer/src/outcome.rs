//! One provider's reconcile result: the only input to status, Events and the provider's record.

use std::fmt;
use std::time::Duration;

use capi_apply::{ObjectKey, Phase, Readiness};
use capi_manifests::ProviderType;
use serde_json::Value;

use crate::error::ProviderError;
use crate::source::{SourceId, Target};

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

/// Where one provider stands after a reconcile.
#[derive(Debug)]
pub enum ProviderState {
    /// Every object of the current version is applied and ready.
    Installed,
    /// A phase is applied and its readiness gate is not met yet.
    Progressing { phase: Phase, pending: Vec<Pending> },
    /// Not started: a provider it depends on (core, before infrastructure) has not completed.
    Blocked { behind: SourceId },
    /// The last attempt failed.
    Failed {
        error: ProviderError,
        /// Attempts counted towards `Degraded` (spaced, see [`crate::history`]), this one included.
        attempts: u32,
        /// Since the first failure of this series.
        failing_for: Duration,
    },
}

impl ProviderState {
    /// `Installed`, `Progressing`, `Blocked` or `Failed`: the state's name, for logs and records.
    pub fn name(&self) -> &'static str {
        match self {
            ProviderState::Installed => "Installed",
            ProviderState::Progressing { .. } => "Progressing",
            ProviderState::Blocked { .. } => "Blocked",
            ProviderState::Failed { .. } => "Failed",
        }
    }

    /// What the provider waits for, for Progressing messages.
    pub fn waiting_message(&self) -> Option<String> {
        let ProviderState::Progressing { phase, pending } = self else {
            return None;
        };
        let what = pending
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ");
        Some(match phase {
            Phase::CustomResourceDefinitions => {
                format!("waiting for CustomResourceDefinitions to be Established: {what}")
            }
            _ => format!("waiting for workloads to become Available: {what}"),
        })
    }
}

/// One provider's result.
#[derive(Debug)]
pub struct Outcome {
    pub target: Target,
    pub state: ProviderState,
    /// Whether an earlier version is in place and keeps serving while this one is not installed (a
    /// bad new version applies nothing, so the old one stays).
    pub previously_installed: bool,
    /// `relatedObjects` entries of its plan: cluster-scoped objects and the CRDs' instance kinds.
    pub related: Vec<Value>,
}

impl Outcome {
    pub fn id(&self) -> &SourceId {
        &self.target.source.id
    }

    /// Whether the provider serves: installed, or an earlier version is still in place. Providers that
    /// depend on it may proceed.
    pub fn serving(&self) -> bool {
        match self.state {
            ProviderState::Installed => true,
            ProviderState::Failed { .. } => self.previously_installed,
            _ => false,
        }
    }

    /// `ConfigMap aws: <error> (attempt 3)`, for a failed provider.
    pub fn failure_message(&self) -> Option<String> {
        match &self.state {
            ProviderState::Failed {
                error, attempts, ..
            } => Some(format!("{}: {error} (attempt {attempts})", self.id())),
            _ => None,
        }
    }
}

/// The earlier provider that `target` waits for, if any: core completes before any infrastructure
/// provider starts (their controllers need core's CRDs and conversion webhooks), and an infrastructure
/// provider's companion waits for that provider. A provider that fails while its previous version
/// still serves holds nothing back. Infrastructure providers never wait for each other.
pub fn blocked_by(earlier: &[Outcome], target: &Target) -> Option<SourceId> {
    let depends_on = |o: &Outcome| {
        o.target.source.provider_type == ProviderType::Core
            || o.target.clusterctl_label == target.clusterctl_label
    };
    earlier
        .iter()
        .find(|o| depends_on(o) && !o.serving())
        .map(|o| o.id().clone())
}
