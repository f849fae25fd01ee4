//! `capi-installer rollback --provider P --to N`: asks the running installer to apply revision N of a
//! provider instead of its source's current content, until that content changes ([`ask`]), and waits
//! until the installer reports it done ([`Asked::wait`]). Writes one key (`rollback`) of the
//! provider's revisions ConfigMap, as its own field manager: the installer never writes that key.
//!
//! Requests: a list of the revisions ConfigMaps and one PATCH; then a GET a second while waiting.

use std::time::{Duration, Instant};

use capi_openshift::time::now_rfc3339;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

use crate::revision::{self, RevisionError, RollbackRequest, Stored};
use crate::status::{self, StatusError};

/// Why a rollback cannot be asked for, or was not carried out.
#[derive(Debug, thiserror::Error)]
pub enum RollbackError {
    #[error(transparent)]
    Read(#[from] StatusError),
    #[error(transparent)]
    Revision(#[from] RevisionError),
    /// `what` says which request failed.
    #[error("{what}")]
    Request {
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error(
        "the installer has not rolled {provider} back to revision {to} within {}s (is it running? see `capi-installer status`)",
        .waited.as_secs()
    )]
    NotCarriedOut {
        provider: String,
        to: u32,
        waited: Duration,
    },
}

/// A rollback request written into a revisions ConfigMap.
pub struct Asked {
    api: Api<ConfigMap>,
    /// The provider's revisions ConfigMap.
    pub configmap: String,
    provider: String,
    request: RollbackRequest,
}

/// Writes the request to roll `provider` back to revision `to` into its revisions ConfigMap in the
/// installer's `namespace` (the revision must be kept, and not the newest: see
/// [`revision::rollback_request`]).
pub async fn ask(
    client: &Client,
    namespace: &str,
    provider: &str,
    to: u32,
) -> Result<Asked, RollbackError> {
    let logs = status::revision_logs(client, namespace).await?;
    let (configmap, request) = revision::rollback_request(&logs, provider, to, &now_rfc3339())?;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let patch = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": configmap, "namespace": namespace},
        "data": {revision::KEY_ROLLBACK: serde_json::to_string(&request).expect("a request serializes")},
    });
    api.patch(
        configmap,
        &PatchParams::apply(revision::ROLLBACK_FIELD_MANAGER).force(),
        &Patch::Apply(&patch),
    )
    .await
    .map_err(|source| RollbackError::Request {
        what: format!("writing the rollback request into ConfigMap {configmap}"),
        source,
    })?;
    Ok(Asked {
        api,
        configmap: configmap.to_string(),
        provider: provider.to_string(),
        request,
    })
}

impl Asked {
    /// Waits until the installer reports the revision live, reading the revisions ConfigMap once a
    /// second (what the installer writes there is the only signal), for at most `timeout`.
    pub async fn wait(&self, timeout: Duration) -> Result<(), RollbackError> {
        let deadline = Instant::now() + timeout;
        loop {
            let cm =
                self.api
                    .get(&self.configmap)
                    .await
                    .map_err(|source| RollbackError::Request {
                        what: self.configmap.clone(),
                        source,
                    })?;
            let log = Stored::from_configmap(&cm)?.log;
            if revision::carried_out(&log, &self.request) {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(RollbackError::NotCarriedOut {
                    provider: self.provider.clone(),
                    to: self.request.to,
                    waited: timeout,
                });
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
}
