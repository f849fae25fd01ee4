//! The objects a provider bundle may never contain, whoever manages them: the installer's own and
//! those of the Cluster API controllers pod.
//!
//! The list is derived from the release manifests in `manifests/` (embedded at build time by
//! `build.rs`, so a manifest added there is protected without anyone remembering to list it), plus
//! what the installer creates at run time (its inventory ConfigMap and leader Lease) and, by name,
//! everything called `capi-installer*` or `capi-controllers*`. The transport ConfigMaps are protected
//! too: the caller adds their names (they are known only at run time), and a bundle object that
//! carries the transport labels is refused whatever its name.

use std::collections::BTreeSet;

use capi_apply::ObjectKey;

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/manifests.rs"));
}

/// Name prefixes of the installer's and the controllers pod's objects (their Deployments, Service
/// Accounts, RBAC, ConfigMaps, Leases, Services...).
pub const PROTECTED_NAME_PREFIXES: [&str; 2] = ["capi-installer", "capi-controllers"];

/// Objects that a bundle may never contain and the installer never writes from a bundle.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Protected {
    keys: BTreeSet<ObjectKey>,
    prefixes: Vec<String>,
}

impl Protected {
    /// Every object of the release manifests in `manifests/`, the installer's run-time objects in
    /// `namespace` (`inventory`, `lease`, the Deployment the deployer applies), and every object
    /// named with a protected prefix.
    pub fn installer(namespace: &str, inventory: &str, lease: &str) -> Self {
        let mut keys: BTreeSet<ObjectKey> = release_manifests().into_iter().collect();
        keys.insert(ObjectKey::new(
            "",
            "v1",
            "ConfigMap",
            Some(namespace),
            inventory,
        ));
        keys.insert(ObjectKey::new(
            "coordination.k8s.io",
            "v1",
            "Lease",
            Some(namespace),
            lease,
        ));
        // Applied by the deployer, not by the release.
        keys.insert(ObjectKey::new(
            "apps",
            "v1",
            "Deployment",
            Some(namespace),
            crate::names::DEPLOYMENT,
        ));
        Protected {
            keys,
            prefixes: PROTECTED_NAME_PREFIXES.map(String::from).to_vec(),
        }
    }

    /// Also protects `key` (for example a transport ConfigMap seen at run time).
    pub fn with(mut self, key: ObjectKey) -> Self {
        self.keys.insert(key);
        self
    }

    /// Why `key` is protected, or `None`.
    pub fn reason(&self, key: &ObjectKey) -> Option<String> {
        if self.keys.contains(key) {
            return Some("it is one of the installer's own objects".into());
        }
        self.prefixes
            .iter()
            .find(|p| key.name.starts_with(p.as_str()))
            .map(|p| {
                format!("names starting with {p:?} belong to the installer and its controllers")
            })
    }

    /// Whether a ServiceAccount in `namespace` named `name` is protected (as a binding subject or a
    /// pod's identity, it would hand the bundle the installer's own permissions).
    pub fn service_account(&self, namespace: &str, name: &str) -> Option<String> {
        self.reason(&ObjectKey::new(
            "",
            "v1",
            "ServiceAccount",
            Some(namespace),
            name,
        ))
    }

    /// The objects protected by their key (not by a prefix).
    #[cfg(test)]
    pub(crate) fn keys(&self) -> impl Iterator<Item = &ObjectKey> {
        self.keys.iter()
    }
}

/// The objects of the release manifests (`manifests/*.yaml`), as built into this binary.
pub fn release_manifests() -> Vec<ObjectKey> {
    parsed_release().into_iter().map(|o| o.id).collect()
}

/// The objects of the release manifests as JSON (the RBAC ceiling is read from them).
pub fn release_objects() -> Vec<serde_json::Value> {
    parsed_release().into_iter().map(|o| o.value).collect()
}

fn parsed_release() -> Vec<capi_manifests::yaml::Object> {
    let mut objects = Vec::new();
    for (file, text) in embedded::MANIFESTS {
        // The manifests are part of this build and a unit test parses every one of them.
        objects.extend(
            capi_manifests::yaml::parse_objects(file, text)
                .unwrap_or_else(|e| panic!("release manifest {file} does not parse: {e}")),
        );
    }
    objects
}

/// The file names of the embedded release manifests.
#[cfg(test)]
pub fn release_manifest_files() -> Vec<&'static str> {
    embedded::MANIFESTS.iter().map(|(f, _)| *f).collect()
}
