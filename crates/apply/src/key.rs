//! Object identity: [`ObjectKey`] (defined in `capi-object`, shared with the data model) read from a
//! [`DynamicObject`], and the API that serves the object a key names.

use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject};

pub use capi_object::ObjectKey;
pub(crate) use capi_object::split_api_version;

/// The key of a dynamic object as written (apiVersion, kind, metadata); `None` when it has no
/// apiVersion/kind or no name.
pub fn key_of(obj: &DynamicObject) -> Option<ObjectKey> {
    let types = obj.types.as_ref()?;
    let name = obj.metadata.name.clone()?;
    Some(ObjectKey::from_api_version(
        &types.api_version,
        types.kind.clone(),
        obj.metadata.namespace.as_deref(),
        name,
    ))
}

/// The API of the object `key` names, served by `resource`: namespaced when the key has a namespace.
pub(crate) fn api_for(
    client: &Client,
    resource: &ApiResource,
    key: &ObjectKey,
) -> Api<DynamicObject> {
    match &key.namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, resource),
        None => Api::all_with(client.clone(), resource),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::obj;

    #[test]
    fn key_of_reads_type_and_metadata() {
        let d = obj("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: ns}\n");
        let key = key_of(&d).unwrap();
        assert_eq!(key.to_string(), "Deployment ns/d");
        assert_eq!((key.group.as_str(), key.version.as_str()), ("apps", "v1"));
        let cluster =
            obj("apiVersion: v1\nkind: Namespace\nmetadata: {name: n, namespace: \"\"}\n");
        assert_eq!(key_of(&cluster).unwrap().namespace, None);
        assert!(key_of(&obj("metadata: {name: x}\n")).is_none());
    }
}
