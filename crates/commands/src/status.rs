//! What is installed, read from the cluster, for `capi-installer status`: the platform and what it
//! asks for, each provider a reconcile would select (the same [`Round`] as the controller's, owners
//! included) with how many of its recorded objects are ready and its record (its last error), the
//! sources refused or no longer selected, the `InfrastructureProvider` objects, every provider's
//! revisions, the ClusterOperator, and the processes' Deployments and Leases. Read-only.
//!
//! Requests: a GET of `Infrastructure/cluster`, of the ClusterOperator and of the inventory; a list of
//! `InfrastructureProvider`s, of transport ConfigMaps and of revisions ConfigMaps; discovery; a GET per
//! recorded object of a selected provider; a GET of each process's Deployment and Lease.

use std::collections::BTreeSet;

use capi_apply::{Inventory, KindResolver, Phase, Readiness, readiness};
use capi_manifests::ProviderType;
use capi_openshift::resources::api_resource;
use capi_openshift::{
    CLUSTER_OPERATOR_NAME, INFRASTRUCTURE, INFRASTRUCTURE_NAME, cluster_operator, conditions,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, DynamicObject, ListParams};
use serde_json::Value;

use crate::api::{self, Request};
use crate::desired::{self, Desired};
use crate::inventory::ProviderRecord;
use crate::names::INVENTORY_CONFIGMAP;
use crate::prepare::RenderContext;
use crate::revision::{self, RevisionError, RevisionLog, Stored};
use crate::round::Round;
use crate::source::{ProviderSource, Refused, SourceId, configmap};

/// Why the status cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    /// `what` says what was read (`reading Infrastructure cluster`).
    #[error("{what}")]
    Read {
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error(transparent)]
    Revision(#[from] RevisionError),
}

fn read_error(what: impl Into<String>) -> impl FnOnce(kube::Error) -> StatusError {
    let what = what.into();
    move |source| StatusError::Read { what, source }
}

/// Where the installer and its providers live.
pub struct Namespaces<'a> {
    /// The providers' namespace: the transport ConfigMaps.
    pub providers: &'a str,
    /// The installer's own: its inventory and revisions.
    pub installer: &'a str,
}

/// A process whose Deployment and Lease the status shows.
pub struct ProcessRef<'a> {
    pub namespace: &'a str,
    /// The Deployment's name, which names the process too.
    pub name: &'a str,
    pub lease: &'a str,
}

/// A process: its Deployment and its Lease, when they exist.
pub struct Process {
    pub name: String,
    pub deployment: Option<Deployment>,
    pub lease: Option<Lease>,
}

/// Everything `capi-installer status` shows.
pub struct Status {
    /// What the platform and the `InfrastructureProvider` objects ask for.
    pub desired: Desired,
    /// The providers, when the platform is supported.
    pub providers: Option<Providers>,
    /// The `InfrastructureProvider` objects, with their status.
    pub requests: Vec<(Request, Option<Value>)>,
    /// Every source's revision log, by revisions ConfigMap.
    pub revisions: Vec<(String, RevisionLog)>,
    /// `ClusterOperator/cluster-api`, when it exists.
    pub cluster_operator: Option<DynamicObject>,
    pub processes: Vec<Process>,
}

/// The providers of a supported platform, as a reconcile selects them.
pub struct Providers {
    /// In install order.
    pub selected: Vec<ProviderStatus>,
    /// Second sources of a provider.
    pub refused: Vec<Refused>,
    /// Sources no longer selected whose objects are left in place.
    pub unselected: Vec<Unselected>,
}

/// One selected provider.
pub struct ProviderStatus {
    pub source: ProviderSource,
    pub installed: Installed,
    /// Its record, when it has a readable one.
    pub record: Option<ProviderRecord>,
}

/// How much of a provider is in the cluster.
#[derive(Debug, PartialEq, Eq)]
pub enum Installed {
    /// No inventory, or an empty one.
    Nothing,
    /// The inventory cannot be read: why.
    Unreadable(String),
    /// Its recorded objects: how many are ready, and the first that is not (in apply order, with its
    /// phase and why).
    Objects {
        ready: usize,
        total: usize,
        first_pending: Option<(Phase, String)>,
    },
}

/// A source that is no longer selected and still has objects.
#[derive(Debug, PartialEq, Eq)]
pub struct Unselected {
    pub id: SourceId,
    /// Its record (empty fields when it has none).
    pub record: ProviderRecord,
    pub objects: usize,
}

