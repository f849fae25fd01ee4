//! Several infrastructure providers through `InfrastructureProvider` objects (issue 11), with the real
//! aws and gcp providers of `../shared/fixtures`: one broken provider neither blocks nor hides the
//! other, and deleting an `InfrastructureProvider` uninstalls its provider, keeping a CRD that still has
//! an instance (reported) until the instance is gone. The installer runs as its own ServiceAccount under
//! the shipped RBAC: nothing of this may be denied.

use std::process::Command;
use std::time::Duration;

use capi_manifests::ObjectKey;
use control_plane::AuditEvent;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount};
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use test_support::*;

const MINUTE: Duration = Duration::from_secs(60);
const BIN: &str = env!("CARGO_BIN_EXE_capi-installer");
const GKECONFIGS: &str = "gkeconfigs.bootstrap.cluster.x-k8s.io";

async fn deployment_exists(client: &Client, name: &str) -> bool {
    let api: Api<Deployment> = Api::namespaced(client.clone(), NS);
    api.get_opt(name).await.unwrap().is_some()
}

fn crds(client: &Client) -> Api<DynamicObject> {
    Api::all_with(
        client.clone(),
        &ar(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
        ),
    )
}

async fn crd_exists(client: &Client, name: &str) -> bool {
    crds(client).get_opt(name).await.unwrap().is_some()
}

fn gkeconfigs(client: &Client) -> Api<DynamicObject> {
    Api::namespaced_with(
        client.clone(),
        NS,
        &ar(
            "bootstrap.cluster.x-k8s.io",
            "v1beta1",
            "GKEConfig",
            "gkeconfigs",
        ),
    )
}

/// A control plane on AWS with the release's core, aws and gcp ConfigMaps and gcp requested. `None`
/// without the fixtures.
async fn aws_and_gcp() -> Option<Env> {
    let env = Env::start(true).await;
    let client = env.admin.clone();
    set_platform(&client, "AWS").await;
    load_payload(&client, &[CORE_CM, AWS_CM, GCP_CM]).await?;
    load_infrastructure_provider_crd(&client).await;
    request_provider(&client, "gcp").await;
    Some(env)
}

