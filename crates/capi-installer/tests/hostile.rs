//! Hostile or broken provider bundles (issues 9, 17 and 29): each in turn replaces the aws transport
//! ConfigMap of a running installer that has core and aws installed. For every one: nothing of it is
//! written (audit log), core and the previously installed aws keep running, the ClusterOperator names
//! the ConfigMap and the rule (every violation, one per line) with a specific reason, and putting the
//! good ConfigMap back converges again. The cases are dealt to three tests, each with its own control
//! plane and installer: within a test they run one after another and each ends where it started; the
//! tests run side by side, because a case is mostly waiting (a refusal must persist for spaced attempts
//! before it degrades the operator), and one after another the 14 took 13 minutes. The installer runs
//! as its own ServiceAccount under the
//! shipped RBAC, writing each provider as that provider's own identity (no `escalate` or `bind`, each
//! provider's RBAC ceiling): what the policy refuses here, the API server would often refuse too
//! (`identities.rs`), but the policy must say so first, by name.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use kube::Client;
use kube::api::Api;
use serde_json::{Value, json};
use test_support::*;

const CAPA: &str = "capa-controller-manager";

/// One hostile variant of the aws bundle and what the ClusterOperator must say about it.
struct Hostile {
    what: &'static str,
    configmap: Value,
    reason: &'static str,
    /// Every one of these appears in the Degraded message.
    expect: &'static [&'static str],
    /// Delete the running aws Deployment while this version waits: it is restored (issue 17).
    drift: bool,
}

/// The aws components as objects.
fn aws_objects() -> Vec<Value> {
    capi_manifests::yaml::parse_documents("aws", &fixture_components(AWS_CM))
        .unwrap()
        .into_iter()
        .map(|d| d.value)
        .collect()
}

/// The aws ConfigMap with `objects` as its components, encoded as manifests-gen would.
fn aws_with(objects: &[Value]) -> Value {
    with_components(
        AWS_CM,
        &capi_manifests::yaml::to_multi_yaml(objects).unwrap(),
    )
}

/// The image of the aws manager container, as its components write it (the images file resolves it).
fn capa_image() -> String {
    aws_objects()
        .iter()
        .find(|o| o["kind"] == "Deployment")
        .and_then(|d| d["spec"]["template"]["spec"]["containers"][0]["image"].as_str())
        .unwrap()
        .to_string()
}

/// A Deployment of the aws bundle running its manager image: `labels` on its pods, `spec` the rest
/// of the pod spec (flow style, after the container).
fn aws_deployment(name: &str, labels: &str, container: &str, spec: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: openshift-cluster-api}}\nspec:\n  selector: {{matchLabels: {labels}}}\n  template:\n    metadata: {{labels: {labels}}}\n    spec: {{containers: [{{name: c, image: '{}'{container}}}]{spec}}}\n",
        capa_image()
    )
}

fn modified(f: impl Fn(&mut Value)) -> Value {
    let mut objects = aws_objects();
    objects.iter_mut().for_each(f);
    aws_with(&objects)
}

