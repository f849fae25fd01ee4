//! The release manifests and the Containerfile, read as the release tooling reads them. What the test
//! control plane can serve is applied with strict validation in `process.rs`; this file checks what it
//! cannot (the ServiceMonitor: cluster monitoring's CRD is not there) and the wiring between files that
//! no API server validates: Service ↔ ServiceMonitor ↔ Deployment ↔ serving-certificate Secret, who may
//! scrape, the namespace layout (the installer's objects in its namespace, the manifests of removal of
//! the earlier layout), and how the image ships the manifests.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use capi_manifests::{INSTALLER_NAMESPACE, TARGET_NAMESPACE};
use serde_json::Value;

/// The namespace a component of `manifests/` runs in.
fn namespace_of(component: &str) -> &'static str {
    match component {
        "capi-installer" => INSTALLER_NAMESPACE,
        _ => TARGET_NAMESPACE,
    }
}

fn is_removal(doc: &Value) -> bool {
    doc["metadata"]["annotations"]["release.openshift.io/delete"] == "true"
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every document of `manifests/*.yaml`, with its file name (manifests of removal included).
fn all_manifests() -> Vec<(String, Value)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo().join("manifests"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&file).unwrap();
        for doc in capi_manifests::yaml::parse_documents(&name, &text)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
        {
            out.push((name.clone(), doc.value));
        }
    }
    out
}

/// The documents of what the release applies (manifests of removal left out).
fn manifests() -> Vec<(String, Value)> {
    all_manifests()
        .into_iter()
        .filter(|(_, d)| !is_removal(d))
        .collect()
}

/// Where the installer's Deployment is defined: not a release manifest, the template the deployer
/// compiles in and applies.
const INSTALLER_DEPLOYMENT: &str = "crates/deployer/src/deployment.yaml";

/// What runs in the cluster: the release manifests ([`manifests`]) and the installer's Deployment,
/// which the deployer applies from [`INSTALLER_DEPLOYMENT`].
fn running() -> Vec<(String, Value)> {
    let mut docs = manifests();
    let text = std::fs::read_to_string(repo().join(INSTALLER_DEPLOYMENT)).unwrap();
    let template = capi_manifests::yaml::parse_documents(INSTALLER_DEPLOYMENT, &text).unwrap();
    assert_eq!(template.len(), 1, "{INSTALLER_DEPLOYMENT}: one document");
    docs.extend(
        template
            .into_iter()
            .map(|d| (INSTALLER_DEPLOYMENT.to_string(), d.value)),
    );
    docs
}

fn find<'a>(docs: &'a [(String, Value)], kind: &str, name: &str) -> &'a (String, Value) {
    docs.iter()
        .find(|(_, d)| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} in manifests/"))
}

