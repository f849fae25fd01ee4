//! The release's provider images: ConfigMap `capi-installer-images`, read once. What it holds and how
//! it is checked is the planning crate's ([`capi_bundle::images`], re-exported here).

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, Client};

use capi_manifests::image::ImagesError;

pub use capi_bundle::images::*;

use crate::render::Images;

/// Why the release's images could not be read from the cluster.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{origin}: the ConfigMap is not there (the release payload applies it)")]
    Missing { origin: String },
    #[error("reading {origin}: {source}")]
    Request {
        origin: String,
        #[source]
        source: kube::Error,
    },
    #[error(transparent)]
    Malformed(#[from] ImagesError),
}

/// Reads ConfigMap `capi-installer-images` of `namespace` (the installer's) and checks it.
pub async fn read(client: &Client, namespace: &str) -> Result<Images, ReadError> {
    let origin = configmap_origin(namespace);
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let configmap = api
        .get_opt(IMAGES_CONFIGMAP)
        .await
        .map_err(|source| ReadError::Request {
            origin: origin.clone(),
            source,
        })?
        .ok_or(ReadError::Missing { origin })?;
    Ok(from_configmap(namespace, &configmap)?)
}
