use serde_json::json;

use crate::apply::stamp;
use crate::drift::{desired_hash, is_subset, needs_apply, normalize, project, projection_hash};
use crate::ownership::OwnershipPolicy;
use crate::testutil::obj;

const HASH: &str = "example.io/desired-hash";

fn policy() -> OwnershipPolicy {
    OwnershipPolicy::new("app.kubernetes.io/managed-by", "capi-installer")
        .adoptable(["cluster-version-operator", "kubectl-client-side-apply"])
}

const DEPLOYMENT: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: manager
  namespace: ns
  labels: {app: manager}
spec:
  replicas: 1
  selector: {matchLabels: {app: manager}}
  template:
    metadata: {labels: {app: manager}}
    spec:
      containers:
        - name: manager
          image: example.io/manager:v1
          resources: {requests: {cpu: "0.1", memory: 50Mi}}
          ports: [{containerPort: 9443}]
          volumeMounts: [{name: certs, mountPath: /certs, readOnly: false}]
      volumes: [{name: certs, secret: {secretName: certs}}]
"#;

/// What the API server returns for DEPLOYMENT applied by us: defaults, normalized quantity, status,
/// server metadata, and labels/annotations added by others.
fn live_after_apply(desired: &kube::api::DynamicObject) -> kube::api::DynamicObject {
    let mut v = serde_json::to_value(desired).unwrap();
    v["metadata"]["uid"] = json!("u-1");
    v["metadata"]["resourceVersion"] = json!("42");
    v["metadata"]["generation"] = json!(1);
    v["metadata"]["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
    v["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = json!("1");
    v["metadata"]["labels"]["extra"] = json!("by-someone");
    v["metadata"]["managedFields"] = json!([{"manager": "capi-installer", "operation": "Apply"}]);
    v["spec"]["strategy"] = json!({"type": "RollingUpdate"});
    v["spec"]["progressDeadlineSeconds"] = json!(600);
    let c = &mut v["spec"]["template"]["spec"]["containers"][0];
    c["imagePullPolicy"] = json!("IfNotPresent");
    c["ports"][0]["protocol"] = json!("TCP");
    c["resources"]["requests"]["cpu"] = json!("100m");
    c["volumeMounts"][0]
        .as_object_mut()
        .unwrap()
        .remove("readOnly");
    v["status"] = json!({"replicas": 1, "observedGeneration": 1});
    serde_json::from_value(v).unwrap()
}

#[test]
fn normalize_keeps_only_identity_labels_annotations_and_content() {
    let o = obj(r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: c
  namespace: ns
  uid: abc
  resourceVersion: "7"
  generation: 3
  labels: {a: b}
  annotations: {x: y}
  finalizers: [f]
data: {k: v, gone: null}
status: {whatever: true}
"#);
    assert_eq!(
        normalize(&o),
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "ns", "labels": {"a": "b"}, "annotations": {"x": "y"}},
            "data": {"k": "v"}
        })
    );
}

#[test]
fn hash_is_independent_of_key_order_and_of_the_hash_annotation() {
    let a = obj(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: ns}\ndata: {a: '1', b: '2'}\n",
    );
    let b = obj(
        "kind: ConfigMap\napiVersion: v1\ndata: {b: '2', a: '1'}\nmetadata: {namespace: ns, name: c}\n",
    );
    assert_eq!(desired_hash(&a, HASH), desired_hash(&b, HASH));
    let stamped = stamp(&a, &policy(), HASH);
    let with_label = stamp(&stamped, &policy(), HASH);
    assert_eq!(
        stamped.metadata.annotations, with_label.metadata.annotations,
        "stamping is idempotent"
    );
    let c = obj(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: ns}\ndata: {a: '1', b: '3'}\n",
    );
    assert_ne!(desired_hash(&a, HASH), desired_hash(&c, HASH));
}

