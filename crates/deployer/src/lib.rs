//! The installer's own Deployment with an image volume per provider image (ref §3.2), kept by
//! `capi-installer deployer`, as the reference's installer-deployment controller keeps it: the
//! images of the release (the values of ConfigMap `capi-installer-images`) and every image a
//! revision in `ClusterAPI/cluster` status still names, each mounted read-only at
//! `/var/lib/provider-images/<volume>` ([`capi_manifests::image_volume`]). A release upgrade that
//! changes the ConfigMap changes the pod template, so the Deployment rolls the installer's pods onto
//! the new volumes; once the installer trims the earlier revision, its images go too (one more
//! rollout).
//!
//! Why a second component: the cluster-version operator applies the release manifests and removes
//! every volume a manifest does not name, so nothing can add volumes to a Deployment it manages
//! (docs/design/image-volumes.md). The deployer runs in the release's Deployment
//! (`manifests/0000_30_capi-installer_04_deployer.yaml`) and applies this one with server-side apply
//! (its own field manager, forced), from the template compiled in here (`deployment.yaml` beside this
//! file, not a release manifest), one definition of the installer's pod.
//!
//! Taking over: a release before the deployer shipped the installer's Deployment as a release
//! manifest, so on an upgrade the object is there, written by the cluster-version operator. The
//! deployer first moves that manager's field ownership to its own ([`capi_apply::takeover`]), then
//! applies: it is then the only word on those fields, so the release annotations it does not send
//! (`*release.openshift.io/*`) and any field of the earlier manifest that the template dropped go,
//! and a pod template that is the same rolls nothing. Other managers' fields (the controller
//! manager's revision annotation, an administrator's edit) stay theirs.
//!
//! Untrusted input: a ConfigMap value that is not an image reference, or a missing ConfigMap,
//! writes nothing (the Deployment keeps its volumes) and is logged naming the ConfigMap and key.

#![warn(unreachable_pub)]

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use capi_runtime::optional_watch::{OptionalKind, Wake};
use capi_runtime::pace::{Coalesce, Pass, Woken};
use capi_runtime::trigger::spawn_trigger;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use serde_json::Value;
use tokio::sync::Notify;

use capi_manifests::image::ImagesError;
use capi_manifests::image_volume::{self, MOUNT_ROOT, VolumeError};

use capi_bundle::images::{self, IMAGES_CONFIGMAP};
use capi_bundle::names::DEPLOYMENT;
use capi_bundle::render::Images;
use capi_bundle::unmanaged;

/// The container of the installer's Deployment, into which the images are mounted.
pub(crate) const CONTAINER: &str = "capi-installer";
/// The deployer's field manager (the reference's is `capi-operator-installer-deployment`).
pub(crate) const FIELD_MANAGER: &str = "capi-installer-deployer";
/// The deployer's Lease, beside the installer's.
pub const LEADER_LEASE: &str = "capi-installer-deployer-leader";
/// Who wrote the installer's Deployment before the deployer did: the cluster-version operator, from
/// the release manifest of an earlier release.
const RELEASE_MANAGER: &str = "cluster-version-operator";

/// The installer's pod: the one definition, compiled in (the cluster-version operator must not see
/// it, or it would remove the image volumes).
const TEMPLATE: &str = include_str!("deployment.yaml");
/// Where [`TEMPLATE`] comes from, for errors.
const TEMPLATE_FILE: &str = "crates/deployer/src/deployment.yaml";

/// Reconcile this often even when no event arrives.
const RESYNC: Duration = Duration::from_secs(600);
/// After a refused or failed apply, try again this soon (no event may come to retry it).
const RETRY: Duration = Duration::from_secs(10);

