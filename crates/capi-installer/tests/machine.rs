//! A worker machine end to end on a real node (issue 32): what OpenShift uses Cluster API for. The
//! release payload applied as the cluster-version operator would (as `real_node.rs` does), the
//! installer installing the real core and AWS managers, the controllers pod making the Cluster, the
//! AWSCluster, the kubeconfig and the worker user data; then an emulated EC2 (moto, on the node's own
//! address) holding the AWS account OpenShift's installer leaves, the AWS provider pointed at it only
//! through the credentials Secret the release mounts, and a MachineSet shaped like the reference's:
//! two Machines Running with instances carrying the worker Ignition, scaled to zero with nothing
//! left, and a machine that cannot be made reported on its conditions while the installer's status
//! stays as it was. See docs/maintainers/machines.md.
//!
//! Needs the node's images (`hack/images.sh`), the node's packages (`hack/node-prerequisites.sh`) and
//! moto (`tools/moto/build.sh`, run on first use); skips without the images outside CI.

use std::time::{Duration, Instant};

use base64::Engine;
use control_plane::{ControlPlane, ControlPlaneOptions, NodeOptions};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use test_support::ec2::{Account, Ec2, Instance};
use test_support::*;

/// Image pulls, the managers' start and leader elections on a shared 2-core machine.
const T: Duration = Duration::from_secs(420);
const AWS_DEPLOYMENT: &str = "capa-controller-manager";
const CREDENTIALS_SECRET: &str = "capa-manager-bootstrap-credentials";
const ZONES: [&str; 3] = ["a", "b", "c"];
const INSTANCE_TYPE: &str = "m6i.xlarge";
/// What the test writes as (the objects a cluster administrator or an operator would create).
const MANAGER: &str = "machine-e2e";
/// A worker pointer Ignition as the machine-config operator writes it into
/// `openshift-machine-api/worker-user-data` (its CA shortened).
const WORKER_IGNITION: &str = r#"{"ignition":{"config":{"merge":[{"source":"https://api-int.demo.example.com:22623/config/worker"}]},"security":{"tls":{"certificateAuthorities":[{"source":"data:text/plain;charset=utf-8;base64,LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSURFRENDQWZpZ0F3SUJBZ0lJRTJlMnRlc3QKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="}]}},"version":"3.2.0"}}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_machineset_makes_worker_machines_in_the_emulated_ec2() {
    require_fixture!("transport-configmaps");
    require_fixture!("machine-api-crds");
    let Some(images) = control_plane::images_dir() else {
        return;
    };
    init_logging();
    let cp = ControlPlane::start(ControlPlaneOptions {
        node: Some(NodeOptions { images }),
        ..Default::default()
    })
    .await
    .expect("control plane with a real node starts");
    let admin = cp.admin_client().await.expect("admin client");

    // What OpenShift's installer leaves: Infrastructure/cluster on AWS, and in the cloud account the
    // network, security groups, instance profile and image its machines use, found from that object.
    openshift_on_aws(&admin).await;
    let infrastructure = infrastructures(&admin).get("cluster").await.unwrap();
    let infra_id = infrastructure.data["status"]["infrastructureName"]
        .as_str()
        .expect("an infrastructure name")
        .to_string();
    let region = infrastructure.data["status"]["platformStatus"]["aws"]["region"]
        .as_str()
        .expect("an AWS region")
        .to_string();
    let zone = format!("{region}{}", ZONES[0]);
    let ec2 = tokio::task::block_in_place(|| Ec2::start(&cp, &region));
    let account = tokio::task::block_in_place(|| ec2.seed(&infra_id, &ZONES));
    eprintln!(
        "emulated EC2 at {} (inside the node): {account:?}",
        ec2.endpoint()
    );

    // The Machine API with a control-plane Machine and the worker user data (machine-config
    // operator).
    install_machine_api_crds(&admin).await;
    create_control_plane_machine(
        &admin,
        &format!("{infra_id}-master-0"),
        json!({"loadBalancers": [{"name": format!("{infra_id}-int"), "type": "network"}]}),
    )
    .await;
    let secret = |ns: &str, name: &str, data: Value| {
        json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": name, "namespace": ns}, "stringData": data})
    };
    for object in [secret(
        MAPI_NS,
        "worker-user-data",
        json!({"userData": WORKER_IGNITION, "disableTemplating": "false"}),
    )] {
        apply(
            &admin,
            &ar("", "v1", "Secret", "secrets"),
            &object,
            "openshift-operator",
        )
        .await;
    }

    // The release payload as the cluster-version operator applies it (see real_node.rs), its
    // CredentialsRequests included: the Cloud Credential Operator's stand-in mints the Secret aws's
    // request names, as the operator would in passthrough mode (keys as it writes them, the profile
    // naming the emulated endpoint).
    apply_release_manifests_edited(&admin, "0000_30_capi-installer", without_image_volumes).await;
    let minted = mint_credentials(
        &admin,
        "openshift-cluster-api-aws",
        json!({"aws_access_key_id": "machines", "aws_secret_access_key": "machines",
            "credentials": ec2.credentials_file("machines", "machines")})
        .as_object()
        .unwrap(),
    )
    .await;
    assert_eq!(minted, (NS.to_string(), CREDENTIALS_SECRET.to_string()));
    let core_crds = fixture(&format!("transport-configmaps/{CORE_CRDS}")).unwrap();
    apply_as_release_payload(&admin, &read_documents(&core_crds)).await;
    for file in [CORE_CM, AWS_CM] {
        let path = fixture(&format!("transport-configmaps/{file}")).unwrap();
        apply_as_release_payload(&admin, &read_documents(&path)).await;
    }
    apply_release_manifests(&admin, "0000_31_capi-controllers").await;
    wait_available(&admin, T).await;
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
    // The provider finds the endpoint where the release points its SDK: the shared credentials file
    // of the mounted Secret; nothing of the installed Deployment names it.
    let aws = Api::<Deployment>::namespaced(admin.clone(), NS)
        .get(AWS_DEPLOYMENT)
        .await
        .unwrap();
    let pod = aws.spec.unwrap().template.spec.unwrap();
    let env: Vec<(String, Option<String>)> = pod.containers[0]
        .env
        .iter()
        .flatten()
        .map(|e| (e.name.clone(), e.value.clone()))
        .collect();
    assert!(
        env.contains(&(
            "AWS_SHARED_CREDENTIALS_FILE".into(),
            Some("/home/.aws/credentials".into())
        )) && !env.iter().any(|(name, _)| name.contains("ENDPOINT")),
        "the installed AWS manager is not the release's: {env:?}"
    );
    assert!(
        pod.volumes.iter().flatten().any(|v| v
            .secret
            .as_ref()
            .is_some_and(|s| s.secret_name.as_deref() == Some(CREDENTIALS_SECRET))),
        "the AWS manager does not mount {CREDENTIALS_SECRET}"
    );
    let installer_before = co_status(&admin).await.expect("a ClusterOperator status");
    let since = k8s_openapi::jiff::Timestamp::now();

    // A worker MachineSet as OpenShift makes one, at zero replicas, then scaled to two.
    let name = format!("{infra_id}-worker-{zone}");
    let machine_sets = namespaced(&admin, NS, &machine_set_resource());
    // Right after Available, the AWS webhook's endpoint may not be reachable yet.
    apply_through_webhooks(
        &admin,
        &aws_machine_template_resource(),
        &aws_machine_template(&name, &infra_id, &zone, &account.ami),
        MANAGER,
        T,
    )
    .await;
    apply(
        &admin,
        &machine_set_resource(),
        &machine_set(&name, &infra_id, &zone, 0),
        MANAGER,
    )
    .await;
    let scaled = Instant::now();
    scale(&machine_sets, &name, 2).await;
    let running = eventually_or_logs(
        &cp,
        &ec2,
        "two Running Machines of the MachineSet",
        || async {
            let machines = machines_of(&admin, &name).await;
            // Each instance registers a Node carrying its providerID once it boots; here the test does.
            for machine in &machines {
                register_node(&admin, machine, &region).await;
            }
            let running: Vec<DynamicObject> = machines
                .into_iter()
                .filter(|m| m.data["status"]["phase"] == "Running")
                .collect();
            (running.len() == 2).then_some(running)
        },
    )
    .await;
    let took = scaled.elapsed();
    eprintln!("MachineSet scaled 0 → 2: both Machines Running after {took:?}");
    for machine in &running {
        eprintln!(
            "Machine {}: {} {}",
            machine.name_any(),
            machine.data["spec"]["providerID"],
            machine.data["status"]["addresses"]
        );
    }

    // Each Machine's AWSMachine names its instance; the instance carries the worker Ignition byte for
    // byte, the cluster's tags, the template's image, type, subnet, security groups and profile.
    let instances = tokio::task::block_in_place(|| ec2.instances());
    let mut ids = Vec::new();
    for machine in &running {
        let aws_machine = aws_machine_of(&admin, machine).await;
        let provider_id = aws_machine.data["spec"]["providerID"]
            .as_str()
            .expect("the AWSMachine has a providerID")
            .to_string();
        assert_eq!(
            machine.data["spec"]["providerID"], provider_id,
            "the Machine's providerID is not its AWSMachine's"
        );
        let instance_id = provider_id
            .strip_prefix(&format!("aws:///{zone}/"))
            .unwrap_or_else(|| panic!("a providerID of another zone or form: {provider_id}"));
        let instance = instances
            .iter()
            .find(|i| i.id == instance_id)
            .unwrap_or_else(|| panic!("no instance {instance_id} in the emulated EC2"));
        check_instance(instance, &account, &infra_id, &machine.name_any());
        let node_ref = machine.data["status"]["nodeRef"]["name"].as_str();
        assert_eq!(
            node_ref,
            Some(node_name(machine, &region).as_str()),
            "the Machine's nodeRef is not the Node with its providerID"
        );
        ids.push(instance_id.to_string());
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 2, "two Machines, one instance: {ids:?}");
    let running_instances: Vec<&Instance> =
        instances.iter().filter(|i| i.state == "running").collect();
    assert_eq!(
        running_instances.len(),
        2,
        "instances beyond the two Machines': {running_instances:#?}"
    );

    // Scaled to zero: both Machines and AWSMachines gone, both instances terminated.
    scale(&machine_sets, &name, 0).await;
    eventually_or_logs(&cp, &ec2, "the MachineSet's Machines gone", || async {
        machines_of(&admin, &name).await.is_empty().then_some(())
    })
    .await;
    let aws_machines = namespaced(&admin, NS, &aws_machine_resource())
        .list(&ListParams::default())
        .await
        .unwrap()
        .items;
    assert!(
        aws_machines.is_empty(),
        "AWSMachines left: {:?}",
        aws_machines
            .iter()
            .map(|m| m.name_any())
            .collect::<Vec<_>>()
    );
    let after = tokio::task::block_in_place(|| ec2.instances());
    let left: Vec<&Instance> = after.iter().filter(|i| i.state != "terminated").collect();
    assert!(left.is_empty(), "instances left behind: {left:#?}");
    for id in &ids {
        assert!(
            after.iter().any(|i| &i.id == id && i.state == "terminated"),
            "instance {id} not terminated: {after:#?}"
        );
    }
    // Cluster API deletes a Machine's Node only in a cluster that has Cluster API control-plane
    // Machines (OpenShift's are the Machine API's); on OpenShift the cloud controller manager's node
    // lifecycle controller removes the Node of a terminated instance. There is none here: the test
    // does it.
    for node in worker_nodes(&admin).await {
        Api::<Node>::all(admin.clone())
            .delete(&node.name_any(), &DeleteParams::default())
            .await
            .unwrap();
    }

    // A machine that cannot be made (an image the account does not have) is reported on the
    // AWSMachine and the Machine with the provider's reason; no instance is made.
    let broken = format!("{infra_id}-broken-{zone}");
    let unknown_ami = "ami-0000000000000000d";
    apply(
        &admin,
        &aws_machine_template_resource(),
        &aws_machine_template(&broken, &infra_id, &zone, unknown_ami),
        MANAGER,
    )
    .await;
    apply(
        &admin,
        &machine_set_resource(),
        &machine_set(&broken, &infra_id, &zone, 1),
        MANAGER,
    )
    .await;
    let (machine, reported) = eventually_or_logs(
        &cp,
        &ec2,
        "the failed machine reported on its AWSMachine",
        || async {
            let machine = machines_of(&admin, &broken).await.into_iter().next()?;
            let aws_machine = aws_machine_of_opt(&admin, &machine).await?;
            let failed = all_conditions(&aws_machine).into_iter().find(|c| {
                c["type"] == "InstanceReady"
                    && c["status"] == "False"
                    && c["reason"] == "InstanceProvisionFailed"
            })?;
            Some((machine, failed))
        },
    )
    .await;
    eprintln!("AWSMachine condition: {reported}");
    assert!(
        reported["message"]
            .as_str()
            .is_some_and(|m| m.contains(unknown_ami)),
        "the reason does not name the image: {reported}"
    );
    let (machine, machine_condition) = eventually_or_logs(
        &cp,
        &ec2,
        "the failed machine reported on its Machine",
        || async {
            let machine = namespaced(&admin, NS, &machine_resource())
                .get_opt(&machine.name_any())
                .await
                .ok()
                .flatten()?;
            let failed = all_conditions(&machine).into_iter().find(|c| {
                c["status"] == "False"
                    && (c["reason"] == "InstanceProvisionFailed"
                        || c["message"]
                            .as_str()
                            .is_some_and(|m| m.contains(unknown_ami)))
            })?;
            Some((machine, failed))
        },
    )
    .await;
    eprintln!("Machine condition: {machine_condition}");
    assert_ne!(
        machine.data["status"]["phase"], "Running",
        "a machine without an instance is Running"
    );
    let still = tokio::task::block_in_place(|| ec2.instances());
    assert_eq!(
        still.iter().filter(|i| i.state != "terminated").count(),
        0,
        "an instance was made for the broken template: {still:#?}"
    );

    // The installer's status is the cluster's providers', not its machines': unchanged (the same
    // conditions, transition times included), and the installer wrote nothing meanwhile.
    let installer_after = co_status(&admin).await.unwrap();
    for type_ in ["Available", "Progressing", "Degraded", "Upgradeable"] {
        assert_eq!(
            condition(&installer_after, type_),
            condition(&installer_before, type_),
            "{type_} moved while machines were made"
        );
    }
    let writes: Vec<String> = cp
        .audit_events()
        .unwrap()
        .iter()
        .filter(|e| e.is_write() && e.stage_timestamp.0 > since)
        .filter(|e| {
            e.user.username == format!("system:serviceaccount:{INSTALLER_NS}:capi-installer")
        })
        .filter(|e| e.object_ref.as_ref().is_none_or(|o| o.resource != "leases"))
        .map(|e| format!("{} {}", e.verb, e.request_uri))
        .collect();
    assert!(
        writes.is_empty(),
        "the installer wrote while machines were made: {writes:#?}"
    );

    machine_sets
        .delete(&broken, &DeleteParams::default())
        .await
        .unwrap();
    eventually_or_logs(
        &cp,
        &ec2,
        "the broken MachineSet's Machine gone",
        || async { machines_of(&admin, &broken).await.is_empty().then_some(()) },
    )
    .await;
    drop(ec2);
    drop(cp);
}

