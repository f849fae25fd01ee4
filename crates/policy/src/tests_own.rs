//! Issue 29: what the API server stores ([`super::super::stored`]) and each provider keeping to its
//! own ([`super::super::references`]).

use std::collections::BTreeMap;

use super::*;

/// The good bundle with `doc` after it, as aws's: its Service selects on aws's provider label, its
/// CRD is named as aws's are.
fn with_aws(doc: &str) -> String {
    let good = GOOD
        .replace(
            "cluster.x-k8s.io/provider: infrastructure-w",
            "cluster.x-k8s.io/provider: infrastructure-aws",
        )
        .replace("widgets", "awswidgets");
    format!("{good}---\n{doc}")
}

/// A Deployment of the good bundle's shape whose pod spec ends with `extra` (flow-style fields).
fn deployment(name: &str, labels: &str, extra: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: openshift-cluster-api}}\nspec:\n  selector: {{matchLabels: {labels}}}\n  template:\n    metadata: {{labels: {labels}}}\n    spec: {{serviceAccountName: w-manager, containers: [{{name: m, image: x}}]{extra}}}\n"
    )
}

#[test]
fn what_the_api_server_stores_differently_is_refused() {
    use Rule::*;
    let cases: &[(&str, String, &[Rule])] = &[
        (
            "serviceAccountName empty beside the deprecated serviceAccount",
            deployment(
                "d",
                "{app: d}",
                ", serviceAccountName: '', serviceAccount: capi-controllers",
            )
            .replace("serviceAccountName: w-manager, ", ""),
            // The alias, and the identity it resolves to (protected, not of the bundle).
            &[StoredAsWritten, WorkloadIdentity],
        ),
        (
            "the alias even when it agrees",
            deployment("d", "{app: d}", ", serviceAccount: w-manager"),
            &[StoredAsWritten],
        ),
        (
            "runAsUser 0.0 is root",
            deployment("d", "{app: d}", ", securityContext: {runAsUser: 0.0}"),
            &[StoredAsWritten, WorkloadPrivilege],
        ),
        (
            "hostPort 8080.0 is a host port",
            deployment("d", "{app: d}", "")
                .replace("image: x}", "image: x, ports: [{containerPort: 8080, hostPort: 8080.0}]}"),
            &[StoredAsWritten, WorkloadHostAccess],
        ),
        (
            "a fraction anywhere in a built-in kind",
            "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: openshift-cluster-api}\nspec: {ports: [{port: 443.5}]}\n".into(),
            &[StoredAsWritten],
        ),
        (
            "an exponent is a float too",
            deployment("d", "{app: d}", ", terminationGracePeriodSeconds: 1e1"),
            &[StoredAsWritten],
        ),
    ];
    for (what, doc, rules) in cases {
        let got = found(&with(doc));
        let want: Vec<(usize, Rule)> = rules.iter().map(|r| (LAST, *r)).collect();
        assert_eq!(got, want, "{what}");
    }
    let v = violations_with(
        &with(&deployment(
            "d",
            "{app: d}",
            ", securityContext: {runAsUser: 0.0}",
        )),
        &config(),
    );
    assert!(
        v[0].to_string().contains(
            "rule stored-as-written: spec.template.spec.securityContext.runAsUser is written as the float 0.0: the API server stores the integer 0"
        ),
        "{}",
        v[0]
    );
}

#[test]
fn a_crd_schema_may_hold_any_number() {
    let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: gadgets.infrastructure.cluster.x-k8s.io}\nspec: {group: infrastructure.cluster.x-k8s.io, scope: Namespaced, names: {kind: Gadget, plural: gadgets}, versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, properties: {ratio: {type: number, minimum: 0.5, default: 1.5}}}}}]}\n";
    assert_eq!(found(&with(crd)), vec![]);
}

