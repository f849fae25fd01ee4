//! The whole engine against a real kube-apiserver (with controller-manager, scheduler and KWOK so
//! Deployments become Available): phased apply with gates, zero writes on a second pass, drift and
//! deletion repaired through the LiveCache, a foreign caBundle kept, inventory and prune.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use capi_apply::{
    ApplyAction, Inventory, InventoryStore, KeepReason, KindResolver, Lookup, ObjectKey, Phase,
    PruneTarget, Readiness, wait_ready,
};
use common::*;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};

const BUNDLE: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.io
spec:
  group: example.io
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              x-kubernetes-preserve-unknown-fields: true
---
apiVersion: example.io/v1
kind: Widget
metadata: {name: w1, namespace: apply-test}
spec: {size: 3}
---
apiVersion: v1
kind: Namespace
metadata: {name: apply-test}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: manager, namespace: apply-test}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: apply-test-manager}
rules:
  - apiGroups: [example.io]
    resources: [widgets]
    verbs: [get, list, watch]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: apply-test}
data: {level: info}
---
apiVersion: v1
kind: LimitRange
metadata: {name: defaults, namespace: apply-test}
spec:
  # Stored as "100m" and "1": compared as quantities, so not re-applied even after a restart.
  limits: [{type: Container, defaultRequest: {cpu: "0.1"}, default: {cpu: 1}}]
---
apiVersion: v1
kind: Secret
metadata: {name: token, namespace: apply-test}
# Write-only on the server: folded into data, never returned.
stringData: {token: s3cr3t}
---
apiVersion: v1
kind: Service
metadata: {name: webhook, namespace: apply-test}
spec:
  selector: {app: manager}
  ports: [{port: 443, targetPort: 9443}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: manager, namespace: apply-test}
spec:
  replicas: 1
  selector: {matchLabels: {app: manager}}
  template:
    metadata: {labels: {app: manager}}
    spec:
      serviceAccountName: manager
      containers:
        - name: manager
          image: example.io/manager:v1
          # Comes back as "100m": compared as a quantity.
          resources: {requests: {cpu: "0.1", memory: 50Mi}}
          # Comes back without `readOnly` (omitempty): only the applier's memory of its last
          # apply tells that this is no drift.
          volumeMounts: [{name: scratch, mountPath: /scratch, readOnly: false}]
      volumes: [{name: scratch, emptyDir: {}}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: apply-test-webhook}
webhooks:
  - name: widgets.example.io
    admissionReviewVersions: [v1]
    sideEffects: None
    failurePolicy: Ignore
    clientConfig:
      service: {namespace: apply-test, name: webhook, path: /validate}
    rules:
      - apiGroups: [example.io]
        apiVersions: [v1]
        operations: [CREATE, UPDATE]
        resources: [widgets]
"#;

fn gated(phase: Phase) -> bool {
    matches!(phase, Phase::CustomResourceDefinitions | Phase::Workloads)
}

