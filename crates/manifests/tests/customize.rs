//! The per-kind customizations (ref §1.1–§1.2, §6) on small hand-written inputs.

use capi_manifests::customize::{Customized, Flavor, customize};
use capi_manifests::yaml::parse_objects;
use capi_manifests::{Error, ObjectKey, Provider, ProviderType};
use serde_json::{Value, json};

const NS: &str = "openshift-cluster-api";

const AWS_CLUSTER_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: awsclusters.infrastructure.cluster.x-k8s.io
spec:
  group: infrastructure.cluster.x-k8s.io
  names: {kind: AWSCluster, plural: awsclusters, singular: awscluster}
  scope: Namespaced
"#;

fn infra(name: &str) -> Provider {
    Provider::new(name, ProviderType::Infrastructure, "v1.2.3").unwrap()
}

fn crd_for(name: &str) -> String {
    let kind = format!("{}Cluster", name.to_uppercase());
    let lower = kind.to_lowercase();
    format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: {lower}s.infrastructure.cluster.x-k8s.io\nspec:\n  group: infrastructure.cluster.x-k8s.io\n  names: {{kind: {kind}, plural: {lower}s}}\n"
    )
}

/// Runs the customization for provider `aws` on `yaml` plus its InfraCluster CRD.
fn run(yaml: &str) -> Result<Customized, Error> {
    run_as(
        &infra("aws"),
        Flavor::Generic,
        &format!("{AWS_CLUSTER_CRD}---\n{yaml}"),
    )
}

fn run_as(p: &Provider, flavor: Flavor, yaml: &str) -> Result<Customized, Error> {
    customize(p, flavor, parse_objects("test.yaml", yaml)?)
}

fn find<'a>(c: &'a Customized, kind: &str, name: &str) -> &'a Value {
    c.objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("{kind} {name} not in output"))
}

fn openshift_annotations() -> Value {
    json!({
        "exclude.release.openshift.io/internal-openshift-hosted": "true",
        "include.release.openshift.io/self-managed-high-availability": "true",
        "include.release.openshift.io/single-node-developer": "true",
        "release.openshift.io/feature-set": "CustomNoUpgrade,TechPreviewNoUpgrade",
    })
}

#[test]
fn namespaces_rewritten_only_for_namespaced_kinds_and_labels_everywhere() {
    let c = run(r#"
apiVersion: v1
kind: ServiceAccount
metadata: {name: sa, namespace: capa-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: cr, namespace: capa-system, labels: {keep: me}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm, namespace: elsewhere}
data: {a: b}
"#)
    .unwrap();
    let sa = find(&c, "ServiceAccount", "sa");
    assert_eq!(sa["metadata"]["namespace"], NS);
    let cr = find(&c, "ClusterRole", "cr");
    assert!(cr["metadata"].get("namespace").is_none());
    assert_eq!(
        cr["metadata"]["labels"],
        json!({"keep": "me", "cluster.x-k8s.io/provider": "infrastructure-aws", "clusterctl.cluster.x-k8s.io": ""})
    );
    let crd = find(
        &c,
        "CustomResourceDefinition",
        "awsclusters.infrastructure.cluster.x-k8s.io",
    );
    assert!(crd["metadata"].get("namespace").is_none());
    // ConfigMaps pass through: namespace and labels (clusterctl) but no annotations.
    let cm = find(&c, "ConfigMap", "cm");
    assert_eq!(cm["metadata"]["namespace"], NS);
    assert_eq!(cm["data"], json!({"a": "b"}));
    assert!(cm["metadata"].get("annotations").is_none());

    let core = Provider::new("cluster-api", ProviderType::Core, "1.0.0").unwrap();
    let c = run_as(
        &core,
        Flavor::Generic,
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: clusters.cluster.x-k8s.io}\nspec: {group: cluster.x-k8s.io, names: {kind: Cluster, plural: clusters}}\n",
    )
    .unwrap();
    assert_eq!(
        c.objects[0]["metadata"]["labels"]["cluster.x-k8s.io/provider"],
        "cluster-api"
    );
}

