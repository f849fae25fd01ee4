//! Image-based provider profiles, the reference's newer generation (ref §1.4–§1.6, §3.2): a
//! provider image carries `capi-operator-manifests/<profile>/` with `manifests.yaml` (every object
//! of the provider, already customized, `${VAR}` placeholders left for the installer) and
//! `metadata.yaml` (this module's [`ProfileMetadata`]).
//!
//! Pure: callers read the files; this module parses the metadata and decides which profiles a
//! platform installs and in which order.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde::Deserialize;

/// The folder of a provider image that holds its profiles.
pub const PROFILES_DIR: &str = "capi-operator-manifests";
/// The profile's metadata file.
pub const METADATA_FILE: &str = "metadata.yaml";
/// The profile's objects, multi-document YAML.
pub const MANIFESTS_FILE: &str = "manifests.yaml";
/// The optional list of a profile's objects (`--manifests-summary`), for review.
pub(crate) const SUMMARY_FILE: &str = "manifests-summary.yaml";
/// The profile the reference installs, and our default.
pub const DEFAULT_PROFILE: &str = "default";
/// `attributes` keys manifests-gen writes by convention.
pub const ATTRIBUTE_TYPE: &str = "type";
pub(crate) const ATTRIBUTE_VERSION: &str = "version";

/// The `Infrastructure` platform types the reference generator accepts for `ocpPlatform`.
pub(crate) const OCP_PLATFORM_TYPES: [&str; 14] = [
    "AWS",
    "Azure",
    "BareMetal",
    "EquinixMetal",
    "External",
    "GCP",
    "IBMCloud",
    "KubeVirt",
    "Libvirt",
    "None",
    "Nutanix",
    "OpenStack",
    "PowerVS",
    "VSphere",
];

/// Checks a profile's name: it becomes a folder name and part of inventory keys. The reference's API
/// allows the same characters.
pub fn validate_profile_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 100
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "profile name {name:?} must be 1 to 100 letters, digits, '-' or '_'"
        ))
    }
}

/// `metadata.yaml` of a profile. Unknown fields are ignored, as the reference's decoder does, so
/// that a newer generator's additions do not break an older installer.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProfileMetadata {
    /// The component's name, e.g. `cluster-api-provider-aws`; informational and the last sort key.
    pub name: String,
    /// Informational; manifests-gen writes `type` (`core` | `infrastructure`) and `version`.
    #[serde(default)]
    pub attributes: BTreeMap<String, String>,
    /// The `Infrastructure` platform type (`AWS`, `GCP`, ...) the profile is for; absent: every
    /// platform (the core provider has none).
    #[serde(default)]
    pub ocp_platform: Option<String>,
    /// The image reference the manifests use for the provider's own image; replaced at install
    /// time by the release's image for it.
    #[serde(default)]
    pub self_image_ref: Option<String>,
    /// Lower installs first (conventions: core 10, infrastructure providers 20, the operator's
    /// own components 30); absent means 0.
    #[serde(default)]
    pub install_order: i64,
}

/// A `metadata.yaml` that cannot be used; `source` names the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}: invalid profile metadata: {message}")]
pub struct MetadataError {
    pub source_name: String,
    pub message: String,
}

impl ProfileMetadata {
    /// Parses and validates a profile's `metadata.yaml`; `source` names it in errors.
    pub fn parse(source: &str, text: &str) -> Result<Self, MetadataError> {
        let err = |message: String| MetadataError {
            source_name: source.to_owned(),
            message,
        };
        let md: ProfileMetadata = serde_saphyr::from_str(text).map_err(|e| err(e.to_string()))?;
        if md.name.trim().is_empty() {
            return Err(err("name is empty".to_owned()));
        }
        // Empty strings mean "not set" in the reference's Go structs (`omitempty`).
        let md = ProfileMetadata {
            ocp_platform: md.ocp_platform.filter(|p| !p.is_empty()),
            self_image_ref: md.self_image_ref.filter(|r| !r.is_empty()),
            ..md
        };
        if let Some(t) = md.attributes.get(ATTRIBUTE_TYPE)
            && !matches!(t.as_str(), "core" | "infrastructure")
        {
            return Err(err(format!(
                "attributes.type is {t:?}; the installer knows core and infrastructure providers"
            )));
        }
        Ok(md)
    }

