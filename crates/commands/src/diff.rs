//! What the installer would change in a cluster, without writing anything: `capi-installer diff`.
//!
//! The same steps as a reconcile (the installer library's `reconcile`), stopped before the first write: the platform
//! and the providers it needs ([`desired`]), the round of their sources ([`Round::new`]: the transport
//! ConfigMaps of the cluster, replaced or completed by the ones given; the bundle policy with the
//! cluster's extensions of it, [`crate::extensions`]), then per provider the round's planner (render,
//! bundle policy, plan, ahead of the cluster: see [`crate::round`]), the apply engine's own decision and server-side dry-run for every object ([`Applier::preview`]) and for prune
//! ([`capi_apply::prune_dry_run`]).
//! A provider the installer would refuse (a policy violation, an unsafe CRD change, an object the API
//! server rejects or that is not ours) is reported with why, and nothing else of it.
//!
//! Requests: discovery, a LIST of the policy's extensions (ClusterRoles, ConfigMaps), a GET per object
//! (there is no watch cache), a dry-run PATCH per object that would be written, a GET and a dry-run
//! DELETE per object that would be pruned. Dry-runs are not
//! writes: the audit log shows none.

use std::collections::BTreeSet;

use capi_apply::{
    Applier, ApplyAction, ApplyError, FieldChange, Inventory, InventoryStore, KeepReason,
    KindResolver, PlannedObject,
};
use capi_openshift::resources::{APISERVER, APISERVER_NAME, PROXY, PROXY_NAME, api_resource};
use capi_openshift::{INFRASTRUCTURE, INFRASTRUCTURE_NAME};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::Client;
use kube::api::{Api, DynamicObject, ListParams};
use serde::Serialize;
use serde_json::Value;

use crate::desired::{self, Desired};
use crate::names::{FIELD_MANAGER, INVENTORY_CONFIGMAP};
use crate::policy::{self, Ceiling, FieldBound, PolicyConfig};
use crate::prepare::{Prepared, RenderContext};
use crate::proxy::ClusterProxy;
use crate::round::{Planner, Round};
use crate::source::{ProviderSource, SourceId, Target, configmap};

/// What the diff needs of the installer's settings.
#[derive(Debug, Clone)]
pub struct DiffConfig {
    /// The providers' namespace (transport ConfigMaps, provider objects).
    pub namespace: String,
    /// The installer's namespace (its inventory).
    pub installer_namespace: String,
    pub images: crate::render::Images,
    pub substitutions: std::collections::BTreeMap<String, String>,
    pub adoptable_managers: Vec<String>,
    pub retired_managers: Vec<String>,
    pub policy: PolicyConfig,
    /// Dry-run each provider's objects as its own identity, as the installer writes them
    /// ([`capi_installer_controller::InstallerConfig::identities`]): the API server then judges every grant against that
    /// provider's RBAC. `None`: as the caller.
    pub identities: Option<capi_apply::Identities>,
}

/// Why there is no diff at all.
#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    #[error("reading {what}: {source}")]
    Read {
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error("{0}")]
    Input(String),
    #[error(transparent)]
    Images(#[from] capi_manifests::image::ImagesError),
}

/// The installer's own image references, read from the cluster (ConfigMap `capi-installer-images` of
/// its namespace, [`crate::source::images`]): the default of `diff`'s images.
pub async fn release_images(
    client: &Client,
    installer_namespace: &str,
) -> Result<std::collections::BTreeMap<String, String>, DiffError> {
    use crate::source::images::{ReadError, read};
    match read(client, installer_namespace).await {
        Ok(images) => Ok(images),
        Err(ReadError::Malformed(e)) => Err(e.into()),
        Err(ReadError::Request { origin, source }) => Err(DiffError::Read {
            what: origin,
            source,
        }),
        Err(e @ ReadError::Missing { .. }) => {
            Err(DiffError::Input(format!("{e}; pass --images-json FILE")))
        }
    }
}

/// How an object would change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    Created,
    Changed,
    /// Taken over from an adoptable manager (its fields may change too).
    Adopted,
    Pruned,
}

#[derive(Debug, Clone, Serialize)]
pub struct ObjectDiff {
    /// `Kind namespace/name`.
    pub object: String,
    pub change: Change,
    /// For `changed` and `adopted`: the fields the apply would set, change or remove (only those the
    /// installer owns; the desired-hash annotation left out).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<FieldChange>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProviderDiff {
    /// `ConfigMap openshift-cluster-api/aws`.
    pub source: String,
    pub provider: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    pub objects: Vec<ObjectDiff>,
    /// Why the installer would refuse this version (it would then change nothing of this provider):
    /// bundle policy violations, unsafe CRD changes, objects the API server rejects or that are not
    /// the installer's, a payload that cannot be rendered.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// `Installing`, or why nothing is installed (`waiting for the platform`, an unsupported platform).
    pub platform: String,
    pub providers: Vec<ProviderDiff>,
    /// Providers the platform needs that no source provides.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
}

