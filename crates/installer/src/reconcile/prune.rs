//! Prune: delete what the new version of a provider dropped, after the new version is applied, then
//! store the inventory.

use capi_apply::{Inventory, KeepReason, ObjectKey};
use kube::runtime::events::EventType;

use super::Reconciler;
use crate::error::ProviderError;
use crate::events::object_reference;
use crate::source::Target;

impl Reconciler {
    /// Deletes the objects of `old` that `new` lacks (only those still ours and this provider's), keeps
    /// in the inventory what must be retried (a CRD with instances, a failed delete), and stores it. A
    /// failed delete is an error (`PruneFailed`), after the inventory is stored.
    pub(super) async fn prune(
        &self,
        target: &Target,
        old: &Inventory,
        new: Inventory,
    ) -> Result<(), ProviderError> {
        let id = &target.source.id;
        if old.stale(&new).is_empty() {
            if *old != new {
                self.inventories.save(&new).await?;
            }
            return Ok(());
        }
        // Fresh discovery: the new version's CRDs may have changed which versions are served, and a kind
        // resolved with stale discovery would be "deleted" through a version that no longer exists.
        let resolver = self.resolver(true).await?;
        let targets = old.prune_targets(&new, &resolver);
        let report = capi_apply::prune(
            &self.client,
            targets,
            self.applier.ownership(),
            Some(&target.clusterctl_label),
        )
        .await;
        for key in &report.deleted {
            self.applier.forget(key);
            self.metrics.count_pruned();
            tracing::info!(source = %id, object = %key, "pruned: the new version no longer contains it");
            self.events
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
            tracing::warn!(source = %id, object = %key, %reason, "not pruned");
            self.events
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
        self.inventories.save(&keep).await?;
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
}