/// [`aws_and_gcp`] with the ConfigMap `broken` refused (a document outside the namespace); its good
/// components come back to mend it.
async fn aws_and_gcp_with_one_broken(broken: &str) -> Option<(Env, String)> {
    let env = aws_and_gcp().await?;
    let good = fixture_components(broken);
    let stray = "\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {name: stray, namespace: kube-system}\n";
    put_components(&env.admin, broken, &format!("{good}{stray}")).await;
    Some((env, good))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_infrastructure_providers_one_broken_and_an_uninstall() {
    // The platform's own provider is broken.
    let Some((env, aws)) = aws_and_gcp_with_one_broken(AWS_CM).await else {
        return;
    };
    let client = env.admin.clone();
    let _running = Running::under_release_rbac(&env, config()).await;

    broken_platform_provider(&client).await;
    put_components(&client, AWS_CM, &aws).await;
    let s = wait_available(&client, 3 * MINUTE).await;
    let available = condition(&s, "Available").unwrap();
    assert!(
        available.message.contains("aws v") && available.message.contains("gcp v1.11.0"),
        "{available:?}"
    );
    platform_provider_object(&env).await;
    uninstall(&client).await;
    let denied = installer_denials(&env.audit());
    assert!(denied.is_empty(), "denied to the installer: {denied:?}");
}

/// Core first, then the infrastructure providers at once (issue 30). While core is refused, aws and
/// gcp wait for it and the installer sends nothing for their objects; once core is mended, the first
/// pass that reaches them reconciles both at the same time: a request for a gcp object comes before
/// the last request for an aws object of that pass (the pass ends with its ClusterOperator write), which
/// one provider after the other — aws before gcp in install order — can never do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn infrastructure_providers_wait_for_core_then_install_at_once() {
    let Some((env, core)) = aws_and_gcp_with_one_broken(CORE_CM).await else {
        return;
    };
    let client = env.admin.clone();
    let _installer = Running::as_admin(&env, config());

    let waiting = eventually(MINUTE, "aws and gcp waiting for core", || async {
        let s = co_status(&client).await?;
        let progressing = condition(&s, "Progressing")?;
        let message = progressing.message;
        (message.contains("aws v2.10.0: waiting for ConfigMap cluster-api")
            && message.contains("gcp v1.11.0: waiting for ConfigMap cluster-api"))
        .then_some(message)
    })
    .await;
    let aws_objects = fixture_objects(AWS_CM);
    let gcp_objects = fixture_objects(GCP_CM);
    let of = |objects: &[ObjectKey], events: &[AuditEvent]| -> Vec<AuditEvent> {
        events
            .iter()
            .filter(|e| objects.iter().any(|k| names_object(e, k)))
            .cloned()
            .collect()
    };
    let installer = installer_requests(&env.audit());
    assert!(
        of(&aws_objects, &installer).is_empty() && of(&gcp_objects, &installer).is_empty(),
        "nothing of aws or gcp is sent while core is refused ({waiting})"
    );

    put_components(&client, CORE_CM, &core).await;
    let s = wait_available(&client, 3 * MINUTE).await;
    let available = condition(&s, "Available").unwrap();
    assert!(
        available.message.contains("aws v") && available.message.contains("gcp v1.11.0"),
        "{available:?}"
    );
    let installer = installer_requests(&env.audit());
    let (aws, gcp) = (of(&aws_objects, &installer), of(&gcp_objects, &installer));
    let start = |e: &AuditEvent| {
        e.request_received_timestamp
            .clone()
            .unwrap_or_else(|| e.stage_timestamp.clone())
            .0
    };
    let first = aws
        .iter()
        .chain(&gcp)
        .map(start)
        .min()
        .expect("aws and gcp requests");
    let pass_end = installer
        .iter()
        .filter(|e| {
            e.object_ref
                .as_ref()
                .is_some_and(|o| o.resource == "clusteroperators")
                && e.is_write()
                && e.stage_timestamp.0 > first
        })
        .map(|e| e.stage_timestamp.0)
        .min()
        .expect("a ClusterOperator write after the first pass that reached aws and gcp");
    let in_pass = |events: &[AuditEvent]| -> Vec<AuditEvent> {
        events
            .iter()
            .filter(|e| e.stage_timestamp.0 < pass_end)
            .cloned()
            .collect()
    };
    let (aws, gcp) = (in_pass(&aws), in_pass(&gcp));
    let first_gcp = gcp
        .iter()
        .map(start)
        .min()
        .expect("gcp requests in that pass");
    let last_aws = aws
        .iter()
        .map(|e| e.stage_timestamp.0)
        .max()
        .expect("aws requests in that pass");
    assert!(
        first_gcp < last_aws,
        "aws and gcp reconciled at once: gcp's first request at {first_gcp}, aws's last of the pass at {last_aws}\naws: {:#?}\ngcp: {:#?}",
        aws.iter().map(describe).collect::<Vec<_>>(),
        gcp.iter().map(describe).collect::<Vec<_>>()
    );
}

/// An installer that installed core, aws and gcp, restarted and quiet: it planned every provider
/// twice, and nothing is left to wake it.
async fn installed_and_quiet(env: &Env) -> Running {
    let installer = Running::as_admin(env, config());
    wait_available(&env.admin, 3 * MINUTE).await;
    // Restarted, the installer plans every provider in its first pass, which writes nothing, then
    // once more in the pass its watches' first lists wake (they announce every object): two plans of
    // each, and nothing left to wake it. Awaited until both passes have ended: a plan is counted when
    // it is made, and the rest of its pass may still read an object the restarted installer has not
    // judged yet (one a gate kept the first pass from).
    installer.kill();
    let installer = Running::as_admin(env, config());
    eventually(
        MINUTE,
        "every provider planned twice, both passes ended",
        || async {
            (plans_of(&installer) == [2, 2, 2] && installer.metrics.passes() >= 2).then_some(())
        },
    )
    .await;
    installer
}

