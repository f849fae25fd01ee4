//! Ownership safety against a real kube-apiserver: objects created by someone else are not taken
//! over unless their managers are adoptable or they carry the adopt annotation.

mod common;

use capi_apply::{ApplyAction, ApplyError, DEFAULT_ADOPT_ANNOTATION};
use common::*;
use kube::api::{Api, DynamicObject, PostParams};

const NS: &str = "own-test";

fn config_map(name: &str, annotations: &str) -> DynamicObject {
    serde_saphyr::from_str(&format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: {NS}, annotations: {{{annotations}}}}}\ndata: {{owner: original}}\n"
    ))
    .unwrap()
}

#[tokio::test]
async fn conflict_adoption_and_cache_misses() {
    let cp = control_plane(false).await;
    let admin = cp.admin_client().await.unwrap();
    let client = engine_client(&cp);
    let applier = applier(&client);

    let desired = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {NS}}}\n---\n{}",
        ["helm-made", "cvo-made", "annotated", "fresh"]
            .map(|n| format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {n}, namespace: {NS}}}\ndata: {{owner: installer}}\n"))
            .join("---\n")
    );
    let plan = plan_of(&client, &desired).await;

    // The namespace first, then objects made by others.
    let ns = plan.objects().find(|o| o.key.kind == "Namespace").unwrap();
    assert_eq!(
        applier.apply(ns, None).await.unwrap().action,
        ApplyAction::Created
    );
    let cms: Api<DynamicObject> =
        Api::namespaced_with(admin.clone(), NS, &plan.objects().nth(1).unwrap().resource);
    for (name, manager, annotations) in [
        ("helm-made", "helm", String::new()),
        ("cvo-made", "cluster-version-operator", String::new()),
        (
            "annotated",
            "helm",
            format!("{DEFAULT_ADOPT_ANNOTATION}: 'true'"),
        ),
    ] {
        let params = PostParams {
            field_manager: Some(manager.into()),
            ..Default::default()
        };
        cms.create(&params, &config_map(name, &annotations))
            .await
            .unwrap();
    }

    let mark = cp.audit_events().unwrap().len();
    let mut results = std::collections::BTreeMap::new();
    for o in plan.objects().filter(|o| o.key.kind == "ConfigMap") {
        // `None`: as for a label-filtered cache, which cannot see objects that are not ours.
        results.insert(o.key.name.clone(), applier.apply(o, None).await);
    }

    match &results["helm-made"] {
        Err(ApplyError::Conflict { key, managers }) => {
            assert_eq!(key.to_string(), "ConfigMap own-test/helm-made");
            assert_eq!(managers, &["helm".to_owned()]);
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
    let err = results["helm-made"].as_ref().unwrap_err().to_string();
    assert!(
        err.starts_with("ConfigMap own-test/helm-made exists and is not ours: managed by [helm]"),
        "{err}"
    );
    let untouched = cms.get("helm-made").await.unwrap();
    assert_eq!(untouched.data["data"]["owner"], "original");
    assert!(
        untouched
            .metadata
            .labels
            .is_none_or(|l| !l.contains_key(LABEL))
    );

    for name in ["cvo-made", "annotated"] {
        let out = results[name]
            .as_ref()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(out.action, ApplyAction::Adopted, "{name}");
        let live = cms.get(name).await.unwrap();
        assert_eq!(live.data["data"]["owner"], "installer", "{name}");
        assert_eq!(
            live.metadata.labels.as_ref().unwrap()[LABEL],
            MANAGER,
            "{name}"
        );
    }
    assert_eq!(
        results["fresh"].as_ref().unwrap().action,
        ApplyAction::Created
    );

    // The conflict wrote nothing; every other object got exactly one PATCH (in plan order).
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    let writes = our_writes(&cp, mark);
    let written: Vec<String> = writes
        .iter()
        .map(|e| {
            format!(
                "{} {}",
                e.verb,
                e.object_ref
                    .as_ref()
                    .and_then(|o| o.name.clone())
                    .unwrap_or_default()
            )
        })
        .collect();
    assert_eq!(
        written,
        ["patch annotated", "patch cvo-made", "patch fresh"]
    );

    // Once adopted, the object is ours: the next apply against the live object writes nothing.
    let cvo = plan.objects().find(|o| o.key.name == "cvo-made").unwrap();
    let live = cms.get("cvo-made").await.unwrap();
    assert_eq!(
        applier.apply(cvo, Some(&live)).await.unwrap().action,
        ApplyAction::Unchanged
    );
}
