//! Watch caches shared by the controllers: one reflector per (kind, namespace, name or label selector),
//! started on first use, waking every controller that asked for it on each change.
//!
//! Controllers read only from these caches, so a reconcile that finds nothing to do sends no request.
//! Watches are as narrow as RBAC allows: single objects by `metadata.name` field selector (RBAC can
//! then name the object: `resourceNames` apply to such lists and watches), Machines by label, and a
//! kind whose CRD is not Established is never watched (the watch would only fail).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use tokio::sync::Notify;

use crate::error::ControllerError;

/// A resource kind (group, version, kind, plural), hashable unlike [`ApiResource`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Kind {
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) kind: String,
    pub(crate) plural: String,
}

impl Kind {
    pub(crate) fn new(group: &str, version: &str, kind: &str, plural: &str) -> Kind {
        Kind {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            plural: plural.into(),
        }
    }

    pub(crate) fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    pub(crate) fn api_resource(&self) -> ApiResource {
        ApiResource {
            group: self.group.clone(),
            version: self.version.clone(),
            api_version: self.api_version(),
            kind: self.kind.clone(),
            plural: self.plural.clone(),
        }
    }

    pub(crate) fn secret() -> Kind {
        Kind::new("", "v1", "Secret", "secrets")
    }

    pub(crate) fn crd() -> Kind {
        Kind::new(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
        )
    }

    pub(crate) fn infrastructure() -> Kind {
        Kind::known(&capi_openshift::INFRASTRUCTURE)
    }

    pub(crate) fn cluster_operator() -> Kind {
        Kind::known(&capi_openshift::CLUSTER_OPERATOR)
    }

    fn known(kind: &capi_object::KnownKind) -> Kind {
        Kind::new(kind.group, kind.version, kind.kind, kind.plural)
    }
}

/// What one watch covers.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct WatchKey {
    pub(crate) kind: Kind,
    /// `None`: cluster-scoped (or all namespaces).
    pub(crate) namespace: Option<String>,
    /// A single object, by `metadata.name` field selector.
    pub(crate) name: Option<String>,
    /// A label selector.
    pub(crate) labels: Option<String>,
}

impl WatchKey {
    /// One object: cluster-scoped when `namespace` is `None`.
    pub(crate) fn object(kind: Kind, namespace: Option<&str>, name: &str) -> WatchKey {
        WatchKey {
            kind,
            namespace: namespace.map(str::to_string),
            name: Some(name.to_string()),
            labels: None,
        }
    }

    pub(crate) fn labelled(kind: Kind, namespace: &str, labels: &str) -> WatchKey {
        WatchKey {
            kind,
            namespace: Some(namespace.into()),
            name: None,
            labels: Some(labels.into()),
        }
    }

    fn describe(&self) -> String {
        let mut what = self.kind.kind.clone();
        if let Some(ns) = &self.namespace {
            what.push_str(&format!(" in {ns}"));
        }
        if let Some(name) = &self.name {
            what.push_str(&format!(" named {name}"));
        }
        if let Some(labels) = &self.labels {
            what.push_str(&format!(" labelled {labels}"));
        }
        what
    }
}

#[derive(Default)]
struct Shared {
    ready: AtomicBool,
    /// The last error of the watch, cleared by the next event: (message, forbidden).
    error: Mutex<Option<(String, bool)>>,
    subscribers: Mutex<Vec<Arc<Notify>>>,
}

