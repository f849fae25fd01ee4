//! The installer's control loop.
//!
//! One work item ("the cluster") is reconciled whenever anything it depends on changes: the
//! `Infrastructure/cluster` object, a transport ConfigMap, or any object the installer applied (drift or
//! deletion). A reconcile is a pipeline:
//!
//! 1. read: platform and ConfigMaps from watch caches (no request);
//! 2. render and validate each provider's whole plan (pure, [`crate::provider`]);
//! 3. apply phase by phase with the apply engine, each gate checked against the live cache;
//! 4. record the inventory and prune what the new plan dropped;
//! 5. write status, only when it differs.
//!
//! Nothing is written when nothing changed: unchanged objects are recognized from the cache, the
//! inventory and status are compared before writing, and Events are only sent for real changes.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use capi_apply::{
    Applier, ApplyAction, ApplyError, Inventory, InventoryStore, KindResolver, LiveCache,
    Namespaces, ObjectKey, OwnershipPolicy, Phase, Plan, Readiness, readiness,
};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference};
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::metrics::Metrics;
use crate::platform::{self, PlatformDecision};
use crate::provider::{self, RenderContext, RenderError};
use crate::render;
use crate::sources::{self, NAME_LABEL, Source};
use crate::status::{self, FailureReason, InstallerView, ProviderState, ProviderStatus};

pub const FIELD_MANAGER: &str = "capi-installer";
pub const OWNERSHIP_LABEL_KEY: &str = "app.kubernetes.io/managed-by";
pub const OWNERSHIP_LABEL_VALUE: &str = "capi-installer";
/// One ConfigMap in the installer's namespace, one key per transport ConfigMap: what was applied.
pub const INVENTORY_CONFIGMAP: &str = "capi-installer-inventory";
pub const CLUSTER_OPERATOR: &str = "cluster-api";

/// The user agent of every request: the audit log tells the installer's writes apart by it.
pub fn user_agent() -> String {
    format!("capi-installer/{}", env!("CARGO_PKG_VERSION"))
}

/// Settings of the installer.
#[derive(Clone, Debug)]
pub struct InstallerConfig {
    pub namespace: String,
    pub images: render::Images,
    pub substitutions: BTreeMap<String, String>,
    /// `versions[operator]` of the ClusterOperator (`RELEASE_VERSION`).
    pub release_version: Option<String>,
    /// How long a Deployment may take to become Available before the provider counts as failing.
    pub deployment_timeout: Duration,
    /// How long a CRD may take to become Established.
    pub crd_timeout: Duration,
    /// Reconcile this often even without events (a safety net; reads only when nothing changed).
    pub resync: Duration,
    /// Field managers whose objects the installer may adopt (the release payload applies some CRDs
    /// before the installer runs; see the README on ownership).
    pub adoptable_managers: Vec<String>,
    /// Name of this replica, for Events.
    pub instance: Option<String>,
}

impl Default for InstallerConfig {
    fn default() -> Self {
        InstallerConfig {
            namespace: capi_manifests::TARGET_NAMESPACE.to_string(),
            images: Default::default(),
            substitutions: Default::default(),
            release_version: None,
            deployment_timeout: Duration::from_secs(300),
            crd_timeout: Duration::from_secs(60),
            resync: Duration::from_secs(600),
            adoptable_managers: vec!["cluster-version-operator".into()],
            instance: None,
        }
    }
}

/// Errors that stop the installer as a whole (per-provider failures go to status instead).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("watching {what}: {source}")]
    Watch {
        what: &'static str,
        #[source]
        source: watcher::Error,
    },
    #[error("ClusterOperator {CLUSTER_OPERATOR}: {source}")]
    Status {
        #[source]
        source: kube::Error,
    },
}

/// Per-provider memory between reconciles.
#[derive(Default)]
struct Tracking {
    /// ConfigMap → (first failure, attempts, last counted attempt).
    failures: HashMap<String, (Instant, u32, Instant)>,
    /// ConfigMap → (phase, since) of a readiness gate that is not met yet.
    waiting: HashMap<String, (Phase, Instant)>,
    /// Inventories as last loaded or saved.
    inventories: HashMap<String, Inventory>,
    /// The last view reported, for logs of changes.
    last_view: Option<InstallerView>,
}

