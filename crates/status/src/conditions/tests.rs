use std::time::Duration;

use capi_apply::{ObjectKey, Phase, Readiness};
use capi_manifests::ProviderType;

use super::*;
use crate::cluster_api::{Recording, StatusError};
use crate::error::Pending;
use crate::error::ProviderError;
use crate::operator::{cluster_operator_status, differs};
use crate::outcome::{Removal, Unavailable};
use capi_bundle::desired::{Wants, wanted};
use capi_bundle::prepare::RenderError;
use capi_bundle::source::{ProviderSource, SourceId, Target};
use capi_openshift::controller_status::ControllerResult;

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
        held: None,
        content_id: None,
        unavailable: vec![],
        dropped_short_names: vec![],
    }
}

/// The conditions without extra providers or uninstalls.
fn conditions(
    desired: &Desired,
    missing: &[Wanted],
    outcomes: &[Outcome],
    unselected: &[Unselected],
) -> Vec<Condition> {
    let outcomes: Vec<&Outcome> = outcomes.iter().collect();
    super::conditions(&Observed {
        desired,
        missing,
        outcomes: &outcomes,
        unselected,
        extra: &BTreeSet::new(),
        removals: &[],
        recording: &Recording::Recorded,
    })
}

/// A provider whose earlier version `v0.9.0` was rolled out and still serves.
fn serving_old(mut o: Outcome) -> Outcome {
    o.serving = true;
    o.rolled_out = Some("v0.9.0".into());
    o
}

