//! The release's provider images, found as the reference finds them (ref §3.2): ConfigMap
//! `capi-installer-images` in the installer's namespace, applied by the cluster-version operator,
//! whose every value is an image reference (the release tooling rewrites them to digests), and each
//! image mounted into the installer's pod as an image volume at
//! `/var/lib/provider-images/<volume>`, the volume named after the reference ([`volume_name`]), so
//! that the folder of an image tells which reference it holds.
//!
//! The keys name the images (`aws-cluster-api-controllers`): the reference ignores them; this
//! installer also replaces a transport ConfigMap's image placeholders by key.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, Client};
use sha2::{Digest, Sha256};

use capi_manifests::image::ImagesError;

use crate::render::Images;

/// The ConfigMap of the release's images, in the installer's namespace (the reference's name).
pub const IMAGES_CONFIGMAP: &str = "capi-installer-images";

/// Where the installer's pod mounts each provider image (the reference's path).
pub const MOUNT_ROOT: &str = "/var/lib/provider-images";

/// The volume (and folder under [`MOUNT_ROOT`]) of image `reference`, as the reference names it: the
/// last path element before any `@`, lower-cased, every character outside `[a-z0-9-]` made `-` (a
/// `:tag` becomes `-tag`), then `-` and the first 8 hex digits of the SHA-256 of the whole
/// reference; `img-` in front when that does not start with a letter or digit. Equal names for two
/// references would need equal hashes, so the folder tells the reference.
pub fn volume_name(reference: &str) -> String {
    let name = reference.split('@').next().unwrap_or_default();
    let last = name.rsplit('/').next().unwrap_or_default();
    let mut volume: String = last
        .to_lowercase()
        .chars()
        .map(|c| match c {
            'a'..='z' | '0'..='9' | '-' => c,
            _ => '-',
        })
        .collect();
    let digest = Sha256::digest(reference.as_bytes());
    let hex: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    volume.push('-');
    volume.push_str(&hex);
    if !volume.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        volume.insert_str(0, "img-");
    }
    volume
}

/// `ConfigMap <namespace>/capi-installer-images`, as errors name it.
pub fn configmap_origin(namespace: &str) -> String {
    format!("ConfigMap {namespace}/{IMAGES_CONFIGMAP}")
}

/// The release's images from the ConfigMap: every value an image reference, every bad key named.
pub fn from_configmap(namespace: &str, configmap: &ConfigMap) -> Result<Images, ImagesError> {
    let binary: Vec<String> = configmap
        .binary_data
        .iter()
        .flat_map(|d| d.keys().cloned())
        .collect();
    capi_manifests::image::images_from_data(
        &configmap_origin(namespace),
        &configmap.data.clone().unwrap_or_default(),
        &binary,
    )
}

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

/// The release image whose volume is folder `folder`, if any.
pub fn image_of_folder<'a>(images: &'a Images, folder: &str) -> Option<&'a str> {
    images
        .values()
        .find(|r| volume_name(r) == folder)
        .map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn volumes_are_named_as_the_reference_names_them() {
        // The hash is of the whole reference: the same image by tag and by digest are two volumes.
        let by_tag = volume_name("registry.ci.openshift.org/openshift:aws-cluster-api-controllers");
        assert!(
            by_tag.starts_with("openshift-aws-cluster-api-controllers-"),
            "{by_tag}"
        );
        let digest = format!(
            "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:{}",
            "a".repeat(64)
        );
        let by_digest = volume_name(&digest);
        assert!(by_digest.starts_with("ocp-v4-0-art-dev-"), "{by_digest}");
        assert_eq!(by_digest.len(), "ocp-v4-0-art-dev-".len() + 8);
        assert_ne!(volume_name(&digest.replace('a', "b")), by_digest);
        // Not starting with a letter or digit: prefixed.
        assert!(
            volume_name("quay.io/x/_odd:1").starts_with("img-"),
            "{}",
            volume_name("quay.io/x/_odd:1")
        );
        assert!(volume_name("quay.io/X/Upper").starts_with("upper-"));
        for r in [by_tag, by_digest] {
            assert!(capi_object::is_dns_label(&r), "{r}");
        }
        // Sha-256 of "quay.io/a:1" begins with these 8 hex digits (as `sha256sum` prints).
        assert_eq!(
            volume_name("quay.io/a:1"),
            format!("a-1-{}", &sha256_hex("quay.io/a:1")[..8])
        );
    }

    fn sha256_hex(s: &str) -> String {
        Sha256::digest(s.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    #[test]
    fn a_configmap_is_read_and_its_folders_known() {
        let cm: ConfigMap = serde_json::from_value(serde_json::json!({
            "metadata": {"name": IMAGES_CONFIGMAP, "namespace": "ns"},
            "data": {"aws-cluster-api-controllers": "quay.io/aws@sha256:".to_string() + &"1".repeat(64),
                     "kube-rbac-proxy": "quay.io/krp:4.22"},
        }))
        .unwrap();
        let images = from_configmap("ns", &cm).unwrap();
        let aws = images["aws-cluster-api-controllers"].as_str();
        assert_eq!(image_of_folder(&images, &volume_name(aws)), Some(aws));
        assert_eq!(image_of_folder(&images, "aws-img"), None);
        let bad: ConfigMap = serde_json::from_value(serde_json::json!({
            "metadata": {"name": IMAGES_CONFIGMAP, "namespace": "ns"},
            "data": {"aws-cluster-api-controllers": "{\"x\": 1}"},
        }))
        .unwrap();
        let err = from_configmap("ns", &bad).unwrap_err().to_string();
        assert!(
            err.starts_with(
                "ConfigMap ns/capi-installer-images: key \"aws-cluster-api-controllers\": "
            ),
            "{err}"
        );
    }
}
