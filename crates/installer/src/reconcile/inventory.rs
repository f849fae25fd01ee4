//! Finding a provider's inventory: what this process wrote, else what the watched ConfigMap holds, else
//! a rebuild from the provider's labelled live objects. A rebuilt inventory holds only objects of the
//! current version (proven: in the plan, ours, of this provider), so it never makes prune delete
//! anything; other labelled objects are reported and left in place.

use std::time::Duration;

use capi_apply::{Inventory, ObjectKey, key_of};
use kube::runtime::events::EventType;

use super::context::Context;
use crate::error::ProviderError;
use crate::inventory::Stored;
use crate::prepare::Prepared;
use crate::round::Round;
use crate::source::Target;

/// The provider's inventory before this version is applied (taking over the inventories of
/// unselected sources of the same provider).
pub(super) async fn inventory(
    cx: &Context,
    target: &Target,
    prepared: &Prepared,
    round: &Round,
) -> Result<Inventory, ProviderError> {
    let id = &target.source.id;
    let handed = cx
        .inventories
        .handed_over(id, &target.clusterctl_label, &round.selected);
    let mut inventory = match cx.inventories.remembered(id) {
        Some(inv) => inv,
        None => match cx.inventories.stored(id) {
            Stored::Found(inv) => inv,
            Stored::Missing if !handed.is_empty() => Inventory::new(id.inventory_key()),
            Stored::Missing => rebuild(cx, target, prepared, None).await?,
            Stored::Unreadable(why) => rebuild(cx, target, prepared, Some(why)).await?,
        },
    };
    if handed.is_empty() {
        return Ok(inventory);
    }
    for (_, inv) in &handed {
        for (key, phase) in &inv.entries {
            if !inventory.contains(key) {
                inventory.insert(key.clone(), *phase);
            }
        }
    }
    cx.inventories.save(&inventory).await?;
    for (old, _) in &handed {
        tracing::info!(source = %id, from = %old, "took over the inventory of a source of the same provider that is no longer selected");
        cx.inventories.remove(old).await?;
    }
    Ok(inventory)
}

/// Rebuilds a missing or unreadable inventory from the live objects that carry the installer's
/// label and this provider's `cluster.x-k8s.io/provider` value, and whose fields our apply owns.
async fn rebuild(
    cx: &Context,
    target: &Target,
    prepared: &Prepared,
    unreadable: Option<String>,
) -> Result<Inventory, ProviderError> {
    let id = &target.source.id;
    let resources = prepared.plan.resources();
    for (resource, namespaced) in &resources {
        cx.cache.ensure_watched(resource, *namespaced);
    }
    cx.cache.wait_synced(Duration::from_secs(10)).await;
    let ownership = cx.applier.ownership();
    // Our labels and this provider's value, and written by our apply (anyone may set a label).
    let ours = |o: &kube::api::DynamicObject| {
        ownership.owner_of(o) == Some(target.clusterctl_label.as_str())
            && ownership.applied_by_us(o)
    };
    let mut inventory = Inventory::new(id.inventory_key());
    for phase in &prepared.plan.phases {
        for o in &phase.objects {
            if let Some(live) = cx.cache.get(&o.key).filter(|live| ours(live)) {
                inventory.insert(o.key.clone(), phase.phase);
                inventory.set_uid(&o.key, live.metadata.uid.as_deref());
            }
        }
    }
    let claims = cx.inventories.claims(id, "", &Default::default());
    let mut unproven: Vec<ObjectKey> = resources
        .iter()
        .flat_map(|(r, _)| cx.cache.objects(&r.group, &r.kind))
        .filter(|o| ours(o))
        .filter_map(|o| key_of(&o))
        .filter(|k| !inventory.contains(k) && !claims.contains_key(k))
        .filter(|k| prepared.plan.objects().all(|o| o.key != *k))
        .collect();
    unproven.sort();
    if unreadable.is_none() && inventory.entries.is_empty() && unproven.is_empty() {
        return Ok(inventory);
    }
    cx.inventories.save(&inventory).await?;
    let why = match &unreadable {
        Some(e) => format!("unreadable ({e})"),
        None => "missing".to_string(),
    };
    let left: Vec<String> = unproven.iter().map(ToString::to_string).collect();
    tracing::warn!(source = %id, %why, objects = inventory.entries.len(), ?left, "inventory rebuilt from labelled live objects");
    cx.events
        .publish(
            EventType::Warning,
            "InventoryRebuilt",
            "Inventory",
            Some(cx.events.source_reference(id)),
            format!(
                "{id}: the inventory was {why}; rebuilt from {} labelled live objects of the current version; left in place, not provably this provider's to delete: [{}]",
                inventory.entries.len(),
                left.join(", ")
            ),
        )
        .await;
    Ok(inventory)
}
