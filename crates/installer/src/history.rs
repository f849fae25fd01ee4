//! What the installer remembers about each provider between reconciles: its failure series (for the
//! `Degraded` persistence rule and the retry backoff) and how long a readiness gate has been waited on.
//!
//! The failure series also lives in the provider's record (see [`crate::inventory`]), and a new process
//! (a restart, a new leader) seeds it from there: `Degraded` does not drop to False and come back.
//! Gate timers are per version: a fixed version that replaces a timed-out one starts a new wait.
//! A serving workload that lost its availability is timed by its own `Available` condition; only one
//! without such a record is timed here.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use capi_apply::{ObjectKey, Phase};

use crate::source::SourceId;

/// A failed attempt counts towards `Degraded` only when it comes at least this long after the previous
/// counted one: a burst of watch events must not turn one transient error into "3 attempts".
pub(crate) const ATTEMPT_SPACING: Duration = Duration::from_secs(5);

#[derive(Clone, Copy, Debug)]
struct Failures {
    first: Instant,
    attempts: u32,
    last_counted: Instant,
}

#[derive(Clone, Debug)]
struct Gate {
    /// The content digest of the version waited for.
    digest: String,
    phase: Phase,
    since: Instant,
}

/// Per-provider memory, keyed by source.
#[derive(Default, Debug)]
pub(crate) struct History {
    failures: HashMap<SourceId, Failures>,
    gates: HashMap<SourceId, Gate>,
    /// Since when this process has seen a workload unavailable that does not say since when.
    unavailable: HashMap<ObjectKey, Instant>,
}

impl History {
    /// Continues a failure series that an earlier process recorded (`attempts` counted, the first
    /// `failing_for` ago). Does nothing when this process already follows a series for `id`.
    pub(crate) fn seed(
        &mut self,
        id: &SourceId,
        attempts: u32,
        failing_for: Duration,
        now: Instant,
    ) {
        let first = now.checked_sub(failing_for).unwrap_or(now);
        self.failures.entry(id.clone()).or_insert(Failures {
            first,
            attempts,
            last_counted: now.checked_sub(ATTEMPT_SPACING).unwrap_or(first),
        });
    }

    /// Whether this process follows a failure series for `id`.
    pub(crate) fn failing(&self, id: &SourceId) -> bool {
        self.failures.contains_key(id)
    }

    /// Records a failed attempt; returns the attempts counted, whether this one was counted, and how
    /// long the series has lasted.
    pub(crate) fn failed(&mut self, id: &SourceId, now: Instant) -> (u32, bool, Duration) {
        let f = self.failures.entry(id.clone()).or_insert(Failures {
            first: now,
            attempts: 0,
            last_counted: now,
        });
        let counted = f.attempts == 0 || now.duration_since(f.last_counted) >= ATTEMPT_SPACING;
        if counted {
            f.attempts += 1;
            f.last_counted = now;
        }
        (f.attempts, counted, now.duration_since(f.first))
    }

    /// Ends a failure series (the provider installed, or progresses again).
    pub(crate) fn succeeded(&mut self, id: &SourceId) {
        self.failures.remove(id);
    }

    /// When the gate of `phase` of the version `digest` started to be waited on (now, when it is a new
    /// wait).
    pub(crate) fn gate_since(
        &mut self,
        id: &SourceId,
        digest: &str,
        phase: Phase,
        now: Instant,
    ) -> Instant {
        match self.gates.get(id) {
            Some(g) if g.phase == phase && g.digest == digest => g.since,
            _ => {
                let gate = Gate {
                    digest: digest.to_string(),
                    phase,
                    since: now,
                };
                self.gates.insert(id.clone(), gate);
                now
            }
        }
    }

    /// The gate of `phase` is met. Only that phase's timer ends: every reconcile passes the earlier
    /// phases' gates again, and must not restart the wait of a later one (a Deployment that never
    /// becomes Available would never time out).
    pub(crate) fn gate_passed(&mut self, id: &SourceId, phase: Phase) {
        if self.gates.get(id).is_some_and(|g| g.phase == phase) {
            self.gates.remove(id);
        }
    }