#[test]
fn stamp_sets_label_and_hash_and_drops_server_fields() {
    let o = obj(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: ns, resourceVersion: '9'}\ndata: {a: '1'}\n",
    );
    let s = stamp(&o, &policy(), HASH);
    assert_eq!(
        s.metadata.labels.as_ref().unwrap()["app.kubernetes.io/managed-by"],
        "capi-installer"
    );
    let h = &s.metadata.annotations.as_ref().unwrap()[HASH];
    assert_eq!(h.len(), 64);
    assert_eq!(*h, desired_hash(&s, HASH));
    assert_eq!(s.metadata.resource_version, None);
}

#[test]
fn subset_rules() {
    let cases = [
        // (desired, live, expected)
        (json!({"a": 1}), json!({"a": 1, "b": 2}), true),
        (json!({"a": 1}), json!({"a": 2}), false),
        (json!({"a": 1}), json!({}), false),
        (json!({"a": null}), json!({}), true),
        (json!({"a": null}), json!({"a": 5}), true),
        (json!({"a": {"b": 1}}), json!({"a": {"b": 1, "c": 2}}), true),
        (json!({"a": {"b": 1}}), json!({"a": {"b": 2}}), false),
        (json!({"a": [1, 2]}), json!({"a": [1, 2]}), true),
        (json!({"a": [1, 2]}), json!({"a": [2, 1]}), false),
        (json!({"a": [1]}), json!({"a": [1, 2]}), false),
        (
            json!({"a": [{"x": 1}]}),
            json!({"a": [{"x": 1, "y": 2}]}),
            true,
        ),
        (json!({"a": {}}), json!({}), true),
        (json!({"a": []}), json!({}), true),
        (json!({"a": {"b": {}}}), json!({}), true),
        (json!({"a": {"b": 1}}), json!({}), false),
        (json!({"a": 1}), json!({"a": 1.0}), true),
        (json!({"a": "1"}), json!({"a": 1}), false),
        // Quantities in canonical form.
        (json!({"cpu": "0.1"}), json!({"cpu": "100m"}), true),
        (json!({"cpu": 1}), json!({"cpu": "1"}), true),
        (json!({"cpu": 0.5}), json!({"cpu": "500m"}), true),
        (json!({"cpu": "1000m"}), json!({"cpu": "1"}), true),
        (json!({"memory": "1024Mi"}), json!({"memory": "1Gi"}), true),
        (json!({"memory": "1e3"}), json!({"memory": "1k"}), true),
        (json!({"cpu": "0.1"}), json!({"cpu": "200m"}), false),
        (json!({"memory": "1G"}), json!({"memory": "1Gi"}), false),
        (json!({"image": "v1"}), json!({"image": "v2"}), false),
        (json!({"tag": "1.0"}), json!({"tag": "1"}), true),
        (json!({"name": "m"}), json!({"name": "1m"}), false),
        (json!({"name": "Mi"}), json!({"name": "1Mi"}), false),
        (json!({"a": true}), json!({"a": false}), false),
    ];
    for (d, l, want) in cases {
        assert_eq!(is_subset(&d, &l), want, "is_subset({d}, {l})");
    }
}