impl Report {
    /// Whether the installer would change anything (or refuse something, or miss a provider).
    pub fn differs(&self) -> bool {
        !self.missing.is_empty()
            || self
                .providers
                .iter()
                .any(|p| !p.objects.is_empty() || !p.refused.is_empty())
    }
}

/// What the installer would do for `given` transport ConfigMaps (JSON, as read from files): each
/// replaces the cluster's ConfigMap of the same name; the cluster's other transport ConfigMaps stay.
pub async fn diff(
    client: &Client,
    config: &DiffConfig,
    given: Vec<Value>,
) -> Result<Report, DiffError> {
    let wants = match platform(client).await? {
        Desired::Install(wants) => wants,
        other => {
            return Ok(Report {
                platform: format!("{other:?}"),
                providers: Vec::new(),
                missing: Vec::new(),
            });
        }
    };
    let configmaps = transport_configmaps(client, &config.namespace, given).await?;
    let mut candidates = Vec::new();
    for cm in &configmaps {
        let typed: ConfigMap =
            serde_json::from_value(cm.clone()).map_err(|e| DiffError::Input(e.to_string()))?;
        candidates.extend(configmap::candidate(&typed));
    }
    let store = InventoryStore::new(
        client.clone(),
        &config.installer_namespace,
        INVENTORY_CONFIGMAP,
        FIELD_MANAGER,
    );
    let owners = owners(&store, &candidates).await?;
    let apiserver = cluster_config(client, &APISERVER, APISERVER_NAME).await?;
    let proxy = cluster_config(client, &PROXY, PROXY_NAME).await?;
    let (substitutions, unavailable) =
        crate::tls::with_cluster_profile(apiserver.as_ref(), &config.substitutions);
    let ctx = RenderContext {
        namespace: config.namespace.clone(),
        images: config.images.clone(),
        substitutions,
        unavailable,
        policy: config.policy.clone(),
        parsed: Default::default(),
        proxy: ClusterProxy::read(proxy.as_ref()),
        requirements: requirements(client).await?,
    };
    let (ceiling, fields) = policy_extensions(client, &config.installer_namespace).await?;
    let round = Round::new(&wants.providers, &candidates, &owners, &ctx)
        .with_ceiling(&ceiling)
        .with_fields(&fields);
    let mut applier = Applier::new(
        client.clone(),
        FIELD_MANAGER,
        crate::names::ownership(&config.adoptable_managers, &config.retired_managers),
    );
    if let Some(identities) = &config.identities {
        applier = applier.with_identities(identities.clone());
        for target in &round.selection.targets {
            crate::names::act_as(
                identities,
                &config.installer_namespace,
                &target.source.id,
                &target.clusterctl_label,
            );
        }
    }
    let served = discover(client).await?;
    let preview = Preview {
        client,
        applier: &applier,
        store: &store,
    };
    // Later providers may use the kinds of earlier ones, as a reconcile finds them served.
    let mut planner = round.planner_ahead();
    let mut providers = Vec::new();
    for target in &round.selection.targets {
        let cm = target.source.id.configmap().and_then(|name| {
            configmaps
                .iter()
                .find(|c| c.pointer("/metadata/name").and_then(Value::as_str) == Some(name))
        });
        providers.push(preview.provider(&mut planner, &served, target, cm).await?);
    }
    Ok(Report {
        platform: format!("{:?}", wants.platform),
        providers,
        missing: round
            .selection
            .missing
            .iter()
            .map(|w| w.describe())
            .collect(),
    })
}

fn read_error(what: &str) -> impl FnOnce(kube::Error) -> DiffError {
    let what = what.to_owned();
    move |source| DiffError::Read { what, source }
}

/// One of the cluster's configuration singletons (`APIServer/cluster`, `Proxy/cluster`) as JSON;
/// `None` without the object or its kind (not OpenShift), as the installer reads them.
async fn cluster_config(
    client: &Client,
    kind: &capi_object::KnownKind,
    name: &str,
) -> Result<Option<Value>, DiffError> {
    let object = Api::<DynamicObject>::all_with(client.clone(), &api_resource(kind))
        .get_opt(name)
        .await
        .or_else(|e| match e {
            kube::Error::Api(s) if s.code == 404 => Ok(None),
            e => Err(e),
        })
        .map_err(read_error(&format!("{} {name}", kind.kind)))?;
    Ok(object.map(|o| serde_json::to_value(o).expect("an object serializes")))
}