/// A failed attempt counts towards `Degraded` only when it comes at least this long after the previous
/// counted one: a burst of watch events must not turn one transient error into "3 attempts".
const ATTEMPT_SPACING: Duration = Duration::from_secs(5);

/// What a reconcile asks of the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Nothing pending: wait for an event (or the resync).
    Idle,
    /// Waiting for readiness: events will come, but re-check after this as a fallback.
    Poll(Duration),
    /// Failed: retry after this backoff.
    Retry(Duration),
}

pub struct Installer {
    client: Client,
    config: InstallerConfig,
    context: RenderContext,
    applier: Applier,
    cache: LiveCache,
    inventory: InventoryStore,
    recorder: Recorder,
    resolver: tokio::sync::Mutex<Option<KindResolver>>,
    infrastructure: reflector::Store<DynamicObject>,
    configmaps: reflector::Store<ConfigMap>,
    tracking: Mutex<Tracking>,
    metrics: Arc<Metrics>,
    wake: Arc<Notify>,
    /// The watches feeding `wake`; they end with the installer, not with the runtime.
    watches: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for Installer {
    fn drop(&mut self) {
        for watch in &self.watches {
            watch.abort();
        }
    }
}

fn infrastructure_resource() -> ApiResource {
    ApiResource {
        group: "config.openshift.io".into(),
        version: "v1".into(),
        api_version: "config.openshift.io/v1".into(),
        kind: "Infrastructure".into(),
        plural: "infrastructures".into(),
    }
}

fn cluster_operator_resource() -> ApiResource {
    ApiResource {
        group: "config.openshift.io".into(),
        version: "v1".into(),
        api_version: "config.openshift.io/v1".into(),
        kind: "ClusterOperator".into(),
        plural: "clusteroperators".into(),
    }
}

fn cluster_operator_reference() -> ObjectReference {
    ObjectReference {
        api_version: Some("config.openshift.io/v1".into()),
        kind: Some("ClusterOperator".into()),
        name: Some(CLUSTER_OPERATOR.into()),
        ..Default::default()
    }
}

impl Installer {
    /// Sets up the watches; nothing is written until [`Installer::run`].
    pub fn new(client: Client, config: InstallerConfig, metrics: Arc<Metrics>) -> Arc<Self> {
        let ownership = OwnershipPolicy::new(OWNERSHIP_LABEL_KEY, OWNERSHIP_LABEL_VALUE)
            .adoptable(config.adoptable_managers.clone());
        let cache = LiveCache::new(
            client.clone(),
            ownership.selector(),
            Namespaces::Only(vec![config.namespace.clone()]),
        );
        let applier = Applier::new(client.clone(), FIELD_MANAGER, ownership);
        let inventory = InventoryStore::new(
            client.clone(),
            &config.namespace,
            INVENTORY_CONFIGMAP,
            FIELD_MANAGER,
        );
        let recorder = Recorder::new(
            client.clone(),
            Reporter {
                controller: "capi-installer".into(),
                instance: config.instance.clone(),
            },
        );
        let wake = Arc::new(Notify::new());

        let writer = reflector::store::Writer::new(infrastructure_resource());
        let infrastructure = writer.as_reader();
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &infrastructure_resource());
        let stream = watcher(
            api,
            watcher::Config::default().fields("metadata.name=cluster"),
        )
        .default_backoff()
        .reflect(writer);
        let infrastructure_watch = spawn_trigger("Infrastructure cluster", stream, wake.clone());