#[test]
fn needs_apply_cases() {
    let desired = stamp(&obj(DEPLOYMENT), &policy(), HASH);
    let live = live_after_apply(&desired);

    assert!(needs_apply(&desired, None, HASH), "absent → apply");

    // The server dropped `readOnly: false` (omitempty): the subset test cannot know that absent
    // means false here (for other fields absent means true), so it asks for an apply; the
    // applier's memory of its last apply absorbs this (see apply.rs).
    assert!(needs_apply(&desired, Some(&live), HASH));

    // Same with the field present: defaults, status, foreign labels and the quantity "0.1" stored
    // as "100m" do not matter.
    let mut exact = serde_json::to_value(&live).unwrap();
    exact["spec"]["template"]["spec"]["containers"][0]["volumeMounts"][0]["readOnly"] =
        json!(false);
    let exact: kube::api::DynamicObject = serde_json::from_value(exact).unwrap();
    assert!(
        !needs_apply(&desired, Some(&exact), HASH),
        "steady state → nothing to do"
    );

    // A changed field we own.
    let mut drift = serde_json::to_value(&exact).unwrap();
    drift["spec"]["replicas"] = json!(3);
    assert!(needs_apply(
        &desired,
        Some(&serde_json::from_value(drift).unwrap()),
        HASH
    ));

    // Our label removed by someone.
    let mut unlabelled = exact.clone();
    unlabelled
        .metadata
        .labels
        .as_mut()
        .unwrap()
        .remove("app.kubernetes.io/managed-by");
    assert!(needs_apply(&desired, Some(&unlabelled), HASH));

    // A different hash (the desired object changed, e.g. a field was removed from it).
    let mut old_hash = exact.clone();
    old_hash
        .metadata
        .annotations
        .as_mut()
        .unwrap()
        .insert(HASH.into(), "0".repeat(64));
    assert!(needs_apply(&desired, Some(&old_hash), HASH));

    // No hash at all (created by someone else).
    let mut no_hash = exact.clone();
    no_hash.metadata.annotations.as_mut().unwrap().remove(HASH);
    assert!(needs_apply(&desired, Some(&no_hash), HASH));

    // A removed container list element.
    let mut fewer = serde_json::to_value(&exact).unwrap();
    fewer["spec"]["template"]["spec"]["containers"] = json!([]);
    assert!(needs_apply(
        &desired,
        Some(&serde_json::from_value(fewer).unwrap()),
        HASH
    ));
}

#[test]
fn projection_absorbs_normalization_but_not_drift() {
    let desired = stamp(&obj(DEPLOYMENT), &policy(), HASH);
    let live = live_after_apply(&desired);
    let recorded = projection_hash(&desired, &live);

    // Status and unrelated metadata changed later (new resourceVersion): same projection.
    let mut later = serde_json::to_value(&live).unwrap();
    later["metadata"]["resourceVersion"] = json!("77");
    later["status"] = json!({"replicas": 1, "readyReplicas": 1, "observedGeneration": 1});
    later["metadata"]["annotations"]["other"] = json!("x");
    assert_eq!(
        projection_hash(&desired, &serde_json::from_value(later.clone()).unwrap()),
        recorded
    );

    // Someone changed the image: different projection.
    later["spec"]["template"]["spec"]["containers"][0]["image"] = json!("evil:v2");
    assert_ne!(
        projection_hash(&desired, &serde_json::from_value(later).unwrap()),
        recorded
    );
}

#[test]
fn project_follows_the_desired_shape() {
    let d = json!({"a": {"b": 1}, "l": [{"x": 1}]});
    let l = json!({"a": {"b": 2, "c": 3}, "l": [{"x": 1, "y": 2}], "z": 9});
    assert_eq!(project(&d, &l), json!({"a": {"b": 2}, "l": [{"x": 1}]}));
    let shorter = json!({"a": {}, "l": []});
    assert_eq!(project(&d, &shorter), json!({"a": {"b": null}, "l": []}));
}

#[test]
fn secret_string_data_is_folded_into_data() {
    let s = obj(
        "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: ns}\ndata: {a: eA==, b: eA==}\nstringData: {b: hello, c: world}\n",
    );
    assert_eq!(
        normalize(&s)["data"],
        json!({"a": "eA==", "b": "aGVsbG8=", "c": "d29ybGQ="})
    );
    assert!(normalize(&s).get("stringData").is_none());
    // Only Secrets: another kind's stringData field is its own business.
    let other = obj(
        "apiVersion: example.io/v1\nkind: Thing\nmetadata: {name: t}\nstringData: {b: hello}\n",
    );
    assert_eq!(normalize(&other)["stringData"], json!({"b": "hello"}));
}

