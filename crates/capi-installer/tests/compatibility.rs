//! CRD compatibility requirements (issue 49) on the real control plane: a requirement pinning aws's
//! AWSMachine CRD as installed is read and judged Compatible; a new aws version whose CRD removes a
//! pinned field and changes another's type is refused before any write (action Deny), naming the
//! requirement, the version and the fields, while the running version stays; with action Warn the same
//! version is applied and the requirement reports what it breaks; the good version converges again.
//! While a version is held back, the ClusterOperator is not Upgradeable. A CRD no provider installs,
//! pinned by a requirement, has its change by an administrator reported without anything else waking
//! the installer.
//! The installer runs as its own ServiceAccount under exactly the shipped RBAC.
//!
//! Admission: the installer registers the requirement (the shipped, empty registration filled, matching
//! only the pinned CRD, and not the installer's own writes) and then says `Admitted`; with no
//! controllers pod on this control plane to answer, an administrator's write of the pinned CRD is
//! refused (the webhooks fail closed), and a CRD nobody pins is written as before. What the webhooks
//! answer when they can is `real_node.rs`'s.

use std::time::Duration;

use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use test_support::*;

const MINUTE: Duration = Duration::from_secs(60);
const CRD: &str = "awsmachines.infrastructure.cluster.x-k8s.io";
const REQUIREMENT: &str = "pin-awsmachines";

fn crd_resource() -> kube::core::ApiResource {
    ar(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
    )
}

fn crds(client: &kube::Client) -> Api<DynamicObject> {
    Api::all_with(client.clone(), &crd_resource())
}

fn requirements(client: &kube::Client) -> Api<DynamicObject> {
    Api::all_with(
        client.clone(),
        &ar(
            "apiextensions.openshift.io",
            "v1alpha1",
            "CompatibilityRequirement",
            "compatibilityrequirements",
        ),
    )
}

/// The live CRD as a requirement's owner pins it: what they rely on, without what the API server adds.
async fn pinned(client: &kube::Client) -> String {
    let crds = crds(client);
    let live = serde_json::to_value(crds.get(CRD).await.unwrap()).unwrap();
    let pinned = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD},
        "spec": live["spec"],
    });
    serde_json::to_string(&pinned).unwrap()
}

/// `(status, message)` of the condition `type_` of requirement [`REQUIREMENT`], once its reason is
/// `want`.
async fn requirement_condition(client: &kube::Client, type_: &str, want: &str) -> (String, String) {
    condition_of(client, REQUIREMENT, type_, want).await
}

/// `(status, message)` of the condition `type_` of requirement `name`, once its reason is `want`.
async fn condition_of(
    client: &kube::Client,
    name: &str,
    type_: &str,
    want: &str,
) -> (String, String) {
    eventually(2 * MINUTE, &format!("{name} {type_} {want}"), || async {
        let r = requirements(client).get(name).await.ok()?;
        let c = r.data["status"]["conditions"]
            .as_array()?
            .iter()
            .find(|c| c["type"] == type_)?
            .clone();
        let reason = c["reason"].as_str()?.to_string();
        (reason == want).then(|| {
            (
                c["status"].as_str().unwrap().to_string(),
                c["message"].as_str().unwrap().to_string(),
            )
        })
    })
    .await
}

/// The aws components with `spec.instanceType` removed from the AWSMachine CRD's schemas and
/// `spec.rootVolume.size` turned into a string.
fn breaking_aws() -> Value {
    let mut objects: Vec<Value> =
        capi_manifests::yaml::parse_documents("aws", &fixture_components(AWS_CM))
            .unwrap()
            .into_iter()
            .map(|d| d.value)
            .collect();
    let crd = objects
        .iter_mut()
        .find(|o| o["kind"] == "CustomResourceDefinition" && o["metadata"]["name"] == CRD)
        .expect("aws ships the AWSMachine CRD");
    for version in crd["spec"]["versions"].as_array_mut().unwrap() {
        let spec = &mut version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
        spec.as_object_mut().unwrap().remove("instanceType");
        spec["rootVolume"]["properties"]["size"]["type"] = json!("string");
        spec["rootVolume"]["properties"]["size"]
            .as_object_mut()
            .unwrap()
            .remove("format");
    }
    with_components(
        AWS_CM,
        &capi_manifests::yaml::to_multi_yaml(&objects).unwrap(),
    )
}

fn good_aws() -> Value {
    with_components(AWS_CM, &fixture_components(AWS_CM))
}