#[test]
fn scope_of_custom_kinds_comes_from_the_input_crds() {
    // Instances of custom kinds are dropped by the allow-list, but the duplicate check applies
    // the namespace rewrite and must know which custom kinds are cluster-scoped.
    let identity = |ns: &str| {
        format!(
            "apiVersion: infrastructure.cluster.x-k8s.io/v1beta2\nkind: AWSClusterControllerIdentity\nmetadata: {{name: default, namespace: {ns}}}\n"
        )
    };
    let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: awsclustercontrolleridentities.infrastructure.cluster.x-k8s.io}\nspec: {group: infrastructure.cluster.x-k8s.io, scope: Cluster, names: {kind: AWSClusterControllerIdentity, plural: awsclustercontrolleridentities}}\n";
    let c = run(&format!("{crd}---\n{}", identity("capa-system"))).unwrap();
    assert_eq!(c.dropped.len(), 1, "not in the allow-list");
    // Without the CRD the kind counts as namespaced: both land in openshift-cluster-api. With
    // it, the kind is cluster-scoped: namespaces are meaningless, both are the same object.
    let err = run(&format!("{}---\n{}", identity("a"), identity("b")))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("duplicate object AWSClusterControllerIdentity openshift-cluster-api/default"),
        "{err}"
    );
    let err = run(&format!(
        "{crd}---\n{}---\n{}",
        identity("a"),
        identity("b")
    ))
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("duplicate object AWSClusterControllerIdentity default:"),
        "{err}"
    );
}

#[test]
fn rbac_subjects_and_annotations() {
    let c = run(r#"
apiVersion: v1
kind: ServiceAccount
metadata:
  name: capa-controller-manager
  namespace: capa-system
  annotations: {eks.amazonaws.com/role-arn: "arn:aws:iam::1:role/x"}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: crb}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cr}
subjects:
- {kind: ServiceAccount, name: capa-controller-manager, namespace: capa-system}
- {kind: ServiceAccount, name: other, namespace: kube-system}
- {kind: User, name: someone}
"#)
    .unwrap();
    let sa = find(&c, "ServiceAccount", "capa-controller-manager");
    assert_eq!(sa["metadata"]["annotations"], openshift_annotations());
    let crb = find(&c, "ClusterRoleBinding", "crb");
    assert_eq!(crb["subjects"][0]["namespace"], NS);
    assert_eq!(
        crb["subjects"][1]["namespace"], "kube-system",
        "foreign SA stays"
    );
    assert!(crb["subjects"][2].get("namespace").is_none());
    assert_eq!(crb["metadata"]["annotations"], openshift_annotations());
}

#[test]
fn kind_allow_list() {
    let c = run(r#"
apiVersion: v1
kind: Namespace
metadata: {name: capa-system}
---
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: capa-system}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ds, namespace: capa-system}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: pdb, namespace: capa-system}
---
apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {name: iss, namespace: capa-system}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: own-vap}
spec: {failurePolicy: Ignore}
"#)
    .unwrap();
    let dropped: Vec<String> = c.dropped.iter().map(|d| d.id.to_string()).collect();
    assert_eq!(
        dropped,
        [
            "Namespace capa-system",
            "Secret capa-system/creds",
            "DaemonSet capa-system/ds",
            "PodDisruptionBudget capa-system/pdb",
            "Issuer capa-system/iss"
        ]
    );
    assert!(c.dropped[2].reason.contains("allow-list"));
    assert_eq!(c.dropped[2].location.index, 3);
    // CRD, the provider's own VAP, and the generated protection policy + binding.
    let kinds: Vec<&str> = c
        .objects
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "CustomResourceDefinition",
            "ValidatingAdmissionPolicy",
            "ValidatingAdmissionPolicy",
            "ValidatingAdmissionPolicyBinding"
        ]
    );
    let vap = find(&c, "ValidatingAdmissionPolicy", "own-vap");
    assert_eq!(vap["spec"], json!({"failurePolicy": "Ignore"}));
    assert!(vap["metadata"].get("annotations").is_none());
}

const CERT_SETUP: &str = r#"
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: capa-serving-cert, namespace: capa-system}
spec: {secretName: capa-webhook-service-cert}
---
apiVersion: v1
kind: Service
metadata: {name: capa-webhook-service, namespace: capa-system, annotations: {keep: me}}
spec: {ports: [{port: 443}]}
---
apiVersion: v1
kind: Service
metadata: {name: capa-metrics-service, namespace: capa-system}
"#;

