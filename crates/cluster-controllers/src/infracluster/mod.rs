//! InfraCluster controller: keeps `<InfraCluster kind>/<infrastructureName>` in openshift-cluster-api,
//! externally managed (annotation `cluster.x-k8s.io/managed-by`), with the spec [`spec::derive`]
//! gives and `status.ready: true`, plus the credential objects it refers to (Azure, vSphere).
//!
//! An InfraCluster without our annotation (managed by its provider) or with another value (managed by
//! someone else) is left alone and reported. OpenStack's is created once and then left to its
//! provider, which must fill its status (as in the reference).

pub(crate) mod spec;

use std::sync::Arc;

use kube::ResourceExt;
use kube::api::DynamicObject;
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::config::ControllerKind;
use crate::context::{Context, Exit, Outcome, Synced, Writer, owned_by_label};
use crate::names::*;
use crate::platform::Platform;
use crate::runner::Reconcile;
use crate::status::State;
use crate::watch::{Kind, WatchKey};

pub(crate) const MACHINES_CRD: &str = "machines.machine.openshift.io";
pub(crate) const CONTROL_PLANE_MACHINE_SETS_CRD: &str =
    "controlplanemachinesets.machine.openshift.io";
pub(crate) const AZURE_IDENTITIES_CRD: &str =
    "azureclusteridentities.infrastructure.cluster.x-k8s.io";
const CONTROL_PLANE_MACHINES: &str = "machine.openshift.io/cluster-api-machine-role=master,machine.openshift.io/cluster-api-machine-type=master";

pub(crate) struct InfraClusterController;

/// `None` when the InfraCluster is ours (our managed-by value); else who manages it.
fn managed_by_us(live: &DynamicObject) -> Option<String> {
    match live.annotations().get(MANAGED_BY_ANNOTATION) {
        Some(v) if v == MANAGED_BY_VALUE => None,
        Some(v) => Some(format!("{v:?} (annotation {MANAGED_BY_ANNOTATION})")),
        None => Some(format!(
            "its infrastructure provider (no annotation {MANAGED_BY_ANNOTATION})"
        )),
    }
}

impl Reconcile for InfraClusterController {
    const KIND: ControllerKind = ControllerKind::InfraCluster;

    async fn reconcile(&mut self, ctx: &Context, wake: &Arc<Notify>) -> Result<Outcome, Exit> {
        let cluster = ctx.cluster(wake)?;
        let platform = cluster.platform;
        let name = cluster.info.infrastructure_name.clone();
        let ns = cluster.info.namespace.as_str();
        let mut crds = vec![crate::platform::infra_cluster(platform).crd_name()];
        if platform == Platform::Azure {
            crds.push(AZURE_IDENTITIES_CRD.into());
        }
        let served = ctx.require(&crds, wake)?;
        let kind = served[0].kind.clone();
        let what = format!("{} {ns}/{name}", kind.kind);
        let watch = ctx.synced(&WatchKey::object(kind.clone(), Some(ns), &name), wake)?;
        let live = watch.get(&name);

        if platform == Platform::OpenStack {
            if let Some(live) = &live {
                // Created once; from then on the OpenStack provider owns it (it fills the status).
                return Ok(Outcome::report(match owned_by_label(live) {
                    None => State::Done {
                        message: format!("{what} exists; the OpenStack provider manages it"),
                    },
                    Some(owner) => State::ExternallyManaged {
                        message: format!("{what} exists and is managed by {owner}: left alone"),
                    },
                }));
            }
        } else if let Some(owner) = live.as_deref().and_then(managed_by_us) {
            return Ok(Outcome::report(State::ExternallyManaged {
                message: format!("{what} is managed by {owner}: left alone"),
            }));
        }

        let inputs = Inputs::read(ctx, wake, &cluster)?;
        let provider_spec = inputs.provider_spec();
        let desired = spec::derive(
            platform,
            &spec::Sources {
                infrastructure: &cluster.infrastructure.data,
                info: &cluster.info,
                api_version: &kind.api_version(),
                provider_spec,
                vsphere_credentials: inputs.vsphere_credentials.as_deref().map(|s| &s.data),
                azure_credentials: inputs.azure_credentials.as_deref().map(|s| &s.data),
                azure_identity_api_version: served.get(1).map(|s| s.kind.api_version()).as_deref(),
            },
        )?;

        let writer = Writer {
            ctx,
            controller: Self::KIND,
        };
        // What the InfraCluster refers to goes first, so it never points at something missing.
        let identity_kind = served.get(1).map(|s| &s.kind);
        sync_companions(ctx, wake, &writer, ns, &desired.companions, identity_kind).await?;

        let owner = |live: &DynamicObject| {
            if desired.externally_managed {
                managed_by_us(live)
            } else {
                owned_by_label(live)
            }
        };
        let live = match writer
            .sync(&kind, &desired.infra_cluster, live, owner)
            .await?
        {
            Synced::Foreign(message) => {
                return Ok(Outcome::report(State::ExternallyManaged { message }));
            }
            Synced::Unchanged(live) | Synced::Written(live) => live,
        };
        if !desired.externally_managed {
            return Ok(Outcome::report(State::Done {
                message: format!("{what} created; the OpenStack provider manages it"),
            }));
        }
        mark_ready(&writer, &kind, &live).await?;
        Ok(Outcome::report(State::Done {
            message: format!("{what} is in place, externally managed and ready"),
        }))
    }
}

