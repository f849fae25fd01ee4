//! Live state for drift detection, readiness and the decision before a write: one watch per kind we
//! apply (per namespace for namespaced kinds), each a kube-runtime reflector store of slim copies.
//!
//! Every object of a watched kind is seen, ours or not, so the cache can answer "absent" and "exists,
//! not ours" without a request: a cold install reads nothing before it writes (the applier used to GET
//! every object the label-filtered cache did not have). What is kept of each object is its slim copy
//! ([`crate::slim`]): a few hundred bytes instead of a whole CRD with its schema and `managedFields`.
//!
//! Deletions of our objects are remembered too ([`LiveCache::saw_deleted`]), by uid: the absence of an
//! object we wrote can be trusted without a read once the watch has seen that very object go (the
//! applier reads it otherwise, as its own write may not have reached the watch yet).
//!
//! The initial state comes as a streaming list (`sendInitialEvents`, one watch request, objects one at
//! a time, so a cluster's hundreds of CRDs are never one response in memory); an API server without
//! the feature gets paged lists of [`FALLBACK_PAGE_SIZE`] objects instead.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector::{ObjectRef, Store, store::Writer};
use kube::runtime::watcher::{self, Event};
use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;

use crate::key::{ObjectKey, key_of};
use crate::ownership::OwnershipPolicy;
use crate::slim::Slimmer;

/// Objects per list request when the API server cannot stream the initial state.
pub(crate) const FALLBACK_PAGE_SIZE: u32 = 50;

/// At most this many deletions are remembered; past it they are all forgotten (a forgotten deletion
/// only costs a read). Objects of ours that were deleted and never came back are the providers'
/// pruned objects and an administrator's deletions: far fewer.
const MAX_TOMBSTONES: usize = 4096;

/// The objects of ours whose deletion a watch saw, by key, with the uid that went; an object seen
/// at that key again (created anew) leaves.
#[derive(Default)]
struct Tombstones(std::sync::Mutex<HashMap<ObjectKey, String>>);

impl Tombstones {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ObjectKey, String>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn buried(&self, key: ObjectKey, uid: Option<&str>) {
        let Some(uid) = uid else { return };
        let mut deleted = self.lock();
        if deleted.len() >= MAX_TOMBSTONES {
            deleted.clear();
        }
        deleted.insert(key, uid.to_string());
    }

    fn seen(&self, key: &ObjectKey) {
        self.lock().remove(key);
    }
}

/// Which namespaces namespaced kinds are watched in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Namespaces {
    All,
    Only(Vec<String>),
}

/// What the cache knows about an object.
#[derive(Debug, Clone)]
pub enum Lookup {
    /// It exists and carries our ownership label (the slim copy).
    Ours(Arc<DynamicObject>),
    /// It exists without our label (the slim copy: labels, field managers).
    NotOurs(Arc<DynamicObject>),
    /// Its kind is watched there, the watch has listed, and it does not exist.
    Absent,
    /// Its kind is not watched there (yet), or the watch has not listed yet.
    Unknown,
}

/// One watch: a kind (group, kind) in one namespace, or cluster-wide.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Scope {
    group: String,
    kind: String,
    namespace: Option<String>,
}

struct Watched {
    resource: ApiResource,
    store: Store<DynamicObject>,
    /// Whether the watch has completed its initial list.
    synced: watch::Receiver<bool>,
    task: JoinHandle<()>,
}

struct Inner {
    client: Client,
    namespaces: Namespaces,
    ownership: OwnershipPolicy,
    slimmer: Slimmer,
    changes: broadcast::Sender<ObjectKey>,
    scopes: std::sync::Mutex<HashMap<Scope, Watched>>,
    tombstones: Arc<Tombstones>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Ok(scopes) = self.scopes.lock() {
            for watched in scopes.values() {
                watched.task.abort();
            }
        }
    }
}

/// Watches (list+watch, with kube-runtime's default backoff on errors) of every kind the caller asks
/// for, kept in memory as slim copies. A cheap handle: clones share the watches.
///
/// [`LiveCache::get`] answers only for objects that carry the ownership label: exactly what we may
/// repair. [`LiveCache::lookup`] also tells an absent object from one that exists and is not ours,
/// which is what the applier needs before a write.
///
/// Every added, modified or deleted object of ours (or one that stops being ours, or is marked for
/// adoption) is announced on the [`LiveCache::subscribe`] channel by key, so a controller can reconcile
/// within moments of a drift or a deletion. Other objects' changes are not announced: the cluster's
/// CRDs and RBAC change all the time for reasons that are none of ours.
#[derive(Clone)]
pub struct LiveCache {
    inner: Arc<Inner>,
}

