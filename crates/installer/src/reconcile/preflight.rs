//! The checks before the first write of a version: the same ownership decision as an apply, CRD safety
//! against the live CRDs, and a server-side dry-run of the exact request, for every object that would
//! be written. One failure and nothing of the provider is written: the version it replaces keeps
//! running.

use std::collections::BTreeMap;
use std::time::Duration;

use capi_apply::{ApplyAction, Inventory, ObjectKey, PlannedObject};
use kube::runtime::events::EventType;

use super::context::Context;
use crate::error::ProviderError;
use crate::policy::Stored;
use crate::source::Target;

/// Checks `objects` (unchanged ones cost no request) against `record`, the provider's inventory
/// before this version (an existing object it does not hold is refused unless it may be adopted);
/// every failure is reported at once. Returns the objects the apply would adopt: the inventory
/// records them before the first write, so that prune releases them instead of deleting them.
/// `stored` judges each object again as the dry-run says the API server would store it.
pub(super) async fn preflight(
    cx: &Context,
    target: &Target,
    objects: Vec<&PlannedObject>,
    record: &Inventory,
    stored: &Stored,
) -> Result<Vec<ObjectKey>, ProviderError> {
    // Watch the kinds first, as the apply will: the cache answers for unchanged objects, so a
    // steady-state reconcile checks nothing and sends nothing.
    let kinds: BTreeMap<_, _> = objects
        .iter()
        .map(|o| ((o.resource.group.clone(), o.resource.kind.clone()), o))
        .collect();
    for o in kinds.values() {
        cx.cache.ensure_watched(&o.resource, o.namespaced);
    }
    if !cx.cache.wait_synced(Duration::from_secs(10)).await {
        tracing::debug!("watch caches not synced yet; unseen objects are read before the dry-run");
    }
    let mut adopted = Vec::new();
    let mut errors = Vec::new();
    for (key, result) in cx
        .applier
        .dry_run_each(
            objects,
            |key| cx.cache.get(key),
            record,
            &|planned, object| stored.judge(&planned.key, object),
        )
        .await
    {
        match result {
            Ok(ApplyAction::Adopted) => adopted.push(key),
            Ok(_) => {}
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        return Ok(adopted);
    }
    let error = ProviderError::Preflight(errors);
    cx.events
        .publish(
            EventType::Warning,
            "PreflightFailed",
            "Preflight",
            Some(cx.events.source_reference(&target.source.id)),
            error.to_string(),
        )
        .await;
    Err(error)
}