/// One running watch and its cache.
pub(crate) struct Watch {
    key: WatchKey,
    store: Store<DynamicObject>,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Watch {
    /// Whether the initial list has completed (before that, an absent object proves nothing).
    pub(crate) fn is_ready(&self) -> bool {
        self.shared.ready.load(Ordering::Acquire)
    }

    /// The watch's persistent failure, if its last attempt failed.
    pub(crate) fn error(&self) -> Option<ControllerError> {
        let error = self.shared.error.lock().expect("watch state poisoned");
        error
            .as_ref()
            .map(|(message, forbidden)| ControllerError::Watch {
                what: self.key.describe(),
                message: message.clone(),
                forbidden: *forbidden,
            })
    }

    /// The object of that name (in the watch's namespace).
    pub(crate) fn get(&self, name: &str) -> Option<Arc<DynamicObject>> {
        let mut r = ObjectRef::new_with(name, self.key.kind.api_resource());
        if let Some(ns) = &self.key.namespace {
            r = r.within(ns);
        }
        self.store.get(&r)
    }

    pub(crate) fn list(&self) -> Vec<Arc<DynamicObject>> {
        let mut all = self.store.state();
        all.sort_by_key(|o| (o.namespace(), o.name_any()));
        all
    }
}

/// The registry of watches of one process.
pub(crate) struct Watches {
    client: Client,
    watches: Mutex<HashMap<WatchKey, Arc<Watch>>>,
}

impl Watches {
    pub(crate) fn new(client: Client) -> Self {
        Watches {
            client,
            watches: Mutex::new(HashMap::new()),
        }
    }

    /// The watch of `key`, started if needed; `subscriber` is woken on each of its changes.
    pub(crate) fn watch(&self, key: &WatchKey, subscriber: &Arc<Notify>) -> Arc<Watch> {
        let mut watches = self.watches.lock().expect("watches poisoned");
        let watch = watches
            .entry(key.clone())
            .or_insert_with(|| Arc::new(self.start(key.clone())))
            .clone();
        let mut subscribers = watch
            .shared
            .subscribers
            .lock()
            .expect("watch state poisoned");
        if !subscribers.iter().any(|s| Arc::ptr_eq(s, subscriber)) {
            subscribers.push(subscriber.clone());
            // A late subscriber may have missed the events so far.
            subscriber.notify_one();
        }
        drop(subscribers);
        watch
    }

    fn start(&self, key: WatchKey) -> Watch {
        let resource = key.kind.api_resource();
        let api: Api<DynamicObject> = match &key.namespace {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, &resource),
            None => Api::all_with(self.client.clone(), &resource),
        };
        let mut config = watcher::Config::default();
        if let Some(name) = &key.name {
            config = config.fields(&format!("metadata.name={name}"));
        }
        if let Some(labels) = &key.labels {
            config = config.labels(labels);
        }
        let writer = reflector::store::Writer::new(resource);
        let store = writer.as_reader();
        let shared = Arc::new(Shared::default());
        let stream = watcher(api, config).default_backoff().reflect(writer);
        let task_shared = shared.clone();
        let what = key.describe();
        let task = tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            while let Some(event) = stream.next().await {
                let changed = match event {
                    Ok(watcher::Event::InitDone) => {
                        task_shared.ready.store(true, Ordering::Release);
                        true
                    }
                    Ok(watcher::Event::Apply(_) | watcher::Event::Delete(_)) => true,
                    Ok(_) => false,
                    Err(e) => {
                        let forbidden = is_forbidden(&e);
                        tracing::debug!(watch = %what, error = %e, "watch failed; retrying");
                        let mut error = task_shared.error.lock().expect("watch state poisoned");
                        *error = Some((e.to_string(), forbidden));
                        drop(error);
                        notify(&task_shared);
                        continue;
                    }
                };
                *task_shared.error.lock().expect("watch state poisoned") = None;
                if changed {
                    notify(&task_shared);
                }
            }
        });
        Watch {
            key,
            store,
            shared,
            task,
        }
    }
}

fn notify(shared: &Shared) {
    for s in shared
        .subscribers
        .lock()
        .expect("watch state poisoned")
        .iter()
    {
        s.notify_one();
    }
}

fn is_forbidden(e: &watcher::Error) -> bool {
    match e {
        watcher::Error::InitialListFailed(kube::Error::Api(s))
        | watcher::Error::WatchStartFailed(kube::Error::Api(s))
        | watcher::Error::WatchFailed(kube::Error::Api(s)) => s.code == 403,
        watcher::Error::WatchError(s) => s.code == 403,
        _ => false,
    }
}
