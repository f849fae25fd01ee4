//! Uninstall: every object of a provider whose `InfrastructureProvider` was deleted goes, in reverse
//! phase order, and only objects that still carry the installer's label and this provider's
//! `cluster.x-k8s.io/provider` value. Its CRDs are kept unless the object asked for them
//! (`spec.deleteCustomResourceDefinitions`), and then each goes only once it has no instances; an
//! unmanaged CRD (see [`crate::unmanaged`]) is never deleted. What is kept is reported, never silent.

use capi_apply::{Inventory, KeepReason, KindResolver, ObjectKey};
use kube::runtime::events::EventType;

use super::context::Context;
use crate::desired::Uninstall;
use crate::inventory::ProviderRecord;
use crate::outcome::Removal;
use crate::source::SourceId;
use crate::unmanaged::Unmanaged;

const CRD: &str = "CustomResourceDefinition";

/// One pass of `u`'s uninstall over every source recorded for its provider (the provider and its
/// companion). Done when no inventory of the provider is left.
pub(crate) async fn uninstall(cx: &Context, u: &Uninstall, unmanaged: &Unmanaged) -> Removal {
    let mut removal = Removal {
        name: u.name.clone(),
        ..Default::default()
    };
    let sources: Vec<(SourceId, Inventory)> = cx
        .inventories
        .all()
        .into_iter()
        .filter(|(_, inv)| ProviderRecord::read(inv).is_some_and(|r| r.label == u.clusterctl_label))
        .collect();
    if sources.is_empty() {
        removal.done = true;
        return removal;
    }
    // Fresh discovery: the kinds to delete through are the served ones now.
    let resolver = match cx.resolver(true).await {
        Ok(r) => r,
        Err(e) => {
            removal.failed.push(e.to_string());
            return removal;
        }
    };
    for (id, inventory) in sources {
        if let Err(e) =
            remove_source(cx, &id, inventory, u, unmanaged, &resolver, &mut removal).await
        {
            removal.failed.push(format!("{id}: {e}"));
        }
    }
    removal.done = removal.failed.is_empty()
        && !removal
            .kept
            .iter()
            .any(|(_, why)| why.contains("instances"));
    removal
}

async fn remove_source(
    cx: &Context,
    id: &SourceId,
    inventory: Inventory,
    u: &Uninstall,
    unmanaged: &Unmanaged,
    resolver: &KindResolver,
    removal: &mut Removal,
) -> Result<(), String> {
    let mut doomed = inventory.clone();
    for key in inventory.entries.keys().filter(|k| k.kind == CRD) {
        let why = if unmanaged.contains(&key.name) {
            "unmanaged (ClusterAPI cluster); never deleted by the installer"
        } else if !u.delete_crds {
            "kept: spec.deleteCustomResourceDefinitions is false"
        } else {
            continue;
        };
        doomed.entries.remove(key);
        removal.kept.push((key.name.clone(), why.to_string()));
    }
    let targets = doomed.prune_targets(&Inventory::new(inventory.owner.clone()), resolver);
    cx.act_as(id, &u.clusterctl_label);
    let writer = cx
        .applier
        .writer(&inventory.owner)
        .map_err(|e| e.to_string())?;
    let report = capi_apply::prune(
        &writer,
        targets,
        cx.applier.ownership(),
        Some(&u.clusterctl_label),
    )
    .await;
    for key in &report.deleted {
        cx.applier.forget(key);
        cx.metrics.count_pruned();
        tracing::info!(source = %id, object = %key, "uninstalled");
    }
    removal.deleted += report.deleted.len();
    for (key, reason) in &report.kept {
        match reason {
            KeepReason::CrdHasInstances { .. } => {
                removal.kept.push((key.name.clone(), reason.to_string()))
            }
            KeepReason::Error(e) => removal.failed.push(format!("{key}: {e}")),
            _ => {
                tracing::info!(source = %id, object = %key, %reason, "left in place: not this provider's")
            }
        }
    }
    let mut left = Inventory::new(inventory.owner.clone());
    left.retain_from(&doomed, report.retry_keys());
    report_pass(cx, id, &report.deleted, removal).await;
    if left.entries.is_empty() {
        cx.inventories.remove(id).await.map_err(|e| e.to_string())?;
        cx.revisions.remove(id).await.map_err(|e| e.to_string())?;
        return Ok(());
    }
    left.record = inventory.record;
    cx.inventories.save(&left).await.map_err(|e| e.to_string())
}

/// One Event per pass and source that deleted something, and then one for the CRDs kept: the
/// passes that only wait for instances to go write nothing.
async fn report_pass(cx: &Context, id: &SourceId, deleted: &[ObjectKey], removal: &Removal) {
    let related = Some(cx.events.source_reference(id));
    if deleted.is_empty() {
        return;
    }
    let names: Vec<String> = deleted.iter().map(ToString::to_string).collect();
    cx.events
        .publish(
            EventType::Normal,
            "Uninstalled",
            "Uninstall",
            related.clone(),
            format!(
                "{id} ({}): deleted {}: {}",
                removal.name,
                deleted.len(),
                names.join(", ")
            ),
        )
        .await;
    if !removal.kept.is_empty() {
        cx.events
            .publish(
                EventType::Warning,
                "UninstallKept",
                "Uninstall",
                related,
                removal.describe(),
            )
            .await;
    }
}
