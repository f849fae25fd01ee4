//! Leader election on a `coordination.k8s.io/v1` Lease, so that of several replicas only one runs the
//! controller.
//!
//! The rules are client-go's `leaderelection` (what every OpenShift operator uses), written out here
//! instead of taken from `kube-lease-manager` because that crate (0.13) lacks three properties we rely on:
//! its renewals and forced take-overs are patches without a `resourceVersion` precondition (two replicas
//! can both believe they hold the lease), a holder that cannot renew keeps believing it holds the lease
//! (errors are retried silently, there is no renew deadline), and a standby sleeps until the old lease
//! would have expired even when the holder released it, so a release does not hand over at once.
//!
//! - Every write is a `replace` carrying the `resourceVersion` that was read: of two replicas racing for
//!   the lease, exactly one wins; the other gets 409 Conflict and stays a candidate.
//! - Expiry is judged on the candidate's own monotonic clock, from when it last saw the lease record
//!   change, never from `renewTime` (which was written by another machine's clock).
//! - The holder renews every [`Timing::retry_period`]; if no renewal succeeded within
//!   [`Timing::renew_deadline`] (shorter than the lease duration) it gives up before anyone else may take
//!   over, so two leaders never overlap as long as clocks run at the same rate. The deadline counts from
//!   when the last successful renewal was *sent*: the write landed after that, so a standby's clock
//!   starts later than ours.
//! - Every request is bounded by a timeout: for the holder, what remains of the renew deadline. kube's
//!   client has no read timeout, and a renewal that hangs (an API server that accepts but never answers,
//!   a dead connection nobody closes) would otherwise keep the old leader believing, and writing, after a
//!   standby took over.
//! - The holder renews on a thread of its own with a client of its own ([`crate::run`]): a renewal never
//!   waits for the process's other work, neither a worker thread kept busy by a computation nor a
//!   queue of the controller's requests. What can still make it late is the API server itself (or a
//!   process that does not run at all): an API server that takes longer than the renew deadline less
//!   the retry period to answer the renewals makes the leader give up, as it must.
//! - Release clears `holderIdentity` (and sets the duration to 1 s, as client-go does), so a standby,
//!   which looks every [`Timing::retry_period`], takes over within that period.

use std::future::Future;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ObjectMeta, PostParams};
use kube::{Client, ResourceExt};

use crate::duration::format_duration;

/// How often and how long. OpenShift's values for operators that must survive a kube-apiserver rollout
/// (a leader keeps its lease through two minutes of API server disruption): a standby takes over between
/// `lease_duration` and `lease_duration + 2 × retry_period` after the last renewal (137–189 s).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    /// How long a lease is valid after its last renewal, as written into the Lease.
    pub lease_duration: Duration,
    /// The holder gives up when it could not renew for this long (< `lease_duration`).
    pub renew_deadline: Duration,
    /// How often the holder renews, a standby looks at the lease, and a failed attempt is retried.
    pub retry_period: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            lease_duration: Duration::from_secs(137),
            renew_deadline: Duration::from_secs(107),
            retry_period: Duration::from_secs(26),
        }
    }
}

impl Timing {
    // Checked and held by the process runtime (`run`); the installer library only acquires and
    // releases a Lease (feature `leader` alone).
    #[cfg(feature = "process")]
    /// The orderings that make the election safe: a holder gives up before its lease expires for
    /// others, and tries at least once more before giving up. Whole seconds, because the Lease records
    /// its duration in seconds.
    pub(crate) fn validate(&self) -> Result<(), TimingError> {
        let t = self;
        if t.lease_duration.subsec_nanos() != 0 || t.lease_duration < Duration::from_secs(1) {
            return Err(TimingError(format!(
                "the lease duration ({}) must be whole seconds, at least 1s",
                format_duration(t.lease_duration)
            )));
        }
        if t.renew_deadline >= t.lease_duration {
            return Err(TimingError(format!(
                "the renew deadline ({}) must be shorter than the lease duration ({})",
                format_duration(t.renew_deadline),
                format_duration(t.lease_duration)
            )));
        }
        if t.retry_period.is_zero() || t.retry_period >= t.renew_deadline {
            return Err(TimingError(format!(
                "the retry period ({}) must be longer than 0 and shorter than the renew deadline ({})",
                format_duration(t.retry_period),
                format_duration(t.renew_deadline)
            )));
        }
        Ok(())
    }
}