/// What the deployer needs to know beyond the cluster's objects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeployerConfig {
    /// The installer's namespace: the Deployment's, the images ConfigMap's.
    pub namespace: String,
    /// The installer's image (the deployer's own: the release tooling rewrites the deployer's
    /// manifest, not this binary's copy of the template).
    pub installer_image: String,
    /// The release, for the installer's `RELEASE_VERSION`; `None`: the template's.
    pub release_version: Option<String>,
    /// Whether to mount the images (`false`: for nodes whose container runtime cannot mount image
    /// volumes; the installer then reads transport ConfigMaps only).
    pub image_volumes: bool,
    /// More arguments of `capi-installer run`, after the template's (an administrator's, such as
    /// `--take-over-reference`: the Deployment's own arguments are the deployer's to keep).
    pub installer_args: Vec<String>,
}

/// Why the Deployment was not applied.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DeploymentError {
    #[error(
        "{origin}: the ConfigMap is not there (the release payload applies it); Deployment {namespace}/{DEPLOYMENT} left as it is"
    )]
    NoImages { origin: String, namespace: String },
    #[error("{0}; Deployment left as it is")]
    Images(#[from] ImagesError),
    #[error("the installer's Deployment template ({TEMPLATE_FILE}): {0}")]
    Template(String),
    #[error("Deployment {namespace}/{DEPLOYMENT}: {source}")]
    Volumes {
        namespace: String,
        #[source]
        source: VolumeError,
    },
    #[error(
        "taking Deployment {namespace}/{DEPLOYMENT} over from {RELEASE_MANAGER} (moving its field ownership): {source}"
    )]
    TakeOver {
        namespace: String,
        #[source]
        source: kube::Error,
    },
    #[error("applying Deployment {namespace}/{DEPLOYMENT}: {source}")]
    Apply {
        namespace: String,
        #[source]
        source: kube::Error,
    },
}

/// The pod template's annotation that carries a digest of the release's images: the installer reads
/// the images ConfigMap once, at start, so every change of it must replace its pods. The image
/// volumes alone do not: a rollback to the image a kept revision still names mounts the same set as
/// the upgrade before it (the release's image and the kept one trade places), and the pods that read
/// the upgrade's ConfigMap would go on installing it. Set with the image volumes only: without them
/// the pod stays the template's (a Deployment taken over from an earlier release rolls nothing).
pub(crate) const RELEASE_IMAGES_ANNOTATION: &str = "capi-installer.openshift.io/release-images";

/// The images the installer's pod mounts: every release image and every image a kept revision
/// names (`cluster_api_status`: the status of `ClusterAPI/cluster`, `Value::Null` without one);
/// none when `config.image_volumes` is off.
pub(crate) fn mounted_images(
    config: &DeployerConfig,
    release: &Images,
    cluster_api_status: &Value,
) -> BTreeSet<String> {
    if !config.image_volumes {
        return BTreeSet::new();
    }
    let mut all = image_volume::revision_images(cluster_api_status);
    all.extend(release.values().cloned());
    all
}

/// The installer's Deployment as the deployer applies it: the template in `config.namespace`, with
/// the installer's image and release, and, when there is any image to mount, the image volumes and
/// the flags that read them (`--profiles-dir`, only the release's folders: the others are kept for
/// earlier revisions).
pub(crate) fn desired(
    config: &DeployerConfig,
    release: &Images,
    cluster_api_status: &Value,
) -> Result<Value, DeploymentError> {
    let mut deployment = template()?;
    deployment["metadata"]["namespace"] = Value::String(config.namespace.clone());
    let references = mounted_images(config, release, cluster_api_status);
    let container = deployment["spec"]["template"]["spec"]["containers"]
        .as_array_mut()
        .and_then(|cs| cs.iter_mut().find(|c| c["name"] == CONTAINER))
        .ok_or_else(|| DeploymentError::Template(format!("no container {CONTAINER:?}")))?;
    container["image"] = Value::String(config.installer_image.clone());
    if let Some(release) = &config.release_version {
        for env in container["env"].as_array_mut().into_iter().flatten() {
            if env["name"] == "RELEASE_VERSION" {
                env["value"] = Value::String(release.clone());
            }
        }
    }
    let args = container["args"]
        .as_array_mut()
        .ok_or_else(|| DeploymentError::Template(format!("container {CONTAINER:?} has no args")))?;
    args.extend(config.installer_args.iter().cloned().map(Value::String));
    if !references.is_empty() {
        args.push(Value::String(format!("--profiles-dir={MOUNT_ROOT}")));
        args.push(Value::String("--release-images-only".into()));
    }
    image_volume::add_image_volumes(&mut deployment, CONTAINER, &references).map_err(|source| {
        DeploymentError::Volumes {
            namespace: config.namespace.clone(),
            source,
        }
    })?;
    if !references.is_empty() {
        deployment["spec"]["template"]["metadata"]["annotations"][RELEASE_IMAGES_ANNOTATION] =
            Value::String(release_digest(release));
    }
    Ok(deployment)
}

