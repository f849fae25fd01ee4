use std::time::Duration;

use capi_apply::{ObjectKey, Phase, Readiness};
use capi_manifests::ProviderType;

use super::operator::{cluster_operator_status, differs};
use super::*;
use crate::desired::{Wants, wanted};
use crate::error::ProviderError;
use crate::outcome::Pending;
use crate::prepare::RenderError;
use crate::source::{ProviderSource, SourceId, Target};

fn outcome(name: &str, state: ProviderState) -> Outcome {
    let serving = matches!(state, ProviderState::Installed);
    Outcome {
        target: Target {
            source: ProviderSource {
                id: SourceId::ConfigMap(name.into()),
                name: name.into(),
                provider_type: ProviderType::Core,
                version: Some("v1.0.0".into()),
                created: None,
            },
            clusterctl_label: "cluster-api".into(),
        },
        state,
        serving,
        rolled_out: serving.then(|| "v1.0.0".to_string()),
        related: vec![],
    }
}

/// A provider whose earlier version `v0.9.0` was rolled out and still serves.
fn serving_old(mut o: Outcome) -> Outcome {
    o.serving = true;
    o.rolled_out = Some("v0.9.0".into());
    o
}

fn failed(attempts: u32, secs: u64) -> ProviderState {
    ProviderState::Failed {
        error: ProviderError::Render(RenderError::Object {
            origin: "document 3".into(),
            object: "Deployment openshift-cluster-api/x".into(),
            message: "bad".into(),
        }),
        attempts,
        failing_for: Duration::from_secs(secs),
    }
}

fn deployment_pending() -> ProviderState {
    ProviderState::Progressing {
        phase: Phase::Workloads,
        pending: vec![Pending {
            key: ObjectKey::new(
                "apps",
                "v1",
                "Deployment",
                Some("openshift-cluster-api"),
                "capi",
            ),
            readiness: Readiness::InProgress("Available=False".into()),
        }],
    }
}

fn get<'a>(cs: &'a [Condition], t: &str) -> &'a Condition {
    cs.iter().find(|c| c.type_ == t).unwrap()
}

fn aws() -> Desired {
    Desired::Install(Wants {
        platform: "AWS".into(),
        providers: wanted(&["aws"]),
    })
}

fn installing(outcomes: &[Outcome]) -> Vec<Condition> {
    conditions(&aws(), &[], outcomes, &[])
}

#[test]
fn installed_providers_are_available_and_at_the_release() {
    let outcomes = [
        outcome("cluster-api", ProviderState::Installed),
        outcome("aws", ProviderState::Installed),
    ];
    let cs = installing(&outcomes);
    assert!(get(&cs, "Available").status);
    assert_eq!(
        get(&cs, "Available").message,
        "Cluster API is installed on AWS: cluster-api v1.0.0, aws v1.0.0"
    );
    assert!(!get(&cs, "Progressing").status);
    assert!(!get(&cs, "Degraded").status);
    assert!(get(&cs, "Upgradeable").status);
    assert!(get(&cs, "CapiInstallerControllerAvailable").status);
    assert_eq!(
        get(&cs, "CapiInstallerControllerDegraded").reason,
        Reason::AsExpected
    );
    assert!(at_release(&[], &outcomes));
}

#[test]
fn one_failure_is_not_degraded_but_a_persistent_one_is() {
    let transient = installing(&[outcome("cluster-api", failed(1, 5))]);
    assert!(!get(&transient, "Degraded").status);
    assert!(get(&transient, "Progressing").status);
    assert!(get(&transient, "Progressing").message.contains("retrying"));
    assert_eq!(
        get(&transient, "Available").reason,
        Reason::InvalidProviderManifests
    );

    for (attempts, secs) in [(3, 5), (1, 121)] {
        let persistent = installing(&[outcome("cluster-api", failed(attempts, secs))]);
        let degraded = get(&persistent, "Degraded");
        assert!(degraded.status, "{attempts} attempts over {secs}s");
        assert_eq!(degraded.reason, Reason::InvalidProviderManifests);
        assert!(
            degraded
                .message
                .starts_with("ConfigMap cluster-api: document 3"),
            "{}",
            degraded.message
        );
        assert!(!get(&persistent, "Upgradeable").status);
        assert_eq!(
            get(&persistent, "CapiInstallerControllerDegraded").reason,
            Reason::SyncingFailed
        );
    }
}