impl LiveCache {
    /// A cache that keeps slim copies by `slimmer` and judges objects by `ownership` (see
    /// [`LiveCache::new`], which builds one for an applier).
    pub(crate) fn with(
        client: Client,
        namespaces: Namespaces,
        slimmer: Slimmer,
        ownership: OwnershipPolicy,
    ) -> Self {
        let (changes, _) = broadcast::channel(1024);
        LiveCache {
            inner: Arc::new(Inner {
                client,
                namespaces,
                slimmer,
                ownership,
                changes,
                scopes: Default::default(),
                tombstones: Default::default(),
            }),
        }
    }

    fn scopes(&self) -> std::sync::MutexGuard<'_, HashMap<Scope, Watched>> {
        self.inner
            .scopes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Change notifications: the key of every object of ours that was added, modified or deleted. A
    /// receiver that falls behind gets `RecvError::Lagged`, which should be read as "something
    /// changed": reconcile everything.
    pub fn subscribe(&self) -> broadcast::Receiver<ObjectKey> {
        self.inner.changes.subscribe()
    }

    /// Starts watching `resource` (idempotent). Namespaced kinds are watched in the configured
    /// namespaces, cluster-scoped ones cluster-wide. Needs a tokio runtime.
    ///
    /// Call it once the kind is served (for a custom kind: after its CRD is Established). Before
    /// that the watch only fails and backs off (up to kube-runtime's maximum delay), which delays
    /// the first sync.
    pub fn ensure_watched(&self, resource: &ApiResource, namespaced: bool) {
        let namespaces: Vec<Option<String>> = match (&self.inner.namespaces, namespaced) {
            (Namespaces::Only(list), true) => list.iter().cloned().map(Some).collect(),
            _ => vec![None],
        };
        let mut scopes = self.scopes();
        for namespace in namespaces {
            let scope = Scope {
                group: resource.group.clone(),
                kind: resource.kind.clone(),
                namespace,
            };
            if scopes.contains_key(&scope) {
                continue;
            }
            let api: Api<DynamicObject> = match &scope.namespace {
                Some(ns) => Api::namespaced_with(self.inner.client.clone(), ns, resource),
                None => Api::all_with(self.inner.client.clone(), resource),
            };
            let writer = Writer::new(resource.clone());
            let store = writer.as_reader();
            let (synced_tx, synced) = watch::channel(false);
            let task = tokio::spawn(run_watch(
                api,
                writer,
                resource.clone(),
                self.inner.slimmer.clone(),
                self.inner.ownership.clone(),
                Reports {
                    changes: self.inner.changes.clone(),
                    tombstones: self.inner.tombstones.clone(),
                },
                synced_tx,
            ));
            scopes.insert(
                scope,
                Watched {
                    resource: resource.clone(),
                    store,
                    synced,
                    task,
                },
            );
        }
    }

    /// Stops watching `resource` and forgets its objects (e.g. after its CRD was pruned, whose watch
    /// would otherwise fail and back off forever).
    pub fn unwatch(&self, resource: &ApiResource) {
        self.scopes().retain(|scope, watched| {
            let same = scope.group == resource.group && scope.kind == resource.kind;
            if same {
                watched.task.abort();
            }
            !same
        });
    }

    /// What the cache knows about `key`.
    pub fn lookup(&self, key: &ObjectKey) -> Lookup {
        let scopes = self.scopes();
        let watched = scopes.iter().find(|(s, _)| {
            s.group == key.group
                && s.kind == key.kind
                && (s.namespace.is_none() || s.namespace == key.namespace)
        });
        let Some((_, watched)) = watched else {
            return Lookup::Unknown;
        };
        if !*watched.synced.borrow() {
            return Lookup::Unknown;
        }
        let mut reference = ObjectRef::new_with(&key.name, watched.resource.clone());
        if let Some(ns) = &key.namespace {
            reference = reference.within(ns);
        }
        match watched.store.get(&reference) {
            Some(obj) if self.inner.ownership.owns(&obj) => Lookup::Ours(obj),
            Some(obj) => Lookup::NotOurs(obj),
            None => Lookup::Absent,
        }
    }

