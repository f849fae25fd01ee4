//! Planning: resolve, validate and order a set of objects into phases. Pure: no requests.

use std::collections::BTreeMap;
use std::fmt;

use kube::api::{ApiResource, DynamicObject};
use serde::{Deserialize, Serialize};

use crate::key::{ObjectKey, key_of, split_api_version};
use crate::resolve::{KindResolver, ResolvedKind};

/// The phases of an apply, in the order they run. Each phase is applied completely (and, where it has
/// a gate, waited on) before the next starts; prune runs them in reverse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Phase {
    /// CustomResourceDefinitions. Gate: Established.
    CustomResourceDefinitions,
    /// Namespaces, RBAC, ServiceAccounts, ConfigMaps, Secrets, Services and every other kind
    /// (including custom resources of the CRDs above). No gate beyond kstatus Current.
    Base,
    /// Deployments, StatefulSets, DaemonSets. Gate: kstatus Current (Available).
    Workloads,
    /// Webhook configurations and admission policies: last, so a webhook is only registered once the
    /// Deployment serving it is Available (no engine we studied waits for that).
    Admission,
}

impl Phase {
    pub const ALL: [Phase; 4] = [
        Phase::CustomResourceDefinitions,
        Phase::Base,
        Phase::Workloads,
        Phase::Admission,
    ];

    /// The phase an object of this group/kind belongs to.
    pub fn of(group: &str, kind: &str) -> Phase {
        match (group, kind) {
            ("apiextensions.k8s.io", "CustomResourceDefinition") => {
                Phase::CustomResourceDefinitions
            }
            ("apps", "Deployment" | "StatefulSet" | "DaemonSet") => Phase::Workloads,
            (
                "admissionregistration.k8s.io",
                "MutatingWebhookConfiguration"
                | "ValidatingWebhookConfiguration"
                | "ValidatingAdmissionPolicy"
                | "ValidatingAdmissionPolicyBinding"
                | "MutatingAdmissionPolicy"
                | "MutatingAdmissionPolicyBinding",
            ) => Phase::Admission,
            _ => Phase::Base,
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// Kinds ordered inside a phase (Flux's list, narrowed to what we install). Unlisted kinds sort after
/// the listed ones; ties break by group, kind, namespace, name so the order never depends on input order.
const KIND_ORDER: &[&str] = &[
    "CustomResourceDefinition",
    "Namespace",
    "ClusterRole",
    "ClusterRoleBinding",
    "ServiceAccount",
    "Role",
    "RoleBinding",
    "ConfigMap",
    "Secret",
    "Service",
    "Deployment",
    "StatefulSet",
    "DaemonSet",
    // Policies before their bindings, so a binding never refers to a policy we have not written yet.
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "MutatingAdmissionPolicy",
    "MutatingAdmissionPolicyBinding",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
];

fn kind_rank(kind: &str) -> usize {
    KIND_ORDER
        .iter()
        .position(|k| *k == kind)
        .unwrap_or(KIND_ORDER.len())
}

/// The apply order of two keys inside a phase.
pub(crate) fn apply_order(a: &ObjectKey, b: &ObjectKey) -> std::cmp::Ordering {
    (kind_rank(&a.kind), a).cmp(&(kind_rank(&b.kind), b))
}

/// One object to plan, with an optional description of where it came from (for example
/// `ConfigMap openshift-cluster-api/aws, document 12`) that every error about it repeats.
#[derive(Debug, Clone)]
pub struct PlanInput {
    pub object: DynamicObject,
    pub origin: Option<String>,
    /// See [`PlannedObject::take_over`].
    pub take_over: bool,
}

impl PlanInput {
    pub fn new(object: DynamicObject, origin: impl Into<String>) -> Self {
        PlanInput {
            object,
            origin: Some(origin.into()),
            take_over: false,
        }
    }

    /// See [`PlannedObject::take_over`].
    pub fn take_over(mut self, take_over: bool) -> Self {
        self.take_over = take_over;
        self
    }
}

impl From<DynamicObject> for PlanInput {
    fn from(object: DynamicObject) -> Self {
        PlanInput {
            object,
            origin: None,
            take_over: false,
        }
    }
}

/// A validated object, ready to apply.
#[derive(Debug, Clone)]
pub struct PlannedObject {
    pub key: ObjectKey,
    pub resource: ApiResource,
    pub namespaced: bool,
    pub object: DynamicObject,
    pub origin: Option<String>,
    /// The object is taken over when it exists, whoever manages it (the caller's manifest says so):
    /// the ownership rules' refusal of a foreign object does not apply to it. One of our own objects
    /// that another of our owners holds is still refused.
    pub take_over: bool,
    /// Set by [`crate::Applier::stamp_plan`]: `object` is what the applier sends, its hash annotation
    /// checked, so that later checks and applies read the hash instead of computing it again (a whole
    /// CRD serialized and hashed, several times per object and pass). An object changed after that
    /// must be stamped again.
    pub(crate) stamped: bool,
}

#[derive(Debug, Clone)]
pub struct PlannedPhase {
    pub phase: Phase,
    /// In apply order.
    pub objects: Vec<PlannedObject>,
}

impl PlannedPhase {
    /// Every distinct kind in the phase with its scope (what a [`crate::watch::LiveCache`] must watch).
    pub fn resources(&self) -> Vec<(ApiResource, bool)> {
        distinct_resources(self.objects.iter())
    }
}

fn distinct_resources<'a>(
    objects: impl Iterator<Item = &'a PlannedObject>,
) -> Vec<(ApiResource, bool)> {
    let mut seen = BTreeMap::new();
    for o in objects {
        seen.entry((o.resource.group.clone(), o.resource.kind.clone()))
            .or_insert_with(|| (o.resource.clone(), o.namespaced));
    }
    seen.into_values().collect()
}

/// Validated objects grouped into phases. Only non-empty phases are present, in [`Phase`] order.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub phases: Vec<PlannedPhase>,
}

impl Plan {
    pub fn phase(&self, phase: Phase) -> Option<&PlannedPhase> {
        self.phases.iter().find(|p| p.phase == phase)
    }