#[test]
fn pods_read_only_their_own_secrets_and_configmaps() {
    use Rule::*;
    let cases: &[(&str, &str, &[Rule])] = &[
        (
            "another provider's serving Secret as a volume",
            ", volumes: [{name: c, secret: {secretName: capi-webhook-service-cert}}]",
            &[References],
        ),
        ("through env[].valueFrom.secretKeyRef", "", &[References]),
        // envFrom is also refused on its own: its keys could set a proxy variable.
        ("through envFrom", "", &[References, ClusterProxy]),
        (
            "through a projected volume",
            ", volumes: [{name: c, projected: {sources: [{secret: {name: capi-webhook-service-cert}}, {serviceAccountToken: {path: t, audience: openshift}}]}}]",
            &[References],
        ),
        (
            "a ConfigMap the bundle does not ship",
            ", volumes: [{name: c, configMap: {name: kube-root-ca.crt}}]",
            &[References],
        ),
        (
            "an image pull Secret",
            ", imagePullSecrets: [{name: builder-dockercfg}]",
            &[References],
        ),
        (
            "another provider's credentials",
            ", volumes: [{name: c, secret: {secretName: capg-manager-bootstrap-credentials}}]",
            &[References],
        ),
        (
            "its own serving certificate and credentials",
            ", volumes: [{name: c, secret: {secretName: w-cert}}, {name: k, secret: {secretName: capa-manager-bootstrap-credentials}}]",
            &[],
        ),
    ];
    for (what, extra, rules) in cases {
        let mut doc = deployment("d", "{app: d}", extra);
        if what.contains("secretKeyRef") {
            doc = doc.replace(
                "image: x}",
                "image: x, env: [{name: K, valueFrom: {secretKeyRef: {name: capi-webhook-service-cert, key: tls.key}}}]}",
            );
        }
        if what.contains("envFrom") {
            doc = doc.replace(
                "image: x}",
                "image: x, envFrom: [{secretRef: {name: capi-webhook-service-cert}}]}",
            );
        }
        let objects = parse(&with_aws(&doc));
        let bundle: Vec<BundleObject<'_>> = objects
            .iter()
            .map(|(origin, object)| BundleObject { origin, object })
            .collect();
        let got: Vec<(usize, Rule)> = match check(
            &bundle,
            &config(),
            &BTreeSet::from([PAYLOAD_IMAGE]),
            &Among::alone("infrastructure-aws"),
        ) {
            Ok(()) => vec![],
            Err(Violations(v)) => v.into_iter().map(|v| (v.origin.document, v.rule)).collect(),
        };
        let want: Vec<(usize, Rule)> = rules.iter().map(|r| (LAST, *r)).collect();
        assert_eq!(got, want, "{what}");
    }
}

/// Core's plan, as the planner holds it when aws comes next.
fn core() -> Holdings {
    let yaml = "apiVersion: v1\nkind: Service\nmetadata: {name: capi-webhook-service, namespace: openshift-cluster-api, annotations: {service.beta.openshift.io/serving-cert-secret-name: capi-webhook-service-cert}}\nspec: {selector: {cluster.x-k8s.io/provider: cluster-api}, ports: [{port: 443}]}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: capi-controller-manager, namespace: openshift-cluster-api}\nspec: {selector: {matchLabels: {cluster.x-k8s.io/provider: cluster-api}}, template: {metadata: {labels: {cluster.x-k8s.io/provider: cluster-api, control-plane: controller-manager}}, spec: {containers: [{name: m, image: x}], volumes: [{name: cert, secret: {secretName: capi-webhook-service-cert}}]}}}\n---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: clusters.cluster.x-k8s.io}\nspec: {group: cluster.x-k8s.io, scope: Namespaced, names: {kind: Cluster, plural: clusters}, versions: [{name: v1beta2, served: true, storage: true}]}\n";
    let objects = parse(yaml);
    Holdings::of("cluster-api", objects.iter().map(|(_, o)| o))
}

fn among_core(doc: &str, cluster: &BTreeMap<(String, String), String>) -> Vec<Violation> {
    let objects = parse(&with_aws(doc));
    let bundle: Vec<BundleObject<'_>> = objects
        .iter()
        .map(|(origin, object)| BundleObject { origin, object })
        .collect();
    let others = [core()];
    let among = Among::new("infrastructure-aws", &others, cluster);
    match check(&bundle, &config(), &BTreeSet::from([PAYLOAD_IMAGE]), &among) {
        Ok(()) => vec![],
        Err(Violations(v)) => v,
    }
}