    /// Whether a watch saw the object of ours with `uid` at `key` deleted, and nothing at `key` since:
    /// then [`Lookup::Absent`] for `key` holds even just after our own write of that object.
    pub fn saw_deleted(&self, key: &ObjectKey, uid: &str) -> bool {
        self.inner
            .tombstones
            .lock()
            .get(key)
            .is_some_and(|u| u == uid)
    }

    /// The cached (slim) live object, if it exists and is ours.
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<DynamicObject>> {
        match self.lookup(key) {
            Lookup::Ours(obj) => Some(obj),
            _ => None,
        }
    }

    /// Every cached object of ours of `group`/`kind` (slim copies), in all watched namespaces.
    pub fn objects(&self, group: &str, kind: &str) -> Vec<Arc<DynamicObject>> {
        self.scopes()
            .iter()
            .filter(|(s, _)| s.group == group && s.kind == kind)
            .flat_map(|(_, w)| w.store.state())
            .filter(|o| self.inner.ownership.owns(o))
            .collect()
    }

    /// Every cached object of `group`/`kind` (slim copies), ours or not, each with whether it is ours.
    pub fn every(&self, group: &str, kind: &str) -> Vec<(Arc<DynamicObject>, bool)> {
        self.scopes()
            .iter()
            .filter(|(s, _)| s.group == group && s.kind == kind)
            .flat_map(|(_, w)| w.store.state())
            .map(|o| {
                let ours = self.inner.ownership.owns(&o);
                (o, ours)
            })
            .collect()
    }

    /// Whether every watch of `group`/`kind` started so far has completed its initial list (false when
    /// none was started).
    pub fn is_kind_synced(&self, group: &str, kind: &str) -> bool {
        let scopes = self.scopes();
        let mut of_kind = scopes
            .iter()
            .filter(|(s, _)| s.group == group && s.kind == kind)
            .peekable();
        of_kind.peek().is_some() && of_kind.all(|(_, w)| *w.synced.borrow())
    }

    /// Whether every watch started so far has completed its initial list.
    pub fn is_synced(&self) -> bool {
        self.scopes().values().all(|w| *w.synced.borrow())
    }

