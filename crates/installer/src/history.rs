//! What the installer remembers about each provider between reconciles: its failure series (for the
//! `Degraded` persistence rule and the retry backoff) and how long a readiness gate has been waited on.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use capi_apply::Phase;

use crate::source::SourceId;

/// A failed attempt counts towards `Degraded` only when it comes at least this long after the previous
/// counted one: a burst of watch events must not turn one transient error into "3 attempts".
pub const ATTEMPT_SPACING: Duration = Duration::from_secs(5);

#[derive(Clone, Copy, Debug)]
struct Failures {
    first: Instant,
    attempts: u32,
    last_counted: Instant,
}

#[derive(Clone, Debug)]
struct Gate {
    phase: Phase,
    since: Instant,
}

/// Per-provider memory, keyed by source.
#[derive(Default, Debug)]
pub struct History {
    failures: HashMap<SourceId, Failures>,
    gates: HashMap<SourceId, Gate>,
}

impl History {
    /// Records a failed attempt; returns the attempts counted and how long the series has lasted.
    pub fn failed(&mut self, id: &SourceId, now: Instant) -> (u32, Duration) {
        let f = self.failures.entry(id.clone()).or_insert(Failures {
            first: now,
            attempts: 0,
            last_counted: now,
        });
        if f.attempts == 0 || now.duration_since(f.last_counted) >= ATTEMPT_SPACING {
            f.attempts += 1;
            f.last_counted = now;
        }
        (f.attempts, now.duration_since(f.first))
    }

    /// Ends a failure series (the provider installed, or progresses again).
    pub fn succeeded(&mut self, id: &SourceId) {
        self.failures.remove(id);
    }

    /// When the gate of `phase` started to be waited on (now, when it is a new wait).
    pub fn gate_since(&mut self, id: &SourceId, phase: Phase, now: Instant) -> Instant {
        match self.gates.get(id) {
            Some(g) if g.phase == phase => g.since,
            _ => {
                self.gates.insert(id.clone(), Gate { phase, since: now });
                now
            }
        }
    }

    pub fn gate_passed(&mut self, id: &SourceId) {
        self.gates.remove(id);
    }

    /// The backoff before retrying a failed provider: 5 s, doubling per counted attempt, at most 60 s.
    pub fn retry_delay(attempts: u32) -> Duration {
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
        assert_eq!(h.failed(&id, t0).0, 1);
        assert_eq!(h.failed(&id, t0 + Duration::from_secs(1)).0, 1, "a burst");
        let (attempts, failing_for) = h.failed(&id, t0 + Duration::from_secs(6));
        assert_eq!((attempts, failing_for), (2, Duration::from_secs(6)));
        h.succeeded(&id);
        assert_eq!(
            h.failed(&id, t0 + Duration::from_secs(7)).0,
            1,
            "a new series"
        );
    }

    #[test]
    fn a_gate_timer_runs_per_phase() {
        let id = SourceId::ConfigMap("aws".into());
        let mut h = History::default();
        let t0 = Instant::now();
        let later = t0 + Duration::from_secs(10);
        assert_eq!(h.gate_since(&id, Phase::Workloads, t0), t0);
        assert_eq!(h.gate_since(&id, Phase::Workloads, later), t0);
        assert_eq!(
            h.gate_since(&id, Phase::CustomResourceDefinitions, later),
            later
        );
        h.gate_passed(&id);
        assert_eq!(h.gate_since(&id, Phase::Workloads, later), later);
    }

    #[test]
    fn retry_backoff_doubles_up_to_a_minute() {
        let delays: Vec<u64> = (1..=7).map(|a| History::retry_delay(a).as_secs()).collect();
        assert_eq!(delays, [5, 10, 20, 40, 60, 60, 60]);
    }
}
