//! How the requirements reach admission: one `ValidatingWebhookConfiguration` whose webhooks match
//! only what a requirement pins, so that a CRD nobody pins, and the objects of one, never wait for the
//! webhook (the reference's webhook sees every CRD write in the cluster, and `failurePolicy: Fail`
//! makes all of them depend on one pod):
//!
//! - [`CRDS_PATH`]: CRD creates, updates and deletes, matched by a CEL condition on the CRD's name
//!   to the names the requirements with `customResourceDefinitionSchemaValidation` pin, except the
//!   installer's own writes (its ServiceAccounts' namespace, [`Endpoint::installer_namespace`]): the
//!   installer judges its providers' CRDs with the same verdict before it writes anything, and a
//!   provider's upgrade must not wait for another pod;
//! - [`OBJECTS_PATH`]`<requirement>`: per requirement with `objectSchemaValidation`, creates and
//!   updates of the pinned CRD's objects in the pinned versions (`matchPolicy: Equivalent`: a write in
//!   another version reaches the webhook converted to a pinned one), with the requirement's own
//!   `namespaceSelector`, `objectSelector` and `matchConditions`.
//!
//! Every webhook fails closed: while the webhook cannot answer (its pod down, its CA not injected
//! yet), the writes it matches are refused, never let through unjudged. The CA comes from service-ca
//! (`inject-cabundle`); the registration carries no `caBundle`, so its writer never takes that field
//! from service-ca.

use serde_json::{Value, json};

use crate::requirement::Requirement;
use crate::schema::str_at;

/// The configuration's name.
pub const WEBHOOK_CONFIGURATION: &str = "capi-compatibility-requirements";
/// Where CRD writes are judged.
pub const CRDS_PATH: &str = "/validate/crds";
/// Where a requirement's objects are judged: this prefix, then the requirement's name.
pub const OBJECTS_PATH: &str = "/validate/objects/";
/// The webhooks' names end in this.
const DOMAIN: &str = "compatibility.capi.openshift.io";
/// A webhook name is a DNS subdomain: at most this long.
const MOST: usize = 253;

/// The Service in front of the pods that answer, and whose writes are not sent to them.
#[derive(Debug, Clone, Copy)]
pub struct Endpoint<'a> {
    pub namespace: &'a str,
    pub service: &'a str,
    pub port: u16,
    /// The namespace of the installer's ServiceAccounts (its own and its providers' identities): their
    /// CRD writes are judged by the installer before they are made.
    pub installer_namespace: &'a str,
}