#[test]
fn a_provider_reaches_into_no_other() {
    use Rule::*;
    let none = BTreeMap::new();
    let cases: &[(&str, String, &[Rule], &str)] = &[
        (
            "core's pod labels on an aws Deployment",
            deployment("d", "{cluster.x-k8s.io/provider: cluster-api}", ""),
            // Core's label, which core's Service selects.
            &[ProvidersApart, ProvidersApart],
            "spec.template.metadata.labels[cluster.x-k8s.io/provider] is \"cluster-api\", not \"infrastructure-aws\"",
        ),
        (
            "a Service selecting core's pods",
            "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: openshift-cluster-api}\nspec: {selector: {control-plane: controller-manager}, ports: [{port: 443}]}\n".into(),
            // Not on aws's label; and core's pods are among those it selects.
            &[ProvidersApart, ProvidersApart],
            "spec.selector does not select on cluster.x-k8s.io/provider: \"infrastructure-aws\"",
        ),
        (
            "a Service asking service-ca for core's serving Secret",
            "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: openshift-cluster-api, annotations: {service.beta.openshift.io/serving-cert-secret-name: capi-webhook-service-cert}}\nspec: {selector: {cluster.x-k8s.io/provider: infrastructure-aws}, ports: [{port: 443}]}\n".into(),
            &[ProvidersApart],
            "metadata.annotations[service.beta.openshift.io/serving-cert-secret-name] \"capi-webhook-service-cert\" is a Secret of provider cluster-api",
        ),
        (
            "a Service asking service-ca for core's serving Secret in the alpha spelling",
            "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: openshift-cluster-api, annotations: {service.alpha.openshift.io/serving-cert-secret-name: capi-webhook-service-cert}}\nspec: {selector: {cluster.x-k8s.io/provider: infrastructure-aws}, ports: [{port: 443}]}\n".into(),
            &[ProvidersApart],
            "metadata.annotations[service.alpha.openshift.io/serving-cert-secret-name] \"capi-webhook-service-cert\" is a Secret of provider cluster-api",
        ),
        (
            "a role patching core's CRD by name",
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: w-crd-patcher}\nrules: [{apiGroups: [apiextensions.k8s.io], resources: [customresourcedefinitions], resourceNames: [clusters.cluster.x-k8s.io], verbs: [patch]}]\n".into(),
            &[ProvidersApart],
            "rules[0].resourceNames names CustomResourceDefinition \"clusters.cluster.x-k8s.io\", which provider cluster-api serves",
        ),
        (
            "a role patching vSphere's CRD by name, vSphere not installed",
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: w-crd-patcher}\nrules: [{apiGroups: [apiextensions.k8s.io], resources: [customresourcedefinitions], resourceNames: [vspheremachines.infrastructure.cluster.x-k8s.io], verbs: [patch]}]\n".into(),
            &[ProvidersApart],
            "rules[0].resourceNames names CustomResourceDefinition \"vspheremachines.infrastructure.cluster.x-k8s.io\", which is provider infrastructure-vsphere's, not infrastructure-aws's",
        ),
        (
            "a role patching a CRD of core's group that no one serves yet",
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: w-crd-patcher}\nrules: [{apiGroups: [apiextensions.k8s.io], resources: [customresourcedefinitions], resourceNames: [machinepools.cluster.x-k8s.io], verbs: [patch]}]\n".into(),
            &[ProvidersApart],
            "rules[0].resourceNames names CustomResourceDefinition \"machinepools.cluster.x-k8s.io\", whose group is core's own, not one of provider infrastructure-aws's",
        ),
        (
            "a Service asking service-ca for credentials",
            "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: openshift-cluster-api, annotations: {service.beta.openshift.io/serving-cert-secret-name: capg-manager-bootstrap-credentials}}\nspec: {selector: {cluster.x-k8s.io/provider: infrastructure-aws}, ports: [{port: 443}]}\n".into(),
            &[References],
            "is the credentials Secret of provider infrastructure-gcp",
        ),
        (
            "a webhook on core's clusters",
            "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: v}\nwebhooks: [{name: v.cluster.x-k8s.io, clientConfig: {service: {name: w-webhook-service, namespace: openshift-cluster-api}}, rules: [{apiGroups: [cluster.x-k8s.io], apiVersions: ['*'], operations: [CREATE], resources: [clusters]}], sideEffects: None, admissionReviewVersions: [v1]}]\n".into(),
            &[ProvidersApart],
            "webhooks[0] (v.cluster.x-k8s.io).rules[0] acts on \"clusters.cluster.x-k8s.io (provider cluster-api)\"",
        ),
        (
            "an admission policy on every resource of core's group",
            "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: p}\nspec: {matchConstraints: {resourceRules: [{apiGroups: [cluster.x-k8s.io], apiVersions: ['*'], operations: [DELETE], resources: ['*']}]}, validations: [{expression: 'false'}]}\n".into(),
            &[ProvidersApart],
            "spec.matchConstraints.resourceRules[0] acts on \"*.cluster.x-k8s.io (provider cluster-api)\"",
        ),
    ];
    for (what, doc, rules, message) in cases {
        let v = among_core(doc, &none);
        let got: Vec<(usize, Rule)> = v.iter().map(|v| (v.origin.document, v.rule)).collect();
        let want: Vec<(usize, Rule)> = rules.iter().map(|r| (LAST, *r)).collect();
        assert_eq!(got, want, "{what}: {v:?}");
        assert!(v[0].detail.contains(message), "{what}: {}", v[0].detail);
    }
    // The good bundle beside core, with one more object of a kind the test's field bound knows:
    // nothing of core's is named.
    assert_eq!(
        among_core(
            "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: c, namespace: openshift-cluster-api}\n",
            &none
        ),
        vec![]
    );
}