/// Keeps the credential objects the InfraCluster refers to; one that is not ours stops the reconcile.
async fn sync_companions(
    ctx: &Context,
    wake: &Arc<Notify>,
    writer: &Writer<'_>,
    ns: &str,
    companions: &[Value],
    identity_kind: Option<&Kind>,
) -> Result<(), Exit> {
    for companion in companions {
        let kind = match (companion["kind"].as_str(), identity_kind) {
            (Some("Secret"), _) => Kind::secret(),
            (_, Some(identity)) => identity.clone(),
            (other, None) => unreachable!("companion {other:?} without its CRD"),
        };
        let name = companion["metadata"]["name"].as_str().unwrap_or_default();
        let cached = ctx
            .synced(&WatchKey::object(kind.clone(), Some(ns), name), wake)?
            .get(name);
        if let Synced::Foreign(message) = writer
            .sync(&kind, companion, cached, owned_by_label)
            .await?
        {
            return Err(Outcome::report(State::ExternallyManaged { message }).into());
        }
    }
    Ok(())
}

/// Sets `status.ready` of an externally managed InfraCluster: nobody else will say its infrastructure
/// is ready, and Cluster API waits for it before doing anything with the cluster.
async fn mark_ready(writer: &Writer<'_>, kind: &Kind, live: &DynamicObject) -> Result<(), Exit> {
    if live.data.pointer("/status/ready") == Some(&Value::Bool(true)) {
        return Ok(());
    }
    let status = json!({
        "apiVersion": kind.api_version(),
        "kind": kind.kind,
        "metadata": {"name": live.metadata.name, "namespace": live.metadata.namespace},
        "status": {"ready": true},
    });
    writer.apply_status(kind, &status).await?;
    Ok(())
}

/// The cached objects the derivation reads, for the platform at hand.
struct Inputs {
    control_plane_machine_set: Option<Arc<DynamicObject>>,
    machines: Vec<Arc<DynamicObject>>,
    /// Whether the platform reads a provider spec, and the Machine API is installed.
    machine_api: Result<(), String>,
    vsphere_credentials: Option<Arc<DynamicObject>>,
    azure_credentials: Option<Arc<DynamicObject>>,
}

impl Inputs {
    fn read(
        ctx: &Context,
        wake: &Arc<Notify>,
        cluster: &crate::context::Cluster,
    ) -> Result<Inputs, Exit> {
        let platform = cluster.platform;
        let vcenters = cluster
            .infrastructure
            .data
            .pointer("/spec/platformSpec/vsphere/vcenters/0/server")
            .is_some();
        let needs_provider_spec = match platform {
            Platform::Aws | Platform::Gcp | Platform::Azure | Platform::PowerVs => true,
            Platform::VSphere => !vcenters,
            Platform::OpenStack | Platform::BareMetal => false,
        };
        let mut inputs = Inputs {
            control_plane_machine_set: None,
            machines: Vec::new(),
            machine_api: Ok(()),
            vsphere_credentials: None,
            azure_credentials: None,
        };
        if needs_provider_spec {
            // The Machine API is optional in OpenShift (a capability): without it there is no provider
            // spec to read, which is an error only for the platforms that need one.
            let cpms = ctx.served(CONTROL_PLANE_MACHINE_SETS_CRD, wake)?;
            let machines = ctx.served(MACHINES_CRD, wake)?;
            if let Some(cpms) = cpms {
                let watch = ctx.synced(
                    &WatchKey::object(cpms.kind, Some(MAPI_NAMESPACE), "cluster"),
                    wake,
                )?;
                inputs.control_plane_machine_set = watch.get("cluster");
            }
            match machines {
                Some(m) => {
                    let watch = ctx.synced(
                        &WatchKey::labelled(m.kind, MAPI_NAMESPACE, CONTROL_PLANE_MACHINES),
                        wake,
                    )?;
                    inputs.machines = watch.list();
                }
                None if inputs.control_plane_machine_set.is_none() => {
                    inputs.machine_api = Err(format!(
                        "the Machine API is not installed (no Established CustomResourceDefinition \
                         {MACHINES_CRD} or {CONTROL_PLANE_MACHINE_SETS_CRD}): no control-plane \
                         provider spec to derive the {} from",
                        crate::platform::infra_cluster(platform).kind
                    ));
                }
                None => {}
            }
        }
        let secret = |ns: &str, name: &str| -> Result<Option<Arc<DynamicObject>>, Exit> {
            Ok(ctx
                .synced(&WatchKey::object(Kind::secret(), Some(ns), name), wake)?
                .get(name))
        };
        match platform {
            Platform::VSphere => {
                inputs.vsphere_credentials =
                    secret(KUBE_SYSTEM_NAMESPACE, spec::VSPHERE_CREDENTIALS_SECRET)?
            }
            Platform::Azure => {
                inputs.azure_credentials =
                    secret(&cluster.info.namespace, spec::AZURE_BOOTSTRAP_SECRET)?
            }
            _ => {}
        }
        Ok(inputs)
    }

    fn provider_spec(&self) -> Result<spec::ProviderSpec<'_>, crate::error::InputError> {
        if let Err(message) = &self.machine_api {
            return Err(crate::error::InputError::NoSource(message.clone()));
        }
        let machines: Vec<&Value> = self.machines.iter().map(|m| &m.data).collect();
        spec::choose_provider_spec(
            self.control_plane_machine_set.as_deref().map(|c| &c.data),
            &machines,
        )
    }
}
