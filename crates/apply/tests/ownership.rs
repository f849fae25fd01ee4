//! Ownership safety against a real kube-apiserver: the owner's record decides. An existing object the
//! record does not hold is never written, whoever manages it and whatever it says of itself (our label,
//! our manager's name), unless the plan asks to take it over and the release's own manager alone wrote
//! it.

mod common;

use capi_apply::{Applier, ApplyAction, ApplyError, Inventory};
use common::*;
use kube::api::{Api, DynamicObject, PostParams};

const NS: &str = "own-test";

fn config_map(name: &str, labels: &str) -> DynamicObject {
    serde_saphyr::from_str(&format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: {NS}, labels: {{{labels}}}}}\ndata: {{owner: original}}\n"
    ))
    .unwrap()
}

/// Namespace `ns` and a ConfigMap of the installer's (`owner: installer`) for each of `names`.
fn installer_config_maps(ns: &str, names: &[&str]) -> String {
    format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n---\n{}",
        names
            .iter()
            .map(|n| format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {n}, namespace: {ns}}}\ndata: {{owner: installer}}\n"))
            .collect::<Vec<_>>()
            .join("---\n")
    )
}

/// Who creates objects for the tests' "someone else": Helm.
fn helm() -> PostParams {
    PostParams {
        field_manager: Some("helm".into()),
        ..Default::default()
    }
}

/// What `applier`'s apply of `planned` did.
async fn action(
    applier: &Applier,
    planned: &capi_apply::PlannedObject,
    record: &Inventory,
) -> ApplyAction {
    applier.apply(planned, None, record).await.unwrap().action
}

/// `applier`'s apply of `planned` is refused with an error containing `expected`, and the live
/// ConfigMap keeps its creator's `owner: original`.
async fn refused_untouched(
    applier: &Applier,
    planned: &capi_apply::PlannedObject,
    record: &Inventory,
    cms: &Api<DynamicObject>,
    expected: &str,
) {
    let err = applier
        .apply(planned, None, record)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains(expected), "{err}");
    assert_eq!(
        cms.get(&planned.key.name).await.unwrap().data["data"]["owner"],
        "original"
    );
}

