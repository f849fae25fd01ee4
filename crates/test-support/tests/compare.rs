//! The semantic comparison helper.

use capi_manifests::ObjectKey;
use capi_manifests::{Provider, ProviderType, TransportConfigMap};
use serde_json::{Value, json};
use test_support::compare::{diff_objects, diff_transport, normalize};

fn deploy(image: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "n"},
        "spec": {"template": {"spec": {"containers": [{"name": "m", "image": image}]}}}})
}

#[test]
fn reports_missing_extra_and_field_paths() {
    let svc =
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "n"}});
    let cr = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r"}});
    let expected = [deploy("a:1"), svc.clone()];
    let actual = [deploy("b:2"), cr];
    let d = diff_objects(&expected, &actual);
    assert_eq!(
        d.missing,
        [ObjectKey::from_api_version("v1", "Service", Some("n"), "s")]
    );
    assert_eq!(
        d.extra,
        [ObjectKey::from_api_version(
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            None,
            "r"
        )]
    );
    assert_eq!(d.changed.len(), 1);
    let (id, fields) = &d.changed[0];
    assert_eq!(id.to_string(), "Deployment n/d");
    assert_eq!(fields.len(), 1);
    assert_eq!(fields[0].path, "spec.template.spec.containers[0].image");
    assert_eq!(fields[0].expected, Some(json!("a:1")));
    assert_eq!(fields[0].actual, Some(json!("b:2")));
    let text = d.to_string();
    assert!(text.contains("missing: Service n/s"), "{text}");
    assert!(text.contains("extra:   ClusterRole r"), "{text}");
    assert!(
        text.contains(
            "spec.template.spec.containers[0].image\n    expected: \"a:1\"\n    actual:   \"b:2\""
        ),
        "{text}"
    );
}

#[test]
fn keys_with_dots_are_bracketed_and_list_lengths_reported() {
    let mut a = deploy("x");
    let mut b = deploy("x");
    a["metadata"]["annotations"] = json!({"service.beta.openshift.io/inject-cabundle": "true"});
    b["metadata"]["annotations"] = json!({"service.beta.openshift.io/inject-cabundle": "false"});
    b["spec"]["template"]["spec"]["containers"] =
        json!([{"name": "m", "image": "x"}, {"name": "extra"}]);
    let d = diff_objects([&a], [&b]);
    let paths: Vec<&str> = d.changed[0].1.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            r#"metadata.annotations["service.beta.openshift.io/inject-cabundle"]"#,
            "spec.template.spec.containers[1]"
        ]
    );
    assert_eq!(d.changed[0].1[1].expected, None);
}

#[test]
fn normalization_rules() {
    // null = absent
    let mut a = deploy("x");
    a["metadata"]["creationTimestamp"] = Value::Null;
    assert!(diff_objects([&a], [&deploy("x")]).is_empty());
    // Deployment zero structs
    a["status"] = json!({});
    a["spec"]["strategy"] = json!({});
    assert!(diff_objects([&a], [&deploy("x")]).is_empty());
    // but a non-empty strategy, and empty maps elsewhere, count
    a["spec"]["strategy"] = json!({"type": "Recreate"});
    assert!(!diff_objects([&a], [&deploy("x")]).is_empty());
    let mut v = deploy("x");
    v["spec"]["template"]["spec"]["volumes"] = json!([{"name": "t", "emptyDir": {}}]);
    assert_eq!(normalize(&v), v);
    let mut w = v.clone();
    w["spec"]["template"]["spec"]["volumes"][0]
        .as_object_mut()
        .unwrap()
        .remove("emptyDir");
    assert!(!diff_objects([&v], [&w]).is_empty());
    // CRD status ignored entirely
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "x"}, "spec": {}});
    let mut with_status = crd.clone();
    with_status["status"] =
        json!({"acceptedNames": {"kind": "", "plural": ""}, "conditions": null});
    assert!(diff_objects([&with_status], [&crd]).is_empty());
}

#[test]
fn identity_problems_are_reported() {
    let nameless = json!({"apiVersion": "v1", "kind": "Service", "metadata": {}});
    let d = diff_objects([&nameless], [&deploy("x"), &deploy("x")]);
    assert_eq!(d.problems.len(), 2, "{d}");
    assert!(!d.is_empty());
}

#[test]
fn transport_diff_covers_outer_metadata_and_objects() {
    let p = Provider::new("aws", ProviderType::Infrastructure, "v1.0.0").unwrap();
    let md =
        "apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3\nkind: Metadata\nreleaseSeries: []\n";
    let components = capi_manifests::yaml::to_multi_yaml([&deploy("a")]).unwrap();
    let t = TransportConfigMap {
        provider: p.clone(),
        metadata: md.into(),
        components,
    };
    let plain = t.encode().unwrap();
    assert!(diff_transport(&plain, &plain).unwrap().is_empty());

    // Same content, compressed: equal.
    let mut zstd = plain.clone();
    let text = zstd["data"]["components"].as_str().unwrap().to_owned();
    zstd["data"].as_object_mut().unwrap().remove("components");
    use base64::Engine as _;
    zstd["binaryData"] = json!({"components-zstd": base64::engine::general_purpose::STANDARD.encode(capi_manifests::transport::compress_zstd(text.as_bytes()).unwrap())});
    assert!(diff_transport(&plain, &zstd).unwrap().is_empty());

    let other = TransportConfigMap {
        provider: Provider::new("aws", ProviderType::Infrastructure, "v1.0.1").unwrap(),
        metadata: md.replace("[]", "[{major: 1, minor: 0, contract: v1beta1}]"),
        components: capi_manifests::yaml::to_multi_yaml([&deploy("b")]).unwrap(),
    };
    let d = diff_transport(&plain, &other.encode().unwrap()).unwrap();
    assert_eq!(d.outer.len(), 1);
    assert_eq!(
        d.outer[0].path,
        r#"metadata.labels["provider.cluster.x-k8s.io/version"]"#
    );
    assert_eq!(d.metadata.len(), 1);
    assert_eq!(d.metadata[0].path, "releaseSeries[0]");
    assert_eq!(d.objects.changed.len(), 1);
    let text = d.to_string();
    assert!(text.contains("ConfigMap: metadata.labels"), "{text}");
    assert!(
        text.contains("components:\nchanged: Deployment n/d"),
        "{text}"
    );
}
