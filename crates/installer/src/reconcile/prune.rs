//! Prune: delete what the new version of a provider dropped, after the new version is applied, then
//! stage the inventory (stored with the pass's records).

use capi_apply::{Inventory, KeepReason, ObjectKey};
use kube::runtime::events::EventType;

use super::context::Context;
use crate::error::ProviderError;
use crate::events::object_reference;
use crate::source::Target;

/// Deletes the objects of `old` that `new` lacks (only those still ours and this provider's), keeps
/// in the inventory what must be retried (a CRD with instances, a failed delete), and stages it. A
/// failed delete is an error (`PruneFailed`), after the inventory is staged.
pub(super) async fn prune(
    cx: &Context,
    target: &Target,
    old: &Inventory,
    new: Inventory,
) -> Result<(), ProviderError> {
    let id = &target.source.id;
    // The inventory only shrinks here: until it is stored (with the pass's records) the stored one
    // still names every object that may exist, and a restart prunes what it names again.
    if old.stale(&new).is_empty() {
        if *old != new {
            cx.inventories.stage(&new);
        }
        return Ok(());
    }
    // Fresh discovery: the new version's CRDs may have changed which versions are served, and a kind
    // resolved with stale discovery would be "deleted" through a version that no longer exists.
    let resolver = cx.resolver(true).await?;
    let targets = old.prune_targets(&new, &resolver);
    let writer = cx
        .applier
        .writer(&old.owner)
        .map_err(ProviderError::Identity)?;
    let report = capi_apply::prune(
        &writer,
        targets,
        cx.applier.ownership(),
        Some(&target.clusterctl_label),
    )
    .await;
    for key in &report.deleted {
        cx.applier.forget(key);
        cx.metrics.count_pruned();
        tracing::info!(source = %id, object = %key, "pruned: the new version no longer contains it");
        cx.events
            .publish(
                EventType::Normal,
                "Pruned",
                "Prune",
                Some(object_reference(key)),
                format!("{key} ({id})"),
            )
            .await;
    }
    for (key, reason) in &report.kept {
        if *reason == KeepReason::Released {
            cx.applier.forget(key);
            tracing::info!(source = %id, object = %key, "released: the new version no longer contains it, and the installer adopted it, not created it");
            cx.events
                .publish(
                    EventType::Normal,
                    "Released",
                    "Prune",
                    Some(object_reference(key)),
                    format!("{key} ({id}): {reason}"),
                )
                .await;
            continue;
        }
        tracing::warn!(source = %id, object = %key, %reason, "not pruned");
        cx.events
            .publish(
                EventType::Warning,
                "PruneSkipped",
                "Prune",
                Some(object_reference(key)),
                format!("{key}: {reason}"),
            )
            .await;
    }
    let mut keep = new;
    keep.retain_from(old, report.retry_keys());
    cx.inventories.stage(&keep);
    let failed: Vec<(ObjectKey, String)> = report
        .kept
        .iter()
        .filter_map(|(key, reason)| match reason {
            KeepReason::Error(e) => Some((key.clone(), e.clone())),
            _ => None,
        })
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(ProviderError::Prune { failed })
    }
}