#[tokio::test]
async fn the_record_decides_and_a_take_over_needs_the_releases_object() {
    let cp = control_plane(false).await;
    let admin = cp.admin_client().await.unwrap();
    let client = engine_client(&cp);
    let applier = applier(&client);

    let names = [
        "helm-made",
        "cvo-made",
        "cvo-taken",
        "helm-taken",
        "labelled",
        "recorded",
        "fresh",
    ];
    let desired = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {NS}}}\n---\n{}",
        names
            .map(|n| format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {n}, namespace: {NS}}}\ndata: {{owner: installer}}\n"))
            .join("---\n")
    );
    let mut plan = plan_of(&client, &desired).await;
    for o in plan.phases.iter_mut().flat_map(|p| p.objects.iter_mut()) {
        o.take_over = o.key.name.ends_with("-taken");
    }
    // The owner's record: the namespace and `recorded`, created by it before.
    let mut record = Inventory::new("test");
    for o in plan.objects() {
        if o.key.kind == "Namespace" || o.key.name == "recorded" {
            record.insert(o.key.clone(), capi_apply::Phase::Base);
        }
    }

    // The namespace first, then objects made by others.
    let ns = plan.objects().find(|o| o.key.kind == "Namespace").unwrap();
    assert_eq!(
        applier.apply(ns, None, &record).await.unwrap().action,
        ApplyAction::Created
    );
    let cms: Api<DynamicObject> =
        Api::namespaced_with(admin.clone(), NS, &plan.objects().nth(1).unwrap().resource);
    for (name, manager, labels) in [
        ("helm-made", "helm", ""),
        ("cvo-made", "cluster-version-operator", ""),
        ("cvo-taken", "cluster-version-operator", ""),
        ("helm-taken", "helm", ""),
        // Someone else's object that calls itself ours: our label, our manager's name.
        (
            "labelled",
            MANAGER,
            "app.kubernetes.io/managed-by: capi-installer",
        ),
        ("recorded", "helm", ""),
    ] {
        let params = PostParams {
            field_manager: Some(manager.into()),
            ..Default::default()
        };
        cms.create(&params, &config_map(name, labels))
            .await
            .unwrap();
    }

    let mark = cp.audit_events().unwrap().len();
    let mut results = std::collections::BTreeMap::new();
    for o in plan.objects().filter(|o| o.key.kind == "ConfigMap") {
        // `None`: the applier reads each object itself.
        results.insert(o.key.name.clone(), applier.apply(o, None, &record).await);
    }

    for (name, managers) in [
        ("helm-made", "helm"),
        ("cvo-made", "cluster-version-operator"),
        ("labelled", MANAGER),
    ] {
        match &results[name] {
            Err(ApplyError::Conflict { key, managers: m }) => {
                assert_eq!(key.to_string(), format!("ConfigMap own-test/{name}"));
                assert_eq!(m, &[managers.to_owned()]);
            }
            other => panic!("{name}: expected a conflict, got {other:?}"),
        }
        let err = results[name].as_ref().unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("ConfigMap own-test/{name} exists and the installer did not create it: this provider's inventory does not hold it; written by [{managers}]")),
            "{err}"
        );
        let untouched = cms.get(name).await.unwrap();
        assert_eq!(untouched.data["data"]["owner"], "original", "{name}");
    }
    let err = results["helm-taken"].as_ref().unwrap_err().to_string();
    assert!(
        err.contains("adopt-existing takes over only an object as the release applied it (written by [cluster-version-operator] alone); this one is written by [helm]"),
        "{err}"
    );
    for (name, action) in [
        ("cvo-taken", ApplyAction::Adopted),
        ("recorded", ApplyAction::Configured),
        ("fresh", ApplyAction::Created),
    ] {
        let out = results[name]
            .as_ref()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(out.action, action, "{name}");
        let live = cms.get(name).await.unwrap();
        assert_eq!(live.data["data"]["owner"], "installer", "{name}");
        assert_eq!(
            live.metadata.labels.as_ref().unwrap()[LABEL],
            MANAGER,
            "{name}"
        );
    }

    // The refusals wrote nothing; every other object got exactly one PATCH (in plan order).
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
        ["patch cvo-taken", "patch fresh", "patch recorded"]
    );

    // Once adopted and recorded as such, the object is the owner's: the next apply against the live
    // object writes nothing.
    let taken = plan.objects().find(|o| o.key.name == "cvo-taken").unwrap();
    record.insert(taken.key.clone(), capi_apply::Phase::Base);
    record.mark_adopted(&taken.key);
    let live = cms.get("cvo-taken").await.unwrap();
    assert_eq!(
        applier
            .apply(taken, Some(&live), &record)
            .await
            .unwrap()
            .action,
        ApplyAction::Unchanged
    );
}

