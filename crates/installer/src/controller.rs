//! The installer's control loop: watches → reconcile → report.
//!
//! One work item ("the cluster") is reconciled whenever anything it depends on changes: the
//! `Infrastructure/cluster` object, a provider source, or any object the installer applied (drift or
//! deletion). A reconcile is:
//!
//! 1. [`desired`]: the providers the platform and the `InfrastructureProvider` objects need, and the
//!    providers to uninstall (pure);
//! 2. [`Round::new`]: the available sources that provide them (pure, from watch caches), and what
//!    rendering needs this pass (see [`crate::round`]);
//! 3. every provider planned, in install order, by the round's planner ([`reconcile::prepare`], pure
//!    but for discovery); then reconciled ([`reconcile::reconcile`] → [`Outcome`], see
//!    [`crate::reconcile`]) as [`order::admit`] lets it (who waits for whom): core first, then every
//!    infrastructure provider's chain at once ([`order::chains`]); then each uninstall
//!    ([`reconcile::uninstall`]). When only some providers' objects or inputs (a source's payload, a
//!    rollback request) changed since the last pass of the same round, only those providers, the ones
//!    due and the ones the pass admits otherwise are planned and reconciled ([`rows`]): a drift
//!    is repaired, or a new payload applied, without rendering the others;
//! 4. [`report`]: conditions, versions and `relatedObjects` from the outcomes, each provider's record
//!    and each `InfrastructureProvider`'s status; written only when they differ from what is stored.
//!
//! Nothing is written when nothing changed: unchanged objects are recognized from the cache, the
//! inventory, records and status are compared before writing, and Events are only sent for real
//! changes. The providers' records of one pass are stored together, in one write, before its status.

mod requests;
mod rows;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use capi_openshift::resources::{
    APISERVER, APISERVER_NAME, CLUSTER_OPERATOR, CLUSTER_OPERATOR_NAME, COMPATIBILITY_REQUIREMENT,
    PROXY, PROXY_NAME,
};
use capi_openshift::{INFRASTRUCTURE, INFRASTRUCTURE_NAME};
use capi_runtime::pace::{self, Coalesce, Pass};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::Client;
use kube::api::{Api, DynamicObject};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use tokio::sync::Notify;

use crate::api;
use crate::compute::{self, Step};
use crate::config::{InstallerConfig, ProfilesConfig};
use crate::desired::{self, Desired, Wanted, Wants};
use crate::error::ProviderError;
use crate::extensions;
use crate::history::History;
use crate::inventory::ProviderRecord;
use crate::metrics::Metrics;
use crate::names::INVENTORY_CONFIGMAP;
use crate::order::{self, Admit};
use crate::outcome::{Outcome, ProviderState, Removal};
use crate::policy;
use crate::proxy::ClusterProxy;
use crate::reconcile::{self, Context};
use crate::report;
use crate::report::operator::KnownOperator;
use crate::report::pinned_crds::PinnedCrds;
use crate::revision;
use crate::round::{self, Planner, Round};
use crate::source::profile::ProfileCatalog;
use crate::source::{self, SourceCatalog, SourceError, SourceId, Target, configmap};
use crate::tls;
use crate::unmanaged::{self, Unmanaged, UnmanagedError};
use capi_compat::{Requirement, RequirementError};
use capi_runtime::optional_watch::{OptionalKind, Wake};
use capi_runtime::trigger::spawn_trigger;
use capi_status::cluster_api::Recording;
use capi_status::conditions::{self, Observed, Unselected};
use rows::{Changes, Plan, ProviderInputs, Row, Rows, Todo};

/// What a reconcile asks of the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// Nothing pending: wait for an event (or the resync).
    Idle,
    /// Waiting for readiness: events will come, but re-check after this as a fallback.
    Poll(Duration),
    /// Failed: retry after this backoff.
    Retry(Duration),
}

impl Next {
    fn delay(self) -> Option<Duration> {
        match self {
            Next::Idle => None,
            Next::Poll(d) | Next::Retry(d) => Some(d),
        }
    }

    /// The sooner of two.
    fn min(self, other: Next) -> Next {
        match (self.delay(), other.delay()) {
            (None, _) => other,
            (Some(a), Some(b)) if b < a => other,
            _ => self,
        }
    }

    /// The next of a pass whose providers are next due at `due`.
    fn until(due: Option<Instant>) -> Next {
        match due {
            Some(due) => Next::Poll(due.saturating_duration_since(Instant::now())),
            None => Next::Idle,
        }
    }

    /// When a provider with this outcome is due again, counted from `now`.
    fn due(outcome: &Outcome, now: Instant) -> Option<Instant> {
        Next::of(outcome).delay().map(|d| now + d)
    }

    fn of(outcome: &Outcome) -> Next {
        // A workload that lost its availability wakes the installer when it changes (the watch of
        // its kind); the one thing no event announces is that it has lasted long enough to degrade.
        let degrades_in = outcome
            .unavailable
            .iter()
            .filter(|u| !u.persistent())
            .map(|u| u.tolerated - u.lasted + Duration::from_secs(1))
            .min();
        let next = match &outcome.state {
            ProviderState::Installed | ProviderState::Blocked { .. } => Next::Idle,
            ProviderState::Progressing { .. } => Next::Poll(Duration::from_secs(5)),
            // A rollback holds until the source's content changes: its watch says when.
            ProviderState::Failed { error, .. } if error.waits_for_change() => Next::Idle,
            ProviderState::Failed { attempts, .. } => Next::Retry(History::retry_delay(*attempts)),
        };
        match degrades_in {
            Some(d) => next.min(Next::Poll(d)),
            None => next,
        }
    }
}

