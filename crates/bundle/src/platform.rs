//! Which infrastructure provider a cluster needs, read from `Infrastructure/cluster` (the table is
//! `capi_manifests::platform`, shared with the controllers pod), and the image key of a provider.

pub use capi_manifests::platform::{Platform, PlatformDecision, decide};

/// The key of a provider's controller image in the images JSON (ref §2.1); `None` for names that have no
/// image of their own (the `openshift-cluster-api*` ConfigMaps carry only admission policies).
pub fn image_key(provider_name: &str) -> Option<String> {
    match provider_name {
        "cluster-api" => Some("cluster-capi-controllers".into()),
        "metal3" => Some("baremetal-cluster-api-controllers".into()),
        n if n.starts_with("openshift-cluster-api") => None,
        n => Some(format!("{n}-cluster-api-controllers")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_keys_follow_the_release_images_json() {
        assert_eq!(
            image_key("cluster-api").as_deref(),
            Some("cluster-capi-controllers")
        );
        assert_eq!(
            image_key("aws").as_deref(),
            Some("aws-cluster-api-controllers")
        );
        assert_eq!(
            image_key("metal3").as_deref(),
            Some("baremetal-cluster-api-controllers")
        );
        assert_eq!(
            image_key("ibmcloud").as_deref(),
            Some("ibmcloud-cluster-api-controllers")
        );
        assert_eq!(image_key("openshift-cluster-api-aws"), None);
    }
}
