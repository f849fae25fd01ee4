//! A watch of a kind that may not be served: its CRD belongs to someone else and may come later (a
//! feature-gated kind, or one the release payload applies beside the controller). Until the first list
//! has answered, nothing is known, and the loop decides nothing; a kind that is not served (404) is
//! known to have no objects.
//!
//! A kind that is not served is not listed again on a timer: the watch waits for its CRD to change
//! (a watch of that one CRD's metadata, started at the first 404), with a long fallback delay in case
//! that watch cannot tell. kube-runtime's own backoff cannot do this: its watcher yields `Init` before
//! each list, which resets the backoff, so a 404 was retried about once a second (51 lists in an idle
//! minute, BENCHMARKS.md).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, PartialObjectMeta};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use kube::{Client, Error as KubeError};
use tokio::sync::{Notify, watch};

/// The first retry after a failure; each further one waits twice as long (client-go's reflector
/// starts at 800 ms too).
const FIRST_RETRY: Duration = Duration::from_millis(800);
/// The longest wait between retries of a watch that fails for another reason than a missing kind.
const MAX_RETRY: Duration = Duration::from_secs(30);
/// The longest wait before a kind that is not served is listed again without news of its CRD (the
/// CRD's own watch failing, or a CRD whose versions do not include the watched one).
const NOT_SERVED_RECHECK: Duration = Duration::from_secs(300);

/// Which changes of the watched objects wake the loop.
#[derive(Clone)]
pub enum Wake {
    /// None: a kind read but decided on by no one.
    Never,
    /// Every change, and every change of what is known.
    OnChange(Arc<Notify>),
    /// A deletion, and every change of what is known: an object the loop writes itself, whose
    /// updates are its own writes coming back, but which it must put back when it goes.
    OnDeletion(Arc<Notify>),
}

impl Wake {
    fn notify(&self, deletion: bool) {
        match self {
            Wake::OnChange(n) => n.notify_one(),
            Wake::OnDeletion(n) if deletion => n.notify_one(),
            _ => {}
        }
    }
}

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
    /// How many changes the watch has taken in ([`OptionalKind::position`]).
    changes: Arc<AtomicU64>,
}