pub struct Installer {
    client: Client,
    config: InstallerConfig,
    /// What every provider's reconcile shares ([`reconcile::Context`]).
    cx: Context,
    infrastructure: reflector::Store<DynamicObject>,
    configmaps: reflector::Store<ConfigMap>,
    inventory: reflector::Store<ConfigMap>,
    revisions: reflector::Store<ConfigMap>,
    /// The `InfrastructureProvider` objects (extra providers, uninstalls).
    infrastructure_providers: OptionalKind,
    /// `ClusterAPI/cluster` (unmanaged CRDs).
    cluster_api: OptionalKind,
    /// `ClusterOperator/cluster-api`, which the pass reports on, as known without a request.
    cluster_operator: KnownOperator,
    /// The ClusterRoles that make the provider RBAC ceiling (the release's and the administrator's).
    ceiling: reflector::Store<ClusterRole>,
    /// The ConfigMaps of the installer's namespace that extend the provider field bound (the
    /// administrator's; the release's own is compiled in as well).
    fields: reflector::Store<ConfigMap>,
    /// `APIServer/cluster` (the TLS profile of the providers' servers).
    apiserver: OptionalKind,
    /// `Proxy/cluster` (the cluster-wide proxy of the providers' Deployments).
    proxy: OptionalKind,
    /// The CompatibilityRequirements' admission registration, which the installer writes.
    registration: OptionalKind,
    /// The `CompatibilityRequirement`s: judged on every CRD a provider brings, and reported on.
    requirements: OptionalKind,
    /// The CRDs they pin, each watched whole: a change by anyone wakes a pass.
    pinned_crds: PinnedCrds,
    /// Every kind of provider source; a new kind is one more catalog. Shared with the blocking pool,
    /// where a source's payload is decoded.
    catalogs: Arc<Vec<Box<dyn SourceCatalog>>>,
    metrics: Arc<Metrics>,
    /// Woken by the watches of what the round and the providers' inputs are made from (the platform,
    /// the sources, the rollback requests, the `InfrastructureProvider`s, the inventory's owners,
    /// `ClusterAPI`, the TLS profile, the proxy, the policy's extensions): a pass of every provider when the
    /// round's fingerprint changed, of the providers whose inputs changed when only those did, of
    /// none when the installer's own writes come back ([`rows`]).
    wake: Arc<Notify>,
    /// What was last logged per provider, so that only changes are logged.
    logged: Mutex<Vec<String>>,
    /// The managed objects that changed since the last pass, and whether some changes were lost.
    changed: Mutex<Changes>,
    /// Woken when `changed` grows.
    objects_changed: Notify,
    /// The providers as the last pass left them: a pass woken only by some providers' objects,
    /// inputs or timers reconciles those alone ([`rows`]).
    rows: Mutex<Option<Rows>>,
    /// The watches feeding `wake`; they end with the installer, not with the runtime.
    watches: Vec<tokio::task::JoinHandle<()>>,
}

/// What the cluster asks for in a pass ([`Installer::gather`]).
struct Asked {
    /// The `InfrastructureProvider` objects, and each as read.
    objects: Vec<Arc<DynamicObject>>,
    requested: Vec<api::Request>,
    /// What they ask for: providers to install besides the platform's, providers to remove.
    requests: desired::Requests,
    desired: Desired,
    unmanaged: Result<Unmanaged, UnmanagedError>,
    /// The `CompatibilityRequirement` objects, each as read (once a pass: judged on the providers'
    /// CRDs, reported on).
    requirements: Vec<(Arc<DynamicObject>, Result<Requirement, RequirementError>)>,
}

/// What installing the wanted providers came to, for the pass's report.
#[derive(Default)]
struct Installed {
    /// Providers required and without a source.
    missing: Vec<Wanted>,
    /// The selected providers, each with its outcome.
    rows: Rows,
    /// The outcomes of the sources refused as second ones of a provider.
    refused: Vec<Outcome>,
    /// Providers installed before and selected no longer.
    unselected: Vec<Unselected>,
    /// The `${VAR}` values the providers were rendered with (a revision records them).
    substitutions: std::collections::BTreeMap<String, String>,
}

impl Installed {
    /// Every outcome of the pass: the selected providers', in install order, then the refused sources'.
    fn outcomes(&self) -> impl Iterator<Item = &Outcome> {
        self.rows.outcomes().chain(&self.refused)
    }

    /// What the next pass keeps: the table, unless a second source was refused (its outcome
    /// stands for no row).
    fn kept(self) -> Option<Rows> {
        self.refused.is_empty().then(|| self.rows.kept()).flatten()
    }
}

/// Gather a burst of events (an apply of 30 objects echoes 30 watch events) into one pass: until they
/// pause, not for a fixed time (a cold install waits for a gate several times, and each pass started
/// a fixed 200 ms late).
const COALESCE: Coalesce = Coalesce {
    quiet: Duration::from_millis(40),
    at_most: Duration::from_millis(200),
};