#[test]
fn admission_only_on_resources_the_bundle_defines() {
    let webhook = |resource: &str| {
        format!(
            "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {{name: v}}\nwebhooks: [{{name: v.infrastructure.cluster.x-k8s.io, clientConfig: {{service: {{name: w-webhook-service, namespace: openshift-cluster-api}}}}, rules: [{{apiGroups: [infrastructure.cluster.x-k8s.io], apiVersions: ['*'], operations: [CREATE], resources: [{resource}]}}], sideEffects: None, admissionReviewVersions: [v1]}}]\n"
        )
    };
    let cluster = BTreeMap::from([
        (
            (
                "infrastructure.cluster.x-k8s.io".to_string(),
                "gcpclusters".to_string(),
            ),
            "infrastructure-gcp".to_string(),
        ),
        (
            (
                "infrastructure.cluster.x-k8s.io".to_string(),
                "awswidgets".to_string(),
            ),
            String::new(),
        ),
        (
            (
                "infrastructure.cluster.x-k8s.io".to_string(),
                "awsclusters".to_string(),
            ),
            "infrastructure-aws".to_string(),
        ),
    ]);
    let rules = |doc: &str| -> Vec<Rule> {
        among_core(doc, &cluster)
            .into_iter()
            .map(|v| v.rule)
            .collect()
    };
    // Another provider's CRD on the cluster.
    assert_eq!(rules(&webhook("gcpclusters")), vec![Rule::ProvidersApart]);
    // One the bundle defines, whoever wrote it before.
    assert_eq!(rules(&webhook("awswidgets")), vec![]);
    // Its own from an earlier version, and a resource no one serves: no CRD of this bundle defines
    // them (issue 46: admission only on the provider's own resources, whatever the round shows).
    assert_eq!(rules(&webhook("awsclusters")), vec![Rule::ProvidersApart]);
    assert_eq!(rules(&webhook("unknownthings")), vec![Rule::ProvidersApart]);
}

/// The stored object is judged with the same rules and bundle: the alias resolved by the API server
/// is caught even where the text had none to see.
#[test]
fn the_stored_object_is_judged_again() {
    let objects = parse(GOOD);
    let bundle: Vec<BundleObject<'_>> = objects
        .iter()
        .map(|(origin, object)| BundleObject { origin, object })
        .collect();
    let stored = Stored::new(
        &bundle,
        &config(),
        &BTreeSet::from([PAYLOAD_IMAGE]),
        "infrastructure-w",
    );
    let (origin, deployment) = objects
        .iter()
        .find(|(_, o)| o.types.as_ref().unwrap().kind == "Deployment")
        .unwrap();
    let key = capi_apply::key_of(deployment).unwrap();
    assert_eq!(stored.judge(&key, deployment), Ok(()));
    // As the API server returns it: `serviceAccount` mirrors the name (no alias refusal here), the
    // name is the one the alias gave, status and managed fields are there.
    let mut as_stored = deployment.clone();
    as_stored.data["spec"]["template"]["spec"]["serviceAccountName"] = "capi-controllers".into();
    as_stored.data["spec"]["template"]["spec"]["serviceAccount"] = "capi-controllers".into();
    as_stored.data["status"] = serde_json::json!({"replicas": 0});
    let v = stored.violations(&key, &as_stored);
    let rules: Vec<Rule> = v.iter().map(|v| v.rule).collect();
    assert_eq!(rules, vec![Rule::WorkloadIdentity], "{v:?}");
    assert_eq!(v[0].origin, *origin);
    let message = stored.judge(&key, &as_stored).unwrap_err();
    assert!(
        message.starts_with(&format!(
            "bundle policy: ConfigMap {NS}/w, document {} (Deployment {NS}/w-controller-manager): rule workload-bundle-service-accounts-only: as stored: spec.template.spec.serviceAccountName capi-controllers",
            origin.document
        )),
        "{message}"
    );
}

