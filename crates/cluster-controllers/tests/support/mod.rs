//! What only the controllers' integration tests need, over the shared `test-support` (re-exported
//! whole: the control plane, OpenShift's objects, fixtures, `eventually`, conditions, the audit log):
//! the controllers run in-process with this control plane's settings, their user agent, and a transport
//! ConfigMap without its webhooks.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use capi_cluster_controllers::kubeconfig::Settings;
use capi_cluster_controllers::{Config, ControllerKind, Controllers, Metrics, user_agent};
use control_plane::AuditEvent;
use kube::Client;
use serde_json::{Value, json};
pub use test_support::*;

/// The controllers' settings and client for a test control plane.
pub trait ControllersEnv {
    /// A client of the admin identity that sends the controllers' user agent.
    fn controllers_admin_client(&self) -> Client;
    /// Controller settings for this control plane (kubeconfig pointing at it).
    fn config(&self, controllers: &[ControllerKind]) -> Config;
}

impl ControllersEnv for Env {
    fn controllers_admin_client(&self) -> Client {
        controllers_client(self.cp.admin_config())
    }

    fn config(&self, controllers: &[ControllerKind]) -> Config {
        let mut config = Config::new(
            Settings::from_client_config(&self.cp.admin_config()).expect("admin config has a CA"),
        );
        config.controllers = controllers.to_vec();
        config.backoff_min = Duration::from_millis(500);
        config.backoff_max = Duration::from_secs(5);
        config
    }
}

/// A client of `config` that sends the controllers' user agent.
pub fn controllers_client(config: kube::Config) -> Client {
    with_user_agent(config, &user_agent())
}

/// Requests sent with the controllers' user agent, optionally only those after `after`.
pub fn controller_requests(events: &[AuditEvent], after: Option<Timestamp>) -> Vec<AuditEvent> {
    requests_of(events, &user_agent(), after)
}

/// Controllers running in this process; abandoned when dropped. (This `Running` is the controllers';
/// the installer's is `test_support::Running`.)
pub struct Running {
    process: InProcess,
    pub metrics: Arc<Metrics>,
}

impl Running {
    pub fn start(client: Client, config: Config) -> Running {
        let metrics = Arc::new(Metrics::unregistered());
        let controllers = Controllers::new(client, config, metrics.clone());
        Running {
            process: InProcess::spawn(|stop| controllers.run(stop)),
            metrics,
        }
    }

    /// Graceful stop: the controllers finish what they are doing (at most 30 s).
    pub async fn stop(self) {
        self.process.stop(Duration::from_secs(30)).await;
    }
}

/// What the OpenShift installer and the machine-config operator leave on AWS: the Machine API CRDs, a
/// control-plane Machine behind the internal load balancer, the worker user data.
pub async fn aws_machines(client: &Client) {
    install_machine_api_crds(client).await;
    create_control_plane_machine(
        client,
        "demo-x7k2p-master-0",
        json!({"loadBalancers": [{"name": "demo-x7k2p-int", "type": "network"}]}),
    )
    .await;
    apply(
        client,
        &ar("", "v1", "Secret", "secrets"),
        &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "worker-user-data", "namespace": MAPI_NS},
            "data": {"userData": base64::engine::general_purpose::STANDARD.encode("{}")}}),
        "machine-config-operator",
    )
    .await;
}

/// The same code `make demo` runs (see the example's doc for why the webhooks go).
#[path = "../../examples/without_webhooks.rs"]
mod without_webhooks_example;

/// A transport ConfigMap fixture without its admission webhook configurations.
pub fn transport_without_webhooks(file: &str) -> Value {
    without_webhooks_example::without_webhooks(file, &fixture_configmap(file))
        .expect("fixture re-encodes")
}
