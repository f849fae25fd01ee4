//! Prune: delete what the new version of a provider dropped, after the new version is applied, then
//! store the inventory.

use capi_apply::Inventory;
use kube::runtime::events::EventType;

use super::Reconciler;
use crate::error::ProviderError;
use crate::events::object_reference;
use crate::source::Target;

impl Reconciler {
    /// Deletes the objects of `old` that `new` lacks (only those still ours), keeps in the inventory
    /// what must be retried (a CRD with instances, a failed delete), and stores it.
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
        let resolver = self.resolver(false).await?;
        let targets = old.prune_targets(&new, &resolver);
        let report = capi_apply::prune(&self.client, targets, self.applier.ownership()).await;
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
        Ok(())
    }
}
