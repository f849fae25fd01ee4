//! Provider sources: where a provider's manifests come from, and which of the available sources the
//! cluster's wants select.
//!
//! A source kind (the installer's `source::configmap`, transport ConfigMaps; `source::profile`,
//! image-based profiles) lists the providers it holds ([`SourceCatalog::candidates`]) and loads one
//! ([`SourceCatalog::load`]) into a [`Payload`]: the components text. Everything after that (render,
//! plan, apply, status) is the same for every kind; nothing uses a ConfigMap name as a provider's
//! identity.

use std::fmt;
use std::path::{Path, PathBuf};

use capi_manifests::ProviderType;
use capi_manifests::profile::{MetadataError, PROFILES_DIR};

use crate::desired::Wanted;

/// The identity of a provider's source, used wherever a provider is named: inventory key, failure
/// memory, status messages, Events.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SourceId {
    /// A transport ConfigMap in the installer's namespace, by name.
    ConfigMap(String),
    /// An image-based profile under `--profiles-dir`.
    Profile(ProfileRef),
}

impl SourceId {
    /// The key of this source's inventory and record in ConfigMap `capi-installer-inventory` (a valid
    /// ConfigMap key). A ConfigMap source keeps its bare name, the key earlier versions wrote; another
    /// kind must use a form no ConfigMap name can take (names have no `_` and no capitals), e.g.
    /// `profile_aws`.
    pub fn inventory_key(&self) -> String {
        match self {
            SourceId::ConfigMap(name) => name.clone(),
            SourceId::Profile(p) => format!("{PROFILE_KEY_PREFIX}{}_{}", p.image, p.profile),
        }
    }

    /// The transport ConfigMap this source is, if it is one (the bundle policy protects every such
    /// ConfigMap from being written by a bundle).
    pub fn configmap(&self) -> Option<&str> {
        match self {
            SourceId::ConfigMap(name) => Some(name),
            SourceId::Profile(_) => None,
        }
    }

    /// The inverse of [`Self::inventory_key`].
    pub fn from_inventory_key(key: &str) -> Option<SourceId> {
        // The image folder is a DNS label (no `_`), so the first `_` after the prefix ends it.
        match key.strip_prefix(PROFILE_KEY_PREFIX) {
            Some(rest) => {
                let (image, profile) = rest.split_once('_')?;
                Some(SourceId::Profile(ProfileRef {
                    image: image.to_string(),
                    profile: profile.to_string(),
                }))
            }
            None => Some(SourceId::ConfigMap(key.to_string())),
        }
    }
}

/// Inventory keys of profile sources start with this; no ConfigMap name contains `_`.
const PROFILE_KEY_PREFIX: &str = "profile_";

impl fmt::Display for SourceId {
    /// `ConfigMap aws`: how status messages and Events name a source.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SourceId::ConfigMap(name) => write!(f, "ConfigMap {name}"),
            SourceId::Profile(p) => p.fmt(f),
        }
    }
}

/// An available source and the provider it declares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProviderSource {
    pub id: SourceId,
    /// `provider.cluster.x-k8s.io/name`, e.g. `aws`.
    pub name: String,
    pub provider_type: ProviderType,
    /// `provider.cluster.x-k8s.io/version`, for status and logs only.
    pub version: Option<String>,
    /// When the source appeared (RFC 3339), which decides between two sources of one provider.
    pub created: Option<String>,
}

impl ProviderSource {
    /// `aws v2.10.0`, or the name alone without a version.
    pub fn describe(&self) -> String {
        match &self.version {
            Some(v) => format!("{} {v}", self.name),
            None => self.name.clone(),
        }
    }
}

/// What a source holds, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Payload {
    /// Where it came from, as errors name it: `ConfigMap openshift-cluster-api/aws`.
    pub origin: String,
    /// Multi-document YAML of the provider's components.
    pub components: String,
    /// The reference the components use for the provider's own image (a profile's `selfImageRef`),
    /// replaced when rendering by [`Self::image`] when known, otherwise by the release's image of the
    /// same key.
    pub self_image_ref: Option<String>,
    /// The image the components came from (a profile's image volume named after a release image):
    /// its own reference, as the reference substitutes for `selfImageRef`.
    pub image: Option<String>,
    /// The component the components make up for the reference (a profile's metadata name,
    /// `cluster-api-provider-aws`): the label its current generation sets on each object, part of its
    /// content ID ([`crate::reference::content_id`]). `None` for a transport ConfigMap.
    pub component: Option<String>,
    /// The version the source declared when these components were read from it. The source may have
    /// changed since the round selected it (a watch event between the two reads): what is recorded
    /// and reported for this content is this version, not the selected source's.
    pub version: Option<String>,
}