        let (configmaps, writer) = reflector::store();
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), &config.namespace);
        let stream = watcher(api, watcher::Config::default().labels(NAME_LABEL))
            .default_backoff()
            .reflect(writer);
        let configmaps_watch = spawn_trigger("transport ConfigMaps", stream, wake.clone());

        let context = RenderContext {
            namespace: config.namespace.clone(),
            images: config.images.clone(),
            substitutions: config.substitutions.clone(),
        };
        Arc::new(Installer {
            client,
            config,
            context,
            applier,
            cache,
            inventory,
            recorder,
            resolver: tokio::sync::Mutex::new(None),
            infrastructure,
            configmaps,
            tracking: Mutex::new(Tracking::default()),
            metrics,
            wake,
            watches: vec![infrastructure_watch, configmaps_watch],
        })
    }

    /// Reconciles until `shutdown` resolves. Work in progress when it does is finished first (a reconcile
    /// is never cut in the middle of a phase).
    pub async fn run(self: Arc<Self>, shutdown: impl std::future::Future<Output = ()>) {
        let mut changes = self.cache.subscribe();
        let wake = self.wake.clone();
        tokio::spawn(async move {
            loop {
                match changes.recv().await {
                    Ok(key) => tracing::trace!(object = %key, "managed object changed"),
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                }
                wake.notify_one();
            }
        });

        tokio::pin!(shutdown);
        let _ = tokio::time::timeout(Duration::from_secs(30), async {
            tokio::join!(
                self.infrastructure.wait_until_ready(),
                self.configmaps.wait_until_ready()
            )
        })
        .await;
        let mut next = Next::Retry(Duration::ZERO);
        loop {
            let delay = match next {
                Next::Idle => self.config.resync,
                Next::Poll(d) | Next::Retry(d) => d,
            };
            tokio::select! {
                _ = &mut shutdown => break,
                _ = self.wake.notified() => {}
                _ = tokio::time::sleep(delay) => {}
            }
            // Coalesce a burst of events (an apply of 30 objects echoes 30 watch events) into one reconcile.
            tokio::time::sleep(Duration::from_millis(200)).await;
            next = self.reconcile().await;
        }
        tracing::info!("installer stopped");
    }

    /// One pass over the whole cluster.
    pub async fn reconcile(&self) -> Next {
        let started = Instant::now();
        let infra = self.infrastructure.get(&reflector::ObjectRef::new_with(
            "cluster",
            infrastructure_resource(),
        ));
        let decision = platform::decide(infra.as_ref().and_then(|i| i.data.get("status")));
        let (view, related, next) = match &decision {
            PlatformDecision::Unset => (InstallerView::WaitingForPlatform, vec![], Next::Idle),
            PlatformDecision::Unsupported { platform, reason } => (
                InstallerView::Unsupported {
                    platform: platform.clone(),
                    reason: reason.clone(),
                },
                vec![],
                Next::Idle,
            ),
            PlatformDecision::Supported(p) => self.install(&p.platform, p.provider_name).await,
        };
        self.log_view(&decision, &view);
        let result = match &view {
            InstallerView::Installing { providers, .. }
                if providers
                    .iter()
                    .any(|p| matches!(p.state, ProviderState::Failed { .. })) =>
            {
                "error"
            }
            _ => "success",
        };
        self.metrics.observe_reconcile(result, started.elapsed());
        if let InstallerView::Installing {
            providers, missing, ..
        } = &view
            && missing.is_empty()
            && providers
                .iter()
                .all(|p| p.state == ProviderState::Installed)
        {
            self.metrics.mark_success();
        }
        if let Err(e) = self.write_status(&view, &related).await {
            tracing::warn!(error = %e, "cannot write ClusterOperator status; retrying");
            return Next::Retry(Duration::from_secs(5));
        }
        next
    }

    fn log_view(&self, decision: &PlatformDecision, view: &InstallerView) {
        let mut tracking = self.tracking.lock().expect("tracking poisoned");
        if tracking.last_view.as_ref() != Some(view) {
            match view {
                InstallerView::WaitingForPlatform => {
                    tracing::info!(
                        "Infrastructure cluster has no status.platformStatus.type yet; waiting"
                    )
                }
                InstallerView::Unsupported { platform, reason } => {
                    tracing::info!(%platform, %reason, "platform not supported; installing nothing")
                }
                InstallerView::Installing {
                    providers, missing, ..
                } => {
                    for p in providers {
                        tracing::info!(configmap = %p.configmap, version = ?p.version, state = ?p.state, "provider");
                    }
                    if !missing.is_empty() {
                        tracing::info!(?missing, ?decision, "waiting for transport ConfigMaps");
                    }
                }
            }
            tracking.last_view = Some(view.clone());
        }
    }

    async fn install(
        &self,
        platform: &str,
        infra: &'static str,
    ) -> (InstallerView, Vec<Value>, Next) {
        let configmaps: Vec<ConfigMap> = self
            .configmaps
            .state()
            .iter()
            .map(|c| (**c).clone())
            .collect();
        let selected = sources::select(&configmaps, Some(infra));
        let missing: Vec<String> = sources::missing(&selected, infra)
            .into_iter()
            .map(|(name, kind)| format!("{name} ({})", kind.label_value()))
            .collect();

        let mut providers = Vec::new();
        let mut related: BTreeSet<String> = BTreeSet::new();
        let mut blocked_by: Option<String> = None;
        let mut next = Next::Idle;
        for source in &selected {
            let state = match &blocked_by {
                Some(behind) => ProviderState::Blocked {
                    behind: behind.clone(),
                },
                None => {
                    let (state, plan) = self.install_provider(source).await;
                    if let Some(plan) = plan {
                        related.extend(related_objects(&plan).iter().map(Value::to_string));
                    }
                    state
                }
            };
            // Core completes before infrastructure starts; a failing provider whose previous version is
            // still in place does not hold the others back.
            let serving = matches!(
                state,
                ProviderState::Installed
                    | ProviderState::Failed {
                        previously_installed: true,
                        ..
                    }
            );
            if !serving && blocked_by.is_none() {
                blocked_by = Some(source.configmap.clone());
            }
            next = merge_next(next, self.next_for(&source.configmap, &state));
            providers.push(ProviderStatus {
                configmap: source.configmap.clone(),
                provider_name: source.provider_name.clone(),
                version: source.version.clone(),
                state,
            });
        }
        let mut related: Vec<Value> = related
            .iter()
            .filter_map(|r| serde_json::from_str(r).ok())
            .collect();
        related.insert(
            0,
            json!({"group": "", "resource": "namespaces", "name": self.config.namespace}),
        );
        (
            InstallerView::Installing {
                platform: platform.to_string(),
                missing,
                providers,
            },
            related,
            next,
        )
    }

    fn next_for(&self, configmap: &str, state: &ProviderState) -> Next {
        match state {
            ProviderState::Installed | ProviderState::Blocked { .. } => Next::Idle,
            ProviderState::Progressing { .. } => Next::Poll(Duration::from_secs(5)),
            ProviderState::Failed { .. } => {
                let attempts = self
                    .tracking
                    .lock()
                    .expect("tracking poisoned")
                    .failures
                    .get(configmap)
                    .map(|f| f.1)
                    .unwrap_or(1);
                Next::Retry(Duration::from_secs(
                    (5u64 << attempts.saturating_sub(1).min(4)).min(60),
                ))
            }
        }
    }

    async fn resolver(&self, refresh: bool) -> Result<KindResolver, kube::Error> {
        let mut cached = self.resolver.lock().await;
        if refresh || cached.is_none() {
            *cached = Some(KindResolver::discover(&self.client).await?);
        }
        Ok(cached.clone().expect("resolver set"))
    }

    async fn plan_provider(&self, source: &Source) -> Result<Plan, (FailureReason, String)> {
        let Some(cm) = self
            .configmaps
            .get(&reflector::ObjectRef::new(&source.configmap).within(&self.config.namespace))
        else {
            return Err((
                FailureReason::ApplyFailed,
                "the ConfigMap disappeared".into(),
            ));
        };
        let cm = serde_json::to_value(&*cm).map(|mut v| {
            v["apiVersion"] = json!("v1");
            v["kind"] = json!("ConfigMap");
            v
        });
        let cm = cm.map_err(|e| (FailureReason::InvalidProviderManifests, e.to_string()))?;
        let api_error = |e: kube::Error| (reason_of_kube_error(&e), format!("discovery: {e}"));
        let resolver = self.resolver(false).await.map_err(api_error)?;
        let result = provider::render_and_plan(&cm, source, &self.context, &resolver);
        // A kind served by a CRD created since the last discovery: discover again, once.
        let result = match result {
            Err(RenderError::Plan(errors))
                if errors
                    .0
                    .iter()
                    .any(|e| matches!(e, capi_apply::PlanError::UnknownKind { .. })) =>
            {
                let resolver = self.resolver(true).await.map_err(api_error)?;
                provider::render_and_plan(&cm, source, &self.context, &resolver)
            }
            other => other,
        };
        match result {
            Ok((plan, rendered)) => {
                if !rendered.stripped.is_empty() {
                    tracing::debug!(configmap = %source.configmap, fields = ?rendered.stripped,
                        "removed fields that other controllers own (service-ca, clusterrole aggregation)");
                }
                Ok(plan)
            }
            Err(e) => Err((FailureReason::InvalidProviderManifests, e.to_string())),
        }
    }

    async fn inventory_of(&self, configmap: &str) -> Result<Inventory, (FailureReason, String)> {
        if let Some(inv) = self
            .tracking
            .lock()
            .expect("tracking poisoned")
            .inventories
            .get(configmap)
        {
            return Ok(inv.clone());
        }
        let inv = self
            .inventory
            .load(configmap)
            .await
            .map_err(|e| (FailureReason::ApplyFailed, e.to_string()))?;
        self.tracking
            .lock()
            .expect("tracking poisoned")
            .inventories
            .insert(configmap.into(), inv.clone());
        Ok(inv)
    }

    async fn save_inventory(&self, inv: &Inventory) -> Result<(), (FailureReason, String)> {
        let wrote = self.inventory.save(inv).await.map_err(|e| {
            let reason = match &e {
                capi_apply::InventoryError::Api { source, .. } => reason_of_kube_error(source),
                _ => FailureReason::ApplyFailed,
            };
            (reason, e.to_string())
        })?;
        if wrote {
            tracing::info!(owner = %inv.owner, objects = inv.entries.len(), "inventory recorded");
        }
        self.tracking
            .lock()
            .expect("tracking poisoned")
            .inventories
            .insert(inv.owner.clone(), inv.clone());
        Ok(())
    }

    /// Plans and applies one provider; returns where it stands and the plan when there is one.
    async fn install_provider(&self, source: &Source) -> (ProviderState, Option<Plan>) {
        let plan = match self.plan_provider(source).await {
            Ok(plan) => plan,
            Err((reason, message)) => return (self.failed(source, reason, message).await, None),
        };
        match self.apply_plan(source, &plan).await {
            Ok(state) => {
                if matches!(
                    state,
                    ProviderState::Installed | ProviderState::Progressing { .. }
                ) {
                    let mut tracking = self.tracking.lock().expect("tracking poisoned");
                    tracking.failures.remove(&source.configmap);
                }
                (state, Some(plan))
            }
            Err((reason, message)) => (self.failed(source, reason, message).await, Some(plan)),
        }
    }

    async fn apply_plan(
        &self,
        source: &Source,
        plan: &Plan,
    ) -> Result<ProviderState, (FailureReason, String)> {
        let owner = source.configmap.as_str();
        let old = self.inventory_of(owner).await?;
        let new = Inventory::from_plan(owner, plan);
        // Record what is about to be created before creating it: an installer killed in the middle of a
        // phase must still know, after a restart, every object it may have left behind.
        let mut union = old.clone();
        for (key, phase) in &new.entries {
            union.insert(key.clone(), *phase);
        }
        if union != old {
            self.save_inventory(&union).await?;
        }

        for phase in &plan.phases {
            for (resource, namespaced) in phase.resources() {
                self.cache.ensure_watched(&resource, namespaced);
            }
            if !self.cache.wait_synced(Duration::from_secs(10)).await {
                tracing::debug!(
                    "watch caches not synced yet; unseen objects are read before they are written"
                );
            }
            let phase_started = Instant::now();
            let outcome = self
                .applier
                .apply_phase(phase, |key| self.cache.get(key))
                .await;
            self.metrics
                .observe_phase(phase.phase, phase_started.elapsed());
            let mut fresh: HashMap<ObjectKey, DynamicObject> = HashMap::new();
            // One Event per phase and kind of write (Created, Configured, Adopted), not one per object:
            // a cold install would otherwise write as many Events as objects.
            let mut written: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
            for applied in outcome.outcomes {
                if applied.action != ApplyAction::Unchanged {
                    self.metrics.count_applied(applied.action);
                    let verb = match applied.action {
                        ApplyAction::Created => "Created",
                        ApplyAction::Configured => "Configured",
                        ApplyAction::Adopted => "Adopted",
                        ApplyAction::Unchanged => unreachable!(),
                    };
                    tracing::info!(configmap = %owner, object = %applied.key, action = verb, phase = ?phase.phase, "applied");
                    written
                        .entry(verb)
                        .or_default()
                        .push(applied.key.to_string());
                }
                fresh.insert(applied.key.clone(), applied.object);
            }
            for (reason, keys) in &written {
                self.event(
                    EventType::Normal,
                    reason,
                    &format!("Apply{:?}", phase.phase),
                    Some(self.configmap_reference(owner)),
                    format!(
                        "ConfigMap {owner}, phase {:?}: {} {}: {}",
                        phase.phase,
                        reason.to_lowercase(),
                        keys.len(),
                        keys.join(", ")
                    ),
                )
                .await;
            }
            if let Some(first) = outcome.errors.first() {
                let message = outcome
                    .errors
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ");
                self.event(
                    EventType::Warning,
                    "ApplyFailed",
                    &format!("Apply{:?}", phase.phase),
                    Some(self.configmap_reference(owner)),
                    message.clone(),
                )
                .await;
                return Err((reason_of_apply_error(first), message));
            }
            if let Some(waiting) = self.gate(owner, phase, &fresh) {
                return waiting;
            }
        }

        if !old.stale(&new).is_empty() {
            let resolver = self
                .resolver(false)
                .await
                .map_err(|e| (reason_of_kube_error(&e), e.to_string()))?;
            let targets = old.prune_targets(&new, &resolver);
            let report = capi_apply::prune(&self.client, targets, self.applier.ownership()).await;
            for key in &report.deleted {
                self.applier.forget(key);
                self.metrics.count_pruned();
                tracing::info!(configmap = %owner, object = %key, "pruned: the new version no longer contains it");
                self.event(
                    EventType::Normal,
                    "Pruned",
                    "Prune",
                    Some(object_reference(key)),
                    format!("{key} (ConfigMap {owner})"),
                )
                .await;
            }
            let mut keep = new.clone();
            for (key, reason) in &report.kept {
                tracing::warn!(configmap = %owner, object = %key, %reason, "not pruned");
                self.event(
                    EventType::Warning,
                    "PruneSkipped",
                    "Prune",
                    Some(object_reference(key)),
                    format!("{key}: {reason}"),
                )
                .await;
            }
            keep.retain_from(&old, report.retry_keys());
            self.save_inventory(&keep).await?;
        } else if union != new {
            self.save_inventory(&new).await?;
        }
        Ok(ProviderState::Installed)
    }

    /// Checks a phase's readiness gate. `None` when the phase is done; otherwise the provider's state.
    fn gate(
        &self,
        owner: &str,
        phase: &capi_apply::PlannedPhase,
        fresh: &HashMap<ObjectKey, DynamicObject>,
    ) -> Option<Result<ProviderState, (FailureReason, String)>> {
        let (timeout, reason) = match phase.phase {
            Phase::CustomResourceDefinitions => (
                self.config.crd_timeout,
                FailureReason::CustomResourceDefinitionNotEstablished,
            ),
            Phase::Workloads => (
                self.config.deployment_timeout,
                FailureReason::DeploymentNotAvailable,
            ),
            _ => return None,
        };
        let not_ready: Vec<(ObjectKey, Readiness)> = phase
            .objects
            .iter()
            .filter_map(|o| {
                let cached = self.cache.get(&o.key);
                let live = newest(cached.as_deref(), fresh.get(&o.key));
                let r = match live {
                    Some(obj) => readiness(&o.key.group, &o.key.kind, obj),
                    None => Readiness::NotFound,
                };
                (!r.is_current()).then(|| (o.key.clone(), r))
            })
            .collect();
        let mut tracking = self.tracking.lock().expect("tracking poisoned");
        if not_ready.is_empty() {
            tracking.waiting.remove(owner);
            return None;
        }
        let since = match tracking.waiting.get(owner) {
            Some((p, since)) if *p == phase.phase => *since,
            _ => {
                tracking
                    .waiting
                    .insert(owner.to_string(), (phase.phase, Instant::now()));
                Instant::now()
            }
        };
        let what = not_ready
            .iter()
            .map(|(k, r)| format!("{k}: {r}"))
            .collect::<Vec<_>>()
            .join("; ");
        if since.elapsed() > timeout {
            return Some(Err((
                reason,
                format!("not ready after {}s: {what}", timeout.as_secs()),
            )));
        }
        let message = match phase.phase {
            Phase::CustomResourceDefinitions => {
                format!("waiting for CustomResourceDefinitions to be Established: {what}")
            }
            _ => format!("waiting for workloads to become Available: {what}"),
        };
        Some(Ok(ProviderState::Progressing { message }))
    }

    async fn failed(
        &self,
        source: &Source,
        reason: FailureReason,
        message: String,
    ) -> ProviderState {
        let previously_installed = self
            .inventory_of(&source.configmap)
            .await
            .map(|inv| !inv.entries.is_empty())
            .unwrap_or(false);
        let (attempts, failing_for) = {
            let mut tracking = self.tracking.lock().expect("tracking poisoned");
            let now = Instant::now();
            let entry = tracking
                .failures
                .entry(source.configmap.clone())
                .or_insert((now, 0, now));
            if entry.1 == 0 || now.duration_since(entry.2) >= ATTEMPT_SPACING {
                entry.1 += 1;
                entry.2 = now;
            }
            (entry.1, now.duration_since(entry.0))
        };
        self.metrics.count_error(reason.as_str());
        tracing::warn!(configmap = %source.configmap, reason = reason.as_str(), attempts, %message, "provider failed");
        ProviderState::Failed {
            reason,
            message,
            attempts,
            failing_for,
            previously_installed,
        }
    }

    fn configmap_reference(&self, name: &str) -> ObjectReference {
        ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("ConfigMap".into()),
            namespace: Some(self.config.namespace.clone()),
            name: Some(name.into()),
            ..Default::default()
        }
    }

    /// Records an Event on the ClusterOperator. The recorder folds events with the same reason, action
    /// and related object into one series (keeping the first note), so `action` and `related` must tell
    /// different steps apart: the phase, and the ConfigMap or object concerned.
    async fn event(
        &self,
        type_: EventType,
        reason: &str,
        action: &str,
        related: Option<ObjectReference>,
        note: String,
    ) {
        let mut note = note;
        if note.len() > 1000 {
            let mut cut = 1000;
            while !note.is_char_boundary(cut) {
                cut -= 1;
            }
            note.truncate(cut);
        }
        let event = Event {
            type_,
            reason: reason.into(),
            note: Some(note),
            action: action.into(),
            secondary: related,
        };
        if let Err(e) = self
            .recorder
            .publish(&event, &cluster_operator_reference())
            .await
        {
            tracing::debug!(error = %e, "cannot record event");
        }
    }

    async fn write_status(&self, view: &InstallerView, related: &[Value]) -> Result<(), Error> {
        let api: Api<DynamicObject> =
            Api::all_with(self.client.clone(), &cluster_operator_resource());
        let current = api
            .get_opt(CLUSTER_OPERATOR)
            .await
            .map_err(|source| Error::Status { source })?;
        let params = PatchParams::apply(FIELD_MANAGER).force();
        if current.is_none() {
            let object = json!({
                "apiVersion": "config.openshift.io/v1",
                "kind": "ClusterOperator",
                "metadata": {"name": CLUSTER_OPERATOR},
                "spec": {},
            });
            api.patch(CLUSTER_OPERATOR, &params, &Patch::Apply(&object))
                .await
                .map_err(|source| Error::Status { source })?;
            tracing::info!("created ClusterOperator {CLUSTER_OPERATOR}");
        }
        let current_status = current.as_ref().and_then(|c| c.data.get("status"));
        let now = now_rfc3339();
        let desired = status::cluster_operator_status(
            &status::conditions(view),
            current_status,
            &now,
            self.config.release_version.as_deref(),
            related,
        );
        if !status::differs(current_status, &desired) {
            return Ok(());
        }
        let body = json!({
            "apiVersion": "config.openshift.io/v1",
            "kind": "ClusterOperator",
            "metadata": {"name": CLUSTER_OPERATOR},
            "status": desired,
        });
        api.patch_status(CLUSTER_OPERATOR, &params, &Patch::Apply(&body))
            .await
            .map_err(|source| Error::Status { source })?;
        tracing::debug!("ClusterOperator status written");
        Ok(())
    }
}

