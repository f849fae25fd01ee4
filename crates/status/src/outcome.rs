//! One provider's reconcile result ([`Outcome`]) and one uninstall's ([`Removal`]): the only inputs to
//! status, Events and the provider's record.

use std::fmt;
use std::time::Duration;

use capi_apply::{DroppedShortName, ObjectKey, Phase};
use serde_json::Value;

use crate::error::{Pending, ProviderError};
use capi_bundle::source::{SourceId, Target};

/// A workload of the version that serves (rolled out before) that is not Available now: its pods were
/// lost, are not Ready again yet, or crash. Not a rollout to wait for: it is reported, and the
/// operator is Degraded once it lasts longer than tolerated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unavailable {
    pub key: ObjectKey,
    /// What its status says (see [`capi_apply::Availability`]).
    pub status: String,
    /// How long it has been unavailable (by its own `Available` condition when it has one).
    pub lasted: Duration,
    /// How long it may be unavailable before the operator is Degraded (`--deployment-timeout`).
    pub tolerated: Duration,
}

impl Unavailable {
    /// It has lasted long enough to degrade the operator.
    pub fn persistent(&self) -> bool {
        self.lasted >= self.tolerated
    }
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} is not Available: {}", self.key, self.status)
    }
}

/// Where one provider stands after a reconcile.
#[derive(Debug)]
pub enum ProviderState {
    /// Every object of the current version is applied, and the version was fully rolled out (every
    /// gate passed, now or before; whether its workloads serve now is [`Outcome::unavailable`]).
    Installed,
    /// A phase is applied and its readiness gate is not met yet.
    Progressing { phase: Phase, pending: Vec<Pending> },
    /// Not started: a provider it depends on (core, before infrastructure) does not serve yet; `behind`
    /// names it.
    Blocked { behind: String },
    /// The last attempt failed.
    Failed {
        error: ProviderError,
        /// Attempts counted towards `Degraded` (spaced: the installer counts one only some seconds
        /// after the last), this one included.
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
    pub(crate) fn waiting_message(&self) -> Option<String> {
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
    /// Available at its current generation; recorded durably) and its workloads are Available now
    /// (`unavailable` is empty). A bad new version applies nothing, so the old one keeps serving.
    pub serving: bool,
    /// The workloads of the version that serves that are not Available now (empty before a first
    /// rollout: those are waited for, see [`ProviderState::Progressing`]).
    pub unavailable: Vec<Unavailable>,
    /// The version label of the last version fully rolled out, when there was one.
    pub rolled_out: Option<String>,
    /// `relatedObjects` entries of its plan: cluster-scoped objects and the CRDs' instance kinds.
    pub related: Vec<Value>,
    /// The revision applied instead of the source's content because it was rolled back to by hand
    /// (`capi-installer rollback`): not at the release's content.
    pub held: Option<u32>,
    /// The content this pass wanted (rendered and planned), when it got that far, as a part of
    /// `ClusterAPI/cluster`'s revisions ([`crate::cluster_api`]): the reference's component
    /// ID for a profile of a known image, otherwise the content's digest.
    pub content_id: Option<String>,
    /// Short names taken out of its CRDs because other CRDs of their group hold them (an upstream
    /// clash between providers, e.g. Azure's and GCP's `amct`): installed without them.
    pub dropped_short_names: Vec<DroppedShortName>,
}

impl Outcome {
    pub fn id(&self) -> &SourceId {
        &self.target.source.id
    }

    /// Whether the outcome needs nothing more: installed, serving, nothing unavailable.
    pub fn is_settled(&self) -> bool {
        matches!(self.state, ProviderState::Installed)
            && self.serving
            && self.unavailable.is_empty()
    }

    /// A copy of an outcome that needs nothing more: installed, serving, nothing unavailable. Only such
    /// an outcome may stand for its provider in a later pass that does not reconcile it (a copy of any
    /// other would go stale: its gate's timer, its failure's attempts, how long a workload was down).
    pub fn settled(&self) -> Option<Outcome> {
        self.is_settled().then(|| Outcome {
            target: self.target.clone(),
            state: ProviderState::Installed,
            serving: true,
            unavailable: Vec::new(),
            rolled_out: self.rolled_out.clone(),
            related: self.related.clone(),
            held: self.held,
            content_id: self.content_id.clone(),
            dropped_short_names: self.dropped_short_names.clone(),
        })
    }

    /// `aws v2.10.0`: the version that serves (the one last rolled out while a newer one is not
    /// installed).
    pub(crate) fn describe_serving(&self) -> String {
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

    /// The short names left out of its CRDs, for status messages: `gcp v1.11.0: short name amct of
    /// CustomResourceDefinition … dropped: held by CustomResourceDefinition … (infrastructure-azure);
    /// …`.
    pub(crate) fn names_note(&self) -> Option<String> {
        if self.dropped_short_names.is_empty() {
            return None;
        }
        let dropped: Vec<String> = self
            .dropped_short_names
            .iter()
            .map(ToString::to_string)
            .collect();
        Some(format!(
            "{}: {}",
            self.target.source.describe(),
            dropped.join("; ")
        ))
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

/// How an uninstall stands after one pass.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Removal {
    /// The provider.
    pub name: String,
    /// Objects deleted in this pass.
    pub deleted: usize,
    /// CRDs left in place, with why (instances left, not asked for, unmanaged).
    pub kept: Vec<(String, String)>,
    /// What could not be deleted, and why (retried).
    pub failed: Vec<String>,
    /// Nothing is left to do: the finalizer may go.
    pub done: bool,
}

impl Removal {
    /// `gcpclusters.infrastructure.cluster.x-k8s.io: instances of GCPCluster still exist`.
    pub(crate) fn kept_lines(&self) -> Vec<String> {
        self.kept
            .iter()
            .map(|(n, why)| format!("{n}: {why}"))
            .collect()
    }

    pub fn describe(&self) -> String {
        let mut parts = vec![format!("uninstalling {}", self.name)];
        if !self.kept.is_empty() {
            parts.push(format!(
                "CustomResourceDefinitions kept: {}",
                self.kept_lines().join("; ")
            ));
        }
        if !self.failed.is_empty() {
            parts.push(format!("not deleted yet: {}", self.failed.join("; ")));
        }
        parts.join("; ")
    }
}
