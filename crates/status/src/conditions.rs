//! The ClusterOperator's conditions, `relatedObjects` and version, computed only from what the
//! providers' reconciles returned ([`Outcome`]).

use std::collections::BTreeSet;
use std::time::Duration;

use capi_openshift::controller_status::ControllerResult;
use serde_json::{Value, json};

use crate::error::{ProviderError, Reason};
use crate::outcome::Removal;
use crate::outcome::{Outcome, ProviderState};
use capi_bundle::desired::{Desired, Wanted};
use capi_bundle::prepare::RenderError;
use capi_bundle::source::SourceId;

/// A failure becomes `Degraded=True` only once it persists, never on one transient error.
pub(crate) const DEGRADED_AFTER_ATTEMPTS: u32 = 3;
pub const DEGRADED_AFTER: Duration = Duration::from_secs(120);

pub(crate) const NOT_IMPLEMENTED_MESSAGE: &str =
    "Cluster API is not yet implemented on this platform";

/// A condition the installer writes: its reason is one of [`Reason`].
pub type Condition = capi_openshift::Condition<Reason>;

pub(crate) fn condition(
    type_: &'static str,
    status: bool,
    reason: Reason,
    message: String,
) -> Condition {
    Condition::new(type_, status, reason, message)
}

/// A provider that is no longer selected (its source was deleted, or the platform changed) whose objects
/// are still in place: they are kept, never pruned, and reported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unselected {
    pub id: SourceId,
    /// `name (type)` from its record, when it has one.
    pub provider: Option<String>,
    /// Its objects' `cluster.x-k8s.io/provider` value, from its record.
    pub label: Option<String>,
    pub objects: usize,
}

/// What one reconcile observed: the input of every status.
pub struct Observed<'a> {
    pub desired: &'a Desired,
    /// Wanted providers without a source.
    pub missing: &'a [Wanted],
    pub outcomes: &'a [&'a Outcome],
    pub unselected: &'a [Unselected],
    /// The `cluster.x-k8s.io/provider` values of the providers asked for by `InfrastructureProvider`
    /// objects beyond the platform's: reported everywhere, but they do not decide `Available` (a broken
    /// extra provider degrades the operator; it does not make Cluster API unavailable for the
    /// platform).
    pub extra: &'a BTreeSet<String>,
    /// Uninstalls in progress.
    pub removals: &'a [Removal],
    /// How this pass's revision went into `ClusterAPI/cluster` status.
    pub recording: &'a crate::cluster_api::Recording,
}