/// How many times `installer` planned core, aws and gcp.
fn plans_of(installer: &Running) -> [u64; 3] {
    ["ConfigMap cluster-api", "ConfigMap aws", "ConfigMap gcp"]
        .map(|source| installer.metrics.plans(source))
}

/// Asserts that aws alone was planned again between `before` and `after` ([`plans_of`]).
fn assert_aws_alone_planned_again(before: [u64; 3], after: [u64; 3]) {
    assert!(
        after[1] > before[1],
        "aws planned again: {before:?} → {after:?}"
    );
    assert_eq!(
        (after[0], after[2]),
        (before[0], before[2]),
        "core and gcp not planned again: {before:?} → {after:?}"
    );
}

/// The installer's writes after `since` of the objects of the fixture ConfigMaps `files`.
fn writes_of(env: &Env, since: Timestamp, files: &[&str]) -> Vec<String> {
    let objects: Vec<ObjectKey> = files.iter().copied().flat_map(fixture_objects).collect();
    installer_writes(&env.audit(), Some(since))
        .iter()
        .filter(|e| objects.iter().any(|k| names_object(e, k)))
        .map(describe)
        .collect()
}

/// A drift is repaired by a pass of its provider alone (issue 30): with core, aws and gcp installed, a
/// tampered aws ClusterRole is restored by one write, of that ClusterRole, and nothing else of any
/// provider is written (audit log); aws is rendered and checked again, core and gcp are not (the
/// installer's `provider_plans`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drift_is_repaired_by_its_provider_alone() {
    let Some(env) = aws_and_gcp().await else {
        return;
    };
    let client = env.admin.clone();
    let installer = installed_and_quiet(&env).await;
    let plans = || plans_of(&installer);
    let before = plans();
    let since = env.audit().last().unwrap().stage_timestamp.0;

    let aws = fixture_objects(AWS_CM);
    let role = aws.iter().find(|o| o.kind == "ClusterRole").unwrap();
    let roles: Api<ClusterRole> = Api::all(client.clone());
    let rules = roles.get(&role.name).await.unwrap().rules;
    let tampered = json!({"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]});
    roles
        .patch(
            &role.name,
            &PatchParams::default(),
            &Patch::Merge(&tampered),
        )
        .await
        .unwrap();
    eventually(MINUTE, "the aws ClusterRole's rules restored", || async {
        (roles.get(&role.name).await.ok()?.rules == rules).then_some(())
    })
    .await;

    let written = writes_of(&env, since, &[CORE_CM, AWS_CM, GCP_CM]);
    assert_eq!(written.len(), 1, "one write: {written:#?}");
    assert!(written[0].contains(&role.name), "{written:#?}");
    assert_aws_alone_planned_again(before, plans());
    // What a pass reports on, it knows from its watches: the repair read nothing.
    let reads: Vec<String> = installer_requests(&env.audit())
        .iter()
        .filter(|e| e.stage_timestamp.0 > since && e.verb == "get")
        .map(describe)
        .collect();
    assert!(reads.is_empty(), "the installer read: {reads:#?}");

    // A deleted object is created again without a read either: its watch saw that very object go.
    let since = env.audit().last().unwrap().stage_timestamp.0;
    let account = aws
        .iter()
        .find(|o| o.kind == "ServiceAccount")
        .expect("aws has a ServiceAccount");
    let accounts: Api<ServiceAccount> =
        Api::namespaced(client.clone(), account.namespace.as_deref().unwrap());
    let uid = accounts.get(&account.name).await.unwrap().uid();
    accounts
        .delete(&account.name, &DeleteParams::default())
        .await
        .unwrap();
    eventually(MINUTE, "the aws ServiceAccount created again", || async {
        let now = accounts.get_opt(&account.name).await.ok()??;
        (now.uid() != uid).then_some(())
    })
    .await;
    // Once the create is in the audit log, so is any read before it.
    let requests: Vec<String> = eventually(MINUTE, "the create in the audit log", || async {
        let requests: Vec<String> = installer_requests(&env.audit())
            .iter()
            .filter(|e| e.stage_timestamp.0 > since && names_object(e, account))
            .map(describe)
            .collect();
        requests
            .iter()
            .any(|r| r.starts_with("patch") && r.contains("(Some(201))"))
            .then_some(requests)
    })
    .await;
    assert!(
        requests.iter().all(|r| r.starts_with("patch")),
        "the repair read the object: {requests:#?}"
    );
}

/// A new payload in one provider's source is planned and applied by that provider alone (issue 30):
/// with core, aws and gcp installed, aws's transport ConfigMap comes with a new version that changes
/// one argument of its manager; aws is planned again, its Deployment updated and its new version
/// reported, core and gcp are neither planned again nor written (before, a source's change made a pass
/// of every provider). A payload that changes what the providers after aws are planned
/// with (its pods' labels, which gcp's Services must not select) makes a pass of every provider.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_change_is_planned_by_its_provider_alone() {
    let Some(env) = aws_and_gcp().await else {
        return;
    };
    let client = env.admin.clone();
    let installer = installed_and_quiet(&env).await;
    let before = plans_of(&installer);
    let since = env.audit().last().unwrap().stage_timestamp.0;
    let manager = fixture_objects(AWS_CM)
        .into_iter()
        .find(|o| o.kind == "Deployment")
        .expect("aws has a Deployment");
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NS);
    // Until aws's manager, as `applied` finds it, is rolled out, then the ClusterOperator settled.
    let rolled_out = async |what: &str, applied: fn(&Deployment) -> Option<bool>| {
        eventually(MINUTE, what, || async {
            let d = deployments.get(&manager.name).await.ok()?;
            let status = d.status.as_ref()?;
            let rolled_out = status.observed_generation == d.metadata.generation
                && status.updated_replicas == status.replicas
                && status.available_replicas == status.replicas;
            (applied(&d)? && rolled_out).then_some(())
        })
        .await;
        wait_available(&client, MINUTE).await;
    };

    let put_aws = async |components: &str| {
        let mut cm = with_components(AWS_CM, components);
        cm["metadata"]["labels"]["provider.cluster.x-k8s.io/version"] = "v2.10.1".into();
        put_configmap(&client, &cm).await;
    };

    let (old, new) = ("- --v=${CAPA_LOGLEVEL:=0}", "- --v=${CAPA_LOGLEVEL:=4}");
    let aws = fixture_components(AWS_CM);
    assert_eq!(aws.matches(old).count(), 1, "aws's manager takes --v once");
    let aws = aws.replace(old, new);
    put_aws(&aws).await;
    rolled_out("aws's manager updated and rolled out", |d| {
        let pod = d.spec.as_ref()?.template.spec.as_ref()?;
        let mut args = pod.containers.iter().flat_map(|c| c.args.iter().flatten());
        Some(args.any(|a| a == "--v=4"))
    })
    .await;
    eventually(MINUTE, "aws's new version reported", || async {
        let available = condition(&co_status(&client).await?, "Available")?;
        available.message.contains("aws v2.10.1").then_some(())
    })
    .await;

    let after = plans_of(&installer);
    assert_aws_alone_planned_again(before, after);
    let written = writes_of(&env, since, &[CORE_CM, GCP_CM]);
    assert!(written.is_empty(), "core or gcp written: {written:#?}");

    // A pod label more: what gcp is planned with changed.
    let (old, new) = (
        "        control-plane: capa-controller-manager\n    spec:",
        "        control-plane: capa-controller-manager\n        app.kubernetes.io/part-of: capa\n    spec:",
    );
    assert_eq!(aws.matches(old).count(), 1, "aws's pod template labels");
    put_aws(&aws.replace(old, new)).await;
    rolled_out("aws's pods labelled and rolled out", |d| {
        let labels = d
            .spec
            .as_ref()?
            .template
            .metadata
            .as_ref()?
            .labels
            .as_ref()?;
        Some(labels.contains_key("app.kubernetes.io/part-of"))
    })
    .await;
    let relabelled = plans_of(&installer);
    assert!(
        relabelled.iter().zip(&after).all(|(now, was)| now > was),
        "every provider planned again: {after:?} → {relabelled:?}"
    );
}

