//! End to end on a real node (issues 16 and 31): the release payload applied as the cluster-version
//! operator would (this repository's `manifests/`, webhooks included, the images ConfigMap pinned to
//! the images' digests as the release tooling pins it), the deployer keeping the installer's Deployment
//! with every release image mounted as an image volume, the installer reading core and aws from the
//! profiles in those images and recording its revision in `ClusterAPI/cluster`, the controllers pod,
//! all running as pods of the project's image under the shipped RBAC, and the real Cluster API core and
//! AWS managers that the installer installs running beside them, their webhooks reached through their
//! Services with certificates from the service-ca stand-in; then a release upgrade (a new aws image
//! with a changed profile) rolled through the deployer, the installer and the provider's pods, and back.
//! One node for the whole scenario: each step builds on the previous one.
//!
//! Needs the node's images (`hack/images.sh`, which `make test` runs first), containerd 2
//! (`tools/containerd/build.sh`) and the distribution's runc and CNI plugins
//! (`hack/node-prerequisites.sh`); skips without the images outside CI.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use control_plane::{ControlPlane, ControlPlaneOptions, NodeOptions};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::json;
use test_support::*;

mod network_policies;

/// Image pulls, the managers' start (they wait for their caches) and leader elections on a shared
/// 2-core machine (the install took 414 s at load 20, the installer reading seven profiles).
const T: Duration = Duration::from_secs(600);
const STEADY: Duration = Duration::from_secs(60);
/// The release's Deployment that keeps the installer's (and its ServiceAccount).
const DEPLOYER: &str = "capi-installer-deployer";
const CORE_DEPLOYMENT: &str = "capi-controller-manager";
const AWS_DEPLOYMENT: &str = "capa-controller-manager";
/// Where the test's own objects go (the payload's admission policies guard openshift-cluster-api).
const TEST_NS: &str = "e2e";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_installed_providers_run_on_a_real_node() {
    require_fixture!("transport-configmaps");
    require_fixture!("machine-api-crds");
    let Some(images) = control_plane::images_dir() else {
        return;
    };
    init_logging();
    let layout = control_plane::registry::Layout::open(&images).expect("the node's images");
    let release = pinned_release_images(&layout);
    let cp = ControlPlane::start(ControlPlaneOptions {
        node: Some(NodeOptions { images }),
        ..Default::default()
    })
    .await
    .expect("control plane with a real node starts");
    let admin = cp.admin_client().await.expect("admin client");

    // What OpenShift's installer and other operators leave: Infrastructure/cluster on AWS, the Machine
    // API with a control-plane Machine and the worker user data (machine-config operator).
    openshift_on_aws(&admin).await;
    install_machine_api_crds(&admin).await;
    create_control_plane_machine(
        &admin,
        &format!("{INFRA_NAME}-master-0"),
        json!({"loadBalancers": [{"name": format!("{INFRA_NAME}-int"), "type": "network"}]}),
    )
    .await;
    ensure_namespace(&admin, TEST_NS).await;
    for (ns, name, key, value) in [(
        MAPI_NS,
        "worker-user-data",
        "userData",
        r#"{"ignition":{"version":"3.4.0"}}"#,
    )] {
        apply(
            &admin,
            &ar("", "v1", "Secret", "secrets"),
            &json!({"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": name, "namespace": ns}, "stringData": {key: value}}),
            "openshift-operator",
        )
        .await;
    }

    // `ClusterAPI/cluster` comes with the release payload (create-only, `spec: {}`): where the
    // installer records its revisions.
    let cluster_api = api_for(&admin, "operator.openshift.io/v1alpha1", "ClusterAPI", None).await;

    // The release payload in file name order, as the cluster-version operator applies it, the images
    // ConfigMap's references pinned to digests as the release tooling pins them. No transport
    // ConfigMap: the providers come from the profiles in their images.
    let started = Instant::now();
    apply_release_manifests_edited(&admin, "0000_30_capi-installer", |doc| {
        if doc["kind"] == "ConfigMap" && doc["metadata"]["name"] == IMAGES_CONFIGMAP {
            doc["data"] = json!(release);
        }
    })
    .await;
    // The AWS provider's credentials from its CredentialsRequest in the payload, minted by the Cloud
    // Credential Operator's stand-in.
    mint_credentials(
        &admin,
        "openshift-cluster-api-aws",
        json!({"credentials": "[default]\naws_access_key_id = e2e\naws_secret_access_key = e2e\n"})
            .as_object()
            .unwrap(),
    )
    .await;
    apply_release_manifests(&admin, "0000_31_capi-controllers").await;

    // The installer pods install core and aws; Available only once the real managers are Ready.
    let status = available_or_why(&cp, &admin).await;
    let available_at: k8s_openapi::jiff::Timestamp = condition(&status, "Available")
        .expect("an Available condition")
        .since
        .parse()
        .expect("Available has a transition time");
    eprintln!("installed in {:?}", started.elapsed());
    for deployment in [CORE_DEPLOYMENT, AWS_DEPLOYMENT] {
        let ready_at = ready_pod(&admin, deployment)
            .await
            .unwrap_or_else(|| panic!("{deployment} has no Ready pod while Available"));
        assert!(
            ready_at.0 <= available_at,
            "{deployment}'s pod became Ready at {} after the ClusterOperator was Available at {available_at}",
            ready_at.0
        );
    }
    // The installer came up through the deployer: its pod runs the release's image, and Deployment
    // capi-installer is the deployer's alone (no release manifest holds it).
    for (ns, deployment, account) in [
        (INSTALLER_NS, DEPLOYER, DEPLOYER),
        (INSTALLER_NS, "capi-installer", "capi-installer"),
        (NS, "capi-controllers", "capi-controllers"),
    ] {
        let pods = pods_in(&admin, ns, deployment).await;
        assert!(!pods.is_empty(), "{deployment} runs no pod");
        for pod in pods {
            let spec = pod.spec.as_ref().unwrap();
            assert_eq!(spec.service_account_name.as_deref(), Some(account));
            assert_eq!(
                spec.containers[0].image.as_deref(),
                Some("registry.ci.openshift.org/openshift:capi-installer")
            );
        }
    }
    let installer = Api::<Deployment>::namespaced(admin.clone(), INSTALLER_NS)
        .get("capi-installer")
        .await
        .unwrap();
    let appliers: Vec<&str> = installer
        .managed_fields()
        .iter()
        .filter(|e| e.operation.as_deref() == Some("Apply"))
        .filter_map(|e| e.manager.as_deref())
        .collect();
    assert_eq!(
        appliers,
        [DEPLOYER],
        "{:#?}",
        installer.metadata.managed_fields
    );
    // Every release image mounted (by digest), and the installer's pod running with them.
    assert_eq!(
        image_mounts(&installer),
        release.values().cloned().collect::<BTreeSet<_>>(),
        "the installer's image volumes"
    );
    for pod in pods_in(&admin, INSTALLER_NS, "capi-installer").await {
        let status = pod.status.clone().unwrap_or_default();
        assert_eq!(status.phase.as_deref(), Some("Running"), "{status:?}");
    }
    // Installed from the images' profiles: revision 1 of ClusterAPI/cluster, current, lists core and
    // aws as the reference lists them (each profile by its image's digest).
    let revision_1 = current_revision(&cp, &admin, &cluster_api, 1).await;
    assert_eq!(
        revision_1.components,
        [
            image_component("cluster-api", &release["cluster-capi-controllers"]),
            image_component(
                "cluster-api-provider-aws",
                &release["aws-cluster-api-controllers"]
            ),
        ],
        "{revision_1:?}"
    );
    assert_eq!(
        condition(&status, "Available").unwrap().message,
        "Cluster API is installed on AWS: cluster-api v1.11.3, aws v2.10.0"
    );
    // The default substitution a real OpenShift cluster needs: Ignition bootstrap data on AWS.
    let aws = Api::<Deployment>::namespaced(admin.clone(), NS)
        .get(AWS_DEPLOYMENT)
        .await
        .unwrap();
    let args = aws.spec.unwrap().template.spec.unwrap().containers[0]
        .args
        .clone()
        .unwrap_or_default();
    assert!(
        args.iter()
            .any(|a| a.contains("BootstrapFormatIgnition=true")),
        "the AWS manager runs without Ignition: {args:?}"
    );

    // The controllers pod: InfraCluster, Cluster and kubeconfig, accepted by the real webhooks.
    for kind in ["InfraCluster", "CoreCluster", "Kubeconfig", "SecretSync"] {
        wait_condition(
            &admin,
            &format!("{kind}ControllerAvailable"),
            "True",
            "AsExpected",
            T,
        )
        .await;
    }
    let clusters = namespaced(&admin, NS, &cluster_resource("v1beta2"));
    let aws_clusters = namespaced(&admin, NS, &aws_cluster_resource("v1beta2"));
    aws_clusters
        .get(INFRA_NAME)
        .await
        .expect("the controllers created the AWSCluster");
    secrets(&admin, NS)
        .get(&format!("{INFRA_NAME}-kubeconfig"))
        .await
        .expect("the controllers created the kubeconfig Secret");

    // The real core controller reconciles that Cluster: it read the InfraCluster's readiness.
    let infrastructure_ready = eventually(T, "the Cluster's InfrastructureReady", || async {
        let cluster = clusters.get(INFRA_NAME).await.ok()?;
        let conditions = cluster.data["status"]["conditions"].as_array()?.clone();
        conditions
            .into_iter()
            .find(|c| c["type"] == "InfrastructureReady" && c["status"] == "True")
    })
    .await;
    eprintln!("Cluster condition: {infrastructure_ready}");

    // Conversion through a served older version: the Cluster is stored at v1beta2, and the API
    // server asks the core conversion webhook (through its Service) for it at v1beta1. (The AWS
    // CRDs serve v1beta2 only.)
    let old = namespaced(&admin, NS, &cluster_resource("v1beta1"))
        .get(INFRA_NAME)
        .await
        .unwrap_or_else(|e| panic!("the Cluster read at v1beta1: {e}"));
    assert_eq!(
        old.types.as_ref().map(|t| t.api_version.as_str()),
        Some("cluster.x-k8s.io/v1beta1")
    );
    // v1beta1's infrastructureRef has an apiVersion where v1beta2's has an apiGroup.
    assert_eq!(
        old.data["spec"]["infrastructureRef"]["apiVersion"],
        "infrastructure.cluster.x-k8s.io/v1beta2",
        "not converted: {:#}",
        old.data["spec"]
    );

    // The core validating webhook refuses an invalid Cluster.
    let refused = namespaced(&admin, TEST_NS, &cluster_resource("v1beta2"))
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
                "metadata": {"name": "invalid", "namespace": TEST_NS},
                "spec": {"clusterNetwork": {"pods": {"cidrBlocks": ["not-a-cidr"]}}}
            }))
            .unwrap(),
        )
        .await
        .expect_err("an invalid Cluster is refused");
    let refused = refused.to_string();
    assert!(
        refused.contains("admission webhook") && refused.contains("cluster.x-k8s.io"),
        "refused by something else than the core webhook: {refused}"
    );

    // An Ignition-based AWSMachine, as OpenShift creates them, is accepted by the real AWS webhook.
    namespaced(&admin, TEST_NS, &aws_machine_resource())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AWSMachine",
                "metadata": {"name": "ignition", "namespace": TEST_NS},
                "spec": {"instanceType": "m6i.xlarge",
                    "ignition": {"version": "3.4", "storageType": "UnencryptedUserData"}}
            }))
            .unwrap(),
        )
        .await
        .expect("the AWS webhook accepts an Ignition-based AWSMachine");

    // A CRD compatibility requirement, enforced by the controllers pod's webhooks on others' writes.
    compatibility_requirement_enforced(&cp, &admin).await;

    // The release's NetworkPolicies, enforced by the node's agent since they were applied: the
    // webhook checks above passed through them; each allowed path works, each denied one is dropped.
    let running = |ns: &'static str, deployment: &'static str| {
        let admin = admin.clone();
        async move { pods_in(&admin, ns, deployment).await.remove(0) }
    };
    let targets = network_policies::Targets {
        installer: running(INSTALLER_NS, "capi-installer").await,
        deployer: running(INSTALLER_NS, DEPLOYER).await,
        aws_manager: running(NS, AWS_DEPLOYMENT).await,
    };
    let node_pid = cp.node_pid().unwrap();
    network_policies::prove(
        &admin,
        node_pid,
        cp.service_ca_pem().unwrap(),
        TEST_NS,
        &targets,
    )
    .await;

    // A steady minute: the installer writes nothing (service-ca's bundles and annotations are not its
    // fields), and the managers are never refused anything under the RBAC the installer applied.
    let since = now();
    tokio::time::sleep(STEADY).await;
    let events = cp.audit_events().unwrap();
    for (ns, account) in [
        (INSTALLER_NS, DEPLOYER),
        (INSTALLER_NS, "capi-installer"),
        (NS, "capi-controllers"),
    ] {
        let writes = writes_of(&events, ns, account, since, |_| false);
        assert!(
            writes.is_empty(),
            "{account} wrote in steady state: {writes:#?}"
        );
    }
    for (ns, deployment) in [
        (NS, CORE_DEPLOYMENT),
        (NS, AWS_DEPLOYMENT),
        (INSTALLER_NS, DEPLOYER),
    ] {
        let log = cp.deployment_logs(ns, deployment).expect("a real node");
        assert!(!log.is_empty(), "no log of {deployment}");
        let forbidden: Vec<&str> = log
            .lines()
            .filter(|l| l.to_lowercase().contains("forbidden"))
            .collect();
        assert!(
            forbidden.is_empty(),
            "{deployment} was refused: {forbidden:#?}"
        );
    }

    // A provider pod killed: the ClusterOperator reports it (Available=False naming the Deployment;
    // nothing rolls out, so Progressing stays False), the ReplicaSet replaces the pod, and Available
    // comes back only once the new pod is Ready. Reading availability is not drift: meanwhile the
    // installer writes nothing but the ClusterOperator's status. The node is cordoned while the pod
    // is killed, so that its replacement waits until the report has been seen: without it, on a
    // loaded machine the replacement was Ready before a reconcile (which renders every provider
    // first) read the Deployment, and there was nothing left to report (docs/known-gaps.md).
    let since = now();
    let killed = pods_of(&admin, AWS_DEPLOYMENT).await.remove(0);
    cordon(&admin, true).await;
    Api::<Pod>::namespaced(admin.clone(), NS)
        .delete(&killed.name_any(), &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    let reported = eventually(
        T,
        "the ClusterOperator reporting the killed pod",
        || async {
            let s = co_status(&admin).await?;
            (!is(&s, "Available", "True")).then_some(s)
        },
    )
    .await;
    let available = condition(&reported, "Available").unwrap();
    eprintln!("killed pod reported: {available:?}");
    assert_eq!(available.reason, "ProviderUnavailable", "{available:?}");
    assert!(
        available.message.contains(&format!(
            "Deployment {NS}/{AWS_DEPLOYMENT} is not Available: available replicas 0 of 1"
        )),
        "{available:?}"
    );
    assert!(
        is(&reported, "Progressing", "False") && is(&reported, "Degraded", "False"),
        "a lost pod is neither a rollout nor (yet) degraded: {reported:#}"
    );
    cordon(&admin, false).await;
    let status = available_or_why(&cp, &admin).await;
    let back_at: k8s_openapi::jiff::Timestamp = condition(&status, "Available")
        .unwrap()
        .since
        .parse()
        .expect("Available has a transition time");
    let replacement = pods_of(&admin, AWS_DEPLOYMENT)
        .await
        .into_iter()
        .find(|p| p.uid() != killed.uid())
        .expect("the ReplicaSet replaced the killed pod");
    let ready_at = pod_ready(&replacement).expect("the replacement is Ready while Available");
    assert!(
        ready_at.0 <= back_at,
        "Available again at {back_at}, before the new pod was Ready at {}",
        ready_at.0
    );
    let writes = writes_of(
        &cp.audit_events().unwrap(),
        INSTALLER_NS,
        "capi-installer",
        since,
        |o| o.resource == "clusteroperators" && o.subresource.as_deref() == Some("status"),
    );
    assert!(
        writes.is_empty(),
        "the installer wrote more than status for a killed pod: {writes:#?}"
    );

    // A release upgrade: the next release's aws image (the same manager, its profile's log level
    // raised), by digest in the images ConfigMap. The deployer mounts it beside the image revision 1
    // still names (the installer's pods roll onto both), the installer installs revision 2 from it,
    // the AWS manager rolls out through a new ReplicaSet (the gate waits for its pods), and once
    // revision 2 is current and revision 1 trimmed, the old image is unmounted.
    let old_aws = release["aws-cluster-api-controllers"].clone();
    let mut next = release.clone();
    next.insert(
        "aws-cluster-api-controllers".into(),
        pinned(
            &layout,
            &format!("{}-next", release_images()["aws-cluster-api-controllers"]),
        ),
    );
    let new_aws = next["aws-cluster-api-controllers"].clone();
    let rolled = upgrade(&cp, &admin, &cluster_api, &next, 2, "--v=2").await;
    assert!(
        rolled.iter().any(|m| m == &old_aws) && rolled.iter().any(|m| m == &new_aws),
        "the new aws image mounted beside the one revision 1 keeps: {rolled:?}"
    );
    // And back (a rollback is a release like any other): the first image, revision 3, the first flags.
    let rolled = upgrade(&cp, &admin, &cluster_api, &release, 3, "--v=0").await;
    assert!(
        rolled.iter().any(|m| m == &new_aws),
        "the image revision 2 keeps stays mounted while it is kept: {rolled:?}"
    );
    drop(cp);
}