/// A Deployment as the API server returns it after our apply: our fields (an arg list, a keyed
/// container, a label) in our `Apply` entry, `replicas` and a finalizer set owned by others.
fn managed_deployment(edit: impl FnOnce(&mut serde_json::Value)) -> kube::api::DynamicObject {
    let mut v = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {
            "name": "d", "namespace": "ns", "resourceVersion": "5",
            "labels": {"managed-by": "us", "team": "x"},
            "finalizers": ["a", "b"],
            "managedFields": [
                {"manager": "us", "operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": {
                    "f:metadata": {"f:labels": {"f:managed-by": {}}, "f:finalizers": {"v:\"a\"": {}}},
                    "f:spec": {"f:template": {"f:spec": {"f:containers": {
                        "k:{\"name\":\"c\"}": {".": {}, "f:name": {}, "f:args": {}}}}}}}},
                {"manager": "kube-controller-manager", "operation": "Update", "subresource": "status",
                 "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {}}},
                {"manager": "hpa", "operation": "Update", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:spec": {"f:replicas": {}}}}
            ]
        },
        "spec": {"replicas": 1, "template": {"spec": {"containers": [
            {"name": "c", "image": "i", "args": ["--a"]}]}}},
        "status": {"replicas": 1}
    });
    edit(&mut v);
    serde_json::from_value(v).unwrap()
}

type Edit = fn(&mut serde_json::Value);

#[test]
fn the_managed_digest_changes_with_our_fields_only() {
    use crate::drift::managed_digest;
    let digest = |edit: Edit| managed_digest(&managed_deployment(edit), "us");
    let base = digest(|_| {});
    assert!(base.is_some());
    let same: [(&str, Edit); 5] = [
        ("another manager's field", |v| {
            v["spec"]["replicas"] = json!(3)
        }),
        ("status", |v| v["status"]["replicas"] = json!(0)),
        ("resourceVersion", |v| {
            v["metadata"]["resourceVersion"] = json!("9")
        }),
        ("a label we do not own", |v| {
            v["metadata"]["labels"]["team"] = json!("y")
        }),
        ("a field of our container we do not own", |v| {
            v["spec"]["template"]["spec"]["containers"][0]["image"] = json!("j")
        }),
    ];
    for (what, edit) in same {
        assert_eq!(digest(edit), base, "{what} is not ours");
    }
    let different: [(&str, Edit); 5] = [
        ("our arg list", |v| {
            v["spec"]["template"]["spec"]["containers"][0]["args"] = json!(["--b"])
        }),
        ("our container removed", |v| {
            v["spec"]["template"]["spec"]["containers"] = json!([{"name": "other"}])
        }),
        ("our label removed", |v| {
            v["metadata"]["labels"]
                .as_object_mut()
                .unwrap()
                .remove("managed-by");
        }),
        ("our set value removed", |v| {
            v["metadata"]["finalizers"] = json!(["b"])
        }),
        ("a field taken over (it left our set)", |v| {
            let fields = &mut v["metadata"]["managedFields"][0]["fieldsV1"];
            fields["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"c\"}"]
                .as_object_mut()
                .unwrap()
                .remove("f:args");
        }),
    ];
    for (what, edit) in different {
        assert_ne!(digest(edit), base, "{what}");
    }
    assert_eq!(
        managed_digest(&managed_deployment(|_| {}), "nobody"),
        None,
        "a manager without fields has no digest"
    );
}

/// The first implementations, which built a JSON copy of the whole object at each step: the borrowing
/// ones must give exactly the same objects, hashes and answers (a changed hash would re-apply every
/// object of every cluster once; a changed digest would look like a new provider version).
mod copying {
    use kube::api::DynamicObject;
    use serde_json::{Map, Value};

    use capi_object::strip_nulls;

    use crate::drift::{hash_value, is_subset, normalized_metadata, project};
    use crate::ownership::OwnershipPolicy;

    pub(crate) fn normalize(obj: &DynamicObject) -> Value {
        let mut out = Map::new();
        if let Some(t) = &obj.types {
            out.insert("apiVersion".into(), Value::String(t.api_version.clone()));
            out.insert("kind".into(), Value::String(t.kind.clone()));
        }
        // The metadata projection is not what the borrowing changed: shared, not copied.
        out.insert("metadata".into(), normalized_metadata(&obj.metadata));
        let is_secret = obj
            .types
            .as_ref()
            .is_some_and(|t| t.api_version == "v1" && t.kind == "Secret");
        if let Value::Object(data) = &obj.data {
            for (k, v) in data {
                if matches!(k.as_str(), "status" | "apiVersion" | "kind" | "metadata")
                    || v.is_null()
                {
                    continue;
                }
                out.insert(k.clone(), strip_nulls(v));
            }
        }
        if is_secret {
            fold_string_data(&mut out);
        }
        Value::Object(out)
    }

