//! Dry-run before the first write, against a real kube-apiserver: an object the API server would
//! reject, a foreign object and an unsafe CRD change are all found before anything is written; an
//! unchanged plan costs no request, and neither does a dry-run that passed already.

mod common;

use capi_apply::{ApplyAction, ApplyError, CrdProblem, KindResolver};
use common::*;
use kube::api::{Api, DynamicObject, PostParams};

const NS: &str = "dry-run-test";

const CRD_V1BETA1_V1: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.test.cluster.x-k8s.io}
spec:
  group: test.cluster.x-k8s.io
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  versions:
  - {name: v1beta1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
  - {name: v1, served: true, storage: false, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
";

fn crd(scope: &str, versions: &[(&str, bool, bool)]) -> String {
    let versions: Vec<String> = versions
        .iter()
        .map(|(n, served, storage)| format!("  - {{name: {n}, served: {served}, storage: {storage}, schema: {{openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}}}}}\n"))
        .collect();
    format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: widgets.test.cluster.x-k8s.io}}\nspec:\n  group: test.cluster.x-k8s.io\n  scope: {scope}\n  names: {{kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}}\n  versions:\n{}",
        versions.concat()
    )
}

fn deployment(container_name: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: d, namespace: {NS}}}\nspec: {{selector: {{matchLabels: {{app: d}}}}, template: {{metadata: {{labels: {{app: d}}}}, spec: {{containers: [{{name: {container_name}, image: registry.example/d:1}}]}}}}}}\n"
    )
}

