//! Settings of the controllers pod: which controllers run, where, how often, and where the kubeconfig
//! the kubeconfig controller keeps points.

use std::time::Duration;

use base64::Engine;

use crate::names::*;

/// The controllers of the pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ControllerKind {
    InfraCluster,
    CoreCluster,
    Kubeconfig,
    SecretSync,
}

impl ControllerKind {
    pub const ALL: [ControllerKind; 4] = [
        ControllerKind::InfraCluster,
        ControllerKind::CoreCluster,
        ControllerKind::Kubeconfig,
        ControllerKind::SecretSync,
    ];

    /// The prefix of its condition types, as in the reference (`InfraClusterControllerAvailable`).
    pub fn name(self) -> &'static str {
        match self {
            ControllerKind::InfraCluster => "InfraClusterController",
            ControllerKind::CoreCluster => "CoreClusterController",
            ControllerKind::Kubeconfig => "KubeconfigController",
            ControllerKind::SecretSync => "SecretSyncController",
        }
    }

    /// Its field manager, for its objects and its conditions.
    pub(crate) fn field_manager(self) -> &'static str {
        match self {
            ControllerKind::InfraCluster => "capi-controllers-infracluster",
            ControllerKind::CoreCluster => "capi-controllers-corecluster",
            ControllerKind::Kubeconfig => "capi-controllers-kubeconfig",
            ControllerKind::SecretSync => "capi-controllers-secretsync",
        }
    }
}

/// Settings of the controllers.
#[derive(Clone, Debug)]
pub struct Config {
    /// Where the Cluster API objects live (default openshift-cluster-api).
    pub namespace: String,
    /// Which controllers run (all by default).
    pub controllers: Vec<ControllerKind>,
    pub kubeconfig: Settings,
    /// Reconcile this often without events (a safety net; reads only the caches).
    pub(crate) resync: Duration,
    /// Retry delays after failures: doubling from `min` to `max`.
    pub backoff_min: Duration,
    pub backoff_max: Duration,
}

impl Config {
    pub fn new(kubeconfig: Settings) -> Config {
        Config {
            namespace: CAPI_NAMESPACE.to_string(),
            controllers: ControllerKind::ALL.to_vec(),
            kubeconfig,
            resync: Duration::from_secs(600),
            backoff_min: Duration::from_secs(1),
            backoff_max: Duration::from_secs(60),
        }
    }
}

/// Settings of the kubeconfig controller.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The API server and CA the kubeconfig points at.
    pub(crate) target: Target,
    /// The ServiceAccount (in openshift-cluster-api) the token is issued for.
    pub(crate) service_account: String,
    /// Renew the token when it is this old.
    pub rotate_after: Duration,
    /// Lifetime of a token; longer than `rotate_after`, so a replaced token stays valid while Cluster
    /// API switches to the new kubeconfig.
    pub token_lifetime: Duration,
}

impl Settings {
    /// The server and CA of `config` (the configuration this pod's client uses), the default
    /// ServiceAccount, 30-minute rotation and one-hour tokens.
    pub fn from_client_config(config: &kube::Config) -> Result<Settings, String> {
        let certificates =
            config.root_cert.as_ref().filter(|c| !c.is_empty()).ok_or(
                "the client configuration has no CA certificate to put into the kubeconfig",
            )?;
        Ok(Settings {
            target: Target {
                server: config
                    .cluster_url
                    .to_string()
                    .trim_end_matches('/')
                    .to_string(),
                ca_pem: pem(certificates),
            },
            service_account: KUBECONFIG_SERVICE_ACCOUNT.into(),
            rotate_after: Duration::from_secs(30 * 60),
            token_lifetime: Duration::from_secs(60 * 60),
        })
    }
}

/// Where the kubeconfig points: the API server this pod talks to, and its CA.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Target {
    pub(crate) server: String,
    /// PEM.
    pub(crate) ca_pem: String,
}

/// PEM of DER certificates (what `kube::Config::root_cert` holds).
pub(crate) fn pem(certificates: &[Vec<u8>]) -> String {
    let mut out = String::new();
    for der in certificates {
        out.push_str("-----BEGIN CERTIFICATE-----\n");
        let b64 = base64::engine::general_purpose::STANDARD.encode(der);
        for chunk in b64.as_bytes().chunks(64) {
            out.push_str(std::str::from_utf8(chunk).expect("base64 is ASCII"));
            out.push('\n');
        }
        out.push_str("-----END CERTIFICATE-----\n");
    }
    out
}
