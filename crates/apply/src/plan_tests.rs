use crate::key::ObjectKey;
use crate::plan::{Phase, PlanError, PlanInput, plan};
use crate::testutil::{obj, resolver};

fn doc(
    api_version: &str,
    kind: &str,
    namespace: Option<&str>,
    name: &str,
) -> kube::api::DynamicObject {
    let ns = namespace
        .map(|n| format!("\n  namespace: {n}"))
        .unwrap_or_default();
    obj(&format!(
        "apiVersion: {api_version}\nkind: {kind}\nmetadata:\n  name: {name}{ns}\n"
    ))
}

const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.io
spec:
  group: example.io
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  versions:
    - {name: v1alpha1, served: false, storage: false}
    - {name: v1, served: true, storage: true}
"#;

fn order(p: &crate::plan::Plan) -> Vec<(Phase, String)> {
    p.phases
        .iter()
        .flat_map(|ph| {
            ph.objects
                .iter()
                .map(move |o| (ph.phase, o.key.to_string()))
        })
        .collect()
}

#[test]
fn groups_into_phases_in_spec_order_with_deterministic_kind_order() {
    let input = vec![
        doc(
            "admissionregistration.k8s.io/v1",
            "ValidatingWebhookConfiguration",
            None,
            "vwc",
        ),
        doc("apps/v1", "Deployment", Some("ns1"), "manager"),
        doc("v1", "Service", Some("ns1"), "webhook"),
        doc("example.io/v1", "Widget", Some("ns1"), "w"),
        doc("policy/v1", "PodDisruptionBudget", Some("ns1"), "pdb"),
        doc("v1", "ConfigMap", Some("ns1"), "b"),
        doc("v1", "ConfigMap", Some("ns1"), "a"),
        doc("v1", "Secret", Some("ns1"), "s"),
        doc(
            "rbac.authorization.k8s.io/v1",
            "RoleBinding",
            Some("ns1"),
            "rb",
        ),
        doc("rbac.authorization.k8s.io/v1", "Role", Some("ns1"), "r"),
        doc("v1", "ServiceAccount", Some("ns1"), "sa"),
        doc(
            "rbac.authorization.k8s.io/v1",
            "ClusterRoleBinding",
            None,
            "crb",
        ),
        doc("rbac.authorization.k8s.io/v1", "ClusterRole", None, "cr"),
        doc("v1", "Namespace", None, "ns1"),
        doc(
            "admissionregistration.k8s.io/v1",
            "ValidatingAdmissionPolicyBinding",
            None,
            "vapb",
        ),
        doc(
            "admissionregistration.k8s.io/v1",
            "ValidatingAdmissionPolicy",
            None,
            "vap",
        ),
        doc("apps/v1", "DaemonSet", Some("ns1"), "agent"),
        obj(CRD),
    ];
    let p = plan(input, &resolver()).expect("valid plan");
    let want: Vec<(Phase, &str)> = vec![
        (
            Phase::CustomResourceDefinitions,
            "CustomResourceDefinition widgets.example.io",
        ),
        (Phase::Base, "Namespace ns1"),
        (Phase::Base, "ClusterRole cr"),
        (Phase::Base, "ClusterRoleBinding crb"),
        (Phase::Base, "ServiceAccount ns1/sa"),
        (Phase::Base, "Role ns1/r"),
        (Phase::Base, "RoleBinding ns1/rb"),
        (Phase::Base, "ConfigMap ns1/a"),
        (Phase::Base, "ConfigMap ns1/b"),
        (Phase::Base, "Secret ns1/s"),
        (Phase::Base, "Service ns1/webhook"),
        // Unlisted kinds: by group, then kind.
        (Phase::Base, "Widget ns1/w"),
        (Phase::Base, "PodDisruptionBudget ns1/pdb"),
        (Phase::Workloads, "Deployment ns1/manager"),
        (Phase::Workloads, "DaemonSet ns1/agent"),
        (Phase::Admission, "ValidatingAdmissionPolicy vap"),
        (Phase::Admission, "ValidatingAdmissionPolicyBinding vapb"),
        (Phase::Admission, "ValidatingWebhookConfiguration vwc"),
    ];
    let got = order(&p);
    let got: Vec<(Phase, &str)> = got.iter().map(|(p, s)| (*p, s.as_str())).collect();
    assert_eq!(got, want);
}

#[test]
fn order_does_not_depend_on_input_order() {
    let mut input = vec![
        doc("v1", "ConfigMap", Some("b"), "x"),
        doc("v1", "ConfigMap", Some("a"), "y"),
        doc("v1", "ConfigMap", Some("a"), "x"),
        doc("v1", "Namespace", None, "a"),
    ];
    let first = order(&plan(input.clone(), &resolver()).unwrap());
    input.reverse();
    let second = order(&plan(input, &resolver()).unwrap());
    assert_eq!(first, second);
    assert_eq!(first[1].1, "ConfigMap a/x");
}

#[test]
fn crd_in_the_plan_defines_its_served_versions_and_scope() {
    let p = plan(
        vec![obj(CRD), doc("example.io/v1", "Widget", Some("ns"), "w")],
        &resolver(),
    )
    .unwrap();
    let w = p.phase(Phase::Base).unwrap().objects.first().unwrap();
    assert_eq!(w.resource.plural, "widgets");
    assert!(w.namespaced);

    // v1alpha1 is not served: unknown.
    let err = plan(
        vec![
            obj(CRD),
            doc("example.io/v1alpha1", "Widget", Some("ns"), "w"),
        ],
        &resolver(),
    )
    .unwrap_err();
    assert_eq!(
        err.0,
        vec![PlanError::UnknownKind {
            key: ObjectKey::new("example.io", "v1alpha1", "Widget", Some("ns"), "w"),
            origin: None,
        }]
    );
}

