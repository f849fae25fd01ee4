//! What the rules need to know about a bundle as a whole ([`Bundle`]): the roles, accounts, Services,
//! ConfigMaps, CRDs and serving Secrets it defines.

use std::collections::BTreeSet;

use kube_core::DynamicObject;
use serde_json::Value;

use super::report::BundleObject;

/// What the other rules need to know about the bundle as a whole.
#[derive(Debug, Clone)]
pub(super) struct Bundle {
    /// (kind, namespace, name) of the roles the bundle defines.
    pub(super) roles: BTreeSet<(String, Option<String>, String)>,
    pub(super) service_accounts: BTreeSet<(Option<String>, String)>,
    pub(super) services: BTreeSet<(Option<String>, String)>,
    pub(super) admission_policies: BTreeSet<String>,
    /// The ConfigMaps the bundle defines.
    pub(super) configmaps: BTreeSet<String>,
    /// The Secrets its Services ask service-ca for (their serving certificates).
    pub(super) serving_secrets: BTreeSet<String>,
    /// (group, plural) of the CRDs it defines.
    pub(super) resources: BTreeSet<(String, String)>,
    pub(super) payload_images: BTreeSet<String>,
}

impl Bundle {
    pub(super) fn index(objects: &[BundleObject<'_>], payload_images: &BTreeSet<&str>) -> Self {
        let mut b = Bundle {
            roles: BTreeSet::new(),
            service_accounts: BTreeSet::new(),
            services: BTreeSet::new(),
            admission_policies: BTreeSet::new(),
            configmaps: BTreeSet::new(),
            serving_secrets: BTreeSet::new(),
            resources: BTreeSet::new(),
            payload_images: payload_images.iter().map(|s| s.to_string()).collect(),
        };
        for o in objects {
            let Some(key) = capi_apply::key_of(o.object) else {
                continue;
            };
            match (key.group.as_str(), key.kind.as_str()) {
                ("rbac.authorization.k8s.io", "ClusterRole" | "Role") => {
                    b.roles.insert((key.kind, key.namespace, key.name));
                }
                ("", "ServiceAccount") => {
                    b.service_accounts.insert((key.namespace, key.name));
                }
                ("", "Service") => {
                    for (_, secret) in serving_secrets(o.object) {
                        b.serving_secrets.insert(secret.to_string());
                    }
                    b.services.insert((key.namespace, key.name));
                }
                ("", "ConfigMap") => {
                    b.configmaps.insert(key.name);
                }
                ("apiextensions.k8s.io", "CustomResourceDefinition") => {
                    let text = |p: &str| o.object.data.pointer(p).and_then(Value::as_str);
                    if let (Some(group), Some(plural)) =
                        (text("/spec/group"), text("/spec/names/plural"))
                    {
                        b.resources.insert((group.to_string(), plural.to_string()));
                    }
                }
                ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => {
                    b.admission_policies.insert(key.name);
                }
                _ => {}
            }
        }
        b
    }
}

/// The annotations by which a Service asks service-ca for a serving certificate in a Secret of that
/// name (which service-ca creates and rewrites): the current spelling and the alpha one service-ca
/// still honours. Every rule judges each by its meaning, whichever spelling a bundle uses.
pub(super) const SERVING_CERT_ANNOTATIONS: [&str; 2] = [
    "service.beta.openshift.io/serving-cert-secret-name",
    "service.alpha.openshift.io/serving-cert-secret-name",
];

/// The Secrets a Service asks service-ca for, each with the annotation that asks.
pub(super) fn serving_secrets(object: &DynamicObject) -> Vec<(&'static str, &str)> {
    let Some(annotations) = object.metadata.annotations.as_ref() else {
        return Vec::new();
    };
    SERVING_CERT_ANNOTATIONS
        .iter()
        .filter_map(|key| {
            let secret = annotations.get(*key).filter(|s| !s.is_empty())?;
            Some((*key, secret.as_str()))
        })
        .collect()
}