/// The cluster's `CompatibilityRequirement`s that can be read (none without the kind), as the
/// installer judges a provider's CRDs against them.
async fn requirements(client: &Client) -> Result<Vec<capi_compat::Requirement>, DiffError> {
    let api: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &api_resource(&capi_openshift::resources::COMPATIBILITY_REQUIREMENT),
    );
    let list = match api.list(&ListParams::default()).await {
        Ok(list) => list.items,
        Err(kube::Error::Api(s)) if s.code == 404 => Vec::new(),
        Err(e) => return Err(read_error("CompatibilityRequirements")(e)),
    };
    Ok(list
        .iter()
        .filter_map(|o| {
            capi_compat::Requirement::read(&serde_json::to_value(o).expect("an object serializes"))
                .ok()
        })
        .collect())
}

/// What the platform of `Infrastructure/cluster` asks for.
async fn platform(client: &Client) -> Result<Desired, DiffError> {
    let infra: Api<DynamicObject> = Api::all_with(client.clone(), &api_resource(&INFRASTRUCTURE));
    let infra = infra
        .get_opt(INFRASTRUCTURE_NAME)
        .await
        .map_err(read_error("Infrastructure cluster"))?;
    // Transport ConfigMaps declare no platform: a platform only a profile brings is not seen here.
    Ok(desired::desired(
        infra.as_ref().and_then(|i| i.data.get("status")),
        &desired::DeclaredPlatforms::new(),
        &[],
    ))
}

/// The cluster's transport ConfigMaps, each replaced by the given one of the same name, and the given
/// ones the cluster lacks.
async fn transport_configmaps(
    client: &Client,
    namespace: &str,
    given: Vec<Value>,
) -> Result<Vec<Value>, DiffError> {
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let mut configmaps: Vec<Value> = Vec::new();
    for cm in cms
        .list(&ListParams::default().labels(configmap::SELECTOR))
        .await
        .map_err(read_error("transport ConfigMaps"))?
    {
        configmaps.push(serde_json::to_value(cm).map_err(|e| DiffError::Input(e.to_string()))?);
    }
    for cm in given {
        let name = cm.pointer("/metadata/name").cloned();
        configmaps.retain(|c| c.pointer("/metadata/name") != name.as_ref());
        configmaps.push(cm);
    }
    Ok(configmaps)
}

/// The candidates that own objects: as a reconcile, of two sources of one provider the one that owns
/// objects is kept.
async fn owners(
    store: &InventoryStore,
    candidates: &[ProviderSource],
) -> Result<BTreeSet<SourceId>, DiffError> {
    let mut owners = BTreeSet::new();
    for c in candidates {
        let inventory = store
            .load(&c.id.inventory_key())
            .await
            .map_err(|e| DiffError::Input(format!("{}: inventory: {e}", c.id)))?;
        if !inventory.entries.is_empty() {
            owners.insert(c.id.clone());
        }
    }
    Ok(owners)
}

/// The administrator's extensions of the bundle policy the installer judges with
/// ([`crate::extensions`]): the ceiling's ClusterRoles, the field bound's ConfigMaps.
async fn policy_extensions(
    client: &Client,
    installer_namespace: &str,
) -> Result<(Ceiling, FieldBound), DiffError> {
    let roles = Api::<ClusterRole>::all(client.clone())
        .list(&ListParams::default().labels(policy::ceiling::LABEL))
        .await
        .map_err(read_error("the provider RBAC ceiling's ClusterRoles"))?;
    let configmaps = Api::<ConfigMap>::namespaced(client.clone(), installer_namespace)
        .list(&ListParams::default().labels(policy::fields::LABEL))
        .await
        .map_err(read_error("the provider field bound's ConfigMaps"))?;
    Ok(crate::extensions::read(&roles.items, &configmaps.items))
}

async fn discover(client: &Client) -> Result<KindResolver, DiffError> {
    KindResolver::discover(client)
        .await
        .map_err(read_error("the API server's kinds"))
}

/// What previewing a provider against the cluster needs.
struct Preview<'a> {
    client: &'a Client,
    applier: &'a Applier,
    store: &'a InventoryStore,
}

