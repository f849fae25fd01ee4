//! A stand-in for OpenShift's service-ca operator on the real node (the operator itself is not
//! obtainable here), doing the two things the release payload relies on, as the operator does them:
//!
//! - a Service annotated `service.beta.openshift.io/serving-cert-secret-name: <name>` gets a
//!   `kubernetes.io/tls` Secret of that name in its namespace, with a serving certificate for
//!   `<service>.<namespace>.svc` (and `.cluster.local`) signed by the service CA, owned by the Service,
//!   and the Service is annotated `service.beta.openshift.io/serving-cert-signed-by`;
//! - an object annotated `service.beta.openshift.io/inject-cabundle: "true"` gets the service CA:
//!   every webhook's `clientConfig.caBundle` of a Validating/MutatingWebhookConfiguration, a CRD's
//!   conversion webhook `caBundle`, a ConfigMap's `service-ca.crt`.
//!
//! Writes go only where the value differs, with field manager `service-ca`, so that the installer's
//! steady state (which must leave `caBundle` alone) can be checked against it.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::future::Future;
use std::time::Duration;

use base64::Engine;
use futures::TryStreamExt;
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use serde_json::json;

use crate::error::Error;

pub const SERVING_CERT_SECRET: &str = "service.beta.openshift.io/serving-cert-secret-name";
pub const INJECT_CA_BUNDLE: &str = "service.beta.openshift.io/inject-cabundle";
const SIGNED_BY: &str = "service.beta.openshift.io/serving-cert-signed-by";
const ORIGINATING_NAME: &str = "service.beta.openshift.io/originating-service-name";
const ORIGINATING_UID: &str = "service.beta.openshift.io/originating-service-uid";
const CONFIGMAP_KEY: &str = "service-ca.crt";
const FIELD_MANAGER: &str = "service-ca";

