//! The desired InfraCluster of each platform, derived from `Infrastructure/cluster` and, where the
//! reference reads them, from the control-plane machines' provider spec and credential Secrets. Pure:
//! every input is passed in, every problem is an [`InputError`] naming the object and field.
//!
//! What is derived (ref §4, "infracluster"; the reference creates these fields once, we keep them):
//!
//! | platform | InfraCluster spec | from | also |
//! |---|---|---|---|
//! | AWS | region, controlPlaneEndpoint, identityRef (the controller identity `default`), control-plane load balancers (one: internal; two: the `-int` one internal, the other internet-facing) | platformStatus.aws, apiServerInternalURI, provider spec `loadBalancers` | |
//! | GCP | region, project, network name, controlPlaneEndpoint | platformStatus.gcp (project falls back to the provider spec), provider spec `networkInterfaces[0].network` | |
//! | Azure | location, environment, resource group, vnet, node outbound LB, identityRef, controlPlaneEndpoint | provider spec, platformStatus.azure.cloudName | Secret `capz-manager-cluster-credential` and AzureClusterIdentity `<name>` from the CCO Secret `capz-manager-bootstrap-credentials` |
//! | PowerVS | serviceInstance, network, controlPlaneEndpoint | provider spec (ID, Name or RegEx) | |
//! | vSphere | server, identityRef (Secret `<name>`), controlPlaneEndpoint | platformSpec.vsphere.vcenters[0] or provider spec `workspace.server` | Secret `<name>` with the server's username and password from `kube-system/vsphere-creds` |
//! | OpenStack | controlPlaneEndpoint (first API VIP, port 6443), identityRef, tags, no floating IP | platformStatus.openstack | not externally managed: the OpenStack provider fills its status |
//! | BareMetal | controlPlaneEndpoint, noCloudProvider | apiServerInternalURI | |

use base64::Engine;
use serde_json::{Map, Value, json};

use crate::error::InputError;
use crate::names::*;
use crate::platform::{ClusterInfo, Platform};

/// The provider spec (`spec.providerSpec.value`) of the control plane, and where it came from.
#[derive(Clone, Debug)]
pub(crate) struct ProviderSpec<'a> {
    /// `Kind namespace/name` of the object it was read from, for error messages.
    pub(crate) source: String,
    pub(crate) value: &'a Value,
}

/// Everything the derivation reads.
pub(crate) struct Sources<'a> {
    /// The whole `Infrastructure/cluster` object.
    pub(crate) infrastructure: &'a Value,
    pub(crate) info: &'a ClusterInfo,
    /// `apiVersion` of the InfraCluster, from its CRD's storage version.
    pub(crate) api_version: &'a str,
    /// The control-plane provider spec, or why there is none.
    pub(crate) provider_spec: Result<ProviderSpec<'a>, InputError>,
    /// `kube-system/vsphere-creds` (vSphere).
    pub(crate) vsphere_credentials: Option<&'a Value>,
    /// `openshift-cluster-api/capz-manager-bootstrap-credentials` (Azure).
    pub(crate) azure_credentials: Option<&'a Value>,
    /// `apiVersion` of AzureClusterIdentity, from its CRD (Azure).
    pub(crate) azure_identity_api_version: Option<&'a str>,
}

/// The objects to keep in place for a platform.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Desired {
    pub(crate) infra_cluster: Value,
    /// Objects the InfraCluster refers to (credentials, identities), applied before it.
    pub(crate) companions: Vec<Value>,
    /// Whether the InfraCluster is externally managed (by us): then we keep its spec and set
    /// `status.ready`. OpenStack's is not: its provider must fill the status, so we only create it.
    pub(crate) externally_managed: bool,
}

pub(crate) const AZURE_BOOTSTRAP_SECRET: &str = "capz-manager-bootstrap-credentials";
pub(crate) const AZURE_CLUSTER_SECRET: &str = "capz-manager-cluster-credential";
pub(crate) const VSPHERE_CREDENTIALS_SECRET: &str = "vsphere-creds";

