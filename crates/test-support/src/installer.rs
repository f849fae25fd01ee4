//! The installer run in this process, as the integration tests run it.

use std::sync::Arc;
use std::time::Duration;

use capi_installer_controller::policy::ceiling::{Ceiling, Grants};
use capi_installer_controller::policy::{FieldBound, PolicyConfig};
use capi_installer_controller::{Installer, InstallerConfig, Metrics, records, user_agent};
use control_plane::AuditEvent;
use kube::Client;

use crate::{
    Env, InProcess, RELEASE_VERSION, Timestamp, images, requests_of, with_user_agent, writes,
};

/// A client of `config` that sends the installer's user agent.
pub fn installer_client(config: kube::Config) -> Client {
    with_user_agent(config, &user_agent())
}

/// Writes made by the installer (its user agent), optionally only those after `after`.
pub fn installer_writes(events: &[AuditEvent], after: Option<Timestamp>) -> Vec<AuditEvent> {
    writes(&requests_of(events, &user_agent(), after))
}

/// Every request of the installer (its user agent).
pub fn installer_requests(events: &[AuditEvent]) -> Vec<AuditEvent> {
    requests_of(events, &user_agent(), None)
}

/// The installer's requests (its user agent) that the API server denied (403), described.
pub fn installer_denials(events: &[AuditEvent]) -> Vec<String> {
    installer_requests(events)
        .iter()
        .filter(|e| e.response_code == Some(403))
        .map(crate::describe)
        .collect()
}

/// The installer's requests during `quiet`, counted from the last audit event after a 5 s pause (so a
/// reconcile in flight ends first). A fixed wait by nature: it watches that nothing happens.
pub async fn installer_requests_over(env: &Env, quiet: Duration) -> Vec<AuditEvent> {
    tokio::time::sleep(Duration::from_secs(5)).await;
    let quiet_from = env.audit().last().unwrap().stage_timestamp.0;
    tokio::time::sleep(quiet).await;
    requests_of(&env.audit(), &user_agent(), Some(quiet_from))
}

/// The installer's writes during `quiet` ([`installer_requests_over`]): in steady state there are none.
pub async fn installer_writes_over(env: &Env, quiet: Duration) -> Vec<AuditEvent> {
    writes(&installer_requests_over(env, quiet).await)
}

/// What the test providers have beyond the real bundles, as an administrator would extend the field
/// bound for providers that are not among them: the example providers of `examples/providers` (the
/// ibmcloud stand-in, and the others when the fixtures are missing), an unschedulable synthetic
/// provider's `nodeSelector`, the synthetic providers' pod label `app` (and `app.kubernetes.io/part-of`,
/// which a test adds to aws's pods) and a ConfigMap in a bundle ([`crate::Tiny`]).
fn test_fields() -> &'static FieldBound {
    static FIELDS: std::sync::OnceLock<FieldBound> = std::sync::OnceLock::new();
    FIELDS.get_or_init(|| {
        let mut fields = FieldBound::of_objects(&[
            serde_json::json!({
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "spec": {"template": {"spec": {"nodeSelector": {"test.capi-installer/no-such-node": "true"}}}},
            }),
            // The synthetic providers' pod label, and the one a test adds to aws's pods.
            serde_json::json!({
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "spec": {"template": {"metadata": {"labels": {"app": "x", "app.kubernetes.io/part-of": "x"}}}},
            }),
            serde_json::json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "x", "namespace": "x", "labels": {
                    "cluster.x-k8s.io/provider": "x",
                    // What a truthful.rs ConfigMap carries for an admission policy to keep it.
                    "test.capi-installer/keep": "x",
                }},
                "data": {"x": "x"},
            }),
        ]);
        for provider in ["aws", "core", "gcp", "ibmcloud"] {
            let cm = crate::payload::example_configmap(provider);
            let components = capi_manifests::TransportConfigMap::decode(&cm)
                .expect("example ConfigMap decodes")
                .content
                .components;
            for doc in capi_manifests::yaml::parse_documents(provider, &components)
                .expect("example components parse")
            {
                fields.add_object(&doc.value);
            }
        }
        fields
    })
}

/// The release images, the test release version, a Deployment timeout of 2 minutes, and the provider
/// RBAC ceiling extended by what the synthetic providers ([`crate::Tiny`]) grant on their own group
/// (as an administrator would extend it for a provider that is not among the real bundles), that group
/// allowed to every provider's CRDs (`--policy-allow-group`), and the field bound by the
/// `nodeSelector` of an unschedulable synthetic provider.
pub fn config() -> InstallerConfig {
    let mut policy = PolicyConfig::default();
    policy.extra_groups.insert(crate::TINY_GROUP.to_string());
    let tiny = serde_json::json!([{
        "apiGroups": [crate::TINY_GROUP],
        "resources": ["*"],
        "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"],
    }]);
    policy.ceiling = policy.ceiling.with(&Ceiling {
        cluster: Grants::of_rules(Some(&tiny)),
        ..Default::default()
    });
    policy.fields = policy.fields.with(test_fields());
    InstallerConfig {
        images: images(),
        release_version: Some(RELEASE_VERSION.into()),
        deployment_timeout: Duration::from_secs(120),
        resync: Duration::from_secs(600),
        policy,
        ..Default::default()
    }
}