/// [`eventually`] within [`T`], failing with the managers' and the emulated EC2's logs: what says why
/// a machine was not made.
async fn eventually_or_logs<R, F, Fut>(cp: &ControlPlane, ec2: &Ec2, what: &str, check: F) -> R
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<R>>,
{
    let waited = tokio::time::timeout(T, eventually(T + T, what, check)).await;
    waited.unwrap_or_else(|_| {
        let mut shown = String::new();
        for deployment in [AWS_DEPLOYMENT, "capi-controller-manager"] {
            let logs = cp.deployment_logs(NS, deployment).unwrap_or_default();
            shown.push_str(&format!("\n--- {deployment}:\n{}", last_lines(&logs, 60)));
        }
        panic!(
            "timed out after {T:?} waiting for {what}{shown}\n--- moto:\n{}",
            last_lines(&ec2.log(), 40)
        )
    })
}

/// The AWSMachineTemplate of a worker in `zone`, as OpenShift converts its Machine API provider spec
/// (cluster-capi-operator): Ignition 3.x in unencrypted user data, the image by id, the worker
/// instance profile, the zone's private subnet and the node and load balancer security groups by
/// their `Name` tags, an encrypted gp3 root volume, IMDSv2.
fn aws_machine_template(name: &str, infra_id: &str, zone: &str, ami: &str) -> Value {
    let by_name = |name: String| json!({"filters": [{"name": "tag:Name", "values": [name]}]});
    json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AWSMachineTemplate",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"template": {"spec": {
            "ami": {"id": ami},
            "instanceType": INSTANCE_TYPE,
            "iamInstanceProfile": format!("{infra_id}-worker-profile"),
            "ignition": {"version": "3.4", "storageType": "UnencryptedUserData"},
            "uncompressedUserData": true,
            "subnet": by_name(format!("{infra_id}-subnet-private-{zone}")),
            "additionalSecurityGroups": [
                by_name(format!("{infra_id}-node")),
                by_name(format!("{infra_id}-lb")),
            ],
            "rootVolume": {"size": 120, "type": "gp3", "encrypted": true},
            "instanceMetadataOptions": {"httpTokens": "required", "httpEndpoint": "enabled",
                "httpPutResponseHopLimit": 1, "instanceMetadataTags": "disabled"},
        }}},
    })
}

