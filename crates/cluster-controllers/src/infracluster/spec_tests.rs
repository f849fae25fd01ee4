use super::*;
use serde_json::json;

fn yaml(text: &str) -> Value {
    serde_saphyr::from_str(text).expect("test YAML parses")
}

fn infrastructure(platform_status: &str) -> Value {
    let mut infra = yaml(
        "status:
  infrastructureName: demo-x7k2p
  apiServerInternalURI: https://api-int.demo.example.com:6443
",
    );
    infra["status"]["platformStatus"] = yaml(platform_status);
    infra
}

fn info(infra: &Value) -> ClusterInfo {
    ClusterInfo::from_infrastructure(infra, "openshift-cluster-api").unwrap()
}

fn machine(name: &str, created: &str, provider_spec: &str) -> Value {
    let mut m = json!({"metadata": {"name": name, "creationTimestamp": created}});
    m["spec"] = json!({"providerSpec": {"value": yaml(provider_spec)}});
    m
}

/// Derives with the provider spec of one machine named `master-0`.
fn derive_with(
    platform: Platform,
    infra: &Value,
    provider_spec: &str,
) -> Result<Desired, InputError> {
    let machines = [machine("master-0", "2026-01-01T00:00:00Z", provider_spec)];
    let refs: Vec<&Value> = machines.iter().collect();
    let info = info(infra);
    let sources = Sources {
        infrastructure: infra,
        info: &info,
        api_version: "infrastructure.cluster.x-k8s.io/v1beta1",
        provider_spec: choose_provider_spec(None, &refs),
        vsphere_credentials: None,
        azure_credentials: None,
        azure_identity_api_version: None,
    };
    derive(platform, &sources)
}

#[test]
fn openstack_uses_the_first_api_vip_and_is_not_externally_managed() {
    let infra = infrastructure(
        "type: OpenStack
openstack:
  apiServerInternalIPs: [10.0.0.5, fd00::5]
  loadBalancer: {type: OpenShiftManagedDefault}
",
    );
    let desired = derive_with(Platform::OpenStack, &infra, "{}").unwrap();
    assert!(!desired.externally_managed);
    assert!(desired.companions.is_empty());
    let ic = &desired.infra_cluster;
    assert_eq!(ic["kind"], "OpenStackCluster");
    // The provider fills the status itself, so the object must not look externally managed.
    assert!(ic["metadata"].get("annotations").is_none(), "{ic}");
    assert_eq!(
        ic["metadata"]["labels"][MANAGED_BY_LABEL],
        OWNERSHIP_LABEL_VALUE
    );
    assert_eq!(
        ic["spec"],
        json!({
            "controlPlaneEndpoint": {"host": "10.0.0.5", "port": 6443},
            "disableAPIServerFloatingIP": true,
            "identityRef": {"name": "openstack-cloud-credentials", "cloudName": "openstack"},
            "tags": ["openshiftClusterID=demo-x7k2p"],
        })
    );
}

#[test]
fn openstack_refuses_a_user_managed_load_balancer_and_needs_a_vip() {
    let user_managed = infrastructure(
        "type: OpenStack
openstack:
  apiServerInternalIPs: [10.0.0.5]
  loadBalancer: {type: UserManaged}
",
    );
    let err = derive_with(Platform::OpenStack, &user_managed, "{}").unwrap_err();
    assert_eq!(
        err.to_string(),
        "Infrastructure cluster: status.platformStatus.openstack.loadBalancer.type: load balancer type UserManaged is not supported"
    );
    let no_vip = infrastructure("type: OpenStack\nopenstack: {}\n");
    let err = derive_with(Platform::OpenStack, &no_vip, "{}").unwrap_err();
    assert_eq!(
        err,
        InputError::Missing {
            object: "Infrastructure cluster".into(),
            field: "status.platformStatus.openstack.apiServerInternalIPs.0".into()
        }
    );
}

#[test]
fn powervs_maps_each_resource_type() {
    let infra = infrastructure("type: PowerVS\npowervs: {region: dal}\n");
    let cases = [
        (
            "serviceInstance: {type: ID, id: 6f3c}\nnetwork: {type: Name, name: demo-net}",
            json!({"id": "6f3c"}),
            json!({"name": "demo-net"}),
        ),
        (
            "serviceInstance: {type: Name, name: demo-si}\nnetwork: {type: RegEx, regex: '^DHCP'}",
            json!({"name": "demo-si"}),
            json!({"regex": "^DHCP"}),
        ),
    ];
    for (spec, service_instance, network) in cases {
        let desired = derive_with(Platform::PowerVs, &infra, spec).unwrap();
        let ic = &desired.infra_cluster;
        assert_eq!(ic["kind"], "IBMPowerVSCluster");
        assert_eq!(
            ic["metadata"]["annotations"][MANAGED_BY_ANNOTATION],
            MANAGED_BY_VALUE
        );
        assert_eq!(
            ic["spec"],
            json!({
                "controlPlaneEndpoint": {"host": "api-int.demo.example.com", "port": 6443},
                "serviceInstance": service_instance,
                "network": network,
            }),
            "{spec}"
        );
    }
}