/// The configuration (JSON, ready for server-side apply) for `requirements`, each as read; one that
/// could not be read has no webhook (its status says why). Their objects are judged only for those of
/// them `live` says are the live CRD (the same name, group and plural): a requirement's pinned CRD is
/// whatever its writer wrote, and a webhook for a resource no CRD defines would be sent the writes of
/// a built-in one (every Secret, say).
pub fn registration(
    requirements: &[&Requirement],
    live: impl Fn(&Requirement) -> bool,
    endpoint: Endpoint<'_>,
) -> Value {
    let client = |path: String| {
        json!({"service": {"namespace": endpoint.namespace, "name": endpoint.service,
                           "path": path, "port": endpoint.port}})
    };
    let webhook = |name: String, path: String| {
        json!({
            "name": name,
            "admissionReviewVersions": ["v1"],
            "clientConfig": client(path),
            "failurePolicy": "Fail",
            "matchPolicy": "Equivalent",
            "sideEffects": "None",
            "timeoutSeconds": 10,
        })
    };
    let mut webhooks = Vec::new();
    let mut pinned: Vec<&str> = requirements
        .iter()
        .filter(|r| r.crd_action.is_some())
        .map(|r| r.crd_name.as_str())
        .collect();
    pinned.sort_unstable();
    pinned.dedup();
    if !pinned.is_empty() {
        let mut crds = webhook(format!("crds.{DOMAIN}"), CRDS_PATH.to_string());
        crds["rules"] = json!([{
            "apiGroups": ["apiextensions.k8s.io"], "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE", "DELETE"],
            "resources": ["customresourcedefinitions"], "scope": "Cluster",
        }]);
        crds["matchConditions"] = json!([
            {
                "name": "pinned-by-a-requirement",
                "expression": format!(
                    "(request.operation == 'DELETE' ? oldObject : object).metadata.name in {}",
                    cel_list(&pinned)
                ),
            },
            {
                "name": "not-the-installer",
                "expression": format!(
                    "!request.userInfo.username.startsWith('system:serviceaccount:{}:')",
                    endpoint.installer_namespace
                ),
            },
        ]);
        webhooks.push(crds);
    }
    let mut objects: Vec<&Requirement> = requirements
        .iter()
        .copied()
        .filter(|r| r.objects.is_some() && live(r))
        .collect();
    objects.sort_by(|a, b| a.name.cmp(&b.name));
    for requirement in objects {
        let validation = requirement.objects.as_ref().expect("filtered");
        let versions = requirement.versions();
        if versions.is_empty() {
            // Nothing pinned to judge objects against (no storage version, none served).
            continue;
        }
        let pinned = &requirement.pinned;
        let mut entry = webhook(
            webhook_name(&requirement.name),
            format!("{OBJECTS_PATH}{}", requirement.name),
        );
        entry["rules"] = json!([{
            "apiGroups": [str_at(pinned, "/spec/group")],
            "apiVersions": versions,
            "operations": ["CREATE", "UPDATE"],
            "resources": [str_at(pinned, "/spec/names/plural")],
            "scope": if str_at(pinned, "/spec/scope") == "Cluster" { "Cluster" } else { "Namespaced" },
        }]);
        if let Some(selector) = &validation.namespace_selector {
            entry["namespaceSelector"] = selector.clone();
        }
        if let Some(selector) = &validation.object_selector {
            entry["objectSelector"] = selector.clone();
        }
        if !validation.match_conditions.is_empty() {
            entry["matchConditions"] = Value::from(validation.match_conditions.clone());
        }
        webhooks.push(entry);
    }
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {
            "name": WEBHOOK_CONFIGURATION,
            "annotations": {"service.beta.openshift.io/inject-cabundle": "true"},
        },
        "webhooks": webhooks,
    })
}

/// A webhook's name for the objects of `requirement`: the requirement's name, shortened with a digest
/// of the whole where it would not fit.
fn webhook_name(requirement: &str) -> String {
    let suffix = format!(".objects.{DOMAIN}");
    if requirement.len() + suffix.len() <= MOST {
        return format!("{requirement}{suffix}");
    }
    // FNV-1a: stable across releases and platforms, which the name must be.
    let digest = requirement.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let keep = MOST - suffix.len() - 17;
    // A requirement's name is a DNS subdomain: ASCII, so any byte is a character boundary.
    let head = requirement[..keep].trim_end_matches(['.', '-']);
    format!("{head}-{digest:016x}{suffix}")
}

