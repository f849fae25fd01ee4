//! Live state for drift detection: label-filtered watches of every kind we apply.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use futures::StreamExt;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;

use crate::key::{ObjectKey, key_of};

/// Which namespaces namespaced kinds are watched in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Namespaces {
    All,
    Only(Vec<String>),
}

/// One watch: a kind (group, kind) in one namespace, or cluster-wide.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Scope {
    group: String,
    kind: String,
    namespace: Option<String>,
}

type Store = HashMap<ObjectKey, Arc<DynamicObject>>;

/// A running watch and whether it has completed its initial list.
type WatchTask = (JoinHandle<()>, watch::Receiver<bool>);

#[derive(Default)]
struct Shared {
    stores: RwLock<HashMap<Scope, Store>>,
}

/// Label-filtered watches (list+watch, with kube-runtime's default backoff on errors) of every kind
/// the caller asks for, kept in memory.
///
/// The cache only sees objects that carry the ownership label: exactly what we may repair, and the
/// reason [`crate::Applier::apply`] GETs an object the cache does not have instead of assuming it
/// is absent. `managedFields` are dropped from cached objects (memory; the applier needs them only for
/// objects that are not ours yet, which it reads itself).
///
/// Every added, modified or deleted object is announced on the [`LiveCache::subscribe`] channel by
/// key, so a controller can reconcile within moments of a drift or a deletion.
pub struct LiveCache {
    client: Client,
    selector: String,
    namespaces: Namespaces,
    shared: Arc<Shared>,
    changes: broadcast::Sender<ObjectKey>,
    tasks: std::sync::Mutex<HashMap<Scope, WatchTask>>,
}

impl LiveCache {
    /// `label_selector` is usually [`crate::OwnershipPolicy::selector`].
    pub fn new(client: Client, label_selector: impl Into<String>, namespaces: Namespaces) -> Self {
        let (changes, _) = broadcast::channel(1024);
        LiveCache {
            client,
            selector: label_selector.into(),
            namespaces,
            shared: Arc::default(),
            changes,
            tasks: Default::default(),
        }
    }

    /// Change notifications: the key of every object that was added, modified or deleted. A
    /// receiver that falls behind gets `RecvError::Lagged`, which should be read as "something
    /// changed": reconcile everything.
    pub fn subscribe(&self) -> broadcast::Receiver<ObjectKey> {
        self.changes.subscribe()
    }

    /// Starts watching `resource` (idempotent). Namespaced kinds are watched in the configured
    /// namespaces, cluster-scoped ones cluster-wide. Needs a tokio runtime.
    ///
    /// Call it once the kind is served (for a custom kind: after its CRD is Established). Before
    /// that the watch only fails and backs off (up to kube-runtime's maximum delay), which delays
    /// the first sync.
    pub fn ensure_watched(&self, resource: &ApiResource, namespaced: bool) {
        let scopes: Vec<Option<String>> = match (&self.namespaces, namespaced) {
            (Namespaces::Only(list), true) => list.iter().cloned().map(Some).collect(),
            _ => vec![None],
        };
        let mut tasks = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
        for namespace in scopes {
            let scope = Scope {
                group: resource.group.clone(),
                kind: resource.kind.clone(),
                namespace,
            };
            if tasks.contains_key(&scope) {
                continue;
            }
            let api: Api<DynamicObject> = match &scope.namespace {
                Some(ns) => Api::namespaced_with(self.client.clone(), ns, resource),
                None => Api::all_with(self.client.clone(), resource),
            };
            let (synced_tx, synced_rx) = watch::channel(false);
            let task = tokio::spawn(run_watch(
                api,
                watcher::Config::default().labels(&self.selector),
                resource.clone(),
                scope.clone(),
                self.shared.clone(),
                self.changes.clone(),
                synced_tx,
            ));
            tasks.insert(scope, (task, synced_rx));
        }
    }