/// The installer's passes, and when the last one asked to be woken.
struct Passes {
    installer: Arc<Installer>,
    next: Next,
}

impl Pass for Passes {
    async fn pass(&mut self, woken: pace::Woken) -> Duration {
        // The resync makes a pass of every provider; the watches and managed objects alone may make
        // a pass of their providers; a gate's, a retry's or an availability's timer is for the
        // providers not settled, which a limited pass reconciles too.
        let resync = woken.timer() && self.next.delay().is_none();
        let installer = &self.installer;
        let mut changed = std::mem::take(&mut *installer.changed.lock().expect("changed objects"));
        changed.everything |= resync;
        self.next = installer.pass(changed).await;
        self.next.delay().unwrap_or(installer.config.resync)
    }
}

impl Drop for Installer {
    fn drop(&mut self) {
        for watch in &self.watches {
            watch.abort();
        }
    }
}

impl Installer {
    /// Sets up the watches; nothing is written until [`Installer::run`].
    pub fn new(client: Client, config: InstallerConfig, metrics: Arc<Metrics>) -> Arc<Self> {
        let wake = Arc::new(Notify::new());
        let (infrastructure, infrastructure_watch) = watch_infrastructure(&client, &wake);

        let watch_configmaps = |what, namespace: &str, selector: watcher::Config| {
            let (store, writer) = reflector::store();
            let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
            let stream = watcher(api, selector).default_backoff().reflect(writer);
            (store, spawn_trigger(what, stream, wake.clone()))
        };
        let (configmaps, configmaps_watch) = watch_configmaps(
            "transport ConfigMaps",
            &config.namespace,
            watcher::Config::default().labels(configmap::SELECTOR),
        );
        // The inventory is watched too: deleted or edited, it is repaired at once.
        let (inventory, inventory_watch) = watch_configmaps(
            "the inventory ConfigMap",
            &config.installer_namespace,
            watcher::Config::default().fields(&format!("metadata.name={INVENTORY_CONFIGMAP}")),
        );
        // The revisions too: `capi-installer rollback` writes its request there.
        let (revisions, revisions_watch) = watch_configmaps(
            "the revisions ConfigMaps",
            &config.installer_namespace,
            watcher::Config::default().labels(revision::LABEL),
        );
        let (infrastructure_providers, providers_watch) = OptionalKind::start(
            client.clone(),
            &api::resource(),
            watcher::Config::default(),
            "InfrastructureProviders",
            Wake::OnChange(wake.clone()),
        );
        let (cluster_api, cluster_api_watch) = OptionalKind::start_named(
            client.clone(),
            &unmanaged::cluster_api_resource(),
            unmanaged::CLUSTER_API_NAME,
            "ClusterAPI cluster",
            Wake::OnChange(wake.clone()),
        );
        let (cluster_operator, cluster_operator_watch) = OptionalKind::start_named(
            client.clone(),
            &capi_openshift::resources::api_resource(&CLUSTER_OPERATOR),
            CLUSTER_OPERATOR_NAME,
            "ClusterOperator cluster-api",
            // What the installer reports on decides nothing, and its updates are the installer's own
            // writes coming back: only its deletion wakes a pass, which creates it again.
            Wake::OnDeletion(wake.clone()),
        );
        let (apiserver, apiserver_watch) = OptionalKind::start_named(
            client.clone(),
            &capi_openshift::resources::api_resource(&APISERVER),
            APISERVER_NAME,
            "APIServer cluster",
            Wake::OnChange(wake.clone()),
        );
        let (proxy, proxy_watch) = OptionalKind::start_named(
            client.clone(),
            &capi_openshift::resources::api_resource(&PROXY),
            PROXY_NAME,
            "Proxy cluster",
            Wake::OnChange(wake.clone()),
        );
        let (registration, registration_watch) = OptionalKind::start_named(
            client.clone(),
            &kube::core::ApiResource::erase::<ValidatingWebhookConfiguration>(&()),
            capi_compat::WEBHOOK_CONFIGURATION,
            "the CompatibilityRequirements' admission registration",
            Wake::OnChange(wake.clone()),
        );
        let (requirements, requirements_watch) = OptionalKind::start(
            client.clone(),
            &capi_openshift::resources::api_resource(&COMPATIBILITY_REQUIREMENT),
            watcher::Config::default(),
            "CompatibilityRequirements",
            Wake::OnChange(wake.clone()),
        );
        let (ceiling, ceiling_watch) = {
            let (store, writer) = reflector::store();
            let api: Api<ClusterRole> = Api::all(client.clone());
            let selector = watcher::Config::default().labels(policy::ceiling::LABEL);
            let stream = watcher(api, selector).default_backoff().reflect(writer);
            (
                store,
                spawn_trigger("the provider RBAC ceiling", stream, wake.clone()),
            )
        };
        let (fields, fields_watch) = watch_configmaps(
            "the provider field bound",
            &config.installer_namespace,
            watcher::Config::default().labels(policy::fields::LABEL),
        );
        let catalogs = Arc::new(catalogs(&config, &configmaps));

        Arc::new(Installer {
            cx: Context::new(
                client.clone(),
                config.clone(),
                metrics.clone(),
                inventory.clone(),
                revisions.clone(),
            ),
            client,
            config,
            infrastructure,
            configmaps,
            inventory,
            revisions,
            infrastructure_providers,
            cluster_api,
            cluster_operator: KnownOperator::new(cluster_operator),
            ceiling,
            fields,
            apiserver,
            proxy,
            registration,
            requirements,
            pinned_crds: PinnedCrds::default(),
            catalogs,
            metrics,
            wake,
            logged: Mutex::default(),
            changed: Mutex::default(),
            objects_changed: Notify::new(),
            rows: Mutex::default(),
            watches: vec![
                infrastructure_watch,
                configmaps_watch,
                inventory_watch,
                revisions_watch,
                providers_watch,
                cluster_api_watch,
                cluster_operator_watch,
                ceiling_watch,
                fields_watch,
                apiserver_watch,
                proxy_watch,
                registration_watch,
                requirements_watch,
            ],
        })
    }

