//! The installer under its own least-privilege RBAC, and killed in the middle of an install
//! (issue 4, scenarios 8 and 9). Under that RBAC (no `escalate` or `bind`; the provider RBAC ceiling,
//! issue 17) every real provider bundle installs as the installer's own ServiceAccount, and no
//! provider's ServiceAccount can mint a token for the installer, run a pod as it, exec into it,
//! impersonate it or change its Deployment (SubjectAccessReviews).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::api::authorization::v1::SubjectAccessReview;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use test_support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn installs_with_its_own_least_privilege_rbac_and_reports_forbidden() {
    require_fixture!("transport-configmaps");
    let env = Env::on_aws(&[CORE_CM, AWS_CM, VSPHERE_CM, AZURE_CM]).await;
    let rbac = installer_rbac();
    apply_as_release_payload(&env.admin, &rbac).await;
    apply_release_manifests(
        &env.admin,
        "0000_30_capi-installer_01_infrastructureproviders",
    )
    .await;
    let sa_config = env.service_account_config(NS, "capi-installer").await;
    let _installer = Running::start(installer_client(sa_config), config());

    wait_available(&env.admin, Duration::from_secs(240)).await;
    // What `oc exec deploy/capi-installer -- capi-installer status` does (docs/admin/commands.md, "In
    // the cluster"): the command as the installer's ServiceAccount, which may read all it reads (a
    // denied read would be among the 403s below: the same user agent).
    let sa_kubeconfig = env
        .cp
        .service_account_kubeconfig(NS, "capi-installer")
        .await
        .unwrap();
    for format in ["text", "json"] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_capi-installer"))
            .args(["status", "-o", format, "--kubeconfig"])
            .arg(&sa_kubeconfig)
            .env_remove("KUBECONFIG")
            .output()
            .unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "status -o {format}: {stdout}{stderr}"
        );
        assert!(
            !stdout.to_lowercase().contains("forbidden") && !stderr.contains("forbidden"),
            "status -o {format}: {stdout}{stderr}"
        );
    }
    let ua = capi_installer_controller::user_agent();
    let denied: Vec<String> = env
        .audit()
        .iter()
        .filter(|e| e.user_agent.as_deref() == Some(ua.as_str()) && e.response_code == Some(403))
        .map(describe)
        .collect();
    assert!(
        denied.is_empty(),
        "requests denied to the installer's ServiceAccount: {denied:?}"
    );
    let writers: BTreeSet<String> = installer_writes(&env.audit(), None)
        .iter()
        .map(|e| e.user.username.clone())
        .collect();
    assert_eq!(
        writers,
        BTreeSet::from(["system:serviceaccount:openshift-cluster-api:capi-installer".to_string()])
    );

    // The other real bundles, beside core and aws (gcp's, whose CRDs clash with azure's short names,
    // installs as this ServiceAccount in providers.rs).
    for name in ["vsphere", "azure"] {
        request_provider(&env.admin, name).await;
    }
    let available = eventually(
        Duration::from_secs(240),
        "aws, vsphere and azure available",
        || async {
            let s = co_status(&env.admin).await?;
            let a = condition(&s, "Available")?;
            (a.status == "True" && a.message.contains("vsphere") && a.message.contains("azure"))
                .then_some(a)
        },
    )
    .await;
    assert!(available.message.contains("aws"), "{available:?}");
    let denied: Vec<String> = env
        .audit()
        .iter()
        .filter(|e| e.user_agent.as_deref() == Some(ua.as_str()) && e.response_code == Some(403))
        .map(describe)
        .collect();
    assert!(
        denied.is_empty(),
        "requests denied to the installer's ServiceAccount: {denied:?}"
    );
    // What the providers were granted keeps them away from the installer. (What they may do is
    // answered too: leader election in their namespace.)
    for provider in [
        "capi-manager",
        "capa-controller-manager",
        "capz-manager",
        "default",
    ] {
        let user = format!("system:serviceaccount:{NS}:{provider}");
        // RBAC's authorizer reads its bindings from a watch: the provider's, just applied, may take a
        // moment to be seen.
        let leases = ["create", "coordination.k8s.io", "leases", "", ""];
        eventually(
            Duration::from_secs(30),
            "leader election allowed",
            || async { allowed(&env.admin, &user, leases).await.then_some(()) },
        )
        .await;
        for attributes in [
            ["create", "", "serviceaccounts", "token", "capi-installer"],
            ["create", "", "pods", "", ""],
            ["create", "", "pods", "exec", ""],
            ["impersonate", "", "serviceaccounts", "", "capi-installer"],
            ["patch", "apps", "deployments", "", "capi-installer"],
            [
                "escalate",
                "rbac.authorization.k8s.io",
                "clusterroles",
                "",
                "capi-installer",
            ],
            [
                "bind",
                "rbac.authorization.k8s.io",
                "clusterroles",
                "",
                "cluster-admin",
            ],
        ] {
            assert!(
                !allowed(&env.admin, &user, attributes).await,
                "{user} may {attributes:?} in {NS}"
            );
        }
    }

    // A provider may create Secrets everywhere (every real manager role may), but none that the token
    // controller would fill with the installer's token.
    apply_release_manifests(&env.admin, "0000_30_capi-installer_07_admission").await;
    let token_secret: Secret = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
        "metadata": {"name": "installer-token", "namespace": NS,
            "annotations": {"kubernetes.io/service-account.name": "capi-installer"}},
    }))
    .unwrap();
    let dry_run = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let admin_secrets: Api<Secret> = Api::namespaced(env.admin.clone(), NS);
    eventually(
        Duration::from_secs(30),
        "the token-Secret policy in force",
        || async { admin_secrets.create(&dry_run, &token_secret).await.err() },
    )
    .await;
    let capa = Client::try_from(
        env.service_account_config(NS, "capa-controller-manager")
            .await,
    )
    .unwrap();
    let refused = Api::<Secret>::namespaced(capa, NS)
        .create(&PostParams::default(), &token_secret)
        .await
        .expect_err("a provider created a token Secret of the installer");
    assert!(
        refused
            .to_string()
            .contains("capi-installer-no-token-secrets"),
        "{refused}"
    );

    // Take away one rule the installer needs (admission policies), then make it need it.
    let roles: Api<ClusterRole> = Api::all(env.admin.clone());
    let mut role = roles.get("capi-installer").await.unwrap();
    let original = role.rules.clone();
    for rule in role.rules.iter_mut().flatten() {
        if let Some(resources) = rule.resources.as_mut() {
            resources.retain(|r| r != "validatingadmissionpolicies");
        }
    }
    role.metadata.managed_fields = None;
    roles
        .replace("capi-installer", &Default::default(), &role)
        .await
        .unwrap();
    let vap = fixture_objects(AWS_CM)
        .into_iter()
        .find(|o| o.kind == "ValidatingAdmissionPolicy")
        .unwrap()
        .name;
    let vaps = api_for(
        &env.admin,
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicy",
        None,
    )
    .await;
    vaps.delete(&vap, &DeleteParams::default()).await.unwrap();

    let degraded = eventually(
        Duration::from_secs(90),
        "Degraded with Forbidden",
        || async {
            let s = co_status(&env.admin).await?;
            let d = condition(&s, "Degraded")?;
            // Every installed provider that writes an admission policy now fails; aws's is awaited.
            (d.status == "True" && d.message.contains(&vap)).then_some(d)
        },
    )
    .await;
    assert_eq!(degraded.reason, "Forbidden", "{degraded:?}");
    assert!(degraded.message.contains(&vap), "{degraded:?}");
    assert!(degraded.message.contains("forbidden"), "{degraded:?}");

    // It kept running: giving the rule back recovers without a restart.
    role = roles.get("capi-installer").await.unwrap();
    role.rules = original;
    role.metadata.managed_fields = None;
    roles
        .replace("capi-installer", &Default::default(), &role)
        .await
        .unwrap();
    wait_available(&env.admin, Duration::from_secs(120)).await;
    assert!(vaps.get_opt(&vap).await.unwrap().is_some());
}