/// Each provider keeps its own timer (issue 30): while aws rolls out (its gate looks again every 5 s),
/// a refused gcp is planned again as its own failures space it (5, 10, 20, 40 s), not at every look of
/// aws's gate; and aws, whose inputs do not change, is not rendered and checked again at each look
/// (the plan its first limited pass made is kept while it rolls out). Small providers: aws's
/// Deployment is never scheduled, gcp carries a document outside the providers' namespace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_provider_is_retried_by_its_own_backoff_while_another_rolls_out() {
    let env = Env::start(true).await;
    let client = env.admin.clone();
    ensure_namespaces(&client).await;
    set_platform(&client, "AWS").await;
    load_infrastructure_provider_crd(&client).await;
    request_provider(&client, "gcp").await;
    Tiny::new("cluster-api", "capt").put(&client).await;
    let mut aws = Tiny::new("aws", "capat");
    aws.unschedulable = true;
    aws.put(&client).await;
    let mut gcp = Tiny::new("gcp", "capgt");
    gcp.extra.push(
        "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: stray, namespace: kube-system}"
            .into(),
    );
    gcp.put(&client).await;
    let installer = Running::as_admin(&env, config());
    let counts = || {
        let m = &installer.metrics;
        [
            m.passes(),
            m.plans("ConfigMap aws"),
            m.plans("ConfigMap gcp"),
        ]
    };

    let before = eventually(MINUTE, "aws rolling out and gcp refused", || async {
        let s = co_status(&client).await?;
        let progressing = condition(&s, "Progressing")?.message;
        let refused = condition(&s, "Degraded")
            .is_some_and(|d| d.message.contains("ConfigMap gcp"))
            || progressing.contains("ConfigMap gcp");
        (deployment_exists(&client, &aws.deployment()).await && refused).then(counts)
    })
    .await;
    // Ten more passes (aws's gate looks every 5 s) are about 50 s, well within its Deployment timeout
    // (2 min).
    let after = eventually(2 * MINUTE, "ten more passes", || async {
        let now = counts();
        (now[0] >= before[0] + 10).then_some(now)
    })
    .await;
    let [passes, aws_plans, gcp_plans] = [0, 1, 2].map(|i| after[i] - before[i]);
    // The window may open before the last pass of every provider of the install (which plans both
    // and keeps no plan) and the first limited pass (which plans aws again, and keeps it).
    assert!(
        (1..=6).contains(&gcp_plans),
        "gcp retried by its own backoff: planned {gcp_plans} times in {passes} passes"
    );
    assert!(
        aws_plans <= 2,
        "aws's plan kept while it rolls out: planned {aws_plans} times in {passes} passes"
    );
    let s = co_status(&client).await.unwrap();
    let degraded = condition(&s, "Degraded").unwrap();
    assert!(
        degraded.status == "True" && degraded.message.contains("ConfigMap gcp"),
        "gcp's refusal persists and degrades: {degraded:?}"
    );
}