#[test]
fn cert_manager_becomes_service_ca() {
    let c = run(&format!(
        r#"{CERT_SETUP}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: vwc
  annotations: {{cert-manager.io/inject-ca-from: capa-system/capa-serving-cert}}
webhooks:
- name: a.example
  clientConfig: {{service: {{name: capa-webhook-service, namespace: capa-system, path: /validate}}}}
- name: b.example
  clientConfig: {{service: {{name: capa-webhook-service, namespace: capa-system, path: /validate2}}}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: awsmachines.infrastructure.cluster.x-k8s.io
  annotations: {{cert-manager.io/inject-ca-from: capa-system/capa-serving-cert}}
spec:
  group: infrastructure.cluster.x-k8s.io
  names: {{kind: AWSMachine, plural: awsmachines}}
  conversion:
    strategy: Webhook
    webhook:
      clientConfig: {{service: {{name: capa-webhook-service, namespace: capa-system, path: /convert}}}}
"#
    ))
    .unwrap();
    let vwc = find(&c, "ValidatingWebhookConfiguration", "vwc");
    assert_eq!(
        vwc["metadata"]["annotations"],
        json!({"service.beta.openshift.io/inject-cabundle": "true"}),
        "webhook configurations get no release annotations"
    );
    for wh in vwc["webhooks"].as_array().unwrap() {
        assert_eq!(wh["clientConfig"]["service"]["namespace"], NS);
    }
    let crd = find(
        &c,
        "CustomResourceDefinition",
        "awsmachines.infrastructure.cluster.x-k8s.io",
    );
    let mut want = openshift_annotations();
    want["service.beta.openshift.io/inject-cabundle"] = json!("true");
    assert_eq!(crd["metadata"]["annotations"], want);
    assert_eq!(
        crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["namespace"],
        NS
    );
    let svc = find(&c, "Service", "capa-webhook-service");
    let mut want = openshift_annotations();
    want["keep"] = json!("me");
    want["service.beta.openshift.io/serving-cert-secret-name"] = json!("capa-webhook-service-cert");
    assert_eq!(svc["metadata"]["annotations"], want);
    let metrics = find(&c, "Service", "capa-metrics-service");
    assert_eq!(metrics["metadata"]["annotations"], openshift_annotations());
}

#[test]
fn unknown_certificate_is_an_error_naming_object_and_certificate() {
    let err = run(r#"
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: mwc
  annotations: {cert-manager.io/inject-ca-from: capa-system/nope}
webhooks:
- name: a.example
  clientConfig: {service: {name: svc, namespace: capa-system}}
"#)
    .unwrap_err()
    .to_string();
    assert!(err.contains("MutatingWebhookConfiguration mwc"), "{err}");
    assert!(err.contains("capa-system/nope"), "{err}");
    assert!(err.contains("test.yaml: document 1"), "{err}");
    assert!(err.contains("cert-manager → service-ca"), "{err}");
}

#[test]
fn certificate_without_secret_name_is_an_error() {
    let err = run(r#"
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: c, namespace: capa-system}
spec: {dnsNames: [x]}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: vwc
  annotations: {cert-manager.io/inject-ca-from: capa-system/c}
webhooks:
- name: a.example
  clientConfig: {service: {name: svc, namespace: capa-system}}
"#)
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("Certificate capa-system/c has no spec.secretName"),
        "{err}"
    );
    assert!(err.contains("ValidatingWebhookConfiguration vwc"), "{err}");
}

#[test]
fn crd_with_conversion_but_no_webhook_is_fine() {
    let c = run(r#"
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: capa-serving-cert, namespace: capa-system}
spec: {secretName: s}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: awsmachines.infrastructure.cluster.x-k8s.io
  annotations: {cert-manager.io/inject-ca-from: capa-system/capa-serving-cert}
spec:
  group: infrastructure.cluster.x-k8s.io
  names: {kind: AWSMachine, plural: awsmachines}
  conversion: {strategy: None}
"#)
    .unwrap();
    let crd = find(
        &c,
        "CustomResourceDefinition",
        "awsmachines.infrastructure.cluster.x-k8s.io",
    );
    assert_eq!(crd["spec"]["conversion"], json!({"strategy": "None"}));
    assert_eq!(
        crd["metadata"]["annotations"]["service.beta.openshift.io/inject-cabundle"],
        "true"
    );
}

#[test]
fn webhook_whose_service_has_no_certificate_is_an_error() {
    // No inject-ca-from: nothing would issue the Service's serving certificate.
    let err = run(r#"
apiVersion: v1
kind: Service
metadata: {name: svc, namespace: capa-system}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: vwc}
webhooks:
- name: a.example
  clientConfig: {service: {name: svc, namespace: capa-system}}
"#)
    .unwrap_err()
    .to_string();
    assert!(err.contains("ValidatingWebhookConfiguration vwc"), "{err}");
    assert!(err.contains("Service svc"), "{err}");
    assert!(
        err.contains(
            "neither cert-manager.io/inject-ca-from nor service.beta.openshift.io/inject-cabundle"
        ),
        "{err}"
    );

    // A webhook that brings its own caBundle is the provider's business.
    run(r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: vwc}
webhooks:
- name: a.example
  clientConfig: {caBundle: Zm9v, service: {name: svc, namespace: capa-system}}
"#)
    .unwrap();

    // The Certificate exists but the webhook's Service is not among the components.
    let err = run(r#"
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: c, namespace: capa-system}
spec: {secretName: s}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: vwc, annotations: {cert-manager.io/inject-ca-from: capa-system/c}}
webhooks:
- name: a.example
  clientConfig: {service: {name: missing-svc, namespace: capa-system}}
"#)
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("Service openshift-cluster-api/missing-svc"),
        "{err}"
    );
    assert!(err.contains("not part of the components"), "{err}");
}

