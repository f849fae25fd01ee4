use super::*;

const NS: &str = "openshift-cluster-api";

/// A small bundle that follows every rule, in the shape of the real ones.
const GOOD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.infrastructure.cluster.x-k8s.io}
spec:
  group: infrastructure.cluster.x-k8s.io
  scope: Namespaced
  names: {kind: Widget, plural: widgets}
  conversion:
    strategy: Webhook
    webhook:
      clientConfig: {service: {name: w-webhook-service, namespace: openshift-cluster-api, path: /convert}}
      conversionReviewVersions: [v1]
  versions: [{name: v1beta1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: w-manager, namespace: openshift-cluster-api}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: w-manager-role
  labels: {cluster.x-k8s.io/aggregate-to-manager: "true"}
rules:
- apiGroups: [infrastructure.cluster.x-k8s.io, controlplane.cluster.x-k8s.io]
  resources: ["*"]
  verbs: [get, list, watch, create, update, patch, delete]
- apiGroups: [""]
  resources: [secrets, events]
  verbs: [get, list, watch, create, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: w-aggregated-role}
aggregationRule:
  clusterRoleSelectors:
  - matchLabels: {w.infrastructure.cluster.x-k8s.io/aggregate-to-manager: "true"}
rules: []
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: w-manager-rolebinding}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: w-manager-role}
subjects: [{kind: ServiceAccount, name: w-manager, namespace: openshift-cluster-api}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: w-leader-election, namespace: openshift-cluster-api}
rules: [{apiGroups: [coordination.k8s.io], resources: [leases], verbs: [get, create, update]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: w-leader-election, namespace: openshift-cluster-api}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: w-leader-election}
subjects: [{kind: ServiceAccount, name: w-manager, namespace: openshift-cluster-api}]
---
apiVersion: v1
kind: Service
metadata: {name: w-webhook-service, namespace: openshift-cluster-api}
spec: {ports: [{port: 443}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: w-controller-manager, namespace: openshift-cluster-api}
spec:
  selector: {matchLabels: {app: w}}
  template:
    metadata: {labels: {app: w}}
    spec:
      serviceAccountName: w-manager
      containers: [{name: manager, image: x, securityContext: {privileged: false}}]
      volumes: [{name: cert, secret: {secretName: w-cert}}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: w-validating}
webhooks:
- name: validation.widget.infrastructure.cluster.x-k8s.io
  clientConfig: {service: {name: w-webhook-service, namespace: openshift-cluster-api, path: /validate}}
  rules: [{apiGroups: [infrastructure.cluster.x-k8s.io], apiVersions: [v1beta1], operations: [CREATE], resources: [widgets]}]
  sideEffects: None
  admissionReviewVersions: [v1]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: protect-widget}
spec:
  matchConstraints: {resourceRules: [{apiGroups: [infrastructure.cluster.x-k8s.io], apiVersions: ["*"], operations: [DELETE], resources: [widgets]}]}
  validations: [{expression: "false"}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: protect-widget}
spec: {policyName: protect-widget, validationActions: [Deny]}
"#;

fn parse(yaml: &str) -> Vec<(Origin, DynamicObject)> {
    capi_manifests::yaml::parse_documents("test", yaml)
        .unwrap()
        .into_iter()
        .enumerate()
        .map(|(i, d)| {
            (
                Origin {
                    source: format!("ConfigMap {NS}/w"),
                    document: i,
                },
                serde_json::from_value(d.value).unwrap(),
            )
        })
        .collect()
}

fn config() -> PolicyConfig {
    PolicyConfig::new(
        NS,
        Protected::installer(NS, "capi-installer-inventory", "capi-installer-leader"),
    )
}

fn violations_with(yaml: &str, config: &PolicyConfig) -> Vec<Violation> {
    let objects = parse(yaml);
    let bundle: Vec<BundleObject<'_>> = objects
        .iter()
        .map(|(origin, object)| BundleObject { origin, object })
        .collect();
    match check(&bundle, config) {
        Ok(()) => vec![],
        Err(Violations(v)) => {
            assert!(!v.is_empty(), "Violations is never empty");
            v
        }
    }
}

/// (document index, rule) of every violation.
fn found(yaml: &str) -> Vec<(usize, Rule)> {
    violations_with(yaml, &config())
        .into_iter()
        .map(|v| (v.origin.document, v.rule))
        .collect()
}

#[test]
fn a_bundle_shaped_like_the_real_ones_passes() {
    assert_eq!(found(GOOD), vec![]);
}

/// The good bundle with `doc` appended: every case adds one object and expects violations of it only.
fn with(doc: &str) -> String {
    format!("{GOOD}---\n{doc}")
}

const LAST: usize = 12;

