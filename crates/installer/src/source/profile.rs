//! The second source kind: image-based profiles on disk (ref §3.2). `--profiles-dir DIR` holds one
//! folder per provider image, laid out as the reference mounts provider images as volumes, and each
//! image carries its profiles in `capi-operator-manifests/<profile>/{metadata.yaml,manifests.yaml}`.
//! The installer reads every profile of every image (or only `--profile`), once, when it starts
//! (image volumes do not change under a running pod).
//!
//! A profile declares its provider through its metadata ([`Profile::provider`]): core by name, an
//! infrastructure provider by the provider of its `ocpPlatform`, so that selection, duplicates and
//! status treat a profile and a transport ConfigMap of the same provider as the same provider.

use std::path::{Path, PathBuf};

use capi_manifests::profile::{
    ATTRIBUTE_TYPE, MANIFESTS_FILE, METADATA_FILE, PROFILES_DIR, ProfileMetadata,
};

use capi_manifests::{Budget, ProviderType};

use super::{
    ImageComponent, Payload, ProfileProblem, ProfileRef, ProviderSource, SourceCatalog,
    SourceError, SourceId, images,
};
use crate::render::Images;

/// Larger files are refused before they are read: the resource budget that every provider's
/// components pass when parsed ([`Budget`]) refuses them anyway (the largest real profile, core, is
/// 0.7 MB).
pub(crate) const MAX_MANIFESTS_BYTES: u64 = Budget::DEFAULT_MAX_BYTES as u64;
const MAX_METADATA_BYTES: u64 = 64 << 10;

/// A profile read from disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profile {
    pub(crate) id: ProfileRef,
    /// `DIR/<image>/capi-operator-manifests/<profile>/manifests.yaml`, as errors name it.
    pub(crate) manifests_path: PathBuf,
    pub metadata: ProfileMetadata,
    /// The reference of the image its folder holds, when the folder is the volume of a release
    /// image ([`images::volume_name`]); `None` for a folder named otherwise (laid out by hand).
    pub(crate) image: Option<String>,
    /// The objects, or why they cannot be read (reported as that provider's failure).
    pub(crate) manifests: Result<String, ProfileProblem>,
}

impl Profile {
    /// The provider this profile carries, as the installer selects providers: core by its name
    /// (`cluster-api`), an infrastructure provider by the name of its platform's provider
    /// (`ocpPlatform: AWS` → `aws`), the name a transport ConfigMap of the same provider carries; on
    /// a platform the table does not know, the lower-cased platform (`Nutanix` → `nutanix`,
    /// [`capi_manifests::platform::provider_name_of`]).
    /// The type comes from `attributes.type`; without it, a profile with an `ocpPlatform` is an
    /// infrastructure provider.
    pub(crate) fn provider(&self) -> Result<(String, ProviderType), ProfileProblem> {
        let problem = |message: String| ProfileProblem::Unusable {
            id: self.id.clone(),
            message,
        };
        let md = &self.metadata;
        let provider_type = match (md.attributes.get(ATTRIBUTE_TYPE), &md.ocp_platform) {
            (Some(t), _) => ProviderType::from_label(t)
                .ok_or_else(|| problem(format!("attributes.type {t:?} is not a provider type")))?,
            (None, Some(_)) => ProviderType::Infrastructure,
            (None, None) => {
                return Err(problem(format!(
                    "{} has neither attributes.type nor ocpPlatform: it is not a core or infrastructure provider (components of other kinds, such as the reference operator's own, are not installed)",
                    md.name
                )));
            }
        };
        let name = match provider_type {
            ProviderType::Core => md.name.clone(),
            ProviderType::Infrastructure => {
                let Some(platform) = &md.ocp_platform else {
                    return Err(problem(
                        "an infrastructure provider profile needs ocpPlatform, the platform it is for"
                            .to_string(),
                    ));
                };
                capi_manifests::platform::provider_name_of(platform)
                    .map_err(|e| problem(format!("ocpPlatform: {e}")))?
            }
        };
        Ok((name, provider_type))
    }
}

