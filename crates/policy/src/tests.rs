use super::*;

const NS: &str = capi_manifests::TARGET_NAMESPACE;
const OWN: &str = capi_manifests::INSTALLER_NAMESPACE;

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
  labels: {w.infrastructure.cluster.x-k8s.io/aggregate-to-manager: "true"}
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
metadata:
  name: w-webhook-service
  namespace: openshift-cluster-api
  annotations: {service.beta.openshift.io/serving-cert-secret-name: w-cert}
spec: {ports: [{port: 443}], selector: {cluster.x-k8s.io/provider: infrastructure-w}}
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
  paramKind: {apiVersion: config.openshift.io/v1, kind: Infrastructure}
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

/// A small ceiling in the shape of the release's: what GOOD grants, and a little more to test against.
const CEILING: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: c, labels: {capi-installer.openshift.io/provider-ceiling: cluster}}
rules:
- apiGroups: [infrastructure.cluster.x-k8s.io, controlplane.cluster.x-k8s.io]
  resources: ["*"]
  verbs: [get, list, watch, create, update, patch, delete]
- apiGroups: [""]
  resources: [secrets, events]
  verbs: [get, list, watch, create, patch]
- apiGroups: [apiextensions.k8s.io]
  resources: [customresourcedefinitions]
  resourceNames: [widgets.infrastructure.cluster.x-k8s.io, gadgets.infrastructure.cluster.x-k8s.io]
  verbs: [patch]
- apiGroups: [rbac.authorization.k8s.io]
  resources: [clusterroles]
  resourceNames: [w-aggregated-role]
  verbs: [escalate]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: n, labels: {capi-installer.openshift.io/provider-ceiling: namespaced}}
rules:
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [get, create, update, delete]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: not-a-ceiling}
rules: [{apiGroups: [""], resources: [pods], verbs: [create]}]
"#;

fn test_ceiling() -> Ceiling {
    let roles: Vec<Value> = capi_manifests::yaml::parse_documents("ceiling", CEILING)
        .unwrap()
        .into_iter()
        .map(|d| d.value)
        .collect();
    Ceiling::from_roles(&roles)
}

fn config() -> PolicyConfig {
    let mut c = PolicyConfig::new(
        NS,
        Protected::installer(NS, "capi-installer-inventory", "capi-installer-leader"),
    );
    c.ceiling = test_ceiling();
    c.fields = test_fields();
    c
}

/// A field bound in the shape of the release's: what GOOD and the ceiling's roles have.
fn test_fields() -> FieldBound {
    let objects: Vec<Value> = [GOOD, CEILING]
        .iter()
        .flat_map(|text| capi_manifests::yaml::parse_documents("fields", text).unwrap())
        .map(|d| d.value)
        .collect();
    FieldBound::of_objects(&objects)
}

/// The one image of the test's release payload.
const PAYLOAD_IMAGE: &str = "x";