/// A worker MachineSet of cluster `infra_id` in `zone`: bootstrap data from the controllers pod's
/// copy of the worker user data, the template of the same name.
fn machine_set(name: &str, infra_id: &str, zone: &str, replicas: i64) -> Value {
    let labels = json!({
        "cluster.x-k8s.io/cluster-name": infra_id,
        "cluster.x-k8s.io/set-name": name,
        "machine.openshift.io/cluster-api-machineset": name,
    });
    json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineSet",
        "metadata": {"name": name, "namespace": NS,
            "labels": {"cluster.x-k8s.io/cluster-name": infra_id}},
        "spec": {
            "clusterName": infra_id,
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "clusterName": infra_id,
                    "bootstrap": {"dataSecretName": "worker-user-data"},
                    "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io",
                        "kind": "AWSMachineTemplate", "name": name},
                    "failureDomain": zone,
                },
            },
        },
    })
}

/// What the instance of Machine `machine` must be.
fn check_instance(instance: &Instance, account: &Account, infra_id: &str, machine: &str) {
    let user_data = base64::engine::general_purpose::STANDARD
        .decode(&instance.user_data)
        .unwrap_or_else(|e| panic!("instance {}'s user data: {e}", instance.id));
    assert_eq!(
        String::from_utf8_lossy(&user_data),
        WORKER_IGNITION,
        "instance {} does not carry the worker Ignition byte for byte",
        instance.id
    );
    assert_eq!(instance.image, account.ami);
    assert_eq!(instance.instance_type, INSTANCE_TYPE);
    assert_eq!(
        instance.subnet.as_deref(),
        Some(account.subnet(&format!("{infra_id}-subnet-private-{}", instance.zone)))
    );
    for group in [format!("{infra_id}-node"), format!("{infra_id}-lb")] {
        assert!(
            instance
                .security_groups
                .iter()
                .any(|g| g == account.security_group(&group)),
            "instance {} is not in {group}: {:?}",
            instance.id,
            instance.security_groups
        );
    }
    assert!(
        instance
            .instance_profile
            .as_deref()
            .is_some_and(|arn| arn.ends_with(&format!("/{}", account.instance_profile))),
        "instance {}'s profile: {:?}",
        instance.id,
        instance.instance_profile
    );
    for (key, value) in [
        (format!("kubernetes.io/cluster/{infra_id}"), "owned"),
        (
            format!("sigs.k8s.io/cluster-api-provider-aws/cluster/{infra_id}"),
            "owned",
        ),
        ("sigs.k8s.io/cluster-api-provider-aws/role".into(), "node"),
        ("Name".into(), machine),
    ] {
        assert_eq!(
            instance.tag(&key),
            Some(value),
            "instance {}'s tag {key}: {:?}",
            instance.id,
            instance.tags
        );
    }
}