/// Whether the live AWSMachine CRD's storage version has `spec.instanceType`.
async fn live_has_instance_type(client: &kube::Client) -> bool {
    let crds = crds(client);
    let live = serde_json::to_value(crds.get(CRD).await.unwrap()).unwrap();
    live["spec"]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["storage"] == true)
        .all(|v| {
            !v["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["instanceType"]
                .is_null()
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requirement_refuses_a_breaking_crd_before_any_write_and_warn_applies_and_reports() {
    require_fixture!("transport-configmaps");
    let env = Env::on_aws(&[CORE_CM, AWS_CM]).await;
    let _installer = Running::under_release_rbac(&env, config()).await;
    wait_available(&env.admin, 4 * MINUTE).await;

    // Pinned as installed: read, judged Compatible, the CRD observed.
    let requirement = json!({
        "apiVersion": "apiextensions.openshift.io/v1alpha1", "kind": "CompatibilityRequirement",
        "metadata": {"name": REQUIREMENT},
        "spec": {
            "compatibilitySchema": {
                "customResourceDefinition": {"type": "YAML", "data": pinned(&env.admin).await},
                "requiredVersions": {"defaultSelection": "StorageOnly"},
            },
            "customResourceDefinitionSchemaValidation": {"action": "Deny"},
        },
    });
    requirements(&env.admin)
        .create(
            &PostParams::default(),
            &serde_json::from_value(requirement).unwrap(),
        )
        .await
        .unwrap();
    let (status, _) = requirement_condition(&env.admin, "Compatible", "Compatible").await;
    assert_eq!(status, "True");
    let (status, _) = requirement_condition(&env.admin, "Progressing", "UpToDate").await;
    assert_eq!(status, "False");
    let crds = crds(&env.admin);
    let (status, message) = requirement_condition(&env.admin, "Admitted", "Admitted").await;
    assert_eq!(status, "True");
    assert_eq!(
        message,
        format!("every write of CustomResourceDefinition {CRD} is judged by admission")
    );
    let registration = Api::<ValidatingWebhookConfiguration>::all(env.admin.clone())
        .get("capi-compatibility-requirements")
        .await
        .unwrap();
    let webhooks = registration.webhooks.unwrap_or_default();
    assert_eq!(webhooks.len(), 1, "{webhooks:#?}");
    let conditions: Vec<String> = webhooks[0]
        .match_conditions
        .iter()
        .flatten()
        .map(|c| c.expression.clone())
        .collect();
    assert_eq!(
        conditions,
        [
            format!(
                "(request.operation == 'DELETE' ? oldObject : object).metadata.name in ['{CRD}']"
            ),
            format!(
                "!request.userInfo.username.startsWith('system:serviceaccount:{INSTALLER_NS}:')"
            ),
        ]
    );
    let service = webhooks[0].client_config.service.as_ref().unwrap();
    assert_eq!(
        (
            service.namespace.as_str(),
            service.name.as_str(),
            service.path.as_deref()
        ),
        (NS, "capi-controllers-webhook", Some("/validate/crds"))
    );
    assert_eq!(webhooks[0].failure_policy.as_deref(), Some("Fail"));
    // No pod answers here: an administrator's write of the pinned CRD is refused, not let through
    // unjudged; a CRD nobody pins is none of the webhook's business.
    let label = Patch::Merge(json!({"metadata": {"labels": {"example.com/touched": "yes"}}}));
    let refused = crds
        .patch(CRD, &PatchParams::default(), &label)
        .await
        .expect_err("the pinned CRD's write waits for a webhook that cannot answer");
    assert!(
        refused
            .to_string()
            .contains("compatibility.capi.openshift.io"),
        "{refused}"
    );
    crds.patch(
        "awsclusters.infrastructure.cluster.x-k8s.io",
        &PatchParams::default(),
        &label,
    )
    .await
    .expect("an unpinned CRD is written without the webhook");
    let written = requirements(&env.admin).get(REQUIREMENT).await.unwrap();
    assert_eq!(written.data["status"]["crdName"], CRD);
    let live = crds.get(CRD).await.unwrap();
    assert_eq!(
        written.data["status"]["observedCRD"]["uid"].as_str(),
        live.metadata.uid.as_deref()
    );

    // Deny: the breaking version is refused before any write, every finding named.
    let mark = env.audit().len();
    put_configmap(&env.admin, &breaking_aws()).await;
    let message = reported(
        &env.admin,
        &format!("CompatibilityRequirement {REQUIREMENT}"),
    )
    .await;
    for part in [
        "ConfigMap",
        "aws",
        &format!("{CRD} version v1beta2, spec.instanceType: field removed"),
        &format!(
            "{CRD} version v1beta2, spec.rootVolume.size: type changed from integer to string"
        ),
    ] {
        assert!(message.contains(part), "{part:?} not in {message}");
    }
    let crd_writes: Vec<String> = installer_writes(&env.audit()[mark..], None)
        .iter()
        .filter(|e| !e.request_uri.contains("dryRun"))
        .filter(|e| e.object_ref.as_ref().and_then(|o| o.name.as_deref()) == Some(CRD))
        .map(describe)
        .collect();
    assert!(crd_writes.is_empty(), "{crd_writes:#?}");
    assert!(live_has_instance_type(&env.admin).await);
    // Held back: not upgradeable, for the same findings.
    let status = co_status(&env.admin).await.unwrap();
    let upgradeable = condition(&status, "Upgradeable").unwrap();
    assert_eq!(
        (upgradeable.status.as_str(), upgradeable.reason.as_str()),
        ("False", "CompatibilityRequirementNotMet"),
        "{upgradeable:?}"
    );
    assert!(
        upgradeable
            .message
            .contains("spec.instanceType: field removed"),
        "{upgradeable:?}"
    );

    // The good version back: converged, still compatible, upgradeable again.
    put_configmap(&env.admin, &good_aws()).await;
    wait_available(&env.admin, 3 * MINUTE).await;
    requirement_condition(&env.admin, "Compatible", "Compatible").await;
    eventually(MINUTE, "Upgradeable again", || async {
        let status = co_status(&env.admin).await?;
        is(&status, "Upgradeable", "True").then_some(())
    })
    .await;

    // Warn: the same version is applied, and the requirement says what it breaks.
    requirements(&env.admin)
        .patch(
            REQUIREMENT,
            &PatchParams::default(),
            &Patch::Merge(
                json!({"spec": {"customResourceDefinitionSchemaValidation": {"action": "Warn"}}}),
            ),
        )
        .await
        .unwrap();
    put_configmap(&env.admin, &breaking_aws()).await;
    eventually(
        3 * MINUTE,
        "the breaking CRD applied under Warn",
        || async { (!live_has_instance_type(&env.admin).await).then_some(()) },
    )
    .await;
    let (status, message) =
        requirement_condition(&env.admin, "Compatible", "RequirementsNotMet").await;
    assert_eq!(status, "False");
    assert!(
        message.contains("spec.instanceType: field removed"),
        "{message}"
    );

    put_configmap(&env.admin, &good_aws()).await;
    wait_available(&env.admin, 3 * MINUTE).await;
    requirement_condition(&env.admin, "Compatible", "Compatible").await;
    assert!(live_has_instance_type(&env.admin).await);

    // A CRD no provider installs, pinned without asking admission for anything: an administrator's
    // change of it is reported at once, with nothing else to wake the installer.
    let widget_crd = |size_type: &str| {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"kind": "Widget", "plural": "widgets"},
                     "versions": [{"name": "v1", "served": true, "storage": true,
                                   "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                       "spec": {"type": "object", "properties": {"size": {"type": size_type}}}}}}}]},
        })
    };
    apply(
        &env.admin,
        &crd_resource(),
        &widget_crd("string"),
        "administrator",
    )
    .await;
    requirements(&env.admin)
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "apiextensions.openshift.io/v1alpha1", "kind": "CompatibilityRequirement",
                "metadata": {"name": "pin-widgets"},
                "spec": {"compatibilitySchema": {
                    "customResourceDefinition": {"type": "YAML", "data": widget_crd("string").to_string()},
                    "requiredVersions": {"defaultSelection": "StorageOnly"}}},
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    // (The resync is 10 minutes away: only the pinned CRD's watch can wake the pass in time.)
    condition_of(&env.admin, "pin-widgets", "Compatible", "Compatible").await;
    apply(
        &env.admin,
        &crd_resource(),
        &widget_crd("integer"),
        "administrator",
    )
    .await;
    let (_, message) = condition_of(
        &env.admin,
        "pin-widgets",
        "Compatible",
        "RequirementsNotMet",
    )
    .await;
    assert!(
        message.contains("spec.size: type changed from string to integer"),
        "{message}"
    );

    // A requirement whose pinned "CRD" names a built-in resource (every Secret) asks for its objects
    // to be judged: no webhook is registered for them, and the requirement says why.
    let fake = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "secrets.example.com"},
        "spec": {"group": "", "scope": "Namespaced", "names": {"kind": "Secret", "plural": "secrets"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object"}}}]},
    });
    requirements(&env.admin)
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "apiextensions.openshift.io/v1alpha1", "kind": "CompatibilityRequirement",
                "metadata": {"name": "pin-every-secret"},
                "spec": {"compatibilitySchema": {
                    "customResourceDefinition": {"type": "YAML", "data": fake.to_string()},
                    "requiredVersions": {"defaultSelection": "StorageOnly"}},
                    "objectSchemaValidation": {"action": "Deny"}},
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let (_, admitted) =
        condition_of(&env.admin, "pin-every-secret", "Admitted", "NotAdmitted").await;
    assert!(
        admitted.contains("objectSchemaValidation waits for CustomResourceDefinition secrets.example.com to exist with the pinned group and plural"),
        "{admitted}"
    );
    let registration = Api::<ValidatingWebhookConfiguration>::all(env.admin.clone())
        .get("capi-compatibility-requirements")
        .await
        .unwrap();
    let names: Vec<String> = registration
        .webhooks
        .unwrap_or_default()
        .into_iter()
        .map(|w| w.name)
        .collect();
    assert_eq!(names, ["crds.compatibility.capi.openshift.io"], "{names:?}");
}