fn hostile_bundles() -> Vec<Hostile> {
    let mut bomb = String::from("l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..=9 {
        let refs = vec![format!("*l{}", i - 1); 9].join(", ");
        bomb.push_str(&format!("l{i}: &l{i} [{refs}]\n"));
    }
    let mut alias_bomb = fixture_components(AWS_CM);
    if !alias_bomb.ends_with('\n') {
        alias_bomb.push('\n');
    }
    alias_bomb.push_str(&format!(
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: bomb, namespace: openshift-cluster-api}}\n{bomb}"
    ));
    vec![
        Hostile {
            what: "every triple family outside the RBAC ceiling (issue 17)",
            configmap: components_plus(
                AWS_CM,
                "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: mint-tokens}\nrules: [{apiGroups: [''], resources: [serviceaccounts/token], verbs: [create]}]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: mint-tokens}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: mint-tokens}\nsubjects: [{kind: ServiceAccount, name: capa-controller-manager, namespace: openshift-cluster-api}]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: kubelets}\nrules: [{apiGroups: [''], resources: [nodes/proxy], verbs: [get]}]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: certificates}\nrules: [{apiGroups: [certificates.k8s.io], resources: [certificatesigningrequests/approval], verbs: [update]}, {apiGroups: [certificates.k8s.io], resources: [signers], resourceNames: [kubernetes.io/kube-apiserver-client], verbs: [approve]}]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: privileged-scc}\nrules: [{apiGroups: [security.openshift.io], resources: [securitycontextconstraints], resourceNames: [privileged], verbs: [use]}]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: rbac-writer}\nrules: [{apiGroups: [rbac.authorization.k8s.io], resources: [clusterroles, clusterrolebindings], verbs: [create]}, {apiGroups: [admissionregistration.k8s.io], resources: [mutatingwebhookconfigurations], verbs: [create]}]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: run-pods, namespace: openshift-cluster-api}\nrules: [{apiGroups: [''], resources: [pods, pods/exec], verbs: [create]}]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: run-pods, namespace: openshift-cluster-api}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: run-pods}\nsubjects: [{kind: ServiceAccount, name: capa-controller-manager, namespace: openshift-cluster-api}]\n",
            ),
            reason: "BundlePolicyViolation",
            drift: true,
            expect: &[
                "openshift-cluster-api/aws",
                "(ClusterRole mint-tokens): rule rbac-ceiling: rules[0] grants (\"\", serviceaccounts/token, create) cluster-wide",
                "(ClusterRole kubelets): rule rbac-ceiling: rules[0] grants (\"\", nodes/proxy, get) cluster-wide",
                "(ClusterRole certificates): rule rbac-ceiling: rules[0] grants (\"certificates.k8s.io\", certificatesigningrequests/approval, update)",
                "(ClusterRole certificates): rule rbac-ceiling: rules[1] grants (\"certificates.k8s.io\", signers, approve)",
                "(ClusterRole privileged-scc): rule rbac-ceiling: rules[0] grants (\"security.openshift.io\", securitycontextconstraints, use)",
                "(ClusterRole rbac-writer): rule rbac-ceiling: rules[0] grants (\"rbac.authorization.k8s.io\", clusterroles, create)",
                "(ClusterRole rbac-writer): rule rbac-ceiling: rules[0] grants (\"rbac.authorization.k8s.io\", clusterrolebindings, create)",
                "(ClusterRole rbac-writer): rule rbac-ceiling: rules[1] grants (\"admissionregistration.k8s.io\", mutatingwebhookconfigurations, create)",
                "(Role openshift-cluster-api/run-pods): rule rbac-ceiling: rules[0] grants (\"\", pods, create) in the providers' namespace",
                "(Role openshift-cluster-api/run-pods): rule rbac-ceiling: rules[0] grants (\"\", pods/exec, create) in the providers' namespace",
            ],
        },
        Hostile {
            what: "workloads as root, privileged, on the host, with images from outside the payload (issue 17)",
            configmap: {
                let mut objects = aws_objects();
                for o in &mut objects {
                    if o["kind"] == "Deployment" {
                        o["spec"]["template"]["spec"]["containers"][0]["image"] =
                            json!("docker.io/library/busybox:latest");
                    }
                }
                objects.push(serde_saphyr::from_str(
                    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: rooted, namespace: openshift-cluster-api}\nspec:\n  selector: {matchLabels: {app: rooted}}\n  template:\n    metadata: {labels: {app: rooted}}\n    spec:\n      serviceAccountName: capa-controller-manager\n      hostNetwork: true\n      securityContext: {runAsUser: 0}\n      containers:\n      - name: c\n        image: docker.io/library/busybox:latest\n        securityContext: {runAsUser: 0, allowPrivilegeEscalation: true, privileged: true, capabilities: {add: [SYS_ADMIN]}}\n      volumes: [{name: root, hostPath: {path: /}}, {name: data, persistentVolumeClaim: {claimName: data}}]\n",
                ).unwrap());
                aws_with(&objects)
            },
            reason: "BundlePolicyViolation",
            drift: false,
            expect: &[
                "openshift-cluster-api/aws",
                "(Deployment openshift-cluster-api/capa-controller-manager): rule workload-payload-images-only: spec.template.spec.containers[0] (manager).image \"docker.io/library/busybox:latest\"",
                "(Deployment openshift-cluster-api/rooted): rule workload-payload-images-only",
                "(Deployment openshift-cluster-api/rooted): rule workload-no-host-access: spec.template.spec.hostNetwork is true",
                "(Deployment openshift-cluster-api/rooted): rule workload-no-host-access: spec.template.spec.volumes[0] (root) is a hostPath volume",
                "(Deployment openshift-cluster-api/rooted): rule workload-volume-kinds: spec.template.spec.volumes[1] (data)",
                "(Deployment openshift-cluster-api/rooted): rule workload-no-privilege: spec.template.spec.securityContext.runAsUser is 0",
                "(Deployment openshift-cluster-api/rooted): rule workload-no-privilege: spec.template.spec.containers[0] (c).securityContext.runAsUser is 0",
                "(Deployment openshift-cluster-api/rooted): rule workload-no-privilege: spec.template.spec.containers[0] (c) is privileged",
                "(Deployment openshift-cluster-api/rooted): rule workload-no-privilege: spec.template.spec.containers[0] (c).securityContext.allowPrivilegeEscalation is true",
                "(Deployment openshift-cluster-api/rooted): rule workload-no-privilege: spec.template.spec.containers[0] (c).securityContext.capabilities.add \"SYS_ADMIN\"",
            ],
        },
        Hostile {
            what: "Services that leave the cluster, webhooks through them or through others', policy parameters of Secrets (issue 17)",
            configmap: components_plus(
                AWS_CM,
                "apiVersion: v1\nkind: Service\nmetadata: {name: intercept, namespace: openshift-cluster-api}\nspec: {ports: [{port: 443}], externalIPs: [192.0.2.10]}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: exposed, namespace: openshift-cluster-api}\nspec: {type: NodePort, ports: [{port: 443}]}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: outside, namespace: openshift-cluster-api}\nspec: {type: ExternalName, externalName: evil.example.com}\n---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: leaky}\nwebhooks:\n- {name: out.infrastructure.cluster.x-k8s.io, clientConfig: {service: {name: outside, namespace: openshift-cluster-api}}, rules: [{apiGroups: [infrastructure.cluster.x-k8s.io], apiVersions: ['*'], operations: [CREATE], resources: [awsclusters]}], sideEffects: None, admissionReviewVersions: [v1]}\n- {name: theirs.infrastructure.cluster.x-k8s.io, clientConfig: {service: {name: someone-elses, namespace: openshift-cluster-api}}, rules: [{apiGroups: [infrastructure.cluster.x-k8s.io], apiVersions: ['*'], operations: [CREATE], resources: [awsclusters]}], sideEffects: None, admissionReviewVersions: [v1]}\n---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: echo-secrets}\nspec: {paramKind: {apiVersion: v1, kind: Secret}, matchConstraints: {resourceRules: [{apiGroups: [infrastructure.cluster.x-k8s.io], apiVersions: ['*'], operations: [CREATE], resources: [awsclusters]}]}, validations: [{expression: 'false', messageExpression: 'string(params.data)'}]}\n",
            ),
            reason: "BundlePolicyViolation",
            drift: false,
            expect: &[
                "openshift-cluster-api/aws",
                "(Service openshift-cluster-api/intercept): rule service-cluster-ip-only: spec.externalIPs is set",
                "(Service openshift-cluster-api/exposed): rule service-cluster-ip-only: spec.type NodePort",
                "(Service openshift-cluster-api/outside): rule service-cluster-ip-only: spec.type ExternalName",
                "(ValidatingWebhookConfiguration leaky): rule webhook-namespace-services-only: webhooks[1] (theirs.infrastructure.cluster.x-k8s.io).clientConfig.service openshift-cluster-api/someone-elses is not a Service of this bundle",
                "(ValidatingAdmissionPolicy echo-secrets): rule admission-family-groups-only: spec.paramKind v1 Secret",
            ],
        },
        Hostile {
            what: "workload bounds: replicas, priority class, seccomp, AppArmor and SELinux outside what real bundles use (issue 29)",
            configmap: modified(|o| {
                if o["kind"] == "Deployment" {
                    o["spec"]["replicas"] = json!(500);
                    let pod = &mut o["spec"]["template"]["spec"];
                    pod["priorityClassName"] = json!("system-node-critical");
                    pod["securityContext"]["seccompProfile"] = json!({"type": "Unconfined"});
                    pod["securityContext"]["seLinuxOptions"] = json!({"type": "spc_t"});
                    pod["containers"][0]["securityContext"]["appArmorProfile"] =
                        json!({"type": "Unconfined"});
                }
            }),
            reason: "BundlePolicyViolation",
            drift: false,
            expect: &[
                "openshift-cluster-api/aws",
                "(Deployment openshift-cluster-api/capa-controller-manager): rule field-values-in-real-bundles-only: spec.replicas is 500: real provider bundles use at most 1",
                "(Deployment openshift-cluster-api/capa-controller-manager): rule field-values-in-real-bundles-only: spec.template.spec.priorityClassName is \"system-node-critical\": real provider bundles use only \"system-cluster-critical\"",
                "(Deployment openshift-cluster-api/capa-controller-manager): rule field-values-in-real-bundles-only: spec.template.spec.securityContext.seccompProfile.type is \"Unconfined\": real provider bundles use only \"RuntimeDefault\"",
                "(Deployment openshift-cluster-api/capa-controller-manager): rule fields-in-real-bundles-only: spec.template.spec.securityContext.seLinuxOptions.type (spec.template.spec.securityContext.seLinuxOptions.type): no real provider bundle has this field",
                "(Deployment openshift-cluster-api/capa-controller-manager): rule fields-in-real-bundles-only: spec.template.spec.containers[0].securityContext.appArmorProfile.type (spec.template.spec.containers[].securityContext.appArmorProfile.type): no real provider bundle has this field",
            ],
        },
        Hostile {
            what: "sizes beyond what real bundles ask: requests that reserve a node, a day's grace period, a year-long token, a webhook's timeout, an annotation of any length (issue 46)",
            configmap: modified(|o| {
                if o["kind"] == "Deployment" {
                    let pod = &mut o["spec"]["template"]["spec"];
                    pod["terminationGracePeriodSeconds"] = json!(86400);
                    // A key real bundles put there (vSphere's), with a value of any size.
                    o["spec"]["template"]["metadata"]["annotations"] =
                        json!({"target.workload.openshift.io/management": "x".repeat(300)});
                    let pod = &mut o["spec"]["template"]["spec"];
                    pod["containers"][0]["resources"]["requests"]["memory"] = json!("512Gi");
                    pod["containers"][0]["resources"]["requests"]["cpu"] = json!(64);
                    pod["volumes"]
                        .as_array_mut()
                        .unwrap()
                        .push(json!({"name": "token", "projected": {"sources": [{"serviceAccountToken": {"path": "t", "expirationSeconds": 31536000}}]}}));
                }
                if o["kind"] == "ValidatingWebhookConfiguration" {
                    o["webhooks"][0]["timeoutSeconds"] = json!(30);
                }
            }),
            reason: "BundlePolicyViolation",
            drift: false,
            expect: &[
                "openshift-cluster-api/aws",
                "(Deployment openshift-cluster-api/capa-controller-manager): rule field-values-in-real-bundles-only: spec.template.spec.terminationGracePeriodSeconds is 86400: real provider bundles use at most 10 (2 times that is allowed)",
                "(Deployment openshift-cluster-api/capa-controller-manager): rule field-values-in-real-bundles-only: spec.template.spec.containers[0].resources.requests.memory is \"512Gi\": real provider bundles ask at most \"50Mi\" (2 times that is allowed)",
                "(Deployment openshift-cluster-api/capa-controller-manager): rule field-values-in-real-bundles-only: spec.template.spec.containers[0].resources.requests.cpu is 64: real provider bundles ask at most \"10m\" (2 times that is allowed)",
                "serviceAccountToken.expirationSeconds is 31536000: real provider bundles use at most 3600 (2 times that is allowed)",
                "webhooks[0].timeoutSeconds",
                "is 300 bytes long: a label or annotation value of a provider bundle is at most 256",
            ],
        },
        Hostile {
            what: "fields no real bundle has: the provider's DNS sent elsewhere, a finalizer (issue 29)",
            configmap: modified(|o| {
                if o["kind"] == "Deployment" {
                    o["spec"]["template"]["spec"]["dnsConfig"] =
                        json!({"nameservers": ["192.0.2.53"]});
                }
                if o["kind"] == "ServiceAccount" {
                    o["metadata"]["finalizers"] = json!(["example.com/keep"]);
                }
            }),
            reason: "BundlePolicyViolation",
            drift: false,
            expect: &[
                "openshift-cluster-api/aws",
                "(Deployment openshift-cluster-api/capa-controller-manager): rule fields-in-real-bundles-only: spec.template.spec.dnsConfig.nameservers[0] (spec.template.spec.dnsConfig.nameservers[]): no real provider bundle has this field of a Deployment",
                "(ServiceAccount openshift-cluster-api/capa-controller-manager): rule fields-in-real-bundles-only: metadata.finalizers[0] (metadata.finalizers[]): no real provider bundle has this field of a ServiceAccount",
            ],
        },
        Hostile {
            what: "what the API server stores differently: the serviceAccount alias, runAsUser 0.0, hostPort 8080.0 (issue 29)",
            configmap: components_plus(
                AWS_CM,
                &aws_deployment(
                    "sneaky",
                    "{app: sneaky}",
                    ", ports: [{containerPort: 8080, hostPort: 8080.0}]",
                    ", serviceAccountName: '', serviceAccount: capi-controllers, securityContext: {runAsUser: 0.0}",
                ),
            ),
            reason: "BundlePolicyViolation",
            drift: false,
            expect: &[
                "openshift-cluster-api/aws",
                "(Deployment openshift-cluster-api/sneaky): rule stored-as-written: spec.template.spec.serviceAccount is the deprecated alias of serviceAccountName",
                "(Deployment openshift-cluster-api/sneaky): rule workload-bundle-service-accounts-only: spec.template.spec.serviceAccountName capi-controllers",
                "(Deployment openshift-cluster-api/sneaky): rule stored-as-written: spec.template.spec.securityContext.runAsUser is written as the float 0.0: the API server stores the integer 0",
                "(Deployment openshift-cluster-api/sneaky): rule workload-no-privilege: spec.template.spec.securityContext.runAsUser is 0",
                "(Deployment openshift-cluster-api/sneaky): rule stored-as-written: spec.template.spec.containers[0].ports[0].hostPort is written as the float 8080.0: the API server stores the integer 8080",
                "(Deployment openshift-cluster-api/sneaky): rule workload-no-host-access: spec.template.spec.containers[0] (c).ports[0].hostPort is set",
            ],
        },
        Hostile {
            what: "core's webhook serving Secret read as a volume, a projected source, a secretKeyRef and envFrom (issue 29)",
            configmap: components_plus(
                AWS_CM,
                &aws_deployment(
                    "reader",
                    "{app: reader}",
                    ", env: [{name: KEY, valueFrom: {secretKeyRef: {name: capi-webhook-service-cert, key: tls.key}}}], envFrom: [{secretRef: {name: capi-webhook-service-cert}}]",
                    ", serviceAccountName: capa-controller-manager, volumes: [{name: a, secret: {secretName: capi-webhook-service-cert}}, {name: b, projected: {sources: [{secret: {name: capi-webhook-service-cert}}]}}]",
                ),
            ),
            reason: "BundlePolicyViolation",
            drift: false,
            expect: &[
                "openshift-cluster-api/aws",
                "(Deployment openshift-cluster-api/reader): rule references-own-objects-only: spec.template.spec.volumes[0].secret.secretName names Secret \"capi-webhook-service-cert\", which is not this provider's own",
                "(Deployment openshift-cluster-api/reader): rule references-own-objects-only: spec.template.spec.volumes[1].projected.sources[0].secret.name names Secret \"capi-webhook-service-cert\"",
                "(Deployment openshift-cluster-api/reader): rule references-own-objects-only: spec.template.spec.containers[0].env[0].valueFrom.secretKeyRef.name names Secret \"capi-webhook-service-cert\"",
                "(Deployment openshift-cluster-api/reader): rule references-own-objects-only: spec.template.spec.containers[0].envFrom[0].secretRef.name names Secret \"capi-webhook-service-cert\"",
            ],
        },
        Hostile {
            what: "aws reaching into core: its pod labels, its serving Secret by annotation, admission on its resources (issue 29)",
            configmap: components_plus(
                AWS_CM,
                &format!(
                    "{}---\napiVersion: v1\nkind: Service\nmetadata: {{name: steal, namespace: openshift-cluster-api, annotations: {{service.beta.openshift.io/serving-cert-secret-name: capi-webhook-service-cert}}}}\nspec: {{selector: {{app: steal}}, ports: [{{port: 443}}]}}\n---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {{name: capa-on-clusters}}\nwebhooks: [{{name: x.cluster.x-k8s.io, clientConfig: {{service: {{name: capa-webhook-service, namespace: openshift-cluster-api}}}}, rules: [{{apiGroups: [cluster.x-k8s.io], apiVersions: ['*'], operations: [CREATE, UPDATE], resources: [clusters]}}], sideEffects: None, admissionReviewVersions: [v1]}}]\n---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {{name: capa-on-machines}}\nspec: {{matchConstraints: {{resourceRules: [{{apiGroups: [cluster.x-k8s.io], apiVersions: ['*'], operations: [DELETE], resources: [machines]}}]}}, validations: [{{expression: 'false'}}]}}\n",
                    aws_deployment(
                        "impostor",
                        "{cluster.x-k8s.io/provider: cluster-api}",
                        "",
                        ", serviceAccountName: capa-controller-manager",
                    )
                ),
            ),
            reason: "BundlePolicyViolation",
            drift: false,
            expect: &[
                "openshift-cluster-api/aws",
                "(Deployment openshift-cluster-api/impostor): rule providers-keep-apart: spec.template.metadata.labels match the selector of Service capi-webhook-service of provider cluster-api",
                "(Service openshift-cluster-api/steal): rule providers-keep-apart: metadata.annotations[service.beta.openshift.io/serving-cert-secret-name] \"capi-webhook-service-cert\" is a Secret of provider cluster-api",
                "(ValidatingWebhookConfiguration capa-on-clusters): rule providers-keep-apart: webhooks[0] (x.cluster.x-k8s.io).rules[0] acts on \"clusters.cluster.x-k8s.io (provider cluster-api)\"",
                "(ValidatingAdmissionPolicy capa-on-machines): rule providers-keep-apart: spec.matchConstraints.resourceRules[0] acts on \"machines.cluster.x-k8s.io (provider cluster-api)\"",
            ],
        },
        Hostile {
            what: "aws reaching beyond its own release, whatever is installed: a CRD in core's group, one of vSphere's CRDs in the group they share, a Service on no provider label, pods the controllers pod's Services select, admission on gcp's resources (issue 46)",
            configmap: components_plus(
                AWS_CM,
                &format!(
                    "{}---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: gadgets.addons.cluster.x-k8s.io}}\nspec: {{group: addons.cluster.x-k8s.io, scope: Namespaced, names: {{kind: Gadget, plural: gadgets, singular: gadget, listKind: GadgetList}}, versions: [{{name: v1beta2, served: true, storage: true, schema: {{openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}}}}}]}}\n---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: vspheremachines.infrastructure.cluster.x-k8s.io}}\nspec: {{group: infrastructure.cluster.x-k8s.io, scope: Namespaced, names: {{kind: VSphereMachine, plural: vspheremachines, singular: vspheremachine, listKind: VSphereMachineList}}, versions: [{{name: v1beta1, served: true, storage: true, schema: {{openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}}}}}]}}\n---\napiVersion: v1\nkind: Service\nmetadata: {{name: wide, namespace: openshift-cluster-api}}\nspec: {{selector: {{control-plane: controller-manager}}, ports: [{{port: 443}}]}}\n---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {{name: capa-on-gcp}}\nwebhooks: [{{name: x.infrastructure.cluster.x-k8s.io, clientConfig: {{service: {{name: capa-webhook-service, namespace: openshift-cluster-api}}}}, rules: [{{apiGroups: [infrastructure.cluster.x-k8s.io], apiVersions: ['*'], operations: [CREATE, UPDATE], resources: [gcpclusters]}}], sideEffects: None, admissionReviewVersions: [v1]}}]\n",
                    aws_deployment(
                        "lookalike",
                        "{cluster.x-k8s.io/provider: infrastructure-aws, k8s-app: capi-controllers}",
                        "",
                        ", serviceAccountName: capa-controller-manager",
                    )
                ),
            ),
            reason: "BundlePolicyViolation",
            drift: false,
            expect: &[
                "openshift-cluster-api/aws",
                "(Deployment openshift-cluster-api/lookalike): rule providers-keep-apart: spec.template.metadata.labels match the selector of the release's Service capi-controllers-metrics",
                "(CustomResourceDefinition gadgets.addons.cluster.x-k8s.io): rule crd-family-groups-only: spec.group \"addons.cluster.x-k8s.io\" is not a group of provider infrastructure-aws's own CRDs",
                "(CustomResourceDefinition vspheremachines.infrastructure.cluster.x-k8s.io): rule crd-family-groups-only: spec.names.plural \"vspheremachines\" is provider infrastructure-vsphere's (its release's CRDs are named vsphere…), not infrastructure-aws's",
                "(Service openshift-cluster-api/wide): rule providers-keep-apart: spec.selector does not select on cluster.x-k8s.io/provider: \"infrastructure-aws\"",
                "(ValidatingWebhookConfiguration capa-on-gcp): rule providers-keep-apart: webhooks[0] (x.infrastructure.cluster.x-k8s.io).rules[0] acts on \"gcpclusters.infrastructure.cluster.x-k8s.io\": a provider's admission acts only on the resources its own CRDs define",
            ],
        },
        Hostile {
            what: "a ClusterRoleBinding of cluster-admin",
            configmap: components_plus(
                AWS_CM,
                "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: own-the-cluster}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\nsubjects: [{kind: ServiceAccount, name: capa-controller-manager, namespace: openshift-cluster-api}]\n",
            ),
            reason: "BundlePolicyViolation",
            drift: false,
            expect: &[
                "openshift-cluster-api/aws",
                "ClusterRoleBinding own-the-cluster",
                "rule rbac-bundle-roles-only",
            ],
        },
        Hostile {
            what: "a ClusterRole with * on *",
            configmap: components_plus(
                AWS_CM,
                "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: everything}\nrules: [{apiGroups: ['*'], resources: ['*'], verbs: ['*']}]\n",
            ),
            reason: "BundlePolicyViolation",
            drift: false,
            expect: &[
                "openshift-cluster-api/aws",
                "ClusterRole everything",
                "rule rbac-no-wildcards",
            ],
        },
        Hostile {
            what: "a change to a payload CRD that no provider ships",
            configmap: components_plus(
                AWS_CM,
                "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: featuregates.config.openshift.io}\nspec: {group: config.openshift.io, scope: Cluster, names: {kind: FeatureGate, plural: featuregates, singular: featuregate, listKind: FeatureGateList}, versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]}\n",
            ),
            reason: "BundlePolicyViolation",
            drift: false,
            expect: &[
                "openshift-cluster-api/aws",
                "CustomResourceDefinition featuregates.config.openshift.io",
                "rule crd-family-groups-only",
            ],
        },
        Hostile {
            what: "a new CRD with a Deployment the API server rejects",
            configmap: {
                let mut objects = aws_objects();
                for o in &mut objects {
                    if o["kind"] == "Deployment" {
                        o["spec"]["template"]["spec"]["containers"][0]["name"] =
                            json!("Not_A_DNS_Label");
                    }
                }
                objects.push(serde_saphyr::from_str(
                    "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: awswidgets.infrastructure.cluster.x-k8s.io}\nspec: {group: infrastructure.cluster.x-k8s.io, scope: Namespaced, names: {kind: AWSWidget, plural: awswidgets, singular: awswidget, listKind: AWSWidgetList}, versions: [{name: v1beta2, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]}\n",
                ).unwrap());
                aws_with(&objects)
            },
            reason: "ApplyFailed",
            drift: false,
            expect: &[
                "ConfigMap aws",
                "dry-run Deployment openshift-cluster-api/capa-controller-manager",
                "Not_A_DNS_Label",
            ],
        },
        Hostile {
            what: "a CRD change that strands stored data",
            configmap: modified(|o| {
                if o["metadata"]["name"] == "awsclusters.infrastructure.cluster.x-k8s.io" {
                    let versions = o["spec"]["versions"].as_array_mut().unwrap();
                    versions.retain(|v| v["name"] != "v1beta2");
                    versions[0]["served"] = json!(true);
                    versions[0]["storage"] = json!(true);
                }
            }),
            reason: "UnsafeCustomResourceDefinitionChange",
            drift: false,
            expect: &[
                "ConfigMap aws",
                "CustomResourceDefinition awsclusters.infrastructure.cluster.x-k8s.io",
                "removes version v1beta2, which is still in status.storedVersions",
            ],
        },
        Hostile {
            what: "an alias bomb",
            configmap: with_components(AWS_CM, &alias_bomb),
            reason: "InvalidProviderManifests",
            drift: false,
            expect: &[
                "openshift-cluster-api/aws",
                "over budget",
                "YAML nodes added by aliases",
            ],
        },
    ]
}