/// The writes of ServiceAccount `account` of openshift-cluster-api after `since`, but its Lease's
/// renewals (the one write a steady process makes) and what `allowed` accepts.
fn writes_of(
    events: &[control_plane::AuditEvent],
    namespace: &str,
    account: &str,
    since: k8s_openapi::jiff::Timestamp,
    allowed: impl Fn(&control_plane::AuditObjectRef) -> bool,
) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.is_write() && e.stage_timestamp.0 > since)
        .filter(|e| e.user.username == format!("system:serviceaccount:{namespace}:{account}"))
        .filter(|e| {
            e.object_ref
                .as_ref()
                .is_none_or(|o| o.resource != "leases" && !allowed(o))
        })
        .map(|e| format!("{} {}", e.verb, e.request_uri))
        .collect()
}

const REQUIREMENT: &str = "e2e-pins-awsmachines";
const AWS_MACHINE_CRD: &str = "awsmachines.infrastructure.cluster.x-k8s.io";

/// kubectl as cluster-admin with `stdin`: whether it succeeded, and what it wrote to stderr (the
/// refusal, or the API server's warnings).
async fn kubectl(cp: &ControlPlane, args: &[&str], stdin: &str) -> (bool, String) {
    use tokio::io::AsyncWriteExt;
    let bin = control_plane::bin_dir()
        .expect("the control plane's binaries")
        .join("kubectl");
    let mut child = tokio::process::Command::new(bin)
        .arg("--kubeconfig")
        .arg(cp.kubeconfig_path())
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("kubectl runs");
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.as_bytes()).await.unwrap();
    drop(input);
    let out = child.wait_with_output().await.unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The live AWSMachine CRD's spec.