fn spawn_trigger<K, S>(
    what: &'static str,
    stream: S,
    wake: Arc<Notify>,
) -> tokio::task::JoinHandle<()>
where
    S: futures::Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
    K: Send + 'static,
{
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            match event {
                Ok(
                    watcher::Event::Apply(_) | watcher::Event::Delete(_) | watcher::Event::InitDone,
                ) => wake.notify_one(),
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(error = %Error::Watch { what, source: e }, "watch failed; retrying")
                }
            }
        }
    })
}

fn object_reference(key: &ObjectKey) -> ObjectReference {
    ObjectReference {
        api_version: Some(key.api_version()),
        kind: Some(key.kind.clone()),
        namespace: key.namespace.clone(),
        name: Some(key.name.clone()),
        ..Default::default()
    }
}

fn merge_next(a: Next, b: Next) -> Next {
    let d = |n: Next| match n {
        Next::Idle => None,
        Next::Poll(d) | Next::Retry(d) => Some(d),
    };
    match (d(a), d(b)) {
        (None, _) => b,
        (_, None) => a,
        (Some(x), Some(y)) => {
            if x <= y {
                a
            } else {
                b
            }
        }
    }
}

/// The newer of the cached object and the one a write just returned (the cache may lag behind the
/// write; trusting it could pass a gate on the previous generation of a Deployment).
fn newest<'a>(
    cached: Option<&'a DynamicObject>,
    fresh: Option<&'a DynamicObject>,
) -> Option<&'a DynamicObject> {
    let version = |o: &DynamicObject| {
        o.resource_version()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    match (cached, fresh) {
        (Some(c), Some(f)) => Some(if version(f) > version(c) { f } else { c }),
        (c, f) => c.or(f),
    }
}