impl Observed<'_> {
    fn needed(&self) -> (Vec<Wanted>, Vec<&Outcome>) {
        let missing = self
            .missing
            .iter()
            .filter(|w| !self.extra.contains(&w.clusterctl_label))
            .cloned()
            .collect();
        let outcomes = self
            .outcomes
            .iter()
            .copied()
            .filter(|o| !self.extra.contains(&o.target.clusterctl_label))
            .collect();
        (missing, outcomes)
    }

    /// The extra providers, for `Available`'s message: those that serve, and what the others wait for.
    fn extra_note(&self) -> Option<String> {
        let extra: Vec<&Outcome> = self
            .outcomes
            .iter()
            .copied()
            .filter(|o| self.extra.contains(&o.target.clusterctl_label))
            .collect();
        let serving: Vec<String> = extra
            .iter()
            .filter(|o| o.serving)
            .map(|o| o.describe_serving())
            .collect();
        let not_serving: Vec<String> = self
            .missing
            .iter()
            .filter(|w| self.extra.contains(&w.clusterctl_label))
            .map(|w| format!("{}: no source", w.describe()))
            .chain(
                extra
                    .iter()
                    .filter(|o| !o.serving)
                    .map(|o| not_serving_message(o)),
            )
            .collect();
        let mut parts = Vec::new();
        if !serving.is_empty() {
            parts.push(format!("requested: {}", serving.join(", ")));
        }
        if !not_serving.is_empty() {
            parts.push(format!(
                "requested but not serving: {}",
                not_serving.join("; ")
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// The four top-level conditions plus the reference's installer conditions, in a fixed order.
pub fn conditions(observed: &Observed<'_>) -> Vec<Condition> {
    let all: Vec<&Outcome> = observed.outcomes.to_vec();
    let (available, progressing, degraded) = match observed.desired {
        Desired::WaitingForPlatform => {
            let m = "waiting for status.platformStatus.type of Infrastructure cluster".to_string();
            (
                condition("Available", false, Reason::WaitingForPlatform, m.clone()),
                condition("Progressing", true, Reason::WaitingForPlatform, m),
                condition("Degraded", false, Reason::AsExpected, String::new()),
            )
        }
        Desired::Unsupported { platform, reason } => {
            let m = format!("{NOT_IMPLEMENTED_MESSAGE} ({platform}: {reason})");
            (
                condition("Available", true, Reason::PlatformNotSupported, m),
                condition("Progressing", false, Reason::AsExpected, String::new()),
                condition("Degraded", false, Reason::AsExpected, String::new()),
            )
        }
        Desired::Install(wants) => {
            let (missing, needed) = observed.needed();
            let mut available = available(&wants.platform, &missing, &needed);
            if let Some(note) = observed.extra_note() {
                available.message = format!("{}; {note}", available.message);
            }
            with_names_notes(&mut available, &all);
            (
                available,
                progressing(observed.missing, &all),
                degraded(&all),
            )
        }
    };
    let progressing = with_removals(progressing, observed.removals);
    let upgradeable = upgradeable(&degraded, observed.unselected, &all);
    // The reference's own pair, kept for consumers that read them (ref §2.8).
    let installer_available = condition(
        "CapiInstallerControllerAvailable",
        available.status,
        if available.status {
            Reason::AsExpected
        } else {
            available.reason
        },
        available.message.clone(),
    );
    let installer_degraded = condition(
        "CapiInstallerControllerDegraded",
        degraded.status,
        if degraded.status {
            Reason::SyncingFailed
        } else {
            Reason::AsExpected
        },
        degraded.message.clone(),
    );
    vec![
        available,
        progressing,
        degraded,
        upgradeable,
        installer_available,
        installer_degraded,
    ]
}

/// The reference's installer controller, which applies revisions: its conditions
/// (`InstallerControllerProgressing`, `InstallerControllerAvailable`) say how this pass applied the
/// providers.
pub(crate) const INSTALLER_CONTROLLER: &str = "InstallerController";
/// The reference's revision controller, which records revisions in `ClusterAPI/cluster` status.
pub(crate) const REVISION_CONTROLLER: &str = "RevisionController";

/// How this pass ended for each of the reference's two controllers, whose work this installer does
/// in one pass: `INSTALLER_CONTROLLER` from the providers' outcomes, `REVISION_CONTROLLER` from
/// the recording of the revision.
pub fn controllers(observed: &Observed<'_>) -> [(&'static str, ControllerResult); 2] {
    let platform = || ControllerResult::WaitingOnExternal("Infrastructure PlatformStatus".into());
    let (installer, revision) = match observed.desired {
        Desired::WaitingForPlatform => (platform(), platform()),
        // Nothing to install or record: both are done.
        Desired::Unsupported { .. } => (ControllerResult::Success, ControllerResult::Success),
        Desired::Install(_) => (installer_result(observed), observed.recording.result()),
    };
    [
        (INSTALLER_CONTROLLER, installer),
        (REVISION_CONTROLLER, revision),
    ]
}

/// A failure that is not retried until its input changes (a rolled-back revision, a second source
/// of a provider): for the reference, one that needs an administrator.
fn terminal(o: &Outcome) -> bool {
    duplicate(o)
        || matches!(&o.state, ProviderState::Failed { error, .. } if error.waits_for_change())
}

/// Errors first (any retried one makes the whole retried, as in the reference), then what the pass
/// waits for; a success only when every provider serves its content and nothing is uninstalling.
fn installer_result(observed: &Observed<'_>) -> ControllerResult {
    let failed: Vec<&Outcome> = observed
        .outcomes
        .iter()
        .copied()
        .filter(|o| matches!(o.state, ProviderState::Failed { .. }))
        .collect();
    let messages = |outcomes: &[&Outcome]| {
        outcomes
            .iter()
            .filter_map(|o| o.failure_message())
            .collect::<Vec<_>>()
            .join("; ")
    };
    if failed.iter().any(|o| !terminal(o)) {
        return ControllerResult::EphemeralError(messages(&failed));
    }
    if !failed.is_empty() {
        return ControllerResult::NonRetryableError(messages(&failed));
    }
    let all: Vec<&Outcome> = observed.outcomes.to_vec();
    let mut waiting = waiting(observed.missing, &all);
    waiting.extend(
        all.iter()
            .filter(|o| !o.unavailable.is_empty())
            .map(|o| not_serving_message(o)),
    );
    waiting.extend(
        observed
            .removals
            .iter()
            .filter(|r| !r.done)
            .map(Removal::describe),
    );
    match waiting.is_empty() {
        true => ControllerResult::Success,
        false => ControllerResult::Progressing(waiting.join("; ")),
    }
}

/// Uninstalls in progress keep `Progressing` True, each named.
fn with_removals(progressing: Condition, removals: &[Removal]) -> Condition {
    let running: Vec<String> = removals
        .iter()
        .filter(|r| !r.done)
        .map(Removal::describe)
        .collect();
    if running.is_empty() {
        return progressing;
    }
    let mut parts = vec![];
    if progressing.status {
        parts.push(progressing.message);
    }
    parts.extend(running);
    let reason = match progressing.status {
        true => progressing.reason,
        false => Reason::Uninstalling,
    };
    condition("Progressing", true, reason, parts.join("; "))
}

fn upgradeable(
    degraded: &Condition,
    unselected: &[Unselected],
    outcomes: &[&Outcome],
) -> Condition {
    // A provider version held back by a requirement (action Deny) first, whether or not it degrades
    // the operator yet: the next release's CRDs of that provider are likely to break it too, and the
    // cluster should not move on while one of its providers cannot.
    let held: Vec<String> = outcomes
        .iter()
        .filter(|o| {
            matches!(
                &o.state,
                ProviderState::Failed {
                    error: ProviderError::Render(RenderError::Incompatible { .. }),
                    ..
                }
            )
        })
        .filter_map(|o| o.failure_message())
        .collect();
    if !held.is_empty() {
        return condition(
            "Upgradeable",
            false,
            Reason::CompatibilityRequirementNotMet,
            format!(
                "a provider's version is held back by CRD compatibility requirements, which the next release's CRDs of that provider may break too; fix the CRD or agree a change of the requirement with its owner before upgrading: {}",
                held.join("; ")
            ),
        );
    }
    if degraded.status {
        return condition(
            "Upgradeable",
            false,
            Reason::InstallerDegraded,
            "the installer is degraded; see the Degraded condition".into(),
        );
    }
    if unselected.is_empty() {
        return condition("Upgradeable", true, Reason::AsExpected, String::new());
    }
    let each: Vec<String> = unselected
        .iter()
        .map(|u| match &u.provider {
            Some(p) => format!("{} (provider {p}): {} objects", u.id, u.objects),
            None => format!("{}: {} objects", u.id, u.objects),
        })
        .collect();
    condition(
        "Upgradeable",
        false,
        Reason::ProvidersNotSelected,
        format!(
            "providers no longer selected (source deleted or platform changed), their objects left in place: {}; restore the source, or delete the objects and the provider's key in ConfigMap capi-installer-inventory",
            each.join("; ")
        ),
    )
}

/// Whether every provider is installed and ready at the current content: then, and only then, the
/// operator is at the release it runs (`versions[operator]`).
pub fn at_release<'a>(missing: &[Wanted], outcomes: impl IntoIterator<Item = &'a Outcome>) -> bool {
    missing.is_empty()
        && outcomes
            .into_iter()
            .filter(|o| !duplicate(o))
            .all(|o| matches!(o.state, ProviderState::Installed) && o.held.is_none())
}

/// A second source of a provider: reported, but the provider is the other source's.
fn duplicate(o: &Outcome) -> bool {
    matches!(
        o.state,
        ProviderState::Failed {
            error: ProviderError::DuplicateSource { .. },
            ..
        }
    )
}

/// Whether a failure has lasted long enough to degrade the operator; a rollback degrades at once (it
/// follows a whole `--deployment-timeout` of waiting, and holds until the content changes).
fn persistent(o: &Outcome) -> bool {
    matches!(&o.state, ProviderState::Failed { attempts, failing_for, error }
        if *attempts >= DEGRADED_AFTER_ATTEMPTS || *failing_for >= DEGRADED_AFTER || error.waits_for_change())
}

fn first_failure_reason<'a>(outcomes: impl IntoIterator<Item = &'a Outcome>) -> Reason {
    outcomes
        .into_iter()
        .find_map(|o| match &o.state {
            ProviderState::Failed { error, .. } => Some(error.reason()),
            _ => None,
        })
        .unwrap_or(Reason::AsExpected)
}

pub(crate) fn degraded(outcomes: &[&Outcome]) -> Condition {
    let failing: Vec<&Outcome> = outcomes.iter().copied().filter(|o| persistent(o)).collect();
    // A provider whose workloads stay unavailable degrades the operator; a pod that is replaced
    // within the tolerated time does not (OpenShift: Degraded is a persistent observation).
    let lasting: Vec<String> = outcomes
        .iter()
        .filter_map(|o| {
            let lasting: Vec<String> = o
                .unavailable
                .iter()
                .filter(|u| u.persistent())
                .map(|u| {
                    format!(
                        "{} has not been Available for {}s: {}",
                        u.key,
                        u.tolerated.as_secs(),
                        u.status
                    )
                })
                .collect();
            (!lasting.is_empty())
                .then(|| format!("{}: {}", o.describe_serving(), lasting.join("; ")))
        })
        .collect();
    if failing.is_empty() && lasting.is_empty() {
        return condition("Degraded", false, Reason::AsExpected, String::new());
    }
    let message = failing
        .iter()
        .filter_map(|o| o.failure_message())
        .chain(lasting)
        .collect::<Vec<_>>()
        .join("; ");
    let reason = match first_failure_reason(failing.iter().copied()) {
        Reason::AsExpected => Reason::ProviderUnavailable,
        failure => failure,
    };
    condition("Degraded", true, reason, message)
}

/// What the installer is waiting for, one entry per provider (and one for missing sources).
fn waiting(missing: &[Wanted], outcomes: &[&Outcome]) -> Vec<String> {
    let mut waiting = Vec::new();
    if !missing.is_empty() {
        let names: Vec<String> = missing.iter().map(Wanted::describe).collect();
        waiting.push(format!(
            "waiting for transport ConfigMaps: {}",
            names.join(", ")
        ));
    }
    for o in outcomes {
        let describe = o.target.source.describe();
        if let Some(message) = o.state.waiting_message() {
            waiting.push(format!("{describe}: {message}"));
        } else if let ProviderState::Blocked { behind } = &o.state {
            waiting.push(format!("{describe}: waiting for {behind}"));
        } else if let Some(failure) = o.failure_message().filter(|_| !persistent(o)) {
            waiting.push(format!("{describe}: retrying after {failure}"));
        }
    }
    waiting
}

fn waiting_reason(missing: &[Wanted]) -> Reason {
    if missing.is_empty() {
        Reason::Installing
    } else {
        Reason::WaitingForProviderConfigMaps
    }
}

pub(crate) fn progressing(missing: &[Wanted], outcomes: &[&Outcome]) -> Condition {
    let waiting = waiting(missing, outcomes);
    if waiting.is_empty() {
        return condition("Progressing", false, Reason::AsExpected, String::new());
    }
    condition(
        "Progressing",
        true,
        waiting_reason(missing),
        waiting.join("; "),
    )
}

/// Available: every provider serves a version that was fully rolled out at least once and whose
/// workloads are Available now (and no required one lacks a source). Otherwise False, naming each
/// provider that does not serve and what blocks it (for a served version: each workload that is not
/// Available, with what its status says).
fn available(platform: &str, missing: &[Wanted], outcomes: &[&Outcome]) -> Condition {
    let providers: Vec<&Outcome> = outcomes.iter().copied().filter(|o| !duplicate(o)).collect();
    if missing.is_empty() && !providers.is_empty() && providers.iter().all(|o| o.serving) {
        let installed: Vec<String> = providers.iter().map(|o| o.describe_serving()).collect();
        return condition(
            "Available",
            true,
            Reason::AsExpected,
            format!(
                "Cluster API is installed on {platform}: {}",
                installed.join(", ")
            ),
        );
    }
    let not_serving: Vec<&Outcome> = providers.into_iter().filter(|o| !o.serving).collect();
    let mut message: Vec<String> = Vec::new();
    if !missing.is_empty() {
        let names: Vec<String> = missing.iter().map(Wanted::describe).collect();
        message.push(format!(
            "waiting for transport ConfigMaps: {}",
            names.join(", ")
        ));
    }
    message.extend(not_serving.iter().map(|o| not_serving_message(o)));
    let reason = not_serving_reason(&not_serving).unwrap_or_else(|| waiting_reason(missing));
    let message = if message.is_empty() {
        "installing".to_string()
    } else {
        message.join("; ")
    };
    condition("Available", false, reason, message)
}

/// The reason of `Available=False` for providers that do not serve: a served version that lost its
/// workloads, else a failure; `None` when they only wait.
pub(crate) fn not_serving_reason(not_serving: &[&Outcome]) -> Option<Reason> {
    if not_serving.iter().any(|o| !o.unavailable.is_empty()) {
        return Some(Reason::ProviderUnavailable);
    }
    match first_failure_reason(not_serving.iter().copied()) {
        Reason::AsExpected => None,
        failure => Some(failure),
    }
}

/// Appends to `available`'s message the short names each provider was installed without (see
/// [`Outcome::names_note`]): `kubectl get amct` finds another provider's kind, and an administrator
/// should see why.
pub(crate) fn with_names_notes(available: &mut Condition, outcomes: &[&Outcome]) {
    let notes: Vec<String> = outcomes.iter().filter_map(|o| o.names_note()).collect();
    if !notes.is_empty() {
        available.message = format!(
            "{}; installed without CRD short names that other CRDs hold: {}",
            available.message,
            notes.join("; ")
        );
    }
}

/// Why a provider does not serve: the workloads of its served version that are not Available, its
/// failure, what it waits for, or what blocks it.
pub(crate) fn not_serving_message(o: &Outcome) -> String {
    if !o.unavailable.is_empty() {
        let each: Vec<String> = o.unavailable.iter().map(ToString::to_string).collect();
        return format!("{}: {}", o.describe_serving(), each.join("; "));
    }
    let describe = o.target.source.describe();
    match (&o.state, o.failure_message()) {
        (_, Some(failure)) => failure,
        (ProviderState::Blocked { behind }, _) => format!("{describe}: waiting for {behind}"),
        (state, _) => match state.waiting_message() {
            Some(waiting) => format!("{describe}: {waiting}"),
            None => format!("{describe}: not serving"),
        },
    }
}

/// `relatedObjects`: the installer's namespace, the providers' namespace and the
/// `InfrastructureProvider` objects, then every provider's related objects without duplicates.
pub fn related<'a>(
    installer_namespace: &str,
    namespace: &str,
    outcomes: impl IntoIterator<Item = &'a Outcome>,
) -> Vec<Value> {
    let mut seen = BTreeSet::new();
    let mut out = vec![
        json!({"group": "", "resource": "namespaces", "name": installer_namespace}),
        json!({"group": "", "resource": "namespaces", "name": namespace}),
        json!({"group": capi_bundle::api::GROUP, "resource": capi_bundle::api::PLURAL, "name": ""}),
    ];
    let fixed = out.len();
    for o in outcomes {
        for r in &o.related {
            if seen.insert(r.to_string()) {
                out.push(r.clone());
            }
        }
    }
    // In the reference's order (namespace, group, resource, name): the order of providers must not
    // reorder the list between reconciles.
    let field = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    out[fixed..].sort_by_key(|v| {
        (
            field(v, "namespace"),
            field(v, "group"),
            field(v, "resource"),
            field(v, "name"),
        )
    });
    out
}

#[cfg(test)]
mod tests;
