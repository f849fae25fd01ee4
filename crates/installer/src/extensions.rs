//! The administrator's extensions of the bundle policy, as the cluster holds them: the ClusterRoles
//! labelled [`policy::ceiling::LABEL`] (grants beyond the release's provider RBAC ceiling) and the
//! ConfigMaps of the installer's namespace labelled [`policy::fields::LABEL`] (fields and values beyond
//! the release's field bound). The installer reads them from its watches, `capi-installer diff` with a
//! list of each, so that both judge a bundle against the same policy.

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::rbac::v1::ClusterRole;
use serde_json::Value;

use crate::policy::{self, Ceiling, FieldBound};

/// The ceiling `roles` make and the field bound `configmaps` extend. A ConfigMap whose field data
/// cannot be read is left out (the bound is only narrower for it), with a warning that names it.
pub fn read<'a>(
    roles: impl IntoIterator<Item = &'a ClusterRole>,
    configmaps: impl IntoIterator<Item = &'a ConfigMap>,
) -> (Ceiling, FieldBound) {
    let roles: Vec<Value> = roles
        .into_iter()
        .filter_map(|r| serde_json::to_value(r).ok())
        .collect();
    let configmaps: Vec<Value> = configmaps
        .into_iter()
        .filter_map(|c| serde_json::to_value(c).ok())
        .map(|mut c| {
            // Items of a list of a built-in kind carry no kind: put it back.
            c["kind"] = "ConfigMap".into();
            c
        })
        .collect();
    let (fields, unreadable) = policy::FieldBound::from_configmaps(&configmaps);
    for error in unreadable {
        tracing::warn!(%error, "provider field data ignored");
    }
    (Ceiling::from_roles(&roles), fields)
}