#[test]
fn service_ca_ready_kustomization_is_accepted_as_is() {
    // As OpenStack's kustomization renders it: no cert-manager objects, webhook configurations
    // and CRDs already annotated for service-ca, the Service already asking for its certificate.
    let input = r#"
apiVersion: v1
kind: Service
metadata:
  name: capo-webhook-service
  namespace: capo-system
  annotations: {service.beta.openshift.io/serving-cert-secret-name: capo-webhook-service-cert}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: capo-validating-webhook-configuration
  annotations: {service.beta.openshift.io/inject-cabundle: "true"}
webhooks:
- name: a.example
  clientConfig: {service: {name: capo-webhook-service, namespace: capo-system, path: /validate}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: awsmachines.infrastructure.cluster.x-k8s.io
  annotations: {service.beta.openshift.io/inject-cabundle: "true"}
spec:
  group: infrastructure.cluster.x-k8s.io
  names: {kind: AWSMachine, plural: awsmachines}
  conversion:
    strategy: Webhook
    webhook:
      clientConfig: {service: {name: capo-webhook-service, namespace: capo-system, path: /convert}}
"#;
    let c = run(input).unwrap();
    let vwc = find(
        &c,
        "ValidatingWebhookConfiguration",
        "capo-validating-webhook-configuration",
    );
    assert_eq!(
        vwc["metadata"]["annotations"],
        json!({"service.beta.openshift.io/inject-cabundle": "true"})
    );
    assert_eq!(
        vwc["webhooks"][0]["clientConfig"]["service"]["namespace"],
        NS
    );
    let svc = find(&c, "Service", "capo-webhook-service");
    let mut want = openshift_annotations();
    want["service.beta.openshift.io/serving-cert-secret-name"] = json!("capo-webhook-service-cert");
    assert_eq!(svc["metadata"]["annotations"], want);

    // The same input whose Service does not ask service-ca for a certificate: the webhook
    // could never serve TLS.
    let without = input.replace(
        "  annotations: {service.beta.openshift.io/serving-cert-secret-name: capo-webhook-service-cert}\n",
        "",
    );
    assert_ne!(without, input);
    let err = run(&without).unwrap_err().to_string();
    assert!(
        err.contains("ValidatingWebhookConfiguration capo-validating-webhook-configuration"),
        "{err}"
    );
    assert!(
        err.contains("Service openshift-cluster-api/capo-webhook-service"),
        "{err}"
    );
    assert!(
        err.contains("service.beta.openshift.io/serving-cert-secret-name"),
        "{err}"
    );
}

#[test]
fn placeholder_ca_bundle_with_inject_ca_from_still_gets_a_serving_certificate() {
    let c = run(&format!(
        r#"{CERT_SETUP}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: mwc
  annotations: {{cert-manager.io/inject-ca-from: capa-system/capa-serving-cert}}
webhooks:
- name: a.example
  clientConfig: {{caBundle: Cg==, service: {{name: capa-webhook-service, namespace: capa-system}}}}
"#
    ))
    .unwrap();
    let svc = find(&c, "Service", "capa-webhook-service");
    assert_eq!(
        svc["metadata"]["annotations"]["service.beta.openshift.io/serving-cert-secret-name"],
        "capa-webhook-service-cert"
    );
    let mwc = find(&c, "MutatingWebhookConfiguration", "mwc");
    assert_eq!(
        mwc["metadata"]["annotations"],
        json!({"service.beta.openshift.io/inject-cabundle": "true"})
    );
}

const DEPLOYMENT: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: capa-controller-manager, namespace: capa-system}
spec:
  template:
    metadata: {labels: {app: x}}
    spec:
      containers:
      - name: manager
        image: gcr.io/k8s-staging-cluster-api-aws/cluster-api-aws-controller:latest
        args: ["--provider-id-fmt=${PROVIDER_ID_FORMAT:=v1}", "--v=2"]
        resources:
          limits: {cpu: "1", memory: 1Gi}
          requests: {cpu: 100m}
        env:
        - {name: GOOGLE_APPLICATION_CREDENTIALS, value: /home/.gcp/credentials.json}
        - name: AZURE_CLIENT_ID
          valueFrom: {secretKeyRef: {name: creds, key: AZURE_CLIENT_ID}}
        - name: OTHER
          valueFrom: {secretKeyRef: {name: creds, key: OTHER}}
      - name: kube-rbac-proxy
        image: quay.io/brancz/kube-rbac-proxy:v0.18.0
      - name: sidecar
        image: registry.ci.openshift.org/openshift:something