#[test]
fn each_hostile_object_is_one_precise_violation() {
    use Rule::*;
    let cases: &[(&str, &str, &[Rule])] = &[
        (
            "cluster-admin binding",
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: own-the-cluster}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\nsubjects: [{kind: ServiceAccount, name: w-manager, namespace: openshift-cluster-api}]\n",
            &[RbacRoleRef],
        ),
        (
            "* on *",
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: everything}\nrules: [{apiGroups: ['*'], resources: ['*'], verbs: ['*']}]\n",
            &[RbacWildcard, RbacWildcard],
        ),
        (
            "* resources in the core group",
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: all-core}\nrules: [{apiGroups: [''], resources: ['*'], verbs: [get]}]\n",
            &[RbacWildcard],
        ),
        (
            "* nonResourceURLs",
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: urls}\nrules: [{nonResourceURLs: ['*'], verbs: [get]}]\n",
            &[RbacWildcard],
        ),
        (
            "escalate, bind, impersonate",
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: escalating}\nrules: [{apiGroups: [rbac.authorization.k8s.io], resources: [clusterroles], verbs: [escalate, bind]}, {apiGroups: [''], resources: [users], verbs: [impersonate]}]\n",
            &[RbacVerb, RbacVerb],
        ),
        (
            "binding of a role defined nowhere in the bundle",
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: b, namespace: openshift-cluster-api}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: someone-elses}\nsubjects: [{kind: ServiceAccount, name: w-manager, namespace: openshift-cluster-api}]\n",
            &[RbacRoleRef],
        ),
        (
            "a user, a system group and a ServiceAccount of another namespace",
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: b}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: w-manager-role}\nsubjects: [{kind: User, name: alice}, {kind: Group, name: 'system:authenticated'}, {kind: ServiceAccount, name: x, namespace: kube-system}]\n",
            &[RbacSubject, RbacSubject, RbacSubject],
        ),
        (
            "the installer's own ServiceAccount as a subject",
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: b}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: w-manager-role}\nsubjects: [{kind: ServiceAccount, name: capi-installer, namespace: openshift-cluster-api}]\n",
            &[RbacSubject],
        ),
        (
            "aggregation into every admin role",
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: agg, labels: {rbac.authorization.k8s.io/aggregate-to-admin: 'true'}}\nrules: [{apiGroups: [infrastructure.cluster.x-k8s.io], resources: [widgets], verbs: [get]}]\n",
            &[RbacAggregation],
        ),
        (
            "an aggregated role that collects the admin roles",
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: collect}\naggregationRule: {clusterRoleSelectors: [{matchLabels: {rbac.authorization.k8s.io/aggregate-to-admin: 'true'}}]}\n",
            &[RbacAggregation],
        ),
        (
            "an aggregated role whose selector matches every ClusterRole",
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: collect}\naggregationRule: {clusterRoleSelectors: [{matchExpressions: [{key: cluster.x-k8s.io/x, operator: DoesNotExist}]}]}\n",
            &[RbacAggregation],
        ),
        (
            "a webhook with a url",
            "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata: {name: m}\nwebhooks: [{name: m.infrastructure.cluster.x-k8s.io, clientConfig: {url: 'https://evil.example/mutate'}, rules: [{apiGroups: [infrastructure.cluster.x-k8s.io], apiVersions: ['*'], operations: [CREATE], resources: [widgets]}], sideEffects: None, admissionReviewVersions: [v1]}]\n",
            &[WebhookClient],
        ),
        (
            "a webhook served from another namespace, on pods",
            "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata: {name: m}\nwebhooks: [{name: m.example.com, clientConfig: {service: {name: s, namespace: default}}, rules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}], sideEffects: None, admissionReviewVersions: [v1]}]\n",
            &[WebhookClient, AdmissionScope],
        ),
        (
            "a CRD conversion webhook served from another namespace",
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: gadgets.infrastructure.cluster.x-k8s.io}\nspec: {group: infrastructure.cluster.x-k8s.io, scope: Namespaced, names: {kind: Gadget, plural: gadgets}, conversion: {strategy: Webhook, webhook: {clientConfig: {service: {name: s, namespace: default}}, conversionReviewVersions: [v1]}}, versions: [{name: v1, served: true, storage: true}]}\n",
            &[WebhookClient],
        ),
        (
            "an admission policy on every resource",
            "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: deny-all}\nspec: {matchConstraints: {resourceRules: [{apiGroups: ['*'], apiVersions: ['*'], operations: ['*'], resources: ['*']}]}, validations: [{expression: 'false'}]}\n",
            &[AdmissionScope],
        ),
        (
            "a binding of a policy the bundle does not ship",
            "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata: {name: b}\nspec: {policyName: someone-elses, validationActions: [Deny]}\n",
            &[AdmissionScope],
        ),
        (
            "a payload CRD no provider ships",
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: featuregates.config.openshift.io}\nspec: {group: config.openshift.io, scope: Cluster, names: {kind: FeatureGate, plural: featuregates}, versions: [{name: v1, served: true, storage: true}]}\n",
            &[CrdGroup],
        ),
        (
            "a group that only looks like Cluster API",
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: xs.evilcluster.x-k8s.io}\nspec: {group: evilcluster.x-k8s.io, scope: Cluster, names: {kind: X, plural: xs}, versions: [{name: v1, served: true, storage: true}]}\n",
            &[CrdGroup],
        ),
        (
            "a kind outside the allow-list",
            "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: d, namespace: openshift-cluster-api}\nspec: {}\n",
            &[Kind],
        ),
        (
            "a Secret",
            "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: openshift-cluster-api}\n",
            &[Kind],
        ),
        (
            "the installer's own Deployment",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: capi-installer, namespace: openshift-cluster-api}\nspec: {template: {spec: {serviceAccountName: w-manager, containers: [{name: c, image: x}]}}}\n",
            &[Protected],
        ),
        (
            "the installer's images ConfigMap",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: capi-installer-images, namespace: openshift-cluster-api}\ndata: {images.json: '{}'}\n",
            &[Protected],
        ),
        (
            "the installer's inventory",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: capi-installer-inventory, namespace: openshift-cluster-api}\n",
            &[Protected],
        ),
        (
            "a role of the controllers pod",
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: capi-controllers-extra}\nrules: []\n",
            &[Protected],
        ),
        (
            "a transport ConfigMap",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other, namespace: openshift-cluster-api, labels: {provider.cluster.x-k8s.io/name: aws}}\n",
            &[Protected],
        ),
        (
            "a pod running as the installer",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: openshift-cluster-api}\nspec: {template: {spec: {serviceAccountName: capi-installer, containers: [{name: c, image: x}]}}}\n",
            &[WorkloadIdentity],
        ),
        (
            "a pod running as another component",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: openshift-cluster-api}\nspec: {template: {spec: {serviceAccountName: capi-manager, containers: [{name: c, image: x}]}}}\n",
            &[WorkloadIdentity],
        ),
        (
            "a pod with host access",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: openshift-cluster-api}\nspec: {template: {spec: {hostNetwork: true, hostPID: true, containers: [{name: c, image: x, securityContext: {privileged: true}}], initContainers: [{name: i, image: x, securityContext: {privileged: true}}], volumes: [{name: root, hostPath: {path: /}}]}}}\n",
            &[
                WorkloadHostAccess,
                WorkloadHostAccess,
                WorkloadHostAccess,
                WorkloadHostAccess,
                WorkloadHostAccess,
            ],
        ),
    ];
    for (what, doc, rules) in cases {
        let got = found(&with(doc));
        let want: Vec<(usize, Rule)> = rules.iter().map(|r| (LAST, *r)).collect();
        assert_eq!(got, want, "{what}");
    }
}