/// A digest of the release's images (key and reference of each, in key order), hex, 16 characters:
/// what tells one release's images from another's in the pod template.
fn release_digest(release: &Images) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    for (key, reference) in release {
        hasher.update(key.as_bytes());
        hasher.update(b"=");
        hasher.update(reference.as_bytes());
        hasher.update(b"\n");
    }
    capi_object::lower_hex(&hasher.finalize()[..8])
}

fn template() -> Result<Value, DeploymentError> {
    let mut documents = capi_manifests::yaml::parse_documents(TEMPLATE_FILE, TEMPLATE)
        .map_err(|e| DeploymentError::Template(e.to_string()))?;
    match (documents.pop(), documents.is_empty()) {
        (Some(d), true)
            if d.value["kind"] == "Deployment" && d.value["metadata"]["name"] == DEPLOYMENT =>
        {
            Ok(d.value)
        }
        _ => Err(DeploymentError::Template(format!(
            "not one Deployment {DEPLOYMENT}"
        ))),
    }
}

/// The deployer's loop: watches the images ConfigMap, `ClusterAPI/cluster` and the Deployment
/// itself, and applies `desired` when it differs from what it applied last, the Deployment's spec
/// was changed by someone else (its generation moved) or the cluster-version operator still owns
/// fields of it (taken over first), until `shutdown` resolves.
pub async fn run(client: Client, config: DeployerConfig, shutdown: impl Future<Output = ()>) {
    let wake = Arc::new(Notify::new());
    let namespace = config.namespace.as_str();
    let (configmaps, configmap_watch) = watch_named(
        Api::<ConfigMap>::namespaced(client.clone(), namespace),
        IMAGES_CONFIGMAP,
        "the images ConfigMap",
        &wake,
    );
    let (deployments, deployment_watch) = watch_named(
        Api::<Deployment>::namespaced(client.clone(), namespace),
        DEPLOYMENT,
        "the installer's Deployment",
        &wake,
    );
    let (cluster_api, cluster_api_watch) = OptionalKind::start_named(
        client.clone(),
        &unmanaged::cluster_api_resource(),
        unmanaged::CLUSTER_API_NAME,
        "ClusterAPI cluster",
        Wake::OnChange(wake.clone()),
    );
    let watches = [configmap_watch, deployment_watch, cluster_api_watch];
    let mut shutdown = std::pin::pin!(shutdown);
    let ready = async {
        let _ = configmaps.wait_until_ready().await;
        let _ = deployments.wait_until_ready().await;
        cluster_api.wait_known().await;
    };
    tokio::select! {
        () = ready => {}
        () = &mut shutdown => {
            watches.iter().for_each(|w| w.abort());
            return;
        }
    }
    let deployer = Deployer {
        api: Api::namespaced(client, namespace),
        config: &config,
        configmaps,
        deployments,
        cluster_api,
        release_manager: BTreeSet::from([RELEASE_MANAGER.to_string()]),
        last: None,
        taken_from: None,
    };
    capi_runtime::pace::run(&[&wake], Coalesce::NONE, shutdown, deployer).await;
    watches.iter().for_each(|w| w.abort());
}