"#;

#[test]
fn deployment_hardening_and_images() {
    let c = run(DEPLOYMENT).unwrap();
    let d = find(&c, "Deployment", "capa-controller-manager");
    let pod = &d["spec"]["template"];
    assert_eq!(pod["spec"]["priorityClassName"], "system-cluster-critical");
    assert_eq!(
        pod["metadata"]["annotations"]["target.workload.openshift.io/management"],
        r#"{"effect": "PreferredDuringScheduling"}"#
    );
    assert_eq!(
        pod["metadata"]["labels"],
        json!({"app": "x"}),
        "template labels untouched"
    );
    let cs = pod["spec"]["containers"].as_array().unwrap();
    for c in cs {
        assert_eq!(
            c["resources"],
            json!({"requests": {"cpu": "10m", "memory": "50Mi"}})
        );
        assert_eq!(c["terminationMessagePolicy"], "FallbackToLogsOnError");
    }
    assert_eq!(cs[0]["image"], "to.be/replaced:v99");
    assert_eq!(
        cs[1]["image"],
        "registry.ci.openshift.org/openshift:kube-rbac-proxy"
    );
    assert_eq!(
        cs[2]["image"],
        "registry.ci.openshift.org/openshift:something"
    );
    // Generic flavor: no provider tweaks.
    assert_eq!(cs[0]["env"][0]["value"], "/home/.gcp/credentials.json");
    assert_eq!(
        cs[0]["args"][0],
        "--provider-id-fmt=${PROVIDER_ID_FORMAT:=v1}"
    );
    assert!(d["metadata"].get("annotations").is_none());
}

#[test]
fn provider_tweaks() {
    let container = |c: &Customized| {
        c.objects
            .iter()
            .find(|o| o["kind"] == "Deployment")
            .unwrap()["spec"]["template"]["spec"]["containers"][0]
            .clone()
    };

    let (flavor, name) = Flavor::for_cli_name("gcp");
    let c = run_as(
        &infra(name),
        flavor,
        &format!("{}---\n{DEPLOYMENT}", crd_for("gcp")),
    )
    .unwrap();
    assert_eq!(
        container(&c)["env"][0]["value"],
        "/home/.gcp/service_account.json"
    );

    let (flavor, name) = Flavor::for_cli_name("azure");
    let c = run_as(
        &infra(name),
        flavor,
        &format!("{}---\n{DEPLOYMENT}", crd_for("azure")),
    )
    .unwrap();
    let env = &container(&c)["env"];
    assert_eq!(
        env[1]["valueFrom"]["secretKeyRef"]["key"],
        "azure_client_id"
    );
    assert_eq!(env[2]["valueFrom"]["secretKeyRef"]["key"], "OTHER");

    // PowerVS: published as ibmcloud, arg rewritten, policy on the real IBMPowerVSCluster.
    let (flavor, name) = Flavor::for_cli_name("powervs");
    assert_eq!((flavor, name), (Flavor::PowerVs, "ibmcloud"));
    let crds = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: ibmpowervsclusters.infrastructure.cluster.x-k8s.io}\nspec: {group: infrastructure.cluster.x-k8s.io, names: {kind: IBMPowerVSCluster, plural: ibmpowervsclusters}}\n---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: ibmvpcclusters.infrastructure.cluster.x-k8s.io}\nspec: {group: infrastructure.cluster.x-k8s.io, names: {kind: IBMVPCCluster, plural: ibmvpcclusters}}\n";
    let c = run_as(&infra(name), flavor, &format!("{crds}---\n{DEPLOYMENT}")).unwrap();
    assert_eq!(container(&c)["args"][0], "--provider-id-fmt=v2");
    assert_eq!(container(&c)["args"][1], "--v=2");
    assert_eq!(
        c.objects[0]["metadata"]["labels"]["cluster.x-k8s.io/provider"],
        "infrastructure-ibmcloud"
    );
    assert_eq!(c.protected.plural, "ibmpowervsclusters");
    assert_eq!(
        c.protected.policy_name(),
        "openshift-cluster-api-protect-ibmpowervscluster"
    );
}