#[test]
fn a_violation_names_configmap_document_object_and_rule() {
    let v = violations_with(
        &with(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: own-the-cluster}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\nsubjects: [{kind: ServiceAccount, name: w-manager, namespace: openshift-cluster-api}]\n",
        ),
        &config(),
    );
    assert_eq!(v.len(), 1);
    assert_eq!(
        v[0].to_string(),
        "ConfigMap openshift-cluster-api/w, document 12 (ClusterRoleBinding own-the-cluster): rule rbac-bundle-roles-only: roleRef ClusterRole cluster-admin is not defined in this bundle (nor allowed explicitly): a provider binds only the roles it ships"
    );
    let all = Violations(v).to_string();
    assert!(
        all.starts_with("bundle policy: 1 violation(s): ConfigMap"),
        "{all}"
    );
}

#[test]
fn the_extra_groups_and_roles_are_explicit() {
    let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: things.example.com}\nspec: {group: example.com, scope: Cluster, names: {kind: Thing, plural: things}, versions: [{name: v1, served: true, storage: true}]}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: delegator}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: 'system:auth-delegator'}\nsubjects: [{kind: ServiceAccount, name: w-manager, namespace: openshift-cluster-api}]\n";
    let rules: Vec<Rule> = violations_with(&with(crd), &config())
        .into_iter()
        .map(|v| v.rule)
        .collect();
    assert_eq!(rules, vec![Rule::CrdGroup, Rule::RbacRoleRef]);
    let mut allowing = config();
    allowing.extra_groups.insert("example.com".into());
    allowing
        .extra_roles
        .insert(("ClusterRole".into(), "system:auth-delegator".into()));
    assert_eq!(violations_with(&with(crd), &allowing), vec![]);
}

