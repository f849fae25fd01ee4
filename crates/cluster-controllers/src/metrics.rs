//! Prometheus metrics of the controllers pod, prefix `capi_controllers`. Label values are fixed sets:
//! the four controller names, `success`/`error`.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReconcileLabels {
    controller: String,
    result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabel {
    controller: String,
}

pub struct Metrics {
    reconciles: Family<ReconcileLabels, Counter>,
    writes: Family<ControllerLabel, Counter>,
    status_writes: Family<ControllerLabel, Counter>,
    /// The process's own series (the runtime's stalls, the lease renewals), which `capi_runtime::run`
    /// records.
    pub process: capi_runtime::metrics::ProcessMetrics,
}

impl Metrics {
    /// Creates the metrics and registers them (and build info) in `registry`.
    pub fn register(registry: &mut Registry) -> Self {
        let mut series = capi_runtime::metrics::component(
            registry,
            "capi_controllers",
            env!("CARGO_PKG_VERSION"),
        );
        let m = Metrics {
            process: capi_runtime::metrics::ProcessMetrics::register(&mut series),
            ..Metrics::unregistered()
        };
        series
            .add(
                "reconciles",
                "Reconciles by controller and result (error: the reconcile failed and is retried)",
                m.reconciles.clone(),
            )
            .add(
                "objects_written",
                "Objects created or updated (an unchanged object is not written)",
                m.writes.clone(),
            )
            .add(
                "status_writes",
                "Writes of the controller's conditions on ClusterOperator cluster-api",
                m.status_writes.clone(),
            );
        m
    }

    /// Metrics nobody scrapes (tests, embedding).
    pub fn unregistered() -> Self {
        Metrics {
            reconciles: Family::default(),
            writes: Family::default(),
            status_writes: Family::default(),
            process: capi_runtime::metrics::ProcessMetrics::unregistered(),
        }
    }

    pub(crate) fn reconciled(&self, controller: &str, ok: bool) {
        self.reconciles
            .get_or_create(&ReconcileLabels {
                controller: controller.into(),
                result: if ok { "success" } else { "error" }.into(),
            })
            .inc();
    }

    pub(crate) fn wrote(&self, controller: &str) {
        self.writes
            .get_or_create(&ControllerLabel {
                controller: controller.into(),
            })
            .inc();
    }

    pub(crate) fn wrote_status(&self, controller: &str) {
        self.status_writes
            .get_or_create(&ControllerLabel {
                controller: controller.into(),
            })
            .inc();
    }

    /// Successful reconciles so far of `controller` (for tests and benchmarks).
    pub fn reconciles_of(&self, controller: &str) -> u64 {
        self.reconciles
            .get_or_create(&ReconcileLabels {
                controller: controller.into(),
                result: "success".into(),
            })
            .get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `# TYPE` lines of the exposition: every series name and kind the controllers export.
    #[test]
    fn series_names_and_kinds() {
        let mut registry = Registry::default();
        let m = Metrics::register(&mut registry);
        m.reconciled("kubeconfig", true);
        m.wrote("kubeconfig");
        m.wrote_status("kubeconfig");
        let (text, types) = capi_runtime::metrics::exposition(&registry);
        assert_eq!(
            types,
            [
                "# TYPE capi_controllers_build info",
                "# TYPE capi_controllers_leader_longest_renewal_seconds gauge",
                "# TYPE capi_controllers_leader_renewal_seconds histogram",
                "# TYPE capi_controllers_objects_written counter",
                "# TYPE capi_controllers_reconciles counter",
                "# TYPE capi_controllers_runtime_longest_stall_seconds gauge",
                "# TYPE capi_controllers_runtime_stall_seconds histogram",
                "# TYPE capi_controllers_status_writes counter",
            ]
        );
        let version = env!("CARGO_PKG_VERSION");
        assert!(
            text.contains(&format!(
                "capi_controllers_build_info{{version=\"{version}\"}} 1\n"
            )),
            "{text}"
        );
        assert!(
            text.contains(
                "capi_controllers_reconciles_total{controller=\"kubeconfig\",result=\"success\"} 1\n"
            ),
            "{text}"
        );
        assert_eq!(m.reconciles_of("kubeconfig"), 1);
    }
}
