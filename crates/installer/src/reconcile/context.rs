//! What every provider's reconcile shares, and what outlives a pass: the client, the applier and
//! its watch cache, the inventories and revisions, discovery, Events, metrics and the failure
//! history. The steps of a reconcile are free functions over it (the sibling modules); it knows none
//! of them.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use capi_apply::{Applier, CrdNames, InventoryStore, KindResolver, LiveCache, Namespaces};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::ApiResource;
use kube::runtime::reflector;

use crate::config::InstallerConfig;
use crate::error::ProviderError;
use crate::events::Events;
use crate::history::History;
use crate::inventory::Inventories;
use crate::metrics::Metrics;
use crate::names::{FIELD_MANAGER, INVENTORY_CONFIGMAP};
use crate::prepare::RenderContext;
use crate::revision::store::Revisions;
use crate::source::SourceId;

/// What the reconciles of every provider share (several run at a time).
pub(crate) struct Context {
    pub(crate) client: Client,
    pub(crate) config: InstallerConfig,
    pub(crate) render: RenderContext,
    pub(crate) applier: Applier,
    pub(crate) cache: LiveCache,
    pub(crate) inventories: Inventories,
    pub(crate) revisions: Revisions,
    pub(crate) resolver: tokio::sync::Mutex<Option<KindResolver>>,
    pub(crate) events: Events,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) history: Mutex<History>,
}

impl Context {
    /// `inventory` is a watch of ConfigMap `capi-installer-inventory`, `revisions` of the revisions
    /// ConfigMaps (the caller runs them).
    pub(crate) fn new(
        client: Client,
        config: InstallerConfig,
        metrics: Arc<Metrics>,
        inventory: reflector::Store<ConfigMap>,
        revisions: reflector::Store<ConfigMap>,
    ) -> Self {
        // One owner per object: the provider named by `cluster.x-k8s.io/provider`.
        let ownership =
            crate::names::ownership(&config.adoptable_managers, &config.retired_managers);
        let mut applier = Applier::new(client.clone(), FIELD_MANAGER, ownership);
        if let Some(identities) = &config.identities {
            applier = applier.with_identities(identities.clone());
        }
        let cache = LiveCache::new(
            client.clone(),
            &applier,
            Namespaces::Only(vec![config.namespace.clone()]),
        );
        let records = &config.installer_namespace;
        let store =
            InventoryStore::new(client.clone(), records, INVENTORY_CONFIGMAP, FIELD_MANAGER);
        Context {
            applier: applier.with_cache(cache.clone()),
            cache,
            inventories: Inventories::new(store, inventory, records, INVENTORY_CONFIGMAP),
            revisions: Revisions::new(client.clone(), records, revisions),
            resolver: tokio::sync::Mutex::new(None),
            events: Events::new(client.clone(), config.instance.clone(), &config.namespace),
            render: RenderContext {
                namespace: config.namespace.clone(),
                images: config.images.clone(),
                // Per pass: the round's, from the settings and the cluster's TLS profile.
                substitutions: Default::default(),
                unavailable: Default::default(),
                policy: config.policy.clone(),
                // Shared by every pass's context (a clone of this one): a provider's text is parsed
                // once, not at every pass that plans it.
                parsed: Default::default(),
                // Per pass: the round's, from `Proxy/cluster` and the `CompatibilityRequirement`s.
                proxy: Default::default(),
                requirements: Vec::new(),
            },
            client,
            config,
            metrics,
            history: Mutex::default(),
        }
    }

    /// From now on the writes of source `id` are provider `label`'s identity's (when the installer
    /// writes as the providers, [`InstallerConfig::identities`]).
    pub(crate) fn act_as(&self, id: &SourceId, label: &str) {
        if let Some(identities) = self.applier.identities() {
            crate::names::act_as(identities, &self.config.installer_namespace, id, label);
        }
    }

    /// The CRDs on the cluster, ours and others', with their accepted names and, for ours, the
    /// provider that installed them: what a round's plans claim names after ([`Round::with_live_crds`]).
    /// From the watch cache (one watch of every CRD, which the applier needs anyway); when it has not
    /// listed within a few seconds, what it has (a name the API server then refuses is found again in
    /// the next pass, once it has).
    pub(crate) async fn live_crds(&self) -> Vec<(String, CrdNames, Option<String>)> {
        let (group, kind) = ("apiextensions.k8s.io", "CustomResourceDefinition");
        self.cache
            .ensure_watched(&ApiResource::erase::<CustomResourceDefinition>(&()), false);
        if !self.cache.is_kind_synced(group, kind)
            && !self.cache.wait_synced(Duration::from_secs(10)).await
        {
            tracing::warn!(
                "the CustomResourceDefinition watch has not listed yet; CRD names are checked against what it has"
            );
        }
        let ownership = self.applier.ownership();
        self.cache
            .every(group, kind)
            .into_iter()
            .filter_map(|(crd, ours)| {
                let name = crd.metadata.name.clone()?;
                let owner = ours
                    .then(|| ownership.owner_of(&crd).map(str::to_string))
                    .flatten();
                Some((name, CrdNames::accepted(&crd.data), owner))
            })
            .collect()
    }

    pub(crate) async fn resolver(&self, refresh: bool) -> Result<KindResolver, ProviderError> {
        let mut cached = self.resolver.lock().await;
        if refresh || cached.is_none() {
            *cached = Some(
                KindResolver::discover(&self.client)
                    .await
                    .map_err(ProviderError::Discovery)?,
            );
        }
        Ok(cached.clone().expect("resolver set"))
    }
}
