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
use prometheus_client::metrics::info::Info;
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
    applied: Family<ActionLabel, Counter>,
    pruned: Counter,
    errors: Family<ReasonLabel, Counter>,
    last_success: Gauge<f64, AtomicU64>,
}

impl Metrics {
    /// Creates the metrics and registers them (and build info) in `registry`.
    pub fn register(registry: &mut Registry) -> Self {
        let m = Metrics {
            reconciles: Family::default(),
            reconcile_duration: Histogram::new(exponential_buckets(0.01, 2.0, 14)),
            phase_duration: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.01, 2.0, 14))
            }),
            applied: Family::default(),
            pruned: Counter::default(),
            errors: Family::default(),
            last_success: Gauge::default(),
        };
        let r = registry.sub_registry_with_prefix("capi_installer");
        r.register(
            "reconciles",
            "Reconciles by result (success or error)",
            m.reconciles.clone(),
        );
        r.register(
            "reconcile_duration_seconds",
            "Duration of a whole reconcile",
            m.reconcile_duration.clone(),
        );
        r.register(
            "phase_duration_seconds",
            "Duration of applying one phase of a provider",
            m.phase_duration.clone(),
        );
        r.register(
            "objects_applied",
            "Objects written, by action (Created, Configured, Adopted)",
            m.applied.clone(),
        );
        r.register(
            "objects_pruned",
            "Objects deleted because a new version dropped them",
            m.pruned.clone(),
        );
        r.register(
            "errors",
            "Failed provider attempts by reason (rendering, apply, readiness timeouts)",
            m.errors.clone(),
        );
        r.register(
            "last_success_timestamp_seconds",
            "Unix time of the last reconcile that found every provider installed",
            m.last_success.clone(),
        );
        r.register(
            "build",
            "Build information",
            Info::new(vec![(
                "version".to_string(),
                env!("CARGO_PKG_VERSION").to_string(),
            )]),
        );
        m
    }

    /// Metrics that are not exported anywhere (tests, `render`).
    pub fn unregistered() -> Self {
        Self::register(&mut Registry::default())
    }

    pub fn observe_reconcile(&self, result: &str, took: Duration) {
        self.reconciles
            .get_or_create(&ResultLabel {
                result: result.into(),
            })
            .inc();
        self.reconcile_duration.observe(took.as_secs_f64());
    }

    pub fn observe_phase(&self, phase: Phase, took: Duration) {
        self.phase_duration
            .get_or_create(&PhaseLabel {
                phase: format!("{phase:?}"),
            })
            .observe(took.as_secs_f64());
    }

    pub fn count_applied(&self, action: ApplyAction) {
        self.applied
            .get_or_create(&ActionLabel {
                action: format!("{action:?}"),
            })
            .inc();
    }

    pub fn count_pruned(&self) {
        self.pruned.inc();
    }

    pub fn count_error(&self, reason: &str) {
        self.errors
            .get_or_create(&ReasonLabel {
                reason: reason.into(),
            })
            .inc();
    }

    pub fn mark_success(&self) {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        self.last_success.set(now);
    }

    /// For tests: the value of `last_success_timestamp_seconds`.
    pub fn last_success(&self) -> f64 {
        self.last_success.get()
    }
}