    /// Whether a cluster of `platform` (an `Infrastructure` platform type) installs this
    /// profile: platform-independent profiles match every platform.
    pub(crate) fn matches_platform(&self, platform: &str) -> bool {
        self.ocp_platform.as_deref().is_none_or(|p| p == platform)
    }

    /// `attributes.version`, if the generator recorded one.
    pub fn version(&self) -> Option<&str> {
        self.attributes.get(ATTRIBUTE_VERSION).map(String::as_str)
    }

    /// The reference's install order (ref §3.4): `installOrder`, then platform (platform-
    /// independent first, so a provider's generic parts precede its platform-specific ones at
    /// the same order), then name.
    pub fn install_cmp(&self, other: &Self) -> Ordering {
        self.install_order
            .cmp(&other.install_order)
            .then_with(|| {
                self.ocp_platform
                    .as_deref()
                    .unwrap_or("")
                    .cmp(other.ocp_platform.as_deref().unwrap_or(""))
            })
            .then_with(|| self.name.cmp(&other.name))
    }
}

/// The profiles of `profiles` a cluster of `platform` installs, in install order. `metadata`
/// reads each item's metadata. Items that compare equal keep their relative order.
pub fn select<'a, T>(
    profiles: &'a [T],
    platform: &str,
    metadata: impl Fn(&T) -> &ProfileMetadata,
) -> Vec<&'a T> {
    let mut selected: Vec<&T> = profiles
        .iter()
        .filter(|p| metadata(p).matches_platform(platform))
        .collect();
    selected.sort_by(|a, b| metadata(a).install_cmp(metadata(b)));
    selected
}