/// Everything found under `--profiles-dir`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Scan {
    /// Profiles with readable metadata, by image folder name.
    pub(crate) profiles: Vec<Profile>,
    /// Profiles that exist but whose provider cannot be told; reported, never silently skipped.
    pub(crate) problems: Vec<ProfileProblem>,
    /// Image folders without this profile (an image of another component, or a placeholder image
    /// without manifests, as the release ships for unsupported architectures): logged.
    pub(crate) skipped: Vec<String>,
}

/// Reads the profiles of every image folder under `root`, in folder name order, and within an image
/// in profile name order, as the reference scans its image volumes: every profile (`only: None`), or
/// the one named `only` (`--profile`). An error only when `root` itself cannot be read; everything
/// below it is a [`Scan`] entry.
pub(crate) fn scan(root: &Path, only: Option<&str>) -> std::io::Result<Scan> {
    let mut scan = Scan::default();
    for (image, path) in children(root)? {
        if !path.is_dir() {
            scan.skipped
                .push(format!("{}: not a folder", path.display()));
            continue;
        }
        let profiles_dir = path.join(PROFILES_DIR);
        let names: Vec<String> = match only {
            Some(name) if profiles_dir.join(name).is_dir() => vec![name.to_string()],
            Some(name) => {
                scan.skipped
                    .push(format!("{}: no {PROFILES_DIR}/{name}", path.display()));
                continue;
            }
            None => match children(&profiles_dir) {
                Ok(found) => {
                    let names: Vec<String> = found
                        .into_iter()
                        .filter(|(_, p)| p.is_dir())
                        .map(|(name, _)| name)
                        .collect();
                    if names.is_empty() {
                        scan.skipped
                            .push(format!("{}: no profile in {PROFILES_DIR}", path.display()));
                    }
                    names
                }
                Err(_) => {
                    scan.skipped
                        .push(format!("{}: no {PROFILES_DIR}", path.display()));
                    continue;
                }
            },
        };
        if !capi_object::is_dns_label(&image) {
            // The name becomes part of the inventory key and of every message; the reference
            // derives it from the image reference as a DNS label.
            scan.problems.push(ProfileProblem::Unreadable {
                path,
                message: "the image folder's name is not a DNS label (lower-case letters, digits and '-', at most 63 characters)".into(),
            });
            continue;
        }
        for profile in names {
            let id = ProfileRef {
                image: image.clone(),
                profile,
            };
            if let Err(message) = validate_profile_name(&id.profile) {
                // The name becomes part of the inventory key (`profile_<image>_<profile>`).
                scan.problems.push(ProfileProblem::Unusable { id, message });
                continue;
            }
            let dir = id.dir(root);
            match read_profile(id, &dir) {
                Ok(Some(p)) => scan.profiles.push(p),
                Ok(None) => scan.skipped.push(format!(
                    "{}: neither {METADATA_FILE} nor {MANIFESTS_FILE}",
                    dir.display()
                )),
                Err(problem) => scan.problems.push(problem),
            }
        }
    }
    Ok(scan)
}

/// The entries of `dir` by name, in name order.
fn children(dir: &Path) -> std::io::Result<Vec<(String, PathBuf)>> {
    let mut entries: Vec<(String, PathBuf)> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect();
    entries.sort();
    Ok(entries)
}