/// The same decisions from a synced cache, without a single read: an absent object is created, one the
/// release's manager made and the plan takes over adopted, a foreign one refused, from the cache's slim
/// copies. Once the watch has shown our writes and the record holds them, a second pass sends nothing.
#[tokio::test]
async fn a_cache_answers_before_each_write_without_a_request() {
    const NS: &str = "own-cache";
    let cp = control_plane(false).await;
    let admin = cp.admin_client().await.unwrap();
    let client = engine_client(&cp);
    let desired = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {NS}}}\n---\n{}",
        ["helm-made", "cvo-made", "fresh"]
            .map(|n| format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {n}, namespace: {NS}}}\ndata: {{owner: installer}}\n"))
            .join("---\n")
    );
    let mut plan = plan_of(&client, &desired).await;
    for o in plan.phases.iter_mut().flat_map(|p| p.objects.iter_mut()) {
        o.take_over = o.key.kind == "Namespace" || o.key.name == "cvo-made";
    }
    let mut record = Inventory::new("test");
    let ns: DynamicObject = serde_saphyr::from_str(&format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {NS}}}\n"
    ))
    .unwrap();
    Api::<DynamicObject>::all_with(admin.clone(), &plan.objects().next().unwrap().resource)
        .create(
            &PostParams {
                field_manager: Some("cluster-version-operator".into()),
                ..Default::default()
            },
            &ns,
        )
        .await
        .unwrap();
    let cms: Api<DynamicObject> =
        Api::namespaced_with(admin.clone(), NS, &plan.objects().nth(1).unwrap().resource);
    for (name, manager) in [
        ("helm-made", "helm"),
        ("cvo-made", "cluster-version-operator"),
    ] {
        let params = PostParams {
            field_manager: Some(manager.into()),
            ..Default::default()
        };
        let mut cm = config_map(name, "");
        cm.metadata.namespace = Some(NS.into());
        cms.create(&params, &cm).await.unwrap();
    }

    let uncached = applier(&client);
    let cache = cache_for(&client, &plan);
    assert!(cache.wait_synced(std::time::Duration::from_secs(10)).await);
    let applier = uncached.with_cache(cache.clone());
    let requests = |mark: usize| -> Vec<String> {
        cp.audit_events()
            .unwrap()
            .into_iter()
            .skip(mark)
            .filter(|e| {
                e.user_agent.as_deref() == Some(UA) && !matches!(e.verb.as_str(), "watch" | "list")
            })
            .map(|e| {
                let name = e.object_ref.and_then(|o| o.name).unwrap_or_default();
                format!("{} {name}", e.verb)
            })
            .collect()
    };

    let mark = cp.audit_events().unwrap().len();
    let mut results = std::collections::BTreeMap::new();
    for phase in &plan.phases {
        let out = applier
            .apply_phase(phase, |_| None::<std::sync::Arc<DynamicObject>>, &record)
            .await;
        for o in out.outcomes {
            results.insert(o.key.name.clone(), Ok(o.action));
        }
        for e in out.errors {
            results.insert(e.key().name.clone(), Err(e.to_string()));
        }
    }
    assert_eq!(results[NS], Ok(ApplyAction::Adopted), "{results:?}");
    assert_eq!(results["cvo-made"], Ok(ApplyAction::Adopted));
    assert_eq!(results["fresh"], Ok(ApplyAction::Created));
    assert!(
        results["helm-made"]
            .as_ref()
            .is_err_and(|e| e.contains("written by [helm]")),
        "{results:?}"
    );
    // What the installer records before its first write: what it created, and what it adopted.
    for o in plan.objects().filter(|o| o.key.name != "helm-made") {
        record.insert(o.key.clone(), capi_apply::Phase::Base);
        if results[&o.key.name] == Ok(ApplyAction::Adopted) {
            record.mark_adopted(&o.key);
        }
    }
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    let mut sent = requests(mark);
    sent[1..].sort();
    assert_eq!(
        sent,
        ["patch own-cache", "patch cvo-made", "patch fresh"],
        "no read before a write (the Namespace first, the ConfigMaps together)"
    );

    // Once the watch shows our writes: nothing to do, nothing sent.
    let settled = eventually(std::time::Duration::from_secs(10), || {
        ["cvo-made", "fresh"]
            .iter()
            .all(|n| {
                cache
                    .get(&capi_apply::ObjectKey::new(
                        "",
                        "v1",
                        "ConfigMap",
                        Some(NS),
                        *n,
                    ))
                    .is_some()
            })
            .then_some(())
    })
    .await;
    assert!(settled.is_some(), "the cache shows our writes");
    let mark = cp.audit_events().unwrap().len();
    for o in plan.objects().filter(|o| o.key.name != "helm-made") {
        assert_eq!(
            applier.apply(o, None, &record).await.unwrap().action,
            ApplyAction::Unchanged,
            "{}",
            o.key
        );
    }
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    assert_eq!(requests(mark), Vec::<String>::new());
}

