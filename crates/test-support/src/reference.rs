//! A cluster as OpenShift's cluster-capi-operator (the reference) leaves it: the provider objects it
//! rendered, written the way each of its generations writes them (`../shared/reference/`, §2.6 and
//! §3.7), before this installer runs. The content is rendered by the installer's own render, as the
//! reference renders the same sources (images, envsubst, selfImageRef); what differs is who wrote the
//! objects and what marks they carry — what taking over has to deal with.

use std::path::Path;

use capi_installer_controller::prepare::{self, RenderContext};
use capi_installer_controller::source::profile::ProfileCatalog;
use capi_installer_controller::source::{ProviderSource, Target, configmap};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::discovery::{Discovery, Scope};
use kube::runtime::wait::{await_condition, conditions};
use serde_json::{Value, json};

use crate::{NS, fixture, images, read_documents};

/// The first generation's field manager: client-go's default for its `cluster-capi-operator`
/// binary, with client-side create and update.
pub const FIRST_GENERATION_MANAGER: &str = "cluster-capi-operator";
/// The current generation's: boxcutter's server-side apply for the reference's InstallerController.
pub const CURRENT_GENERATION_MANAGER: &str = "capi-operator.openshift.io/InstallerController";

/// The substitutions the reference makes on a cluster without a TLS profile of its own
/// (`EXP_BOOTSTRAP_FORMAT_IGNITION=true` always; the Intermediate TLS profile).
pub fn reference_substitutions() -> std::collections::BTreeMap<String, String> {
    let mut s = capi_installer_controller::tls::cluster_substitutions(None).unwrap();
    s.insert("EXP_BOOTSTRAP_FORMAT_IGNITION".into(), "true".into());
    s
}

fn context() -> RenderContext {
    RenderContext {
        namespace: NS.into(),
        images: images(),
        substitutions: reference_substitutions(),
        ..Default::default()
    }
}

/// The objects of a fixture transport ConfigMap (`transport-configmaps/<file>`) rendered for this
/// cluster, as the first generation applied them.
pub fn rendered_configmap(file: &str) -> Vec<Value> {
    let path = fixture(&format!("transport-configmaps/{file}")).expect("fixture present");
    let cm = read_documents(&path).remove(0);
    let source = configmap::candidate(&serde_json::from_value(cm.clone()).unwrap())
        .expect("a transport ConfigMap");
    let payload = configmap::payload(&cm).expect("decodes");
    render(&payload, source)
}

/// The objects of the profiles under `dir` (laid out as image volumes) for `provider`, rendered for
/// this cluster as the current generation renders them; with the component name the reference
/// labels them with (`metadata.yaml`'s `name`).
pub fn rendered_profile(dir: &Path, provider: &str) -> (String, Vec<Value>) {
    let catalog = ProfileCatalog::read(dir, None).expect("profiles readable");
    let (source, profile) = catalog
        .profiles()
        .into_iter()
        .find(|(s, _)| s.name == provider)
        .unwrap_or_else(|| panic!("a profile of {provider}"));
    let payload = profile.payload().expect("readable");
    (
        profile.metadata.name.clone(),
        render(&payload, source.clone()),
    )
}

fn render(
    payload: &capi_installer_controller::source::Payload,
    source: ProviderSource,
) -> Vec<Value> {
    let clusterctl_label = source.provider_type.clusterctl_label(&source.name);
    let target = Target {
        source,
        clusterctl_label,
    };
    let rendered = prepare::render(payload, &target, &context()).expect("renders");
    rendered
        .inputs
        .into_iter()
        .map(|i| {
            let mut v = serde_json::to_value(&i.object).unwrap();
            // The reference applies an aggregated ClusterRole's (empty) rules as its manifest has them;
            // the installer's render leaves them to the aggregation controller.
            if v["kind"] == "ClusterRole" && v.get("aggregationRule").is_some() {
                v["rules"] = json!([]);
            }
            v
        })
        .collect()
}

/// The reference's apply order: CRDs, then everything else, Deployments last (ref §2.6).
fn in_reference_order(objects: &[Value]) -> Vec<&Value> {
    let rank = |v: &Value| match v["kind"].as_str() {
        Some("CustomResourceDefinition") => 0,
        Some("Deployment") => 2,
        _ => 1,
    };
    let mut ordered: Vec<&Value> = objects.iter().collect();
    ordered.sort_by_key(|v| rank(v));
    ordered
}

/// The API of `object`'s kind, from one discovery of the cluster's kinds.
fn api_of(client: &Client, discovery: &Discovery, object: &Value) -> Api<DynamicObject> {
    let obj: DynamicObject = serde_json::from_value(object.clone()).unwrap();
    let gvk = GroupVersionKind::try_from(obj.types.as_ref().unwrap()).unwrap();
    let (resource, caps) = discovery
        .resolve_gvk(&gvk)
        .unwrap_or_else(|| panic!("{} is not served", gvk.kind));
    match (caps.scope, object["metadata"]["namespace"].as_str()) {
        (Scope::Namespaced, Some(ns)) => Api::namespaced_with(client.clone(), ns, &resource),
        _ => Api::all_with(client.clone(), &resource),
    }
}