/// What rendering needs under [`config`]'s settings, as a pass's context starts (no cluster TLS
/// profile, proxy or requirements): for the benchmarks that plan outside an installer.
pub fn render_context() -> capi_installer_controller::prepare::RenderContext {
    let config = config();
    capi_installer_controller::prepare::RenderContext {
        namespace: config.namespace,
        images: config.images,
        substitutions: config.substitutions,
        policy: config.policy,
        ..Default::default()
    }
}

/// A configuration with short timeouts, for tests that wait for them.
pub fn short_config() -> InstallerConfig {
    InstallerConfig {
        deployment_timeout: Duration::from_secs(5),
        crd_timeout: Duration::from_secs(20),
        ..config()
    }
}

/// Who carries the records over in an in-process installer: identity `capi-installer-test`, with the
/// tests' lease timings (15 s / 10 s / 2 s), which a process of the earlier release's in a test also
/// uses.
pub fn mover() -> records::Mover {
    records::Mover {
        identity: "capi-installer-test".into(),
        timing: records::Timing {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        },
    }
}

/// An installer running in this process; stops when dropped (like a killed process: mid-flight work is
/// abandoned, nothing is cleaned up).
pub struct Running {
    process: InProcess,
    pub metrics: Arc<Metrics>,
}

impl Running {
    /// As the binary's leader starts: the records an earlier release kept among the providers' carried
    /// over first ([`records::carry_over_until_done`], as [`mover`]), then the watches and the loop.
    pub fn start(client: Client, config: InstallerConfig) -> Running {
        let metrics = Arc::new(Metrics::unregistered());
        let installer_metrics = metrics.clone();
        Running {
            process: InProcess::spawn(|mut stop| async move {
                let mover = mover();
                tokio::select! {
                    _ = records::carry_over_until_done(&client, &config, &mover) => {}
                    _ = &mut stop => return,
                }
                Installer::new(client, config, installer_metrics)
                    .run(stop)
                    .await;
            }),
            metrics,
        }
    }

    /// The installer as the release runs it: as ServiceAccount credentials `sa` (its own, under the
    /// release's RBAC), writing each provider's objects as that provider's identity
    /// ([`InstallerConfig::identities`], the binary's default), with its user agent.
    pub fn as_installer(sa: kube::Config, mut config: InstallerConfig) -> Running {
        let mut writes = sa.clone();
        writes.headers.push((
            http::header::USER_AGENT,
            http::HeaderValue::from_str(&user_agent()).expect("a valid user agent"),
        ));
        config.identities = Some(capi_apply::Identities::new(writes));
        Running::start(installer_client(sa), config)
    }

    /// The installer on `env` as the release runs it: the release's RBAC for it and the providers'
    /// identities applied ([`crate::installer_rbac`]), then [`Running::as_installer`] as its own
    /// ServiceAccount.
    pub async fn under_release_rbac(env: &Env, config: InstallerConfig) -> Running {
        crate::apply_as_release_payload(&env.admin, &crate::installer_rbac()).await;
        let sa = env
            .service_account_config(crate::INSTALLER_NS, "capi-installer")
            .await;
        Running::as_installer(sa, config)
    }

    /// The installer as cluster-admin, with its user agent.
    pub fn as_admin(env: &Env, config: InstallerConfig) -> Running {
        Running::start(installer_client(env.cp.admin_config()), config)
    }

    /// Abandons the installer at once, wherever it is.
    pub fn kill(self) {}

    /// Graceful stop: finishes the current reconcile.
    pub async fn stop(self) {
        self.process.stop(Duration::from_secs(60)).await;
    }
}

/// `InfrastructureProvider` objects (cluster-scoped), the installer's own API.
pub fn infrastructure_providers(client: &Client) -> kube::Api<kube::api::DynamicObject> {
    kube::Api::all_with(
        client.clone(),
        &crate::ar(
            "installer.cluster-api.openshift.io",
            "v1alpha1",
            "InfrastructureProvider",
            "infrastructureproviders",
        ),
    )
}

/// The `InfrastructureProvider` CRD of this repository's `manifests/`, applied as the release payload
/// would, and served.
pub async fn load_infrastructure_provider_crd(client: &Client) {
    let crd =
        crate::manifests_dir().join("0000_30_capi-installer_01_infrastructureproviders.crd.yaml");
    crate::apply_as_release_payload(client, &crate::read_documents(&crd)).await;
    crate::eventually(
        Duration::from_secs(60),
        "the InfrastructureProvider kind served",
        || async {
            infrastructure_providers(client)
                .list(&Default::default())
                .await
                .ok()
        },
    )
    .await;
}

/// Asks for infrastructure provider `name` with an `InfrastructureProvider` object.
pub async fn request_provider(client: &Client, name: &str) {
    let obj = serde_json::json!({"apiVersion": "installer.cluster-api.openshift.io/v1alpha1",
        "kind": "InfrastructureProvider", "metadata": {"name": name}});
    infrastructure_providers(client)
        .create(
            &Default::default(),
            &serde_json::from_value(obj).expect("an InfrastructureProvider"),
        )
        .await
        .unwrap_or_else(|e| panic!("InfrastructureProvider {name}: {e}"));
}

/// Condition `type_` of an `InfrastructureProvider`'s status.
pub fn provider_condition(obj: &kube::api::DynamicObject, type_: &str) -> Option<crate::Cond> {
    crate::condition(&obj.data["status"], type_)
}