impl OptionalKind {
    /// Starts the watch; its changes wake the loop as `wake` says. The task ends when the returned
    /// handle is aborted.
    pub fn start(
        client: Client,
        resource: &ApiResource,
        config: watcher::Config,
        what: &'static str,
        wake: Wake,
    ) -> (OptionalKind, tokio::task::JoinHandle<()>) {
        let writer = reflector::store::Writer::new(resource.clone());
        let store = writer.as_reader();
        let api: Api<DynamicObject> = Api::all_with(client.clone(), resource);
        // No stream backoff: the loop below decides when a failed watch is polled (and so retried).
        let stream = watcher(api, config).reflect(writer);
        let (tell, known) = watch::channel(Known::Nothing);
        let changes = Arc::new(AtomicU64::new(0));
        let changed_to = changes.clone();
        let crd_name = format!("{}.{}", resource.plural, resource.group);
        let task = tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            let mut retry = Retry::default();
            let mut crd: Option<CrdChanges> = None;
            while let Some(event) = stream.next().await {
                let (now, deletion) = match event {
                    Ok(watcher::Event::InitDone) => {
                        retry = Retry::default();
                        // Listed: what the CRD does is news through the watch itself now.
                        crd = None;
                        // A relist may have dropped an object deleted meanwhile.
                        (Some(Known::Listed), true)
                    }
                    Ok(watcher::Event::Apply(_)) => (None, false),
                    Ok(watcher::Event::Delete(_)) => (None, true),
                    Ok(_) => continue,
                    Err(e) if not_served(&e) => {
                        if tell.send_if_modified(|k| {
                            std::mem::replace(k, Known::NotServed) != Known::NotServed
                        }) {
                            changed_to.fetch_add(1, Ordering::Release);
                            // Not served: every object is gone.
                            wake.notify(true);
                        }
                        let crd = crd.get_or_insert_with(|| CrdChanges::start(&client, &crd_name));
                        let delay = retry.next(NOT_SERVED_RECHECK);
                        tokio::select! {
                            () = crd.changed() => {
                                tracing::debug!(%what, crd = %crd_name, "CRD changed; listing again");
                            }
                            () = tokio::time::sleep(delay) => {}
                        }
                        // Seen now, right before the next list: a change during that list wakes the
                        // next wait at once.
                        crd.changes.mark_unchanged();
                        continue;
                    }
                    Err(e) => {
                        let delay = retry.next(MAX_RETRY);
                        tracing::warn!(%what, error = %e, retry_in = ?delay, "watch failed; retrying");
                        tokio::time::sleep(delay).await;
                        continue;
                    }
                };
                // Only a change of what is known is news (a relist may have changed the objects, so
                // it always is); otherwise every retry would be a reconcile.
                let changed = match now {
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
                    changed_to.fetch_add(1, Ordering::Release);
                    wake.notify(deletion);
                }
            }
        });
        (
            OptionalKind {
                store,
                known,
                changes,
            },
            task,
        )
    }

    /// [`OptionalKind::start`] for the one object named `name`.
    pub fn start_named(
        client: Client,
        resource: &ApiResource,
        name: &str,
        what: &'static str,
        wake: Wake,
    ) -> (OptionalKind, tokio::task::JoinHandle<()>) {
        let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
        OptionalKind::start(client, resource, config, what, wake)
    }

    /// The objects; `None` until the first list answered.
    pub fn objects(&self) -> Option<Vec<Arc<DynamicObject>>> {
        match *self.known.borrow() {
            Known::Nothing => None,
            Known::NotServed => Some(Vec::new()),
            Known::Listed => Some(self.store.state()),
        }
    }

    /// Where the watch stands: a count of the changes it has taken in (events, relists, the kind
    /// found not served). Two equal positions mean the objects did not change between them; read it
    /// before [`OptionalKind::objects`], so that a change in between shows as a move. Unlike a
    /// resourceVersion it cannot come back to an earlier value (a deletion after a creation moves it).
    pub fn position(&self) -> u64 {
        self.changes.load(Ordering::Acquire)
    }

    /// Resolves once something is known.
    pub async fn wait_known(&self) {
        let mut known = self.known.clone();
        let _ = known.wait_for(|k| *k != Known::Nothing).await;
    }
}

/// Exponential delays from [`FIRST_RETRY`], doubling up to a maximum; a fresh one after a success.
#[derive(Default)]
struct Retry {
    failures: u32,
}

impl Retry {
    fn next(&mut self, max: Duration) -> Duration {
        let delay = FIRST_RETRY
            .saturating_mul(1 << self.failures.min(16))
            .min(max);
        self.failures = self.failures.saturating_add(1);
        delay
    }
}

/// The metadata of one CRD, watched by name: a change of it (created, Established, a version added)
/// is when a kind it may serve is worth listing again. The watch ends when this is dropped.
struct CrdChanges {
    /// The CRD's last seen resourceVersion (`None`: absent); every change of the object changes it.
    changes: watch::Receiver<Option<String>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for CrdChanges {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl CrdChanges {
    fn start(client: &Client, name: &str) -> CrdChanges {
        let api: Api<PartialObjectMeta<CustomResourceDefinition>> = Api::all(client.clone());
        let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
        let stream = watcher(api, config).default_backoff();
        let (tell, changes) = watch::channel(None);
        let name = name.to_string();
        let task = tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            while let Some(event) = stream.next().await {
                let now = match event {
                    Ok(watcher::Event::Apply(crd) | watcher::Event::InitApply(crd)) => {
                        crd.metadata.resource_version
                    }
                    Ok(watcher::Event::Delete(_)) => None,
                    Ok(watcher::Event::Init | watcher::Event::InitDone) => continue,
                    Err(e) => {
                        tracing::debug!(crd = %name, error = %e, "watching the CRD failed; retrying");
                        continue;
                    }
                };
                tell.send_if_modified(|v| std::mem::replace(v, now.clone()) != now);
            }
        });
        CrdChanges { changes, task }
    }

    /// Resolves at the CRD's next change; never, once its watch has ended.
    async fn changed(&mut self) {
        if self.changes.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
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