/// `None` when the folder holds neither file (not a profile); one file without the other is a
/// problem (a broken image), as in the reference, and so is metadata that cannot be read: without it
/// nobody can tell which provider the profile is. Manifests that cannot be read belong to a known
/// provider, whose reconcile reports them.
fn read_profile(id: ProfileRef, dir: &Path) -> Result<Option<Profile>, ProfileProblem> {
    let metadata_path = dir.join(METADATA_FILE);
    let manifests_path = dir.join(MANIFESTS_FILE);
    match (metadata_path.is_file(), manifests_path.is_file()) {
        (false, false) => return Ok(None),
        (true, true) => {}
        (has_metadata, _) => {
            let (present, missing) = if has_metadata {
                (METADATA_FILE, MANIFESTS_FILE)
            } else {
                (MANIFESTS_FILE, METADATA_FILE)
            };
            return Err(ProfileProblem::Unusable {
                id,
                message: format!("{} has {present} but no {missing}", dir.display()),
            });
        }
    }
    let metadata_text = read_text(&metadata_path, MAX_METADATA_BYTES)?;
    let metadata = ProfileMetadata::parse(&metadata_path.display().to_string(), &metadata_text)?;
    let manifests = read_text(&manifests_path, MAX_MANIFESTS_BYTES);
    Ok(Some(Profile {
        id,
        manifests_path,
        metadata,
        image: None,
        manifests,
    }))
}

fn read_text(path: &Path, limit: u64) -> Result<String, ProfileProblem> {
    let unreadable = |message: String| ProfileProblem::Unreadable {
        path: path.to_path_buf(),
        message,
    };
    let size = std::fs::metadata(path)
        .map_err(|e| unreadable(e.to_string()))?
        .len();
    if size > limit {
        return Err(unreadable(format!(
            "{size} bytes, over the limit of {limit} bytes"
        )));
    }
    let bytes = std::fs::read(path).map_err(|e| unreadable(e.to_string()))?;
    String::from_utf8(bytes).map_err(|e| unreadable(format!("not UTF-8: {e}")))
}

/// Checks a `--profile` name, as manifests-gen checks the name it writes.
pub use capi_manifests::profile::validate_profile_name;

/// The profiles found at startup, as a [`SourceCatalog`].
#[derive(Debug, Default)]
pub struct ProfileCatalog {
    /// Each usable profile with the provider it declares.
    entries: Vec<(ProviderSource, Profile)>,
    /// Profiles that cannot be installed: unreadable metadata, or not a provider the installer knows.
    pub problems: Vec<ProfileProblem>,
    /// Image folders without the profile.
    pub skipped: Vec<String>,
}

impl ProfileCatalog {
    pub(crate) fn new(scan: Scan) -> Self {
        let mut catalog = ProfileCatalog {
            problems: scan.problems,
            skipped: scan.skipped,
            ..Default::default()
        };
        for profile in scan.profiles {
            match profile.provider() {
                Ok((name, provider_type)) => catalog.entries.push((
                    ProviderSource {
                        id: SourceId::Profile(profile.id.clone()),
                        name,
                        provider_type,
                        version: profile.metadata.version().map(str::to_string),
                        // Read from the pod's files at start: no age to compare with another source.
                        created: None,
                    },
                    profile,
                )),
                Err(problem) => catalog.problems.push(problem),
            }
        }
        catalog
    }

    /// Scans `root` for every profile, or only the one named `only` (see [`scan`]).
    pub fn read(root: &Path, only: Option<&str>) -> std::io::Result<Self> {
        Ok(Self::new(scan(root, only)?))
    }

    /// Tells each profile the reference of its image: the release image whose volume its folder is
    /// ([`images::image_of_folder`]).
    pub(crate) fn with_images(mut self, release: &Images) -> Self {
        for (_, profile) in &mut self.entries {
            profile.image = images::image_of_folder(release, &profile.id.image).map(str::to_string);
        }
        self
    }

    /// Only the profiles whose folder is the volume of a release image (after [`Self::with_images`]):
    /// the others, of images kept mounted while an earlier revision names them, move to
    /// [`Self::skipped`]. Without this, an upgraded aws image and the kept earlier one would be two
    /// sources of one provider.
    pub fn release_only(mut self) -> Self {
        let (release, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.entries)
            .into_iter()
            .partition(|(_, p)| p.image.is_some());
        self.entries = release;
        for (_, profile) in kept {
            self.skipped.push(format!(
                "{}: not the volume of a release image (kept for an earlier revision)",
                profile.id
            ));
        }
        self
    }