    /// All objects in apply order.
    pub fn objects(&self) -> impl Iterator<Item = &PlannedObject> {
        self.phases.iter().flat_map(|p| p.objects.iter())
    }

    /// Every distinct kind in the plan with its scope (what a [`crate::watch::LiveCache`] must watch).
    pub fn resources(&self) -> Vec<(ApiResource, bool)> {
        distinct_resources(self.objects())
    }

    pub fn len(&self) -> usize {
        self.phases.iter().map(|p| p.objects.len()).sum()
    }

    /// The objects, in apply order, split into those whose group/version/kind `served` (the API
    /// server's discovery now) knows, and those of kinds or versions that only the plan's own CRDs
    /// define. The first can be dry-run before anything is written; the second only once their CRDs
    /// are applied and Established.
    pub fn split_by_served<'a>(
        &'a self,
        served: &KindResolver,
    ) -> (Vec<&'a PlannedObject>, Vec<&'a PlannedObject>) {
        self.objects().partition(|o| {
            served
                .resolve(&o.key.group, &o.key.version, &o.key.kind)
                .is_some()
        })
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn origin_suffix(origin: &Option<String>) -> String {
    match origin {
        Some(o) => format!(" ({o})"),
        None => String::new(),
    }
}

/// One reason an object cannot be planned.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum PlanError {
    #[error("object {name:?}{}: missing apiVersion or kind", origin_suffix(.origin))]
    MissingTypeMeta {
        name: Option<String>,
        origin: Option<String>,
    },
    #[error("{kind} without metadata.name{}", origin_suffix(.origin))]
    MissingName {
        kind: String,
        origin: Option<String>,
    },
    #[error("{key}{}: unknown kind {}/{} (neither served by the API server nor defined by a CRD in the plan)", origin_suffix(.origin), .key.api_version(), .key.kind)]
    UnknownKind {
        key: ObjectKey,
        origin: Option<String>,
    },
    #[error("{key}{}: appears twice (first{})", origin_suffix(.origin), origin_suffix(.first_origin))]
    Duplicate {
        key: ObjectKey,
        origin: Option<String>,
        first_origin: Option<String>,
    },
    #[error("{key}{}: namespaced kind without metadata.namespace", origin_suffix(.origin))]
    MissingNamespace {
        key: ObjectKey,
        origin: Option<String>,
    },
    #[error("{key}{}: cluster-scoped kind with metadata.namespace", origin_suffix(.origin))]
    UnexpectedNamespace {
        key: ObjectKey,
        origin: Option<String>,
    },
    #[error("{key}{}: invalid CustomResourceDefinition: {reason}", origin_suffix(.origin))]
    InvalidCrd {
        key: ObjectKey,
        origin: Option<String>,
        reason: String,
    },
}

/// Every reason a set of objects cannot be planned (never empty).
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("{} invalid object(s): {}", .0.len(), .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
pub struct PlanErrors(pub Vec<PlanError>);

/// Resolves, validates and orders `objects`. Pure.
///
/// Collects every problem instead of stopping at the first, so one run reports all of them; a set with
/// any problem yields no plan at all (nothing of a bad set is applied).
pub fn plan<I, T>(objects: I, resolver: &KindResolver) -> Result<Plan, PlanErrors>
where
    I: IntoIterator<Item = T>,
    T: Into<PlanInput>,
{
    let inputs: Vec<PlanInput> = objects.into_iter().map(Into::into).collect();
    let mut errors = Vec::new();
    let local = local_kinds(&inputs, &mut errors);

    let mut seen: BTreeMap<ObjectKey, Option<String>> = BTreeMap::new();
    let mut phases: BTreeMap<Phase, Vec<PlannedObject>> = BTreeMap::new();
    for input in inputs {
        let planned = match resolve(input, &local, resolver) {
            Ok(planned) => planned,
            Err(e) => {
                errors.push(*e);
                continue;
            }
        };
        if let Some(first_origin) = seen.get(&planned.key) {
            errors.push(PlanError::Duplicate {
                key: planned.key,
                origin: planned.origin,
                first_origin: first_origin.clone(),
            });
            continue;
        }
        seen.insert(planned.key.clone(), planned.origin.clone());
        phases
            .entry(Phase::of(&planned.key.group, &planned.key.kind))
            .or_default()
            .push(planned);
    }

    if !errors.is_empty() {
        return Err(PlanErrors(errors));
    }
    Ok(Plan {
        phases: phases
            .into_iter()
            .map(|(phase, mut objects)| {
                objects.sort_by(|a, b| apply_order(&a.key, &b.key));
                PlannedPhase { phase, objects }
            })
            .collect(),
    })
}

/// The kinds the CRDs in the set define for the rest of the set; an invalid CRD is an error.
fn local_kinds(inputs: &[PlanInput], errors: &mut Vec<PlanError>) -> KindResolver {
    let mut local = KindResolver::new();
    for input in inputs {
        let Some(key) = key_of(&input.object) else {
            continue;
        };
        if key.group == "apiextensions.k8s.io"
            && key.kind == "CustomResourceDefinition"
            && let Err(reason) = local.insert_crd(&input.object)
        {
            errors.push(PlanError::InvalidCrd {
                key,
                origin: input.origin.clone(),
                reason,
            });
        }
    }
    local
}

/// One object with its identity, resource and scope; an error when it has no identity, its kind is
/// unknown or its namespace does not fit the kind's scope (boxed: `PlanError` is large).
fn resolve(
    input: PlanInput,
    local: &KindResolver,
    resolver: &KindResolver,
) -> Result<PlannedObject, Box<PlanError>> {
    let PlanInput {
        object,
        origin,
        take_over,
    } = input;
    let Some(types) = object
        .types
        .as_ref()
        .filter(|t| !t.kind.is_empty() && !t.api_version.is_empty())
    else {
        return Err(Box::new(PlanError::MissingTypeMeta {
            name: object.metadata.name.clone(),
            origin,
        }));
    };
    if object.metadata.name.as_deref().unwrap_or("").is_empty() {
        return Err(Box::new(PlanError::MissingName {
            kind: types.kind.clone(),
            origin,
        }));
    }
    let Some(key) = key_of(&object) else {
        unreachable!("type meta and name checked above");
    };
    let (group, version) = split_api_version(&types.api_version);
    // A kind defined by a CRD in the set is resolved by that CRD alone: it is what the server
    // will serve once applied (a version the new CRD stops serving must not pass because the
    // old one still serves it).
    let found = if local.defines(group, &types.kind) {
        local.resolve(group, version, &types.kind)
    } else {
        resolver.resolve(group, version, &types.kind)
    };
    let Some(ResolvedKind {
        resource,
        namespaced,
    }) = found.cloned()
    else {
        return Err(Box::new(PlanError::UnknownKind { key, origin }));
    };
    if namespaced && key.namespace.is_none() {
        return Err(Box::new(PlanError::MissingNamespace { key, origin }));
    }
    if !namespaced && key.namespace.is_some() {
        return Err(Box::new(PlanError::UnexpectedNamespace { key, origin }));
    }
    Ok(PlannedObject {
        key,
        resource,
        namespaced,
        object,
        origin,
        take_over,
        stamped: false,
    })
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
