//! Data model shared by the build-time generator (`manifests-gen`) and the run-time installer:
//! multi-document YAML, object identity, provider identity, clusterctl metadata, the transport
//! ConfigMap format, the OpenShift customizations of provider components, and a semantic
//! comparison of object sets.
//!
//! Pure: no network, no Kubernetes client, no filesystem. Callers pass text or
//! `serde_json::Value`s and get text or values back. Objects are `serde_json::Value` maps because
//! the customizations touch a few well-known paths of arbitrary kinds (including CRD-defined
//! ones); a typed model would have to round-trip every field it does not know.

#![warn(unreachable_pub)]

pub mod budget;
pub mod customize;
mod error;
pub mod generator;
pub mod goyaml;
/// Container image references and the images file: parsed where they are read.
pub mod image;
pub mod image_volume;
pub mod kustomization;
mod location;
pub mod memo;
pub(crate) mod metadata;
pub(crate) mod object;
pub mod platform;
pub mod profile;
pub mod profile_gen;
pub(crate) mod provider;
pub mod transformers;
pub mod transport;
pub mod yaml;

pub use budget::Budget;
pub use capi_object::ObjectKey;
pub use error::Error;
pub use metadata::Metadata;
pub use platform::Platform;
pub use provider::{Provider, ProviderType};
pub use transport::TransportConfigMap;
pub use yaml::{DocLocation, Document, Object};

/// The providers' namespace: every namespaced provider object is moved into it, and the transport
/// ConfigMaps live there (so do the controllers pod and its objects).
/// docs/admin/operating.md, "Namespaces".
pub const TARGET_NAMESPACE: &str = "openshift-cluster-api";

/// The installer's own namespace (the reference's newer generation's): its Deployment, ServiceAccount,
/// Lease, inventory and revisions, images ConfigMap and metrics, apart from the providers so that no
/// role a provider bundle may grant in [`TARGET_NAMESPACE`] reaches them. Nothing of a provider lives
/// here. `manifests/` declares both namespaces; a test compares them with these constants.
pub const INSTALLER_NAMESPACE: &str = "openshift-cluster-api-operator";

pub type Result<T, E = Error> = std::result::Result<T, E>;