/// Leader election timings that cannot work (see [`Timing::validate`]).
#[derive(Debug, thiserror::Error)]
#[error("leader election: {0}")]
pub struct TimingError(String);

#[cfg(feature = "process")]
/// Why leadership ended without being asked to.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Lost {
    #[error("Lease {namespace}/{name} is now held by {holder:?}")]
    TakenOver {
        namespace: String,
        name: String,
        holder: Option<String>,
    },
    #[error(
        "Lease {namespace}/{name} could not be renewed within the renew deadline ({deadline}): {last_error}"
    )]
    RenewDeadline {
        namespace: String,
        name: String,
        deadline: String,
        last_error: String,
    },
}

/// One attempt on the Lease that failed.
#[derive(Debug, thiserror::Error)]
pub enum AttemptError {
    #[error(transparent)]
    Api(#[from] kube::Error),
    #[error("no answer from the API server within {0}")]
    TimedOut(String),
}

/// One replica's side of the election.
pub struct Elector {
    api: Api<Lease>,
    namespace: String,
    name: String,
    identity: String,
    timing: Timing,
    /// When the lease record (holder, renewTime, transitions) last changed, on our clock.
    observed: Option<(RecordId, Instant)>,
    /// When the attempt that acquired the lease was sent: the renew deadline counts from there.
    acquired: Option<Instant>,
}

/// What identifies one renewal of a lease: when this changes, its holder is alive.
#[derive(Clone, Debug, PartialEq, Eq)]
struct RecordId {
    holder: Option<String>,
    renew_time: Option<String>,
    transitions: Option<i32>,
    duration: Option<i32>,
}

impl RecordId {
    fn of(lease: &Lease) -> RecordId {
        let spec = lease.spec.clone().unwrap_or_default();
        RecordId {
            holder: spec.holder_identity.filter(|h| !h.is_empty()),
            renew_time: spec.renew_time.map(|t| t.0.to_string()),
            transitions: spec.lease_transitions,
            duration: spec.lease_duration_seconds,
        }
    }
}

enum Attempt {
    /// We hold the lease (acquired or renewed).
    Held,
    /// Someone else holds a valid lease.
    HeldBy(Option<String>),
}

impl Elector {
    /// `name` is the Lease's name: one per binary, so that each binary elects its own leader.
    pub fn new(
        client: Client,
        namespace: &str,
        name: &str,
        identity: &str,
        timing: Timing,
    ) -> Elector {
        Elector {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_string(),
            name: name.to_string(),
            identity: identity.to_string(),
            timing,
            observed: None,
            acquired: None,
        }
    }

    /// Campaigns until this replica holds the lease. `on_attempt` is called after each attempt with
    /// whether it reached the API server (readiness of a standby).
    pub async fn acquire(&mut self, mut on_attempt: impl FnMut(bool)) {
        let mut last_holder: Option<Option<String>> = None;
        loop {
            // A standby's attempt may take as long as a holder's renewal would: it ends in time for the
            // next look either way.
            let sent = Instant::now();
            let limit = self.timing.renew_deadline;
            match bounded(limit, self.try_acquire_or_renew()).await {
                Ok(Attempt::Held) => {
                    self.acquired = Some(sent);
                    on_attempt(true);
                    tracing::info!(lease = %self.lease_ref(), identity = %self.identity, "became the leader");
                    return;
                }
                Ok(Attempt::HeldBy(holder)) => {
                    on_attempt(true);
                    if last_holder.as_ref() != Some(&holder) {
                        tracing::info!(lease = %self.lease_ref(), ?holder, "standing by: another replica is the leader");
                        last_holder = Some(holder);
                    }
                }
                Err(e) => {
                    on_attempt(false);
                    tracing::warn!(lease = %self.lease_ref(), error = %e, "cannot reach the lease; retrying");
                }
            }
            tokio::time::sleep(self.timing.retry_period).await;
        }
    }

