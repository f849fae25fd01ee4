//! The series of one component (the installer, the controllers): all named `<prefix>_…`, with the
//! component's build info among them, so every binary exports `<prefix>_build_info{version}`, and the
//! process's own responsiveness ([`ProcessMetrics`]). Both controller libraries register through
//! [`component`], one [`Series::add`] per series.

use std::sync::atomic::AtomicU64;
#[cfg(feature = "process")]
use std::time::Duration;

use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::{Metric, Registry};

/// A component's sub-registry: each series added is named `<prefix>_<name>`.
pub struct Series<'a>(&'a mut Registry);

impl Series<'_> {
    /// Registers one series (a clone of the metric the component keeps and updates).
    pub fn add(&mut self, name: &str, help: &str, metric: impl Metric) -> &mut Self {
        self.0.register(name, help, metric);
        self
    }
}

/// The series of a component, each named `<prefix>_<name>`, with
/// `<prefix>_build_info{version="<version>"}` registered among them.
pub fn component<'a>(registry: &'a mut Registry, prefix: &str, version: &str) -> Series<'a> {
    let mut series = Series(registry.sub_registry_with_prefix(prefix));
    series.add(
        "build",
        "Build information: the binary's version",
        Info::new(vec![("version".to_string(), version.to_string())]),
    );
    series
}

/// The text exposition of `registry` (what `/metrics` serves) and its `# TYPE` lines, sorted: every
/// series name and kind, for a component's test of what it exports.
pub fn exposition(registry: &Registry) -> (String, Vec<String>) {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry)
        .expect("encoding into a String cannot fail");
    let mut types: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with("# TYPE"))
        .map(str::to_string)
        .collect();
    types.sort();
    (text, types)
}

/// How responsive the process itself is, whatever its controller computes: how late a task on the
/// async runtime gets to run (what the health probes, the watches and the reconciles wait for a worker
/// thread), and how long after it was due each lease renewal succeeded (what the renew deadline is
/// measured against). Cheap to clone; every clone records into the same series.
#[derive(Clone, Debug)]
pub struct ProcessMetrics {
    stall: Histogram,
    longest_stall: Gauge<f64, AtomicU64>,
    renewal: Histogram,
    longest_renewal: Gauge<f64, AtomicU64>,
}

impl ProcessMetrics {
    /// Registers the series in a component's registry (the one [`component`] returns).
    pub fn register(component: &mut Series) -> ProcessMetrics {
        let m = ProcessMetrics::unregistered();
        component
            .add(
                "runtime_stall_seconds",
                "How late a task of the async runtime woke up (sampled every 100 ms): what probes, watches and reconciles wait for a worker thread",
                m.stall.clone(),
            )
            .add(
                "runtime_longest_stall_seconds",
                "The longest stall of the async runtime since the process started",
                m.longest_stall.clone(),
            )
            .add(
                "leader_renewal_seconds",
                "Time from when a renewal of the Lease was due until it succeeded (scheduling, the API server's answers, retries); the leader gives up when this reaches the renew deadline minus the retry period",
                m.renewal.clone(),
            )
            .add(
                "leader_longest_renewal_seconds",
                "The longest leader_renewal_seconds since the process started",
                m.longest_renewal.clone(),
            );
        m
    }

    /// Series nobody exports (tests, embedding).
    pub fn unregistered() -> ProcessMetrics {
        // 1 ms to about 65 s: a healthy runtime wakes within milliseconds, a renewal takes tens of
        // them; the renew deadline is 107 s by default.
        let buckets = || Histogram::new(exponential_buckets(0.001, 2.0, 17));
        ProcessMetrics {
            stall: buckets(),
            longest_stall: Gauge::default(),
            renewal: buckets(),
            longest_renewal: Gauge::default(),
        }
    }

    // Recorded by the process runtime (`responsiveness`, `run`); a controller library registers the
    // series with feature `metrics` alone.
    #[cfg(feature = "process")]
    pub(crate) fn observe_stall(&self, late: Duration) {
        observe(&self.stall, &self.longest_stall, late);
    }

    #[cfg(feature = "process")]
    pub(crate) fn observe_renewal(&self, took: Duration) {
        observe(&self.renewal, &self.longest_renewal, took);
    }

    #[cfg(feature = "process")]
    /// The longest stall of the async runtime so far.
    pub(crate) fn longest_stall(&self) -> Duration {
        Duration::from_secs_f64(self.longest_stall.get())
    }
}

#[cfg(feature = "process")]
fn observe(histogram: &Histogram, longest: &Gauge<f64, AtomicU64>, took: Duration) {
    let seconds = took.as_secs_f64();
    histogram.observe(seconds);
    // Each maximum has one writer (the runtime's probe, the lease thread): no update is lost.
    if seconds > longest.get() {
        longest.set(seconds);
    }
}

#[cfg(test)]
mod tests {
    use prometheus_client::metrics::counter::Counter;

    use super::*;

    #[test]
    fn series_carry_the_prefix_and_build_info_the_version() {
        let mut registry = Registry::default();
        let counter = Counter::<u64>::default();
        component(&mut registry, "capi_test", "1.2.3").add("things", "Things", counter.clone());
        counter.inc();
        let (text, types) = exposition(&registry);
        assert!(
            text.contains("capi_test_build_info{version=\"1.2.3\"} 1\n"),
            "{text}"
        );
        assert!(text.contains("capi_test_things_total 1\n"), "{text}");
        assert_eq!(
            types,
            [
                "# TYPE capi_test_build info",
                "# TYPE capi_test_things counter"
            ]
        );
    }

    #[test]
    #[cfg(feature = "process")]
    fn process_series_keep_their_longest_sample() {
        let mut registry = Registry::default();
        let m = ProcessMetrics::register(&mut component(&mut registry, "capi_test", "1.2.3"));
        for ms in [5, 1500, 20] {
            m.observe_stall(Duration::from_millis(ms));
        }
        m.observe_renewal(Duration::from_millis(40));
        assert_eq!(m.longest_stall(), Duration::from_millis(1500));
        assert_eq!(m.longest_renewal.get(), 0.04);
        let (text, types) = exposition(&registry);
        assert_eq!(
            types,
            [
                "# TYPE capi_test_build info",
                "# TYPE capi_test_leader_longest_renewal_seconds gauge",
                "# TYPE capi_test_leader_renewal_seconds histogram",
                "# TYPE capi_test_runtime_longest_stall_seconds gauge",
                "# TYPE capi_test_runtime_stall_seconds histogram",
            ]
        );
        assert!(
            text.contains("capi_test_runtime_stall_seconds_count 3\n"),
            "{text}"
        );
        assert!(
            text.contains("capi_test_runtime_longest_stall_seconds 1.5\n"),
            "{text}"
        );
    }
}
