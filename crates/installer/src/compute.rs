//! The pure steps that cost real CPU, run off the async runtime. Decoding a transport ConfigMap (zstd
//! and base64 of up to 1 MiB), rendering and checking a provider (parsing megabytes of YAML, the bundle
//! policy, the digest, the plan) and compressing a new revision take from milliseconds to seconds of
//! CPU (BENCHMARKS.md, `reconcile_cpu`). On a worker thread of the async runtime such a step holds up
//! every task queued behind it — watch events, the health probes, the metrics endpoint — for as long;
//! on tokio's blocking pool the workers stay free, and the step's own thread is the only one it
//! occupies. Decoding and planning run one provider after the other; compressing and replaying
//! revisions run in each provider's own reconcile, so up to one such thread per infrastructure provider.

use std::time::Duration;

use crate::metrics::Metrics;

/// A step run through [`run`], as its metric label names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// A source's payload from its watch cache: a transport ConfigMap decoded.
    Decode,
    /// Render, bundle policy, digest and plan of a provider.
    Prepare,
    /// The stored form of a new revision.
    Compress,
    /// A recorded revision read back and planned again, for a rollback.
    Replay,
    /// The digest of a pass's round, to tell whether the pass may reconcile only the providers whose
    /// objects changed.
    Fingerprint,
}

impl Step {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Step::Decode => "decode",
            Step::Prepare => "prepare",
            Step::Compress => "compress",
            Step::Replay => "replay",
            Step::Fingerprint => "fingerprint",
        }
    }
}

/// Runs `work` on the blocking pool and returns its result; its CPU time goes to `metrics`. A panic
/// in `work` panics here, as if it had run in place.
pub(crate) async fn run<T, F>(metrics: &Metrics, step: Step, work: F) -> T
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let measured = tokio::task::spawn_blocking(move || {
        let start = thread_cpu();
        let out = work();
        (out, thread_cpu().saturating_sub(start))
    })
    .await;
    match measured {
        Ok((out, cpu)) => {
            metrics.observe_step(step.label(), cpu);
            out
        }
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        // Only a runtime shutting down cancels a blocking task, and then nothing awaits this.
        Err(e) => panic!("{} step cancelled: {e}", step.label()),
    }
}

/// The CPU time of the calling thread so far (user and system).
fn thread_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes the timespec it is given.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The step runs on another thread than the caller's (the blocking pool), its result comes back,
    /// and its CPU time is recorded under its label.
    #[tokio::test(flavor = "current_thread")]
    async fn a_step_runs_off_the_runtime_thread_and_is_measured() {
        let mut registry = prometheus_client::registry::Registry::default();
        let metrics = Metrics::register(&mut registry);
        let caller = std::thread::current().id();
        let (ran_on, sum) = run(&metrics, Step::Prepare, || {
            let mut x = 0u64;
            for i in 0..2_000_000u64 {
                x = std::hint::black_box(x.wrapping_add(i * i));
            }
            (std::thread::current().id(), x)
        })
        .await;
        assert_ne!(ran_on, caller);
        assert_eq!(
            sum,
            (0..2_000_000u64).fold(0u64, |x, i| x.wrapping_add(i * i))
        );
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(
            text.contains("capi_installer_step_cpu_seconds_count{step=\"prepare\"} 1\n"),
            "{text}"
        );
        let sum: f64 = text
            .lines()
            .find_map(|l| l.strip_prefix("capi_installer_step_cpu_seconds_sum{step=\"prepare\"} "))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no sum in {text}"));
        assert!(sum > 0.0, "the step's CPU time is measured: {sum}");
    }

    #[tokio::test(flavor = "current_thread")]
    #[should_panic(expected = "a bug in a step")]
    async fn a_panic_in_a_step_panics_the_caller() {
        run(&Metrics::unregistered(), Step::Decode, || {
            panic!("a bug in a step")
        })
        .await
    }
}