    #[cfg(feature = "process")]
    /// Renews the lease until it is lost; returns why. After each renewal, `on_renewed` is told how
    /// long after it was due the renewal succeeded (what the renew deadline leaves room for). Cancel
    /// the future to stop renewing (then call [`Elector::release`]).
    pub(crate) async fn hold(&mut self, mut on_renewed: impl FnMut(Duration)) -> Lost {
        let mut renewed = self.acquired.unwrap_or_else(Instant::now);
        loop {
            let due = renewed + self.timing.retry_period;
            tokio::time::sleep_until(due.into()).await;
            let late = due.elapsed();
            if late >= self.timing.retry_period {
                // Only a process that did not run at all gets here (the election has a thread of its
                // own): the renew deadline keeps counting meanwhile.
                tracing::warn!(lease = %self.lease_ref(), late = %format!("{late:.2?}"),
                    "the lease renewal starts late: this process did not run for that long");
            }
            let mut last_error = None;
            loop {
                let remaining = self.timing.renew_deadline.saturating_sub(renewed.elapsed());
                if remaining.is_zero() {
                    return self.deadline_passed(last_error, due);
                }
                let sent = Instant::now();
                match bounded(remaining, self.try_acquire_or_renew()).await {
                    Ok(Attempt::Held) => {
                        on_renewed(due.elapsed());
                        renewed = sent;
                        break;
                    }
                    Ok(Attempt::HeldBy(holder)) => {
                        return Lost::TakenOver {
                            namespace: self.namespace.clone(),
                            name: self.name.clone(),
                            holder,
                        };
                    }
                    Err(e) => {
                        if renewed.elapsed() < self.timing.renew_deadline {
                            tracing::warn!(lease = %self.lease_ref(), error = %e, "cannot renew the lease; retrying");
                        }
                        last_error = Some(e);
                    }
                }
                let remaining = self.timing.renew_deadline.saturating_sub(renewed.elapsed());
                tokio::time::sleep(self.timing.retry_period.min(remaining)).await;
            }
        }
    }

    #[cfg(feature = "process")]
    /// The renew deadline passed: why, in the words of the last attempt, or — when none could be
    /// sent — how late the renewal was.
    fn deadline_passed(&self, last_error: Option<AttemptError>, due: Instant) -> Lost {
        let last_error = match last_error {
            Some(e) => e.to_string(),
            None => format!(
                "no renewal could be sent: it was due {:.2?} ago, and this process did not run meanwhile",
                due.elapsed()
            ),
        };
        Lost::RenewDeadline {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            deadline: format_duration(self.timing.renew_deadline),
            last_error,
        }
    }

    /// Clears the holder when it is still us, so that a standby takes over without waiting for the
    /// lease to expire. Best effort, bounded by the retry period: when it fails, the lease simply
    /// expires.
    pub async fn release(&mut self) -> Result<(), AttemptError> {
        bounded(self.timing.retry_period, self.clear_holder()).await
    }

    async fn clear_holder(&mut self) -> Result<(), AttemptError> {
        let mut lease = match self.api.get_opt(&self.name).await? {
            Some(l) => l,
            None => return Ok(()),
        };
        if RecordId::of(&lease).holder.as_deref() != Some(self.identity.as_str()) {
            return Ok(());
        }
        let spec = lease.spec.get_or_insert_with(Default::default);
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = Some(MicroTime(Timestamp::now()));
        self.api
            .replace(&self.name, &PostParams::default(), &lease)
            .await?;
        tracing::info!(lease = %self.lease_ref(), "released the lease");
        Ok(())
    }

