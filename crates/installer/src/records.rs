//! Where the installer keeps its records, and how they move there. Its inventory, its revisions and
//! the Lease of its leader live in the installer's own namespace
//! ([`InstallerConfig::installer_namespace`]). Releases before it had one kept them in the providers'
//! namespace; the first leader of a newer release carries them over before it starts a single watch,
//! so an upgrade loses no inventory and no revision, and prunes or re-creates nothing:
//!
//! 0. only while the installer's namespace has no inventory and the providers' namespace has one: the
//!    inventory is copied last, so once it is in the installer's namespace nothing of the providers'
//!    namespace is read again;
//! 1. the earlier release's Lease, when there is one, is taken as a standby takes a Lease: only once
//!    its holder's term is over (not renewed for its duration, or released), and then held, so that no
//!    replica of that release becomes the leader again while its records move; a Lease still renewed
//!    after twice its duration is not waited for any longer;
//! 2. every record the installer's namespace lacks is copied there as the installer itself writes it
//!    (a revisions ConfigMap applied by the installer's field manager and its pending rollback request
//!    by `capi-installer rollback`'s, then the inventory created); a record already there wins: it is
//!    the copy an interrupted attempt made;
//! 3. the old records are deleted, the revisions first and the inventory last, each only as it was
//!    read (UID precondition), then the old Lease.
//!
//! Every step up to the inventory's copy may be repeated and may be interrupted: a leader killed, or an
//! API server gone, between any two requests leaves a state from which the next attempt (the same
//! process retrying, or the next leader) finishes the move. Nothing is deleted before its copy exists,
//! and no copy overwrites a record. Interrupted between the inventory's copy and the last delete, the
//! move leaves old records behind, which nothing reads again. The installer reconciles only once the
//! move is complete ([`carry_over_until_done`]).

use std::collections::BTreeMap;
use std::time::Duration;

use capi_runtime::leader::Elector;
pub use capi_runtime::leader::Timing;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::json;

use crate::config::InstallerConfig;
use crate::names::{FIELD_MANAGER, INVENTORY_CONFIGMAP};
use crate::policy::LEADER_LEASE;
use crate::revision;

/// A request of the move that failed; the whole move is tried again.
#[derive(Debug, thiserror::Error)]
#[error("carrying the installer's records over: {action} {object}: {source}")]
pub(crate) struct MoveError {
    pub(crate) action: &'static str,
    /// `Kind namespace/name`.
    pub(crate) object: String,
    #[source]
    pub(crate) source: kube::Error,
}

/// What one move did, as `Kind namespace/name`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Moved {
    pub(crate) copied: Vec<String>,
    pub(crate) deleted: Vec<String>,
}

impl Moved {
    pub(crate) fn is_empty(&self) -> bool {
        self.copied.is_empty() && self.deleted.is_empty()
    }
}

/// The replica that moves the records: its identity in the election and the election's timings (used
/// for the earlier release's Lease).
#[derive(Debug, Clone)]
pub struct Mover {
    pub identity: String,
    pub timing: Timing,
}

/// Moves the records from `config.namespace` into `config.installer_namespace` (nothing when they are
/// the same namespace or nothing is left there). Waits as long as the earlier release's leader holds
/// its Lease.
pub(crate) async fn carry_over(
    client: &Client,
    config: &InstallerConfig,
    mover: &Mover,
) -> Result<Moved, MoveError> {
    let (from, to) = (
        config.namespace.as_str(),
        config.installer_namespace.as_str(),
    );
    let mut moved = Moved::default();
    if from == to {
        return Ok(moved);
    }
    let old = Api::<ConfigMap>::namespaced(client.clone(), from);
    let new = Api::<ConfigMap>::namespaced(client.clone(), to);
    // The inventory in the installer's namespace is the mark of a completed move (it is copied last),
    // or of a cluster that never had the earlier layout: from then on nothing in the providers'
    // namespace is read, so nothing a provider writes there (their roles may write ConfigMaps and
    // Leases there) is ever taken for the installer's.
    if new
        .get_opt(INVENTORY_CONFIGMAP)
        .await
        .map_err(failed("reading", "ConfigMap", to, INVENTORY_CONFIGMAP))?
        .is_some()
    {
        return Ok(moved);
    }
    // The earlier layout always has its inventory (written before the first object); without one
    // there is nothing to carry over (a new cluster).
    if old
        .get_opt(INVENTORY_CONFIGMAP)
        .await
        .map_err(failed("reading", "ConfigMap", from, INVENTORY_CONFIGMAP))?
        .is_none()
    {
        return Ok(moved);
    }
    let leases: Api<Lease> = Api::namespaced(client.clone(), from);
    let lease = leases.get_opt(LEADER_LEASE).await.map_err(failed(
        "reading",
        "Lease",
        from,
        LEADER_LEASE,
    ))?;
    if lease.is_some() {
        tracing::info!(lease = %format!("{from}/{LEADER_LEASE}"),
            "taking the earlier release's Lease before carrying its records over");
        // An earlier leader that is gone or released its Lease lets it expire within a lease duration
        // and a look; one still renewing it after twice that is not a replica the cluster-version
        // operator is removing (a provider's leader-election role may write Leases there): the move
        // does not wait on it for ever.
        let bound = mover.timing.lease_duration * 2 + mover.timing.retry_period * 2;
        let mut elector = Elector::new(
            client.clone(),
            from,
            LEADER_LEASE,
            &mover.identity,
            mover.timing,
        );
        if tokio::time::timeout(bound, elector.acquire(|_| {}))
            .await
            .is_err()
        {
            tracing::warn!(lease = %format!("{from}/{LEADER_LEASE}"), waited = ?bound,
                "the earlier release's Lease is still renewed; carrying the records over without it");
        }
    }
    // Read only now: the earlier leader may have written until its term ended.
    let inventory = old.get_opt(INVENTORY_CONFIGMAP).await.map_err(failed(
        "reading",
        "ConfigMap",
        from,
        INVENTORY_CONFIGMAP,
    ))?;
    let revisions = old
        .list(&ListParams::default().labels(revision::LABEL))
        .await
        .map_err(|source| MoveError {
            action: "listing",
            object: format!("the ConfigMaps labelled {} in {from}", revision::LABEL),
            source,
        })?
        .items;

    for cm in &revisions {
        if copy_revisions(&new, to, cm).await? {
            moved.copied.push(describe("ConfigMap", to, &cm.name_any()));
        }
    }
    // Last: its copy marks the move as done.
    if let Some(cm) = &inventory
        && copy_inventory(&new, to, cm).await?
    {
        moved
            .copied
            .push(describe("ConfigMap", to, INVENTORY_CONFIGMAP));
    }
    for cm in revisions.iter().chain(inventory.as_ref()) {
        if delete(&old, cm).await? {
            moved
                .deleted
                .push(describe("ConfigMap", from, &cm.name_any()));
        }
    }
    let lease = leases.get_opt(LEADER_LEASE).await.map_err(failed(
        "reading",
        "Lease",
        from,
        LEADER_LEASE,
    ))?;
    if let Some(lease) = lease
        && delete(&leases, &lease).await?
    {
        moved.deleted.push(describe("Lease", from, LEADER_LEASE));
    }
    Ok(moved)
}