fn violations_with(yaml: &str, config: &PolicyConfig) -> Vec<Violation> {
    let objects = parse(yaml);
    let bundle: Vec<BundleObject<'_>> = objects
        .iter()
        .map(|(origin, object)| BundleObject { origin, object })
        .collect();
    match check(
        &bundle,
        config,
        &BTreeSet::from([PAYLOAD_IMAGE]),
        &Among::alone("infrastructure-w"),
    ) {
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
            &[RbacAggregation, RbacCeiling],
        ),
        (
            "an aggregated role whose selector matches every ClusterRole",
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: collect}\naggregationRule: {clusterRoleSelectors: [{matchExpressions: [{key: cluster.x-k8s.io/x, operator: DoesNotExist}]}]}\n",
            &[RbacAggregation, RbacCeiling],
        ),
        (
            "a webhook with a url",
            "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata: {name: m}\nwebhooks: [{name: m.infrastructure.cluster.x-k8s.io, clientConfig: {url: 'https://evil.example/mutate'}, rules: [{apiGroups: [infrastructure.cluster.x-k8s.io], apiVersions: ['*'], operations: [CREATE], resources: [widgets]}], sideEffects: None, admissionReviewVersions: [v1]}]\n",
            &[WebhookClient],
        ),
        (
            "a webhook served from another namespace, on pods",
            "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata: {name: m}\nwebhooks: [{name: m.example.com, clientConfig: {service: {name: s, namespace: default}}, rules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}], sideEffects: None, admissionReviewVersions: [v1]}]\n",
            // Outside the family, and no resource of its own CRDs.
            &[WebhookClient, AdmissionScope, ProvidersApart],
        ),
        (
            "a CRD conversion webhook served from another namespace",
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: gadgets.infrastructure.cluster.x-k8s.io}\nspec: {group: infrastructure.cluster.x-k8s.io, scope: Namespaced, names: {kind: Gadget, plural: gadgets}, conversion: {strategy: Webhook, webhook: {clientConfig: {service: {name: s, namespace: default}}, conversionReviewVersions: [v1]}}, versions: [{name: v1, served: true, storage: true}]}\n",
            &[WebhookClient],
        ),
        (
            "an admission policy on every resource",
            "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: deny-all}\nspec: {matchConstraints: {resourceRules: [{apiGroups: ['*'], apiVersions: ['*'], operations: ['*'], resources: ['*']}]}, validations: [{expression: 'false'}]}\n",
            &[AdmissionScope, ProvidersApart],
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
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: openshift-cluster-api}\nspec: {template: {spec: {hostNetwork: true, hostPID: true, containers: [{name: c, image: x, securityContext: {privileged: true}, ports: [{containerPort: 80, hostPort: 80}]}], initContainers: [{name: i, image: x, securityContext: {privileged: true}}], volumes: [{name: root, hostPath: {path: /}}]}}}\n",
            &[
                WorkloadHostAccess,
                WorkloadHostAccess,
                WorkloadHostAccess,
                WorkloadHostAccess,
                WorkloadPrivilege,
                WorkloadPrivilege,
            ],
        ),
        (
            "root with SYS_ADMIN and privilege escalation",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: openshift-cluster-api}\nspec: {template: {spec: {securityContext: {runAsUser: 0}, containers: [{name: c, image: x, securityContext: {runAsUser: 0, allowPrivilegeEscalation: true, capabilities: {add: [SYS_ADMIN]}}}]}}}\n",
            &[
                WorkloadPrivilege,
                WorkloadPrivilege,
                WorkloadPrivilege,
                WorkloadPrivilege,
            ],
        ),
        (
            "an image from outside the release payload, in a container and an init container",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: openshift-cluster-api}\nspec: {template: {spec: {containers: [{name: c, image: 'docker.io/library/busybox:latest'}], initContainers: [{name: i, image: 'quay.io/evil/x@sha256:0'}]}}}\n",
            &[WorkloadImage, WorkloadImage],
        ),
        (
            "a persistent volume and a CSI volume",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: openshift-cluster-api}\nspec: {template: {spec: {containers: [{name: c, image: x}], volumes: [{name: data, persistentVolumeClaim: {claimName: c}}, {name: csi, csi: {driver: d}}, {name: ok, emptyDir: {}}]}}}\n",
            &[WorkloadVolumes, WorkloadVolumes],
        ),
        (
            "a Service with externalIPs",
            "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: openshift-cluster-api}\nspec: {ports: [{port: 443}], externalIPs: [10.0.0.1]}\n",
            &[ServiceType],
        ),
        (
            "a NodePort Service",
            "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: openshift-cluster-api}\nspec: {type: NodePort, ports: [{port: 443}]}\n",
            &[ServiceType],
        ),
        (
            "a LoadBalancer Service",
            "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: openshift-cluster-api}\nspec: {type: LoadBalancer, ports: [{port: 443}]}\n",
            &[ServiceType],
        ),
        (
            "an ExternalName Service",
            "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: openshift-cluster-api}\nspec: {type: ExternalName, externalName: evil.example.com}\n",
            &[ServiceType, ServiceType],
        ),
        (
            "a webhook through a Service the bundle does not ship",
            "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: v}\nwebhooks: [{name: v.infrastructure.cluster.x-k8s.io, clientConfig: {service: {name: someone-elses, namespace: openshift-cluster-api}}, rules: [{apiGroups: [infrastructure.cluster.x-k8s.io], apiVersions: ['*'], operations: [CREATE], resources: [widgets]}], sideEffects: None, admissionReviewVersions: [v1]}]\n",
            &[WebhookClient],
        ),
        (
            "an admission policy whose parameters are Secrets",
            "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: leak}\nspec: {paramKind: {apiVersion: v1, kind: Secret}, matchConstraints: {resourceRules: [{apiGroups: [infrastructure.cluster.x-k8s.io], apiVersions: ['*'], operations: [CREATE], resources: [widgets]}]}, validations: [{expression: 'false', messageExpression: 'string(params.data)'}]}\n",
            &[AdmissionScope],
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
        all.starts_with("bundle policy: 1 violation(s):\nConfigMap"),
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
    // No real bundle has a ConfigMap: the field bound is extended by one, as an administrator would.
    let mut open = config();
    let parsed: Vec<Value> = capi_manifests::yaml::parse_documents("doc", doc)
        .unwrap()
        .into_iter()
        .map(|d| d.value)
        .collect();
    open.fields = open.fields.with(&FieldBound::of_objects(&parsed));
    assert_eq!(violations_with(&with(doc), &open), vec![]);
    let mut cfg = open;
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
        files.contains(&"0000_30_capi-installer_04_deployer.yaml"),
        "{files:?}"
    );
    let keys = protected::release_manifests();
    let p = config().protected;
    for wanted in [
        ObjectKey::new(
            "apps",
            "v1",
            "Deployment",
            Some(OWN),
            "capi-installer-deployer",
        ),
        ObjectKey::new(
            "",
            "v1",
            "ServiceAccount",
            Some(OWN),
            "capi-installer-deployer",
        ),
        ObjectKey::new("", "v1", "ServiceAccount", Some(OWN), "capi-installer"),
        ObjectKey::new("", "v1", "ConfigMap", Some(OWN), "capi-installer-images"),
        // Removed by this release from the providers' namespace, still the installer's.
        ObjectKey::new("apps", "v1", "Deployment", Some(NS), "capi-installer"),
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
    // The installer's own Deployment is no release manifest (the deployer applies it), and still
    // protected as the installer's, not only by its name.
    let installer = ObjectKey::new("apps", "v1", "Deployment", Some(NS), "capi-installer");
    assert!(!keys.contains(&ObjectKey::new(
        "apps",
        "v1",
        "Deployment",
        Some(OWN),
        "capi-installer"
    )));
    assert!(p.keys().any(|k| *k == installer), "{installer}");
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

/// A ClusterRole (or, with `kind: Role`, a Role in the namespace) with `rules`.
fn role(kind: &str, rules: &str) -> String {
    let namespace = if kind == "Role" {
        ", namespace: openshift-cluster-api"
    } else {
        ""
    };
    format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: {kind}\nmetadata: {{name: r{namespace}}}\nrules: {rules}\n"
    )
}