async fn managed_objects(client: &Client) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let kinds = [
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition", None),
        ("rbac.authorization.k8s.io/v1", "ClusterRole", None),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", None),
        ("rbac.authorization.k8s.io/v1", "Role", Some(NS)),
        ("rbac.authorization.k8s.io/v1", "RoleBinding", Some(NS)),
        ("v1", "ServiceAccount", Some(NS)),
        ("v1", "Service", Some(NS)),
        ("apps/v1", "Deployment", Some(NS)),
        (
            "admissionregistration.k8s.io/v1",
            "ValidatingWebhookConfiguration",
            None,
        ),
        (
            "admissionregistration.k8s.io/v1",
            "MutatingWebhookConfiguration",
            None,
        ),
        (
            "admissionregistration.k8s.io/v1",
            "ValidatingAdmissionPolicy",
            None,
        ),
        (
            "admissionregistration.k8s.io/v1",
            "ValidatingAdmissionPolicyBinding",
            None,
        ),
    ];
    for (api_version, kind, ns) in kinds {
        let api = api_for(client, api_version, kind, ns).await;
        let list = api
            .list(&ListParams::default().labels("app.kubernetes.io/managed-by=capi-installer"))
            .await
            .unwrap();
        out.extend(
            list.items
                .iter()
                .map(|o| format!("{kind} {}", o.name_any())),
        );
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_during_install_converges_after_restart() {
    require_fixture!("transport-configmaps");
    let env = Env::on_aws(&[CORE_CM, AWS_CM]).await;
    let installer = Running::as_admin(&env, config());

    // Kill it once the core CRD phase is done (a core CRD is Established) and before it finishes.
    let crds = api_for(
        &env.admin,
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        None,
    )
    .await;
    eventually(
        Duration::from_secs(120),
        "a core CRD Established",
        || async {
            let crd = crds.get_opt("machines.cluster.x-k8s.io").await.ok()??;
            let established = crd.data["status"]["conditions"]
                .as_array()?
                .iter()
                .any(|c| c["type"] == "Established" && c["status"] == "True");
            established.then_some(())
        },
    )
    .await;
    installer.kill();
    let co_before = co_status(&env.admin).await;
    assert!(
        co_before
            .as_ref()
            .and_then(|s| condition(s, "Available"))
            .is_none_or(|a| a.status != "True"),
        "the install was already complete when killed; the test proves nothing"
    );

    let _restarted = Running::as_admin(&env, config());
    wait_available(&env.admin, Duration::from_secs(240)).await;

    // No orphan: what carries the ownership label is exactly what the ConfigMaps hold, and the inventory
    // records exactly that.
    let expected: BTreeSet<String> = fixture_objects(CORE_CM)
        .into_iter()
        .chain(fixture_objects(AWS_CM))
        .map(|o| format!("{} {}", o.kind, o.name))
        .collect();
    assert_eq!(managed_objects(&env.admin).await, expected);
    let inventory: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(env.admin.clone(), NS);
    let inventory = inventory.get("capi-installer-inventory").await.unwrap();
    let mut recorded = BTreeSet::new();
    for json in inventory.data.unwrap().values() {
        let stored: Value = serde_json::from_str(json).unwrap();
        let entries = stored["objects"].as_array().unwrap();
        recorded.extend(entries.iter().map(|e| {
            format!(
                "{} {}",
                e["kind"].as_str().unwrap(),
                e["name"].as_str().unwrap()
            )
        }));
    }
    assert_eq!(recorded, expected);

    // No duplicate: each object was created once (a 201 from the installer), never twice.
    let mut creations: BTreeMap<String, usize> = BTreeMap::new();
    for e in installer_writes(&env.audit(), None)
        .iter()
        .filter(|e| e.response_code == Some(201))
    {
        let o = e.object_ref.clone().unwrap_or_default();
        *creations
            .entry(format!(
                "{}/{}/{}",
                o.resource,
                o.namespace.unwrap_or_default(),
                o.name.unwrap_or_default()
            ))
            .or_default() += 1;
    }
    let twice: Vec<_> = creations
        .iter()
        .filter(|(k, n)| **n > 1 && !k.starts_with("events/"))
        .collect();
    assert!(twice.is_empty(), "created more than once: {twice:?}");
}

/// An `InfrastructureProvider` asking for `name`.
async fn request_provider(client: &Client, name: &str) {
    let api = api_for(
        client,
        "installer.cluster-api.openshift.io/v1alpha1",
        "InfrastructureProvider",
        None,
    )
    .await;
    let obj = json!({"apiVersion": "installer.cluster-api.openshift.io/v1alpha1",
        "kind": "InfrastructureProvider", "metadata": {"name": name}});
    api.create(&Default::default(), &serde_json::from_value(obj).unwrap())
        .await
        .unwrap_or_else(|e| panic!("InfrastructureProvider {name}: {e}"));
}

/// Whether the API server allows `user` (a ServiceAccount of the providers' namespace) to `verb`
/// `resource/subresource` named `name` in `group`, in the providers' namespace.
async fn allowed(client: &Client, user: &str, attributes: [&str; 5]) -> bool {
    let [verb, group, resource, subresource, name] = attributes;
    let review = json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {"user": user,
            "groups": ["system:serviceaccounts", format!("system:serviceaccounts:{NS}"), "system:authenticated"],
            "resourceAttributes": {"namespace": NS, "verb": verb, "group": group,
                "resource": resource, "subresource": subresource, "name": name}},
    });
    let api: Api<SubjectAccessReview> = Api::all(client.clone());
    let answer = api
        .create(
            &Default::default(),
            &serde_json::from_value(review).unwrap(),
        )
        .await
        .unwrap();
    answer.status.is_some_and(|s| s.allowed)
}
