//! Prometheus metrics of the installer. Labels are bounded: results, phases, actions and failure reasons
//! are fixed sets.

use std::sync::atomic::AtomicU64;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use capi_apply::{ApplyAction, Phase};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabel {
    result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PhaseLabel {
    phase: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StepLabel {
    step: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SourceLabel {
    source: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ActionLabel {
    action: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    reason: String,
}

/// The installer's metrics, registered under the prefix `capi_installer`.
pub struct Metrics {
    reconciles: Family<ResultLabel, Counter>,
    reconcile_duration: Histogram,
    phase_duration: Family<PhaseLabel, Histogram>,
    step_cpu: Family<StepLabel, Histogram>,
    plans: Family<SourceLabel, Counter>,
    applied: Family<ActionLabel, Counter>,
    pruned: Counter,
    errors: Family<ReasonLabel, Counter>,
    last_success: Gauge<f64, AtomicU64>,
    /// The process's own series (the runtime's stalls, the lease renewals), which `capi_runtime::run`
    /// records.
    pub process: capi_runtime::metrics::ProcessMetrics,
}

impl Metrics {
    /// Creates the metrics and registers them (and build info) in `registry`.
    pub fn register(registry: &mut Registry) -> Self {
        let mut series =
            capi_runtime::metrics::component(registry, "capi_installer", env!("CARGO_PKG_VERSION"));
        let m = Metrics {
            reconciles: Family::default(),
            reconcile_duration: Histogram::new(exponential_buckets(0.01, 2.0, 14)),
            phase_duration: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.01, 2.0, 14))
            }),
            // 1 ms to about 16 s: a small provider's steps take milliseconds, a large one's render
            // hundreds of them, more on a starved machine.
            step_cpu: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.001, 2.0, 15))
            }),
            plans: Family::default(),
            applied: Family::default(),
            pruned: Counter::default(),
            errors: Family::default(),
            last_success: Gauge::default(),
            process: capi_runtime::metrics::ProcessMetrics::register(&mut series),
        };
        series
            .add(
                "reconciles",
                "Reconciles by result (success or error)",
                m.reconciles.clone(),
            )
            .add(
                "reconcile_duration_seconds",
                "Duration of a whole reconcile",
                m.reconcile_duration.clone(),
            )
            .add(
                "phase_duration_seconds",
                "Duration of applying one phase of a provider",
                m.phase_duration.clone(),
            )
            .add(
                "step_cpu_seconds",
                "CPU time of one pure step of a provider's reconcile (decode, prepare, compress, replay), run off the async runtime",
                m.step_cpu.clone(),
            )
            .add(
                "provider_plans",
                "Providers rendered, checked and planned, by source (a pass woken only by a provider's own objects plans that provider alone)",
                m.plans.clone(),
            )
            .add(
                "objects_applied",
                "Objects written, by action (Created, Configured, Adopted)",
                m.applied.clone(),
            )
            .add(
                "objects_pruned",
                "Objects deleted because a new version dropped them",
                m.pruned.clone(),
            )
            .add(
                "errors",
                "Failed provider attempts by reason (rendering, apply, readiness timeouts)",
                m.errors.clone(),
            )
            .add(
                "last_success_timestamp_seconds",
                "Unix time of the last reconcile that found every provider installed",
                m.last_success.clone(),
            );
        m
    }

    /// Metrics that are not exported anywhere (tests, `render`).
    pub fn unregistered() -> Self {
        Self::register(&mut Registry::default())
    }

    pub(crate) fn observe_reconcile(&self, result: &str, took: Duration) {
        self.reconciles
            .get_or_create(&ResultLabel {
                result: result.into(),
            })
            .inc();
        self.reconcile_duration.observe(took.as_secs_f64());
    }

    pub(crate) fn observe_phase(&self, phase: Phase, took: Duration) {
        self.phase_duration
            .get_or_create(&PhaseLabel {
                phase: format!("{phase:?}"),
            })
            .observe(took.as_secs_f64());
    }

    pub(crate) fn observe_step(&self, step: &str, cpu: Duration) {
        self.step_cpu
            .get_or_create(&StepLabel { step: step.into() })
            .observe(cpu.as_secs_f64());
    }

    pub(crate) fn count_plan(&self, source: &str) {
        self.plans
            .get_or_create(&SourceLabel {
                source: source.into(),
            })
            .inc();
    }

    /// For tests: how many times the source named `source` (`ConfigMap aws`) was planned.
    pub fn plans(&self, source: &str) -> u64 {
        self.plans
            .get_or_create(&SourceLabel {
                source: source.into(),
            })
            .get()
    }

    /// For tests: how many passes ran, whatever their result.
    pub fn passes(&self) -> u64 {
        ["success", "error"]
            .into_iter()
            .map(|result| {
                self.reconciles
                    .get_or_create(&ResultLabel {
                        result: result.into(),
                    })
                    .get()
            })
            .sum()
    }

    pub(crate) fn count_applied(&self, action: ApplyAction) {
        self.applied
            .get_or_create(&ActionLabel {
                action: format!("{action:?}"),
            })
            .inc();
    }

    pub(crate) fn count_pruned(&self) {
        self.pruned.inc();
    }

    pub(crate) fn count_error(&self, reason: &str) {
        self.errors
            .get_or_create(&ReasonLabel {
                reason: reason.into(),
            })
            .inc();
    }

    pub(crate) fn mark_success(&self) {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        self.last_success.set(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A registry in which every series has a sample (a family without one is not exported).
    fn every_series() -> Registry {
        let mut registry = Registry::default();
        let m = Metrics::register(&mut registry);
        m.observe_reconcile("success", Duration::from_millis(5));
        m.observe_phase(Phase::Base, Duration::from_millis(5));
        m.observe_step("prepare", Duration::from_millis(5));
        m.count_applied(ApplyAction::Created);
        m.count_pruned();
        m.count_error("ApplyFailed");
        m.mark_success();
        registry
    }

    /// The `# TYPE` lines of the exposition: every series name and kind the installer exports.
    #[test]
    fn series_names_and_kinds() {
        let (text, types) = capi_runtime::metrics::exposition(&every_series());
        assert_eq!(
            types,
            [
                "# TYPE capi_installer_build info",
                "# TYPE capi_installer_errors counter",
                "# TYPE capi_installer_last_success_timestamp_seconds gauge",
                "# TYPE capi_installer_leader_longest_renewal_seconds gauge",
                "# TYPE capi_installer_leader_renewal_seconds histogram",
                "# TYPE capi_installer_objects_applied counter",
                "# TYPE capi_installer_objects_pruned counter",
                "# TYPE capi_installer_phase_duration_seconds histogram",
                "# TYPE capi_installer_reconcile_duration_seconds histogram",
                "# TYPE capi_installer_reconciles counter",
                "# TYPE capi_installer_runtime_longest_stall_seconds gauge",
                "# TYPE capi_installer_runtime_stall_seconds histogram",
                "# TYPE capi_installer_step_cpu_seconds histogram",
            ]
        );
        let version = env!("CARGO_PKG_VERSION");
        assert!(
            text.contains(&format!(
                "capi_installer_build_info{{version=\"{version}\"}} 1\n"
            )),
            "{text}"
        );
        assert!(
            text.contains("capi_installer_reconciles_total{result=\"success\"} 1\n"),
            "{text}"
        );
    }

    /// docs/admin/operating.md's table of series is what an administrator queries: the names as
    /// scraped (a counter's with `_total`, an info's with `_info`) and the kinds.
    #[test]
    fn the_metrics_table_lists_exactly_the_series_exported() {
        let doc = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/admin/operating.md"
        ))
        .expect("docs/admin/operating.md readable");
        let start = doc
            .find("## Metrics\n")
            .expect("docs/admin/operating.md has a Metrics section");
        let documented: std::collections::BTreeSet<(String, String)> = doc[start..]
            .lines()
            .skip_while(|l| !l.starts_with("| series"))
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .map(|l| {
                let cells: Vec<&str> = l.split('|').map(str::trim).collect();
                (cells[1].trim_matches('`').to_string(), cells[2].to_string())
            })
            .collect();
        let (_, types) = capi_runtime::metrics::exposition(&every_series());
        let exported: std::collections::BTreeSet<(String, String)> = types
            .iter()
            .map(|l| {
                let mut words = l.trim_start_matches("# TYPE ").split(' ');
                let (name, kind) = (words.next().unwrap(), words.next().unwrap());
                let scraped = match kind {
                    "counter" => format!("{name}_total"),
                    "info" => format!("{name}_info"),
                    _ => name.to_string(),
                };
                (scraped, kind.to_string())
            })
            .collect();
        assert_eq!(documented, exported);
    }
}