#[test]
fn collects_every_error_with_its_origin() {
    let input = vec![
        PlanInput::new(doc("v1", "ConfigMap", Some("ns"), "dup"), "doc 0"),
        PlanInput::new(doc("v1", "ConfigMap", Some("ns"), "dup"), "doc 1"),
        PlanInput::new(doc("v1", "ConfigMap", None, "nons"), "doc 2"),
        PlanInput::new(doc("v1", "Namespace", Some("ns"), "ns"), "doc 3"),
        PlanInput::new(doc("nope.io/v1", "Gadget", None, "g"), "doc 4"),
        PlanInput::new(
            obj("apiVersion: v1\nkind: ConfigMap\nmetadata: {namespace: ns}\n"),
            "doc 5",
        ),
        PlanInput::new(obj("metadata: {name: x}\n"), "doc 6"),
        PlanInput::new(doc("v1", "Secret", Some("ns"), "fine"), "doc 7"),
    ];
    let err = plan(input, &resolver()).unwrap_err();
    let messages: Vec<String> = err.0.iter().map(ToString::to_string).collect();
    assert_eq!(
        messages,
        vec![
            "ConfigMap ns/dup (doc 1): appears twice (first (doc 0))",
            "ConfigMap nons (doc 2): namespaced kind without metadata.namespace",
            "Namespace ns/ns (doc 3): cluster-scoped kind with metadata.namespace",
            "Gadget g (doc 4): unknown kind nope.io/v1/Gadget (neither served by the API server nor defined by a CRD in the plan)",
            "ConfigMap without metadata.name (doc 5)",
            "object Some(\"x\") (doc 6): missing apiVersion or kind",
        ]
    );
    assert!(err.to_string().starts_with("6 invalid object(s): "));
}

#[test]
fn same_object_in_two_versions_is_a_duplicate() {
    let mut r = resolver();
    r.insert_crd(&obj(&CRD.replace("served: false", "served: true")))
        .unwrap();
    let err = plan(
        vec![
            doc("example.io/v1", "Widget", Some("ns"), "w"),
            doc("example.io/v1alpha1", "Widget", Some("ns"), "w"),
        ],
        &r,
    )
    .unwrap_err();
    assert!(matches!(&err.0[..], [PlanError::Duplicate { key, .. }] if key.name == "w"));
}

#[test]
fn invalid_crd_is_reported() {
    let bad = obj(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: x.io}\nspec: {group: x.io, scope: Sideways, names: {kind: X, plural: xs}, versions: []}\n",
    );
    let err = plan(vec![bad], &resolver()).unwrap_err();
    assert_eq!(
        err.0[0].to_string(),
        "CustomResourceDefinition x.io: invalid CustomResourceDefinition: spec.scope must be Namespaced or Cluster, got Some(\"Sideways\")"
    );
}

#[test]
fn empty_input_is_an_empty_plan() {
    let p = plan(Vec::<kube::api::DynamicObject>::new(), &resolver()).unwrap();
    assert!(p.is_empty());
    assert!(p.phases.is_empty());
}

#[test]
fn a_crd_in_the_plan_overrides_what_discovery_says_about_its_kind() {
    // The cluster still serves Widget v1alpha1 (old CRD); the new CRD in the plan serves only v1.
    let mut r = resolver();
    r.insert_crd(&obj(&CRD.replace("served: false", "served: true")))
        .unwrap();
    let err = plan(
        vec![
            obj(CRD),
            doc("example.io/v1alpha1", "Widget", Some("ns"), "w"),
        ],
        &r,
    )
    .unwrap_err();
    assert!(
        matches!(&err.0[..], [PlanError::UnknownKind { key, .. }] if key.version == "v1alpha1")
    );
    // Without the CRD in the plan, discovery decides.
    assert!(
        plan(
            vec![doc("example.io/v1alpha1", "Widget", Some("ns"), "w")],
            &r
        )
        .is_ok()
    );
}

#[test]
fn objects_of_kinds_only_the_plan_defines_are_split_off_for_a_later_dry_run() {
    let p = plan(
        vec![
            obj(CRD),
            doc("example.io/v1", "Widget", Some("ns"), "w"),
            doc("v1", "ConfigMap", Some("ns"), "c"),
        ],
        &resolver(),
    )
    .unwrap();
    let names = |objects: Vec<&crate::plan::PlannedObject>| -> Vec<String> {
        objects.iter().map(|o| o.key.to_string()).collect()
    };
    let (now, later) = p.split_by_served(&resolver());
    assert_eq!(
        names(now),
        vec![
            "CustomResourceDefinition widgets.example.io",
            "ConfigMap ns/c"
        ]
    );
    assert_eq!(names(later), vec!["Widget ns/w"]);

    // Once the API server serves the kind, everything can be dry-run at once.
    let mut served = resolver();
    served.insert_crd(&obj(CRD)).unwrap();
    let (now, later) = p.split_by_served(&served);
    assert_eq!(now.len(), 3);
    assert!(later.is_empty());
}