/// The service CA of one node.
pub struct ServiceCa {
    name: String,
    ca_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl ServiceCa {
    pub fn generate() -> Result<ServiceCa, Error> {
        let name = format!("openshift-service-serving-signer@{}", std::process::id());
        let key = KeyPair::generate().map_err(cert_err("service CA key"))?;
        let mut params = CertificateParams::default();
        params.distinguished_name.push(DnType::CommonName, &name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let cert = params
            .self_signed(&key)
            .map_err(cert_err("service CA certificate"))?;
        Ok(ServiceCa {
            name,
            ca_pem: cert.pem(),
            issuer: Issuer::new(params, key),
        })
    }

    /// The CA certificate (PEM), what every injected bundle holds.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// A serving certificate chain and key for Service `namespace/name`.
    fn serving(&self, namespace: &str, name: &str) -> Result<(String, String), Error> {
        let key = KeyPair::generate().map_err(cert_err("serving key"))?;
        let host = format!("{name}.{namespace}.svc");
        let mut params = CertificateParams::default();
        params.distinguished_name.push(DnType::CommonName, &host);
        params.subject_alt_names = [host.clone(), format!("{host}.cluster.local")]
            .into_iter()
            .map(|h| h.try_into().map(SanType::DnsName))
            .collect::<Result<_, _>>()
            .map_err(cert_err("serving certificate names"))?;
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        let cert = params
            .signed_by(&key, &self.issuer)
            .map_err(cert_err("serving certificate"))?;
        Ok((
            format!("{}{}", cert.pem(), self.ca_pem),
            key.serialize_pem(),
        ))
    }

    /// Keeps every annotated object of the cluster served until the future is dropped.
    pub async fn run(self, client: Client) {
        let ca = &self;
        tokio::join!(
            each(Api::<Service>::all(client.clone()), |s| ca
                .serve(&client, s)),
            each(
                Api::<ValidatingWebhookConfiguration>::all(client.clone()),
                |w| { ca.inject_webhooks(&client, w) }
            ),
            each(
                Api::<MutatingWebhookConfiguration>::all(client.clone()),
                |w| { ca.inject_webhooks(&client, w) }
            ),
            each(Api::<CustomResourceDefinition>::all(client.clone()), |c| {
                ca.inject_crd(&client, c)
            }),
            each(Api::<ConfigMap>::all(client.clone()), |c| ca
                .inject_configmap(&client, c)),
        );
    }

    async fn serve(&self, client: &Client, service: Service) -> Result<(), kube::Error> {
        let Some(secret_name) = service.annotations().get(SERVING_CERT_SECRET).cloned() else {
            return Ok(());
        };
        let (Some(namespace), Some(uid)) = (service.namespace(), service.uid()) else {
            return Ok(());
        };
        let name = service.name_any();
        let secrets: Api<Secret> = Api::namespaced(client.clone(), &namespace);
        let current = secrets.get_opt(&secret_name).await?;
        let issued_for_this_service = current
            .as_ref()
            .is_some_and(|s| s.annotations().get(ORIGINATING_UID) == Some(&uid));
        if !issued_for_this_service {
            let (cert, key) = self
                .serving(&namespace, &name)
                .map_err(|e| kube::Error::Service(e.to_string().into()))?;
            let secret = Secret {
                metadata: ObjectMeta {
                    name: Some(secret_name.clone()),
                    namespace: Some(namespace.clone()),
                    annotations: Some(BTreeMap::from([
                        (ORIGINATING_NAME.to_string(), name.clone()),
                        (ORIGINATING_UID.to_string(), uid.clone()),
                    ])),
                    owner_references: service.controller_owner_ref(&()).map(|mut r| {
                        r.controller = None;
                        r.block_owner_deletion = None;
                        vec![r]
                    }),
                    ..Default::default()
                },
                type_: Some("kubernetes.io/tls".into()),
                data: Some(BTreeMap::from([
                    ("tls.crt".to_string(), ByteString(cert.into_bytes())),
                    ("tls.key".to_string(), ByteString(key.into_bytes())),
                ])),
                ..Default::default()
            };
            secrets
                .patch(&secret_name, &apply_params(), &Patch::Apply(&secret))
                .await?;
        }
        if service.annotations().get(SIGNED_BY) != Some(&self.name) {
            let services: Api<Service> = Api::namespaced(client.clone(), &namespace);
            let patch = json!({"metadata": {"annotations": {SIGNED_BY: self.name}}});
            services
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
        }
        Ok(())
    }

    async fn inject_webhooks<K>(&self, client: &Client, seen: K) -> Result<(), kube::Error>
    where
        K: Webhooks,
    {
        if !wants_bundle(seen.meta()) {
            return Ok(());
        }
        // Read again: a retry after a conflict must start from the newest version.
        let api: Api<K> = Api::all(client.clone());
        let Some(mut config) = api.get_opt(&seen.name_any()).await? else {
            return Ok(());
        };
        let bundle = ByteString(self.ca_pem.clone().into_bytes());
        let mut changed = false;
        config.for_each_bundle(&mut |slot: &mut Option<ByteString>| {
            if slot.as_ref() != Some(&bundle) {
                *slot = Some(bundle.clone());
                changed = true;
            }
        });
        if !changed {
            return Ok(());
        }
        // An update carrying the resourceVersion read, as the operator does.
        let params = PostParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..Default::default()
        };
        api.replace(&config.name_any(), &params, &config).await?;
        Ok(())
    }

    async fn inject_crd(
        &self,
        client: &Client,
        crd: CustomResourceDefinition,
    ) -> Result<(), kube::Error> {
        if !wants_bundle(crd.meta()) {
            return Ok(());
        }
        let webhook = crd
            .spec
            .conversion
            .as_ref()
            .filter(|c| c.strategy == "Webhook")
            .and_then(|c| c.webhook.as_ref())
            .and_then(|w| w.client_config.as_ref());
        let Some(client_config) = webhook else {
            return Ok(());
        };
        if client_config.ca_bundle.as_ref().map(|b| b.0.as_slice()) == Some(self.ca_pem.as_bytes())
        {
            return Ok(());
        }
        let bundle = base64::engine::general_purpose::STANDARD.encode(&self.ca_pem);
        let patch =
            json!({"spec": {"conversion": {"webhook": {"clientConfig": {"caBundle": bundle}}}}});
        let api: Api<CustomResourceDefinition> = Api::all(client.clone());
        api.patch(&crd.name_any(), &merge_params(), &Patch::Merge(&patch))
            .await?;
        Ok(())
    }

    async fn inject_configmap(&self, client: &Client, cm: ConfigMap) -> Result<(), kube::Error> {
        if !wants_bundle(cm.meta()) {
            return Ok(());
        }
        let current = cm.data.as_ref().and_then(|d| d.get(CONFIGMAP_KEY));
        if current.map(String::as_str) == Some(self.ca_pem.as_str()) {
            return Ok(());
        }
        let Some(namespace) = cm.namespace() else {
            return Ok(());
        };
        let patch = json!({"data": {CONFIGMAP_KEY: self.ca_pem}});
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
        api.patch(&cm.name_any(), &merge_params(), &Patch::Merge(&patch))
            .await?;
        Ok(())
    }
}

fn wants_bundle(meta: &ObjectMeta) -> bool {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(INJECT_CA_BUNDLE))
        .is_some_and(|v| v == "true")
}