/// Taking over from predecessors (issue 18): a ConfigMap a retired manager created with client-side
/// updates and its own marks, one it server-side applied, one a foreign manager made that the plan
/// marks for take-over, and an aggregated ClusterRole whose rules Kubernetes' aggregation controller
/// fills. The retired managers' field ownership becomes ours before the first apply, so their marks go
/// with that apply; the aggregation controller never counts as an owner and keeps its rules; nothing
/// is deleted or created again.
#[tokio::test]
async fn retired_managers_hand_over_their_fields_and_the_aggregation_controller_owns_nothing() {
    const NS: &str = "own-retired";
    // The aggregation controller runs in kube-controller-manager.
    let cp = control_plane(true).await;
    let admin = cp.admin_client().await.unwrap();
    let client = engine_client(&cp);
    let desired = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {NS}}}\n---\n{}---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {{name: own-retired-aggregated}}\naggregationRule: {{clusterRoleSelectors: [{{matchLabels: {{own-retired/aggregate: 'true'}}}}]}}\n",
        ["updated", "applied", "foreign"]
            .map(|n| format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {n}, namespace: {NS}}}\ndata: {{owner: installer}}\n"))
            .join("---\n")
    );
    let mut plan = plan_of(&client, &desired).await;
    for o in plan.phases.iter_mut().flat_map(|p| p.objects.iter_mut()) {
        o.take_over = o.key.name == "foreign";
    }
    let ns = plan.objects().find(|o| o.key.kind == "Namespace").unwrap();
    let resource = |kind: &str| {
        plan.objects()
            .find(|o| o.key.kind == kind)
            .unwrap()
            .resource
            .clone()
    };
    Api::<DynamicObject>::all_with(admin.clone(), &ns.resource)
        .create(&PostParams::default(), &ns.object)
        .await
        .unwrap();
    let cms: Api<DynamicObject> = Api::namespaced_with(admin.clone(), NS, &resource("ConfigMap"));
    let marked = |name: &str| -> DynamicObject {
        serde_saphyr::from_str(&format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: {NS}, labels: {{old/managed-by: {name}}}, annotations: {{old/revision: '1'}}}}\ndata: {{owner: old, extra: kept-by-no-one}}\n"
        ))
        .unwrap()
    };
    let params = |manager: &str| PostParams {
        field_manager: Some(manager.into()),
        ..Default::default()
    };
    cms.create(&params("old-installer"), &marked("updated"))
        .await
        .unwrap();
    cms.patch(
        "applied",
        &kube::api::PatchParams::apply("old-operator/Installer"),
        &kube::api::Patch::Apply(marked("applied")),
    )
    .await
    .unwrap();
    cms.create(&params("helm"), &marked("foreign"))
        .await
        .unwrap();
    let roles: Api<DynamicObject> = Api::all_with(admin.clone(), &resource("ClusterRole"));
    let aggregated = plan
        .objects()
        .find(|o| o.key.kind == "ClusterRole")
        .unwrap();
    let mut with_rules = aggregated.object.clone();
    with_rules.data["rules"] = serde_json::json!([]);
    roles
        .create(&params("old-installer"), &with_rules)
        .await
        .unwrap();
    let selected: DynamicObject = serde_saphyr::from_str(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: own-retired-part, labels: {own-retired/aggregate: 'true'}}\nrules: [{apiGroups: [''], resources: [configmaps], verbs: [get]}]\n",
    )
    .unwrap();
    roles
        .create(&PostParams::default(), &selected)
        .await
        .unwrap();
    let filled =
        |role: &DynamicObject| role.data["rules"].as_array().is_some_and(|r| !r.is_empty());
    let managers = |o: &DynamicObject| capi_apply::ownership::field_managers(o);
    let mut role = None;
    for _ in 0..100 {
        let live = roles.get("own-retired-aggregated").await.unwrap();
        if filled(&live) && managers(&live).contains(&"clusterrole-aggregation-controller".into()) {
            role = Some(live);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(role.is_some(), "the aggregation controller fills the rules");
    let uids: Vec<Option<String>> = {
        let mut uids = Vec::new();
        for name in ["updated", "applied", "foreign"] {
            uids.push(cms.get(name).await.unwrap().metadata.uid);
        }
        uids
    };

    // Without retiring anyone, only the take-over object is adopted: the others are foreign — and
    // the aggregation controller is never among the managers named.
    let plain = applier(&client);
    let mut refused = Vec::new();
    for o in plan.objects().filter(|o| o.key.kind != "Namespace") {
        match plain.dry_run(o, None, &Inventory::new("test")).await {
            Err(ApplyError::Conflict { key, managers }) => refused.push((key.name, managers)),
            // The take-over of an object another controller (helm) writes is refused: only an
            // object as the release applied it is taken over.
            Err(ApplyError::AdoptionRefused { key, .. }) => assert_eq!(key.name, "foreign"),
            Ok(action) => assert_eq!(action, ApplyAction::Adopted, "{}", o.key),
            Err(e) => panic!("{e}"),
        }
    }
    refused.sort();
    assert_eq!(
        refused,
        [
            (
                "applied".to_string(),
                vec!["old-operator/Installer".to_string()]
            ),
            (
                "own-retired-aggregated".to_string(),
                vec!["old-installer".to_string()]
            ),
            ("updated".to_string(), vec!["old-installer".to_string()]),
        ]
    );

    let retiring = Applier::new(
        client.clone(),
        MANAGER,
        policy().retire(["old-installer", "old-operator/Installer"]),
    );
    let mark = cp.audit_events().unwrap().len();
    for o in plan
        .objects()
        .filter(|o| o.key.kind != "Namespace" && o.key.name != "foreign")
    {
        let out = retiring
            .apply(o, None, &Inventory::new("test"))
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", o.key));
        assert_eq!(out.action, ApplyAction::Adopted, "{}", o.key);
    }
    for (name, uid) in ["updated", "applied"].iter().zip(&uids) {
        let live = cms.get(name).await.unwrap();
        assert_eq!(&live.metadata.uid, uid, "{name} is the same object");
        assert_eq!(live.data["data"]["owner"], "installer", "{name}");
        let labels = live.metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels.get(LABEL).map(String::as_str), Some(MANAGER));
        let annotations = live.metadata.annotations.clone().unwrap_or_default();
        let marks_gone = !labels.contains_key("old/managed-by")
            && !annotations.contains_key("old/revision")
            && live.data["data"].get("extra").is_none();
        // A foreign manager is not retired: what it set and we do not send stays its own.
        assert_eq!(marks_gone, *name != "foreign", "{name}: {:?}", live.data);
        let ms = managers(&live);
        assert!(
            !ms.contains(&"old-installer".into()) && !ms.contains(&"old-operator/Installer".into()),
            "{name}: {ms:?}"
        );
    }
    let role = roles.get("own-retired-aggregated").await.unwrap();
    assert!(filled(&role), "the aggregated rules stay: {:?}", role.data);
    assert_eq!(
        managers(&role),
        ["capi-installer", "clusterrole-aggregation-controller"],
        "the retired manager's entry went; the aggregation controller keeps its rules"
    );
    let writes = our_writes(&cp, mark);
    assert!(
        writes.iter().all(|e| e.verb == "patch"),
        "only patches, never a delete or a create: {:?}",
        describe(&writes)
    );
}