/// Every real bundle of the fixtures — transport ConfigMaps and both generations of profiles — keeps
/// to its own, alone and beside the others of its generation judged before it in install order (core
/// first). Only the rules of issue 29 are read here: the profiles are parsed as written (images and
/// `${VAR}`s unresolved), which the other rules judge after rendering in `tests/policy_fixtures.rs`.
#[test]
fn every_real_bundle_keeps_to_its_own_beside_the_others() {
    let Some(root) = control_plane::shared_fixture("") else {
        return;
    };
    let mut sets: Vec<(String, Vec<(String, String)>)> = Vec::new();
    // Transport ConfigMaps: (provider label, components).
    let mut transport = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(root.join("transport-configmaps"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains("_04_cm."))
        .collect();
    files.sort();
    for path in files {
        let value: Value =
            serde_saphyr::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let content = capi_manifests::TransportConfigMap::decode(&value)
            .unwrap()
            .content;
        let provider = &content.provider;
        transport.push((
            provider.provider_type.clusterctl_label(&provider.name),
            content.components,
        ));
    }
    sets.push(("transport-configmaps".into(), transport));
    for (set, dir, file) in [
        ("profiles", root.join("profiles"), "manifests.yaml"),
        (
            "manifests-gen-profiles",
            root.join("manifests-gen-profiles"),
            "expected/default/manifests.yaml",
        ),
    ] {
        let mut bundles = Vec::new();
        let mut providers: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .collect();
        providers.sort();
        for provider in providers {
            let label = match provider.as_str() {
                "core" => "cluster-api".to_string(),
                other => format!("infrastructure-{other}"),
            };
            let text = std::fs::read_to_string(dir.join(&provider).join(file)).unwrap();
            bundles.push((label, text));
        }
        sets.push((set.into(), bundles));
    }
    let mine = [
        Rule::StoredAsWritten,
        Rule::References,
        Rule::ProvidersApart,
    ];
    let cluster = BTreeMap::new();
    for (set, mut bundles) in sets {
        // Install order: core first.
        bundles.sort_by_key(|(label, _)| label != "cluster-api");
        assert!(bundles.len() >= 3, "{set}");
        let mut held: Vec<Holdings> = Vec::new();
        for (label, components) in &bundles {
            let objects: Vec<(Origin, DynamicObject)> =
                capi_manifests::yaml::parse_documents(label, components)
                    .unwrap()
                    .into_iter()
                    .enumerate()
                    .filter(|(_, d)| d.value.is_object())
                    .map(|(i, d)| {
                        let origin = Origin {
                            source: format!("{set} {label}"),
                            document: i,
                        };
                        (origin, serde_json::from_value(d.value).unwrap())
                    })
                    .collect();
            let bundle: Vec<BundleObject<'_>> = objects
                .iter()
                .map(|(origin, object)| BundleObject { origin, object })
                .collect();
            let among = Among::new(label, &held, &cluster);
            let found: Vec<String> = match check(&bundle, &config(), &BTreeSet::new(), &among) {
                Ok(()) => vec![],
                Err(Violations(v)) => v
                    .into_iter()
                    .filter(|v| mine.contains(&v.rule))
                    .map(|v| v.to_string())
                    .collect(),
            };
            assert_eq!(found, Vec::<String>::new(), "{set} {label}");
            held.push(Holdings::of(label, objects.iter().map(|(_, o)| o)));
        }
    }
}