    /// The usable profiles, each with the provider it declares, in the reference's install order
    /// (`installOrder`, platform, name).
    pub fn profiles(&self) -> Vec<(&ProviderSource, &Profile)> {
        let mut all: Vec<(&ProviderSource, &Profile)> =
            self.entries.iter().map(|(s, p)| (s, p)).collect();
        all.sort_by(|a, b| a.1.metadata.install_cmp(&b.1.metadata));
        all
    }
}

impl SourceCatalog for ProfileCatalog {
    fn candidates(&self) -> Vec<ProviderSource> {
        self.profiles()
            .into_iter()
            .map(|(s, _)| s.clone())
            .collect()
    }

    fn load(&self, id: &SourceId) -> Option<Result<Payload, SourceError>> {
        let SourceId::Profile(wanted) = id else {
            return None;
        };
        let (_, profile) = self.entries.iter().find(|(_, p)| &p.id == wanted)?;
        Some(profile.payload())
    }

    fn image_component(&self, id: &SourceId) -> Option<ImageComponent> {
        let SourceId::Profile(wanted) = id else {
            return None;
        };
        let (_, profile) = self.entries.iter().find(|(_, p)| &p.id == wanted)?;
        let image = profile
            .image
            .as_deref()
            .filter(|r| capi_manifests::image::is_digest_reference(r))?;
        Some(ImageComponent {
            name: profile.metadata.name.clone(),
            image: image.to_string(),
            profile: profile.id.profile.clone(),
        })
    }

    fn platforms(&self) -> crate::desired::DeclaredPlatforms {
        self.entries
            .iter()
            .filter(|(s, _)| s.provider_type == ProviderType::Infrastructure)
            .filter_map(|(s, p)| Some((p.metadata.ocp_platform.clone()?, s.name.clone())))
            .collect()
    }
}

impl Profile {
    /// The manifests as a payload for rendering.
    pub fn payload(&self) -> Result<Payload, SourceError> {
        let components = self.manifests.clone().map_err(SourceError::Profile)?;
        Ok(Payload {
            origin: self.manifests_path.display().to_string(),
            components,
            self_image_ref: self.metadata.self_image_ref.clone(),
            image: self.image.clone(),
            component: Some(self.metadata.name.clone()),
            version: self.metadata.version().map(str::to_string),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CORE_MD: &str = "attributes: {type: core, version: v1.13.4}\ninstallOrder: 10\nname: cluster-api\nselfImageRef: registry.ci.openshift.org/openshift:cluster-capi-controllers\n";
    const AWS_MD: &str = "attributes: {type: infrastructure, version: v2.13.0}\ninstallOrder: 20\nname: cluster-api-provider-aws\nocpPlatform: AWS\n";
    const MANIFESTS: &str = "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: sa, namespace: openshift-cluster-api}\n";

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn reads_one_profile_per_image_and_reports_the_rest() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let d = "capi-operator-manifests";
        write(
            root,
            &format!("core-img/{d}/default/metadata.yaml"),
            CORE_MD,
        );
        write(
            root,
            &format!("core-img/{d}/default/manifests.yaml"),
            MANIFESTS,
        );
        write(root, &format!("aws-img/{d}/default/metadata.yaml"), AWS_MD);
        write(
            root,
            &format!("aws-img/{d}/default/manifests.yaml"),
            MANIFESTS,
        );
        // Another profile of the same image is not read.
        write(
            root,
            &format!("aws-img/{d}/techpreview/metadata.yaml"),
            "{{{",
        );
        // An image without manifests (placeholder), a stray file, an empty profile folder.
        std::fs::create_dir_all(root.join("placeholder")).unwrap();
        write(root, "README", "x");
        std::fs::create_dir_all(root.join(format!("empty/{d}/default"))).unwrap();
        // Broken: one file without the other, bad metadata, a name that is no DNS label.
        write(root, &format!("half/{d}/default/manifests.yaml"), MANIFESTS);
        write(
            root,
            &format!("badmd/{d}/default/metadata.yaml"),
            "name: \"\"\n",
        );
        write(
            root,
            &format!("badmd/{d}/default/manifests.yaml"),
            MANIFESTS,
        );
        write(
            root,
            &format!("Upper_Case/{d}/default/metadata.yaml"),
            CORE_MD,
        );
        write(
            root,
            &format!("Upper_Case/{d}/default/manifests.yaml"),
            MANIFESTS,
        );

        let scan = scan(root, Some("default")).unwrap();
        let ids: Vec<String> = scan.profiles.iter().map(|p| p.id.to_string()).collect();
        assert_eq!(ids, ["profile aws-img/default", "profile core-img/default"]);
        assert_eq!(scan.profiles[1].manifests.as_deref(), Ok(MANIFESTS));
        assert_eq!(scan.profiles[1].metadata.name, "cluster-api");
        let problems: Vec<String> = scan.problems.iter().map(|p| p.to_string()).collect();
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].contains("Upper_Case") && problems[0].contains("DNS label"));
        assert!(
            problems[1].contains("badmd/capi-operator-manifests/default/metadata.yaml")
                && problems[1].contains("name is empty"),
            "{}",
            problems[1]
        );
        assert!(
            problems[2].starts_with("profile half/default:")
                && problems[2].contains("has manifests.yaml but no metadata.yaml"),
            "{}",
            problems[2]
        );
        assert_eq!(scan.skipped.len(), 3, "{:?}", scan.skipped);

        // Another profile name reads other folders.
        let other = super::scan(root, Some("techpreview")).unwrap();
        assert!(other.profiles.is_empty());
        assert_eq!(other.problems.len(), 1, "{:?}", other.problems);
        assert!(super::scan(&root.join("nope"), Some("default")).is_err());
    }

