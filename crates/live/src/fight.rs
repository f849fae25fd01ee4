//! Write fights: another writer that keeps reverting fields we own. Server-side apply with force takes
//! the fields back each time, the other writer (a controller that owns them too) takes them back in
//! turn, and the two rewrite the object for ever (kube-controller-manager and an installer that
//! adopted `kube-root-ca.crt` patched it about a hundred times in 25 s). A repair of the same desired
//! object is counted per object; past [`REPAIRS`] within [`WINDOW`], the applier stops writing the
//! object (until the oldest repair leaves the window) and reports the fight with both field managers,
//! so the writes stay bounded and an administrator learns who fights whom. Pure, but for the clock the
//! caller passes.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use capi_object::ObjectKey;

/// Repairs of one object's drift (the same desired object written again because its live copy
/// changed) allowed within [`WINDOW`]; the next one is a fight.
pub const REPAIRS: usize = 3;
/// How long a repair counts.
pub const WINDOW: Duration = Duration::from_secs(300);

/// The repairs of each object within the window.
#[derive(Debug, Default)]
pub struct Fights {
    repairs: HashMap<ObjectKey, VecDeque<Instant>>,
}

impl Fights {
    /// Whether a repair of `key` at `now` may be written: `Ok` (and counted) while fewer than
    /// [`REPAIRS`] fall within [`WINDOW`] before it, else `Err(n)`, the repairs in the window (not
    /// counted: a repair not written is no write).
    pub fn repair(&mut self, key: &ObjectKey, now: Instant) -> Result<(), usize> {
        let times = self.repairs.entry(key.clone()).or_default();
        while times
            .front()
            .is_some_and(|t| now.saturating_duration_since(*t) >= WINDOW)
        {
            times.pop_front();
        }
        if times.len() >= REPAIRS {
            return Err(times.len());
        }
        times.push_back(now);
        Ok(())
    }

    /// Forgets `key` (a new desired object, or one no longer ours: a fresh start).
    pub fn forget(&mut self, key: &ObjectKey) {
        self.repairs.remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repairs_past_the_limit_within_the_window_are_a_fight() {
        let key = ObjectKey::new("", "v1", "ConfigMap", Some("ns"), "c");
        let other = ObjectKey::new("", "v1", "ConfigMap", Some("ns"), "d");
        let mut fights = Fights::default();
        let t0 = Instant::now();
        for i in 0..REPAIRS {
            assert_eq!(
                fights.repair(&key, t0 + Duration::from_secs(i as u64)),
                Ok(())
            );
        }
        // A fight: refused, and refusing again does not extend it.
        assert_eq!(
            fights.repair(&key, t0 + Duration::from_secs(10)),
            Err(REPAIRS)
        );
        assert_eq!(
            fights.repair(&key, t0 + Duration::from_secs(20)),
            Err(REPAIRS)
        );
        // Another object is its own count.
        assert_eq!(fights.repair(&other, t0 + Duration::from_secs(20)), Ok(()));
        // Once the oldest repair leaves the window, one more may be written.
        assert_eq!(fights.repair(&key, t0 + WINDOW), Ok(()));
        assert_eq!(fights.repair(&key, t0 + WINDOW), Err(REPAIRS));
        fights.forget(&key);
        assert_eq!(fights.repair(&key, t0 + WINDOW), Ok(()));
    }

    #[test]
    fn repairs_spread_over_more_than_the_window_never_fight() {
        let key = ObjectKey::new("apps", "v1", "Deployment", Some("ns"), "d");
        let mut fights = Fights::default();
        let t0 = Instant::now();
        let step = WINDOW / REPAIRS as u32;
        for i in 0..10 * REPAIRS as u32 {
            assert_eq!(fights.repair(&key, t0 + step * i), Ok(()), "repair {i}");
        }
    }
}
