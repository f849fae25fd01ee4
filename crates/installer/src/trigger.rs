//! What wakes a loop: watches whose every change notifies the loop's one work item. The installer's
//! controller and the deployer (`capi-installer deployer`, [`crate::deployment`]) both start them, so
//! they live here rather than in either loop.

use std::sync::Arc;

use futures::StreamExt;
use kube::Client;
use kube::runtime::watcher;
use tokio::sync::Notify;

use crate::optional_watch::OptionalKind;
use crate::unmanaged;

/// A watch that failed (it is retried with backoff).
#[derive(Debug, thiserror::Error)]
#[error("watching {what}: {source}")]
pub(crate) struct WatchError {
    what: &'static str,
    #[source]
    source: watcher::Error,
}

/// `ClusterAPI/cluster`, watched by name; the kind may not be served ([`OptionalKind`]). The installer
/// reads its unmanaged CRDs, the deployer the images its revisions still name.
pub(crate) fn watch_cluster_api(
    client: &Client,
    wake: &Arc<Notify>,
) -> (OptionalKind, tokio::task::JoinHandle<()>) {
    OptionalKind::start(
        client.clone(),
        &unmanaged::cluster_api_resource(),
        watcher::Config::default()
            .fields(&format!("metadata.name={}", unmanaged::CLUSTER_API_NAME)),
        "ClusterAPI cluster",
        Some(wake.clone()),
    )
}

/// Drives `stream` (a watch, usually reflected into a store), waking `wake` on each change and once
/// each (re)list is complete.
pub(crate) fn spawn_trigger<K, S>(
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
                Err(source) => {
                    tracing::warn!(error = %WatchError { what, source }, "watch failed; retrying")
                }
            }
        }
    })
}