/// Picks the provider spec: an Active ControlPlaneMachineSet's template, else the newest control-plane
/// Machine's (by creation time, then name, as the reference does: when machines differ, the newest is
/// the best guess of what the user wants). `machines` are the control-plane Machines.
pub(crate) fn choose_provider_spec<'a>(
    cpms: Option<&'a Value>,
    machines: &[&'a Value],
) -> Result<ProviderSpec<'a>, InputError> {
    if let Some(cpms) =
        cpms.filter(|c| c.pointer("/spec/state").and_then(Value::as_str) == Some("Active"))
    {
        return spec_value(
            cpms,
            "/spec/template/machines_v1beta1_machine_openshift_io/spec/providerSpec/value",
            "spec.template.machines_v1beta1_machine_openshift_io.spec.providerSpec.value",
            format!("ControlPlaneMachineSet {MAPI_NAMESPACE}/cluster"),
        );
    }
    let newest = machines.iter().copied().max_by(|a, b| {
        let key = |m: &Value| {
            (
                m.pointer("/metadata/creationTimestamp")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                m.pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            )
        };
        // RFC 3339 timestamps of the same zone (the API server writes UTC) order as strings.
        key(a).cmp(&key(b))
    });
    let Some(machine) = newest else {
        return Err(InputError::NoSource(format!(
            "no active ControlPlaneMachineSet {MAPI_NAMESPACE}/cluster and no control-plane Machine in \
             {MAPI_NAMESPACE} (labels machine.openshift.io/cluster-api-machine-role=master, \
             machine.openshift.io/cluster-api-machine-type=master) to read the provider spec from"
        )));
    };
    let name = machine
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    spec_value(
        machine,
        "/spec/providerSpec/value",
        "spec.providerSpec.value",
        format!("Machine {MAPI_NAMESPACE}/{name}"),
    )
}

fn spec_value<'a>(
    obj: &'a Value,
    pointer: &str,
    field: &str,
    source: String,
) -> Result<ProviderSpec<'a>, InputError> {
    match obj.pointer(pointer) {
        Some(v @ Value::Object(_)) => Ok(ProviderSpec { source, value: v }),
        _ => Err(InputError::Missing {
            object: source,
            field: field.into(),
        }),
    }
}

/// Derives the desired objects of `platform`.
pub(crate) fn derive(platform: Platform, s: &Sources) -> Result<Desired, InputError> {
    let info = s.info;
    let endpoint =
        json!({"host": info.api_server_internal.host, "port": info.api_server_internal.port});
    let mut companions = Vec::new();
    let spec = match platform {
        Platform::Aws => aws(s, endpoint)?,
        Platform::Gcp => gcp(s, endpoint)?,
        Platform::Azure => {
            let (spec, secret, identity) = azure(s, endpoint)?;
            companions.push(secret);
            companions.push(identity);
            spec
        }
        Platform::PowerVs => powervs(s, endpoint)?,
        Platform::VSphere => {
            let (spec, secret) = vsphere(s, endpoint)?;
            companions.push(secret);
            spec
        }
        Platform::OpenStack => openstack(s)?,
        Platform::BareMetal => json!({"controlPlaneEndpoint": endpoint, "noCloudProvider": true}),
    };
    let externally_managed = platform != Platform::OpenStack;
    let mut metadata = json!({
        "name": info.infrastructure_name,
        "namespace": info.namespace,
        "labels": {MANAGED_BY_LABEL: OWNERSHIP_LABEL_VALUE},
    });
    if externally_managed {
        metadata["annotations"] = json!({MANAGED_BY_ANNOTATION: MANAGED_BY_VALUE});
    }
    Ok(Desired {
        infra_cluster: json!({
            "apiVersion": s.api_version,
            "kind": crate::platform::infra_cluster(platform).kind,
            "metadata": metadata,
            "spec": spec,
        }),
        companions,
        externally_managed,
    })
}

fn infra_str<'a>(s: &'a Sources, pointer: &str) -> Result<&'a str, InputError> {
    crate::platform::required_str(s.infrastructure, pointer)
}

fn spec_str<'a>(ps: &ProviderSpec<'a>, pointer: &str) -> Result<&'a str, InputError> {
    ps.value
        .pointer(pointer)
        .and_then(Value::as_str)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| InputError::Missing {
            object: ps.source.clone(),
            field: provider_field(pointer),
        })
}

fn provider_field(pointer: &str) -> String {
    let mut field = String::from("providerSpec.value");
    for part in pointer.split('/').skip(1) {
        if part.parse::<usize>().is_ok() {
            field.push_str(&format!("[{part}]"));
        } else {
            field.push('.');
            field.push_str(part);
        }
    }
    field
}

fn provider_spec<'a>(s: &Sources<'a>) -> Result<ProviderSpec<'a>, InputError> {
    s.provider_spec.clone()
}

fn aws(s: &Sources, endpoint: Value) -> Result<Value, InputError> {
    let region = infra_str(s, "/status/platformStatus/aws/region")?;
    let ps = provider_spec(s)?;
    let (primary, secondary) = aws_load_balancers(&ps)?;
    let mut spec = json!({
        "region": region,
        "controlPlaneEndpoint": endpoint,
        // The controller identity is the only identity OpenShift configures; the provider would use it
        // anyway, but logs about a missing identityRef on every reconcile.
        "identityRef": {"kind": "AWSClusterControllerIdentity", "name": "default"},
        "controlPlaneLoadBalancer": primary,
    });
    if let Some(secondary) = secondary {
        spec["secondaryControlPlaneLoadBalancer"] = secondary;
    }
    Ok(spec)
}