    /// Waits until [`Self::is_synced`], at most `timeout`; returns whether it is.
    pub async fn wait_synced(&self, timeout: Duration) -> bool {
        let receivers: Vec<watch::Receiver<bool>> =
            self.scopes().values().map(|w| w.synced.clone()).collect();
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

    /// Number of cached objects of ours (all kinds).
    pub fn len(&self) -> usize {
        self.scopes()
            .values()
            .map(|w| {
                w.store
                    .state()
                    .iter()
                    .filter(|o| self.inner.ownership.owns(o))
                    .count()
            })
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What a watch remembers of an object to decide whether its change is worth announcing.
#[derive(Clone, PartialEq, Eq)]
struct Seen {
    uid: Option<String>,
    resource_version: Option<String>,
    /// Carries our label: its changes may change what we do.
    relevant: bool,
}

fn seen(obj: &DynamicObject, ownership: &OwnershipPolicy) -> Seen {
    Seen {
        uid: obj.metadata.uid.clone(),
        resource_version: obj.metadata.resource_version.clone(),
        relevant: ownership.owns(obj),
    }
}

/// The slim copy, with apiVersion/kind filled in (items of a list of built-in kinds come without
/// them; the list carries them).
fn cache_form(obj: &mut DynamicObject, resource: &ApiResource, slimmer: &Slimmer) {
    if obj.types.as_ref().is_none_or(|t| t.kind.is_empty()) {
        obj.types = Some(kube::api::TypeMeta {
            api_version: resource.api_version.clone(),
            kind: resource.kind.clone(),
        });
    }
    *obj = slimmer.slim(obj);
}

/// Whether `error` says that the API server does not support streaming lists (the `WatchList`
/// feature is off): the request is refused as invalid.
fn streaming_unsupported(error: &watcher::Error) -> bool {
    let code = match error {
        watcher::Error::WatchStartFailed(kube::Error::Api(s))
        | watcher::Error::WatchFailed(kube::Error::Api(s)) => s.code,
        watcher::Error::WatchError(s) => s.code,
        _ => return false,
    };
    matches!(code, 400 | 422)
}

/// What a watch tells beyond its store: which objects of ours changed, and which went.
struct Reports {
    changes: broadcast::Sender<ObjectKey>,
    tombstones: Arc<Tombstones>,
}

async fn run_watch(
    api: Api<DynamicObject>,
    mut writer: Writer<DynamicObject>,
    resource: ApiResource,
    slimmer: Slimmer,
    ownership: OwnershipPolicy,
    reports: Reports,
    synced: watch::Sender<bool>,
) {
    let store = writer.as_reader();
    let mut streaming = true;
    'restart: loop {
        let config = if streaming {
            watcher::Config::default().streaming_lists()
        } else {
            watcher::Config::default().page_size(FALLBACK_PAGE_SIZE)
        };
        let mut stream = watcher::watcher(api.clone(), config)
            .default_backoff()
            .modify(|obj| cache_form(obj, &resource, &slimmer))
            .boxed();
        let mut listing: HashMap<ObjectKey, Seen> = HashMap::new();
        let mut any_event = false;
        while let Some(event) = stream.next().await {
            let event = match event {
                Ok(e) => e,
                Err(e) if streaming && !any_event && streaming_unsupported(&e) => {
                    tracing::info!(kind = %resource.kind, error = %e,
                        "the API server cannot stream lists; listing in pages");
                    streaming = false;
                    continue 'restart;
                }
                Err(e) => {
                    // The backoff wraps the stream; it resumes (re-lists if needed) on its own.
                    tracing::warn!(group = %resource.group, kind = %resource.kind, error = %e, "watch error");
                    continue;
                }
            };
            any_event = true;
            let mut announce = Vec::new();
            match &event {
                Event::Init => listing.clear(),
                Event::InitApply(obj) => {
                    if let Some(key) = key_of(obj) {
                        listing.insert(key, seen(obj, &ownership));
                    }
                }
                Event::InitDone => {
                    // A relist (after the watch fell too far behind) replaces the whole store: announce
                    // what changed in between, deletions included.
                    let before: HashMap<ObjectKey, Seen> = store
                        .state()
                        .iter()
                        .filter_map(|o| Some((key_of(o)?, seen(o, &ownership))))
                        .collect();
                    for (key, now) in &listing {
                        reports.tombstones.seen(key);
                        let was = before.get(key);
                        if (now.relevant || was.is_some_and(|w| w.relevant)) && was != Some(now) {
                            announce.push(key.clone());
                        }
                    }
                    for (key, was) in &before {
                        if was.relevant && !listing.contains_key(key) {
                            reports.tombstones.buried(key.clone(), was.uid.as_deref());
                            announce.push(key.clone());
                        }
                    }
                    listing.clear();
                }
                Event::Apply(obj) | Event::Delete(obj) => {
                    if let Some(key) = key_of(obj) {
                        let mut reference = ObjectRef::new_with(&key.name, resource.clone());
                        if let Some(ns) = &key.namespace {
                            reference = reference.within(ns);
                        }
                        let was = store.get(&reference).map(|o| seen(&o, &ownership));
                        let relevant =
                            seen(obj, &ownership).relevant || was.is_some_and(|w| w.relevant);
                        match &event {
                            Event::Delete(_) if relevant => reports
                                .tombstones
                                .buried(key.clone(), obj.metadata.uid.as_deref()),
                            Event::Delete(_) => {}
                            _ => reports.tombstones.seen(&key),
                        }
                        if relevant {
                            announce.push(key);
                        }
                    }
                }
            }
            writer.apply_watcher_event(&event);
            if matches!(event, Event::InitDone) {
                let _ = synced.send(true);
            }
            for key in announce {
                let _ = reports.changes.send(key);
            }
        }
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new("apps", "v1", "Deployment", Some("ns"), name)
    }

    #[test]
    fn a_tombstone_names_the_uid_that_went_until_the_key_is_seen_again() {
        let tombstones = Tombstones::default();
        tombstones.buried(key("a"), Some("u1"));
        tombstones.buried(key("b"), None);
        assert_eq!(
            tombstones.lock().get(&key("a")).map(String::as_str),
            Some("u1")
        );
        assert!(
            !tombstones.lock().contains_key(&key("b")),
            "no uid, no tombstone"
        );
        tombstones.seen(&key("a"));
        assert!(tombstones.lock().is_empty());
    }

    #[test]
    fn tombstones_are_bounded() {
        let tombstones = Tombstones::default();
        for i in 0..MAX_TOMBSTONES + 10 {
            tombstones.buried(key(&i.to_string()), Some(&format!("u{i}")));
        }
        assert!(tombstones.lock().len() <= MAX_TOMBSTONES);
        let last = MAX_TOMBSTONES + 9;
        assert_eq!(
            tombstones.lock().get(&key(&last.to_string())),
            Some(&format!("u{last}")),
            "the newest is kept"
        );
    }
}
