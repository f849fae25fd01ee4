//! What several commands read: the files named on their command lines and the cluster.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use capi_installer_controller::proxy::ClusterProxy;
use capi_installer_controller::user_agent;
use capi_runtime::args::KubeArgs;

/// The release's images from an images file (`--images-json`): every value an image reference, every
/// bad entry named at once.
pub(crate) fn read_images(path: &Path) -> Result<BTreeMap<String, String>> {
    let what = format!("images file {}", path.display());
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {what}"))?;
    Ok(capi_manifests::image::parse_images(&what, &text)?)
}

pub(crate) fn read_map(path: &Path, what: &str) -> Result<BTreeMap<String, String>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading {what} {}", path.display()))?;
    serde_saphyr::from_str(&text).with_context(|| {
        format!(
            "{what} {}: expected a map of strings to strings",
            path.display()
        )
    })
}

/// The cluster-wide proxy from a file holding `Proxy/cluster` (YAML or JSON).
pub(crate) fn read_proxy(path: &Path) -> Result<ClusterProxy> {
    let what = format!("proxy file {}", path.display());
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {what}"))?;
    let proxy: serde_json::Value =
        serde_saphyr::from_str(&text).with_context(|| format!("{what}: not YAML"))?;
    let kind = proxy.get("kind").and_then(serde_json::Value::as_str);
    if kind != Some("Proxy") {
        anyhow::bail!("{what}: expected a Proxy object (kind: Proxy), found kind {kind:?}");
    }
    Ok(ClusterProxy::read(Some(&proxy)))
}

/// A client whose every request carries the installer's user agent, for a command a person runs: the
/// server has answered as an API server (or the error names it and what to check).
pub(crate) async fn connect(kube: &KubeArgs) -> Result<kube::Client> {
    Ok(capi_runtime::process::connect(kube, &user_agent()).await?)
}