/// What the deployer's passes read from and remember.
struct Deployer<'a> {
    api: Api<Deployment>,
    config: &'a DeployerConfig,
    configmaps: reflector::Store<ConfigMap>,
    deployments: reflector::Store<Deployment>,
    cluster_api: OptionalKind,
    release_manager: BTreeSet<String>,
    /// What was applied last, and the Deployment (UID, generation) right after.
    last: Option<(Value, Applied)>,
    /// The resourceVersion of the object last taken over: until the watch brings the write, the
    /// cache still shows that one with the cluster-version operator's fields.
    taken_from: Option<String>,
}

impl Pass for Deployer<'_> {
    async fn pass(&mut self, _: Woken) -> Duration {
        let Deployer {
            api,
            config,
            configmaps,
            deployments,
            cluster_api,
            release_manager,
            last,
            taken_from,
        } = self;
        let namespace = config.namespace.as_str();
        let mut next = RESYNC;
        let live = deployments.get(&ObjectRef::new(DEPLOYMENT).within(namespace));
        let inherited = live.as_ref().is_some_and(|d| {
            capi_apply::takeover::retired_present(d.managed_fields(), release_manager)
                && d.metadata.resource_version != *taken_from
        });
        let status = cluster_api
            .objects()
            .unwrap_or_default()
            .into_iter()
            .find(|o| o.name_any() == unmanaged::CLUSTER_API_NAME)
            .and_then(|o| o.data.get("status").cloned())
            .unwrap_or(Value::Null);
        let configmap = configmaps.get(&ObjectRef::new(IMAGES_CONFIGMAP).within(namespace));
        let wanted = configmap
            .ok_or_else(|| DeploymentError::NoImages {
                origin: images::configmap_origin(namespace),
                namespace: namespace.to_string(),
            })
            .and_then(|cm| Ok(images::from_configmap(namespace, &cm)?))
            .and_then(|release| Ok((desired(config, &release, &status)?, release)));
        if let (Some((_, at)), Some(d)) = (last.as_mut(), live.as_deref()) {
            at.seen |= d.metadata.uid == at.uid;
        }
        let unchanged = |wanted: &Value| {
            !inherited
                && last
                    .as_ref()
                    .is_some_and(|(applied, at)| applied == wanted && at.still(live.as_deref()))
        };
        match wanted {
            Err(e) => tracing::error!(error = %e, "installer Deployment not applied"),
            // Not there yet is most likely the watch behind the create; look again soon, in case
            // it was deleted in between.
            Ok((wanted, _)) if unchanged(&wanted) && live.is_none() => next = RETRY,
            Ok((wanted, _)) if unchanged(&wanted) => {}
            Ok((wanted, release)) => {
                let taken = match live.as_deref().filter(|_| inherited) {
                    Some(live) => {
                        let taken = take_over(api, live, release_manager, namespace).await;
                        if taken.is_ok() {
                            taken_from.clone_from(&live.metadata.resource_version);
                        }
                        taken
                    }
                    None => Ok(()),
                };
                let applied = match taken {
                    Ok(()) => api
                        .patch(
                            DEPLOYMENT,
                            &PatchParams::apply(FIELD_MANAGER).force(),
                            &Patch::Apply(&wanted),
                        )
                        .await
                        .map_err(|source| DeploymentError::Apply {
                            namespace: namespace.to_string(),
                            source,
                        }),
                    Err(e) => Err(e),
                };
                match applied {
                    Ok(applied) => {
                        let mounted = mounted_images(config, &release, &status);
                        tracing::info!(deployment = %format!("{namespace}/{DEPLOYMENT}"), generation = ?applied.metadata.generation, images = ?mounted, "installer Deployment applied");
                        *last = Some((wanted, Applied::of(&applied)));
                    }
                    Err(e) => {
                        tracing::error!(error = %e, retry_in = ?RETRY, "installer Deployment not applied");
                        *last = None;
                        next = RETRY;
                    }
                }
            }
        }
        next
    }
}

/// The Deployment as the deployer's last apply left it.
struct Applied {
    uid: Option<String>,
    generation: Option<i64>,
    /// Whether the watch has shown this object since.
    seen: bool,
}

impl Applied {
    fn of(d: &Deployment) -> Applied {
        Applied {
            uid: d.metadata.uid.clone(),
            generation: d.metadata.generation,
            seen: false,
        }
    }

