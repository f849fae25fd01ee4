//! What wakes a loop ([`crate::pace`]): watches whose every change notifies the loop's one work item.
//! The installer's controller and the deployer both start them.

use std::sync::Arc;

use futures::StreamExt;
use kube::runtime::watcher;
use tokio::sync::Notify;

/// A watch that failed (it is retried with backoff).
#[derive(Debug, thiserror::Error)]
#[error("watching {what}: {source}")]
pub struct WatchError {
    what: &'static str,
    #[source]
    source: watcher::Error,
}

/// Drives `stream` (a watch, usually reflected into a store), waking `wake` on each change and once
/// each (re)list is complete.
pub fn spawn_trigger<K, S>(
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