/// A name recorded to be created (the intent, saved before the first write) and not confirmed is ours
/// only if our apply created the object: after a restart our own creation is recognised, someone
/// else's object under that name is refused and left as it is, and one created between our check and
/// our write is not taken either (issue 46: the intent window).
#[tokio::test]
async fn a_name_recorded_to_create_is_ours_only_if_our_apply_created_it() {
    const NS: &str = "own-intent";
    let cp = control_plane(false).await;
    let admin = cp.admin_client().await.unwrap();
    let client = engine_client(&cp);
    let desired = installer_config_maps(NS, &["mine", "theirs", "raced", "raced-apart"]);
    let plan = plan_of(&client, &desired).await;
    let planned = |name: &str| plan.objects().find(|o| o.key.name == name).unwrap();
    // The intent: everything recorded to be created, nothing confirmed.
    let mut record = recorded(&plan);
    let keys: Vec<_> = plan.objects().map(|o| o.key.clone()).collect();
    for key in &keys {
        record.mark_pending(key);
    }
    let first = applier(&client);
    let ns = plan.objects().find(|o| o.key.kind == "Namespace").unwrap();
    assert_eq!(
        first.apply(ns, None, &record).await.unwrap().action,
        ApplyAction::Created
    );
    assert_eq!(
        action(&first, planned("mine"), &record).await,
        ApplyAction::Created
    );
    let cms: Api<DynamicObject> =
        Api::namespaced_with(admin.clone(), NS, &planned("mine").resource);
    let here = |name: &str, labels: &str| {
        let mut cm = config_map(name, labels);
        cm.metadata.namespace = Some(NS.into());
        cm
    };
    let helm = helm();
    // Created by someone else while the installer was stopped, calling itself ours by label.
    cms.create(
        &helm,
        &here("theirs", "app.kubernetes.io/managed-by: capi-installer"),
    )
    .await
    .unwrap();

    // After a restart (an applier that remembers nothing): its own creation is its own, the other
    // object is refused and untouched.
    let restarted = applier(&client);
    assert_eq!(
        action(&restarted, planned("mine"), &record).await,
        ApplyAction::Unchanged
    );
    refused_untouched(
        &restarted,
        planned("theirs"),
        &record,
        &cms,
        "ConfigMap own-intent/theirs exists, the installer did not create it, and it is not adopted: recorded to be created, but created by [helm]",
    )
    .await;

    // Created between the installer's check (absent) and its write: a value it contradicts fails
    // the write whole; one it does not sees its additions withdrawn.
    cms.create(&helm, &here("raced", "")).await.unwrap();
    let mut apart = here("raced-apart", "");
    apart.data = serde_json::json!({"data": {"theirs": "kept"}});
    cms.create(&helm, &apart).await.unwrap();
    for (name, outcome) in [
        ("raced", "nothing written (Apply failed with 1 conflict"),
        (
            "raced-apart",
            "what the installer's write added is withdrawn",
        ),
    ] {
        let planned = planned(name);
        let desired = restarted.desired(planned);
        match restarted.create(&client, planned, &desired).await {
            Err(e @ ApplyError::Preempted { .. }) => {
                let text = e.to_string();
                assert!(
                    text.starts_with(&format!("ConfigMap own-intent/{name} was created by [")),
                    "{text}"
                );
                assert!(text.contains(outcome), "{name}: {text}");
            }
            other => panic!("{name}: {other:?}"),
        }
    }
    let raced = cms.get("raced").await.unwrap();
    assert_eq!(raced.data["data"], serde_json::json!({"owner": "original"}));
    let apart = cms.get("raced-apart").await.unwrap();
    assert_eq!(apart.data["data"], serde_json::json!({"theirs": "kept"}));
    assert!(
        !apart
            .metadata
            .labels
            .unwrap_or_default()
            .contains_key(LABEL),
        "our label withdrawn"
    );

    // Prune of a version that drops them: only what the installer created goes.
    let resolver = capi_apply::KindResolver::discover(&client).await.unwrap();
    let targets = record
        .prune_targets(&Inventory::new("test"), &resolver)
        .into_iter()
        .filter(|t| t.key.kind == "ConfigMap")
        .collect();
    let report = capi_apply::prune(&client, targets, restarted.ownership(), None).await;
    let deleted: Vec<&str> = report.deleted.iter().map(|k| k.name.as_str()).collect();
    assert!(deleted.contains(&"mine"), "{report:?}");
    for name in ["theirs", "raced", "raced-apart"] {
        assert!(
            cms.get_opt(name).await.unwrap().is_some(),
            "{name} kept: {report:?}"
        );
    }
}