/// While core rolls out, an infrastructure provider applies what needs nothing of core — its CRDs and
/// base objects — and holds its Deployment back until core completes (SPEC §4, a shorter cold
/// install). Small providers: core's Deployment is not scheduled until the test lets it, so the
/// overlap does not depend on how fast this machine's passes are (with the release's providers on a
/// busy machine, core's Deployment may be Available before aws's CRDs are Established).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_infrastructure_provider_goes_ahead_while_core_rolls_out() {
    let env = Env::start(true).await;
    let client = env.admin.clone();
    ensure_namespaces(&client).await;
    set_platform(&client, "AWS").await;
    let mut core = Tiny::new("cluster-api", "capt");
    core.unschedulable = true;
    core.put(&client).await;
    let aws = Tiny::new("aws", "capat");
    aws.put(&client).await;
    let installer = Running::as_admin(&env, config());
    let service_accounts: Api<k8s_openapi::api::core::v1::ServiceAccount> =
        Api::namespaced(client.clone(), NS);
    let cluster_roles: Api<ClusterRole> = Api::all(client.clone());

    let passes = eventually(
        MINUTE,
        "aws's CRD and base objects while core rolls out",
        || async {
            let s = co_status(&client).await?;
            let waiting = condition(&s, "Progressing")?
                .message
                .contains("aws v1.0.0: waiting for ConfigMap cluster-api");
            let ahead = crd_exists(&client, &aws.crd_name()).await
                && service_accounts
                    .get_opt(&format!("{}-manager", aws.prefix))
                    .await
                    .unwrap()
                    .is_some()
                && cluster_roles
                    .get_opt(&aws.cluster_role())
                    .await
                    .unwrap()
                    .is_some();
            (waiting && ahead).then(|| installer.metrics.passes())
        },
    )
    .await;
    // Core's gate looks again every 5 s: two more looks that find it still rolling out.
    eventually(MINUTE, "two more passes", || async {
        (installer.metrics.passes() >= passes + 2).then_some(())
    })
    .await;
    assert!(
        deployment_exists(&client, &core.deployment()).await,
        "core's Deployment is written"
    );
    assert!(
        !deployment_exists(&client, &aws.deployment()).await,
        "aws's Deployment waits while core rolls out"
    );

    core.unschedulable = false;
    core.put(&client).await;
    wait_available(&client, 2 * MINUTE).await;
    assert!(deployment_exists(&client, &aws.deployment()).await);
}