#[test]
fn powervs_names_a_bad_or_missing_resource() {
    let infra = infrastructure("type: PowerVS\n");
    let unknown = derive_with(
        Platform::PowerVs,
        &infra,
        "serviceInstance: {type: CRN, id: x}\nnetwork: {type: ID, id: n}",
    )
    .unwrap_err();
    assert_eq!(
        unknown.to_string(),
        "Machine openshift-machine-api/master-0: providerSpec.value.serviceInstance.type: unknown type \"CRN\" (expected ID, Name or RegEx)"
    );
    let missing = derive_with(
        Platform::PowerVs,
        &infra,
        "serviceInstance: {type: ID, id: x}\nnetwork: {type: Name}",
    )
    .unwrap_err();
    assert_eq!(
        missing.to_string(),
        "Machine openshift-machine-api/master-0: providerSpec.value.network.name is not set"
    );
}

#[test]
fn baremetal_needs_only_the_endpoint() {
    let infra = infrastructure("type: BareMetal\n");
    // No machine at all: bare metal does not read a provider spec.
    let info = info(&infra);
    let sources = Sources {
        infrastructure: &infra,
        info: &info,
        api_version: "infrastructure.cluster.x-k8s.io/v1beta1",
        provider_spec: choose_provider_spec(None, &[]),
        vsphere_credentials: None,
        azure_credentials: None,
        azure_identity_api_version: None,
    };
    let desired = derive(Platform::BareMetal, &sources).unwrap();
    assert!(desired.externally_managed);
    assert_eq!(
        desired.infra_cluster,
        json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "Metal3Cluster",
            "metadata": {
                "name": "demo-x7k2p",
                "namespace": "openshift-cluster-api",
                "labels": {MANAGED_BY_LABEL: OWNERSHIP_LABEL_VALUE},
                "annotations": {MANAGED_BY_ANNOTATION: MANAGED_BY_VALUE},
            },
            "spec": {
                "controlPlaneEndpoint": {"host": "api-int.demo.example.com", "port": 6443},
                "noCloudProvider": true,
            },
        })
    );
}

#[test]
fn aws_load_balancers_put_the_internal_one_first() {
    let infra = infrastructure("type: AWS\naws: {region: eu-west-1}\n");
    let cases = [
        (
            "loadBalancers: [{name: demo-int, type: network}]",
            json!({"name": "demo-int", "loadBalancerType": "nlb", "scheme": "internal"}),
            None,
        ),
        (
            "loadBalancers: [{name: demo-ext, type: network}, {name: demo-int, type: network}]",
            json!({"name": "demo-int", "loadBalancerType": "nlb", "scheme": "internal"}),
            Some(
                json!({"name": "demo-ext", "loadBalancerType": "nlb", "scheme": "internet-facing"}),
            ),
        ),
        (
            "loadBalancers: [{name: a, type: classic}, {name: b, type: network}]",
            json!({"name": "a", "loadBalancerType": "classic", "scheme": "internal"}),
            Some(json!({"name": "b", "loadBalancerType": "nlb", "scheme": "internet-facing"})),
        ),
    ];
    for (spec, primary, secondary) in cases {
        let desired = derive_with(Platform::Aws, &infra, spec).unwrap();
        let s = &desired.infra_cluster["spec"];
        assert_eq!(s["region"], "eu-west-1");
        assert_eq!(s["controlPlaneLoadBalancer"], primary, "{spec}");
        assert_eq!(
            s.get("secondaryControlPlaneLoadBalancer").cloned(),
            secondary,
            "{spec}"
        );
        assert_eq!(
            s["identityRef"],
            json!({"kind": "AWSClusterControllerIdentity", "name": "default"})
        );
    }
    for (spec, message) in [
        (
            "loadBalancers: []",
            "expected 1 or 2 control-plane load balancers, found 0",
        ),
        (
            "loadBalancers: [{name: a, type: alb}]",
            "unknown load balancer type \"alb\" (expected classic or network)",
        ),
    ] {
        let err = derive_with(Platform::Aws, &infra, spec)
            .unwrap_err()
            .to_string();
        assert!(err.ends_with(message), "{spec}: {err}");
    }
}

#[test]
fn gcp_takes_the_project_from_the_platform_status_or_the_provider_spec() {
    let spec = "projectID: from-machine\nnetworkInterfaces: [{network: demo-network}]";
    let with = infrastructure("type: GCP\ngcp: {region: us-east1, projectID: from-status}\n");
    let without = infrastructure("type: GCP\ngcp: {region: us-east1}\n");
    for (infra, project) in [(&with, "from-status"), (&without, "from-machine")] {
        let s = derive_with(Platform::Gcp, infra, spec)
            .unwrap()
            .infra_cluster["spec"]
            .clone();
        assert_eq!(s["project"], project);
        assert_eq!(s["network"], json!({"name": "demo-network"}));
        assert_eq!(s["region"], "us-east1");
    }
}