async fn aws_machine_crd(admin: &Client) -> serde_json::Value {
    let crds = api_for(
        admin,
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        None,
    )
    .await;
    serde_json::to_value(crds.get(AWS_MACHINE_CRD).await.unwrap()).unwrap()
}

/// The AWSMachine CRD as an administrator would apply it, `spec.instanceType` taken out of every
/// version: a CRD's schema is atomic for server-side apply, so applying it removes the field, whoever
/// owned it.
fn without_instance_type(live: &serde_json::Value) -> String {
    let mut spec = live["spec"].clone();
    for version in spec["versions"].as_array_mut().unwrap() {
        version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
            .as_object_mut()
            .unwrap()
            .remove("instanceType");
    }
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": AWS_MACHINE_CRD}, "spec": spec})
    .to_string()
}

/// An administrator's `kubectl apply` of a CRD from stdin, taking over what it changes.
const APPLY: [&str; 6] = [
    "apply",
    "--server-side",
    "--force-conflicts",
    "--field-manager=administrator",
    "-f",
    "-",
];

/// A requirement pinning aws's AWSMachine CRD as installed, its `spec.instanceType` pinned to the one
/// type its owner relies on (stricter than the live schema, so the installed CRD still meets it):
/// admitted; an administrator's `kubectl apply` that removes `spec.instanceType`, or changes its
/// type, is denied under
/// Deny, naming the requirement and the field, and warned under Warn (and the installer puts its
/// field back); an AWSMachine of another type, which the live CRD and aws's own webhook accept, is
/// refused by the pinned schema. Deleted at the end, which empties the registration again.
async fn compatibility_requirement_enforced(cp: &ControlPlane, admin: &Client) {
    let live = aws_machine_crd(admin).await;
    let mut pinned = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                            "metadata": {"name": AWS_MACHINE_CRD}, "spec": live["spec"].clone()});
    for version in pinned["spec"]["versions"].as_array_mut().unwrap() {
        version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["instanceType"]
            ["enum"] = json!(["m6i.xlarge"]);
    }
    let requirements = api_for(
        admin,
        "apiextensions.openshift.io/v1alpha1",
        "CompatibilityRequirement",
        None,
    )
    .await;
    let requirement = json!({
        "apiVersion": "apiextensions.openshift.io/v1alpha1", "kind": "CompatibilityRequirement",
        "metadata": {"name": REQUIREMENT},
        "spec": {
            "compatibilitySchema": {
                "customResourceDefinition": {"type": "YAML", "data": pinned.to_string()},
                "requiredVersions": {"defaultSelection": "StorageOnly"},
            },
            "customResourceDefinitionSchemaValidation": {"action": "Deny"},
            "objectSchemaValidation": {"action": "Deny"},
        },
    });
    requirements
        .create(
            &PostParams::default(),
            &serde_json::from_value(requirement).unwrap(),
        )
        .await
        .unwrap();
    let condition_of = |type_: &'static str| {
        let requirements = requirements.clone();
        async move {
            let r = requirements.get(REQUIREMENT).await.ok()?;
            r.data["status"]["conditions"]
                .as_array()?
                .iter()
                .find(|c| c["type"] == type_)
                .map(|c| {
                    (
                        c["status"].as_str().unwrap_or_default().to_string(),
                        c["message"].to_string(),
                    )
                })
        }
    };
    eventually(T, "the requirement Admitted and Compatible", || async {
        let admitted = condition_of("Admitted").await?;
        let compatible = condition_of("Compatible").await?;
        (admitted.0 == "True" && compatible.0 == "True").then_some(())
    })
    .await;

    // Deny: refused by the webhook (once service-ca's CA is in the registration and a replica
    // answers, the refusal is the webhook's own), naming the requirement and the field.
    let breaking = without_instance_type(&live);
    let refusal = eventually(
        T,
        "kubectl apply refused by the compatibility webhook",
        || async {
            let (applied, stderr) = kubectl(cp, &APPLY, &breaking).await;
            assert!(
                !applied,
                "an incompatible CRD was applied under Deny: {stderr}"
            );
            stderr
                .contains("breaks what CompatibilityRequirements pin")
                .then_some(stderr)
        },
    )
    .await;
    eprintln!("kubectl apply under Deny: {refusal}");
    assert!(
        refusal.contains(&format!(
            "CompatibilityRequirement {REQUIREMENT}: {AWS_MACHINE_CRD} version v1beta2, spec.instanceType: field removed"
        )),
        "{refusal}"
    );
    assert!(!aws_machine_crd(admin).await["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["instanceType"].is_null());

    // `kubectl apply` of the CRD with `spec.instanceType` turned into an integer: refused too.
    let mut retyped = aws_machine_crd(admin).await;
    for version in retyped["spec"]["versions"].as_array_mut().unwrap() {
        version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["instanceType"] =
            json!({"type": "integer"});
    }
    let retyped =
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                         "metadata": {"name": AWS_MACHINE_CRD}, "spec": retyped["spec"]})
        .to_string();
    let (applied, stderr) = kubectl(cp, &APPLY, &retyped).await;
    eprintln!("kubectl apply of a retyped field under Deny: {stderr}");
    assert!(!applied, "an incompatible CRD was applied under Deny");
    assert!(
        stderr.contains(&format!(
            "CompatibilityRequirement {REQUIREMENT}: {AWS_MACHINE_CRD} version v1beta2, spec.instanceType: type changed from string to integer"
        )),
        "{stderr}"
    );

    // An object the live CRD and aws's webhook accept, but not the pinned schema.
    let machine = json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AWSMachine",
        "metadata": {"name": "not-pinned-type", "namespace": TEST_NS},
        "spec": {"instanceType": "t3.large", "ignition": {"version": "3.4", "storageType": "UnencryptedUserData"}},
    })
    .to_string();
    let (created, stderr) = kubectl(cp, &["create", "-f", "-"], &machine).await;
    eprintln!("kubectl create of an AWSMachine the pinned schema refuses: {stderr}");
    assert!(
        !created,
        "an AWSMachine the pinned schema refuses was created"
    );
    assert!(
        stderr.contains(&format!(
            "AWSMachine {TEST_NS}/not-pinned-type breaks the schema CompatibilityRequirement {REQUIREMENT} pins: spec.instanceType: \"t3.large\" is not one of the allowed values: \"m6i.xlarge\""
        )),
        "{stderr}"
    );

    // Warn: applied, with the finding as kubectl's warning; the installer then puts its field back.
    requirements
        .patch(
            REQUIREMENT,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(
                json!({"spec": {"customResourceDefinitionSchemaValidation": {"action": "Warn"}}}),
            ),
        )
        .await
        .unwrap();
    let warned = eventually(
        T,
        "kubectl apply warned by the compatibility webhook",
        || async {
            let (applied, stderr) = kubectl(cp, &APPLY, &breaking).await;
            applied.then_some(stderr)
        },
    )
    .await;
    eprintln!("kubectl apply under Warn: {warned}");
    assert!(
        warned.contains(&format!(
            "Warning: CompatibilityRequirement {REQUIREMENT}: {AWS_MACHINE_CRD} version v1beta2, spec.instanceType: field removed"
        )),
        "{warned}"
    );
    eventually(T, "the installer's spec.instanceType back in the AWSMachine CRD", || async {
        let live = aws_machine_crd(admin).await;
        (!live["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["instanceType"].is_null())
            .then_some(())
    })
    .await;

    requirements
        .delete(REQUIREMENT, &DeleteParams::default())
        .await
        .unwrap();
    eventually(T, "the registration emptied", || async {
        let registration = Api::<ValidatingWebhookConfiguration>::all(admin.clone())
            .get("capi-compatibility-requirements")
            .await
            .ok()?;
        registration
            .webhooks
            .unwrap_or_default()
            .is_empty()
            .then_some(())
    })
    .await;
}

fn cluster_resource(version: &str) -> kube::core::ApiResource {
    ar("cluster.x-k8s.io", version, "Cluster", "clusters")
}

fn aws_cluster_resource(version: &str) -> kube::core::ApiResource {
    ar(
        "infrastructure.cluster.x-k8s.io",
        version,
        "AWSCluster",
        "awsclusters",
    )
}

fn aws_machine_resource() -> kube::core::ApiResource {
    ar(
        "infrastructure.cluster.x-k8s.io",
        "v1beta2",
        "AWSMachine",
        "awsmachines",
    )
}

fn now() -> k8s_openapi::jiff::Timestamp {
    k8s_openapi::jiff::Timestamp::now()
}

/// The pods of a Deployment of the providers' namespace (by its selector's labels).
async fn pods_of(client: &Client, deployment: &str) -> Vec<Pod> {
    pods_in(client, NS, deployment).await
}

/// The pods of Deployment `ns/deployment` (by its selector's labels).
async fn pods_in(client: &Client, ns: &str, deployment: &str) -> Vec<Pod> {
    let d = Api::<Deployment>::namespaced(client.clone(), ns)
        .get(deployment)
        .await
        .unwrap_or_else(|e| panic!("Deployment {deployment}: {e}"));
    let selector: Vec<String> = d
        .spec
        .unwrap()
        .selector
        .match_labels
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    Api::<Pod>::namespaced(client.clone(), ns)
        .list(&ListParams::default().labels(&selector.join(",")))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect()
}

fn pod_ready(pod: &Pod) -> Option<Time> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready" && c.status == "True")?
        .last_transition_time
        .clone()
}