#[tokio::test]
async fn every_failure_is_found_before_the_first_write() {
    let cp = control_plane(false).await;
    let admin = cp.admin_client().await.unwrap();
    let client = engine_client(&cp);
    let applier = applier(&client);
    let ns = plan_of(
        &client,
        &format!("apiVersion: v1\nkind: Namespace\nmetadata: {{name: {NS}}}\n"),
    )
    .await;
    applier
        .apply(ns.objects().next().unwrap(), None, &recorded(&ns))
        .await
        .unwrap();

    // 1. A version whose Deployment the API server rejects (an invalid container name): the dry-run
    //    names it, and neither the new CRD nor anything else is written.
    let bad = format!(
        "{CRD_V1BETA1_V1}---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c, namespace: {NS}}}\ndata: {{k: v}}\n---\n{}",
        deployment("Not_A_DNS_Label")
    );
    let plan = plan_of(&client, &bad).await;
    let served = KindResolver::discover(&client).await.unwrap();
    let (now, later) = plan.split_by_served(&served);
    assert_eq!(now.len(), 3);
    assert!(later.is_empty());
    let mark = cp.audit_events().unwrap().len();
    let errors = applier
        .dry_run_all(
            now,
            |_| None::<Box<DynamicObject>>,
            &recorded(&plan),
            &|_, _| Ok(()),
        )
        .await;
    assert_eq!(errors.len(), 1, "{errors:?}");
    match &errors[0] {
        ApplyError::DryRun { key, source } => {
            assert_eq!(key.to_string(), format!("Deployment {NS}/d"));
            assert!(source.to_string().contains("Not_A_DNS_Label"), "{source}");
        }
        other => panic!("{other}"),
    }
    assert!(
        errors[0]
            .to_string()
            .starts_with("dry-run Deployment dry-run-test/d: "),
        "{}",
        errors[0]
    );
    let events = cp.audit_events().unwrap();
    let dry: Vec<_> = events[mark..].iter().filter(|e| e.is_dry_run()).collect();
    assert_eq!(dry.len(), 3, "one dry-run per object");
    assert!(
        our_writes(&cp, mark).is_empty(),
        "{:?}",
        describe(&our_writes(&cp, mark))
    );
    let crds: Api<DynamicObject> =
        Api::all_with(admin.clone(), &plan.objects().next().unwrap().resource);
    assert!(
        crds.get_opt("widgets.test.cluster.x-k8s.io")
            .await
            .unwrap()
            .is_none()
    );

    // 2. The fixed version dry-runs clean, then applies; once applied, a dry-run of the same plan
    //    makes no request at all (steady state stays free).
    let good = bad.replace("Not_A_DNS_Label", "manager");
    let plan = plan_of(&client, &good).await;
    let errors = applier
        .dry_run_all(
            plan.objects(),
            |_| None::<Box<DynamicObject>>,
            &recorded(&plan),
            &|_, _| Ok(()),
        )
        .await;
    assert!(errors.is_empty(), "{errors:?}");
    // What passed is not asked again while the request and the live object are the same (a reconcile
    // that waits for a gate checks the rest of its version on every pass).
    let mark = cp.audit_events().unwrap().len();
    let errors = applier
        .dry_run_all(
            plan.objects(),
            |_| None::<Box<DynamicObject>>,
            &recorded(&plan),
            &|_, _| Ok(()),
        )
        .await;
    assert!(errors.is_empty(), "{errors:?}");
    let again: Vec<_> = cp.audit_events().unwrap()[mark..]
        .iter()
        .filter(|e| e.user_agent.as_deref() == Some(UA) && e.is_dry_run())
        .map(|e| e.request_uri.clone())
        .collect();
    assert!(again.is_empty(), "{again:?}");
    let mut applied = Vec::new();
    for o in plan.objects() {
        applied.push(applier.apply(o, None, &recorded(&plan)).await.unwrap());
    }
    wait_established(&crds, "widgets.test.cluster.x-k8s.io").await;
    let mark = cp.audit_events().unwrap().len();
    let by_key: std::collections::HashMap<_, _> = applied
        .iter()
        .map(|o| (o.key.clone(), Box::new(o.object.clone())))
        .collect();
    let errors = applier
        .dry_run_all(
            plan.objects(),
            |k| by_key.get(k).cloned(),
            &recorded(&plan),
            &|_, _| Ok(()),
        )
        .await;
    assert!(errors.is_empty(), "{errors:?}");
    let ours: Vec<_> = cp.audit_events().unwrap()[mark..]
        .iter()
        .filter(|e| e.user_agent.as_deref() == Some(UA))
        .map(|e| format!("{} {}", e.verb, e.request_uri))
        .collect();
    assert!(ours.is_empty(), "{ours:?}");

    // 3. CRD safety: with an instance stored in v1beta1, dropping v1beta1, un-serving v1 or changing
    //    the scope is refused, naming the version; adding a version is fine.
    let widgets: Api<DynamicObject> = Api::namespaced_with(
        admin.clone(),
        NS,
        &kube::api::ApiResource {
            group: "test.cluster.x-k8s.io".into(),
            version: "v1".into(),
            api_version: "test.cluster.x-k8s.io/v1".into(),
            kind: "Widget".into(),
            plural: "widgets".into(),
        },
    );
    let w: DynamicObject = serde_saphyr::from_str(&format!(
        "apiVersion: test.cluster.x-k8s.io/v1\nkind: Widget\nmetadata: {{name: w, namespace: {NS}}}\n"
    ))
    .unwrap();
    widgets.create(&PostParams::default(), &w).await.unwrap();
    let live = crds.get("widgets.test.cluster.x-k8s.io").await.unwrap();
    let cases: Vec<(&str, String, Vec<CrdProblem>)> = vec![
        (
            "drop the stored version",
            crd("Namespaced", &[("v1", true, true)]),
            vec![
                CrdProblem::StoredVersionRemoved {
                    version: "v1beta1".into(),
                },
                CrdProblem::UnservedWithInstances {
                    version: "v1beta1".into(),
                },
            ],
        ),
        (
            "stop serving v1 while a Widget exists",
            crd(
                "Namespaced",
                &[("v1beta1", true, true), ("v1", false, false)],
            ),
            vec![CrdProblem::UnservedWithInstances {
                version: "v1".into(),
            }],
        ),
        (
            "change the scope",
            crd("Cluster", &[("v1beta1", true, true), ("v1", true, false)]),
            vec![CrdProblem::ScopeChanged {
                from: "Namespaced".into(),
                to: "Cluster".into(),
            }],
        ),
    ];
    for (what, desired, want) in cases {
        let plan = plan_of(&client, &desired).await;
        let o = plan.objects().next().unwrap();
        match applier.dry_run(o, Some(&live), &recorded(&plan)).await {
            Err(ApplyError::UnsafeCrdChange { key, problems }) => {
                assert_eq!(key.name, "widgets.test.cluster.x-k8s.io", "{what}");
                assert_eq!(problems, want, "{what}");
            }
            other => panic!("{what}: {other:?}"),
        }
    }
    let more = crd(
        "Namespaced",
        &[
            ("v1beta1", true, true),
            ("v1", true, false),
            ("v2", true, false),
        ],
    );
    let plan = plan_of(&client, &more).await;
    assert_eq!(
        applier
            .dry_run(
                plan.objects().next().unwrap(),
                Some(&live),
                &recorded(&plan)
            )
            .await
            .unwrap(),
        ApplyAction::Configured
    );
    assert_eq!(
        crds.get("widgets.test.cluster.x-k8s.io")
            .await
            .unwrap()
            .metadata
            .resource_version,
        live.metadata.resource_version,
        "a dry-run writes nothing"
    );

    // 4. A foreign object is a conflict at dry-run time already.
    let cms: Api<DynamicObject> = Api::namespaced_with(
        admin.clone(),
        NS,
        &plan_of(
            &client,
            &format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: x, namespace: {NS}}}\n"),
        )
        .await
        .objects()
        .next()
        .unwrap()
        .resource,
    );
    let theirs: DynamicObject = serde_saphyr::from_str(&format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: theirs, namespace: {NS}}}\n"
    ))
    .unwrap();
    cms.create(
        &PostParams {
            field_manager: Some("helm".into()),
            ..Default::default()
        },
        &theirs,
    )
    .await
    .unwrap();
    let plan = plan_of(
        &client,
        &format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: theirs, namespace: {NS}}}\ndata: {{k: v}}\n"),
    )
    .await;
    assert!(matches!(
        applier
            .dry_run(plan.objects().next().unwrap(), None, &unrecorded())
            .await,
        Err(ApplyError::Conflict { .. })
    ));
}