/// The details of the ceiling violations of a bundle with `doc` appended (nothing else may be found).
fn ceiling_violations(doc: &str) -> Vec<String> {
    violations_with(&with(doc), &config())
        .into_iter()
        .map(|v| {
            assert_eq!(
                (v.origin.document, v.rule),
                (LAST, Rule::RbacCeiling),
                "{v}"
            );
            v.detail
        })
        .collect()
}

#[test]
fn every_forbidden_triple_family_is_outside_the_ceiling() {
    let cases: &[(&str, &str, &str, &[&str])] = &[
        (
            "a token for any ServiceAccount",
            "ClusterRole",
            "[{apiGroups: [''], resources: [serviceaccounts/token], verbs: [create]}]",
            &["(\"\", serviceaccounts/token, create) cluster-wide"],
        ),
        (
            "the kubelet API of every node",
            "ClusterRole",
            "[{apiGroups: [''], resources: [nodes/proxy], verbs: [get, create]}]",
            &[
                "(\"\", nodes/proxy, get) cluster-wide",
                "(\"\", nodes/proxy, create) cluster-wide",
            ],
        ),
        (
            "client certificates for any identity",
            "ClusterRole",
            "[{apiGroups: [certificates.k8s.io], resources: [certificatesigningrequests/approval], verbs: [update]}, {apiGroups: [certificates.k8s.io], resources: [signers], resourceNames: [kubernetes.io/kube-apiserver-client], verbs: [approve]}]",
            &[
                "rules[0] grants (\"certificates.k8s.io\", certificatesigningrequests/approval, update)",
                "rules[1] grants (\"certificates.k8s.io\", signers, approve)",
            ],
        ),
        (
            "the privileged SecurityContextConstraints",
            "ClusterRole",
            "[{apiGroups: [security.openshift.io], resources: [securitycontextconstraints], resourceNames: [privileged], verbs: [use]}]",
            &["(\"security.openshift.io\", securitycontextconstraints, use)"],
        ),
        (
            "writing ClusterRoles, their bindings and mutating webhooks",
            "ClusterRole",
            "[{apiGroups: [rbac.authorization.k8s.io], resources: [clusterroles, clusterrolebindings], verbs: [create]}, {apiGroups: [admissionregistration.k8s.io], resources: [mutatingwebhookconfigurations], verbs: [patch]}]",
            &[
                "(\"rbac.authorization.k8s.io\", clusterroles, create)",
                "(\"rbac.authorization.k8s.io\", clusterrolebindings, create)",
                "(\"admissionregistration.k8s.io\", mutatingwebhookconfigurations, patch)",
            ],
        ),
        (
            "pods and exec in the providers' namespace",
            "Role",
            "[{apiGroups: [''], resources: [pods, pods/exec], verbs: [create]}]",
            &[
                "(\"\", pods, create) in the providers' namespace",
                "(\"\", pods/exec, create) in the providers' namespace",
            ],
        ),
        (
            "a namespaced grant made cluster-wide (every namespace's Leases, the installer's included)",
            "ClusterRole",
            "[{apiGroups: [coordination.k8s.io], resources: [leases], verbs: [delete]}]",
            &["(\"coordination.k8s.io\", leases, delete) cluster-wide"],
        ),
        (
            "a non-resource URL",
            "ClusterRole",
            "[{nonResourceURLs: [/metrics], verbs: [get]}]",
            &["nonResourceURLs \"/metrics\""],
        ),
        (
            "resourceNames widened to every name",
            "ClusterRole",
            "[{apiGroups: [apiextensions.k8s.io], resources: [customresourcedefinitions], verbs: [patch]}]",
            &[
                "only for resourceNames \"gadgets.infrastructure.cluster.x-k8s.io\", \"widgets.infrastructure.cluster.x-k8s.io\"",
            ],
        ),
        (
            "resourceNames beyond the ceiling's",
            "ClusterRole",
            "[{apiGroups: [apiextensions.k8s.io], resources: [customresourcedefinitions], resourceNames: [widgets.infrastructure.cluster.x-k8s.io, featuregates.config.openshift.io], verbs: [patch]}]",
            &[
                "(\"apiextensions.k8s.io\", customresourcedefinitions, patch) cluster-wide: the provider RBAC ceiling allows it only for resourceNames",
            ],
        ),
    ];
    for (what, kind, rules, expected) in cases {
        let got = ceiling_violations(&role(kind, rules));
        assert_eq!(got.len(), expected.len(), "{what}: {got:#?}");
        for (detail, want) in got.iter().zip(expected.iter()) {
            assert!(detail.contains(want), "{what}: {want:?} not in {detail:?}");
        }
    }
}