    /// A Secret's `stringData` is write-only: the API server folds it into `data` (base64) and never
    /// returns it, so a desired object with `stringData` would never look applied. Fold it the same way
    /// (as Flux does); `stringData` wins over `data` for the same key, as on the server.
    fn fold_string_data(secret: &mut Map<String, Value>) {
        use base64::Engine;
        let Some(Value::Object(string_data)) = secret.remove("stringData") else {
            return;
        };
        let data = secret
            .entry("data")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(data) = data {
            for (k, v) in string_data {
                if let Value::String(text) = v {
                    let encoded = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
                    data.insert(k, Value::String(encoded));
                }
            }
        }
    }

    pub(crate) fn desired_hash(desired: &DynamicObject, ann: &str) -> String {
        let mut v = normalize(desired);
        if let Some(Value::Object(a)) = v.pointer_mut("/metadata/annotations") {
            a.remove(ann);
            if a.is_empty() {
                v["metadata"].as_object_mut().unwrap().remove("annotations");
            }
        }
        hash_value(&v)
    }

    pub(crate) fn stamp(obj: &DynamicObject, policy: &OwnershipPolicy, ann: &str) -> DynamicObject {
        let mut with_label = obj.clone();
        with_label
            .metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert(policy.label_key.clone(), policy.label_value.clone());
        let hash = desired_hash(&with_label, ann);
        let mut v = normalize(&with_label);
        let meta = v["metadata"].as_object_mut().unwrap();
        meta.entry("annotations")
            .or_insert_with(|| Value::Object(Map::new()))
            .as_object_mut()
            .unwrap()
            .insert(ann.into(), Value::String(hash));
        serde_json::from_value(v).unwrap()
    }

    pub(crate) fn projection_hash(desired: &DynamicObject, live: &DynamicObject) -> String {
        hash_value(&project(
            &normalize(desired),
            &serde_json::to_value(live).unwrap(),
        ))
    }

    pub(crate) fn subset(desired: &DynamicObject, live: &DynamicObject) -> bool {
        is_subset(&normalize(desired), &serde_json::to_value(live).unwrap())
    }

    pub(crate) fn hash_objects(objects: &[DynamicObject]) -> String {
        hash_value(&Value::Array(
            objects
                .iter()
                .map(|o| serde_json::to_value(o).unwrap())
                .collect(),
        ))
    }
}

/// `desired` as the API server returns it: server metadata, managedFields, a label of someone else, a
/// defaulted field, status.
fn served(desired: &kube::api::DynamicObject) -> kube::api::DynamicObject {
    let mut v = serde_json::to_value(desired).unwrap();
    v["metadata"]["uid"] = json!("u-1");
    v["metadata"]["resourceVersion"] = json!("42");
    v["metadata"]["managedFields"] = json!([{"manager": "capi-installer", "operation": "Apply"}]);
    v["metadata"]["labels"]["extra"] = json!("by-someone");
    v["defaulted"] = json!({"by": "server"});
    v["status"] = json!({"observedGeneration": 1});
    serde_json::from_value(v).unwrap()
}