    fn lease_ref(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// One round of client-go's `tryAcquireOrRenew`.
    async fn try_acquire_or_renew(&mut self) -> Result<Attempt, AttemptError> {
        let now = MicroTime(Timestamp::now());
        let duration = self.timing.lease_duration.as_secs() as i32;
        let Some(lease) = self.api.get_opt(&self.name).await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    ..Default::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(self.identity.clone()),
                    lease_duration_seconds: Some(duration),
                    acquire_time: Some(now.clone()),
                    renew_time: Some(now),
                    lease_transitions: Some(0),
                    ..Default::default()
                }),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(created) => {
                    self.record(&created);
                    Ok(Attempt::Held)
                }
                // Another replica created it first: it is the leader.
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(Attempt::HeldBy(None)),
                Err(e) => Err(e.into()),
            };
        };

        let id = RecordId::of(&lease);
        self.record(&lease);
        let ours = id.holder.as_deref() == Some(self.identity.as_str());
        if !ours && let Some(holder) = &id.holder {
            let valid_for = Duration::from_secs(id.duration.unwrap_or(0).max(0) as u64);
            let seen_at = self
                .observed
                .as_ref()
                .map(|(_, at)| *at)
                .unwrap_or_else(Instant::now);
            if seen_at.elapsed() < valid_for {
                return Ok(Attempt::HeldBy(Some(holder.clone())));
            }
        }

        let mut next = lease.clone();
        let spec = next.spec.get_or_insert_with(Default::default);
        if !ours {
            spec.acquire_time = Some(now.clone());
            spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
            spec.holder_identity = Some(self.identity.clone());
        }
        spec.renew_time = Some(now);
        spec.lease_duration_seconds = Some(duration);
        // `next` carries the resourceVersion just read: a concurrent writer makes this fail with 409.
        match self
            .api
            .replace(&self.name, &PostParams::default(), &next)
            .await
        {
            Ok(written) => {
                self.record(&written);
                Ok(Attempt::Held)
            }
            Err(kube::Error::Api(s)) if s.code == 409 => {
                // Someone wrote in between; find out who holds it now on the next round.
                let holder = self
                    .api
                    .get_opt(&self.name)
                    .await?
                    .and_then(|l| RecordId::of(&l).holder);
                if holder.as_deref() == Some(self.identity.as_str()) {
                    // Our own earlier write raced with a read; the lease is ours.
                    Ok(Attempt::Held)
                } else {
                    Ok(Attempt::HeldBy(holder))
                }
            }
            Err(e) => Err(e.into()),
        }
    }

    fn record(&mut self, lease: &Lease) {
        let id = RecordId::of(lease);
        if self.observed.as_ref().map(|(seen, _)| seen) != Some(&id) {
            self.observed = Some((id, Instant::now()));
        }
        tracing::trace!(lease = %self.lease_ref(), resource_version = ?lease.resource_version(), "lease observed");
    }
}

/// Runs one attempt for at most `limit`.
async fn bounded<T>(
    limit: Duration,
    attempt: impl Future<Output = Result<T, AttemptError>>,
) -> Result<T, AttemptError> {
    tokio::time::timeout(limit, attempt)
        .await
        .unwrap_or_else(|_| Err(AttemptError::TimedOut(format_duration(limit))))
}

#[cfg(feature = "process")]
/// A name for this replica that is unique among the replicas: the pod name when given, else the host
/// name and process id.
pub(crate) fn default_identity(instance: Option<&str>) -> String {
    if let Some(i) = instance.filter(|i| !i.is_empty()) {
        return i.to_string();
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "replica".into());
    format!("{host}-{}", std::process::id())
}