impl Payload {
    /// Whether these components come from a release image: a profile whose folder is the volume of
    /// an image the release's images ConfigMap (written by the cluster-version operator) pins by
    /// digest. Such content is as trusted as the release itself; a transport ConfigMap or a folder
    /// that is no release image is written in the cluster (or by hand) and is not.
    pub(crate) fn is_release_image(&self) -> bool {
        self.image
            .as_deref()
            .is_some_and(capi_manifests::image::is_digest_reference)
    }
}

/// A source that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// Selected a moment ago, gone now (deleted between the listing and the read).
    #[error("{id} disappeared")]
    Gone { id: SourceId },
    /// Present but not decodable (corrupt compression, both payload forms, missing keys).
    #[error("{0}")]
    Decode(#[source] capi_manifests::Error),
    /// A profile whose files cannot be used.
    #[error("{0}")]
    Profile(#[source] ProfileProblem),
}

/// One kind of source, read from the installer's watch caches (no request).
pub trait SourceCatalog: Send + Sync {
    /// Every provider source of this kind available now.
    fn candidates(&self) -> Vec<ProviderSource>;
    /// Reads one source; `None` when `id` is not of this kind.
    fn load(&self, id: &SourceId) -> Option<Result<Payload, SourceError>>;
    /// A token that changes whenever `id`'s payload may have changed (a transport ConfigMap's
    /// `resourceVersion`); `None` when `id` is not of this kind, is gone, or does not change under a
    /// running installer (a profile in an image volume).
    fn revision(&self, _id: &SourceId) -> Option<String> {
        None
    }
    /// The source as a component of a revision in `ClusterAPI/cluster` status, when it is one: a
    /// profile of an image known by digest (the API takes no other); `None` otherwise.
    fn image_component(&self, _id: &SourceId) -> Option<ImageComponent> {
        None
    }
    /// The platforms whose infrastructure provider this kind of source declares, by platform type →
    /// provider name (a profile's `ocpPlatform`); a transport ConfigMap declares none.
    fn platforms(&self) -> crate::desired::DeclaredPlatforms {
        Default::default()
    }
}

/// A profile as the reference's revisions list it (`components[]` of a `ClusterAPI` revision).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageComponent {
    /// The profile's metadata name (`cluster-api-provider-aws`), as the reference names components.
    pub name: String,
    /// The image's reference, by digest.
    pub image: String,
    /// The profile's folder name in the image (`default`).
    pub profile: String,
}

/// One provider to reconcile: the source the cluster's wants selected, with what the want adds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub source: ProviderSource,
    /// The `cluster.x-k8s.io/provider` value of every object of this provider.
    pub clusterctl_label: String,
}

impl Target {
    /// This target with the version its source declared when `payload` was read (see
    /// [`Payload::version`]); unchanged when it could not be read.
    pub fn as_read(&self, payload: &Result<Payload, SourceError>) -> Target {
        let mut read = self.clone();
        if let Ok(p) = payload {
            read.source.version = p.version.clone();
        }
        read
    }
}

/// A source refused because another one already provides its provider.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    pub target: Target,
    /// The source that provides the provider.
    pub kept: SourceId,
}

/// The outcome of selection: the providers to reconcile, in install order, the required ones that
/// have no source, and the second sources of a provider.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    pub targets: Vec<Target>,
    pub missing: Vec<Wanted>,
    pub refused: Vec<Refused>,
}

impl Selection {
    /// Every source selected, refused ones included (their objects are not "unselected").
    pub(crate) fn ids(&self) -> std::collections::BTreeSet<SourceId> {
        self.targets
            .iter()
            .map(|t| t.source.id.clone())
            .chain(self.refused.iter().map(|r| r.target.source.id.clone()))
            .collect()
    }
}