async fn scale(machine_sets: &Api<DynamicObject>, name: &str, replicas: i64) {
    machine_sets
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": replicas}})),
        )
        .await
        .unwrap_or_else(|e| panic!("scale MachineSet {name} to {replicas}: {e}"));
}

/// The Machines of MachineSet `name` (by its label), not being deleted ones included.
async fn machines_of(client: &Client, name: &str) -> Vec<DynamicObject> {
    namespaced(client, NS, &machine_resource())
        .list(&ListParams::default().labels(&format!("cluster.x-k8s.io/set-name={name}")))
        .await
        .unwrap()
        .items
}

async fn aws_machine_of_opt(client: &Client, machine: &DynamicObject) -> Option<DynamicObject> {
    let name = machine.data["spec"]["infrastructureRef"]["name"].as_str()?;
    namespaced(client, NS, &aws_machine_resource())
        .get_opt(name)
        .await
        .ok()
        .flatten()
}

async fn aws_machine_of(client: &Client, machine: &DynamicObject) -> DynamicObject {
    aws_machine_of_opt(client, machine)
        .await
        .unwrap_or_else(|| panic!("Machine {} has no AWSMachine", machine.name_any()))
}

/// The Node a Machine's instance registers: named as a kubelet on AWS names itself, by the
/// instance's private DNS name (the Machine's `InternalDNS` address; from its `InternalIP` and the
/// VPC's DHCP domain when the provider reports no name).
fn node_name(machine: &DynamicObject, region: &str) -> String {
    let address = |type_: &str| {
        machine.data["status"]["addresses"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|a| a["type"] == type_)
            .and_then(|a| a["address"].as_str())
            .map(str::to_string)
    };
    address("InternalDNS")
        .or_else(|| {
            address("InternalIP")
                .map(|ip| format!("ip-{}.{region}.compute.internal", ip.replace('.', "-")))
        })
        .unwrap_or_else(|| machine.name_any())
}