impl Preview<'_> {
    /// What the installer would do for one provider: its plan (or why there is none), compared with
    /// the cluster. `cm` is its transport ConfigMap (none for another kind of source).
    async fn provider(
        &self,
        planner: &mut Planner,
        served: &KindResolver,
        target: &Target,
        cm: Option<&Value>,
    ) -> Result<ProviderDiff, DiffError> {
        let mut report = ProviderDiff {
            source: target.source.id.to_string(),
            provider: target.source.name.clone(),
            version: target.source.version.clone(),
            objects: Vec::new(),
            refused: Vec::new(),
        };
        let payload = match cm.map(configmap::payload) {
            Some(Ok(payload)) => payload,
            Some(Err(e)) => {
                report.refused.push(e.to_string());
                return Ok(report);
            }
            None => {
                report
                    .refused
                    .push("only transport ConfigMaps can be compared".into());
                return Ok(report);
            }
        };
        match planner.plan(target, &payload, served) {
            Ok(prepared) => {
                let kinds = planner.kinds(served);
                self.compare(&kinds, target, &prepared, &mut report).await?;
            }
            // One entry per problem (each bundle-policy violation, each object the images cannot
            // complete), as `render` prints them one per line.
            Err(e) => report.refused.extend(e.problems()),
        }
        Ok(report)
    }

    /// Every object of a prepared version against the cluster, and what its prune would delete
    /// (`resolver`: the kinds served, and those of the providers planned before).
    async fn compare(
        &self,
        resolver: &KindResolver,
        target: &Target,
        prepared: &Prepared,
        report: &mut ProviderDiff,
    ) -> Result<(), DiffError> {
        let Preview {
            client,
            applier,
            store,
        } = *self;
        let served = discover(client).await?;
        let (now, later) = prepared.plan.split_by_served(&served);
        let old = store
            .load(&target.source.id.inventory_key())
            .await
            .map_err(|e| DiffError::Input(format!("{}: inventory: {e}", target.source.id)))?;
        for planned in now {
            match applier.preview(planned, None, &old).await {
                Ok(preview) => report
                    .objects
                    .extend(object_diff(applier, planned, preview)),
                Err(e) => report.refused.push(refusal(&e)),
            }
        }
        for planned in later {
            report.objects.push(ObjectDiff {
                object: planned.key.to_string(),
                change: Change::Created,
                fields: Vec::new(),
                note: Some(
                    "its kind comes with a new CRD: checked once that is Established".into(),
                ),
            });
        }
        if !report.refused.is_empty() {
            // Refused whole: nothing of this version would be written, so nothing would be pruned.
            report.objects.clear();
            return Ok(());
        }
        let new = Inventory::from_plan(target.source.id.inventory_key(), &prepared.plan);
        let pruned = capi_apply::prune_dry_run(
            client,
            old.prune_targets(&new, resolver),
            applier.ownership(),
            Some(&target.clusterctl_label),
        )
        .await;
        for key in pruned.deleted {
            report.objects.push(ObjectDiff {
                object: key.to_string(),
                change: Change::Pruned,
                fields: Vec::new(),
                note: None,
            });
        }
        for (key, reason) in pruned.kept {
            if matches!(reason, KeepReason::NotOwned) {
                continue;
            }
            report.objects.push(ObjectDiff {
                object: key.to_string(),
                change: Change::Pruned,
                fields: Vec::new(),
                note: Some(match reason {
                    KeepReason::Released => reason.to_string(),
                    _ => format!("kept for now: {reason}"),
                }),
            });
        }
        Ok(())
    }
}

fn object_diff(
    applier: &Applier,
    planned: &PlannedObject,
    preview: capi_apply::Preview,
) -> Option<ObjectDiff> {
    let change = match preview.action {
        ApplyAction::Unchanged => return None,
        ApplyAction::Created => Change::Created,
        ApplyAction::Configured => Change::Changed,
        ApplyAction::Adopted => Change::Adopted,
    };
    let hash = format!(
        "metadata.annotations[{}]",
        Value::String(applier.hash_annotation().to_owned())
    );
    let (fields, note) = match (&preview.after, change) {
        (_, Change::Created) => (Vec::new(), None),
        (Some(after), _) => (
            capi_apply::managed_changes(preview.live.as_ref(), after, applier.field_manager())
                .into_iter()
                .filter(|f| f.path != hash)
                .collect(),
            None,
        ),
        (None, _) => (
            Vec::new(),
            Some("not dry-run yet: its admission policy comes first".into()),
        ),
    };
    if change == Change::Changed && fields.is_empty() && note.is_none() {
        // Only the desired-hash annotation would change (e.g. a field the API server normalizes):
        // the apply writes, the object stays the same.
        return Some(ObjectDiff {
            object: planned.key.to_string(),
            change,
            fields,
            note: Some("re-applied, no field changes".into()),
        });
    }
    Some(ObjectDiff {
        object: planned.key.to_string(),
        change,
        fields,
        note,
    })
}

/// Why the installer would refuse a version because of this object, as its status would say.
fn refusal(e: &ApplyError) -> String {
    match e {
        ApplyError::UnsafeCrdChange { .. } => format!("CRD safety: {e}"),
        ApplyError::DryRun { .. } => format!("the API server refuses it: {e}"),
        ApplyError::Conflict { .. }
        | ApplyError::AdoptionRefused { .. }
        | ApplyError::Preempted { .. }
        | ApplyError::WriteFight { .. }
        | ApplyError::Terminating { .. } => e.to_string(),
        ApplyError::Api { .. } | ApplyError::Identity { .. } => format!("cannot check: {e}"),
        ApplyError::Refused { .. } => e.to_string(),
    }
}
