//! How late the async runtime runs a task that is ready: a task that sleeps [`PERIOD`] and measures
//! how much later than that it woke. A worker thread kept busy by a long computation (or a process
//! starved of CPU) delays every task behind it — health probes, watch events, the controller's own
//! requests — and this task by as much, so its lateness is what they all wait.

use std::time::Duration;

use tokio::time::Instant;

use crate::metrics::ProcessMetrics;

/// How often the runtime is sampled: often enough to see a stall of a fraction of a second, rarely
/// enough to cost nothing (one timer and one histogram sample).
pub(crate) const PERIOD: Duration = Duration::from_millis(100);

/// A stall at least this long is logged (each time the longest so far grows), so that a log shows
/// when and how badly the process could not keep up.
const LOGGED: Duration = Duration::from_secs(1);

/// Samples the current runtime into `metrics` until the runtime shuts down.
pub(crate) fn watch(metrics: ProcessMetrics) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let due = Instant::now() + PERIOD;
            tokio::time::sleep_until(due).await;
            let late = Instant::now().saturating_duration_since(due);
            let longest = metrics.longest_stall();
            metrics.observe_stall(late);
            if late >= LOGGED && late > longest {
                tracing::warn!(
                    stalled = %format!("{late:.2?}"),
                    "the async runtime could not run a ready task for this long (a computation on a worker thread, or too little CPU)"
                );
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A computation that holds the only worker thread shows as a stall of about its length.
    #[tokio::test(flavor = "current_thread")]
    async fn a_blocked_worker_shows_as_a_stall() {
        let metrics = ProcessMetrics::unregistered();
        let probe = watch(metrics.clone());
        // Let the probe start its first sleep, then hold the thread for longer than a period.
        tokio::time::sleep(PERIOD / 2).await;
        std::thread::sleep(PERIOD * 4);
        // The probe runs once this task yields; wait for it to have sampled.
        while metrics.longest_stall().is_zero() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        probe.abort();
        let longest = metrics.longest_stall();
        // The probe was due 50 ms into the 400 ms the thread was held: at least 350 ms late.
        assert!(longest >= PERIOD * 7 / 2, "{longest:?}");
    }
}