/// (uid, generation) of every Deployment in the namespace.
async fn deployments(client: &Client) -> Vec<(String, String, i64)> {
    let api: Api<Deployment> = Api::namespaced(client.clone(), NS);
    let mut out: Vec<(String, String, i64)> = api
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|d| {
            (
                d.metadata.name.unwrap_or_default(),
                d.metadata.uid.unwrap_or_default(),
                d.metadata.generation.unwrap_or_default(),
            )
        })
        .collect();
    out.sort();
    out
}

/// Waits until the reference's installer controller reports success (`Progressing=False`,
/// `Available=True`, both `AsExpected`); its `Available`.
async fn installer_controller_done(client: &Client) -> Cond {
    eventually(
        RECONCILES,
        "InstallerController Progressing=False, Available=True",
        || async {
            let s = co_status(client).await?;
            let p = condition(&s, "InstallerControllerProgressing")?;
            let a = condition(&s, "InstallerControllerAvailable")?;
            (p.status == "False"
                && p.reason == "AsExpected"
                && a.status == "True"
                && a.reason == "AsExpected")
                .then_some(a)
        },
    )
    .await
}

/// How long a failure persists before it degrades the operator (the installer's `DEGRADED_AFTER`,
/// crate-private).
const DEGRADED_AFTER: Duration = Duration::from_secs(120);
/// A few reconciles of core + aws on a loaded machine: the time the installer needs to notice a change.
const RECONCILES: Duration = Duration::from_secs(180);