/// `names` as a CEL list of string literals. A CRD's name is a DNS subdomain (letters, digits, `-`,
/// `.`), so no character needs escaping; anything else is left out rather than let into the
/// expression.
fn cel_list(names: &[&str]) -> String {
    let quoted: Vec<String> = names
        .iter()
        .filter(|n| {
            n.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        })
        .map(|n| format!("'{n}'"))
        .collect();
    format!("[{}]", quoted.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn requirement(name: &str, crd_stanza: bool, objects: Option<Value>) -> Requirement {
        let pinned = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "awsmachines.infrastructure.cluster.x-k8s.io"},
            "spec": {"group": "infrastructure.cluster.x-k8s.io", "scope": "Namespaced",
                     "names": {"kind": "AWSMachine", "plural": "awsmachines"},
                     "versions": [
                        {"name": "v1beta1", "served": true, "storage": false},
                        {"name": "v1beta2", "served": true, "storage": true}]},
        });
        let mut object = json!({
            "metadata": {"name": name},
            "spec": {"compatibilitySchema": {
                "customResourceDefinition": {"type": "YAML", "data": pinned.to_string()},
                "requiredVersions": {"defaultSelection": "AllServed"}}},
        });
        if crd_stanza {
            object["spec"]["customResourceDefinitionSchemaValidation"] = json!({"action": "Deny"});
        }
        if let Some(objects) = objects {
            object["spec"]["objectSchemaValidation"] = objects;
        }
        Requirement::read(&object).unwrap()
    }

    const ENDPOINT: Endpoint<'static> = Endpoint {
        namespace: "openshift-cluster-api",
        service: "capi-controllers-webhook",
        port: 443,
        installer_namespace: "openshift-cluster-api-operator",
    };

    #[test]
    fn webhooks_match_only_what_requirements_pin() {
        let hypershift = requirement("hypershift", true, None);
        let acm = requirement(
            "acm",
            true,
            Some(json!({"action": "Warn",
                "namespaceSelector": {"matchLabels": {"hosted": "true"}},
                "matchConditions": [{"name": "x", "expression": "true"}]})),
        );
        let registration = registration(&[&hypershift, &acm], |_| true, ENDPOINT);
        let webhooks = registration["webhooks"].as_array().unwrap();
        assert_eq!(webhooks.len(), 2, "{registration:#}");
        let crds = &webhooks[0];
        assert_eq!(crds["name"], "crds.compatibility.capi.openshift.io");
        assert_eq!(
            crds["matchConditions"][0]["expression"],
            "(request.operation == 'DELETE' ? oldObject : object).metadata.name in ['awsmachines.infrastructure.cluster.x-k8s.io']"
        );
        assert_eq!(
            crds["matchConditions"][1]["expression"],
            "!request.userInfo.username.startsWith('system:serviceaccount:openshift-cluster-api-operator:')"
        );
        assert_eq!(crds["failurePolicy"], "Fail");
        assert_eq!(crds["clientConfig"]["service"]["path"], CRDS_PATH);
        assert!(crds["clientConfig"].get("caBundle").is_none());
        let objects = &webhooks[1];
        assert_eq!(
            objects["name"],
            "acm.objects.compatibility.capi.openshift.io"
        );
        assert_eq!(
            objects["clientConfig"]["service"]["path"],
            "/validate/objects/acm"
        );
        assert_eq!(
            objects["rules"],
            json!([{"apiGroups": ["infrastructure.cluster.x-k8s.io"], "apiVersions": ["v1beta1", "v1beta2"],
                    "operations": ["CREATE", "UPDATE"], "resources": ["awsmachines"], "scope": "Namespaced"}])
        );
        assert_eq!(
            objects["namespaceSelector"],
            json!({"matchLabels": {"hosted": "true"}})
        );
        assert!(objects.get("objectSelector").is_none());
        assert_eq!(
            objects["matchConditions"],
            json!([{"name": "x", "expression": "true"}])
        );
        assert_eq!(
            registration["metadata"]["annotations"]["service.beta.openshift.io/inject-cabundle"],
            "true"
        );
    }

    #[test]
    fn nothing_pinned_or_not_live_matches_nothing() {
        let objects_only = requirement("objects-only", false, None);
        let registration_of = |live: bool| registration(&[&objects_only], |_| live, ENDPOINT);
        assert_eq!(registration_of(true)["webhooks"], json!([]));
        // Objects judged, but the pinned CRD is not the live one: nothing is sent to the webhook.
        let objects = requirement("objects", false, Some(json!({"action": "Deny"})));
        let registration_of = |live: bool| registration(&[&objects], |_| live, ENDPOINT);
        assert_eq!(
            registration_of(true)["webhooks"].as_array().unwrap().len(),
            1
        );
        assert_eq!(registration_of(false)["webhooks"], json!([]));
    }

    #[test]
    fn a_long_requirement_name_still_makes_a_valid_distinct_webhook_name() {
        let long = "a".repeat(250);
        let other = format!("{}b", "a".repeat(249));
        let (one, two) = (webhook_name(&long), webhook_name(&other));
        assert!(one.len() <= MOST && two.len() <= MOST, "{one}");
        assert_ne!(one, two);
        assert!(one.ends_with(".objects.compatibility.capi.openshift.io"));
        assert_eq!(
            webhook_name("acm"),
            "acm.objects.compatibility.capi.openshift.io"
        );
    }

    #[test]
    fn a_name_that_is_not_a_dns_subdomain_never_reaches_the_expression() {
        assert_eq!(
            cel_list(&["a.example.com", "x' || true || '"]),
            "['a.example.com']"
        );
    }
}
