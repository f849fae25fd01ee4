//! LiveCache against a real kube-apiserver: ours and not ours, absent and unknown, namespace
//! restriction, slim copies, change notifications for updates and deletions.

mod common;

use std::time::Duration;

use capi_apply::{LiveCache, Lookup, Namespaces, ObjectKey};
use common::*;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use tokio::sync::broadcast;

fn resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: String::new(),
        version: "v1".into(),
        api_version: "v1".into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}

fn object(kind: &str, namespace: Option<&str>, name: &str, ours: bool) -> DynamicObject {
    let ns = namespace
        .map(|n| format!(", namespace: {n}"))
        .unwrap_or_default();
    let labels = if ours {
        format!("labels: {{{LABEL}: {MANAGER}}}")
    } else {
        "labels: {}".into()
    };
    serde_saphyr::from_str(&format!(
        "apiVersion: v1\nkind: {kind}\nmetadata: {{name: {name}{ns}, {labels}}}\n"
    ))
    .unwrap()
}

async fn next_change_for(rx: &mut broadcast::Receiver<ObjectKey>, key: &ObjectKey) -> bool {
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match rx.recv().await {
                Ok(k) if &k == key => return true,
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(_) => return false,
            }
        }
    })
    .await
    .unwrap_or(false)
}

#[tokio::test]
async fn cache_sees_only_labelled_objects_in_its_namespaces_and_announces_changes() {
    let cp = control_plane(false).await;
    let admin = cp.admin_client().await.unwrap();
    let client = engine_client(&cp);
    let namespaces = resource("Namespace", "namespaces");
    let config_maps = resource("ConfigMap", "configmaps");

    let ns_api: Api<DynamicObject> = Api::all_with(admin.clone(), &namespaces);
    for (name, ours) in [("watched", true), ("elsewhere", false)] {
        ns_api
            .create(
                &PostParams::default(),
                &object("Namespace", None, name, ours),
            )
            .await
            .unwrap();
    }
    for (ns, name, ours) in [
        ("watched", "ours", true),
        ("watched", "theirs", false),
        ("elsewhere", "ours", true),
    ] {
        Api::<DynamicObject>::namespaced_with(admin.clone(), ns, &config_maps)
            .create(
                &PostParams::default(),
                &object("ConfigMap", Some(ns), name, ours),
            )
            .await
            .unwrap();
    }

    let cache = LiveCache::new(
        client.clone(),
        &applier(&client),
        Namespaces::Only(vec!["watched".into()]),
    );
    let mut changes = cache.subscribe();
    cache.ensure_watched(&namespaces, false);
    cache.ensure_watched(&config_maps, true);
    cache.ensure_watched(&config_maps, true); // idempotent
    assert!(cache.wait_synced(Duration::from_secs(10)).await);

    let key = |kind: &str, ns: Option<&str>, name: &str| ObjectKey::new("", "v1", kind, ns, name);
    let ours = key("ConfigMap", Some("watched"), "ours");
    assert!(
        cache.get(&key("Namespace", None, "watched")).is_some(),
        "cluster-scoped: watched cluster-wide"
    );
    assert!(
        cache.get(&key("Namespace", None, "elsewhere")).is_none(),
        "not labelled"
    );
    let cached = cache.get(&ours).expect("labelled, in a watched namespace");
    assert!(
        cached
            .metadata
            .managed_fields
            .iter()
            .flatten()
            .all(|e| e.fields_v1.is_none() && e.manager.is_some()),
        "field managers are kept, their field sets are not"
    );
    assert!(capi_apply::slim::is_slim(&cached));
    assert_eq!(cached.types.as_ref().unwrap().kind, "ConfigMap");
    assert!(
        cache
            .get(&key("ConfigMap", Some("watched"), "theirs"))
            .is_none(),
        "not labelled"
    );
    // What the applier asks before a write, answered without a request.
    assert!(matches!(
        cache.lookup(&key("ConfigMap", Some("watched"), "theirs")),
        Lookup::NotOurs(_)
    ));
    assert!(matches!(cache.lookup(&ours), Lookup::Ours(_)));
    assert!(matches!(
        cache.lookup(&key("ConfigMap", Some("watched"), "missing")),
        Lookup::Absent
    ));
    assert!(matches!(
        cache.lookup(&key("ConfigMap", Some("elsewhere"), "ours")),
        Lookup::Unknown
    ));
    assert!(matches!(
        cache.lookup(&key("Secret", Some("watched"), "ours")),
        Lookup::Unknown
    ));
    assert!(
        cache
            .get(&key("ConfigMap", Some("elsewhere"), "ours"))
            .is_none(),
        "namespace not watched"
    );
    assert_eq!(cache.len(), 2);
    // The initial list is announced too: a controller reconciles once at start.
    assert!(next_change_for(&mut changes, &ours).await);

    // An update is announced and visible.
    let cm_api: Api<DynamicObject> = Api::namespaced_with(admin.clone(), "watched", &config_maps);
    let updated = cm_api
        .patch(
            "ours",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"data": {"k": "v"}})),
        )
        .await
        .unwrap();
    assert!(next_change_for(&mut changes, &ours).await);
    let cached = cache.get(&ours).unwrap();
    assert_eq!(
        cached.metadata.resource_version,
        updated.metadata.resource_version
    );
    assert!(cached.data.get("data").is_none(), "the body is not kept");

    // Labelling an object brings it in; a deletion takes it out, announced.
    let theirs = key("ConfigMap", Some("watched"), "theirs");
    cm_api
        .patch(
            "theirs",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"metadata": {"labels": {LABEL: MANAGER}}})),
        )
        .await
        .unwrap();
    assert!(next_change_for(&mut changes, &theirs).await);
    assert!(cache.get(&theirs).is_some());
    cm_api
        .delete("ours", &DeleteParams::default())
        .await
        .unwrap();
    assert!(next_change_for(&mut changes, &ours).await);
    assert!(cache.get(&ours).is_none());
}