/// The tests the cases are dealt to (one per `share` below).
const SHARES: usize = 3;

/// Every `SHARES`-th case, from the `share`-th on.
fn share(share: usize) -> Vec<Hostile> {
    hostile_bundles()
        .into_iter()
        .skip(share)
        .step_by(SHARES)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_share_of_hostile_bundles_is_refused_whole_and_the_good_one_converges_again() {
    each_is_refused_whole_and_the_good_one_converges_again(share(0)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_second_share_of_hostile_bundles_is_refused_whole_and_the_good_one_converges_again() {
    each_is_refused_whole_and_the_good_one_converges_again(share(1)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_third_share_of_hostile_bundles_is_refused_whole_and_the_good_one_converges_again() {
    each_is_refused_whole_and_the_good_one_converges_again(share(2)).await;
}

async fn each_is_refused_whole_and_the_good_one_converges_again(bundles: Vec<Hostile>) {
    require_fixture!("transport-configmaps");
    let env = Env::on_aws(&[CORE_CM, AWS_CM]).await;
    let _installer = Running::under_release_rbac(&env, config()).await;
    wait_available(&env.admin, Duration::from_secs(240)).await;
    // The reference's per-controller pair: Available from the first success on.
    let installer_available = installer_controller_done(&env.admin).await;
    let mut running = deployments(&env.admin).await;
    assert_eq!(running.len(), 2, "core and aws: {running:?}");
    let crds = api_for(
        &env.admin,
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        None,
    )
    .await;
    let featuregates = crds
        .get("featuregates.config.openshift.io")
        .await
        .unwrap()
        .metadata
        .resource_version;

    for hostile in bundles {
        let mark = env.audit().len();
        put_configmap(&env.admin, &hostile.configmap).await;
        // A failure that persists degrades the operator, with the reason and every violation: at the
        // latest once it has failed for the installer's DEGRADED_AFTER (2 minutes), plus the reconcile
        // that sees it (tens of seconds each on a loaded 2-core machine, debug build).
        let degraded = eventually(DEGRADED_AFTER + RECONCILES, hostile.what, || async {
            let s = co_status(&env.admin).await?;
            let d = condition(&s, "Degraded")?;
            (d.status == "True").then_some(d)
        })
        .await;
        assert_eq!(
            degraded.reason, hostile.reason,
            "{}: {degraded:?}",
            hostile.what
        );
        for e in hostile.expect {
            assert!(
                degraded.message.contains(e),
                "{}: {e:?} not in {:?}",
                hostile.what,
                degraded.message
            );
        }
        // For the reference's installer controller a refusal is an error it retries: progressing,
        // and still available as before (same transition time).
        let status = co_status(&env.admin).await.unwrap();
        let progressing = condition(&status, "InstallerControllerProgressing").unwrap();
        assert_eq!(
            (progressing.status.as_str(), progressing.reason.as_str()),
            ("True", "EphemeralError"),
            "{}: {progressing:?}",
            hostile.what
        );
        assert!(
            progressing.message.contains(hostile.expect[0]),
            "{}: {progressing:?}",
            hostile.what
        );
        assert_eq!(
            condition(&status, "InstallerControllerAvailable"),
            Some(installer_available.clone()),
            "{}",
            hostile.what
        );

        if hostile.drift {
            // The running version is still reconciled: its deleted Deployment comes back.
            let api: Api<Deployment> = Api::namespaced(env.admin.clone(), NS);
            let old = api.get(CAPA).await.unwrap().metadata.uid;
            api.delete(CAPA, &Default::default()).await.unwrap();
            eventually(
                Duration::from_secs(120),
                "capa restored and Available",
                || async {
                    let d = api.get_opt(CAPA).await.ok()??;
                    let available = d
                        .status?
                        .conditions?
                        .into_iter()
                        .any(|c| c.type_ == "Available" && c.status == "True");
                    (d.metadata.uid != old && available).then_some(())
                },
            )
            .await;
            // Serving again: Available comes back once the restored Deployment is (the refusal stays in
            // Degraded).
            eventually(RECONCILES, "aws serving again", || async {
                let s = co_status(&env.admin).await?;
                let available = condition(&s, "Available")?;
                let degraded = condition(&s, "Degraded")?;
                (available.status == "True" && degraded.reason == hostile.reason).then_some(())
            })
            .await;
            running = deployments(&env.admin).await;
        }
        // Nothing of it was written: the installer wrote only its status, Events and its own record
        // (and, above, the restored Deployment of the running version).
        let writes: Vec<String> = installer_writes(&env.audit()[mark..], None)
            .iter()
            .map(describe)
            .filter(|w| {
                let restored = hostile.drift && w.contains(&format!("deployments {NS}/{CAPA}"));
                !restored
                    && !w.contains("config.openshift.io/clusteroperators")
                    && !w.contains("/events ")
                    && !w.contains(&format!(
                        "configmaps {INSTALLER_NS}/capi-installer-inventory"
                    ))
            })
            .collect();
        assert!(writes.is_empty(), "{}: wrote {writes:?}", hostile.what);
        // The previous version (and core) keep running, untouched.
        assert_eq!(deployments(&env.admin).await, running, "{}", hostile.what);
        assert!(
            crds.get_opt("awswidgets.infrastructure.cluster.x-k8s.io")
                .await
                .unwrap()
                .is_none(),
            "{}: a CRD of the refused version exists",
            hostile.what
        );
        assert_eq!(
            crds.get("featuregates.config.openshift.io")
                .await
                .unwrap()
                .metadata
                .resource_version,
            featuregates,
            "{}: the payload CRD changed",
            hostile.what
        );
        // The previous version serves: without drift, Available never left True. After the drift
        // above, "serving again" may have read the status from before the installer saw the deleted
        // Deployment, and the report of the restored one's first unavailable moment
        // (ProviderUnavailable) can come after it: then Available must come back.
        let available = if hostile.drift {
            eventually(
                RECONCILES,
                "aws serving again after the restore",
                || async {
                    let available = condition(&co_status(&env.admin).await?, "Available")?;
                    (available.status == "True").then_some(available)
                },
            )
            .await
        } else {
            condition(&co_status(&env.admin).await.unwrap(), "Available").unwrap()
        };
        assert_eq!(
            available.status, "True",
            "{}: the previous aws version still serves: {available:?}",
            hostile.what
        );

        // The good bundle converges again, without a restart.
        put_configmap(&env.admin, &fixture_configmap(AWS_CM)).await;
        wait_available(&env.admin, RECONCILES).await;
        assert_eq!(
            installer_controller_done(&env.admin).await,
            installer_available,
            "{}: Available never left True",
            hostile.what
        );
    }
    // The policy refused everything before the API server had to: no request of the installer was
    // denied under its RBAC.
    let denied = installer_denials(&env.audit());
    assert!(denied.is_empty(), "denied to the installer: {denied:?}");
}
