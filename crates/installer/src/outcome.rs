//! One provider's reconcile result: the only input to status, Events and the provider's record.

use std::fmt;
use std::time::Duration;

use capi_apply::{ObjectKey, Phase, Readiness};
use capi_manifests::ProviderType;
use serde_json::Value;

use crate::desired::Wanted;
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
    /// Not started: a provider it depends on (core, before infrastructure) does not serve yet; `behind`
    /// names it.
    Blocked { behind: String },
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
    /// Whether the provider serves: a version of it was fully rolled out at least once (every Deployment
    /// Available at its current generation; recorded durably) and its Deployments are Available now.
    /// Always true when `Installed`. A bad new version applies nothing, so the old one keeps serving.
    pub serving: bool,
    /// The version label of the last version fully rolled out, when there was one.
    pub rolled_out: Option<String>,
    /// `relatedObjects` entries of its plan: cluster-scoped objects and the CRDs' instance kinds.
    pub related: Vec<Value>,
    /// The revision applied instead of the source's content because it was rolled back to by hand
    /// (`capi-installer rollback`): not at the release's content.
    pub held: Option<u32>,
    /// The digest of the content this pass wanted (rendered and planned), when it got that far:
    /// what `ClusterAPI/cluster`'s revisions are made of ([`crate::report::cluster_api`]).
    pub digest: Option<String>,
}

impl Outcome {
    pub fn id(&self) -> &SourceId {
        &self.target.source.id
    }

    /// `aws v2.10.0`: the version that serves (the one last rolled out while a newer one is not
    /// installed).
    pub fn describe_serving(&self) -> String {
        let source = &self.target.source;
        let serving = match (&self.state, &self.rolled_out) {
            (ProviderState::Installed, _) | (_, None) => source.describe(),
            (_, Some(version)) => format!("{} {version}", source.name),
        };
        match self.held {
            Some(n) => format!("{serving} (revision {n}, rolled back by hand)"),
            None => serving,
        }
    }

    /// The reason of a failed provider.
    pub fn failure_reason(&self) -> Option<crate::error::Reason> {
        match &self.state {
            ProviderState::Failed { error, .. } => Some(error.reason()),
            _ => None,
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

/// What `target` waits for, if anything: core serves before any infrastructure provider starts (their
/// controllers need core's CRDs and conversion webhooks) — a missing core source included — and an
/// infrastructure provider's companion waits for that provider. A provider that fails while its
/// previous version still serves holds nothing back. Infrastructure providers never wait for each
/// other.
pub fn blocked_by(earlier: &[Outcome], missing: &[Wanted], target: &Target) -> Option<String> {
    let infrastructure = target.source.provider_type == ProviderType::Infrastructure;
    if infrastructure
        && let Some(core) = missing
            .iter()
            .find(|w| w.provider_type == ProviderType::Core)
    {
        return Some(format!("{}, which has no source", core.describe()));
    }
    let depends_on = |o: &Outcome| {
        o.target.source.provider_type == ProviderType::Core
            || o.target.clusterctl_label == target.clusterctl_label
    };
    earlier
        .iter()
        .find(|o| depends_on(o) && !o.serving)
        .map(|o| o.id().to_string())
}
