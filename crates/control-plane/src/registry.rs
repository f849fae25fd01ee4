//! A read-only image registry for the real node: the OCI image layout that `hack/images.sh` writes,
//! served with the pull half of the OCI distribution API on the node's loopback, as the mirror of every
//! registry the images are named after (containerd's `hosts.toml`). The images keep their release
//! names (`registry.ci.openshift.org/openshift:capi-installer`, ...); nothing is pushed, nothing
//! leaves the node.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::error::{Error, io};

/// The registries whose images the node serves itself.
pub const MIRRORED: &[&str] = &["registry.ci.openshift.org"];
/// The pod sandbox image (containerd's `sandbox_image`), built by `hack/images.sh`.
pub const SANDBOX_IMAGE: &str = "registry.ci.openshift.org/openshift:pod";

const REF_NAME: &str = "org.opencontainers.image.ref.name";

/// An OCI image layout: every image by its full reference, and the blobs.
#[derive(Clone)]
pub struct Layout {
    dir: PathBuf,
    /// Full reference (`host/repository:tag`) → (manifest digest, media type).
    images: Arc<BTreeMap<String, (String, String)>>,
}

impl Layout {
    pub fn open(dir: &Path) -> Result<Layout, Error> {
        let index_path = dir.join("index.json");
        let text = std::fs::read_to_string(&index_path).map_err(io(format!(
            "read {} (built by hack/images.sh)",
            index_path.display()
        )))?;
        let index: serde_json::Value = serde_json::from_str(&text).map_err(|e| Error::Other {
            context: format!("read {}", index_path.display()),
            message: e.to_string(),
        })?;
        let images = index["manifests"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| {
                Some((
                    m["annotations"][REF_NAME].as_str()?.to_string(),
                    (
                        m["digest"].as_str()?.to_string(),
                        m["mediaType"].as_str()?.to_string(),
                    ),
                ))
            })
            .collect();
        Ok(Layout {
            dir: dir.to_path_buf(),
            images: Arc::new(images),
        })
    }

    /// The full references of the images in the layout.
    pub fn names(&self) -> Vec<String> {
        self.images.keys().cloned().collect()
    }

    /// The manifest digest (`sha256:...`) of the image of full reference `name`: what a release
    /// pins its image references to (`host/repository@sha256:...`), and what containerd resolves a
    /// tag to.
    pub fn digest(&self, name: &str) -> Option<&str> {
        self.images.get(name).map(|(digest, _)| digest.as_str())
    }

    fn blob_path(&self, digest: &str) -> Option<PathBuf> {
        let hex = digest.strip_prefix("sha256:")?;
        (hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| self.dir.join("blobs/sha256").join(hex))
    }
}

/// Serves `layout` on `listener` until the runtime ends.
pub async fn serve(layout: Layout, listener: tokio::net::TcpListener) {
    let app = axum::Router::new()
        .route("/v2/", get(|| async { "{}" }))
        .route("/v2/{*rest}", get(pull).head(pull))
        .with_state(layout);
    let _ = axum::serve(listener, app).await;
}

async fn pull(
    State(layout): State<Layout>,
    UrlPath(rest): UrlPath<String>,
    Query(query): Query<BTreeMap<String, String>>,
    method: Method,
) -> Response {
    // `<repository>/manifests/<tag or digest>` or `<repository>/blobs/<digest>`; containerd names
    // the registry it mirrors in `ns`.
    let (repository, kind, reference) = match rest.rsplitn(3, '/').collect::<Vec<_>>()[..] {
        [reference, kind, repository] => (repository, kind, reference),
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    let host = query.get("ns").map(String::as_str).unwrap_or(MIRRORED[0]);
    let (digest, media_type) = match kind {
        "manifests" if reference.starts_with("sha256:") => {
            let media_type = layout
                .images
                .values()
                .find(|(d, _)| d == reference)
                .map(|(_, m)| m.clone())
                .unwrap_or_else(|| "application/vnd.oci.image.manifest.v1+json".into());
            (reference.to_string(), media_type)
        }
        "manifests" => match layout
            .images
            .get(&format!("{host}/{repository}:{reference}"))
        {
            Some(found) => found.clone(),
            None => return StatusCode::NOT_FOUND.into_response(),
        },
        "blobs" => (reference.to_string(), "application/octet-stream".into()),
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    let Some(path) = layout.blob_path(&digest) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let Ok(bytes) = tokio::fs::read(&path).await else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let mut headers = HeaderMap::new();
    let value = |s: &str| HeaderValue::from_str(s).unwrap_or(HeaderValue::from_static(""));
    headers.insert(header::CONTENT_TYPE, value(&media_type));
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(bytes.len()));
    headers.insert("docker-content-digest", value(&digest));
    let body = if method == Method::HEAD {
        Body::empty()
    } else {
        Body::from(bytes)
    };
    (StatusCode::OK, headers, body).into_response()
}