/// Creates the Node of `machine`'s instance once its AWSMachine has a providerID (what the kubelet
/// of a real instance would register; nothing runs on it).
async fn register_node(client: &Client, machine: &DynamicObject, region: &str) {
    let Some(aws_machine) = aws_machine_of_opt(client, machine).await else {
        return;
    };
    let Some(provider_id) = aws_machine.data["spec"]["providerID"].as_str() else {
        return;
    };
    if machine.data["status"]["addresses"].as_array().is_none() {
        // The Machine copies the AWSMachine's addresses; the Node is named after them.
        return;
    }
    let node: Node = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": node_name(machine, region),
            "labels": {"node-role.kubernetes.io/worker": "", "machine-e2e": "worker"}},
        "spec": {"providerID": provider_id},
    }))
    .unwrap();
    match Api::<Node>::all(client.clone())
        .create(&PostParams::default(), &node)
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => panic!("create Node {}: {e}", node.name_any()),
    }
}

async fn worker_nodes(client: &Client) -> Vec<Node> {
    Api::<Node>::all(client.clone())
        .list(&ListParams::default().labels("machine-e2e=worker"))
        .await
        .unwrap()
        .items
}

/// Every condition an object carries: `status.conditions` and the v1beta1 ones Cluster API and its
/// providers keep beside (`status.v1beta2.conditions`, `status.deprecated.v1beta1.conditions`).
fn all_conditions(object: &DynamicObject) -> Vec<Value> {
    let status = &object.data["status"];
    [
        &status["conditions"],
        &status["v1beta2"]["conditions"],
        &status["deprecated"]["v1beta1"]["conditions"],
    ]
    .into_iter()
    .filter_map(Value::as_array)
    .flatten()
    .cloned()
    .collect()
}

fn machine_resource() -> kube::core::ApiResource {
    ar("cluster.x-k8s.io", "v1beta2", "Machine", "machines")
}

fn machine_set_resource() -> kube::core::ApiResource {
    ar("cluster.x-k8s.io", "v1beta2", "MachineSet", "machinesets")
}

fn aws_machine_resource() -> kube::core::ApiResource {
    ar(
        "infrastructure.cluster.x-k8s.io",
        "v1beta2",
        "AWSMachine",
        "awsmachines",
    )
}

fn aws_machine_template_resource() -> kube::core::ApiResource {
    ar(
        "infrastructure.cluster.x-k8s.io",
        "v1beta2",
        "AWSMachineTemplate",
        "awsmachinetemplates",
    )
}