/// The provider tweaks touch the `manager` container only, as in the reference: a sidecar that
/// reads the same variable or takes the same argument keeps what its author wrote.
const TWO_CONTAINERS: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: controller-manager, namespace: provider-system}
spec:
  template:
    spec:
      containers:
      - name: manager
        image: example.com/manager:v1
        args: ["--provider-id-fmt=${PROVIDER_ID_FORMAT:=v1}"]
        env:
        - {name: GOOGLE_APPLICATION_CREDENTIALS, value: /home/.gcp/credentials.json}
        - name: AZURE_SUBSCRIPTION_ID
          valueFrom: {secretKeyRef: {name: capz-manager-bootstrap-credentials, key: subscription-id}}
        - name: AZURE_TENANT_ID
          valueFrom: {secretKeyRef: {name: capz-manager-bootstrap-credentials, key: tenant-id}}
        - {name: AZURE_CLIENT_ID, value: literal-client-id}
        - name: NODE_NAME
          valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
        resources:
          claims: [{name: gpu}]
          limits: {cpu: "2"}
      - name: sidecar
        image: example.com/sidecar:v1
        args: ["--provider-id-fmt=${PROVIDER_ID_FORMAT:=v1}"]
        env:
        - {name: GOOGLE_APPLICATION_CREDENTIALS, value: /home/.gcp/credentials.json}
        - name: AZURE_SUBSCRIPTION_ID
          valueFrom: {secretKeyRef: {name: other, key: subscription-id}}
"#;

#[test]
fn provider_tweaks_only_in_the_manager_container() {
    let containers = |cli_name: &str| {
        let (flavor, name) = Flavor::for_cli_name(cli_name);
        let crd = if cli_name == "powervs" {
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: ibmpowervsclusters.infrastructure.cluster.x-k8s.io}\nspec: {group: infrastructure.cluster.x-k8s.io, names: {kind: IBMPowerVSCluster, plural: ibmpowervsclusters}}\n".to_owned()
        } else {
            crd_for(cli_name)
        };
        let c = run_as(&infra(name), flavor, &format!("{crd}---\n{TWO_CONTAINERS}")).unwrap();
        let d = find(&c, "Deployment", "controller-manager");
        let cs = d["spec"]["template"]["spec"]["containers"].clone();
        (cs[0].clone(), cs[1].clone())
    };

    // azure: the key of each AZURE_* credential variable becomes the lower-cased variable
    // name (what the CCO Secret holds), matched by variable name, not by the old key.
    let (manager, sidecar) = containers("azure");
    let key = |c: &Value, i: usize| c["env"][i]["valueFrom"]["secretKeyRef"].clone();
    assert_eq!(
        key(&manager, 1),
        json!({"name": "capz-manager-bootstrap-credentials", "key": "azure_subscription_id"})
    );
    assert_eq!(key(&manager, 2)["key"], "azure_tenant_id");
    assert_eq!(
        manager["env"][3],
        json!({"name": "AZURE_CLIENT_ID", "value": "literal-client-id"}),
        "a literal value has no key to remap"
    );
    assert_eq!(
        manager["env"][4]["valueFrom"],
        json!({"fieldRef": {"fieldPath": "spec.nodeName"}})
    );
    assert_eq!(
        key(&sidecar, 1)["key"],
        "subscription-id",
        "sidecar untouched"
    );

    // gcp
    let (manager, sidecar) = containers("gcp");
    assert_eq!(
        manager["env"][0]["value"],
        "/home/.gcp/service_account.json"
    );
    assert_eq!(sidecar["env"][0]["value"], "/home/.gcp/credentials.json");
    assert_eq!(
        key(&manager, 1)["key"],
        "subscription-id",
        "azure rule not applied"
    );

    // powervs
    let (manager, sidecar) = containers("powervs");
    assert_eq!(manager["args"], json!(["--provider-id-fmt=v2"]));
    assert_eq!(
        sidecar["args"],
        json!(["--provider-id-fmt=${PROVIDER_ID_FORMAT:=v1}"])
    );

    // Hardening applies to every container; other `resources` fields (claims) stay.
    assert_eq!(
        manager["resources"],
        json!({"claims": [{"name": "gpu"}], "requests": {"cpu": "10m", "memory": "50Mi"}})
    );
    assert_eq!(
        sidecar["resources"],
        json!({"requests": {"cpu": "10m", "memory": "50Mi"}})
    );
}