fn aws_load_balancers(ps: &ProviderSpec) -> Result<(Value, Option<Value>), InputError> {
    let lbs = match ps.value.get("loadBalancers") {
        Some(Value::Array(lbs)) => lbs.as_slice(),
        _ => &[],
    };
    let lb = |i: usize, scheme: &str| -> Result<Value, InputError> {
        let name = spec_str(ps, &format!("/loadBalancers/{i}/name"))?;
        let type_ = spec_str(ps, &format!("/loadBalancers/{i}/type"))?;
        let lb_type = match type_ {
            "classic" => "classic",
            "network" => "nlb",
            other => {
                return Err(InputError::Invalid {
                    object: ps.source.clone(),
                    field: format!("providerSpec.value.loadBalancers[{i}].type"),
                    message: format!(
                        "unknown load balancer type {other:?} (expected classic or network)"
                    ),
                });
            }
        };
        Ok(json!({"name": name, "loadBalancerType": lb_type, "scheme": scheme}))
    };
    match lbs.len() {
        1 => Ok((lb(0, "internal")?, None)),
        2 => {
            let name = |i: usize| lbs[i].get("name").and_then(Value::as_str).unwrap_or("");
            // The internal load balancer ("-int") is the primary one, whatever the order.
            let (first, second) = if name(1).ends_with("-int") && !name(0).ends_with("-int") {
                (1, 0)
            } else {
                (0, 1)
            };
            Ok((lb(first, "internal")?, Some(lb(second, "internet-facing")?)))
        }
        n => Err(InputError::Invalid {
            object: ps.source.clone(),
            field: "providerSpec.value.loadBalancers".into(),
            message: format!("expected 1 or 2 control-plane load balancers, found {n}"),
        }),
    }
}

fn gcp(s: &Sources, endpoint: Value) -> Result<Value, InputError> {
    let region = infra_str(s, "/status/platformStatus/gcp/region")?;
    let ps = provider_spec(s)?;
    let project = match infra_str(s, "/status/platformStatus/gcp/projectID") {
        Ok(p) => p,
        Err(_) => spec_str(&ps, "/projectID")?,
    };
    let network = spec_str(&ps, "/networkInterfaces/0/network")?;
    Ok(json!({
        "region": region,
        "project": project,
        "network": {"name": network},
        "controlPlaneEndpoint": endpoint,
    }))
}

fn azure(s: &Sources, endpoint: Value) -> Result<(Value, Value, Value), InputError> {
    let name = &s.info.infrastructure_name;
    let ps = provider_spec(s)?;
    let location = spec_str(&ps, "/location")?;
    // The reference always wrote AzurePublicCloud; government and China clouds report their own name.
    let environment = s
        .infrastructure
        .pointer("/status/platformStatus/azure/cloudName")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
        .unwrap_or("AzurePublicCloud");
    let ns = &s.info.namespace;
    let credentials_name = format!("Secret {ns}/{AZURE_BOOTSTRAP_SECRET}");
    let credentials = s.azure_credentials.ok_or_else(|| {
        InputError::NoSource(format!(
            "{credentials_name} (created by the cloud credential operator) does not exist"
        ))
    })?;
    let key = |k: &str| secret_key(credentials, &credentials_name, k);
    let secret = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": owned_metadata(AZURE_CLUSTER_SECRET, ns),
        "type": "Opaque",
        // Copied as is (base64): the provider expects the client secret under this key.
        "data": {"clientSecret": key("azure_client_secret")?},
    });
    let text = |k: &str| -> Result<String, InputError> {
        let raw = base64::engine::general_purpose::STANDARD
            .decode(key(k)?)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .filter(|t| !t.is_empty());
        raw.ok_or_else(|| InputError::Invalid {
            object: credentials_name.clone(),
            field: format!("data.{k}"),
            message: "not base64 of UTF-8 text".into(),
        })
    };
    let identity_api_version = s
        .azure_identity_api_version
        .unwrap_or("infrastructure.cluster.x-k8s.io/v1beta1");
    let identity = json!({
        "apiVersion": identity_api_version,
        "kind": "AzureClusterIdentity",
        "metadata": owned_metadata(name, ns),
        "spec": {
            "type": "ServicePrincipal",
            "allowedNamespaces": {"list": [ns]},
            "clientID": text("azure_client_id")?,
            "tenantID": text("azure_tenant_id")?,
            "clientSecret": {"name": AZURE_CLUSTER_SECRET, "namespace": ns},
        },
    });
    let mut vnet = Map::new();
    if let Ok(v) = spec_str(&ps, "/vnet") {
        vnet.insert("name".into(), v.into());
    }
    if let Ok(rg) = spec_str(&ps, "/networkResourceGroup") {
        vnet.insert("resourceGroup".into(), rg.into());
    }
    let spec = json!({
        "location": location,
        "azureEnvironment": environment,
        "identityRef": {"name": name, "namespace": ns, "kind": "AzureClusterIdentity"},
        "networkSpec": {
            "nodeOutboundLB": {"name": name, "backendPool": {"name": name}},
            "vnet": vnet,
        },
        "resourceGroup": spec_str(&ps, "/resourceGroup")?,
        "controlPlaneEndpoint": endpoint,
    });
    Ok((spec, secret, identity))
}