    /// Whether `live` (the watch's copy) is still what was applied: the same object, its spec not
    /// changed since. The watch may lag behind the apply: a lower generation is a copy from before it
    /// (generations only grow), and no object at all one from before a create, until the watch has
    /// shown the object once; a higher generation is someone else's write, and another UID or a
    /// Deployment gone after it was seen is a deletion.
    fn still(&self, live: Option<&Deployment>) -> bool {
        match live {
            Some(d) => d.metadata.uid == self.uid && d.metadata.generation <= self.generation,
            None => !self.seen,
        }
    }
}

/// Moves the field ownership the cluster-version operator holds on the installer's Deployment `live`
/// (an earlier release's manifest) to the deployer, so that the apply after it is the only word on
/// those fields.
async fn take_over(
    api: &Api<Deployment>,
    live: &Deployment,
    release_manager: &BTreeSet<String>,
    namespace: &str,
) -> Result<(), DeploymentError> {
    let moved = capi_apply::takeover::move_ownership(
        api,
        &live.metadata,
        release_manager,
        FIELD_MANAGER,
        "apps/v1",
    )
    .await
    .map_err(|source| DeploymentError::TakeOver {
        namespace: namespace.to_string(),
        source,
    })?;
    if moved {
        tracing::info!(deployment = %format!("{namespace}/{DEPLOYMENT}"), from = RELEASE_MANAGER, "field ownership of the earlier release's Deployment moved to the deployer");
    }
    Ok(())
}