    /// Without `--profile`, as the reference: every profile of every image, in image then profile
    /// name order, and the catalog in install order (`installOrder`, platform, name). Which of them
    /// is installed is the selection's business (the platform's provider, `InfrastructureProvider`s).
    #[test]
    fn every_profile_of_every_image_is_read() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let d = "capi-operator-manifests";
        let gcp_md = "attributes: {type: infrastructure, version: v1.10.0}\ninstallOrder: 20\nname: cluster-api-provider-gcp\nocpPlatform: GCP\n";
        // One image carrying two providers' profiles (one for another platform), one core image
        // with a second profile, and a profile name that cannot be a key.
        for (rel, text) in [
            ("providers/aws/metadata.yaml", AWS_MD),
            ("providers/aws/manifests.yaml", MANIFESTS),
            ("providers/gcp/metadata.yaml", gcp_md),
            ("providers/gcp/manifests.yaml", MANIFESTS),
            ("core/default/metadata.yaml", CORE_MD),
            ("core/default/manifests.yaml", MANIFESTS),
            (
                "core/extra/metadata.yaml",
                "name: core-extras\ninstallOrder: 5\n",
            ),
            ("core/extra/manifests.yaml", MANIFESTS),
            ("core/bad.name/metadata.yaml", CORE_MD),
        ] {
            let (image, rest) = rel.split_once('/').unwrap();
            write(root, &format!("{image}/{d}/{rest}"), text);
        }
        write(root, &format!("core/{d}/README"), "not a profile");
        std::fs::create_dir_all(root.join(format!("placeholder/{d}"))).unwrap();