fn powervs(s: &Sources, endpoint: Value) -> Result<Value, InputError> {
    let ps = provider_spec(s)?;
    Ok(json!({
        "controlPlaneEndpoint": endpoint,
        "serviceInstance": powervs_resource(&ps, "serviceInstance")?,
        "network": powervs_resource(&ps, "network")?,
    }))
}

/// A Machine API `PowerVSResource` (`type` ID, Name or RegEx plus the matching field) as the provider's
/// resource reference (exactly one of `id`, `name`, `regex`).
fn powervs_resource(ps: &ProviderSpec, field: &str) -> Result<Value, InputError> {
    let type_ = spec_str(ps, &format!("/{field}/type"))?;
    let key = match type_ {
        "ID" => "id",
        "Name" => "name",
        "RegEx" => "regex",
        other => {
            return Err(InputError::Invalid {
                object: ps.source.clone(),
                field: format!("providerSpec.value.{field}.type"),
                message: format!("unknown type {other:?} (expected ID, Name or RegEx)"),
            });
        }
    };
    let value = spec_str(ps, &format!("/{field}/{key}"))?;
    Ok(json!({ key: value }))
}

fn vsphere(s: &Sources, endpoint: Value) -> Result<(Value, Value), InputError> {
    let name = &s.info.infrastructure_name;
    let server = match s
        .infrastructure
        .pointer("/spec/platformSpec/vsphere/vcenters/0/server")
        .and_then(Value::as_str)
        .filter(|v| !v.is_empty())
    {
        // The provider talks to one vCenter: the first, as in the reference.
        Some(server) => server,
        None => spec_str(&provider_spec(s)?, "/workspace/server")?,
    };
    let credentials_name = format!("Secret {KUBE_SYSTEM_NAMESPACE}/{VSPHERE_CREDENTIALS_SECRET}");
    let credentials = s
        .vsphere_credentials
        .ok_or_else(|| InputError::NoSource(format!("{credentials_name} does not exist")))?;
    let secret = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": owned_metadata(name, &s.info.namespace),
        "type": "Opaque",
        "data": {
            "username": secret_key(credentials, &credentials_name, &format!("{server}.username"))?,
            "password": secret_key(credentials, &credentials_name, &format!("{server}.password"))?,
        },
    });
    let spec = json!({
        "server": server,
        "identityRef": {"kind": "Secret", "name": name},
        "controlPlaneEndpoint": endpoint,
    });
    Ok((spec, secret))
}

fn openstack(s: &Sources) -> Result<Value, InputError> {
    let status = "/status/platformStatus/openstack";
    // Only OpenShift's own load balancer puts the API VIP on the machines' network; a user-managed one
    // has other addresses and is not supported (as in the reference).
    let lb_type = s
        .infrastructure
        .pointer(&format!("{status}/loadBalancer/type"))
        .and_then(Value::as_str)
        .unwrap_or("OpenShiftManagedDefault");
    if lb_type != "OpenShiftManagedDefault" {
        return Err(InputError::Invalid {
            object: "Infrastructure cluster".into(),
            field: "status.platformStatus.openstack.loadBalancer.type".into(),
            message: format!("load balancer type {lb_type} is not supported"),
        });
    }
    let vip = infra_str(s, &format!("{status}/apiServerInternalIPs/0"))?;
    Ok(json!({
        "controlPlaneEndpoint": {"host": vip, "port": 6443},
        "disableAPIServerFloatingIP": true,
        "identityRef": {"name": "openstack-cloud-credentials", "cloudName": "openstack"},
        "tags": [format!("openshiftClusterID={}", s.info.infrastructure_name)],
    }))
}

fn owned_metadata(name: &str, namespace: &str) -> Value {
    json!({
        "name": name,
        "namespace": namespace,
        "labels": {MANAGED_BY_LABEL: OWNERSHIP_LABEL_VALUE},
    })
}

/// A key of a Secret's `data` (base64 text), which must be present and non-empty.
fn secret_key<'a>(secret: &'a Value, name: &str, key: &str) -> Result<&'a str, InputError> {
    secret
        .get("data")
        .and_then(|d| d.get(key))
        .and_then(Value::as_str)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| InputError::Missing {
            object: name.to_string(),
            field: format!("data[{key:?}]"),
        })
}

#[cfg(test)]
#[path = "spec_tests.rs"]
mod tests;