/// [`carry_over`] until it succeeds (each failure logged, retried with backoff up to 30 s). The caller
/// stops waiting by dropping the future (on shutdown).
pub async fn carry_over_until_done(client: &Client, config: &InstallerConfig, mover: &Mover) {
    let mut delay = Duration::from_secs(1);
    loop {
        match carry_over(client, config, mover).await {
            Ok(moved) => {
                if !moved.is_empty() {
                    tracing::info!(from = %config.namespace, to = %config.installer_namespace,
                        copied = ?moved.copied, deleted = ?moved.deleted,
                        "carried the installer's records over from an earlier release");
                }
                return;
            }
            Err(e) => {
                tracing::warn!(error = %e, retry_in = ?delay,
                    "cannot carry the installer's records over yet; nothing is reconciled until they are");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(30));
            }
        }
    }
}

/// Creates the inventory in the installer's namespace as [`capi_apply::InventoryStore`] does, unless
/// one is there. Returns whether it wrote.
async fn copy_inventory(
    new: &Api<ConfigMap>,
    ns: &str,
    old: &ConfigMap,
) -> Result<bool, MoveError> {
    let copy = ConfigMap {
        metadata: ObjectMeta {
            name: Some(INVENTORY_CONFIGMAP.into()),
            namespace: Some(ns.to_string()),
            ..Default::default()
        },
        data: old.data.clone(),
        binary_data: old.binary_data.clone(),
        ..Default::default()
    };
    let params = PostParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..Default::default()
    };
    match new.create(&params, &copy).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
        Err(e) => Err(failed("creating", "ConfigMap", ns, INVENTORY_CONFIGMAP)(e)),
    }
}

/// Applies a revisions ConfigMap in the installer's namespace as [`revision::store::Revisions`] writes
/// it, and its pending rollback request as `capi-installer rollback` does, unless one is there (the
/// check and the write are one leader's, which nobody else writes between). Returns whether it wrote.
async fn copy_revisions(
    new: &Api<ConfigMap>,
    ns: &str,
    old: &ConfigMap,
) -> Result<bool, MoveError> {
    let name = old.name_any();
    let fail = |action| failed(action, "ConfigMap", ns, &name);
    if new.get_opt(&name).await.map_err(fail("reading"))?.is_some() {
        return Ok(false);
    }
    let mut data: BTreeMap<String, String> = old.data.clone().unwrap_or_default();
    let rollback = data.remove(revision::KEY_ROLLBACK);
    let body = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns, "labels": {revision::LABEL: "true"}},
        "data": data,
        "binaryData": old.binary_data.clone().unwrap_or_default(),
    });
    new.patch(
        &name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&body),
    )
    .await
    .map_err(fail("applying"))?;
    if let Some(request) = rollback {
        let body = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": ns},
            "data": {revision::KEY_ROLLBACK: request},
        });
        new.patch(
            &name,
            &PatchParams::apply(revision::ROLLBACK_FIELD_MANAGER).force(),
            &Patch::Apply(&body),
        )
        .await
        .map_err(fail("applying the rollback request of"))?;
    }
    Ok(true)
}

/// Deletes `object` as it was read (a newer object of the same name is left alone). Returns whether it
/// deleted.
async fn delete<K>(api: &Api<K>, object: &K) -> Result<bool, MoveError>
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let params = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            uid: object.uid(),
            resource_version: None,
        }),
        ..Default::default()
    };
    let kind = K::kind(&()).to_string();
    let ns = object.namespace().unwrap_or_default();
    match api.delete(&object.name_any(), &params).await {
        Ok(_) => Ok(true),
        // Gone already, or replaced by an object this move never read: nothing of ours to delete.
        Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => Ok(false),
        Err(e) => Err(failed("deleting", &kind, &ns, &object.name_any())(e)),
    }
}

fn describe(kind: &str, namespace: &str, name: &str) -> String {
    format!("{kind} {namespace}/{name}")
}

fn failed<'a>(
    action: &'static str,
    kind: &'a str,
    namespace: &'a str,
    name: &'a str,
) -> impl Fn(kube::Error) -> MoveError + 'a {
    move |source| MoveError {
        action,
        object: describe(kind, namespace, name),
        source,
    }
}