/// A drift is repaired by its own provider while core still rolls out (issue 30): core's Deployment
/// is not scheduled, aws and gcp have applied what needs nothing of core and wait for it; a tampered
/// aws ClusterRole is restored by one write, and nothing of core or gcp is written nor gcp rendered
/// again (before, every pass while core was not settled planned and reconciled every provider). Once
/// a node matches core's Deployment, the pass its rollout's end wakes admits aws and gcp again, with no
/// input changed: both go on to their Deployments.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drift_is_repaired_by_its_provider_alone_while_core_rolls_out() {
    let env = Env::start(true).await;
    let client = env.admin.clone();
    ensure_namespaces(&client).await;
    set_platform(&client, "AWS").await;
    load_infrastructure_provider_crd(&client).await;
    request_provider(&client, "gcp").await;
    let mut core = Tiny::new("cluster-api", "capt");
    core.unschedulable = true;
    core.put(&client).await;
    let aws = Tiny::new("aws", "capat");
    aws.put(&client).await;
    let gcp = Tiny::new("gcp", "capgt");
    gcp.put(&client).await;
    let installer = Running::as_admin(&env, config());
    let roles: Api<ClusterRole> = Api::all(client.clone());
    eventually(MINUTE, "aws and gcp ahead, waiting for core", || async {
        let s = co_status(&client).await?;
        let message = condition(&s, "Progressing")?.message;
        let waiting = ["aws", "gcp"]
            .iter()
            .all(|p| message.contains(&format!("{p} v1.0.0: waiting for ConfigMap cluster-api")));
        let ahead = roles.get_opt(&aws.cluster_role()).await.unwrap().is_some()
            && roles.get_opt(&gcp.cluster_role()).await.unwrap().is_some();
        (waiting && ahead).then_some(())
    })
    .await;
    // The passes of every provider end once the round stops changing (the new CRDs' names accepted):
    // then gcp is not planned in two looks of core's gate (every 5 s).
    let gcp_plans = || installer.metrics.plans("ConfigMap gcp");
    let before = eventually(
        MINUTE,
        "no pass of every provider in two passes",
        || async {
            let (plans, passes) = (gcp_plans(), installer.metrics.passes());
            eventually(MINUTE, "two more passes", || async {
                (installer.metrics.passes() >= passes + 2).then_some(())
            })
            .await;
            (gcp_plans() == plans).then_some(plans)
        },
    )
    .await;
    let since = env.audit().last().unwrap().stage_timestamp.0;

    let rules = roles.get(&aws.cluster_role()).await.unwrap().rules;
    let tampered = json!({"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]});
    roles
        .patch(
            &aws.cluster_role(),
            &PatchParams::default(),
            &Patch::Merge(&tampered),
        )
        .await
        .unwrap();
    eventually(MINUTE, "the aws ClusterRole's rules restored", || async {
        (roles.get(&aws.cluster_role()).await.ok()?.rules == rules).then_some(())
    })
    .await;
    let written = |prefix: &str| -> Vec<String> {
        installer_writes(&env.audit(), Some(since))
            .iter()
            .filter(|e| {
                e.object_ref
                    .as_ref()
                    .and_then(|o| o.name.as_deref())
                    .is_some_and(|name| name.starts_with(prefix))
            })
            .map(describe)
            .collect()
    };
    let aws_writes = written(aws.prefix);
    assert!(
        aws_writes.len() == 1 && aws_writes[0].contains(&aws.cluster_role()),
        "one write of aws, its ClusterRole: {aws_writes:#?}"
    );
    for tiny in [&core, &gcp] {
        let writes = written(tiny.prefix);
        assert!(writes.is_empty(), "{} written: {writes:#?}", tiny.provider);
    }
    assert_eq!(gcp_plans(), before, "gcp not planned again");

    // No input changes: a node now matches core's Deployment.
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(client.clone());
    let label = json!({"metadata": {"labels": {"test.capi-installer/no-such-node": "true"}}});
    for node in nodes.list(&Default::default()).await.unwrap() {
        nodes
            .patch(
                &node.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&label),
            )
            .await
            .unwrap();
    }
    wait_available(&client, 2 * MINUTE).await;
    for tiny in [&aws, &gcp] {
        assert!(
            deployment_exists(&client, &tiny.deployment()).await,
            "{}'s Deployment",
            tiny.provider
        );
    }
}