/// aws's revision 2 rolled back to 1: a failure that waits for new content.
fn rolled_back() -> ProviderState {
    ProviderState::Failed {
        error: ProviderError::RolledBack {
            failed: 2,
            failed_version: "v2".into(),
            serving: 1,
            serving_version: "v1".into(),
            cause: "not ready".into(),
        },
        attempts: 1,
        failing_for: Duration::ZERO,
    }
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

/// An installed provider whose Deployment lost its pod `lasted` ago (tolerated for 300 s).
fn lost_pod(name: &str, lasted: u64) -> Outcome {
    let mut o = outcome(name, ProviderState::Installed);
    o.serving = false;
    o.unavailable = vec![Unavailable {
        key: ObjectKey::new(
            "apps",
            "v1",
            "Deployment",
            Some("openshift-cluster-api"),
            "capa-controller-manager",
        ),
        status: "available replicas 0 of 1; Available=False: MinimumReplicasUnavailable: Deployment does not have minimum availability.".into(),
        lasted: Duration::from_secs(lasted),
        tolerated: Duration::from_secs(300),
    }];
    o
}

#[test]
fn a_provider_that_lost_its_pods_is_unavailable_at_once_and_degraded_once_it_lasts() {
    let outcomes = [
        outcome("cluster-api", ProviderState::Installed),
        lost_pod("aws", 3),
    ];
    let cs = installing(&outcomes);
    let available = get(&cs, "Available");
    assert!(!available.status);
    assert_eq!(available.reason, Reason::ProviderUnavailable);
    assert_eq!(
        available.message,
        "aws v1.0.0: Deployment openshift-cluster-api/capa-controller-manager is not Available: available replicas 0 of 1; Available=False: MinimumReplicasUnavailable: Deployment does not have minimum availability."
    );
    assert_eq!(
        get(&cs, "CapiInstallerControllerAvailable").reason,
        Reason::ProviderUnavailable
    );
    // Nothing is rolling out, and a pod that is replaced soon is no persistent problem.
    assert!(!get(&cs, "Progressing").status, "{cs:?}");
    assert!(!get(&cs, "Degraded").status, "{cs:?}");
    assert!(get(&cs, "Upgradeable").status);
    // The version that is installed is still the release's.
    assert!(at_release(&[], &outcomes));

    let lasting = installing(&[
        outcome("cluster-api", ProviderState::Installed),
        lost_pod("aws", 300),
    ]);
    let degraded = get(&lasting, "Degraded");
    assert!(degraded.status);
    assert_eq!(degraded.reason, Reason::ProviderUnavailable);
    assert_eq!(
        degraded.message,
        "aws v1.0.0: Deployment openshift-cluster-api/capa-controller-manager has not been Available for 300s: available replicas 0 of 1; Available=False: MinimumReplicasUnavailable: Deployment does not have minimum availability."
    );
    assert!(!get(&lasting, "Available").status);

    // A failure elsewhere keeps its own reason on Degraded, and the message names both.
    let both = installing(&[
        serving_old(outcome("cluster-api", failed(5, 300))),
        lost_pod("aws", 300),
    ]);
    let degraded = get(&both, "Degraded");
    assert_eq!(degraded.reason, Reason::InvalidProviderManifests);
    assert!(
        degraded
            .message
            .contains("ConfigMap cluster-api: document 3")
            && degraded
                .message
                .contains("capa-controller-manager has not been Available"),
        "{degraded:?}"
    );
    assert_eq!(get(&both, "Available").reason, Reason::ProviderUnavailable);
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
        label: Some("infrastructure-gcp".into()),
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
fn a_version_held_back_by_a_requirement_makes_the_operator_not_upgradeable() {
    let held = outcome(
        "aws",
        ProviderState::Failed {
            error: ProviderError::Render(capi_bundle::prepare::RenderError::Incompatible {
                origin: "ConfigMap openshift-cluster-api/aws".into(),
                findings: vec!["CompatibilityRequirement pin: awsmachines.infrastructure.cluster.x-k8s.io version v1beta2, spec.instanceType: field removed".into()],
            }),
            attempts: 1,
            failing_for: Duration::ZERO,
        },
    );
    let cs = installing(&[outcome("cluster-api", ProviderState::Installed), held]);
    let upgradeable = get(&cs, "Upgradeable");
    assert!(!upgradeable.status);
    assert_eq!(upgradeable.reason, Reason::CompatibilityRequirementNotMet);
    assert!(
        upgradeable.message.starts_with("a provider's version is held back by CRD compatibility requirements")
            && upgradeable.message.contains("CompatibilityRequirement pin: awsmachines.infrastructure.cluster.x-k8s.io version v1beta2, spec.instanceType: field removed"),
        "{upgradeable:?}"
    );
    // Not degraded yet (one attempt), but not upgradeable at once.
    assert!(!get(&cs, "Degraded").status);
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
    let first =
        cluster_operator_status(&cs, &[], None, "2026-01-01T00:00:00Z", Some("4.21.0"), &[]);
    assert_eq!(first["versions"][0]["version"], "4.21.0");
    let second = cluster_operator_status(
        &cs,
        &[],
        Some(&first),
        "2026-01-01T00:05:00Z",
        Some("4.21.0"),
        &[],
    );
    assert_eq!(first, second);
    assert!(!differs(Some(&first), &second));

    let failing = installing(&[outcome("cluster-api", failed(9, 999))]);
    let third = cluster_operator_status(
        &failing,
        &[],
        Some(&second),
        "2026-01-01T00:10:00Z",
        None,
        &[],
    );
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

/// The reference's per-controller conditions move their time on a new reason or message too; the
/// installer's own conditions only on a new status.
#[test]
fn controller_conditions_move_their_transition_time_as_the_references() {
    let cs = installing(&[outcome("cluster-api", ProviderState::Installed)]);
    let waiting = |what: &str| {
        capi_openshift::controller_status::conditions(
            INSTALLER_CONTROLLER,
            &ControllerResult::WaitingOnExternal(what.into()),
            None,
        )
    };
    let t0 = "2026-01-01T00:00:00Z";
    let t1 = "2026-01-01T00:05:00Z";
    let first = cluster_operator_status(&cs, &waiting("a"), None, t0, None, &[]);
    let time = |status: &Value, type_: &str| {
        capi_openshift::conditions::find(Some(status), type_).unwrap()["lastTransitionTime"].clone()
    };
    let same = cluster_operator_status(&cs, &waiting("a"), Some(&first), t1, None, &[]);
    assert_eq!(same, first);
    let moved = cluster_operator_status(&cs, &waiting("b"), Some(&first), t1, None, &[]);
    assert!(differs(Some(&first), &moved));
    assert_eq!(
        time(&moved, "InstallerControllerProgressing"),
        t1,
        "new message"
    );
    assert_eq!(time(&moved, "Available"), t0, "the installer's own");
}

#[test]
fn conditions_of_other_components_are_not_compared() {
    let cs = installing(&[outcome("cluster-api", ProviderState::Installed)]);
    let ours = cluster_operator_status(&cs, &[], None, "2026-01-01T00:00:00Z", Some("4.21.0"), &[]);
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
fn related_objects_start_with_both_namespaces_and_have_no_duplicates() {
    let mut a = outcome("cluster-api", ProviderState::Installed);
    a.related = vec![
        json!({"group": "x", "resource": "b", "name": ""}),
        json!({"group": "x", "resource": "a", "name": ""}),
    ];
    let mut b = outcome("aws", ProviderState::Installed);
    b.related = vec![json!({"group": "x", "resource": "a", "name": ""})];
    let related = related("installer-ns", "ns", &[a, b]);
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
    assert_eq!(
        names,
        [
            "namespaces/installer-ns",
            "namespaces/ns",
            "infrastructureproviders/",
            "a/",
            "b/"
        ]
    );
}

/// An infrastructure provider's outcome.
fn infra(name: &str, state: ProviderState) -> Outcome {
    let mut o = outcome(name, state);
    o.target.source.provider_type = ProviderType::Infrastructure;
    o.target.clusterctl_label = format!("infrastructure-{name}");
    o
}

fn with_extra(outcomes: &[Outcome], extra: &[&str]) -> Vec<Condition> {
    let extra: BTreeSet<String> = extra
        .iter()
        .map(|n| format!("infrastructure-{n}"))
        .collect();
    let outcomes: Vec<&Outcome> = outcomes.iter().collect();
    super::conditions(&Observed {
        desired: &aws(),
        missing: &[],
        outcomes: &outcomes,
        unselected: &[],
        extra: &extra,
        removals: &[],
        recording: &Recording::Recorded,
    })
}

#[test]
fn a_failing_extra_provider_degrades_the_operator_but_leaves_it_available() {
    let outcomes = [
        outcome("cluster-api", ProviderState::Installed),
        infra("aws", ProviderState::Installed),
        infra("gcp", failed(3, 30)),
    ];
    let cs = with_extra(&outcomes, &["gcp"]);
    let available = get(&cs, "Available");
    assert!(available.status, "{available:?}");
    assert!(
        available
            .message
            .contains("requested but not serving: ConfigMap gcp: "),
        "{available:?}"
    );
    assert!(get(&cs, "Degraded").status);
    assert!(!at_release(&[], &outcomes));

    // The platform's own provider decides, whatever the extra one does.
    let outcomes = [
        outcome("cluster-api", ProviderState::Installed),
        infra("aws", failed(1, 0)),
        infra("gcp", ProviderState::Installed),
    ];
    let available = get(&with_extra(&outcomes, &["gcp"]), "Available").clone();
    assert!(!available.status);
    assert!(available.message.contains("ConfigMap aws"), "{available:?}");
}

#[test]
fn a_rollback_degrades_at_once_and_a_rollback_by_hand_is_not_at_the_release() {
    let rolled_back = ProviderState::Failed {
        error: ProviderError::RolledBack {
            failed: 3,
            failed_version: "v2".into(),
            serving: 2,
            serving_version: "v1".into(),
            cause: "not ready after 20s".into(),
        },
        attempts: 1,
        failing_for: Duration::ZERO,
    };
    let outcomes = [
        outcome("cluster-api", ProviderState::Installed),
        serving_old(infra("aws", rolled_back)),
    ];
    let cs = installing(&outcomes);
    let degraded = get(&cs, "Degraded");
    assert!(degraded.status);
    assert_eq!(degraded.reason, Reason::RevisionRolledBack);
    assert!(degraded.message.contains("revision 3 (v2)"), "{degraded:?}");
    assert!(
        get(&cs, "Available").status,
        "the last good revision serves"
    );

    let mut held = infra("aws", ProviderState::Installed);
    held.held = Some(1);
    let outcomes = [outcome("cluster-api", ProviderState::Installed), held];
    assert!(!at_release(&[], &outcomes));
    assert!(
        get(&installing(&outcomes), "Available")
            .message
            .contains("(revision 1, rolled back by hand)")
    );
}

#[test]
fn an_uninstall_keeps_the_operator_progressing() {
    let outcomes = [
        outcome("cluster-api", ProviderState::Installed),
        infra("aws", ProviderState::Installed),
    ];
    let removal = Removal {
        name: "gcp".into(),
        kept: vec![(
            "gkeconfigs.infrastructure.cluster.x-k8s.io".into(),
            "instances of GKEConfig still exist".into(),
        )],
        ..Default::default()
    };
    let outcomes: Vec<&Outcome> = outcomes.iter().collect();
    let cs = super::conditions(&Observed {
        desired: &aws(),
        missing: &[],
        outcomes: &outcomes,
        unselected: &[],
        extra: &BTreeSet::new(),
        removals: std::slice::from_ref(&removal),
        recording: &Recording::Recorded,
    });
    let progressing = get(&cs, "Progressing");
    assert!(progressing.status);
    assert_eq!(progressing.reason, Reason::Uninstalling);
    assert!(
        progressing.message.contains(
            "gkeconfigs.infrastructure.cluster.x-k8s.io: instances of GKEConfig still exist"
        ),
        "{progressing:?}"
    );
}

mod infrastructure_provider {
    use super::*;
    use crate::provider::{ProviderView, status};
    use capi_bundle::api::Request;
    use capi_bundle::desired::Role;

    fn request(name: &str) -> Request {
        Request {
            name: name.into(),
            deleting: false,
            delete_crds: false,
            finalized: true,
            generation: Some(2),
            problem: None,
        }
    }

    fn view<'a>(
        request: &'a Request,
        role: &'a Role,
        desired: &'a Desired,
        outcomes: Vec<&'a Outcome>,
    ) -> ProviderView<'a> {
        ProviderView {
            request,
            role,
            desired,
            outcomes,
            missing: false,
            removal: None,
            revision: Some(4),
        }
    }

    fn condition<'a>(status: &'a serde_json::Value, t: &str) -> (&'a str, &'a str, &'a str) {
        let c = status["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == t)
            .unwrap();
        (
            c["status"].as_str().unwrap(),
            c["reason"].as_str().unwrap(),
            c["message"].as_str().unwrap_or_default(),
        )
    }

    const NOW: &str = "2026-11-30T18:00:00Z";

    #[test]
    fn an_extra_provider_reports_its_own_state_version_and_revision() {
        let r = request("gcp");
        let desired = aws();
        let gcp = infra("gcp", ProviderState::Installed);
        let s = status(&view(&r, &Role::Extra, &desired, vec![&gcp]), None, NOW);
        assert_eq!(
            condition(&s, "Available"),
            ("True", "AsExpected", "installed: gcp v1.0.0")
        );
        assert_eq!(condition(&s, "Uninstallable").0, "True");
        assert_eq!(s["version"], "v1.0.0");
        assert_eq!(s["revision"], 4);
        assert_eq!(s["source"], "ConfigMap gcp");
        assert_eq!(s["observedGeneration"], 2);
        assert_eq!(s["conditions"][0]["observedGeneration"], 2);

        let broken = infra("gcp", failed(3, 0));
        let s = status(&view(&r, &Role::Extra, &desired, vec![&broken]), None, NOW);
        let (available, reason, _) = condition(&s, "Available");
        assert_eq!((available, reason), ("False", "InvalidProviderManifests"));
        assert_eq!(condition(&s, "Degraded").0, "True");
        assert!(s.get("version").is_none(), "nothing serves");

        let mut missing = view(&r, &Role::Extra, &desired, vec![]);
        missing.missing = true;
        let s = status(&missing, None, NOW);
        assert_eq!(condition(&s, "Available").1, "WaitingForProviderConfigMaps");
    }

    #[test]
    fn the_platform_s_own_provider_says_it_cannot_be_uninstalled() {
        let r = request("aws");
        let desired = aws();
        let aws_outcome = infra("aws", ProviderState::Installed);
        let s = status(
            &view(&r, &Role::Platform, &desired, vec![&aws_outcome]),
            None,
            NOW,
        );
        let (uninstallable, reason, message) = condition(&s, "Uninstallable");
        assert_eq!((uninstallable, reason), ("False", "PlatformProvider"));
        assert!(message.contains("deleting this object does not uninstall it"));
        assert_eq!(condition(&s, "Available").0, "True");
    }

    #[test]
    fn an_invalid_object_and_an_uninstall_say_so() {
        let mut r = request("cluster-api");
        r.problem =
            Some("InfrastructureProvider cluster-api: not an infrastructure provider".into());
        let role = Role::Invalid(r.problem.clone().unwrap());
        let desired = aws();
        let s = status(&view(&r, &role, &desired, vec![]), None, NOW);
        assert_eq!(condition(&s, "Degraded").1, "InvalidInfrastructureProvider");

        let r = request("gcp");
        let removal = Removal {
            name: "gcp".into(),
            kept: vec![(
                "gkeconfigs.x".into(),
                "instances of GKEConfig still exist".into(),
            )],
            ..Default::default()
        };
        let mut v = view(&r, &Role::Uninstalling, &desired, vec![]);
        v.removal = Some(&removal);
        let s = status(&v, None, NOW);
        assert_eq!(condition(&s, "Progressing").1, "Uninstalling");
        assert_eq!(
            s["keptCustomResourceDefinitions"],
            serde_json::json!(["gkeconfigs.x: instances of GKEConfig still exist"])
        );
        // Unchanged: the transition times stay, and nothing differs.
        let again = status(&v, Some(&s), "2026-11-30T19:00:00Z");
        assert_eq!(again, s);
        assert!(!crate::provider::differs(Some(&s), &again));
        let mut moved = again.clone();
        moved["revision"] = serde_json::json!(5);
        assert!(crate::provider::differs(Some(&s), &moved));
    }
}

/// The reference's two controllers for a pass over `outcomes` on AWS.
fn controllers(outcomes: &[Outcome], recording: &Recording) -> [ControllerResult; 2] {
    let outcomes: Vec<&Outcome> = outcomes.iter().collect();
    super::controllers(&Observed {
        desired: &aws(),
        missing: &[],
        outcomes: &outcomes,
        unselected: &[],
        extra: &BTreeSet::new(),
        removals: &[],
        recording,
    })
    .map(|(_, result)| result)
}

#[test]
fn the_reference_controllers_follow_the_pass() {
    let installed = [
        outcome("cluster-api", ProviderState::Installed),
        outcome("aws", ProviderState::Installed),
    ];
    assert_eq!(
        controllers(&installed, &Recording::Recorded),
        [ControllerResult::Success, ControllerResult::Success]
    );
    let names = super::controllers(&Observed {
        desired: &Desired::WaitingForPlatform,
        missing: &[],
        outcomes: &[],
        unselected: &[],
        extra: &BTreeSet::new(),
        removals: &[],
        recording: &Recording::NotNeeded,
    });
    assert_eq!(names[0].0, "InstallerController");
    assert_eq!(names[1].0, "RevisionController");
    assert_eq!(
        names[1].1,
        ControllerResult::WaitingOnExternal("Infrastructure PlatformStatus".into())
    );

    // Waiting for a Deployment: progressing, naming it; no ClusterAPI object to record in.
    let rolling = [
        outcome("cluster-api", ProviderState::Installed),
        outcome("aws", deployment_pending()),
    ];
    let [installer, revision] = controllers(&rolling, &Recording::NoObject);
    let ControllerResult::Progressing(message) = installer else {
        panic!("{installer:?}");
    };
    assert!(
        message.contains("Deployment openshift-cluster-api/capi"),
        "{message}"
    );
    assert_eq!(
        revision,
        ControllerResult::WaitingOnExternal("ClusterAPI cluster".into())
    );

    // A retried failure is an ephemeral error, even beside one that waits for a change.
    let [installer, _] = controllers(
        &[
            outcome("cluster-api", failed(1, 0)),
            serving_old(outcome("aws", rolled_back())),
        ],
        &Recording::Recorded,
    );
    assert!(
        matches!(&installer, ControllerResult::EphemeralError(m) if m.contains("document 3") && m.contains("rolled back")),
        "{installer:?}"
    );
    // Alone, it is not retried: it needs a new content.
    let [installer, _] = controllers(
        &[
            outcome("cluster-api", ProviderState::Installed),
            serving_old(outcome("aws", rolled_back())),
        ],
        &Recording::Recorded,
    );
    assert!(
        matches!(&installer, ControllerResult::NonRetryableError(m) if m.contains("rolled back to revision 1")),
        "{installer:?}"
    );
}

#[test]
fn the_revision_controller_follows_the_recording() {
    let cases = [
        (
            Recording::Unplanned(vec![("ConfigMap aws".into(), None)]),
            ControllerResult::Progressing(
                "no revision until every provider is planned; waiting for ConfigMap aws".into(),
            ),
        ),
        (
            Recording::Unplanned(vec![
                (
                    "ConfigMap cluster-api".into(),
                    Some("ConfigMap cluster-api: bad (attempt 1)".into()),
                ),
                ("ConfigMap aws".into(), None),
            ]),
            ControllerResult::EphemeralError(
                "no revision: ConfigMap cluster-api: bad (attempt 1)".into(),
            ),
        ),
        (
            Recording::Refused(StatusError::TooManyRevisions),
            ControllerResult::NonRetryableError(StatusError::TooManyRevisions.to_string()),
        ),
        (
            Recording::WriteFailed("conflict".into()),
            ControllerResult::EphemeralError("writing ClusterAPI cluster status: conflict".into()),
        ),
    ];
    for (recording, want) in cases {
        let installed = [outcome("cluster-api", ProviderState::Installed)];
        assert_eq!(
            controllers(&installed, &recording)[1],
            want,
            "{recording:?}"
        );
    }
}

#[test]
fn the_conditions_table_lists_exactly_the_conditions_the_installer_writes() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/admin/status.md"
    ))
    .expect("docs/admin/status.md readable");
    let start = doc
        .find("## Conditions")
        .expect("docs/admin/status.md has the conditions table");
    let documented: Vec<&str> = doc[start..]
        .lines()
        .skip_while(|l| !l.starts_with("| condition"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| l.split('`').nth(1))
        .collect();
    let installed = [outcome("cluster-api", ProviderState::Installed)];
    let mut written: Vec<String> = installing(&installed)
        .into_iter()
        .map(|c| c.type_)
        .collect();
    let outcomes: Vec<&Outcome> = installed.iter().collect();
    let observed = Observed {
        desired: &aws(),
        missing: &[],
        outcomes: &outcomes,
        unselected: &[],
        extra: &BTreeSet::new(),
        removals: &[],
        recording: &Recording::Recorded,
    };
    for (name, result) in super::controllers(&observed) {
        written.extend(
            capi_openshift::controller_status::conditions(name, &result, None)
                .into_iter()
                .map(|c| c.type_),
        );
    }
    assert_eq!(documented, written, "in the order they are written");
}