#[test]
fn protection_policy_named_after_the_real_crd() {
    let c = run("").unwrap();
    let vap = find(
        &c,
        "ValidatingAdmissionPolicy",
        "openshift-cluster-api-protect-awscluster",
    );
    assert_eq!(
        vap["spec"]["matchConstraints"]["resourceRules"][0],
        json!({"apiGroups": ["infrastructure.cluster.x-k8s.io"], "apiVersions": ["*"], "operations": ["DELETE"], "resources": ["awsclusters"]})
    );
    let vapb = find(
        &c,
        "ValidatingAdmissionPolicyBinding",
        "openshift-cluster-api-protect-awscluster",
    );
    assert_eq!(
        vapb["spec"]["policyName"],
        "openshift-cluster-api-protect-awscluster"
    );
    assert_eq!(
        vapb["spec"]["paramRef"],
        json!({"name": "cluster", "parameterNotFoundAction": "Deny"})
    );
    assert!(vap["metadata"].get("labels").is_none());

    // Core protects the Cluster of cluster.x-k8s.io, never "cluster-apiclusters".
    let core = Provider::new("cluster-api", ProviderType::Core, "1.0.0").unwrap();
    let c = run_as(&core, Flavor::Generic, "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: clusters.cluster.x-k8s.io}\nspec: {group: cluster.x-k8s.io, names: {kind: Cluster, plural: clusters}}\n").unwrap();
    let vap = find(
        &c,
        "ValidatingAdmissionPolicy",
        "openshift-cluster-api-protect-cluster",
    );
    assert_eq!(
        vap["spec"]["matchConstraints"]["resourceRules"][0]["apiGroups"],
        json!(["cluster.x-k8s.io"])
    );
    assert_eq!(
        vap["spec"]["matchConstraints"]["resourceRules"][0]["resources"],
        json!(["clusters"])
    );

    // No InfraCluster CRD: an error rather than a policy that matches nothing.
    let err = run_as(
        &infra("gcp"),
        Flavor::Gcp,
        "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: x}\n",
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("InfraCluster protection"), "{err}");
    assert!(err.contains("gcpCluster, ignoring case"), "{err}");
    let err = run_as(&core, Flavor::Generic, "").unwrap_err().to_string();
    assert!(err.contains("clusters.cluster.x-k8s.io"), "{err}");
}

#[test]
fn duplicate_objects_are_errors_naming_both_documents() {
    let svc = "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: a}\n";
    let err = run(&format!("{svc}---\n{svc}")).unwrap_err();
    match &err {
        Error::DuplicateObject {
            object,
            first,
            second,
        } => {
            assert_eq!(
                **object,
                ObjectKey::from_api_version("v1", "Service", Some("a"), "s")
            );
            assert_eq!((first.index, second.index), (1, 2));
        }
        other => panic!("{other}"),
    }
    // Distinct before the namespace rewrite, the same object after it.
    let other_ns = "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: b}\n";
    let err = run(&format!("{svc}---\n{other_ns}"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("duplicate object Service openshift-cluster-api/s"),
        "{err}"
    );
    assert!(
        err.contains("document 1") && err.contains("document 2"),
        "{err}"
    );
}