    /// Reconciles until `shutdown` resolves. Work in progress when it does is finished first (a reconcile
    /// is never cut in the middle of a phase).
    pub async fn run(self: Arc<Self>, shutdown: impl std::future::Future<Output = ()>) {
        let mut changes = self.cx.cache.subscribe();
        let this = self.clone();
        tokio::spawn(async move {
            loop {
                let key = changes.recv().await;
                {
                    let mut changed = this.changed.lock().expect("changed objects");
                    match key {
                        Ok(key) => {
                            tracing::trace!(object = %key, "managed object changed");
                            changed.objects.insert(key);
                        }
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                            changed.everything = true
                        }
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                    }
                }
                this.objects_changed.notify_one();
            }
        });

        tokio::pin!(shutdown);
        // Nothing is decided, and no status written, before every watch has listed once: on empty
        // stores a healthy cluster would look like one without a platform or providers.
        let synced = async {
            tokio::join!(
                self.infrastructure.wait_until_ready(),
                self.configmaps.wait_until_ready(),
                self.inventory.wait_until_ready(),
                self.revisions.wait_until_ready(),
                self.infrastructure_providers.wait_known(),
                self.cluster_api.wait_known(),
                self.cluster_operator.wait_known(),
                self.ceiling.wait_until_ready(),
                self.fields.wait_until_ready(),
                self.apiserver.wait_known(),
                self.proxy.wait_known(),
                self.requirements.wait_known()
            )
        };
        tokio::select! {
            _ = &mut shutdown => {
                tracing::info!("installer stopped before its watches synced");
                return;
            }
            _ = synced => {}
        }
        let passes = Passes {
            installer: self.clone(),
            next: Next::Retry(Duration::ZERO),
        };
        let wakes = [&*self.wake, &self.objects_changed];
        pace::run(&wakes, COALESCE, shutdown, passes).await;
        tracing::info!("installer stopped");
    }

    /// One pass: what the cluster asks for → its round → what this pass does with the table of
    /// providers (every one, or only those the changes and the last pass allow: [`rows`]) → core's
    /// chain, then the other chains at once → the providers asked away removed → every provider's
    /// record → every status, from the outcomes alone.
    pub(crate) async fn pass(&self, changes: Changes) -> Next {
        let started = Instant::now();
        let asked = self.gather();
        self.cx.inventories.repair().await;
        let installed = match &asked.desired {
            Desired::Install(wants) => {
                let inventories = self.cx.inventories.all();
                let round = self.round(wants, &asked, &inventories).await;
                let (rows, todo) = self.todo(&round, &changes, &inventories).await;
                let rows = self.reconcile_chains(rows, &todo, &round).await;
                self.installed(round, rows).await
            }
            _ => Installed::default(),
        };
        let removals = self.uninstall(&asked.requests, &asked.unmanaged).await;
        // Every provider's record of this pass, in one write, before the status that reports it.
        if let Err(e) = self.cx.inventories.flush().await {
            tracing::warn!(error = %e, "cannot record the providers' state");
        }
        self.finalize(&asked.objects, &asked.requested, &asked.requests, &removals)
            .await;
        self.log_changes(&asked.desired, &installed);
        self.observe(&asked.desired, &installed, started);
        let next = self.report(&asked, &installed, &removals).await;
        *self.rows.lock().expect("rows") = installed.kept();
        next
    }

    /// What the cluster asks for, from the watches' caches: the platform, the
    /// `InfrastructureProvider`s, the unmanaged CRDs.
    fn gather(&self) -> Asked {
        let infra = self.infrastructure.get(&reflector::ObjectRef::new_with(
            INFRASTRUCTURE_NAME,
            capi_openshift::resources::api_resource(&INFRASTRUCTURE),
        ));
        let status = infra.as_ref().and_then(|i| i.data.get("status"));
        let objects = self.infrastructure_providers.objects().unwrap_or_default();
        let requested: Vec<api::Request> = objects.iter().map(|o| api::read(o)).collect();
        let declared: desired::DeclaredPlatforms =
            self.catalogs.iter().flat_map(|c| c.platforms()).collect();
        let platform = desired::platform_provider(status, &declared);
        let requests = desired::requests(platform.as_deref(), &requested);
        let desired = desired::desired(status, &declared, &requests.install);
        Asked {
            objects,
            requested,
            requests,
            desired,
            unmanaged: self.unmanaged(),
            requirements: self
                .requirements
                .objects()
                .unwrap_or_default()
                .into_iter()
                .map(|o| {
                    let value = serde_json::to_value(&*o).expect("an object serializes");
                    (o, Requirement::read(&value))
                })
                .collect(),
        }
    }

    /// Every status of the pass, here and nowhere else, each written only when it changed: the
    /// revision in `ClusterAPI/cluster` (of the selected providers), the `InfrastructureProvider`s,
    /// the ClusterOperator. Returns when to look again.
    async fn report(&self, asked: &Asked, installed: &Installed, removals: &[Removal]) -> Next {
        let requests = &asked.requests;
        // A provider being uninstalled is reported as such, not as left behind.
        let unselected: Vec<Unselected> = installed
            .unselected
            .iter()
            .filter(|u| {
                !requests
                    .uninstall
                    .iter()
                    .any(|r| u.label.as_deref() == Some(r.clusterctl_label.as_str()))
            })
            .cloned()
            .collect();
        let outcomes: Vec<&Outcome> = installed.outcomes().collect();
        let recording = match &asked.desired {
            Desired::Install(_) => {
                let objects = self.cluster_api.objects().unwrap_or_default();
                let selected: Vec<&Outcome> = installed.rows.outcomes().collect();
                report::cluster_api::record(
                    &self.client,
                    objects.first().map(|o| o.as_ref()),
                    &installed.missing,
                    &selected,
                    &installed.substitutions,
                    self.config.release_version.as_deref(),
                    |id| self.component_image(id),
                )
                .await
            }
            _ => Recording::NotNeeded,
        };
        let extra: BTreeSet<String> = requests
            .install
            .iter()
            .map(|n| capi_manifests::ProviderType::Infrastructure.clusterctl_label(n))
            .collect();
        let observed = Observed {
            desired: &asked.desired,
            missing: &installed.missing,
            outcomes: &outcomes,
            unselected: &unselected,
            extra: &extra,
            removals,
            recording: &recording,
        };
        self.report_providers(&observed, &asked.objects, &asked.requested, requests)
            .await;
        let registration = self.registration.objects().unwrap_or_default();
        let pinned: BTreeSet<&str> = asked
            .requirements
            .iter()
            .filter_map(|(_, read)| read.as_ref().ok())
            .map(|r| r.crd_name.as_str())
            .collect();
        self.pinned_crds.follow(&self.client, &pinned, &self.wake);
        report::requirements::write_all(
            &self.client,
            &self.config,
            registration.first().map(|o| &**o),
            &self.pinned_crds,
            &asked.requirements,
        )
        .await;
        let next = match self.report_operator(&observed).await {
            // The selected providers by their own timers; a refused second source by its outcome.
            Ok(()) => installed
                .refused
                .iter()
                .map(Next::of)
                .fold(Next::until(installed.rows.next_due()), Next::min),
            Err(e) => {
                tracing::warn!(error = %e, "cannot write ClusterOperator status; retrying");
                return Next::Retry(Duration::from_secs(5));
            }
        };
        match removals.iter().all(|r| r.done) {
            true => next,
            false => next.min(Next::Poll(Duration::from_secs(5))),
        }
    }

    /// The ClusterOperator's status, written when it changed.
    async fn report_operator(&self, observed: &Observed<'_>) -> Result<(), kube::Error> {
        let conditions = conditions::conditions(observed);
        let controllers = conditions::controllers(observed);
        let (related, at_release) = match observed.desired {
            Desired::Install(_) => (
                conditions::related(
                    &self.config.installer_namespace,
                    &self.config.namespace,
                    observed.outcomes.iter().copied(),
                ),
                conditions::at_release(observed.missing, observed.outcomes.iter().copied()),
            ),
            Desired::Unsupported { .. } => (Vec::new(), true),
            Desired::WaitingForPlatform => (Vec::new(), false),
        };
        let version = self
            .config
            .release_version
            .as_deref()
            .filter(|_| at_release);
        report::operator::write(
            &self.client,
            &self.cluster_operator,
            &conditions,
            &controllers,
            version,
            &related,
        )
        .await
    }

    /// A source as a revision component: a profile whose folder is the volume of a release image
    /// given by digest.
    fn component_image(&self, id: &SourceId) -> Option<source::ImageComponent> {
        self.catalogs.iter().find_map(|c| c.image_component(id))
    }

    /// The unmanaged CRDs of `ClusterAPI/cluster` (none when the object or its kind does not exist).
    fn unmanaged(&self) -> Result<Unmanaged, UnmanagedError> {
        let objects = self.cluster_api.objects().unwrap_or_default();
        Unmanaged::read(objects.first().map(|o| o.as_ref()))
    }

    /// The round of this pass: the sources of `wants` (of two sources of one provider, the one that
    /// owns an inventory among `inventories` kept), and what the cluster gives their plans (the
    /// policy's extensions, the TLS profile, the proxy, the compatibility requirements, the
    /// unmanaged and live CRDs).
    async fn round(
        &self,
        wants: &Wants,
        asked: &Asked,
        inventories: &[(SourceId, capi_apply::Inventory)],
    ) -> Round {
        let candidates: Vec<_> = self.catalogs.iter().flat_map(|c| c.candidates()).collect();
        let (roles, field_data) = (self.ceiling.state(), self.fields.state());
        let (ceiling, fields) = extensions::read(
            roles.iter().map(|r| r.as_ref()),
            field_data.iter().map(|c| c.as_ref()),
        );
        let owners = inventories.iter().map(|(id, _)| id.clone()).collect();
        let apiserver = self.apiserver.objects().unwrap_or_default();
        let apiserver = apiserver
            .first()
            .map(|a| serde_json::to_value(&**a).expect("an object serializes"));
        // The `${VAR}` values of this pass: the administrator's over the cluster's TLS profile, and the
        // variables that have none.
        let mut ctx = self.cx.render.clone();
        (ctx.substitutions, ctx.unavailable) =
            tls::with_cluster_profile(apiserver.as_ref(), &self.config.substitutions);
        // Those that can be read; one that cannot is reported on its own status and asks nothing.
        ctx.requirements = asked
            .requirements
            .iter()
            .filter_map(|(_, read)| read.as_ref().ok().cloned())
            .collect();
        let proxy = self.proxy.objects().unwrap_or_default();
        ctx.proxy = ClusterProxy::read(
            proxy
                .first()
                .map(|p| serde_json::to_value(&**p).expect("an object serializes"))
                .as_ref(),
        );
        Round::new(&wants.providers, &candidates, &owners, &ctx)
            .with_ceiling(&ceiling)
            .with_fields(&fields)
            .with_unmanaged(asked.unmanaged.clone())
            .with_live_crds(self.cx.live_crds().await)
    }

    /// The table of this pass and what it does with it ([`Rows::todo`]): the last pass's table,
    /// each provider whose inputs changed planned again from the planner state kept for it, when
    /// only some providers' objects (found in `inventories`), inputs or timers ask for a pass;
    /// otherwise every provider planned, in install order, into a new table.
    async fn todo(
        &self,
        round: &Round,
        changes: &Changes,
        inventories: &[(SourceId, capi_apply::Inventory)],
    ) -> (Rows, Todo) {
        let fingerprint = {
            let round = round.clone();
            compute::run(&self.metrics, Step::Fingerprint, move || {
                round::fingerprint_but_versions(&round)
            })
            .await
        };
        let targets = &round.selection.targets;
        let inputs: Vec<ProviderInputs> =
            targets.iter().map(|t| self.inputs(&t.source.id)).collect();
        let last = self.rows.lock().expect("rows").take().unwrap_or_default();
        let todo = last.todo(
            &fingerprint,
            targets,
            &inputs,
            changes,
            inventories,
            Instant::now(),
        );
        if let Todo::Only(only) = &todo {
            tracing::debug!(providers = ?only, "only these providers' objects or inputs changed or are due");
            if let Some(rows) = self.replan_changed(round, last, &inputs).await {
                return (rows, todo);
            }
        }
        tracing::debug!(
            everything = changes.everything,
            objects = changes.objects.len(),
            "a pass of every provider"
        );
        (self.plan_every(round, fingerprint).await, Todo::Every)
    }

    /// The last pass's table, each provider whose inputs (`inputs`, now) changed planned again,
    /// from the planner state kept for it. `None` when such a plan leaves the planner knowing
    /// something else than what was kept for the next provider (another CRD name claimed, another
    /// Secret held…): the plans after it may change, so the pass plans every provider.
    async fn replan_changed(
        &self,
        round: &Round,
        mut table: Rows,
        inputs: &[ProviderInputs],
    ) -> Option<Rows> {
        let changed = table.inputs_changed(inputs);
        for i in 0..table.rows.len() {
            table.rows[i].target = round.selection.targets[i].clone();
            let row = &table.rows[i];
            if !changed.contains(&row.target.source.id) {
                continue;
            }
            let mut planner = round.resume(row.planner.clone());
            let (plan, inputs) = self.plan_one(&mut planner, &row.target).await;
            if let Some(next) = table.rows.get(i + 1)
                && planner.state() != next.planner
            {
                tracing::debug!(provider = %row.target.source.describe(), "a changed input changed what the providers after it are planned with");
                return None;
            }
            let row = &mut table.rows[i];
            (row.plan, row.inputs) = (Some(plan), inputs);
        }
        Some(table)
    }

    /// The pure step of a pass of every provider, once for each, in install order: each plan claims
    /// CRD names and knows the kinds of the providers planned before it, as if they were applied (as
    /// `render` and `diff` plan), so that no plan waits for another provider's writes. Each row with
    /// what the planner knew before it.
    async fn plan_every(&self, round: &Round, fingerprint: String) -> Rows {
        let mut planner = round.planner_ahead();
        let mut rows = Vec::with_capacity(round.selection.targets.len());
        for target in &round.selection.targets {
            let before = planner.state();
            let (plan, inputs) = self.plan_one(&mut planner, target).await;
            rows.push(Row::planned(target.clone(), before, inputs, plan));
        }
        Rows {
            round: fingerprint,
            rows,
        }
    }

    /// One provider's plan by `planner`, from its source's payload as read now, with its inputs read
    /// before.
    async fn plan_one(&self, planner: &mut Planner, target: &Target) -> (Plan, ProviderInputs) {
        // Before the payload: a change in between makes the next pass plan it again, never the
        // reverse.
        let inputs = self.inputs(&target.source.id);
        let payload = self.load(&target.source.id).await;
        // The version its source declared when the payload was read: the source may have changed
        // since the round selected it.
        let target = target.as_read(&payload);
        let prepared = reconcile::prepare(&self.cx, planner, &target, payload).await;
        ((target, prepared), inputs)
    }

    /// The table's providers reconciled as [`order::chains`] orders them: core's chain, then every
    /// infrastructure provider's chain (the provider, then its companion) at once, each admitted from
    /// core's outcomes and its own chain's.
    async fn reconcile_chains(&self, table: Rows, todo: &Todo, round: &Round) -> Rows {
        let Rows {
            round: fingerprint,
            rows,
        } = table;
        let (core, chains) = order::chains(rows, |row| &row.target);
        let mut done = self.reconcile_chain(core, &[], todo, round).await;
        let core_rows: Vec<&Row> = done.iter().map(|(_, row)| row).collect();
        let rest = futures::future::join_all(
            chains
                .into_iter()
                .map(|chain| self.reconcile_chain(chain, &core_rows, todo, round)),
        )
        .await;
        done.extend(rest.into_iter().flatten());
        done.sort_by_key(|(index, _)| *index);
        Rows {
            round: fingerprint,
            rows: done.into_iter().map(|(_, row)| row).collect(),
        }
    }

    /// The providers of one chain one after the other, after `before` (core's chain). In a limited
    /// pass, a provider not asked for is reconciled only when this pass's outcomes admit it
    /// otherwise ([`rows::readmitted`]: core came to serve); else its row stands.
    async fn reconcile_chain(
        &self,
        mut chain: order::Chain<Row>,
        before: &[&Row],
        todo: &Todo,
        round: &Round,
    ) -> order::Chain<Row> {
        let missing = &round.selection.missing;
        for i in 0..chain.len() {
            let (done, rest) = chain.split_at_mut(i);
            let row = &mut rest[0].1;
            let earlier: Vec<&Row> = before
                .iter()
                .copied()
                .chain(done.iter().map(|(_, r)| r))
                .collect();
            let now: Vec<&Outcome> = earlier.iter().filter_map(|r| r.outcome.as_ref()).collect();
            if let Todo::Only(only) = todo {
                let was: Vec<&Outcome> = earlier
                    .iter()
                    .filter_map(|r| r.was.as_ref().or(r.outcome.as_ref()))
                    .collect();
                if !only.contains(&row.target.source.id)
                    && !rows::readmitted(&row.target, &was, &now, missing)
                {
                    continue;
                }
            }
            let (target, prepared) = match row.plan.take() {
                Some(plan) => plan,
                None => {
                    let mut planner = round.resume(row.planner.clone());
                    let (plan, inputs) = self.plan_one(&mut planner, &row.target).await;
                    row.inputs = inputs;
                    plan
                }
            };
            // A pass of every provider keeps no plan: it would keep all of them alive between
            // passes, megabytes.
            if todo.limited() {
                row.plan = prepared
                    .as_ref()
                    .ok()
                    .map(|p| (target.clone(), Ok(p.clone())));
            }
            let outcome = match order::admit(&target, &now, missing) {
                Admit::Blocked { behind } => {
                    let blocked = ProviderState::Blocked { behind };
                    reconcile::not_reconciled(&self.cx, &target, Ok(blocked)).await
                }
                admit => {
                    reconcile::reconcile(&self.cx, &target, prepared, round, admit.until()).await
                }
            };
            let due = Next::due(&outcome, Instant::now());
            row.reconciled(outcome, due);
        }
        chain
    }

    /// What the pass came to: the table reconciled, the sources refused as second ones, the
    /// providers selected no longer.
    async fn installed(&self, round: Round, rows: Rows) -> Installed {
        let mut refused = Vec::with_capacity(round.selection.refused.len());
        // After every selected provider, so that a refused second source of core holds nothing back.
        for second in &round.selection.refused {
            let error = ProviderError::DuplicateSource {
                provider: format!(
                    "{} ({})",
                    second.target.source.name,
                    second.target.source.provider_type.label()
                ),
                kept: second.kept.clone(),
            };
            refused.push(reconcile::not_reconciled(&self.cx, &second.target, Err(error)).await);
        }
        // Read after the pass: a source may have taken over an unselected one's inventory.
        let unselected = self
            .cx
            .inventories
            .all()
            .into_iter()
            .filter(|(id, _)| !round.selected.contains(id))
            .map(|(id, inv)| {
                let record = ProviderRecord::read(&inv);
                Unselected {
                    provider: record
                        .as_ref()
                        .map(|r| format!("{} ({})", r.provider, r.provider_type)),
                    label: record.map(|r| r.label),
                    objects: inv.entries.len(),
                    id,
                }
            })
            .collect();
        Installed {
            missing: round.selection.missing,
            rows,
            refused,
            unselected,
            substitutions: round.ctx.substitutions.clone(),
        }
    }

    /// What a provider's reconcile reads beyond the round, as it stands now: its source's revision
    /// ([`SourceCatalog::revision`]), the rollback request for it and the rollback recorded for it.
    fn inputs(&self, id: &SourceId) -> ProviderInputs {
        ProviderInputs {
            source: self.catalogs.iter().find_map(|c| c.revision(id)),
            rollback: self.cx.revisions.request_text(id),
            hold: self.cx.revisions.hold_text(id),
        }
    }

    /// A source's payload, decoded off the async runtime (a transport ConfigMap is up to 1 MiB of
    /// base64 and zstd).
    async fn load(&self, id: &SourceId) -> Result<source::Payload, SourceError> {
        let catalogs = self.catalogs.clone();
        let id = id.clone();
        compute::run(&self.metrics, Step::Decode, move || {
            catalogs
                .iter()
                .find_map(|c| c.load(&id))
                .unwrap_or(Err(SourceError::Gone { id: id.clone() }))
        })
        .await
    }

    fn observe(&self, desired: &Desired, installed: &Installed, started: Instant) {
        let failed = installed
            .outcomes()
            .any(|o| matches!(o.state, ProviderState::Failed { .. }));
        let result = if failed { "error" } else { "success" };
        self.metrics.observe_reconcile(result, started.elapsed());
        let complete = installed.missing.is_empty()
            && installed
                .outcomes()
                .all(|o| matches!(o.state, ProviderState::Installed) && o.serving);
        if matches!(desired, Desired::Install(_)) && complete {
            self.metrics.mark_success();
        }
    }

    /// Logs the platform decision and each provider's state when they change.
    fn log_changes(&self, desired: &Desired, installed: &Installed) {
        let missing = &installed.missing;
        let mut lines = vec![format!("{desired:?}")];
        lines.extend(missing.iter().map(|w| format!("missing {}", w.describe())));
        lines.extend(installed.outcomes().map(|o| {
            format!(
                "{} {:?} {:?}",
                o.id(),
                o.target.source.version,
                o.state.name()
            )
        }));
        let mut logged = self.logged.lock().expect("log memory");
        if *logged == lines {
            return;
        }
        match desired {
            Desired::WaitingForPlatform => {
                tracing::info!(
                    "Infrastructure cluster has no status.platformStatus.type yet; waiting"
                )
            }
            Desired::Unsupported { platform, reason } => {
                tracing::info!(%platform, %reason, "platform not supported; installing nothing")
            }
            Desired::Install(_) => {
                for o in installed.outcomes() {
                    tracing::info!(source = %o.id(), version = ?o.target.source.version, state = o.state.name(), "provider");
                }
                if !missing.is_empty() {
                    let missing: Vec<String> = missing.iter().map(Wanted::describe).collect();
                    tracing::info!(?missing, "waiting for provider sources");
                }
            }
        }
        *logged = lines;
    }
}