/// Discovers the kinds after `objects`' CRDs are created (they must be served for the rest).
async fn discover(client: &Client) -> Discovery {
    Discovery::new(client.clone())
        .run_aggregated()
        .await
        .expect("discovery")
}

/// Creates (or applies) the CRDs among `objects` first and waits until they are Established, so
/// that the rest can be resolved.
async fn crds_first<F, Fut>(client: &Client, objects: &[Value], mut write: F)
where
    F: FnMut(Api<DynamicObject>, Value) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let discovery = discover(client).await;
    let crds: Vec<&Value> = objects
        .iter()
        .filter(|o| o["kind"] == "CustomResourceDefinition")
        .collect();
    for crd in &crds {
        write(api_of(client, &discovery, crd), (*crd).clone()).await;
    }
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in &crds {
        let name = crd["metadata"]["name"].as_str().unwrap();
        tokio::time::timeout(
            crate::CRD_DEADLINE,
            await_condition(api.clone(), name, conditions::is_crd_established()),
        )
        .await
        .unwrap_or_else(|_| panic!("CRD {name} Established"))
        .unwrap();
    }
}

/// Creates `objects` as the first generation did: client-side creates as
/// [`FIRST_GENERATION_MANAGER`], no labels of its own, library-go's `operator.openshift.io/pull-spec`
/// annotation on each Deployment.
pub async fn install_as_first_generation(client: &Client, objects: &[Value]) {
    let params = PostParams {
        field_manager: Some(FIRST_GENERATION_MANAGER.into()),
        ..Default::default()
    };
    let create = |api: Api<DynamicObject>, mut object: Value| {
        let params = params.clone();
        async move {
            if object["kind"] == "Deployment" {
                let image = object["spec"]["template"]["spec"]["containers"][0]["image"].clone();
                object["metadata"]["annotations"]["operator.openshift.io/pull-spec"] = image;
            }
            let mut obj: DynamicObject = serde_json::from_value(object.clone()).unwrap();
            let what = format!("{} {}", object["kind"], object["metadata"]["name"]);
            match api.create(&params, &obj).await {
                Ok(_) => {}
                // The release payload applied it first (core's IPAM CRDs): the reference's
                // create-or-update updates it, client-side.
                Err(kube::Error::Api(s)) if s.code == 409 => {
                    let name = obj.metadata.name.clone().unwrap();
                    let live = api.get(&name).await.unwrap();
                    obj.metadata.resource_version = live.metadata.resource_version;
                    api.replace(&name, &params, &obj)
                        .await
                        .unwrap_or_else(|e| panic!("updating {what}: {e}"));
                }
                Err(e) => panic!("creating {what}: {e}"),
            }
        }
    };
    crds_first(client, objects, &create).await;
    let discovery = discover(client).await;
    for object in in_reference_order(objects)
        .into_iter()
        .filter(|o| o["kind"] != "CustomResourceDefinition")
    {
        create(api_of(client, &discovery, object), object.clone()).await;
    }
}

/// Applies `objects` as the current generation did: boxcutter's server-side apply as
/// [`CURRENT_GENERATION_MANAGER`], with its labels (`app.kubernetes.io/managed-by: boxcutter`,
/// `capi-operator.openshift.io/managed-by: <component>`) and its annotation
/// (`capi-operator.openshift.io/revision`).
pub async fn install_as_current_generation(
    client: &Client,
    component: &str,
    revision: u32,
    objects: &[Value],
) {
    let apply = |api: Api<DynamicObject>, mut object: Value| async move {
        let meta = &mut object["metadata"];
        meta["labels"]["app.kubernetes.io/managed-by"] = json!("boxcutter");
        meta["labels"]["capi-operator.openshift.io/managed-by"] = json!(component);
        meta["annotations"]["capi-operator.openshift.io/revision"] = json!(revision.to_string());
        let name = object["metadata"]["name"].as_str().unwrap().to_string();
        api.patch(
            &name,
            &PatchParams::apply(CURRENT_GENERATION_MANAGER).force(),
            &Patch::Apply(&object),
        )
        .await
        .unwrap_or_else(|e| panic!("applying {} {name}: {e}", object["kind"]));
    };
    crds_first(client, objects, &apply).await;
    let discovery = discover(client).await;
    for object in in_reference_order(objects)
        .into_iter()
        .filter(|o| o["kind"] != "CustomResourceDefinition")
    {
        apply(api_of(client, &discovery, object), object.clone()).await;
    }
}