    /// Stops watching `resource` and forgets its objects (e.g. after its CRD was pruned, whose watch
    /// would otherwise fail and back off forever).
    pub fn unwatch(&self, resource: &ApiResource) {
        let same = |s: &Scope| s.group == resource.group && s.kind == resource.kind;
        self.tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|scope, (task, _)| {
                if same(scope) {
                    task.abort();
                }
                !same(scope)
            });
        self.shared
            .stores
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|scope, _| !same(scope));
    }

    /// The cached live object, if any.
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<DynamicObject>> {
        let stores = self
            .shared
            .stores
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        stores
            .iter()
            .filter(|(s, _)| {
                s.group == key.group
                    && s.kind == key.kind
                    && (s.namespace.is_none() || s.namespace == key.namespace)
            })
            .find_map(|(_, store)| store.get(key).cloned())
    }

    /// Every cached object of `group`/`kind`, in all watched namespaces.
    pub fn objects(&self, group: &str, kind: &str) -> Vec<Arc<DynamicObject>> {
        let stores = self
            .shared
            .stores
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        stores
            .iter()
            .filter(|(s, _)| s.group == group && s.kind == kind)
            .flat_map(|(_, store)| store.values().cloned())
            .collect()
    }

    /// Whether every watch started so far has completed its initial list.
    pub fn is_synced(&self) -> bool {
        let tasks = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
        tasks.values().all(|(_, rx)| *rx.borrow())
    }

    /// Waits until [`Self::is_synced`], at most `timeout`; returns whether it is.
    pub async fn wait_synced(&self, timeout: Duration) -> bool {
        let receivers: Vec<watch::Receiver<bool>> = {
            let tasks = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
            tasks.values().map(|(_, rx)| rx.clone()).collect()
        };
        let all = async {
            for mut rx in receivers {
                if rx.wait_for(|synced| *synced).await.is_err() {
                    return false;
                }
            }
            true
        };
        tokio::time::timeout(timeout, all).await.unwrap_or(false)
    }

    /// Number of cached objects (all kinds).
    pub fn len(&self) -> usize {
        let stores = self
            .shared
            .stores
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        stores.values().map(HashMap::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Drop for LiveCache {
    fn drop(&mut self) {
        if let Ok(tasks) = self.tasks.lock() {
            for (task, _) in tasks.values() {
                task.abort();
            }
        }
    }
}

fn cache_form(
    mut obj: DynamicObject,
    resource: &ApiResource,
) -> Option<(ObjectKey, Arc<DynamicObject>)> {
    obj.metadata.managed_fields = None;
    // Items of a list of built-in kinds come without apiVersion/kind (the list carries them).
    if obj.types.as_ref().is_none_or(|t| t.kind.is_empty()) {
        obj.types = Some(kube::api::TypeMeta {
            api_version: resource.api_version.clone(),
            kind: resource.kind.clone(),
        });
    }
    let key = key_of(&obj)?;
    Some((key, Arc::new(obj)))
}

async fn run_watch(
    api: Api<DynamicObject>,
    config: watcher::Config,
    resource: ApiResource,
    scope: Scope,
    shared: Arc<Shared>,
    changes: broadcast::Sender<ObjectKey>,
    synced: watch::Sender<bool>,
) {
    let mut stream = watcher::watcher(api, config).default_backoff().boxed();
    let mut buffer: Option<Store> = None;
    while let Some(event) = stream.next().await {
        let event = match event {
            Ok(e) => e,
            Err(e) => {
                // The backoff wraps the stream; it resumes (re-lists if needed) on its own.
                tracing::warn!(group = %scope.group, kind = %scope.kind, error = %e, "watch error");
                continue;
            }
        };
        match event {
            Event::Init => buffer = Some(Store::new()),
            Event::InitApply(obj) => {
                if let Some((key, obj)) = cache_form(obj, &resource) {
                    buffer.get_or_insert_with(Store::new).insert(key, obj);
                }
            }
            Event::InitDone => {
                let fresh = buffer.take().unwrap_or_default();
                let changed: Vec<ObjectKey> = {
                    let mut stores = shared
                        .stores
                        .write()
                        .unwrap_or_else(PoisonError::into_inner);
                    let old = stores.insert(scope.clone(), fresh).unwrap_or_default();
                    let new = &stores[&scope];
                    let keys: HashSet<&ObjectKey> = old.keys().chain(new.keys()).collect();
                    keys.into_iter()
                        .filter(|k| {
                            let (a, b) = (old.get(*k), new.get(*k));
                            match (a, b) {
                                (Some(a), Some(b)) => {
                                    a.metadata.resource_version != b.metadata.resource_version
                                }
                                _ => true,
                            }
                        })
                        .cloned()
                        .collect()
                };
                for key in changed {
                    let _ = changes.send(key);
                }
                let _ = synced.send(true);
            }
            Event::Apply(obj) => {
                if let Some((key, obj)) = cache_form(obj, &resource) {
                    shared
                        .stores
                        .write()
                        .unwrap_or_else(PoisonError::into_inner)
                        .entry(scope.clone())
                        .or_default()
                        .insert(key.clone(), obj);
                    let _ = changes.send(key);
                }
            }
            Event::Delete(obj) => {
                if let Some((key, _)) = cache_form(obj, &resource) {
                    if let Some(store) = shared
                        .stores
                        .write()
                        .unwrap_or_else(PoisonError::into_inner)
                        .get_mut(&scope)
                    {
                        store.remove(&key);
                    }
                    let _ = changes.send(key);
                }
            }
        }
    }
}