#[test]
fn grants_inside_the_ceiling_pass() {
    for (what, kind, rules) in [
        (
            "a subresource under a `*` resource of the family",
            "ClusterRole",
            "[{apiGroups: [infrastructure.cluster.x-k8s.io], resources: [widgets/status, widgets], verbs: [patch]}]",
        ),
        (
            "fewer resourceNames than the ceiling's",
            "ClusterRole",
            "[{apiGroups: [apiextensions.k8s.io], resources: [customresourcedefinitions], resourceNames: [widgets.infrastructure.cluster.x-k8s.io], verbs: [patch]}]",
        ),
        (
            "a cluster-wide grant made in the namespace only",
            "Role",
            "[{apiGroups: [''], resources: [secrets], verbs: [get]}]",
        ),
        (
            "a namespaced grant in a Role",
            "Role",
            "[{apiGroups: [coordination.k8s.io], resources: [leases], verbs: [delete]}]",
        ),
        (
            "resourceNames narrowing an unnamed grant",
            "ClusterRole",
            "[{apiGroups: [''], resources: [secrets], resourceNames: [one], verbs: [get]}]",
        ),
    ] {
        assert_eq!(
            ceiling_violations(&role(kind, rules)),
            Vec::<String>::new(),
            "{what}"
        );
    }
}

