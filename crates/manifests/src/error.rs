use crate::location::DocLocation;
use capi_object::ObjectKey;

/// Every error names what it concerns: the input location (file, document index, line) and/or
/// the object (`Kind namespace/name`), and for customizations the rule that refused it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("{location}: invalid YAML: {message}")]
    Yaml {
        location: DocLocation,
        message: String,
    },

    #[error("{location}{}: {message}", identity_suffix(.identity))]
    InvalidObject {
        location: DocLocation,
        /// Whatever identity could be read (`Kind name`, or empty).
        identity: String,
        message: String,
    },

    #[error("{object}: cannot serialize to YAML: {message}")]
    Serialize { object: String, message: String },

    #[error("{source_name}: invalid clusterctl metadata: {message}")]
    Metadata {
        source_name: String,
        message: String,
    },

    #[error("invalid provider: {message}")]
    Provider { message: String },

    #[error("duplicate object {object}: in {first} and in {second}")]
    DuplicateObject {
        // Boxed: keeps `Result<_, Error>` small on the happy path (clippy::result_large_err).
        object: Box<ObjectKey>,
        first: DocLocation,
        second: DocLocation,
    },

    /// A customization rule (ref §1.2) cannot be applied to an object.
    #[error("{object} ({location}): rule \"{rule}\": {message}")]
    Rule {
        object: Box<ObjectKey>,
        location: DocLocation,
        rule: &'static str,
        message: String,
    },

    /// A rule that concerns the input as a whole (no single object to blame).
    #[error("rule \"{rule}\": {message}")]
    InputRule { rule: &'static str, message: String },

    /// Components without a single object (an empty file, only comments or `---`): nothing to ship,
    /// most likely the wrong file or a kustomization that rendered nothing.
    #[error("{source_name}: no objects (the components are empty, or only comments and `---`)")]
    NoObjects { source_name: String },

    #[error(
        "transport ConfigMap for provider {provider} would be {size} bytes, over the ConfigMap limit of {limit} bytes{detail}"
    )]
    TooLarge {
        provider: String,
        size: usize,
        limit: usize,
        detail: String,
    },

    /// An input over its resource budget (see [`crate::budget`]); `location` is the source and
    /// document, or the ConfigMap key.
    #[error("{location}: {exceeded}")]
    Budget {
        location: String,
        exceeded: crate::budget::BudgetExceeded,
    },

    /// A kustomization, a transformer or a transformer's configuration that manifests-gen cannot
    /// use; `at` is the file, with the line where one is known (`file:line`).
    #[error("{at}: {message}")]
    Kustomization { at: String, message: String },

    /// A profile option that cannot be written as a profile the installer reads.
    #[error("invalid profile: {message}")]
    ProfileOption { message: String },

    #[error("ConfigMap {configmap}: {message}")]
    ConfigMap { configmap: String, message: String },

    #[error("ConfigMap {configmap}, key {key}: {message}")]
    ConfigMapKey {
        configmap: String,
        key: String,
        message: String,
    },
}

fn identity_suffix(identity: &str) -> String {
    if identity.is_empty() {
        String::new()
    } else {
        format!(" ({identity})")
    }
}