    /// How long this process has seen `key` unavailable (zero the first time).
    pub(crate) fn unavailable_for(&mut self, key: &ObjectKey, now: Instant) -> Duration {
        now.duration_since(*self.unavailable.entry(key.clone()).or_insert(now))
    }

    /// `key` is Available: a later loss is timed afresh.
    pub(crate) fn available(&mut self, key: &ObjectKey) {
        self.unavailable.remove(key);
    }

    /// The backoff before retrying a failed provider: 5 s, doubling per counted attempt, at most 60 s.
    pub(crate) fn retry_delay(attempts: u32) -> Duration {
        Duration::from_secs((5u64 << attempts.saturating_sub(1).min(4)).min(60))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempts_are_counted_only_when_spaced() {
        let id = SourceId::ConfigMap("aws".into());
        let mut h = History::default();
        let t0 = Instant::now();
        assert_eq!(h.failed(&id, t0), (1, true, Duration::ZERO));
        let burst = h.failed(&id, t0 + Duration::from_secs(1));
        assert_eq!((burst.0, burst.1), (1, false), "a burst");
        let later = h.failed(&id, t0 + Duration::from_secs(6));
        assert_eq!(later, (2, true, Duration::from_secs(6)));
        h.succeeded(&id);
        assert_eq!(
            h.failed(&id, t0 + Duration::from_secs(7)).0,
            1,
            "a new series"
        );
    }

    #[test]
    fn a_series_recorded_by_an_earlier_process_continues() {
        let id = SourceId::ConfigMap("aws".into());
        let mut h = History::default();
        let now = Instant::now() + Duration::from_secs(600);
        h.seed(&id, 3, Duration::from_secs(150), now);
        assert!(h.failing(&id));
        let (attempts, counted, failing_for) = h.failed(&id, now);
        assert_eq!((attempts, counted), (4, true));
        assert_eq!(failing_for, Duration::from_secs(150));
        h.seed(&id, 1, Duration::ZERO, now);
        assert_eq!(h.failed(&id, now).0, 4, "a followed series is not reset");
    }

    #[test]
    fn a_gate_timer_runs_per_version_and_phase() {
        let id = SourceId::ConfigMap("aws".into());
        let mut h = History::default();
        let t0 = Instant::now();
        let later = t0 + Duration::from_secs(10);
        assert_eq!(h.gate_since(&id, "v1", Phase::Workloads, t0), t0);
        assert_eq!(h.gate_since(&id, "v1", Phase::Workloads, later), t0);
        assert_eq!(
            h.gate_since(&id, "v1", Phase::CustomResourceDefinitions, later),
            later
        );
        assert_eq!(h.gate_since(&id, "v1", Phase::Workloads, later), later);
        let fixed = later + Duration::from_secs(1);
        assert_eq!(
            h.gate_since(&id, "v2", Phase::Workloads, fixed),
            fixed,
            "a new version waits afresh"
        );
        let much_later = fixed + Duration::from_secs(10);
        h.gate_passed(&id, Phase::CustomResourceDefinitions);
        assert_eq!(
            h.gate_since(&id, "v2", Phase::Workloads, much_later),
            fixed,
            "an earlier phase passing again does not restart the wait"
        );
        h.gate_passed(&id, Phase::Workloads);
        assert_eq!(
            h.gate_since(&id, "v2", Phase::Workloads, much_later),
            much_later
        );
    }

    #[test]
    fn an_unavailable_workload_is_timed_until_it_is_available_again() {
        let key = ObjectKey::new("apps", "v1", "Deployment", Some("ns"), "d");
        let mut h = History::default();
        let t0 = Instant::now();
        assert_eq!(h.unavailable_for(&key, t0), Duration::ZERO);
        let later = t0 + Duration::from_secs(7);
        assert_eq!(h.unavailable_for(&key, later), Duration::from_secs(7));
        h.available(&key);
        assert_eq!(h.unavailable_for(&key, later), Duration::ZERO, "a new loss");
    }

    #[test]
    fn retry_backoff_doubles_up_to_a_minute() {
        let delays: Vec<u64> = (1..=7).map(|a| History::retry_delay(a).as_secs()).collect();
        assert_eq!(delays, [5, 10, 20, 40, 60, 60, 60]);
    }
}