async fn wait_established(crds: &Api<DynamicObject>, name: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let crd = crds.get(name).await.unwrap();
        let established = crd.data["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Established" && c["status"] == "True");
        if established {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{name} not Established"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// The judge sees what the API server would store, not the request: a deprecated alias resolved
/// (`serviceAccount` fills an empty `serviceAccountName`) and a float typed (`runAsUser: 0.0` is
/// stored as 0). A refused object is nothing written, and is judged again next time rather than
/// remembered as passed.
#[tokio::test]
async fn the_judge_decides_on_the_stored_object() {
    const NS: &str = "judge-test";
    let cp = control_plane(false).await;
    let client = engine_client(&cp);
    let applier = applier(&client);
    let ns = plan_of(
        &client,
        &format!("apiVersion: v1\nkind: Namespace\nmetadata: {{name: {NS}}}\n"),
    )
    .await;
    applier
        .apply(ns.objects().next().unwrap(), None, &recorded(&ns))
        .await
        .unwrap();
    let yaml = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: d, namespace: {NS}}}\nspec: {{selector: {{matchLabels: {{app: d}}}}, template: {{metadata: {{labels: {{app: d}}}}, spec: {{serviceAccountName: '', serviceAccount: protected, securityContext: {{runAsUser: 0.0}}, containers: [{{name: c, image: registry.example/d:1}}]}}}}}}\n"
    );
    let plan = plan_of(&client, &yaml).await;
    let seen = std::sync::Mutex::new(Vec::new());
    let judge = |_: &capi_apply::PlannedObject, stored: &DynamicObject| {
        let spec = &stored.data["spec"]["template"]["spec"];
        seen.lock().unwrap().push((
            spec["serviceAccountName"].clone(),
            spec["securityContext"]["runAsUser"].clone(),
        ));
        match spec["serviceAccountName"].as_str() {
            Some("protected") => Err("spec.template.spec.serviceAccountName is protected".into()),
            _ => Ok(()),
        }
    };
    for attempt in 0..2 {
        let mark = cp.audit_events().unwrap().len();
        let errors = applier
            .dry_run_all(
                plan.objects(),
                |_| None::<Box<DynamicObject>>,
                &recorded(&plan),
                &judge,
            )
            .await;
        assert_eq!(errors.len(), 1, "attempt {attempt}: {errors:?}");
        match &errors[0] {
            ApplyError::Refused { key, reason } => {
                assert_eq!(key.to_string(), format!("Deployment {NS}/d"));
                assert!(reason.contains("serviceAccountName"), "{reason}");
            }
            other => panic!("{other}"),
        }
        let events = cp.audit_events().unwrap();
        assert_eq!(
            events[mark..].iter().filter(|e| e.is_dry_run()).count(),
            1,
            "attempt {attempt}: asked again, not remembered as passed"
        );
        assert!(our_writes(&cp, mark).is_empty());
    }
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].0, serde_json::json!("protected"));
    // Typed by the API server: an integer, no longer the float of the request.
    assert!(seen[0].1.is_i64(), "{:?}", seen[0].1);
    assert_eq!(seen[0].1, serde_json::json!(0));
}