#[test]
fn the_newest_machine_or_an_active_control_plane_machine_set_is_the_source() {
    let old = machine("master-0", "2026-01-01T00:00:00Z", "location: old");
    let new = machine("master-1", "2026-02-01T00:00:00Z", "location: new");
    let machines = [&old, &new];
    let chosen = choose_provider_spec(None, &machines).unwrap();
    assert_eq!(chosen.source, "Machine openshift-machine-api/master-1");
    assert_eq!(chosen.value["location"], "new");

    let mut cpms = json!({"spec": {"state": "Active", "template": {"machines_v1beta1_machine_openshift_io":
        {"spec": {"providerSpec": {"value": {"location": "cpms"}}}}}}});
    let chosen = choose_provider_spec(Some(&cpms), &machines).unwrap();
    assert_eq!(chosen.value["location"], "cpms");
    cpms["spec"]["state"] = json!("Inactive");
    let chosen = choose_provider_spec(Some(&cpms), &machines).unwrap();
    assert_eq!(chosen.value["location"], "new");

    let err = choose_provider_spec(None, &[]).unwrap_err();
    assert!(matches!(err, InputError::NoSource(_)), "{err}");
}

#[test]
fn azure_builds_the_identity_and_its_secret_from_the_credentials() {
    let infra = infrastructure("type: Azure\nazure: {cloudName: AzureUSGovernmentCloud}\n");
    let spec = "location: usgovvirginia\nvnet: demo-vnet\nnetworkResourceGroup: demo-rg-net\nresourceGroup: demo-rg";
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let credentials = json!({"data": {
        "azure_client_id": b64("client-1"), "azure_tenant_id": b64("tenant-1"),
        "azure_client_secret": b64("s3cret")}});
    let machines = [machine("master-0", "2026-01-01T00:00:00Z", spec)];
    let refs: Vec<&Value> = machines.iter().collect();
    let info = info(&infra);
    let mut sources = Sources {
        infrastructure: &infra,
        info: &info,
        api_version: "infrastructure.cluster.x-k8s.io/v1beta1",
        provider_spec: choose_provider_spec(None, &refs),
        vsphere_credentials: None,
        azure_credentials: Some(&credentials),
        azure_identity_api_version: Some("infrastructure.cluster.x-k8s.io/v1beta1"),
    };
    let desired = derive(Platform::Azure, &sources).unwrap();
    let s = &desired.infra_cluster["spec"];
    assert_eq!(s["azureEnvironment"], "AzureUSGovernmentCloud");
    assert_eq!(
        s["networkSpec"]["vnet"],
        json!({"name": "demo-vnet", "resourceGroup": "demo-rg-net"})
    );
    assert_eq!(s["resourceGroup"], "demo-rg");
    let [secret, identity] = desired.companions.as_slice() else {
        panic!("two companions: {:?}", desired.companions)
    };
    assert_eq!(secret["data"]["clientSecret"], b64("s3cret"));
    assert_eq!(identity["spec"]["clientID"], "client-1");
    assert_eq!(identity["spec"]["tenantID"], "tenant-1");

    sources.azure_credentials = None;
    let err = derive(Platform::Azure, &sources).unwrap_err();
    assert!(matches!(err, InputError::NoSource(_)), "{err}");
}

#[test]
fn vsphere_copies_the_credentials_of_its_server() {
    let mut infra = infrastructure("type: VSphere\n");
    infra["spec"] = yaml("platformSpec: {vsphere: {vcenters: [{server: vc.example.com}]}}");
    let credentials = json!({"data": {"vc.example.com.username": "dXNlcg==", "vc.example.com.password": "cGFzcw=="}});
    let info = info(&infra);
    let sources = Sources {
        infrastructure: &infra,
        info: &info,
        api_version: "infrastructure.cluster.x-k8s.io/v1beta1",
        provider_spec: choose_provider_spec(None, &[]),
        vsphere_credentials: Some(&credentials),
        azure_credentials: None,
        azure_identity_api_version: None,
    };
    let desired = derive(Platform::VSphere, &sources).unwrap();
    assert_eq!(desired.infra_cluster["spec"]["server"], "vc.example.com");
    assert_eq!(
        desired.companions[0]["data"],
        json!({"username": "dXNlcg==", "password": "cGFzcw=="})
    );
    let other = json!({"data": {"other.example.com.username": "eA=="}});
    let sources = Sources {
        vsphere_credentials: Some(&other),
        ..sources
    };
    let err = derive(Platform::VSphere, &sources).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Secret kube-system/vsphere-creds: data[\"vc.example.com.username\"] is not set"
    );
}