/// `Infrastructure/cluster`, watched by name.
fn watch_infrastructure(
    client: &Client,
    wake: &Arc<Notify>,
) -> (reflector::Store<DynamicObject>, tokio::task::JoinHandle<()>) {
    let writer =
        reflector::store::Writer::new(capi_openshift::resources::api_resource(&INFRASTRUCTURE));
    let store = writer.as_reader();
    let api: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &capi_openshift::resources::api_resource(&INFRASTRUCTURE),
    );
    let stream = watcher(
        api,
        watcher::Config::default().fields(&format!("metadata.name={INFRASTRUCTURE_NAME}")),
    )
    .default_backoff()
    .reflect(writer);
    (
        store,
        spawn_trigger("Infrastructure cluster", stream, wake.clone()),
    )
}

/// Every kind of provider source: the transport ConfigMaps, and the profiles when configured.
fn catalogs(
    config: &InstallerConfig,
    configmaps: &reflector::Store<ConfigMap>,
) -> Vec<Box<dyn SourceCatalog>> {
    let mut catalogs: Vec<Box<dyn SourceCatalog>> = vec![Box::new(configmap::ConfigMapCatalog {
        store: configmaps.clone(),
        namespace: config.namespace.clone(),
    })];
    if let Some(profiles) = &config.profiles {
        catalogs.push(Box::new(read_profiles(profiles, &config.images)));
    }
    catalogs
}

/// Reads the profiles once (image volumes do not change under a running pod) and logs what cannot be
/// used: such a profile declares no provider the installer could select, so its provider counts as
/// missing in status.
fn read_profiles(config: &ProfilesConfig, images: &crate::render::Images) -> ProfileCatalog {
    let catalog = match ProfileCatalog::read(&config.dir, config.profile.as_deref()) {
        Ok(catalog) if config.release_images_only => catalog.with_images(images).release_only(),
        Ok(catalog) => catalog.with_images(images),
        Err(e) => {
            tracing::error!(dir = %config.dir.display(), error = %e, "cannot read the profiles folder; no profile is installed");
            return ProfileCatalog::default();
        }
    };
    for skipped in &catalog.skipped {
        tracing::info!(%skipped, profile = ?config.profile, "image folder skipped");
    }
    for problem in &catalog.problems {
        tracing::error!(%problem, "unusable profile");
    }
    for (source, profile) in catalog.profiles() {
        tracing::info!(source = %source.id, provider = %source.describe(), path = %profile.manifests_path.display(), image = ?profile.image, "profile");
    }
    catalog
}