#[tokio::test]
async fn apply_steady_state_drift_and_prune() {
    let cp = control_plane(true).await;
    let client = engine_client(&cp);
    let applier = applier(&client);

    // --- Phased apply with gates. The plan resolves Widget from the CRD in the same set.
    let plan = plan_of(&client, BUNDLE).await;
    let phases: Vec<Phase> = plan.phases.iter().map(|p| p.phase).collect();
    assert_eq!(phases, Phase::ALL);
    let mut first: BTreeMap<String, ApplyAction> = BTreeMap::new();
    for phase in &plan.phases {
        // First install: no cache yet, the applier reads what it needs.
        let out = applier
            .apply_phase(
                phase,
                |_| None::<std::sync::Arc<DynamicObject>>,
                &recorded(&plan),
            )
            .await;
        assert!(out.errors.is_empty(), "{:?}", out.errors);
        first.extend(out.outcomes.iter().map(|o| (o.key.to_string(), o.action)));
        if gated(phase.phase) {
            wait_ready(
                &client,
                &phase.wait_targets(),
                Duration::from_secs(60),
                Duration::from_millis(250),
            )
            .await
            .unwrap_or_else(|e| panic!("{} not ready: {e}", phase.phase));
        }
    }
    assert_eq!(first.len(), 11);
    // The audit log tells our requests apart: one server-side apply PATCH per object.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let patches = our_writes(&cp, 0)
        .iter()
        .filter(|e| e.verb == "patch")
        .count();
    assert_eq!(patches, 11, "{:?}", describe(&our_writes(&cp, 0)));
    assert!(
        first.values().all(|a| *a == ApplyAction::Created),
        "{first:?}"
    );

    // Every object exists, carries the ownership label and our hash annotation.
    for o in plan.objects() {
        let api = api(&client, o);
        let live = api
            .get(&o.key.name)
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", o.key));
        assert_eq!(
            live.metadata.labels.as_ref().unwrap()[LABEL],
            MANAGER,
            "{}",
            o.key
        );
        assert_eq!(
            live.metadata.annotations.as_ref().unwrap()[capi_apply::DEFAULT_HASH_ANNOTATION].len(),
            64
        );
    }
    // The Workloads gate really waited: the Deployment is Available.
    let dep = plan.objects().find(|o| o.key.kind == "Deployment").unwrap();
    let live_dep = api(&client, dep).get("manager").await.unwrap();
    assert_eq!(
        capi_apply::readiness("apps", "Deployment", &live_dep),
        Readiness::Current
    );

    // --- Second pass: zero writes from our user agent, everything Unchanged. The cache is started
    // once every kind is served (the Widget watch would only back off before its CRD exists).
    let cache = cache_for(&client, &plan);
    assert!(cache.wait_synced(Duration::from_secs(10)).await);
    settle(&cache, &plan).await;
    let mark = cp.audit_events().unwrap().len();
    for phase in &plan.phases {
        let out = applier
            .apply_phase(phase, |k| cache.get(k), &recorded(&plan))
            .await;
        assert!(out.errors.is_empty(), "{:?}", out.errors);
        for o in &out.outcomes {
            assert_eq!(o.action, ApplyAction::Unchanged, "{}", o.key);
        }
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let writes = our_writes(&cp, mark);
    assert!(
        writes.is_empty(),
        "writes in steady state: {:?}",
        describe(&writes)
    );

    // --- After a restart (a new applier, no memory of its last apply): the cache's slim copies cannot
    // be compared with anything, so each object is read once (a GET); only the object whose value the
    // server dropped (`readOnly: false`) is written again, once.
    let restarted = common::applier(&client);
    let mark = cp.audit_events().unwrap().len();
    let mut rewritten = Vec::new();
    for phase in &plan.phases {
        let out = restarted
            .apply_phase(phase, |k| cache.get(k), &recorded(&plan))
            .await;
        assert!(out.errors.is_empty(), "{:?}", out.errors);
        rewritten.extend(
            out.outcomes
                .iter()
                .filter(|o| o.action != ApplyAction::Unchanged)
                .map(|o| o.key.to_string()),
        );
    }
    assert_eq!(rewritten, ["Deployment apply-test/manager"]);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(our_writes(&cp, mark).len(), 1);
    let reads = cp
        .audit_events()
        .unwrap()
        .into_iter()
        .skip(mark)
        .filter(|e| e.user_agent.as_deref() == Some(UA) && e.verb == "get")
        .count();
    assert_eq!(reads, plan.objects().count(), "one read per object");
    settle(&cache, &plan).await;

    // --- caBundle written by another field manager survives our re-apply.
    let vwc = plan
        .objects()
        .find(|o| o.key.kind == "ValidatingWebhookConfiguration")
        .unwrap();
    let vwc_api = api(&client, vwc);
    let ca = serde_json::json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "apply-test-webhook"},
        "webhooks": [{"name": "widgets.example.io", "clientConfig": {"caBundle": "Zm9vYmFy"}}]
    });
    let injected = vwc_api
        .patch(
            "apply-test-webhook",
            &PatchParams::apply("service-ca").force(),
            &Patch::Apply(&ca),
        )
        .await
        .expect("service-ca writes the caBundle");
    // Change our desired object so the applier really writes it.
    let mut changed = vwc.clone();
    changed.object.metadata.labels = Some([("tier".to_owned(), "admission".to_owned())].into());
    let cached = eventually(Duration::from_secs(5), || {
        cache
            .get(&vwc.key)
            .filter(|o| o.metadata.resource_version == injected.metadata.resource_version)
    })
    .await
    .expect("cache sees the caBundle's write");
    let out = applier
        .apply(&changed, Some(&cached), &recorded(&plan))
        .await
        .expect("re-apply");
    assert_eq!(out.action, ApplyAction::Configured);
    let after = vwc_api.get("apply-test-webhook").await.unwrap();
    assert_eq!(
        after.data["webhooks"][0]["clientConfig"]["caBundle"],
        "Zm9vYmFy"
    );
    assert_eq!(after.metadata.labels.as_ref().unwrap()["tier"], "admission");
    // And when service-ca rotates the caBundle after our apply, the unchanged desired object is still
    // Unchanged against the cache's copy: the caBundle is not ours and does not count as drift.
    let ca = serde_json::json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "apply-test-webhook"},
        "webhooks": [{"name": "widgets.example.io", "clientConfig": {"caBundle": "cm90YXRlZA=="}}]
    });
    let rotated = vwc_api
        .patch(
            "apply-test-webhook",
            &PatchParams::apply("service-ca").force(),
            &Patch::Apply(&ca),
        )
        .await
        .expect("service-ca rotates the caBundle");
    assert_ne!(
        rotated.metadata.resource_version,
        after.metadata.resource_version
    );
    let live_now = eventually(Duration::from_secs(5), || {
        cache
            .get(&vwc.key)
            .filter(|o| o.metadata.resource_version == rotated.metadata.resource_version)
    })
    .await
    .unwrap();
    assert!(!applier.needs_apply(&changed, Some(&live_now)));

    // --- Drift: someone edits a field we own; the cache announces it and a re-apply repairs it.
    let cm = plan.objects().find(|o| o.key.kind == "ConfigMap").unwrap();
    let cm_api = api(&client, cm);
    let mut changes = cache.subscribe();
    let intruded = cm_api
        .patch(
            "settings",
            &PatchParams { field_manager: Some("intruder".into()), ..Default::default() },
            &Patch::Merge(serde_json::json!({"data": {"level": "debug"}, "metadata": {"labels": {"app.kubernetes.io/managed-by": MANAGER, "extra": "x"}}})),
        )
        .await
        .unwrap();
    wait_for_change(&mut changes, &cm.key).await;
    let drifted = eventually(Duration::from_secs(5), || {
        cache
            .get(&cm.key)
            .filter(|o| o.metadata.resource_version == intruded.metadata.resource_version)
    })
    .await
    .expect("still cached");
    assert!(applier.needs_apply(cm, Some(&drifted)));
    let out = applier
        .apply(cm, Some(&drifted), &recorded(&plan))
        .await
        .unwrap();
    assert_eq!(out.action, ApplyAction::Configured);
    assert_eq!(
        cm_api.get("settings").await.unwrap().data["data"]["level"],
        "info"
    );

    // --- Deletion: the cache drops the Deployment promptly; a re-apply creates it again.
    let dep_api = api(&client, dep);
    dep_api
        .delete("manager", &DeleteParams::background())
        .await
        .unwrap();
    let gone = eventually(Duration::from_secs(10), || {
        cache.get(&dep.key).is_none().then_some(())
    })
    .await;
    assert!(gone.is_some(), "cache still has the deleted Deployment");
    let out = applier
        .apply(dep, cache.get(&dep.key).as_deref(), &recorded(&plan))
        .await
        .unwrap();
    assert_eq!(out.action, ApplyAction::Created);
    assert!(dep_api.get_opt("manager").await.unwrap().is_some());

    // --- Deletion seen by the watch: an applier that asks the cache re-creates the object it wrote
    // without reading it first (the watch saw that very object, by uid, go).
    let cached = common::applier(&client).with_cache(cache.clone());
    let back = eventually(Duration::from_secs(10), || cache.get(&dep.key)).await;
    assert!(back.is_some(), "the cache did not see the Deployment again");
    let out = cached.apply(dep, None, &recorded(&plan)).await.unwrap();
    // Read once, then written once: the server dropped a value (see the restart above).
    assert_eq!(out.action, ApplyAction::Configured);
    let uid = out.object.metadata.uid.clone().unwrap();
    dep_api
        .delete("manager", &DeleteParams::background())
        .await
        .unwrap();
    let buried = eventually(Duration::from_secs(10), || {
        cache.saw_deleted(&dep.key, &uid).then_some(())
    })
    .await;
    assert!(buried.is_some(), "the cache did not see the Deployment go");
    assert!(matches!(cache.lookup(&dep.key), Lookup::Absent));
    let mark = cp.audit_events().unwrap().len();
    let out = cached.apply(dep, None, &recorded(&plan)).await.unwrap();
    assert_eq!(out.action, ApplyAction::Created);
    let created = out.object.metadata.uid.clone().unwrap();
    assert_ne!(created, uid);
    // Once the create is in the audit log, so is any read before it.
    let requests = eventually(Duration::from_secs(10), || {
        let ours: Vec<_> = cp
            .audit_events()
            .unwrap()
            .into_iter()
            .skip(mark)
            .filter(|e| e.user_agent.as_deref() == Some(UA))
            .collect();
        ours.iter().any(|e| e.verb == "patch").then_some(ours)
    })
    .await
    .expect("the create in the audit log");
    assert_eq!(
        requests.iter().map(|e| e.verb.as_str()).collect::<Vec<_>>(),
        ["patch"],
        "{:?}",
        describe(&requests)
    );
    // Right after its own create the cache may not show the new object yet, and its record of the
    // deletion names the uid before: the applier reads rather than create it again.
    let out = cached.apply(dep, None, &recorded(&plan)).await.unwrap();
    assert_eq!(out.action, ApplyAction::Unchanged);
    assert_eq!(out.object.metadata.uid.as_deref(), Some(created.as_str()));

    // --- Inventory: stored in a ConfigMap, written only when it changes.
    let store = InventoryStore::new(client.clone(), "apply-test", "apply-inventory", MANAGER);
    assert_eq!(
        store.load("bundle").await.unwrap(),
        Inventory::new("bundle")
    );
    let old = Inventory::from_plan("bundle", &plan);
    assert!(store.save(&old).await.unwrap(), "first save writes");
    let mark = cp.audit_events().unwrap().len();
    assert!(
        !store.save(&old).await.unwrap(),
        "unchanged inventory is not written"
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(our_writes(&cp, mark).is_empty());
    assert_eq!(store.load("bundle").await.unwrap(), old);
    // Another owner in the same ConfigMap does not disturb the first.
    let mut other = Inventory::new("other");
    other.insert(
        ObjectKey::new("", "v1", "ConfigMap", Some("apply-test"), "x"),
        Phase::Base,
    );
    assert!(store.save(&other).await.unwrap());
    assert_eq!(store.load("bundle").await.unwrap(), old);
    // Several keys in one request and no read (a caller that watches the ConfigMap knows what is
    // stored): one key stored, one removed, the others untouched.
    let mut third = Inventory::new("third");
    third.insert(
        ObjectKey::new("", "v1", "ConfigMap", Some("apply-test"), "y"),
        Phase::Base,
    );
    let requests_since = |mark: usize| {
        cp.audit_events()
            .expect("audit log")
            .into_iter()
            .skip(mark)
            .filter(|e| e.user_agent.as_deref() == Some(UA))
            .map(|e| format!("{} {}", e.verb, e.response_code.unwrap_or_default()))
            .collect::<Vec<_>>()
    };
    let mark = cp.audit_events().unwrap().len();
    store.write(&[&third], &["other"], true).await.unwrap();
    let sent = eventually(Duration::from_secs(10), || {
        let sent = requests_since(mark);
        (!sent.is_empty()).then_some(sent)
    })
    .await;
    assert_eq!(sent, Some(vec!["patch 200".to_string()]));
    assert_eq!(store.load("third").await.unwrap(), third);
    assert_eq!(store.load("other").await.unwrap(), Inventory::new("other"));
    assert_eq!(store.load("bundle").await.unwrap(), old);
    // A ConfigMap believed absent is created at once; one believed present but gone is created after
    // the patch finds none; one believed absent but present is patched after the create finds it.
    let fresh = |name: &str| InventoryStore::new(client.clone(), "apply-test", name, MANAGER);
    for (name, exists, expected) in [
        ("apply-inventory-absent", false, vec!["create 201"]),
        (
            "apply-inventory-gone",
            true,
            vec!["patch 404", "create 201"],
        ),
        ("apply-inventory", false, vec!["create 409", "patch 200"]),
    ] {
        let mark = cp.audit_events().unwrap().len();
        fresh(name).write(&[&third], &[], exists).await.unwrap();
        let sent = eventually(Duration::from_secs(10), || {
            let sent = requests_since(mark);
            (sent.len() >= expected.len()).then_some(sent)
        })
        .await;
        assert_eq!(
            sent,
            Some(expected.iter().map(|s| s.to_string()).collect()),
            "{name}"
        );
        assert_eq!(fresh(name).load("third").await.unwrap(), third, "{name}");
    }
    assert_eq!(store.load("bundle").await.unwrap(), old);

    // --- Prune: a smaller bundle. An extra Widget that is not ours keeps the CRD alive; the
    // ClusterRole lost our label (someone took it over) and must survive.
    let widgets = Api::<DynamicObject>::namespaced_with(
        client.clone(),
        "apply-test",
        &plan
            .objects()
            .find(|o| o.key.kind == "Widget")
            .unwrap()
            .resource,
    );
    let foreign_widget: DynamicObject = serde_saphyr::from_str(
        "apiVersion: example.io/v1\nkind: Widget\nmetadata: {name: theirs, namespace: apply-test}\nspec: {size: 1}\n",
    )
    .unwrap();
    widgets
        .create(&PostParams::default(), &foreign_widget)
        .await
        .unwrap();
    // The cache sees only what carries our label.
    let theirs = ObjectKey::new("example.io", "v1", "Widget", Some("apply-test"), "theirs");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(cache.get(&theirs).is_none());
    assert!(
        cache
            .get(&ObjectKey::new(
                "example.io",
                "v1",
                "Widget",
                Some("apply-test"),
                "w1"
            ))
            .is_some()
    );
    let cr = plan
        .objects()
        .find(|o| o.key.kind == "ClusterRole")
        .unwrap();
    api(&client, cr)
        .patch(
            "apply-test-manager",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"metadata": {"labels": {LABEL: "someone-else"}}})),
        )
        .await
        .unwrap();

    let smaller: Vec<&str> = BUNDLE
        .split("\n---\n")
        .filter(|d| {
            [
                "kind: Namespace",
                "kind: ServiceAccount",
                "kind: Service\n",
                "kind: LimitRange",
                "kind: Deployment",
            ]
            .iter()
            .any(|k| d.contains(k))
        })
        .collect();
    assert_eq!(smaller.len(), 5);
    let plan2 = plan_of(&client, &smaller.join("\n---\n")).await;
    let new = Inventory::from_plan("bundle", &plan2);
    let resolver = KindResolver::discover(&client).await.unwrap();
    let targets = old.prune_targets(&new, &resolver);
    assert_eq!(targets.len(), 6);
    let mark = cp.audit_events().unwrap().len();
    let report = capi_apply::prune(&client, targets, &applier.ownership().clone(), None).await;
    let deleted: Vec<String> = report.deleted.iter().map(ToString::to_string).collect();
    assert_eq!(
        deleted,
        [
            "ValidatingWebhookConfiguration apply-test-webhook",
            "Widget apply-test/w1",
            "Secret apply-test/token",
            "ConfigMap apply-test/settings",
        ]
    );
    let kept: Vec<(String, KeepReason)> = report
        .kept
        .iter()
        .map(|(k, r)| (k.to_string(), r.clone()))
        .collect();
    assert_eq!(
        kept,
        [
            (
                "ClusterRole apply-test-manager".to_owned(),
                KeepReason::NotOwned
            ),
            (
                "CustomResourceDefinition widgets.example.io".to_owned(),
                KeepReason::CrdHasInstances {
                    kind: "Widget".into()
                }
            ),
        ]
    );
    let retry: Vec<String> = report.retry_keys().map(ToString::to_string).collect();
    assert_eq!(retry, ["CustomResourceDefinition widgets.example.io"]);
    let mut next = new.clone();
    next.retain_from(&old, report.retry_keys());
    assert!(store.save(&next).await.unwrap());
    let stored = store.load("bundle").await.unwrap();
    assert_eq!(stored.entries.len(), 6, "5 planned + the kept CRD");
    assert!(stored.contains(report.retry_keys().next().unwrap()));
    // The deletes went out in that order, and nothing else was deleted.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let deletes: Vec<String> = our_writes(&cp, mark)
        .iter()
        .filter(|e| e.verb == "delete")
        .map(|e| {
            e.object_ref
                .as_ref()
                .and_then(|o| o.name.clone())
                .unwrap_or_default()
        })
        .collect();
    assert_eq!(deletes, ["apply-test-webhook", "w1", "token", "settings"]);
    assert!(
        api(&client, cr)
            .get_opt("apply-test-manager")
            .await
            .unwrap()
            .is_some()
    );
    assert!(widgets.get_opt("theirs").await.unwrap().is_some());
    for o in plan2.objects() {
        assert!(
            api(&client, o)
                .get_opt(&o.key.name)
                .await
                .unwrap()
                .is_some(),
            "{} kept",
            o.key
        );
    }

    // Once the last instance is gone, the retried prune deletes the CRD.
    widgets
        .delete("theirs", &DeleteParams::background())
        .await
        .unwrap();
    let crd_key = report.retry_keys().next().unwrap().clone();
    let crd_resource = resolver.resolve_key(&crd_key).unwrap().resource.clone();
    let report = capi_apply::prune(
        &client,
        vec![PruneTarget {
            key: crd_key.clone(),
            phase: Phase::CustomResourceDefinitions,
            resource: Some(crd_resource),
            adopted: false,
            pending: false,
            uid: None,
        }],
        applier.ownership(),
        None,
    )
    .await;
    assert_eq!(report.deleted, [crd_key]);
    let widget_resource = &plan
        .objects()
        .find(|o| o.key.kind == "Widget")
        .unwrap()
        .resource;
    assert!(cache.get(&theirs).is_none());
    cache.unwatch(widget_resource);
    assert!(cache.is_synced(), "the remaining watches are still synced");
    assert!(cache.get(&plan2.objects().next().unwrap().key).is_some());
}