#[test]
fn a_role_of_the_same_name_in_another_namespace_does_not_count() {
    let doc = "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: b, namespace: openshift-cluster-api}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: w-leader-election}\nsubjects: [{kind: ServiceAccount, name: w-manager, namespace: openshift-cluster-api}]\n";
    // `w-leader-election` is a Role of the bundle, not a ClusterRole.
    assert_eq!(found(&with(doc)), vec![(LAST, Rule::RbacRoleRef)]);
}

#[test]
fn transport_configmaps_seen_at_run_time_are_protected_by_name() {
    let doc = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gcp, namespace: openshift-cluster-api}\ndata: {components: ''}\n";
    assert_eq!(found(&with(doc)), vec![]);
    let mut cfg = config();
    cfg.protected = cfg
        .protected
        .with(ObjectKey::new("", "v1", "ConfigMap", Some(NS), "gcp"));
    let rules: Vec<Rule> = violations_with(&with(doc), &cfg)
        .into_iter()
        .map(|v| v.rule)
        .collect();
    assert_eq!(rules, vec![Rule::Protected]);
}

#[test]
fn the_family_is_cluster_x_k8s_io_and_its_subdomains() {
    for g in [
        "cluster.x-k8s.io",
        "infrastructure.cluster.x-k8s.io",
        "vmware.infrastructure.cluster.x-k8s.io",
    ] {
        assert!(in_family(g), "{g}");
    }
    for g in [
        "",
        "x-k8s.io",
        "evilcluster.x-k8s.io",
        "cluster.x-k8s.io.evil.com",
        "config.openshift.io",
    ] {
        assert!(!in_family(g), "{g}");
    }
}

#[test]
fn the_release_manifests_are_protected() {
    let files = protected::release_manifest_files();
    assert!(
        files.contains(&"0000_30_capi-installer_04_deployment.yaml"),
        "{files:?}"
    );
    let keys = protected::release_manifests();
    let p = config().protected;
    for wanted in [
        ObjectKey::new("apps", "v1", "Deployment", Some(NS), "capi-installer"),
        ObjectKey::new("", "v1", "ServiceAccount", Some(NS), "capi-installer"),
        ObjectKey::new("", "v1", "ConfigMap", Some(NS), "capi-installer-images"),
        ObjectKey::new(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRole",
            None,
            "capi-installer",
        ),
        ObjectKey::new(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRoleBinding",
            None,
            "capi-installer",
        ),
        ObjectKey::new(
            "rbac.authorization.k8s.io",
            "v1",
            "Role",
            Some(NS),
            "capi-installer",
        ),
        ObjectKey::new(
            "rbac.authorization.k8s.io",
            "v1",
            "RoleBinding",
            Some(NS),
            "capi-installer",
        ),
    ] {
        assert!(keys.contains(&wanted), "{wanted} not in {keys:?}");
        assert!(p.reason(&wanted).is_some(), "{wanted}");
    }
    // Every object of the release manifests is protected, whatever its name.
    for key in &keys {
        assert!(p.reason(key).is_some(), "{key}");
    }
    for runtime in [
        ObjectKey::new("", "v1", "ConfigMap", Some(NS), "capi-installer-inventory"),
        ObjectKey::new(
            "coordination.k8s.io",
            "v1",
            "Lease",
            Some(NS),
            "capi-installer-leader",
        ),
        ObjectKey::new("apps", "v1", "Deployment", Some(NS), "capi-controllers"),
    ] {
        assert!(p.reason(&runtime).is_some(), "{runtime}");
    }
    assert_eq!(
        p.reason(&ObjectKey::new(
            "apps",
            "v1",
            "Deployment",
            Some(NS),
            "capa-controller-manager"
        )),
        None
    );
}

#[test]
fn every_rule_has_a_distinct_name() {
    let names: BTreeSet<&str> = Rule::ALL.iter().map(|r| r.name()).collect();
    assert_eq!(names.len(), Rule::ALL.len());
}

/// The rule table of `docs/maintainers/bundles.md` names exactly the rules the policy checks: the
/// names are what status messages show, and what a maintainer looks up.
#[test]
fn the_documented_rule_table_lists_exactly_the_rules() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/maintainers/bundles.md"
    ))
    .expect("docs/maintainers/bundles.md readable");
    let start = doc
        .find("## Bundle policy")
        .expect("docs/maintainers/bundles.md has the bundle policy");
    let documented: BTreeSet<&str> = doc[start..]
        .lines()
        .skip_while(|l| !l.starts_with("| rule"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| l.split('`').nth(1))
        .collect();
    let checked: BTreeSet<&str> = Rule::ALL.iter().map(|r| r.name()).collect();
    assert_eq!(documented, checked);
}