/// gcp installs and is Available while aws (the platform's) is refused; the ClusterOperator says which.
async fn broken_platform_provider(client: &Client) {
    let gcp = eventually(
        3 * MINUTE,
        "InfrastructureProvider gcp Available",
        || async {
            let gcp = infrastructure_providers(client).get("gcp").await.ok()?;
            let available = provider_condition(&gcp, "Available")?;
            (available.status == "True").then_some(gcp)
        },
    )
    .await;
    assert!(deployment_exists(client, "capg-controller-manager").await);
    assert!(!deployment_exists(client, "capa-controller-manager").await);
    assert!(
        gcp.finalizers()
            .contains(&"installer.cluster-api.openshift.io/uninstall".to_string())
    );
    assert_eq!(gcp.data["status"]["version"], "v1.11.0");
    assert_eq!(gcp.data["status"]["source"], "ConfigMap gcp");
    assert_eq!(gcp.data["status"]["revision"], 1);
    let s = co_status(client).await.unwrap();
    let available = condition(&s, "Available").unwrap();
    assert_eq!(available.status, "False");
    assert_eq!(available.reason, "InvalidProviderManifests");
    assert!(available.message.contains("ConfigMap aws"), "{available:?}");
}

/// An object naming the platform's provider says it is always installed; deleting it removes nothing.
async fn platform_provider_object(env: &Env) {
    let client = &env.admin;
    request_provider(client, "aws").await;
    let aws = eventually(MINUTE, "InfrastructureProvider aws reported", || async {
        let aws = infrastructure_providers(client).get("aws").await.ok()?;
        provider_condition(&aws, "Uninstallable")
    })
    .await;
    assert_eq!(
        (aws.status.as_str(), aws.reason.as_str()),
        ("False", "PlatformProvider")
    );
    let out = Command::new(BIN)
        .args(["status", "--kubeconfig"])
        .arg(env.cp.kubeconfig_path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("InfrastructureProviders:") && text.contains("ConfigMap gcp"),
        "{text}"
    );
    infrastructure_providers(client)
        .delete("aws", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(
        &infrastructure_providers(client),
        "aws",
        MINUTE,
        "InfrastructureProvider aws released",
    )
    .await;
    assert!(deployment_exists(client, "capa-controller-manager").await);
}

/// Deleting InfrastructureProvider gcp (asking for its CRDs) removes everything of gcp but a CRD
/// with an instance, which is reported; once the instance is gone the CRD goes and the object too.
async fn uninstall(client: &Client) {
    let instance = json!({"apiVersion": "bootstrap.cluster.x-k8s.io/v1beta1", "kind": "GKEConfig",
        "metadata": {"name": "keep-me", "namespace": NS}, "spec": {}});
    gkeconfigs(client)
        .create(
            &PostParams::default(),
            &serde_json::from_value(instance).unwrap(),
        )
        .await
        .expect("a GKEConfig");
    infrastructure_providers(client)
        .patch(
            "gcp",
            &PatchParams::apply("admin"),
            &Patch::Apply(
                json!({"apiVersion": "installer.cluster-api.openshift.io/v1alpha1",
                "kind": "InfrastructureProvider", "metadata": {"name": "gcp"},
                "spec": {"deleteCustomResourceDefinitions": true}}),
            ),
        )
        .await
        .unwrap();
    infrastructure_providers(client)
        .delete("gcp", &DeleteParams::default())
        .await
        .unwrap();
    let kept = eventually(2 * MINUTE, "gcp uninstalled but its used CRD", || async {
        let gcp = infrastructure_providers(client).get("gcp").await.ok()?;
        let kept = gcp.data["status"]["keptCustomResourceDefinitions"].clone();
        let gone = !deployment_exists(client, "capg-controller-manager").await
            && !crd_exists(client, "gcpclusters.infrastructure.cluster.x-k8s.io").await;
        (gone && kept.is_array()).then_some(kept)
    })
    .await;
    assert_eq!(
        kept,
        json!([format!("{GKECONFIGS}: instances of GKEConfig still exist")])
    );
    assert!(crd_exists(client, GKECONFIGS).await);
    let s = co_status(client).await.unwrap();
    let progressing = condition(&s, "Progressing").unwrap();
    assert!(
        progressing.status == "True" && progressing.message.contains("uninstalling gcp"),
        "{progressing:?}"
    );
    assert!(deployment_exists(client, "capa-controller-manager").await);

    gkeconfigs(client)
        .delete("keep-me", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(
        &infrastructure_providers(client),
        "gcp",
        2 * MINUTE,
        "InfrastructureProvider gcp gone",
    )
    .await;
    // A deleted CRD stays until the API server has removed its instances and its finalizer
    // (`customresourcecleanup.apiextensions.k8s.io`): the installer issued the delete before it
    // released the InfrastructureProvider, the object may outlive that by a moment.
    wait_gone(&crds(client), GKECONFIGS, MINUTE, "CRD gkeconfigs deleted").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), INSTALLER_NS);
    let inventory = api.get("capi-installer-inventory").await.unwrap();
    let keys: Vec<&String> = inventory.data.as_ref().unwrap().keys().collect();
    assert!(!keys.iter().any(|k| k.contains("gcp")), "{keys:?}");
    assert!(
        api.get_opt("capi-installer-revisions-gcp")
            .await
            .unwrap()
            .is_none()
    );
    let s = wait_available(client, MINUTE).await;
    let available: Value = json!(condition(&s, "Available").unwrap().message);
    assert!(!available.to_string().contains("gcp"), "{available}");
}