fn apply_params() -> PatchParams {
    PatchParams::apply(FIELD_MANAGER).force()
}

fn merge_params() -> PatchParams {
    PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..Default::default()
    }
}

fn cert_err(what: &'static str) -> impl FnOnce(rcgen::Error) -> Error {
    move |source| Error::Certificate { what, source }
}

/// The two webhook configuration kinds, by their bundles.
trait Webhooks:
    Resource<DynamicType = ()> + Clone + Debug + serde::Serialize + serde::de::DeserializeOwned
{
    fn for_each_bundle(&mut self, f: &mut dyn FnMut(&mut Option<ByteString>));
}

impl Webhooks for ValidatingWebhookConfiguration {
    fn for_each_bundle(&mut self, f: &mut dyn FnMut(&mut Option<ByteString>)) {
        for webhook in self.webhooks.iter_mut().flatten() {
            f(&mut webhook.client_config.ca_bundle);
        }
    }
}

impl Webhooks for MutatingWebhookConfiguration {
    fn for_each_bundle(&mut self, f: &mut dyn FnMut(&mut Option<ByteString>)) {
        for webhook in self.webhooks.iter_mut().flatten() {
            f(&mut webhook.client_config.ca_bundle);
        }
    }
}

/// Handles every object of `api` as the watch delivers it (each again on every re-list), retrying a
/// failed write a few times: a conflict or a namespace being created resolves itself in moments.
async fn each<K, F, Fut>(api: Api<K>, handle: F)
where
    K: Resource<DynamicType = ()> + Clone + Debug + Send + serde::de::DeserializeOwned + 'static,
    F: Fn(K) -> Fut,
    Fut: Future<Output = Result<(), kube::Error>>,
{
    let stream = watcher::watcher(api, watcher::Config::default()).default_backoff();
    let mut objects = std::pin::pin!(stream.applied_objects());
    loop {
        match objects.try_next().await {
            Ok(Some(object)) => {
                for attempt in 0..10 {
                    match handle(object.clone()).await {
                        Ok(()) => break,
                        Err(e) if attempt == 9 => {
                            tracing::warn!(object = %object.name_any(), error = %e, "service-ca: giving up")
                        }
                        Err(_) => tokio::time::sleep(Duration::from_millis(300)).await,
                    }
                }
            }
            Ok(None) => return,
            Err(e) => tracing::debug!(error = %e, "service-ca: watch"),
        }
    }
}