fn keys(v: &Value) -> BTreeSet<&str> {
    v.as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

/// Fields of prometheus-operator's `monitoring.coreos.com/v1` types that we may use: a misspelt field
/// would be dropped silently by the API server's pruning, and the scrape would quietly lose its TLS or
/// token.
const SERVICE_MONITOR_SPEC: &[&str] = &[
    "endpoints",
    "selector",
    "namespaceSelector",
    "jobLabel",
    "targetLabels",
    "podTargetLabels",
    "sampleLimit",
];
const ENDPOINT: &[&str] = &[
    "port",
    "targetPort",
    "path",
    "scheme",
    "params",
    "interval",
    "scrapeTimeout",
    "tlsConfig",
    "bearerTokenFile",
    "authorization",
    "honorLabels",
    "honorTimestamps",
    "metricRelabelings",
    "relabelings",
];
const TLS_CONFIG: &[&str] = &[
    "caFile",
    "certFile",
    "keyFile",
    "serverName",
    "insecureSkipVerify",
    "ca",
    "cert",
    "keySecret",
];

#[test]
fn cluster_monitoring_can_scrape_the_installer_over_tls() {
    scrape_wiring("capi-installer");
}

#[test]
fn cluster_monitoring_can_scrape_the_controllers_pod_over_tls() {
    scrape_wiring("capi-controllers");
}

/// ServiceMonitor `<component>` → Service `<component>-metrics` → Deployment `<component>`.
fn scrape_wiring(component: &str) {
    let docs = running();
    let (file, monitor) = find(&docs, "ServiceMonitor", component);
    assert!(
        file.starts_with("0000_90_"),
        "{file}: applied after cluster monitoring (and its CRD) exists"
    );
    assert_eq!(monitor["apiVersion"], "monitoring.coreos.com/v1");
    let ns = namespace_of(component);
    assert_eq!(monitor["metadata"]["namespace"], ns);
    let spec = &monitor["spec"];
    let unknown: Vec<&str> = keys(spec)
        .into_iter()
        .filter(|k| !SERVICE_MONITOR_SPEC.contains(k))
        .collect();
    assert!(
        unknown.is_empty(),
        "unknown ServiceMonitor fields {unknown:?}"
    );
    let endpoints = spec["endpoints"].as_array().unwrap();
    assert_eq!(endpoints.len(), 1);
    let endpoint = &endpoints[0];
    let unknown: Vec<&str> = keys(endpoint)
        .into_iter()
        .filter(|k| !ENDPOINT.contains(k))
        .collect();
    assert!(unknown.is_empty(), "unknown endpoint fields {unknown:?}");
    let tls = &endpoint["tlsConfig"];
    let unknown: Vec<&str> = keys(tls)
        .into_iter()
        .filter(|k| !TLS_CONFIG.contains(k))
        .collect();
    assert!(unknown.is_empty(), "unknown tlsConfig fields {unknown:?}");

    // Over TLS, verified against the service-ca bundle, with Prometheus' own token.
    assert_eq!(endpoint["scheme"], "https");
    assert_eq!(endpoint["path"], "/metrics");
    assert_eq!(
        endpoint["bearerTokenFile"],
        "/var/run/secrets/kubernetes.io/serviceaccount/token"
    );
    assert_eq!(
        tls["caFile"],
        "/etc/prometheus/configmaps/serving-certs-ca-bundle/service-ca.crt"
    );
    assert!(tls.get("insecureSkipVerify").is_none());

    // The Service it selects: same namespace, labels match, the named port exists, and the certificate
    // service-ca issues for it is for the name the ServiceMonitor verifies.
    let (_, service) = find(&docs, "Service", &format!("{component}-metrics"));
    assert_eq!(service["metadata"]["namespace"], ns);
    assert_eq!(spec["namespaceSelector"]["matchNames"][0], ns);
    for (k, v) in spec["selector"]["matchLabels"].as_object().unwrap() {
        assert_eq!(&service["metadata"]["labels"][k], v, "selector {k}");
    }
    assert_eq!(
        tls["serverName"],
        format!("{component}-metrics.{ns}.svc"),
        "service-ca issues for <service>.<namespace>.svc"
    );
    let port = service["spec"]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == endpoint["port"])
        .expect("the ServiceMonitor's port is a named port of the Service");
    let secret =
        service["metadata"]["annotations"]["service.beta.openshift.io/serving-cert-secret-name"]
            .as_str()
            .expect("service-ca serving certificate annotation");

    // The Deployment: the Service selects its pods, its container exposes the target port, mounts the
    // serving certificate Secret, and serves /metrics from those files on that port.
    let (_, deployment) = find(&docs, "Deployment", component);
    assert_eq!(deployment["metadata"]["namespace"], ns);
    let pod = &deployment["spec"]["template"];
    for (k, v) in service["spec"]["selector"].as_object().unwrap() {
        assert_eq!(&pod["metadata"]["labels"][k], v, "Service selector {k}");
    }
    let container = &pod["spec"]["containers"][0];
    let container_port = container["ports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == port["targetPort"])
        .expect("the Service's targetPort is a named container port");
    let volume = pod["spec"]["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["secret"]["secretName"] == secret)
        .expect("the serving certificate Secret is a volume");
    let mount = container["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == volume["name"])
        .expect("the serving certificate is mounted");
    let dir = mount["mountPath"].as_str().unwrap();
    let args = strs(&container["args"]);
    for wanted in [
        format!("--metrics-cert-file={dir}/tls.crt"),
        format!("--metrics-key-file={dir}/tls.key"),
        format!("--metrics-addr=0.0.0.0:{}", container_port["containerPort"]),
    ] {
        assert!(args.contains(&wanted.as_str()), "{wanted} not in {args:?}");
    }
    // Probes stay on the plain health port and wait longer than a starved process stalls (the default
    // 1 s had the kubelet restart healthy replicas on a busy node); the grace period holds the 30 s a
    // pass is given after SIGTERM and the Lease's release after it.
    for probe in ["livenessProbe", "readinessProbe"] {
        assert_ne!(container[probe]["httpGet"]["port"], port["targetPort"]);
        assert!(
            container[probe]["timeoutSeconds"].as_u64() >= Some(5),
            "{component}'s {probe} waits at least 5 s: {}",
            container[probe]
        );
    }
    assert_eq!(
        pod["spec"]["terminationGracePeriodSeconds"], 60,
        "{component}"
    );
    // Liveness counts only once the process answers: a starved replica took 37 s to start.
    let startup = &container["startupProbe"];
    assert_eq!(startup["httpGet"], container["livenessProbe"]["httpGet"]);
    let budget =
        startup["periodSeconds"].as_u64().unwrap() * startup["failureThreshold"].as_u64().unwrap();
    assert!(
        budget >= 300,
        "{component}'s startup probe gives {budget} s"
    );

    // The namespace is monitored by cluster monitoring.
    let (_, namespace) = find(&docs, "Namespace", ns);
    assert_eq!(
        namespace["metadata"]["labels"]["openshift.io/cluster-monitoring"],
        "true"
    );
}

#[test]
fn prometheus_may_discover_and_read_metrics_and_the_installer_may_check_it() {
    let docs = manifests();
    let prometheus = serde_json::json!({
        "kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": "openshift-monitoring"});
    let binds = |kind: &str, name: &str, role_kind: &str| {
        let (_, b) = find(&docs, kind, name);
        assert_eq!(b["roleRef"]["kind"], role_kind);
        (
            b["roleRef"]["name"].as_str().unwrap().to_string(),
            b["subjects"].clone(),
        )
    };
    let rules = |kind: &str, name: &str| find(&docs, kind, name).1["rules"].clone();

    // Discovery of the Service's endpoints, in each component's namespace.
    for component in ["capi-installer", "capi-controllers"] {
        let name = format!("{component}-prometheus");
        let (file, binding) = find(&docs, "RoleBinding", &name);
        assert_eq!(
            binding["metadata"]["namespace"],
            namespace_of(component),
            "{file}"
        );
        let (role, subjects) = binds("RoleBinding", &name, "Role");
        assert!(
            subjects.as_array().unwrap().contains(&prometheus),
            "{subjects}"
        );
        let (_, role) = find(&docs, "Role", &role);
        assert_eq!(role["metadata"]["namespace"], namespace_of(component));
        let discovery = &role["rules"];
        assert!(
            discovery.as_array().unwrap().iter().any(|r| {
                r["resources"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|x| x == "endpoints")
                    && r["verbs"].as_array().unwrap().iter().any(|v| v == "list")
            }),
            "{discovery}"
        );
    }

    // `get` on /metrics, which the installer checks with a SubjectAccessReview.
    let (role, subjects) = binds(
        "ClusterRoleBinding",
        "capi-installer-metrics-reader",
        "ClusterRole",
    );
    assert!(
        subjects.as_array().unwrap().contains(&prometheus),
        "{subjects}"
    );
    assert_eq!(
        rules("ClusterRole", &role),
        serde_json::json!([{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}])
    );

    // The installer and the controllers pod may create the reviews.
    for component in ["capi-installer", "capi-controllers"] {
        let (role, subjects) = binds(
            "ClusterRoleBinding",
            &format!("{component}-metrics-auth"),
            "ClusterRole",
        );
        assert_eq!(
            subjects,
            serde_json::json!([{"kind": "ServiceAccount", "name": component,
                "namespace": namespace_of(component)}])
        );
        let auth = rules("ClusterRole", &role);
        for (group, resource) in [
            ("authentication.k8s.io", "tokenreviews"),
            ("authorization.k8s.io", "subjectaccessreviews"),
        ] {
            assert!(
                auth.as_array()
                    .unwrap()
                    .iter()
                    .any(|r| r["apiGroups"][0] == group
                        && r["resources"][0] == resource
                        && r["verbs"] == serde_json::json!(["create"])),
                "{component} {group}/{resource}: {auth}"
            );
        }
    }
}

#[test]
fn must_gather_finds_both_namespaces_before_the_first_run() {
    let docs = manifests();
    let (_, operator) = find(&docs, "ClusterOperator", "cluster-api");
    let related = operator["status"]["relatedObjects"].as_array().unwrap();
    for ns in [INSTALLER_NAMESPACE, TARGET_NAMESPACE] {
        assert!(
            related
                .contains(&serde_json::json!({"group": "", "resource": "namespaces", "name": ns})),
            "{ns}: {related:?}"
        );
    }
}

/// The namespace layout of docs/admin/operating.md, "Namespaces", from the manifests: the two
/// Namespaces are the ones the code names; everything of the installer is in its namespace but the
/// Role and RoleBindings that give it its rights among the providers; every ServiceAccount subject is
/// where its ServiceAccount is; the Deployment is told both namespaces; the fence names them.
#[test]
fn the_installer_has_a_namespace_of_its_own() {
    let docs = running();
    let namespaces: BTreeSet<&str> = docs
        .iter()
        .filter(|(_, d)| d["kind"] == "Namespace")
        .map(|(_, d)| d["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        namespaces,
        BTreeSet::from([INSTALLER_NAMESPACE, TARGET_NAMESPACE])
    );
    // Rights of the installer among the providers (its identities' are named capi-provider-*).
    let among_providers = [
        ("Role", "capi-installer"),
        ("RoleBinding", "capi-installer"),
    ];
    for (file, d) in &docs {
        let (kind, name) = (
            d["kind"].as_str().unwrap(),
            d["metadata"]["name"].as_str().unwrap(),
        );
        let Some(ns) = d["metadata"]["namespace"].as_str() else {
            continue;
        };
        if name.starts_with("capi-installer") {
            let expected = if ns == TARGET_NAMESPACE && among_providers.contains(&(kind, name)) {
                TARGET_NAMESPACE
            } else {
                INSTALLER_NAMESPACE
            };
            assert_eq!(ns, expected, "{file}: {kind} {name}");
        }
        if name.starts_with("capi-controllers")
            && ns != "openshift-machine-api"
            && ns != "kube-system"
        {
            assert_eq!(ns, TARGET_NAMESPACE, "{file}: {kind} {name}");
        }
    }
    for (file, d) in &docs {
        for subject in d["subjects"].as_array().into_iter().flatten() {
            let name = subject["name"].as_str().unwrap_or_default();
            if subject["kind"] == "ServiceAccount" && name.starts_with("capi-") {
                assert_eq!(
                    subject["namespace"],
                    namespace_of(
                        if name.starts_with("capi-installer") || name.starts_with("capi-provider-")
                        {
                            "capi-installer"
                        } else {
                            "capi-controllers"
                        }
                    ),
                    "{file}: subject {subject}"
                );
            }
        }
    }
    let (_, deployment) = find(&docs, "Deployment", "capi-installer");
    let args = &deployment["spec"]["template"]["spec"]["containers"][0]["args"];
    for wanted in [
        format!("--namespace={TARGET_NAMESPACE}"),
        format!("--installer-namespace={INSTALLER_NAMESPACE}"),
    ] {
        assert!(
            args.as_array().unwrap().iter().any(|a| a == &wanted),
            "{wanted} not in {args}"
        );
    }
    let (_, fence) = find(
        &docs,
        "ValidatingAdmissionPolicy",
        "capi-installer-namespace-fence",
    );
    assert_eq!(
        fence["spec"]["matchConstraints"]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"],
        INSTALLER_NAMESPACE
    );
    assert!(
        fence["spec"]["matchConditions"][0]["expression"]
            .as_str()
            .unwrap()
            .contains(&format!("'system:serviceaccount:{TARGET_NAMESPACE}:'")),
        "{fence}"
    );
}

/// The manifests of removal (`release.openshift.io/delete`) name what the earlier layout had in the
/// providers' namespace and this one does not: never an object the release applies, each with the
/// release's inclusion annotations, and at run level 30 before the installer's ServiceAccount, RBAC and
/// Deployment (the cluster-version operator removes in file order). The union ceiling the earlier
/// installer held itself goes at run level 90, after the new installer, which writes as the providers'
/// identities, replaced it.
#[test]
fn the_earlier_layout_is_removed_first() {
    let all = all_manifests();
    let applied: BTreeSet<String> = manifests().iter().map(|(_, d)| identity(d)).collect();
    let removals: Vec<&(String, Value)> = all.iter().filter(|(_, d)| is_removal(d)).collect();
    let removed: BTreeSet<String> = removals.iter().map(|(_, d)| identity(d)).collect();
    for expected in [
        "Deployment openshift-cluster-api/capi-installer",
        "ServiceAccount openshift-cluster-api/capi-installer",
        "ConfigMap openshift-cluster-api/capi-installer-images",
        "Service openshift-cluster-api/capi-installer-metrics",
        "ServiceMonitor openshift-cluster-api/capi-installer",
        "ClusterRoleBinding capi-installer-provider-ceiling",
        "RoleBinding openshift-cluster-api/capi-installer-provider-namespaced-ceiling",
    ] {
        assert!(
            removed.contains(expected),
            "{expected} not removed: {removed:?}"
        );
    }
    for (file, d) in &removals {
        let id = identity(d);
        assert!(
            !applied.contains(&id),
            "{file}: {id} is removed and applied"
        );
        if id.contains("capi-installer-provider-") && id.contains("ceiling") {
            assert!(file.starts_with("0000_90_"), "{file}: {id}");
        } else {
            assert_eq!(d["metadata"]["namespace"], TARGET_NAMESPACE, "{file}: {id}");
        }
        assert_eq!(
            d["metadata"]["annotations"]["include.release.openshift.io/self-managed-high-availability"],
            "true",
            "{file}: {id}"
        );
        if file.starts_with("0000_30_") {
            assert!(
                file.as_str() < "0000_30_capi-installer_01",
                "{file}: after the installer's own objects"
            );
        }
    }
}

/// The release runs the deployer, not the installer (docs/design/image-volumes.md): the
/// cluster-version operator would remove the image volumes of a Deployment it applies. The
/// deployer's pod is hardened and probed as the installer's, runs the installer's image and tells it
/// that image and the release; its pods are not the installer's (no selector, Service or Lease
/// shared); and its rules name what they allow wherever RBAC can name it, with no write but the
/// installer's Deployment and its own Lease.
#[test]
fn the_release_runs_the_deployer_which_may_write_only_the_installers_deployment() {
    let docs = running();
    assert!(
        !manifests()
            .iter()
            .any(|(_, d)| d["kind"] == "Deployment" && d["metadata"]["name"] == "capi-installer"),
        "the installer's Deployment is a release manifest"
    );
    let (_, deployer) = find(&docs, "Deployment", "capi-installer-deployer");
    let (_, installer) = find(&docs, "Deployment", "capi-installer");
    assert_eq!(deployer["metadata"]["namespace"], INSTALLER_NAMESPACE);
    let (pod, installer_pod) = (
        &deployer["spec"]["template"]["spec"],
        &installer["spec"]["template"]["spec"],
    );
    assert_eq!(pod["serviceAccountName"], "capi-installer-deployer");
    let container = &pod["containers"][0];
    let args = strs(&container["args"]);
    assert_eq!(args[0], "deployer");
    for wanted in [
        format!("--installer-image={}", container["image"].as_str().unwrap()),
        format!("--installer-namespace={INSTALLER_NAMESPACE}"),
    ] {
        assert!(args.contains(&wanted.as_str()), "{wanted} not in {args:?}");
    }
    let env = container["env"].as_array().unwrap();
    assert!(
        env.iter()
            .any(|e| e["name"] == "RELEASE_VERSION" && e["value"] == "0.0.1-snapshot"),
        "the cluster-version operator's placeholder: {env:?}"
    );
    let installer_container = &installer_pod["containers"][0];
    for field in [
        "securityContext",
        "startupProbe",
        "livenessProbe",
        "readinessProbe",
        "terminationMessagePolicy",
    ] {
        assert_eq!(container[field], installer_container[field], "{field}");
    }
    for field in [
        "securityContext",
        "terminationGracePeriodSeconds",
        "priorityClassName",
        "nodeSelector",
        "tolerations",
    ] {
        assert_eq!(pod[field], installer_pod[field], "{field}");
    }
    assert!(container["resources"]["requests"]["memory"].is_string());
    let labels = &deployer["spec"]["template"]["metadata"]["labels"];
    for (k, v) in installer["spec"]["selector"]["matchLabels"]
        .as_object()
        .unwrap()
    {
        assert_ne!(
            &labels[k], v,
            "the installer's selector takes the deployer's pods"
        );
    }

    // Its rules: what each allows, by name where RBAC can name it.
    let rules: Vec<&Value> = docs
        .iter()
        .filter(|(_, d)| {
            matches!(d["kind"].as_str(), Some("Role" | "ClusterRole"))
                && d["metadata"]["name"] == "capi-installer-deployer"
        })
        .flat_map(|(_, d)| d["rules"].as_array().unwrap())
        .collect();
    let writes = [
        "create",
        "update",
        "patch",
        "delete",
        "deletecollection",
        "*",
    ];
    let mut written = BTreeSet::new();
    for rule in &rules {
        let resources = strs(&rule["resources"]);
        let verbs = strs(&rule["verbs"]);
        let names = rule["resourceNames"].as_array();
        // A create that is not an apply names no object: the one such rule is its Lease's.
        if names.is_none() {
            assert_eq!(
                (resources.as_slice(), verbs.as_slice()),
                (["leases"].as_slice(), ["create"].as_slice()),
                "a rule without resourceNames: {rule}"
            );
        }
        for verb in verbs.iter().filter(|v| writes.contains(v)) {
            for resource in &resources {
                for name in names.into_iter().flatten() {
                    written.insert(format!("{verb} {resource} {}", name.as_str().unwrap()));
                }
            }
        }
    }
    assert_eq!(
        written,
        BTreeSet::from([
            "create deployments capi-installer".to_string(),
            "patch deployments capi-installer".to_string(),
            "update leases capi-installer-deployer-leader".to_string(),
        ])
    );
    // Bound to its own ServiceAccount only.
    for (_, binding) in docs.iter().filter(|(_, d)| {
        matches!(
            d["kind"].as_str(),
            Some("RoleBinding" | "ClusterRoleBinding")
        ) && d["roleRef"]["name"] == "capi-installer-deployer"
    }) {
        assert_eq!(
            binding["subjects"],
            serde_json::json!([{"kind": "ServiceAccount", "name": "capi-installer-deployer",
                "namespace": INSTALLER_NAMESPACE}]),
            "{binding}"
        );
    }
}

/// The strings of a manifest's list of strings (`args`, a rule's `verbs`).
fn strs(list: &Value) -> Vec<&str> {
    list.as_array()
        .expect("a list")
        .iter()
        .map(|s| s.as_str().expect("a string"))
        .collect()
}

fn identity(d: &Value) -> String {
    format!(
        "{} {}{}",
        d["kind"].as_str().unwrap(),
        d["metadata"]["namespace"]
            .as_str()
            .map(|ns| format!("{ns}/"))
            .unwrap_or_default(),
        d["metadata"]["name"].as_str().unwrap()
    )
}

#[test]
fn the_image_ships_the_manifests_as_a_release_operator() {
    let text = std::fs::read_to_string(repo().join("Containerfile")).unwrap();
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    // The final stage is the image; what earlier stages hold does not ship.
    let last_stage = lines
        .iter()
        .rposition(|l| l.starts_with("FROM "))
        .expect("a FROM line");
    let image = &lines[last_stage..];
    assert!(
        image.contains(&"LABEL io.openshift.release.operator=true"),
        "{image:?}"
    );
    assert!(image.contains(&"COPY manifests /manifests"), "{image:?}");
    // image-references goes along: the release tooling rewrites image tags from it.
    assert!(repo().join("manifests/image-references").is_file());
}

#[test]
fn every_deployment_runs_a_binary_the_image_ships() {
    let text = std::fs::read_to_string(repo().join("Containerfile")).unwrap();
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let last_stage = lines.iter().rposition(|l| l.starts_with("FROM ")).unwrap();
    let shipped: Vec<&str> = lines[last_stage..]
        .iter()
        .filter(|l| l.starts_with("COPY --from=builder "))
        .filter_map(|l| l.split_whitespace().last())
        .collect();
    let deployments: Vec<(String, Value)> = running()
        .into_iter()
        .filter(|(_, d)| d["kind"] == "Deployment")
        .collect();
    assert!(
        deployments.len() >= 3,
        "the deployer's, the installer's and the controllers pod's"
    );
    for (file, deployment) in deployments {
        let container = &deployment["spec"]["template"]["spec"]["containers"][0];
        let binary = container["command"][0].as_str().unwrap();
        assert!(
            shipped.contains(&binary),
            "{file}: {binary} is not in the image ({shipped:?})"
        );
        assert_eq!(
            container["image"], "registry.ci.openshift.org/openshift:capi-installer",
            "{file}: the one image this repository builds"
        );
    }
}

/// The image `hack/images.sh` builds for the real node, beside the Containerfile's final stage: the
/// same label, user, entrypoint and command, every file the stage copies at the same path, and
/// `/manifests` byte for byte this repository's. (Its base differs: this machine's glibc instead of
/// distroless; that is the one thing a release build changes.) Skips without the images outside CI.
#[test]
fn the_node_image_holds_what_the_containerfile_ships() {
    let Some(layout) = control_plane::images_dir() else {
        return;
    };
    let text = std::fs::read_to_string(repo().join("Containerfile")).unwrap();
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let stage = &lines[lines.iter().rposition(|l| l.starts_with("FROM ")).unwrap()..];
    let directive = |name: &str| -> Vec<&str> {
        stage
            .iter()
            .filter_map(|l| l.strip_prefix(name))
            .map(str::trim)
            .collect()
    };

    let blob = |digest: &str| {
        let hex = digest.strip_prefix("sha256:").unwrap();
        std::fs::read(layout.join("blobs/sha256").join(hex)).unwrap()
    };
    let index: Value =
        serde_json::from_slice(&std::fs::read(layout.join("index.json")).unwrap()).unwrap();
    let name = "registry.ci.openshift.org/openshift:capi-installer";
    let descriptor = index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["annotations"]["org.opencontainers.image.ref.name"] == name)
        .unwrap_or_else(|| panic!("{name} is not in {}", layout.display()));
    let manifest: Value =
        serde_json::from_slice(&blob(descriptor["digest"].as_str().unwrap())).unwrap();
    let config: Value =
        serde_json::from_slice(&blob(manifest["config"]["digest"].as_str().unwrap())).unwrap();
    let config = &config["config"];

    for label in directive("LABEL ") {
        let (key, value) = label.split_once('=').unwrap();
        assert_eq!(config["Labels"][key], value, "label {key}");
    }
    assert_eq!(config["User"], directive("USER ")[0]);
    let json_list = |s: &str| serde_json::from_str::<Value>(s).unwrap();
    assert_eq!(config["Entrypoint"], json_list(directive("ENTRYPOINT ")[0]));
    assert_eq!(config["Cmd"], json_list(directive("CMD ")[0]));

    // Every file of every layer (uncompressed tars).
    let mut files = std::collections::BTreeMap::new();
    for layer in manifest["layers"].as_array().unwrap() {
        let bytes = blob(layer["digest"].as_str().unwrap());
        let mut tar = tar_entries(&bytes);
        files.append(&mut tar);
    }
    for copy in directive("COPY ") {
        let dest = copy.split_whitespace().last().unwrap();
        assert!(
            files
                .keys()
                .any(|path| path == dest || path.starts_with(&format!("{dest}/"))),
            "the image lacks {dest} (COPY {copy})"
        );
    }
    for entry in std::fs::read_dir(repo().join("manifests")).unwrap() {
        let path = entry.unwrap().path();
        let shipped = format!("/manifests/{}", path.file_name().unwrap().to_string_lossy());
        assert_eq!(
            files.get(&shipped),
            Some(&std::fs::read(&path).unwrap()),
            "{shipped} differs from the repository's"
        );
    }
}

/// Path → content of the regular files of an uncompressed tar (ustar and PAX headers).
fn tar_entries(bytes: &[u8]) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut files = std::collections::BTreeMap::new();
    let mut at = 0;
    let mut long_name: Option<String> = None;
    while at + 512 <= bytes.len() && bytes[at..at + 512].iter().any(|&b| b != 0) {
        let header = &bytes[at..at + 512];
        let field = |from: usize, len: usize| {
            let raw = &header[from..from + len];
            let end = raw.iter().position(|&b| b == 0).unwrap_or(len);
            String::from_utf8_lossy(&raw[..end]).into_owned()
        };
        let size = usize::from_str_radix(field(124, 12).trim(), 8).unwrap_or(0);
        let body = &bytes[at + 512..at + 512 + size];
        let prefix = field(345, 155);
        let name = long_name.take().unwrap_or_else(|| {
            if prefix.is_empty() {
                field(0, 100)
            } else {
                format!("{prefix}/{}", field(0, 100))
            }
        });
        match header[156] {
            b'x' => {
                // PAX: a `path` record names the next entry.
                let text = String::from_utf8_lossy(body);
                long_name = text
                    .lines()
                    .find_map(|l| l.split_once(" path=").map(|(_, p)| p.to_string()));
            }
            b'0' | 0 => {
                files.insert(format!("/{}", name.trim_start_matches('/')), body.to_vec());
            }
            _ => {}
        }
        at += 512 + size.div_ceil(512) * 512;
    }
    files
}

/// Every object of the release payload, its manifests of removal included, is the `ClusterAPI`
/// capability's and gated by `ClusterAPIMachineManagement`, as the reference's are: a cluster with the
/// capability disabled, or the gate off, gets none of them; and each carries the inclusion
/// annotations of the release profiles it belongs to.
#[test]
fn every_release_object_carries_the_capability_and_its_feature_gate() {
    let mut missing = Vec::new();
    for (file, d) in all_manifests() {
        let annotations = &d["metadata"]["annotations"];
        let gates: Vec<&str> = annotations["release.openshift.io/feature-gate"]
            .as_str()
            .unwrap_or_default()
            .split(',')
            .collect();
        let checks = [
            (
                "capability.openshift.io/name: ClusterAPI (or with CloudCredential, for a CredentialsRequest)",
                annotations["capability.openshift.io/name"]
                    == if d["kind"] == "CredentialsRequest" {
                        "CloudCredential+ClusterAPI"
                    } else {
                        "ClusterAPI"
                    },
            ),
            (
                "release.openshift.io/feature-gate naming ClusterAPIMachineManagement",
                gates.contains(&"ClusterAPIMachineManagement"),
            ),
            (
                "include.release.openshift.io/self-managed-high-availability: \"true\"",
                annotations["include.release.openshift.io/self-managed-high-availability"]
                    == "true",
            ),
            (
                "no release.openshift.io/feature-set (the gate decides)",
                annotations
                    .get("release.openshift.io/feature-set")
                    .is_none(),
            ),
        ];
        for (what, ok) in checks {
            if !ok {
                missing.push(format!("{file}: {}: {what}", identity(&d)));
            }
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

/// One CredentialsRequest per cloud provider, each naming, in the providers' namespace, the Secret its
/// provider's bundle reads (the bundle policy's list of credentials Secrets, one definition), plus the
/// Secret the controllers pod names as OpenStack's identity; the ClusterAPI and CloudCredential
/// capabilities both, as a request means nothing without the Cloud Credential Operator.
#[test]
fn a_credentials_request_for_each_credentials_secret_a_provider_reads() {
    let requests: Vec<(String, Value)> = manifests()
        .into_iter()
        .filter(|(_, d)| d["kind"] == "CredentialsRequest")
        .collect();
    let mut minted = BTreeSet::new();
    for (file, d) in &requests {
        let id = identity(d);
        assert_eq!(
            d["apiVersion"], "cloudcredential.openshift.io/v1",
            "{file}: {id}"
        );
        assert_eq!(
            d["metadata"]["namespace"], "openshift-cloud-credential-operator",
            "{file}: {id}"
        );
        assert_eq!(
            d["metadata"]["annotations"]["capability.openshift.io/name"],
            "CloudCredential+ClusterAPI",
            "{file}: {id}"
        );
        let secret = &d["spec"]["secretRef"];
        assert_eq!(secret["namespace"], TARGET_NAMESPACE, "{file}: {id}");
        minted.insert(secret["name"].as_str().unwrap().to_string());
    }
    let mut read: BTreeSet<String> = capi_installer_controller::policy::references::CREDENTIALS
        .iter()
        .map(|(_, secret)| secret.to_string())
        .collect();
    // OpenStack's bundle reads no Secret: the controllers pod names this one as the OpenStackCluster's
    // identity (crates/cluster-controllers/src/infracluster/spec.rs).
    read.insert("openstack-cloud-credentials".to_string());
    assert_eq!(minted, read, "the Secrets requested and the Secrets read");
    assert_eq!(requests.len(), read.len(), "one request per Secret");
}

#[test]
fn the_trusted_ca_bundle_the_installer_mounts_is_shipped_for_injection() {
    use capi_installer_controller::proxy::TRUSTED_CA_CONFIGMAP;
    let docs = manifests();
    let (file, configmap) = find(&docs, "ConfigMap", TRUSTED_CA_CONFIGMAP);
    assert_eq!(
        configmap["metadata"]["namespace"], TARGET_NAMESPACE,
        "{file}"
    );
    assert_eq!(
        configmap["metadata"]["labels"]["config.openshift.io/inject-trusted-cabundle"], "true",
        "{file}: the cluster network operator fills only labelled ConfigMaps"
    );
    assert!(
        configmap.get("data").is_none(),
        "{file}: the data is the network operator's, never the release's"
    );
    let rules = &find(&docs, "ClusterRole", "capi-installer").1["rules"];
    let proxies = rules
        .as_array()
        .unwrap()
        .iter()
        .find(|r| strs(&r["resources"]) == ["proxies"])
        .expect("the installer reads Proxy/cluster");
    assert_eq!(strs(&proxies["resourceNames"]), ["cluster"]);
    assert_eq!(strs(&proxies["verbs"]), ["get", "list", "watch"]);
}

/// The release's Services in the providers' namespace are the bundle policy's list of selectors no
/// provider's pod may match (one definition each, kept equal here).
#[test]
fn the_policy_knows_every_release_service_in_the_providers_namespace() {
    use capi_installer_controller::policy::provider_bound::RELEASE_SELECTORS;
    let shipped: BTreeSet<(String, Vec<(String, String)>)> = manifests()
        .into_iter()
        .filter(|(_, d)| d["kind"] == "Service" && d["metadata"]["namespace"] == TARGET_NAMESPACE)
        .map(|(_, d)| {
            let selector = d["spec"]["selector"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect();
            (
                d["metadata"]["name"].as_str().unwrap().to_string(),
                selector,
            )
        })
        .collect();
    let known: BTreeSet<(String, Vec<(String, String)>)> = RELEASE_SELECTORS
        .iter()
        .map(|(name, selector)| {
            let selector = selector
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            (name.to_string(), selector)
        })
        .collect();
    assert!(!shipped.is_empty());
    assert_eq!(shipped, known);
}