impl Status {
    /// Whether the ClusterOperator says `Available=True` and not `Degraded=True`.
    pub fn healthy(&self) -> bool {
        healthy(self.cluster_operator.as_ref())
    }
}

fn healthy(co: Option<&DynamicObject>) -> bool {
    let status = co.and_then(|co| co.data.get("status"));
    conditions::is_true(status, "Available") && !conditions::is_true(status, "Degraded")
}

/// Reads the status of the installer and its providers, and of `processes`.
pub async fn read(
    client: &Client,
    namespaces: &Namespaces<'_>,
    processes: &[ProcessRef<'_>],
) -> Result<Status, StatusError> {
    let infra = Api::<DynamicObject>::all_with(client.clone(), &api_resource(&INFRASTRUCTURE))
        .get_opt(INFRASTRUCTURE_NAME)
        .await
        .map_err(read_error("reading Infrastructure cluster"))?;
    let cluster_operator = cluster_operator::api(client)
        .get_opt(CLUSTER_OPERATOR_NAME)
        .await
        .map_err(read_error(format!(
            "reading ClusterOperator {CLUSTER_OPERATOR_NAME}"
        )))?;
    let status = infra.as_ref().and_then(|i| i.data.get("status"));
    let requests = requests(client).await?;
    let requested: Vec<Request> = requests.iter().map(|(r, _)| r.clone()).collect();
    let installation = Installation::read(client, namespaces).await?;
    let declared = installation.declared_platforms(status);
    let platform = desired::platform_provider(status, &declared);
    let extra = desired::requests(platform.as_deref(), &requested).install;
    let desired = desired::desired(status, &declared, &extra);
    let providers = match &desired {
        Desired::Install(wants) => {
            let round = Round::new(
                &wants.providers,
                &installation.candidates,
                &installation.owners(),
                &RenderContext::default(),
            );
            let resolver = KindResolver::discover(client)
                .await
                .map_err(read_error("API discovery"))?;
            let mut selected = Vec::new();
            for target in &round.selection.targets {
                selected.push(
                    installation
                        .provider(client, &resolver, &target.source)
                        .await,
                );
            }
            Some(Providers {
                selected,
                unselected: installation.unselected(&round.selected),
                refused: round.selection.refused,
            })
        }
        _ => None,
    };
    let revisions = revision_logs(client, namespaces.installer).await?;
    let mut out = Vec::new();
    for p in processes {
        let deployment = Api::<Deployment>::namespaced(client.clone(), p.namespace)
            .get_opt(p.name)
            .await
            .map_err(read_error(format!(
                "reading Deployment {}/{}",
                p.namespace, p.name
            )))?;
        let lease = Api::<Lease>::namespaced(client.clone(), p.namespace)
            .get_opt(p.lease)
            .await
            .map_err(read_error(format!(
                "reading Lease {}/{}",
                p.namespace, p.lease
            )))?;
        out.push(Process {
            name: p.name.to_string(),
            deployment,
            lease,
        });
    }
    Ok(Status {
        desired,
        providers,
        requests,
        revisions,
        cluster_operator,
        processes: out,
    })
}

/// The `InfrastructureProvider` objects, read (none when the kind is not served).
async fn requests(client: &Client) -> Result<Vec<(Request, Option<Value>)>, StatusError> {
    let list = match Api::<DynamicObject>::all_with(client.clone(), &api::resource())
        .list(&ListParams::default())
        .await
    {
        Ok(list) => list.items,
        // An unknown group is a plain-text 404 without a reason.
        Err(kube::Error::Api(s)) if s.code == 404 => Vec::new(),
        Err(e) => return Err(read_error("listing InfrastructureProviders")(e)),
    };
    Ok(list
        .iter()
        .map(|o| (api::read(o), o.data.get("status").cloned()))
        .collect())
}

/// Every revision log in the installer's namespace, by ConfigMap name.
pub(crate) async fn revision_logs(
    client: &Client,
    namespace: &str,
) -> Result<Vec<(String, RevisionLog)>, StatusError> {
    let list = Api::<ConfigMap>::namespaced(client.clone(), namespace)
        .list(&ListParams::default().labels(revision::LABEL))
        .await
        .map_err(read_error("listing the revisions ConfigMaps"))?;
    list.items
        .iter()
        .map(|cm| {
            let stored = Stored::from_configmap(cm)?;
            Ok((cm.metadata.name.clone().unwrap_or_default(), stored.log))
        })
        .collect()
}

/// What the cluster holds of the installer's sources and inventories.
struct Installation {
    candidates: Vec<ProviderSource>,
    inventory: Option<ConfigMap>,
    /// Every readable inventory, by key.
    stored: Vec<(String, Inventory)>,
}

impl Installation {
    async fn read(client: &Client, namespaces: &Namespaces<'_>) -> Result<Self, StatusError> {
        let namespace = namespaces.providers;
        let list = Api::<ConfigMap>::namespaced(client.clone(), namespace)
            .list(&ListParams::default().labels(configmap::SELECTOR))
            .await
            .map_err(read_error(format!(
                "listing transport ConfigMaps in namespace {namespace}"
            )))?;
        let records = namespaces.installer;
        let inventory = Api::<ConfigMap>::namespaced(client.clone(), records)
            .get_opt(INVENTORY_CONFIGMAP)
            .await
            .map_err(read_error(format!(
                "reading ConfigMap {records}/{INVENTORY_CONFIGMAP}"
            )))?;
        let mut candidates: Vec<ProviderSource> =
            list.items.iter().filter_map(configmap::candidate).collect();
        candidates.extend(profile_candidates(inventory.as_ref()));
        let stored = stored_inventories(inventory.as_ref());
        Ok(Installation {
            candidates,
            inventory,
            stored,
        })
    }

    /// The platform of `Infrastructure` status as a recorded profile declared it: the profiles live
    /// on the installer's pod, but an infrastructure profile's provider name is its `ocpPlatform`'s
    /// ([`capi_manifests::platform::provider_name_of`]), so a recorded profile source of that name
    /// declared this platform.
    fn declared_platforms(&self, status: Option<&Value>) -> desired::DeclaredPlatforms {
        let Some(platform) = status
            .and_then(|s| s.pointer("/platformStatus/type"))
            .and_then(Value::as_str)
        else {
            return Default::default();
        };
        let Ok(name) = capi_manifests::platform::provider_name_of(platform) else {
            return Default::default();
        };
        self.candidates
            .iter()
            .filter(|c| matches!(c.id, SourceId::Profile(_)))
            .filter(|c| c.provider_type == ProviderType::Infrastructure && c.name == name)
            .map(|c| (platform.to_string(), c.name.clone()))
            .collect()
    }

    /// The sources that own objects: of two sources of one provider, a reconcile keeps that one.
    fn owners(&self) -> BTreeSet<SourceId> {
        self.stored
            .iter()
            .filter(|(_, inv)| !inv.entries.is_empty())
            .filter_map(|(key, _)| SourceId::from_inventory_key(key))
            .collect()
    }

    /// A selected provider: its record, and the readiness of every object its inventory records.
    async fn provider(
        &self,
        client: &Client,
        resolver: &KindResolver,
        source: &ProviderSource,
    ) -> ProviderStatus {
        let key = source.id.inventory_key();
        let stored = (self.inventory.as_ref())
            .and_then(|cm| cm.data.as_ref())
            .and_then(|d| d.get(&key))
            .map(|json| Inventory::from_json(&key, json));
        let record = (stored.as_ref())
            .and_then(|s| s.as_ref().ok())
            .and_then(ProviderRecord::read);
        let installed = match stored {
            Some(Err(e)) => Installed::Unreadable(e.to_string()),
            Some(Ok(inv)) if !inv.entries.is_empty() => {
                let (ready, first_pending) = readiness_of(client, resolver, &inv).await;
                Installed::Objects {
                    ready,
                    total: inv.entries.len(),
                    first_pending,
                }
            }
            _ => Installed::Nothing,
        };
        ProviderStatus {
            source: source.clone(),
            installed,
            record,
        }
    }

    /// The sources with objects that the round does not select (`selected`: refused ones included).
    fn unselected(&self, selected: &BTreeSet<SourceId>) -> Vec<Unselected> {
        unselected(&self.stored, selected)
    }
}

fn unselected(stored: &[(String, Inventory)], selected: &BTreeSet<SourceId>) -> Vec<Unselected> {
    stored
        .iter()
        .filter(|(_, inv)| !inv.entries.is_empty())
        .filter_map(|(key, inv)| {
            let id = SourceId::from_inventory_key(key)?;
            (!selected.contains(&id)).then(|| Unselected {
                id,
                record: ProviderRecord::read(inv).unwrap_or_default(),
                objects: inv.entries.len(),
            })
        })
        .collect()
}

/// The profile sources the installer has recorded. Profiles live on the installer's pod, not in the
/// cluster; which provider each declares is known from the record kept with its inventory.
fn profile_candidates(inventory: Option<&ConfigMap>) -> Vec<ProviderSource> {
    let Some(data) = inventory.and_then(|cm| cm.data.as_ref()) else {
        return Vec::new();
    };
    data.iter()
        .filter_map(|(key, json)| {
            let id @ SourceId::Profile(_) = SourceId::from_inventory_key(key)? else {
                return None;
            };
            let record = ProviderRecord::read(&Inventory::from_json(key, json).ok()?)?;
            Some(ProviderSource {
                id,
                name: record.provider,
                provider_type: ProviderType::from_label(&record.provider_type)?,
                version: record.version,
                created: None,
            })
        })
        .collect()
}

/// Every readable inventory of the inventory ConfigMap, by key.
fn stored_inventories(inventory: Option<&ConfigMap>) -> Vec<(String, Inventory)> {
    inventory
        .and_then(|cm| cm.data.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|(key, json)| Some((key.clone(), Inventory::from_json(key, json).ok()?)))
        .collect()
}

/// How many recorded objects are ready, and the first one that is not (in apply order), with its phase:
/// each read once, judged by the same readiness rules as the controller's gates.
async fn readiness_of(
    client: &Client,
    resolver: &KindResolver,
    inv: &Inventory,
) -> (usize, Option<(Phase, String)>) {
    let mut ready = 0;
    let mut first_pending = None;
    let mut entries: Vec<_> = inv.entries.iter().collect();
    entries.sort_by_key(|(_, phase)| **phase);
    for (key, phase) in entries {
        let r = match resolver.resolve_key(key) {
            None => Readiness::NotFound,
            Some(kind) => {
                let api: Api<DynamicObject> = match &key.namespace {
                    Some(ns) if kind.namespaced => {
                        Api::namespaced_with(client.clone(), ns, &kind.resource)
                    }
                    _ => Api::all_with(client.clone(), &kind.resource),
                };
                match api.get_opt(&key.name).await {
                    Ok(Some(obj)) => readiness(&key.group, &key.kind, &obj),
                    Ok(None) => Readiness::NotFound,
                    Err(e) => Readiness::InProgress(format!("cannot read: {e}")),
                }
            }
        };
        if r.is_current() {
            ready += 1;
        } else if first_pending.is_none() {
            first_pending = Some((*phase, format!("{key}: {r}")));
        }
    }
    (ready, first_pending)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn healthy_means_available_and_not_degraded() {
        let co = |available: &str, degraded: &str| -> DynamicObject {
            serde_json::from_value(serde_json::json!({
                "apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
                "metadata": {"name": "cluster-api"},
                "status": {"conditions": [
                    {"type": "Available", "status": available},
                    {"type": "Degraded", "status": degraded}]}}))
            .unwrap()
        };
        assert!(healthy(Some(&co("True", "False"))));
        assert!(!healthy(Some(&co("True", "True"))));
        assert!(!healthy(Some(&co("False", "False"))));
        assert!(!healthy(None));
    }

    #[test]
    fn sources_with_objects_the_round_does_not_select_are_unselected() {
        let mut gcp = Inventory::new("gcp");
        gcp.insert(
            capi_apply::ObjectKey::new("apps", "v1", "Deployment", Some("ns"), "capg"),
            Phase::Workloads,
        );
        gcp.record = Some(
            serde_json::json!({"provider": "gcp", "type": "infrastructure",
            "source": "ConfigMap gcp", "state": "Installed"}),
        );
        let mut aws = gcp.clone();
        aws.record = None;
        let stored = vec![
            ("aws".to_string(), aws),
            ("empty".to_string(), Inventory::new("empty")),
            ("gcp".to_string(), gcp),
        ];
        let selected = BTreeSet::from([SourceId::ConfigMap("aws".into())]);
        let unselected = unselected(&stored, &selected);
        assert_eq!(
            unselected.len(),
            1,
            "only gcp: aws is selected, empty has no objects"
        );
        assert_eq!(unselected[0].id, SourceId::ConfigMap("gcp".into()));
        assert_eq!(unselected[0].record.provider, "gcp");
        assert_eq!(unselected[0].objects, 1);
    }
}