#[test]
fn aggregated_cluster_roles_only_under_the_ceilings_names() {
    let doc = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: collect-more}\naggregationRule: {clusterRoleSelectors: [{matchLabels: {w.infrastructure.cluster.x-k8s.io/aggregate-to-manager: 'true'}}]}\n";
    let got = ceiling_violations(doc);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].contains("only named \"w-aggregated-role\""),
        "{got:?}"
    );
}

/// Issue 46: another provider's aggregated role is its own: not its name, not its label, not its
/// selector (each provider's identity holds `escalate` on its names; the label joins that provider's role).
#[test]
fn another_providers_aggregation_is_refused() {
    let violations = |doc: &str| -> Vec<String> {
        violations_with(&with(doc), &config())
            .into_iter()
            .filter(|v| v.rule == Rule::RbacAggregation)
            .map(|v| v.detail)
            .collect()
    };
    let named = violations(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: capi-aggregated-manager-role}\naggregationRule: {clusterRoleSelectors: [{matchLabels: {w.infrastructure.cluster.x-k8s.io/aggregate-to-manager: 'true'}}]}\n",
    );
    assert_eq!(
        named,
        ["aggregated ClusterRole \"capi-aggregated-manager-role\" is provider cluster-api's"]
    );
    let selecting = violations(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: w-aggregated-role}\naggregationRule: {clusterRoleSelectors: [{matchLabels: {cluster.x-k8s.io/aggregate-to-capz-manager: 'true'}}]}\n",
    );
    assert_eq!(
        selecting,
        [
            "aggregationRule.clusterRoleSelectors[0] selects the aggregation label of provider \"infrastructure-azure\": it would collect that provider's roles"
        ]
    );
    let joining = violations(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: w-extra, labels: {cluster.x-k8s.io/aggregate-to-manager: 'true'}}\nrules: []\n",
    );
    assert_eq!(
        joining,
        [
            "label cluster.x-k8s.io/aggregate-to-manager is carried only by roles of \"cluster-api\", \"infrastructure-vsphere\": it would add this role to the aggregated role that selects it"
        ]
    );
}

#[test]
fn one_violation_per_line() {
    let v = violations_with(
        &with(&role(
            "ClusterRole",
            "[{apiGroups: [''], resources: [pods], verbs: [create, delete]}]",
        )),
        &config(),
    );
    let text = Violations(v).to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert_eq!(lines[0], "bundle policy: 2 violation(s):");
    assert_eq!(
        lines[1],
        "ConfigMap openshift-cluster-api/w, document 12 (ClusterRole r): rule rbac-ceiling: rules[0] grants (\"\", pods, create) cluster-wide: outside the provider RBAC ceiling (ClusterRole capi-provider-infrastructure-w; README, \"Bundle policy\", says how an administrator extends it)"
    );
    assert!(
        lines[2].contains("(\"\", pods, delete) cluster-wide"),
        "{text}"
    );
}

