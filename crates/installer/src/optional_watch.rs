//! A watch of a kind that may not be served: its CRD belongs to someone else and may come later
//! (`ClusterAPI` is feature-gated in OpenShift; `InfrastructureProvider` ships with the installer but
//! is applied by the release payload). Until the first list has answered, nothing is known, and the
//! installer decides nothing; a kind that is not served (404) is known to have no objects.

use std::sync::Arc;

use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use kube::{Client, Error as KubeError};
use tokio::sync::{Notify, watch};

/// What is known of the kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Known {
    Nothing,
    Listed,
    NotServed,
}

/// A reflector store of one kind, and whether it can be believed.
#[derive(Clone)]
pub struct OptionalKind {
    store: reflector::Store<DynamicObject>,
    known: watch::Receiver<Known>,
}

impl OptionalKind {
    /// Starts the watch; every change (and every change of what is known) wakes `wake`. The task ends
    /// when the returned handle is aborted.
    pub fn start(
        client: Client,
        resource: &ApiResource,
        config: watcher::Config,
        what: &'static str,
        wake: Arc<Notify>,
    ) -> (OptionalKind, tokio::task::JoinHandle<()>) {
        let writer = reflector::store::Writer::new(resource.clone());
        let store = writer.as_reader();
        let api: Api<DynamicObject> = Api::all_with(client, resource);
        let stream = watcher(api, config).default_backoff().reflect(writer);
        let (tell, known) = watch::channel(Known::Nothing);
        let task = tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            while let Some(event) = stream.next().await {
                let now = match event {
                    Ok(watcher::Event::InitDone) => Some(Known::Listed),
                    Ok(watcher::Event::Apply(_) | watcher::Event::Delete(_)) => None,
                    Ok(_) => continue,
                    Err(e) if not_served(&e) => Some(Known::NotServed),
                    Err(e) => {
                        tracing::warn!(%what, error = %e, "watch failed; retrying");
                        continue;
                    }
                };
                // The watch of a kind that is not served fails and retries for as long as it is not:
                // about once a second, since kube-runtime's watcher yields `Init` before each list,
                // which resets the backoff. Only a change of what is known is news, or every retry
                // would be a reconcile (about 50 a minute, each reading the ClusterOperator).
                let changed = match now {
                    // A (re)list may have changed the objects.
                    Some(Known::Listed) => {
                        tell.send_if_modified(|k| {
                            std::mem::replace(k, Known::Listed) != Known::Listed
                        });
                        true
                    }
                    Some(now) => tell.send_if_modified(|k| std::mem::replace(k, now) != now),
                    None => true,
                };
                if changed {
                    wake.notify_one();
                }
            }
        });
        (OptionalKind { store, known }, task)
    }

    /// The objects; `None` until the first list answered.
    pub fn objects(&self) -> Option<Vec<Arc<DynamicObject>>> {
        match *self.known.borrow() {
            Known::Nothing => None,
            Known::NotServed => Some(Vec::new()),
            Known::Listed => Some(self.store.state()),
        }
    }

    /// Resolves once something is known.
    pub async fn wait_known(&self) {
        let mut known = self.known.clone();
        let _ = known.wait_for(|k| *k != Known::Nothing).await;
    }
}

/// A 404 from a list or watch: the kind is not served (its CRD does not exist). The API server answers
/// an unknown group with a plain-text 404, which has no `reason`: the code decides.
fn not_served(e: &watcher::Error) -> bool {
    match e {
        watcher::Error::InitialListFailed(KubeError::Api(s))
        | watcher::Error::WatchStartFailed(KubeError::Api(s))
        | watcher::Error::WatchFailed(KubeError::Api(s)) => s.code == 404,
        watcher::Error::WatchError(s) => s.code == 404,
        _ => false,
    }
}