/// When the Deployment's Ready pod became Ready.
async fn ready_pod(client: &Client, deployment: &str) -> Option<Time> {
    pods_of(client, deployment).await.iter().find_map(pod_ready)
}

async fn replica_sets(client: &Client, deployment: &str) -> Vec<ReplicaSet> {
    Api::<ReplicaSet>::namespaced(client.clone(), NS)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|rs| {
            rs.owner_references()
                .iter()
                .any(|o| o.kind == "Deployment" && o.name == deployment)
        })
        .collect()
}

/// Waits for the ClusterOperator to be Available; when it is not within [`T`], fails with its
/// conditions and what the node's pods are doing (waiting reasons, restarts, the last termination),
/// which is what tells a slow start from a crash loop.
async fn available_or_why(cp: &ControlPlane, admin: &Client) -> serde_json::Value {
    let conditions = match try_wait_available(admin, T).await {
        Ok(status) => return status,
        Err(conditions) => conditions,
    };
    panic!(
        "ClusterOperator cluster-api not Available after {T:?}: {conditions:#}\n{}",
        why(cp, admin).await
    );
}

/// [`eventually`], but a timeout also prints where the installation stands ([`why`]).
async fn eventually_or_why<V, F, Fut>(
    cp: &ControlPlane,
    admin: &Client,
    what: &str,
    mut check: F,
) -> V
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<V>>,
{
    let deadline = Instant::now() + T;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        if Instant::now() > deadline {
            panic!(
                "timed out after {T:?} waiting for {what}\n{}",
                why(cp, admin).await
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Where the installation stands, for a failure message: the ClusterOperator's conditions,
/// `ClusterAPI/cluster` status, the pods of both namespaces, the tail of the installer's and the
/// deployer's logs, the providers' Deployments and ReplicaSets.
async fn why(cp: &ControlPlane, admin: &Client) -> String {
    let operator = co_status(admin).await.unwrap_or_default();
    let cluster_api = api_for(admin, "operator.openshift.io/v1alpha1", "ClusterAPI", None)
        .await
        .get("cluster")
        .await
        .map(|c| c.data["status"].clone())
        .unwrap_or_default();
    let mut pods = Vec::new();
    for ns in [NS, INSTALLER_NS] {
        let list = Api::<Pod>::namespaced(admin.clone(), ns)
            .list(&ListParams::default())
            .await
            .map(|l| l.items)
            .unwrap_or_default();
        for pod in list {
            let name = format!("{ns}/{}", pod.name_any());
            let statuses = pod
                .status
                .and_then(|s| s.container_statuses)
                .unwrap_or_default();
            for c in statuses {
                pods.push(format!(
                    "{name} {}: ready={} restarts={} state={} last={}",
                    c.name,
                    c.ready,
                    c.restart_count,
                    serde_json::to_string(&c.state).unwrap_or_default(),
                    serde_json::to_string(&c.last_state).unwrap_or_default()
                ));
            }
        }
    }
    // The installer's and the deployer's own account of where they are (the kubelet's log files:
    // the API server cannot reach this node's kubelet by its name).
    for deployment in ["capi-installer", DEPLOYER] {
        let log = cp
            .deployment_logs(INSTALLER_NS, deployment)
            .unwrap_or_default();
        pods.push(format!(
            "  log of {INSTALLER_NS}/{deployment}:\n{}",
            last_lines(&log, 25)
        ));
    }
    let deployments: Vec<String> = Api::<Deployment>::namespaced(admin.clone(), NS)
        .list(&ListParams::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default()
        .iter()
        .map(|d| {
            let status = d.status.clone().unwrap_or_default();
            format!(
                "{}: replicas {:?}, ready {:?}, available {:?}",
                d.name_any(),
                status.replicas,
                status.ready_replicas,
                status.available_replicas
            )
        })
        .collect();
    let replica_sets: Vec<String> = Api::<ReplicaSet>::namespaced(admin.clone(), NS)
        .list(&ListParams::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default()
        .iter()
        .map(|rs| {
            let spec = rs.spec.clone().unwrap_or_default();
            let args = spec
                .template
                .and_then(|t| t.spec)
                .map(|s| s.containers[0].args.clone().unwrap_or_default())
                .unwrap_or_default();
            format!(
                "{}: replicas {:?}, args {args:?}",
                rs.name_any(),
                spec.replicas
            )
        })
        .collect();
    format!(
        "ClusterOperator conditions: {:#}\nClusterAPI cluster status: {cluster_api:#}\npods:\n{}\ndeployments in {NS}:\n{}\nreplica sets in {NS}:\n{}",
        operator["conditions"],
        pods.join("\n"),
        deployments.join("\n"),
        replica_sets.join("\n")
    )
}

/// The images ConfigMap's name (the release's, in the installer's namespace).
const IMAGES_CONFIGMAP: &str = "capi-installer-images";

/// `reference` (`host/repository:tag`) pinned to the digest of the node's image of that name, as the
/// release tooling pins the release's images.
fn pinned(layout: &control_plane::registry::Layout, reference: &str) -> String {
    let digest = layout
        .digest(reference)
        .unwrap_or_else(|| panic!("the node serves no image {reference} (hack/images.sh)"));
    let (repository, _tag) = reference.rsplit_once(':').expect("a tagged reference");
    format!("{repository}@{digest}")
}

/// The release's images ConfigMap (`manifests/`): key → tagged reference.
fn release_images() -> BTreeMap<String, String> {
    let manifests = repo_manifests("0000_30_capi-installer");
    let configmap = manifests
        .iter()
        // Not a manifest of removal of the same name (it has no data).
        .find(|d| {
            d["kind"] == "ConfigMap"
                && d["metadata"]["name"] == IMAGES_CONFIGMAP
                && d["data"].is_object()
        })
        .expect("the release's images ConfigMap");
    serde_json::from_value(configmap["data"].clone()).expect("its data: strings")
}

/// [`release_images`], every value pinned to its digest.
fn pinned_release_images(layout: &control_plane::registry::Layout) -> BTreeMap<String, String> {
    release_images()
        .into_iter()
        .map(|(key, reference)| (key, pinned(layout, &reference)))
        .collect()
}

/// The image references the installer's Deployment mounts (each read-only, once).
fn image_mounts(installer: &Deployment) -> BTreeSet<String> {
    let spec = installer.spec.clone().unwrap().template.spec.unwrap();
    let volumes: BTreeMap<String, String> = spec
        .volumes
        .unwrap_or_default()
        .into_iter()
        .filter_map(|v| Some((v.name, v.image?.reference?)))
        .collect();
    let mounts: Vec<_> = spec.containers[0]
        .volume_mounts
        .clone()
        .unwrap_or_default()
        .into_iter()
        .filter(|m| volumes.contains_key(&m.name))
        .inspect(|m| assert_eq!(m.read_only, Some(true), "{m:?}"))
        .collect();
    assert_eq!(
        mounts.len(),
        volumes.len(),
        "every image volume mounted once"
    );
    volumes.into_values().collect()
}

/// `ClusterAPIInstallerRevision`, the fields this test reads.
#[derive(Debug, serde::Deserialize)]
struct Revision {
    name: String,
    revision: i64,
    #[serde(default)]
    components: Vec<serde_json::Value>,
}

/// A component as the reference lists a profile: its metadata name, its image by digest, the profile.
fn image_component(name: &str, image: &str) -> serde_json::Value {
    json!({"name": name, "type": "Image", "image": {"ref": image, "profile": "default"}})
}

/// Waits until `ClusterAPI/cluster` status names revision `n` as desired and current, and returns it.
async fn current_revision(
    cp: &ControlPlane,
    admin: &Client,
    api: &Api<kube::api::DynamicObject>,
    n: i64,
) -> Revision {
    eventually_or_why(
        cp,
        admin,
        &format!("revision {n} current in ClusterAPI cluster"),
        || async {
            let status = api.get("cluster").await.ok()?.data["status"].clone();
            let desired = status["desiredRevision"].as_str()?;
            if status["currentRevision"].as_str() != Some(desired) {
                return None;
            }
            let revisions: Vec<Revision> =
                serde_json::from_value(status["revisions"].clone()).ok()?;
            revisions
                .into_iter()
                .find(|r| r.name == desired)
                .filter(|r| r.revision == n)
        },
    )
    .await
}

/// The release of `images` applied (its images ConfigMap): waits for the deployer to roll the
/// installer's pods onto a Deployment that mounts the new aws image (returns what it mounts then),
/// for the installer to make revision `n` current with that image, for the AWS manager to roll out
/// through a new ReplicaSet to `flag`, and for the images no kept revision names to be unmounted.
async fn upgrade(
    cp: &ControlPlane,
    admin: &Client,
    cluster_api: &Api<kube::api::DynamicObject>,
    images: &BTreeMap<String, String>,
    n: i64,
    flag: &str,
) -> BTreeSet<String> {
    let aws = images["aws-cluster-api-controllers"].clone();
    let deployments = Api::<Deployment>::namespaced(admin.clone(), INSTALLER_NS);
    let generation = deployments
        .get("capi-installer")
        .await
        .unwrap()
        .metadata
        .generation;
    apply_as_release_payload(
        admin,
        &[json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": IMAGES_CONFIGMAP, "namespace": INSTALLER_NS},
            "data": images})],
    )
    .await;
    let mounted = eventually(
        T,
        "the installer's Deployment mounting the new aws image",
        || async {
            let d = deployments.get("capi-installer").await.ok()?;
            (d.metadata.generation != generation && image_mounts(&d).contains(&aws))
                .then(|| image_mounts(&d))
        },
    )
    .await;
    // A new ReplicaSet for a new pod template; a rollback to an earlier template scales the earlier
    // ReplicaSet up again instead.
    let args_of = |rs: &ReplicaSet| {
        rs.spec
            .clone()
            .unwrap()
            .template
            .unwrap()
            .spec
            .unwrap()
            .containers[0]
            .args
            .clone()
            .unwrap_or_default()
    };
    let new_rs = eventually_or_why(
        cp,
        admin,
        "the AWS manager's ReplicaSet of the release",
        || async {
            replica_sets(admin, AWS_DEPLOYMENT)
                .await
                .into_iter()
                .find(|rs| {
                    let scaled_up = rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0) >= 1;
                    scaled_up && args_of(rs).iter().any(|a| a == flag)
                })
        },
    )
    .await;
    let revision = current_revision(cp, admin, cluster_api, n).await;
    assert!(
        revision
            .components
            .contains(&image_component("cluster-api-provider-aws", &aws)),
        "{revision:?}"
    );
    wait_condition(admin, "Progressing", "False", "AsExpected", T).await;
    let rs = Api::<ReplicaSet>::namespaced(admin.clone(), NS)
        .get(&new_rs.name_any())
        .await
        .unwrap();
    assert!(
        rs.status
            .clone()
            .and_then(|s| s.ready_replicas)
            .unwrap_or(0)
            >= 1,
        "the gate passed before the new ReplicaSet's pod was Ready"
    );
    let args = args_of(&rs);
    assert!(args.iter().any(|a| a == flag), "{flag} not in {args:?}");
    // Once the earlier revisions are trimmed, only this release's images stay mounted.
    let release: BTreeSet<String> = images.values().cloned().collect();
    eventually(T, "the images of trimmed revisions unmounted", || async {
        let d = deployments.get("capi-installer").await.ok()?;
        (image_mounts(&d) == release).then_some(())
    })
    .await;
    mounted
}
