//! CPU cost of a no-op reconcile (no API server): plan N objects, then decide for each that nothing
//! needs applying, as the applier does against its cache. Run:
//! `cargo run --release -p capi-apply --example steady_state -- 1000`

use std::time::Instant;

use capi_apply::apply::stamp;
use capi_apply::{KindResolver, OwnershipPolicy, needs_apply, plan};
use kube::api::{ApiResource, DynamicObject};
use serde_json::json;

fn resource(group: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        api_version: if group.is_empty() {
            "v1".into()
        } else {
            format!("{group}/v1")
        },
        group: group.into(),
        version: "v1".into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}

fn object(i: usize) -> DynamicObject {
    let v = match i % 4 {
        0 => json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": format!("d{i}"), "namespace": "ns", "labels": {"app": format!("d{i}")}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": format!("d{i}")}},
                "template": {"metadata": {"labels": {"app": format!("d{i}")}},
                    "spec": {"containers": [{"name": "manager", "image": "example.io/manager:v1",
                        "args": ["--leader-elect", "--metrics-bind-address=:8080"],
                        "resources": {"requests": {"cpu": "10m", "memory": "50Mi"}},
                        "ports": [{"containerPort": 9443, "name": "webhook-server"}]}]}}}}),
        1 => json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("c{i}"), "namespace": "ns"},
            "data": {"config.yaml": "a: 1\nb: 2\n".repeat(20)}}),
        2 => json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": format!("s{i}"), "namespace": "ns"},
            "spec": {"selector": {"app": "x"}, "ports": [{"port": 443, "targetPort": 9443}]}}),
        _ => json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": format!("r{i}")},
            "rules": [{"apiGroups": ["example.io"], "resources": ["widgets", "widgets/status"],
                "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]}]}),
    };
    serde_json::from_value(v).expect("valid object")
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000);
    let mut resolver = KindResolver::new();
    resolver.insert(resource("apps", "Deployment", "deployments"), true);
    resolver.insert(resource("", "ConfigMap", "configmaps"), true);
    resolver.insert(resource("", "Service", "services"), true);
    resolver.insert(
        resource("rbac.authorization.k8s.io", "ClusterRole", "clusterroles"),
        false,
    );
    let policy = OwnershipPolicy::new("app.kubernetes.io/managed-by", "capi-installer");
    let hash = capi_apply::DEFAULT_HASH_ANNOTATION;

    let objects: Vec<DynamicObject> = (0..n).map(object).collect();
    let started = Instant::now();
    let planned = plan(objects, &resolver).expect("valid plan");
    let plan_time = started.elapsed();

    // "Live" objects as the cache would hold them: what we applied plus server-side fields.
    let live: Vec<DynamicObject> = planned
        .objects()
        .map(|o| {
            let mut v = serde_json::to_value(stamp(&o.object, &policy, hash)).unwrap();
            v["metadata"]["uid"] = json!("0000");
            v["metadata"]["resourceVersion"] = json!("1");
            v["status"] = json!({"observedGeneration": 1});
            serde_json::from_value(v).unwrap()
        })
        .collect();

    let rounds = 5;
    let started = Instant::now();
    for _ in 0..rounds {
        for (o, l) in planned.objects().zip(&live) {
            let desired = stamp(&o.object, &policy, hash);
            assert!(
                !needs_apply(&desired, Some(l), hash),
                "{} would be applied",
                o.key
            );
        }
    }
    let check = started.elapsed() / rounds;
    println!("objects: {n}");
    println!("plan: {:.2} ms", plan_time.as_secs_f64() * 1e3);
    println!(
        "steady-state check (stamp + hash + subset), all objects: {:.2} ms ({:.1} µs/object)",
        check.as_secs_f64() * 1e3,
        check.as_secs_f64() * 1e6 / n as f64
    );
}