#[test]
fn a_first_install_that_has_not_completed_is_not_available() {
    // Neither a failure nor a timeout makes a provider that never rolled out available.
    for state in [failed(5, 300), deployment_pending()] {
        let outcomes = [outcome("cluster-api", state)];
        let cs = installing(&outcomes);
        let available = get(&cs, "Available");
        assert!(!available.status, "{available:?}");
        assert!(
            available.message.contains("cluster-api")
                && available
                    .message
                    .contains("Deployment openshift-cluster-api/"),
            "names the provider and the blocking object: {available:?}"
        );
        assert!(!at_release(&[], &outcomes));
    }
}

#[test]
fn a_bad_new_version_keeps_the_old_one_available_but_not_at_the_release() {
    let outcomes = [
        outcome("cluster-api", ProviderState::Installed),
        serving_old(outcome("aws", failed(5, 300))),
    ];
    let cs = installing(&outcomes);
    let available = get(&cs, "Available");
    assert!(available.status);
    assert_eq!(
        available.message,
        "Cluster API is installed on AWS: cluster-api v1.0.0, aws v0.9.0"
    );
    assert!(get(&cs, "Degraded").status);
    assert!(!at_release(&[], &outcomes));
    // An upgrade in progress serves the old version too.
    let upgrading = [serving_old(outcome("cluster-api", deployment_pending()))];
    let cs = installing(&upgrading);
    assert!(get(&cs, "Available").status);
    assert!(get(&cs, "Progressing").status);
    assert!(!at_release(&[], &upgrading));
}

#[test]
fn waiting_providers_are_progressing() {
    let cs = installing(&[
        outcome("cluster-api", deployment_pending()),
        outcome(
            "aws",
            ProviderState::Blocked {
                behind: "ConfigMap cluster-api".into(),
            },
        ),
    ]);
    assert!(!get(&cs, "Available").status);
    assert_eq!(get(&cs, "Progressing").reason, Reason::Installing);
    assert_eq!(
        get(&cs, "Progressing").message,
        "cluster-api v1.0.0: waiting for workloads to become Available: Deployment openshift-cluster-api/capi: InProgress: Available=False; aws v1.0.0: waiting for ConfigMap cluster-api"
    );
    let missing = wanted(&["aws"])
        .into_iter()
        .filter(|w| w.name == "aws")
        .collect::<Vec<_>>();
    let outcomes = [outcome("cluster-api", ProviderState::Installed)];
    let cs = conditions(&aws(), &missing, &outcomes, &[]);
    assert_eq!(
        get(&cs, "Progressing").reason,
        Reason::WaitingForProviderConfigMaps
    );
    assert_eq!(
        get(&cs, "Progressing").message,
        "waiting for transport ConfigMaps: aws (infrastructure)"
    );
    assert!(!get(&cs, "Available").status);
    assert!(!at_release(&missing, &outcomes));
}

#[test]
fn a_second_source_of_a_provider_is_reported_without_hiding_the_first() {
    let duplicate = outcome(
        "aws-copy",
        ProviderState::Failed {
            error: ProviderError::DuplicateSource {
                provider: "aws (infrastructure)".into(),
                kept: SourceId::ConfigMap("aws".into()),
            },
            attempts: 3,
            failing_for: Duration::from_secs(20),
        },
    );
    let outcomes = [
        outcome("cluster-api", ProviderState::Installed),
        outcome("aws", ProviderState::Installed),
        duplicate,
    ];
    let cs = installing(&outcomes);
    assert!(get(&cs, "Available").status);
    let degraded = get(&cs, "Degraded");
    assert_eq!(degraded.reason, Reason::DuplicateProvider);
    assert_eq!(
        degraded.message,
        "ConfigMap aws-copy: provider aws (infrastructure) is already provided by ConfigMap aws; remove one of the two (attempt 3)"
    );
    assert!(at_release(&[], &outcomes));
}