/// `relatedObjects` entries for a plan: its cluster-scoped objects, and the instance kinds of its CRDs
/// (so `oc adm inspect` gathers the Cluster API resources too).
fn related_objects(plan: &Plan) -> Vec<Value> {
    let mut out = Vec::new();
    for o in plan.objects() {
        if !o.namespaced {
            out.push(json!({"group": o.resource.group, "resource": o.resource.plural, "name": o.key.name}));
        }
        if o.key.kind == "CustomResourceDefinition" {
            let spec = o.object.data.get("spec");
            if let (Some(group), Some(plural)) = (
                spec.and_then(|s| s.get("group")).and_then(Value::as_str),
                spec.and_then(|s| s.pointer("/names/plural"))
                    .and_then(Value::as_str),
            ) {
                out.push(json!({"group": group, "resource": plural, "name": ""}));
            }
        }
    }
    out
}

fn reason_of_kube_error(e: &kube::Error) -> FailureReason {
    match e {
        kube::Error::Api(status) if status.code == 403 => FailureReason::Forbidden,
        _ => FailureReason::ApplyFailed,
    }
}

fn reason_of_apply_error(e: &ApplyError) -> FailureReason {
    match e {
        ApplyError::Conflict { .. } => FailureReason::OwnershipConflict,
        ApplyError::Api { source, .. } => reason_of_kube_error(source),
        _ => FailureReason::ApplyFailed,
    }
}

fn now_rfc3339() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}
