//! The release's provider images, found as the reference finds them (ref §3.2): ConfigMap
//! `capi-installer-images` in the installer's namespace, applied by the cluster-version operator,
//! whose every value is an image reference (the release tooling rewrites them to digests), and each
//! image mounted into the installer's pod as an image volume at
//! `/var/lib/provider-images/<volume>`, the volume named after the reference ([`volume_name`], from
//! `capi_manifests::image_volume`, with what the installer's Deployment mounts), so
//! that the folder of an image tells which reference it holds.
//!
//! The keys name the images (`aws-cluster-api-controllers`): the reference ignores them; this
//! installer also replaces a transport ConfigMap's image placeholders by key.
//!
//! Pure: the installer reads the ConfigMap once at start, the deployer watches it.

use k8s_openapi::api::core::v1::ConfigMap;

use capi_manifests::image::ImagesError;

use crate::render::Images;

/// The ConfigMap of the release's images, in the installer's namespace (the reference's name).
pub const IMAGES_CONFIGMAP: &str = "capi-installer-images";

pub use capi_manifests::image_volume::volume_name;

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