/// Replaces every occurrence of the profile's `selfImageRef` in the manifests text with
/// `image`, as the reference does (ref §3.5 step 2: after variable substitution, before
/// parsing). The reference is the provider's own image by construction, so every occurrence
/// (an `image:` field, an argument or variable naming it) means the same image.
///
/// Unlike the reference's plain substring replacement, an occurrence counts only as a whole
/// image reference: `...:aws-cluster-api-controllers` inside `...:aws-cluster-api-controllers-v2`
/// or `my-registry.ci.openshift.org/...` is another image and stays.
pub fn replace_self_image(manifests: &str, self_image_ref: &str, image: &str) -> String {
    if self_image_ref.is_empty() {
        return manifests.to_owned();
    }
    // Characters that can continue an image reference on either side.
    let part_of_ref = |c: char| c.is_ascii_alphanumeric() || "._-/:@".contains(c);
    let mut out = String::with_capacity(manifests.len());
    let mut rest = manifests;
    while let Some(at) = rest.find(self_image_ref) {
        let end = at + self_image_ref.len();
        let before = rest[..at].chars().next_back();
        let after = rest[end..].chars().next();
        out.push_str(&rest[..at]);
        if before.is_some_and(part_of_ref) || after.is_some_and(part_of_ref) {
            out.push_str(self_image_ref);
        } else {
            out.push_str(image);
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const AWS: &str = "attributes:\n  type: infrastructure\n  version: v2.13.0\ninstallOrder: 20\nname: cluster-api-provider-aws\nocpPlatform: AWS\nselfImageRef: registry.ci.openshift.org/openshift:aws-cluster-api-controllers\n";

    fn md(name: &str, order: i64, platform: Option<&str>) -> ProfileMetadata {
        ProfileMetadata {
            name: name.to_owned(),
            attributes: BTreeMap::new(),
            ocp_platform: platform.map(str::to_owned),
            self_image_ref: None,
            install_order: order,
        }
    }

    #[test]
    fn parses_the_reference_format() {
        let m = ProfileMetadata::parse("metadata.yaml", AWS).unwrap();
        assert_eq!(m.name, "cluster-api-provider-aws");
        assert_eq!(m.install_order, 20);
        assert_eq!(m.ocp_platform.as_deref(), Some("AWS"));
        assert_eq!(
            m.self_image_ref.as_deref(),
            Some("registry.ci.openshift.org/openshift:aws-cluster-api-controllers")
        );
        assert_eq!(m.version(), Some("v2.13.0"));
        assert_eq!(m.attributes["type"], "infrastructure");

        // Everything but the name may be left out; empty strings count as absent; unknown
        // fields are ignored.
        let m = ProfileMetadata::parse(
            "m",
            "name: cluster-api\nocpPlatform: \"\"\nselfImageRef: \"\"\nfutureField: 1\n",
        )
        .unwrap();
        assert_eq!(m, md("cluster-api", 0, None));
    }

    #[test]
    fn rejects_what_it_cannot_use() {
        for (text, want) in [
            ("installOrder: 10\n", "name"),
            ("name: \"  \"\n", "name is empty"),
            ("name: x\ninstallOrder: first\n", "installOrder"),
            (
                "name: x\nattributes: {type: bootstrap}\n",
                "attributes.type",
            ),
            ("[not, a, map]", ""),
        ] {
            let err =
                ProfileMetadata::parse("img/capi-operator-manifests/default/metadata.yaml", text)
                    .unwrap_err()
                    .to_string();
            assert!(
                err.starts_with(
                    "img/capi-operator-manifests/default/metadata.yaml: invalid profile metadata"
                ),
                "{err}"
            );
            assert!(err.contains(want), "{want}: {err}");
        }
    }

    #[test]
    fn selection_by_platform_then_install_order_platform_and_name() {
        let profiles = [
            md("operator-aws", 30, Some("AWS")),
            md("cluster-api-provider-gcp", 20, Some("GCP")),
            md("operator", 30, None),
            md("cluster-api-provider-aws", 20, Some("AWS")),
            md("orc", 10, Some("AWS")),
            md("cluster-api", 10, None),
        ];
        let names = |platform: &str| {
            select(&profiles, platform, |m| m)
                .into_iter()
                .map(|m| m.name.as_str())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names("AWS"),
            [
                "cluster-api",
                "orc",
                "cluster-api-provider-aws",
                "operator",
                "operator-aws"
            ]
        );
        assert_eq!(
            names("GCP"),
            ["cluster-api", "cluster-api-provider-gcp", "operator"]
        );
        // A platform without a provider still gets the platform-independent profiles; whether
        // to install anything there is the installer's decision.
        assert_eq!(names("Nutanix"), ["cluster-api", "operator"]);
    }

    #[test]
    fn self_image_is_replaced_wherever_it_is_a_whole_reference() {
        let text = "image: registry.ci.openshift.org/openshift:aws\nargs: [\"--image=registry.ci.openshift.org/openshift:aws\"]\nenv: {value: 'registry.ci.openshift.org/openshift:aws'}\nother: registry.ci.openshift.org/openshift:aws-other\nmirror: my-registry.ci.openshift.org/openshift:aws\nend: registry.ci.openshift.org/openshift:aws";
        let out = replace_self_image(
            text,
            "registry.ci.openshift.org/openshift:aws",
            "quay.io/x@sha256:1",
        );
        assert_eq!(
            out,
            "image: quay.io/x@sha256:1\nargs: [\"--image=quay.io/x@sha256:1\"]\nenv: {value: 'quay.io/x@sha256:1'}\nother: registry.ci.openshift.org/openshift:aws-other\nmirror: my-registry.ci.openshift.org/openshift:aws\nend: quay.io/x@sha256:1"
        );
        assert_eq!(replace_self_image(text, "", "x"), text);
    }
}