#[tokio::test]
async fn wait_ready_times_out_with_a_typed_answer() {
    let cp = control_plane(true).await;
    let client = engine_client(&cp);
    let applier = applier(&client);
    // No node matches: the pod stays Pending and the Deployment never becomes Available.
    let plan = plan_of(
        &client,
        r#"
apiVersion: v1
kind: Namespace
metadata: {name: stuck}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: stuck, namespace: stuck}
spec:
  selector: {matchLabels: {app: stuck}}
  template:
    metadata: {labels: {app: stuck}}
    spec:
      nodeSelector: {no-such-node: "true"}
      containers: [{name: c, image: example.io/c:v1}]
"#,
    )
    .await;
    for phase in &plan.phases {
        let out = applier
            .apply_phase(
                phase,
                |_| None::<std::sync::Arc<DynamicObject>>,
                &recorded(&plan),
            )
            .await;
        assert!(out.errors.is_empty(), "{:?}", out.errors);
    }
    let started = std::time::Instant::now();
    let err = wait_ready(
        &client,
        &plan.phase(Phase::Workloads).unwrap().wait_targets(),
        Duration::from_secs(4),
        Duration::from_millis(500),
    )
    .await
    .expect_err("cannot become ready");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the wait must end at its timeout"
    );
    assert!(!err.failed);
    assert_eq!(err.not_ready.len(), 1);
    assert_eq!(err.not_ready[0].0.to_string(), "Deployment stuck/stuck");
    assert!(
        matches!(err.not_ready[0].1, Readiness::InProgress(_)),
        "{}",
        err
    );
    assert!(
        err.to_string()
            .starts_with("not ready in time: Deployment stuck/stuck: InProgress: "),
        "{err}"
    );
}

fn api(client: &kube::Client, o: &capi_apply::PlannedObject) -> Api<DynamicObject> {
    match &o.key.namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &o.resource),
        None => Api::all_with(client.clone(), &o.resource),
    }
}

/// Waits until the cache holds every planned object (the watch events of our own writes arrived).
async fn settle(cache: &capi_apply::LiveCache, plan: &capi_apply::Plan) {
    let all = eventually(Duration::from_secs(10), || {
        plan.objects()
            .all(|o| cache.get(&o.key).is_some())
            .then_some(())
    })
    .await;
    let missing: Vec<String> = plan
        .objects()
        .filter(|o| cache.get(&o.key).is_none())
        .map(|o| o.key.to_string())
        .collect();
    assert!(all.is_some(), "cache did not catch up: missing {missing:?}");
}

async fn wait_for_change(rx: &mut tokio::sync::broadcast::Receiver<ObjectKey>, key: &ObjectKey) {
    let found = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match rx.recv().await {
                Ok(k) if &k == key => return,
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(e) => panic!("change channel closed: {e}"),
            }
        }
    })
    .await;
    assert!(found.is_ok(), "no change notification for {key}");
}