/// Picks, for each wanted (name, type) pair in order, the one candidate that declares it. When several
/// do, one provides the provider and the others are refused; the choice is stable so that the two never
/// take turns: the source that owns objects (in `owners`), else a transport ConfigMap before a profile,
/// else the oldest, else the first by id. Pure.
pub(crate) fn select(
    wants: &[Wanted],
    candidates: &[ProviderSource],
    owners: &std::collections::BTreeSet<SourceId>,
) -> Selection {
    let mut selection = Selection::default();
    for wanted in wants {
        let mut matching: Vec<&ProviderSource> = candidates
            .iter()
            .filter(|c| c.name == wanted.name && c.provider_type == wanted.provider_type)
            .collect();
        matching.sort_by(|a, b| {
            let rank = |s: &ProviderSource| {
                (
                    !owners.contains(&s.id),
                    matches!(s.id, SourceId::Profile(_)),
                    s.created.clone(),
                    s.id.clone(),
                )
            };
            rank(a).cmp(&rank(b))
        });
        let target = |source: &ProviderSource| Target {
            source: source.clone(),
            clusterctl_label: wanted.clusterctl_label.clone(),
        };
        let Some((first, others)) = matching.split_first() else {
            if wanted.required {
                selection.missing.push(wanted.clone());
            }
            continue;
        };
        selection.targets.push(target(first));
        selection.refused.extend(others.iter().map(|s| Refused {
            target: target(s),
            kept: first.id.clone(),
        }));
    }
    selection
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::desired::wanted;

    fn source(id: &str, name: &str, provider_type: ProviderType) -> ProviderSource {
        ProviderSource {
            id: SourceId::ConfigMap(id.into()),
            name: name.into(),
            provider_type,
            version: Some("v1.0.0".into()),
            created: None,
        }
    }

    use ProviderType::{Core, Infrastructure};

    #[test]
    fn core_comes_before_infrastructure_whatever_the_listing_order() {
        let candidates = vec![
            source(
                "openshift-cluster-api-aws-policies",
                "openshift-cluster-api-aws",
                Infrastructure,
            ),
            source("aws", "aws", Infrastructure),
            source("gcp", "gcp", Infrastructure),
            source("policies-b", "openshift-cluster-api", Core),
            source("policies-a", "openshift-cluster-api", Core),
            source("cluster-api", "cluster-api", Core),
            source("mislabelled", "aws", Core),
        ];
        let selection = select(&wanted(&["aws"]), &candidates, &Default::default());
        let names: Vec<String> = selection
            .targets
            .iter()
            .map(|t| t.source.id.to_string())
            .collect();
        assert_eq!(
            names,
            [
                "ConfigMap cluster-api",
                "ConfigMap policies-a",
                "ConfigMap aws",
                "ConfigMap openshift-cluster-api-aws-policies"
            ]
        );
        assert!(selection.missing.is_empty());
        let labels: Vec<&str> = selection
            .targets
            .iter()
            .map(|t| t.clusterctl_label.as_str())
            .collect();
        assert_eq!(
            labels,
            [
                "cluster-api",
                "cluster-api",
                "infrastructure-aws",
                "infrastructure-aws"
            ]
        );
        let refused: Vec<(String, String)> = selection
            .refused
            .iter()
            .map(|r| (r.target.source.id.to_string(), r.kept.to_string()))
            .collect();
        assert_eq!(
            refused,
            [(
                "ConfigMap policies-b".to_string(),
                "ConfigMap policies-a".to_string()
            )]
        );
    }

    #[test]
    fn of_two_sources_of_one_provider_the_owner_then_the_oldest_is_kept() {
        let mut old = source("aws-old", "aws", Infrastructure);
        old.created = Some("2026-01-01T00:00:00Z".into());
        let mut new = source("aws-a-new", "aws", Infrastructure);
        new.created = Some("2026-06-01T00:00:00Z".into());
        let candidates = vec![new.clone(), old.clone()];
        let kept = |owners: &[&SourceId]| {
            let owners = owners.iter().map(|id| (*id).clone()).collect();
            let selection = select(&wanted(&["aws"]), &candidates, &owners);
            (
                selection.targets[0].source.id.clone(),
                selection.refused[0].target.source.id.clone(),
            )
        };
        assert_eq!(kept(&[]), (old.id.clone(), new.id.clone()), "the oldest");
        assert_eq!(
            kept(&[&new.id]),
            (new.id.clone(), old.id.clone()),
            "the one that owns objects, whatever its age"
        );
    }

    #[test]
    fn missing_names_the_required_providers_only() {
        let candidates = vec![
            source("policies", "openshift-cluster-api", Core),
            source("aws", "aws", Infrastructure),
        ];
        let missing: Vec<String> = select(&wanted(&["aws"]), &candidates, &Default::default())
            .missing
            .iter()
            .map(Wanted::describe)
            .collect();
        assert_eq!(missing, ["cluster-api (core)"]);
        let missing: Vec<String> = select(
            &wanted(&["gcp"]),
            &[source("c", "cluster-api", Core)],
            &Default::default(),
        )
        .missing
        .iter()
        .map(Wanted::describe)
        .collect();
        assert_eq!(missing, ["gcp (infrastructure)"]);
    }

    #[test]
    fn a_profile_and_another_source_of_one_provider_are_not_both_selected() {
        let profile = |image: &str, name: &str, t| ProviderSource {
            id: SourceId::Profile(ProfileRef {
                image: image.into(),
                profile: "default".into(),
            }),
            ..source("unused", name, t)
        };
        let candidates = vec![
            profile("aws-img", "aws", Infrastructure),
            source("aws", "aws", Infrastructure),
            profile("core-a", "cluster-api", Core),
            profile("core-b", "cluster-api", Core),
            source("policies", "openshift-cluster-api", Core),
        ];
        let selection = select(&wanted(&["aws"]), &candidates, &Default::default());
        let ids = |targets: &[Target]| {
            targets
                .iter()
                .map(|t| t.source.id.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            ids(&selection.targets),
            [
                "profile core-a/default",
                "ConfigMap policies",
                "ConfigMap aws"
            ]
        );
        let refused: Vec<(String, String)> = selection
            .refused
            .iter()
            .map(|r| (r.target.source.id.to_string(), r.kept.to_string()))
            .collect();
        assert_eq!(
            refused,
            [
                (
                    "profile core-b/default".to_string(),
                    "profile core-a/default".to_string()
                ),
                (
                    "profile aws-img/default".to_string(),
                    "ConfigMap aws".to_string()
                ),
            ]
        );
        assert!(selection.missing.is_empty());
    }

    #[test]
    fn inventory_keys_round_trip_and_never_collide() {
        let profile = SourceId::Profile(ProfileRef {
            image: "aws-cluster-api-controllers".into(),
            profile: "tech_preview".into(),
        });
        let configmap = SourceId::ConfigMap("aws".into());
        assert_eq!(
            profile.inventory_key(),
            "profile_aws-cluster-api-controllers_tech_preview"
        );
        assert_eq!(
            profile.to_string(),
            "profile aws-cluster-api-controllers/tech_preview"
        );
        for id in [profile, configmap] {
            assert_eq!(SourceId::from_inventory_key(&id.inventory_key()), Some(id));
        }
    }

    #[test]
    fn without_infrastructure_only_core_is_selected() {
        let candidates = vec![
            source("cluster-api", "cluster-api", Core),
            source("aws", "aws", Infrastructure),
        ];
        let selection = select(&wanted(&[]), &candidates, &Default::default());
        assert_eq!(selection.targets.len(), 1);
        assert_eq!(
            selection.targets[0].source.id,
            SourceId::ConfigMap("cluster-api".into())
        );
    }
}

/// Where a profile lives: `DIR/<image>/capi-operator-manifests/<profile>`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProfileRef {
    /// The image's folder under `--profiles-dir` (a DNS label, as the reference's volume names).
    pub image: String,
    pub profile: String,
}

impl ProfileRef {
    /// `DIR/<image>/capi-operator-manifests/<profile>`.
    pub fn dir(&self, root: &Path) -> PathBuf {
        root.join(&self.image)
            .join(PROFILES_DIR)
            .join(&self.profile)
    }
}

impl fmt::Display for ProfileRef {
    /// `profile aws-cluster-api-controllers/default`: how status messages and Events name it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "profile {}/{}", self.image, self.profile)
    }
}

/// A profile, or a folder that should hold one, that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProfileProblem {
    #[error("{path}: {message}")]
    Unreadable { path: PathBuf, message: String },
    #[error("{0}")]
    Metadata(#[from] MetadataError),
    #[error("{id}: {message}")]
    Unusable { id: ProfileRef, message: String },
}