/// An object the installer created, deleted and created again by someone else before the installer
/// re-creates it, is theirs: the record's UID tells it apart (issue 46). Created again by the
/// installer's own apply, it stays the installer's even when the record missed the new UID (a
/// restart between the write and the save); prune deletes only what is the installer's.
#[tokio::test]
async fn an_object_created_again_by_someone_else_is_theirs() {
    const NS: &str = "own-again";
    let cp = control_plane(false).await;
    let admin = cp.admin_client().await.unwrap();
    let client = engine_client(&cp);
    let desired = installer_config_maps(NS, &["kept", "again", "ours-again"]);
    let plan = plan_of(&client, &desired).await;
    let planned = |name: &str| plan.objects().find(|o| o.key.name == name).unwrap();
    let mut record = recorded(&plan);
    let first = applier(&client);
    for o in plan.objects() {
        let applied = first.apply(o, None, &record).await.unwrap();
        assert_eq!(applied.action, ApplyAction::Created);
        record.set_uid(&applied.key, applied.object.metadata.uid.as_deref());
    }
    let cms: Api<DynamicObject> =
        Api::namespaced_with(admin.clone(), NS, &planned("again").resource);
    let helm = helm();
    // Deleted, and created again by someone else, calling itself ours by label.
    cms.delete("again", &Default::default()).await.unwrap();
    let mut theirs = config_map("again", "app.kubernetes.io/managed-by: capi-installer");
    theirs.metadata.namespace = Some(NS.into());
    cms.create(&helm, &theirs).await.unwrap();
    // Deleted, and created again by the installer, whose record then missed the new UID.
    cms.delete("ours-again", &Default::default()).await.unwrap();
    assert_eq!(
        action(&first, planned("ours-again"), &record).await,
        ApplyAction::Created
    );

    let restarted = applier(&client);
    refused_untouched(
        &restarted,
        planned("again"),
        &record,
        &cms,
        "ConfigMap own-again/again exists, the installer did not create it, and it is not adopted: the installer created it, but it was deleted and created again by [helm]",
    )
    .await;
    assert_eq!(
        action(&restarted, planned("ours-again"), &record).await,
        ApplyAction::Unchanged
    );

    let resolver = capi_apply::KindResolver::discover(&client).await.unwrap();
    let targets = record
        .prune_targets(&Inventory::new("test"), &resolver)
        .into_iter()
        .filter(|t| t.key.kind == "ConfigMap")
        .collect();
    let report = capi_apply::prune(&client, targets, restarted.ownership(), None).await;
    let mut deleted: Vec<&str> = report.deleted.iter().map(|k| k.name.as_str()).collect();
    deleted.sort();
    assert_eq!(deleted, ["kept", "ours-again"], "{report:?}");
    assert_eq!(
        cms.get("again").await.unwrap().data["data"]["owner"],
        "original",
        "theirs, kept: {report:?}"
    );
}