#[test]
fn borrowing_steps_equal_the_copying_ones() {
    let desired = [
        obj(DEPLOYMENT),
        obj(
            "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: ns, annotations: {}}\ndata: {a: eA==, b: eA==, z: null}\nstringData: {b: hello, c: world}\n",
        ),
        obj(
            "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: ns}\nstringData: {c: world}\n",
        ),
        obj(
            "apiVersion: example.io/v1\nkind: Thing\nmetadata: {name: t, namespace: '', labels: {}}\nspec: {a: null, b: [null, {c: null, d: 1}], e: {f: {g: null}}}\nstatus: {ready: true}\nextra: null\n",
        ),
        obj("apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: sa, namespace: ns}\n"),
        obj(&format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c, namespace: ns, resourceVersion: '3', annotations: {{{HASH}: stale, keep: 'yes'}}}}\ndata: {{a: '1'}}\n"
        )),
    ];
    let policy = policy();
    for d in &desired {
        let name = d.metadata.name.clone().unwrap();
        assert_eq!(normalize(d), copying::normalize(d), "{name}");
        assert_eq!(
            desired_hash(d, HASH),
            copying::desired_hash(d, HASH),
            "{name}"
        );
        let stamped = stamp(d, &policy, HASH);
        assert_eq!(
            serde_json::to_value(&stamped).unwrap(),
            serde_json::to_value(copying::stamp(d, &policy, HASH)).unwrap(),
            "{name}"
        );
        assert_eq!(stamp(&stamped, &policy, HASH).metadata, stamped.metadata);

        let mut live = [
            if name == "manager" {
                live_after_apply(&stamped)
            } else {
                served(&stamped)
            },
            stamped.clone(),
            obj("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\ndata: {a: '2'}\n"),
        ];
        // A list item of a built-in kind comes without apiVersion and kind.
        live[1].types = None;
        for l in &live {
            assert_eq!(
                projection_hash(&stamped, l),
                copying::projection_hash(&stamped, l),
                "{name}"
            );
            assert_eq!(
                needs_apply(&stamped, Some(l), HASH),
                l.metadata.annotations.as_ref().and_then(|a| a.get(HASH))
                    != stamped.metadata.annotations.as_ref().unwrap().get(HASH)
                    || !copying::subset(&stamped, l),
                "{name}"
            );
        }
    }
    assert_eq!(
        crate::drift::hash_objects(&desired),
        copying::hash_objects(&desired)
    );
}

/// A stamped object is recognized as such (the applier then borrows it instead of stamping a copy);
/// anything that stamping would change is not.
#[test]
fn stamped_objects_are_recognized_without_a_copy() {
    use crate::apply::is_stamped;
    let policy = policy();
    let stamped_ok = |o: &kube::api::DynamicObject| is_stamped(o, &policy, HASH);
    for text in [
        DEPLOYMENT,
        "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: ns}\nstringData: {c: world}\n",
        "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: sa, namespace: ns}\n",
    ] {
        let o = obj(text);
        assert!(!stamped_ok(&o), "{text}");
        let s = stamp(&o, &policy, HASH);
        assert!(stamped_ok(&s), "{text}");
    }
    let s = stamp(&obj(DEPLOYMENT), &policy, HASH);
    type Change = fn(&mut serde_json::Value);
    let tampered: [(&str, Change); 7] = [
        ("status", |v| v["status"] = json!({"replicas": 1})),
        ("a null", |v| v["spec"]["paused"] = json!(null)),
        ("a nested null", |v| {
            v["spec"]["template"]["x"] = json!({"y": null})
        }),
        ("content", |v| v["spec"]["replicas"] = json!(2)),
        ("server metadata", |v| {
            v["metadata"]["resourceVersion"] = json!("1")
        }),
        ("no label", |v| {
            v["metadata"]["labels"] = json!({"app": "manager"})
        }),
        ("empty namespace", |v| {
            v["metadata"]["namespace"] = json!("")
        }),
    ];
    for (what, change) in tampered {
        let mut v = serde_json::to_value(&s).unwrap();
        change(&mut v);
        let changed: kube::api::DynamicObject = serde_json::from_value(v).unwrap();
        assert!(!stamped_ok(&changed), "{what}");
    }
    let mut secret = serde_json::to_value(stamp(
        &obj("apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: ns}\ndata: {a: eA==}\n"),
        &policy,
        HASH,
    ))
    .unwrap();
    secret["stringData"] = json!({"b": "x"});
    assert!(!stamped_ok(&serde_json::from_value(secret).unwrap()));
}