        let scan = scan(root, None).unwrap();
        let ids: Vec<String> = scan.profiles.iter().map(|p| p.id.to_string()).collect();
        assert_eq!(
            ids,
            [
                "profile core/default",
                "profile core/extra",
                "profile providers/aws",
                "profile providers/gcp"
            ]
        );
        let problems: Vec<String> = scan.problems.iter().map(|p| p.to_string()).collect();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].starts_with("profile core/bad.name: profile name"),
            "{problems:?}"
        );
        assert_eq!(
            scan.skipped,
            [format!(
                "{}: no profile in {d}",
                root.join("placeholder").display()
            )]
        );

        let catalog = ProfileCatalog::new(scan);
        let providers: Vec<(String, String)> = catalog
            .candidates()
            .into_iter()
            .map(|c| (c.id.to_string(), c.name))
            .collect();
        assert_eq!(
            providers,
            [
                (
                    "profile core/default".to_string(),
                    "cluster-api".to_string()
                ),
                ("profile providers/aws".to_string(), "aws".to_string()),
                ("profile providers/gcp".to_string(), "gcp".to_string()),
            ],
            "installOrder, then platform: AWS before GCP"
        );
        // core-extras is neither core nor an infrastructure provider: reported, not installed.
        assert_eq!(catalog.problems.len(), 2, "{:?}", catalog.problems);
        // `--profile` reads one name only.
        let only = super::scan(root, Some("default")).unwrap();
        assert_eq!(only.profiles.len(), 1);
    }

    #[test]
    fn oversized_manifests_are_refused_unread_and_fail_their_provider() {
        let tmp = tempfile::tempdir().unwrap();
        let d = "capi-operator-manifests/default";
        write(tmp.path(), &format!("img/{d}/metadata.yaml"), CORE_MD);
        let big = tmp.path().join(format!("img/{d}/manifests.yaml"));
        let f = std::fs::File::create(&big).unwrap();
        f.set_len(MAX_MANIFESTS_BYTES + 1).unwrap();
        let catalog = ProfileCatalog::read(tmp.path(), None).unwrap();
        let candidates = catalog.candidates();
        assert_eq!(candidates.len(), 1, "the provider is known");
        let err = catalog.load(&candidates[0].id).unwrap().unwrap_err();
        assert!(err.to_string().contains("over the limit"), "{err}");
        assert!(err.to_string().contains("manifests.yaml"), "{err}");
    }

    #[test]
    fn the_catalog_declares_providers_and_loads_payloads() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let d = "capi-operator-manifests/default";
        write(root, &format!("aws/{d}/metadata.yaml"), AWS_MD);
        write(root, &format!("aws/{d}/manifests.yaml"), MANIFESTS);
        write(root, &format!("core/{d}/metadata.yaml"), CORE_MD);
        write(root, &format!("core/{d}/manifests.yaml"), MANIFESTS);
        write(
            root,
            &format!("operator/{d}/metadata.yaml"),
            "name: cluster-capi-operator\ninstallOrder: 30\n",
        );
        write(root, &format!("operator/{d}/manifests.yaml"), MANIFESTS);
        let catalog = ProfileCatalog::read(root, None).unwrap();
        let got: Vec<(String, String, &str, Option<String>)> = catalog
            .candidates()
            .into_iter()
            .map(|c| (c.id.to_string(), c.name, c.provider_type.label(), c.version))
            .collect();
        assert_eq!(
            got,
            [
                (
                    "profile core/default".to_string(),
                    "cluster-api".to_string(),
                    "core",
                    Some("v1.13.4".to_string())
                ),
                (
                    "profile aws/default".to_string(),
                    "aws".to_string(),
                    "infrastructure",
                    Some("v2.13.0".to_string())
                ),
            ],
            "install order: core (10) before aws (20)"
        );
        assert_eq!(catalog.problems.len(), 1);
        assert!(
            catalog.problems[0]
                .to_string()
                .starts_with("profile operator/default: cluster-capi-operator has neither"),
            "{}",
            catalog.problems[0]
        );
        let core_id = SourceId::Profile(ProfileRef {
            image: "core".into(),
            profile: "default".into(),
        });
        let payload = catalog.load(&core_id).unwrap().unwrap();
        assert_eq!(payload.components, MANIFESTS);
        assert_eq!(
            payload.self_image_ref.as_deref(),
            Some("registry.ci.openshift.org/openshift:cluster-capi-controllers")
        );
        assert!(
            payload
                .origin
                .ends_with("core/capi-operator-manifests/default/manifests.yaml"),
            "{}",
            payload.origin
        );
        assert!(
            catalog.load(&SourceId::ConfigMap("core".into())).is_none(),
            "not this kind"
        );
        let gone = SourceId::Profile(ProfileRef {
            image: "gcp".into(),
            profile: "default".into(),
        });
        assert!(catalog.load(&gone).is_none());
        // The platforms its infrastructure profiles declare, with their providers.
        assert_eq!(
            catalog.platforms(),
            crate::desired::DeclaredPlatforms::from([("AWS".into(), "aws".into())])
        );
    }

    /// A folder named as the volume of a release image holds that image: its profiles know their
    /// image reference; a folder named otherwise (by hand) does not.
    #[test]
    fn a_folder_named_for_a_release_image_knows_its_reference() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let aws = format!("quay.io/release/art@sha256:{}", "a".repeat(64));
        let volume = images::volume_name(&aws);
        let d = "capi-operator-manifests/default";
        write(root, &format!("{volume}/{d}/metadata.yaml"), AWS_MD);
        write(root, &format!("{volume}/{d}/manifests.yaml"), MANIFESTS);
        write(root, &format!("core/{d}/metadata.yaml"), CORE_MD);
        write(root, &format!("core/{d}/manifests.yaml"), MANIFESTS);
        let release: Images = [("aws-cluster-api-controllers".to_string(), aws.clone())].into();
        let catalog = ProfileCatalog::read(root, None)
            .unwrap()
            .with_images(&release);
        let images: Vec<(String, Option<String>)> = catalog
            .profiles()
            .into_iter()
            .map(|(s, p)| (s.name.clone(), p.payload().unwrap().image))
            .collect();
        assert_eq!(
            images,
            [
                ("cluster-api".to_string(), None),
                ("aws".to_string(), Some(aws))
            ]
        );
    }

    #[test]
    fn profile_names() {
        for ok in ["default", "tech-preview", "aws_v2", "A1"] {
            assert!(validate_profile_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", "a/b", "..", "a.b", &"x".repeat(101)] {
            assert!(validate_profile_name(bad).is_err(), "{bad}");
        }
    }

    fn profile(metadata: &str) -> Profile {
        Profile {
            id: ProfileRef {
                image: "img".into(),
                profile: "default".into(),
            },
            manifests_path: PathBuf::from("img/manifests.yaml"),
            metadata: ProfileMetadata::parse("m", metadata).unwrap(),
            image: None,
            manifests: Ok(String::new()),
        }
    }

    #[test]
    fn the_provider_a_profile_carries() {
        let cases = [
            (CORE_MD, Ok(("cluster-api", ProviderType::Core))),
            (AWS_MD, Ok(("aws", ProviderType::Infrastructure))),
            (
                "name: capibm\nocpPlatform: PowerVS\n",
                Ok(("ibmcloud", ProviderType::Infrastructure)),
            ),
            (
                "name: capm3\nocpPlatform: BareMetal\nattributes: {type: infrastructure}\n",
                Ok(("metal3", ProviderType::Infrastructure)),
            ),
            (
                "name: cluster-capi-operator\ninstallOrder: 30\n",
                Err("neither attributes.type nor ocpPlatform"),
            ),
            (
                "name: x\nattributes: {type: infrastructure}\n",
                Err("needs ocpPlatform"),
            ),
            // A platform this code has no table row for: the provider is the profile's to bring.
            (
                "name: x\nocpPlatform: Nutanix\n",
                Ok(("nutanix", ProviderType::Infrastructure)),
            ),
            (
                "name: x\nocpPlatform: nutanix\n",
                Err(
                    "ocpPlatform: \"nutanix\" is not an Infrastructure platform type (did you mean Nutanix?)",
                ),
            ),
        ];
        for (md, want) in cases {
            let got = profile(md).provider();
            match (got, want) {
                (Ok((name, t)), Ok((want_name, want_t))) => {
                    assert_eq!((name.as_str(), t), (want_name, want_t), "{md}")
                }
                (Err(e), Err(want)) => {
                    let e = e.to_string();
                    assert!(e.starts_with("profile img/default: "), "{e}");
                    assert!(e.contains(want), "{md}: {e}");
                }
                (got, want) => panic!("{md}: got {got:?}, want {want:?}"),
            }
        }
    }
}