#[test]
fn the_release_ceiling_is_read_from_the_manifests_per_provider_and_extended_by_labelled_roles() {
    let release = Ceiling::release();
    let none = BTreeSet::new();
    let aws = release.of("infrastructure-aws");
    let vsphere = release.of("infrastructure-vsphere");
    let secrets = ceiling::Triple::new("", "secrets", "get");
    let leases = ceiling::Triple::new("coordination.k8s.io", "leases", "delete");
    let token = ceiling::Triple::new("", "serviceaccounts/token", "create");
    assert_eq!(
        aws.covers(Scope::Cluster, &secrets, &none),
        Coverage::Inside
    );
    assert_eq!(
        aws.covers(Scope::Namespaced, &leases, &none),
        Coverage::Inside
    );
    assert_eq!(
        aws.covers(Scope::Cluster, &leases, &none),
        Coverage::Outside
    );
    assert_eq!(aws.covers(Scope::Cluster, &token, &none), Coverage::Outside);
    // Each provider's own: what only vSphere's bundles grant is not aws's, and nothing is everyone's.
    let bindings = ceiling::Triple::new("rbac.authorization.k8s.io", "rolebindings", "create");
    let delete_nodes = ceiling::Triple::new("", "nodes", "delete");
    for triple in [&bindings, &delete_nodes] {
        assert_eq!(
            vsphere.covers(Scope::Cluster, triple, &none),
            Coverage::Inside
        );
        assert_eq!(aws.covers(Scope::Cluster, triple, &none), Coverage::Outside);
    }
    assert_eq!(
        release.covers(Scope::Cluster, &secrets, &none),
        Coverage::Outside
    );
    let aggregated = |c: &Ceiling| c.cluster.aggregated_roles();
    assert_eq!(
        aggregated(&release.of("cluster-api")),
        BTreeSet::from(["capi-aggregated-manager-role".to_string()])
    );
    assert_eq!(
        aggregated(&vsphere),
        BTreeSet::from(["capv-aggregated-manager-role".to_string()])
    );
    assert_eq!(
        aggregated(&release.of("infrastructure-azure")),
        BTreeSet::from(["capz-manager-role".to_string()])
    );
    assert!(aggregated(&aws).is_empty());
    // An administrator's ClusterRole with the label extends every provider's; one without is ignored.
    let extended = release.with(&test_ceiling());
    let widgets =
        ceiling::Triple::new("apiextensions.k8s.io", "customresourcedefinitions", "patch");
    assert_eq!(
        extended.of("infrastructure-aws").covers(
            Scope::Cluster,
            &widgets,
            &BTreeSet::from(["gadgets.infrastructure.cluster.x-k8s.io"])
        ),
        Coverage::Inside
    );
    let pods = ceiling::Triple::new("", "pods", "create");
    assert_eq!(
        extended
            .of("infrastructure-aws")
            .covers(Scope::Cluster, &pods, &none),
        Coverage::Outside
    );
    // With the provider label, only that provider's.
    let only_gcp: Value = serde_json::json!({
        "kind": "ClusterRole",
        "metadata": {"name": "gcp-pods", "labels": {
            ceiling::LABEL: ceiling::CLUSTER, ceiling::PROVIDER_LABEL: "infrastructure-gcp"}},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["create"]}],
    });
    let extended = extended.with(&Ceiling::from_roles([&only_gcp]));
    assert_eq!(
        extended
            .of("infrastructure-gcp")
            .covers(Scope::Cluster, &pods, &none),
        Coverage::Inside
    );
    assert_eq!(
        extended
            .of("infrastructure-aws")
            .covers(Scope::Cluster, &pods, &none),
        Coverage::Outside
    );
}

#[test]
fn a_provider_grants_within_its_own_ceiling_not_another_providers() {
    // vSphere's manager writes RoleBindings and deletes Nodes; aws's does not.
    let grants = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: capx-grants}\nrules:\n- {apiGroups: [rbac.authorization.k8s.io], resources: [rolebindings], verbs: [create]}\n- {apiGroups: [''], resources: [nodes], verbs: [delete]}\n";
    let objects = parse(grants);
    let bundle: Vec<BundleObject<'_>> = objects
        .iter()
        .map(|(origin, object)| BundleObject { origin, object })
        .collect();
    let release = PolicyConfig::installer(NS);
    let judged = |provider: &str| {
        check(&bundle, &release, &BTreeSet::new(), &Among::alone(provider))
            .err()
            .map(|v| v.to_string())
    };
    assert_eq!(judged("infrastructure-vsphere"), None);
    let refused = judged("infrastructure-aws").expect("aws may not grant vSphere's");
    for part in [
        "rules[0] grants (\"rbac.authorization.k8s.io\", rolebindings, create) cluster-wide: outside the provider RBAC ceiling (ClusterRole capi-provider-infrastructure-aws;",
        "rules[1] grants (\"\", nodes, delete) cluster-wide",
    ] {
        assert!(refused.contains(part), "{part:?} not in {refused}");
    }
}

#[path = "tests_own.rs"]
mod own;
