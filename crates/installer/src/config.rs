//! The installer's settings (the names it uses in the cluster are in [`crate::names`]).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::policy::PolicyConfig;
use crate::render;

/// Settings of the installer.
#[derive(Clone, Debug)]
pub struct InstallerConfig {
    /// The providers' namespace: transport ConfigMaps, every namespaced provider object, Events about
    /// sources.
    pub namespace: String,
    /// The installer's own namespace: its inventory and revisions (and, set by the binary, its Lease).
    /// Records found in `namespace` instead, where an earlier release kept them, are carried over
    /// ([`crate::records`]).
    pub installer_namespace: String,
    pub images: render::Images,
    pub substitutions: BTreeMap<String, String>,
    /// `versions[operator]` of the ClusterOperator (`RELEASE_VERSION`).
    pub release_version: Option<String>,
    /// How long a Deployment may take to become Available before the provider counts as failing.
    pub deployment_timeout: Duration,
    /// How long a CRD may take to become Established.
    pub crd_timeout: Duration,
    /// Reconcile this often even without events (a safety net; reads only when nothing changed).
    pub resync: Duration,
    /// The release's own field managers: an object only they wrote may be adopted when its provider's
    /// bundle marks it `adopt-existing` and the release ships it for that provider (the release payload
    /// applies the IPAM CRDs before the installer runs; docs/design/ownership.md).
    pub adoptable_managers: Vec<String>,
    /// Field managers the installer replaces for good: their objects are taken over and their
    /// marks removed (`--take-over-reference`: [`crate::reference::FIELD_MANAGERS`]).
    pub retired_managers: Vec<String>,
    /// What a provider bundle may contain (see [`crate::policy`]); its namespace is `namespace`.
    pub policy: PolicyConfig,
    /// Name of this replica, for Events.
    pub instance: Option<String>,
    /// Image-based profiles, a second source beside transport ConfigMaps.
    pub profiles: Option<ProfilesConfig>,
    /// Write each provider's objects as its own identity, ServiceAccount
    /// `capi-provider-<cluster.x-k8s.io/provider>` of `installer_namespace`
    /// ([`capi_bundle::names::provider_identity`]), impersonated from this configuration's
    /// credentials: the API server then bounds each provider's writes and grants by that identity's
    /// RBAC (docs/design/ownership.md). `None`: every write is the installer's own.
    pub identities: Option<capi_apply::Identities>,
}

/// Where image-based profiles are read from: `dir/<image>/capi-operator-manifests/<profile>/`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProfilesConfig {
    pub dir: PathBuf,
    /// Only this profile of each image; `None`: every profile of every image, as the reference.
    pub profile: Option<String>,
    /// Only the folders that are the volumes of the release's images: the others are images kept
    /// mounted for earlier revisions (by the installer's Deployment, [`crate::deployment`]), whose
    /// profiles are not this release's.
    pub release_images_only: bool,
}

impl Default for InstallerConfig {
    fn default() -> Self {
        InstallerConfig {
            namespace: capi_manifests::TARGET_NAMESPACE.to_string(),
            installer_namespace: capi_manifests::INSTALLER_NAMESPACE.to_string(),
            images: Default::default(),
            substitutions: Default::default(),
            release_version: None,
            deployment_timeout: Duration::from_secs(300),
            crd_timeout: Duration::from_secs(60),
            resync: Duration::from_secs(600),
            adoptable_managers: vec!["cluster-version-operator".into()],
            retired_managers: Vec::new(),
            policy: PolicyConfig::default(),
            instance: None,
            profiles: None,
            identities: None,
        }
    }
}
