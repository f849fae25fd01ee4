//! The unmanaged-CRD step, between prepare and the revision step: the CRDs `ClusterAPI/cluster` lists
//! as unmanaged leave the plan and the inventory (never written, adopted or pruned), and each must be
//! served, compatibly, by whoever owns it; otherwise nothing of the provider is applied.

use capi_apply::Inventory;
use kube::api::{Api, ApiResource, DynamicObject};

use super::context::Context;
use crate::error::ProviderError;
use crate::prepare::Prepared;
use crate::round::Round;
use crate::unmanaged;

const CRD: &str = "CustomResourceDefinition";

fn crd_resource() -> ApiResource {
    ApiResource {
        group: "apiextensions.k8s.io".into(),
        version: "v1".into(),
        api_version: "apiextensions.k8s.io/v1".into(),
        kind: CRD.into(),
        plural: "customresourcedefinitions".into(),
    }
}

/// Takes the unmanaged CRDs out of `prepared` and checks the live ones: one GET per unmanaged CRD
/// the provider ships (none when nothing is unmanaged; unmanaged CRDs carry no label of ours, so
/// the watch caches do not hold them).
pub(super) async fn take_unmanaged(
    cx: &Context,
    prepared: &mut Prepared,
    round: &Round,
) -> Result<(), ProviderError> {
    let unmanaged = round.unmanaged.as_ref().map_err(|e| e.clone())?;
    if unmanaged.is_empty() {
        return Ok(());
    }
    let taken = unmanaged.take_from(&mut prepared.plan);
    let api: Api<DynamicObject> = Api::all_with(cx.client.clone(), &crd_resource());
    for crd in &taken {
        let live = api
            .get_opt(&crd.key.name)
            .await
            .map_err(|source| ProviderError::Request {
                what: format!("reading unmanaged {}", crd.key),
                source,
            })?;
        unmanaged::check(&crd.object, live.as_ref())?;
    }
    Ok(())
}

/// `old` without the unmanaged CRDs, stored: an inventory entry of a CRD that became unmanaged is
/// let go, so that prune never deletes it.
pub(super) async fn release_unmanaged(
    cx: &Context,
    mut old: Inventory,
    round: &Round,
) -> Result<Inventory, ProviderError> {
    let Ok(unmanaged) = &round.unmanaged else {
        return Ok(old);
    };
    let released: Vec<_> = old
        .entries
        .keys()
        .filter(|key| key.kind == CRD && unmanaged.contains(&key.name))
        .cloned()
        .collect();
    if released.is_empty() {
        return Ok(old);
    }
    for key in &released {
        old.entries.remove(key);
        tracing::info!(inventory = %old.owner, object = %key, "released: unmanaged (ClusterAPI cluster)");
    }
    cx.inventories.save(&old).await?;
    Ok(old)
}
