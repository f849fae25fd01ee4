//! Provider images as image volumes of the installer's pod (ref §3.2): which images its Deployment
//! mounts, under which names and paths, and the volumes and mounts themselves. Pure: a Deployment in,
//! the same Deployment with the volumes out; what applies it is the installer's `deployment`
//! controller.
//!
//! The images are the values of the release's images ConfigMap and every image that a revision in
//! `ClusterAPI/cluster` status still names (so that an earlier revision can still be read while it
//! is kept), as the reference's installer-deployment controller mounts them.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

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
    volume.push('-');
    volume.push_str(&capi_object::lower_hex(&digest[..4]));
    if !volume.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        volume.insert_str(0, "img-");
    }
    volume
}

/// `/var/lib/provider-images/<volume>`: where image `reference` is mounted.
pub fn mount_path(reference: &str) -> String {
    format!("{MOUNT_ROOT}/{}", volume_name(reference))
}

/// Every image a revision of `ClusterAPI/cluster` status still names: `status.revisions[]
/// .components[]` of `type: Image`, their `image.ref` (the reference's `ImageRefsFromRevisions`).
/// Anything else in the status is not this function's business and is ignored.
pub fn revision_images(cluster_api_status: &Value) -> BTreeSet<String> {
    let revisions = cluster_api_status
        .get("revisions")
        .and_then(Value::as_array);
    revisions
        .into_iter()
        .flatten()
        .filter_map(|r| r.get("components").and_then(Value::as_array))
        .flatten()
        .filter(|c| c.get("type").and_then(Value::as_str) == Some("Image"))
        .filter_map(|c| c.pointer("/image/ref").and_then(Value::as_str))
        .map(str::to_string)
        .collect()
}

/// Why the volumes cannot be added to a Deployment.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VolumeError {
    #[error("the Deployment has no container {0:?} to mount the provider images into")]
    NoContainer(String),
    #[error(
        "volume {volume:?} of image {reference} is already a volume of the Deployment's template"
    )]
    Taken { volume: String, reference: String },
}

/// Adds to `deployment` (a Deployment as JSON) one image volume per reference, in reference order,
/// each pulled if not present (the references are digests), and its read-only mount at
/// [`mount_path`] in container `container`. The template's own volumes are kept, and a name one of
/// them has already is refused rather than replaced.
pub fn add_image_volumes(
    deployment: &mut Value,
    container: &str,
    references: &BTreeSet<String>,
) -> Result<(), VolumeError> {
    let spec = &mut deployment["spec"]["template"]["spec"];
    let taken: BTreeSet<String> = spec["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v["name"].as_str().map(str::to_string))
        .collect();
    let mut volumes = Vec::new();
    let mut mounts = Vec::new();
    for reference in references {
        let volume = volume_name(reference);
        if taken.contains(&volume) {
            return Err(VolumeError::Taken {
                volume,
                reference: reference.clone(),
            });
        }
        volumes.push(json!({"name": volume, "image": {"reference": reference, "pullPolicy": "IfNotPresent"}}));
        mounts.push(json!({"name": volume, "mountPath": mount_path(reference), "readOnly": true}));
    }
    let target = spec["containers"]
        .as_array_mut()
        .and_then(|cs| cs.iter_mut().find(|c| c["name"] == container))
        .ok_or_else(|| VolumeError::NoContainer(container.to_string()))?;
    append(&mut target["volumeMounts"], mounts);
    append(&mut spec["volumes"], volumes);
    Ok(())
}

fn append(list: &mut Value, items: Vec<Value>) {
    if items.is_empty() {
        return;
    }
    match list.as_array_mut() {
        Some(existing) => existing.extend(items),
        None => *list = Value::Array(items),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha256_hex(s: &str) -> String {
        capi_object::lower_hex(&Sha256::digest(s.as_bytes()))
    }

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
        assert_eq!(
            mount_path("quay.io/a:1"),
            format!(
                "/var/lib/provider-images/a-1-{}",
                &sha256_hex("quay.io/a:1")[..8]
            )
        );
    }

    #[test]
    fn revisions_name_their_image_components_only() {
        let status = json!({"revisions": [
            {"name": "r2", "revision": 2, "components": [
                {"name": "cluster-api", "type": "Image", "image": {"ref": "quay.io/core@sha256:2", "profile": "default"}},
                {"name": "other", "type": "Git", "image": {"ref": "quay.io/not-an-image-component"}}]},
            {"name": "r1", "revision": 1, "components": [
                {"name": "cluster-api", "type": "Image", "image": {"ref": "quay.io/core@sha256:1", "profile": "default"}},
                {"name": "cluster-api-provider-aws", "type": "Image", "image": {"ref": "quay.io/core@sha256:2", "profile": "default"}}]},
            {"name": "r0", "revision": 0}]});
        let want: BTreeSet<String> = ["quay.io/core@sha256:1", "quay.io/core@sha256:2"]
            .map(String::from)
            .into();
        assert_eq!(revision_images(&status), want);
        assert!(revision_images(&Value::Null).is_empty());
        assert!(revision_images(&json!({"revisions": "not a list"})).is_empty());
    }

    fn deployment() -> Value {
        json!({"spec": {"template": {"spec": {
            "containers": [{"name": "sidecar"}, {"name": "capi-installer",
                "volumeMounts": [{"name": "metrics-tls", "mountPath": "/etc/tls"}]}],
            "volumes": [{"name": "metrics-tls", "secret": {"secretName": "s"}}]}}}})
    }

    #[test]
    fn every_image_is_a_read_only_volume_in_reference_order_beside_the_templates_own() {
        let (b, a) = ("quay.io/b@sha256:1", "quay.io/a@sha256:1");
        let mut d = deployment();
        add_image_volumes(&mut d, "capi-installer", &[b, a].map(String::from).into()).unwrap();
        let spec = &d["spec"]["template"]["spec"];
        assert_eq!(
            spec["volumes"],
            json!([{"name": "metrics-tls", "secret": {"secretName": "s"}},
                {"name": volume_name(a), "image": {"reference": a, "pullPolicy": "IfNotPresent"}},
                {"name": volume_name(b), "image": {"reference": b, "pullPolicy": "IfNotPresent"}}])
        );
        assert_eq!(
            spec["containers"][1]["volumeMounts"],
            json!([{"name": "metrics-tls", "mountPath": "/etc/tls"},
                {"name": volume_name(a), "mountPath": mount_path(a), "readOnly": true},
                {"name": volume_name(b), "mountPath": mount_path(b), "readOnly": true}])
        );
        assert_eq!(spec["containers"][0], json!({"name": "sidecar"}));
        // No image: the template as it was.
        let mut none = deployment();
        add_image_volumes(&mut none, "capi-installer", &BTreeSet::new()).unwrap();
        assert_eq!(none, deployment());
    }

    #[test]
    fn a_missing_container_or_a_taken_name_is_refused() {
        let images: BTreeSet<String> = ["quay.io/a@sha256:1".to_string()].into();
        let err = add_image_volumes(&mut deployment(), "installer", &images).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the Deployment has no container \"installer\" to mount the provider images into"
        );
        let mut d = deployment();
        d["spec"]["template"]["spec"]["volumes"][0]["name"] =
            json!(volume_name("quay.io/a@sha256:1"));
        let err = add_image_volumes(&mut d, "capi-installer", &images).unwrap_err();
        assert!(matches!(err, VolumeError::Taken { .. }), "{err}");
    }
}