/// One object of `api` watched by name into a store, waking `wake` on each change.
fn watch_named<K>(
    api: Api<K>,
    name: &str,
    what: &'static str,
    wake: &Arc<Notify>,
) -> (reflector::Store<K>, tokio::task::JoinHandle<()>)
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    let (store, writer) = reflector::store::<K>();
    let stream = watcher(
        api,
        watcher::Config::default().fields(&format!("metadata.name={name}")),
    )
    .default_backoff()
    .reflect(writer);
    (store, spawn_trigger(what, stream, wake.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config() -> DeployerConfig {
        DeployerConfig {
            namespace: "ns".into(),
            installer_image: "quay.io/installer@sha256:1".into(),
            release_version: Some("4.22.1".into()),
            image_volumes: true,
            installer_args: vec!["--take-over-reference".into()],
        }
    }

    fn release(pairs: &[(&str, &str)]) -> Images {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn container(d: &Value) -> &Value {
        &d["spec"]["template"]["spec"]["containers"][0]
    }

    #[test]
    fn the_shipped_pod_with_the_release_and_kept_images_mounted() {
        let (core, aws, old_aws) = (
            "quay.io/a@sha256:c",
            "quay.io/a@sha256:a2",
            "quay.io/a@sha256:a1",
        );
        let status = json!({"revisions": [{"name": "r1", "revision": 1, "components": [
            {"name": "cluster-api-provider-aws", "type": "Image", "image": {"ref": old_aws, "profile": "default"}},
            {"name": "cluster-api", "type": "Image", "image": {"ref": core, "profile": "default"}}]}]});
        let d = desired(
            &config(),
            &release(&[
                ("cluster-capi-controllers", core),
                ("aws-cluster-api-controllers", aws),
            ]),
            &status,
        )
        .unwrap();
        assert_eq!(d["metadata"]["namespace"], "ns");
        let annotations: Vec<&String> = d["metadata"]["annotations"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| k)
            .collect();
        assert!(
            annotations.is_empty(),
            "CVO annotations left: {annotations:?}"
        );
        let c = container(&d);
        assert_eq!(c["image"], "quay.io/installer@sha256:1");
        assert!(
            c["env"]
                .as_array()
                .unwrap()
                .contains(&json!({"name": "RELEASE_VERSION", "value": "4.22.1"}))
        );
        let args: Vec<&str> = c["args"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(
            args.ends_with(&[
                "--take-over-reference",
                "--profiles-dir=/var/lib/provider-images",
                "--release-images-only"
            ]),
            "{args:?}"
        );
        // The template's own volume first, then one per image (the kept one too), sorted by reference.
        let volumes: Vec<&str> = d["spec"]["template"]["spec"]["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["name"].as_str().unwrap())
            .collect();
        let mut want = vec!["metrics-tls".to_string()];
        let mut refs = [core, aws, old_aws];
        refs.sort();
        want.extend(refs.iter().map(|r| image_volume::volume_name(r)));
        assert_eq!(volumes, want);
        let mounts: Vec<&str> = c["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["mountPath"].as_str().unwrap())
            .collect();
        assert_eq!(mounts[0], "/etc/capi-installer/metrics-tls");
        assert_eq!(
            mounts[1..],
            refs.map(image_volume::mount_path)
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>()[..]
        );
    }

    /// An upgrade from image a1 to a2 while revision 1 (a1) is kept, then the rollback to a1 while
    /// revision 2 (a2) is kept: the same images mounted, yet the installer's pods must roll, since
    /// each read its release's images at start.
    #[test]
    fn a_rollback_to_a_kept_image_replaces_the_installer_s_pods() {
        let kept = |image: &str| {
            json!({"revisions": [{"name": "r", "revision": 1, "components": [
                {"name": "cluster-api-provider-aws", "type": "Image", "image": {"ref": image, "profile": "default"}}]}]})
        };
        let (a1, a2) = ("quay.io/a@sha256:a1", "quay.io/a@sha256:a2");
        let upgrade = desired(
            &config(),
            &release(&[("aws-cluster-api-controllers", a2)]),
            &kept(a1),
        )
        .unwrap();
        let rollback = desired(
            &config(),
            &release(&[("aws-cluster-api-controllers", a1)]),
            &kept(a2),
        )
        .unwrap();
        let template = |d: &Value| d["spec"]["template"].clone();
        assert_eq!(
            template(&upgrade)["spec"]["volumes"],
            template(&rollback)["spec"]["volumes"]
        );
        assert_ne!(template(&upgrade), template(&rollback));
        let annotation = |d: &Value| {
            d["spec"]["template"]["metadata"]["annotations"][RELEASE_IMAGES_ANNOTATION].clone()
        };
        assert_ne!(annotation(&upgrade), annotation(&rollback));
        // The same release and kept revisions: the same pod.
        let again = desired(
            &config(),
            &release(&[("aws-cluster-api-controllers", a1)]),
            &kept(a2),
        )
        .unwrap();
        assert_eq!(template(&again), template(&rollback));
    }

    #[test]
    fn without_images_the_pod_reads_no_profiles() {
        let without_volumes = DeployerConfig {
            image_volumes: false,
            ..config()
        };
        let some = release(&[("cluster-capi-controllers", "quay.io/a@sha256:c")]);
        let kept = json!({"revisions": [{"name": "r1", "revision": 1, "components": [
            {"name": "cluster-api", "type": "Image", "image": {"ref": "quay.io/a@sha256:k", "profile": "default"}}]}]});
        // No image at all, or images not to be mounted (a node that cannot mount them): the template's
        // pod as it is, image and release aside.
        for (config, release, status) in [
            (config(), Images::new(), Value::Null),
            (without_volumes, some, kept),
        ] {
            let d = desired(&config, &release, &status).unwrap();
            let c = container(&d);
            assert!(
                !c["args"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|a| a.as_str().unwrap().starts_with("--profiles-dir"))
            );
            assert_eq!(
                d["spec"]["template"]["spec"]["volumes"]
                    .as_array()
                    .unwrap()
                    .len(),
                1
            );
            assert!(mounted_images(&config, &release, &status).is_empty());
        }
        // No release given: the template's.
        let mut no_release = config();
        no_release.release_version = None;
        let d = desired(&no_release, &Images::new(), &Value::Null).unwrap();
        assert!(
            container(&d)["env"]
                .as_array()
                .unwrap()
                .contains(&json!({"name": "RELEASE_VERSION", "value": "0.0.1-snapshot"}))
        );
    }
}