#[test]
fn unselected_providers_make_the_operator_not_upgradeable() {
    let unselected = [Unselected {
        id: SourceId::ConfigMap("gcp".into()),
        provider: Some("gcp (infrastructure)".into()),
        objects: 33,
    }];
    let cs = conditions(
        &aws(),
        &[],
        &[outcome("cluster-api", ProviderState::Installed)],
        &unselected,
    );
    let upgradeable = get(&cs, "Upgradeable");
    assert!(!upgradeable.status);
    assert_eq!(upgradeable.reason, Reason::ProvidersNotSelected);
    assert!(
        upgradeable
            .message
            .contains("ConfigMap gcp (provider gcp (infrastructure)): 33 objects"),
        "{upgradeable:?}"
    );
    assert!(get(&cs, "Available").status);
}

#[test]
fn unsupported_platform_is_available_with_the_reference_message() {
    let cs = conditions(
        &Desired::Unsupported {
            platform: "Nutanix".into(),
            reason: "no provider".into(),
        },
        &[],
        &[],
        &[],
    );
    let available = get(&cs, "Available");
    assert!(available.status);
    assert!(available.message.starts_with(NOT_IMPLEMENTED_MESSAGE));
    assert!(!get(&cs, "Progressing").status && !get(&cs, "Degraded").status);
}

#[test]
fn unchanged_conditions_keep_their_transition_time_and_compare_equal() {
    let cs = installing(&[outcome("cluster-api", ProviderState::Installed)]);
    let first = cluster_operator_status(&cs, None, "2026-01-01T00:00:00Z", Some("4.21.0"), &[]);
    assert_eq!(first["versions"][0]["version"], "4.21.0");
    let second = cluster_operator_status(
        &cs,
        Some(&first),
        "2026-01-01T00:05:00Z",
        Some("4.21.0"),
        &[],
    );
    assert_eq!(first, second);
    assert!(!differs(Some(&first), &second));

    let failing = installing(&[outcome("cluster-api", failed(9, 999))]);
    let third = cluster_operator_status(&failing, Some(&second), "2026-01-01T00:10:00Z", None, &[]);
    assert!(differs(Some(&second), &third));
    let degraded = third["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Degraded")
        .unwrap();
    assert_eq!(degraded["lastTransitionTime"], "2026-01-01T00:10:00Z");
    // Not at the release: the version stays what was last rolled out.
    assert_eq!(third["versions"][0]["version"], "4.21.0");
}

#[test]
fn conditions_of_other_components_are_not_compared() {
    let cs = installing(&[outcome("cluster-api", ProviderState::Installed)]);
    let ours = cluster_operator_status(&cs, None, "2026-01-01T00:00:00Z", Some("4.21.0"), &[]);
    let mut live = ours.clone();
    live["conditions"].as_array_mut().unwrap().push(
        json!({"type": "InfraClusterControllerAvailable", "status": "True",
            "reason": "AsExpected", "lastTransitionTime": "2026-01-01T00:01:00Z"}),
    );
    assert!(!differs(Some(&live), &ours));
    live["conditions"][0]["status"] = json!("False");
    assert!(
        differs(Some(&live), &ours),
        "an owned condition still counts"
    );
}

#[test]
fn related_objects_start_with_the_namespace_and_have_no_duplicates() {
    let mut a = outcome("cluster-api", ProviderState::Installed);
    a.related = vec![
        json!({"group": "x", "resource": "b", "name": ""}),
        json!({"group": "x", "resource": "a", "name": ""}),
    ];
    let mut b = outcome("aws", ProviderState::Installed);
    b.related = vec![json!({"group": "x", "resource": "a", "name": ""})];
    let related = related("ns", &[a, b]);
    let names: Vec<String> = related
        .iter()
        .map(|r| {
            format!(
                "{}/{}",
                r["resource"].as_str().unwrap(),
                r["name"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(names, ["namespaces/ns", "a/", "b/"]);
}
