//! Readiness gates: CRDs Established before anything uses them, Deployments Available before the
//! webhooks they serve are registered. Read from the watch cache, bounded by a timeout that turns into a
//! failure, never a hang.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use capi_apply::{ObjectKey, Phase, PlannedPhase, Readiness, readiness};
use kube::api::DynamicObject;

use crate::error::Pending;
use crate::error::ProviderError;
use crate::history::History;
use crate::source::SourceId;

/// What a gate needs besides the phase: the provider's timers and how long each gate may wait.
pub(super) struct Gates<'a> {
    pub(super) history: &'a mut History,
    pub(super) crd_timeout: Duration,
    pub(super) deployment_timeout: Duration,
}

/// `None` when `phase` of `id`'s content `digest` is done (or has no gate); otherwise the objects
/// it waits for. An error once the gate has waited longer than its timeout. `live` looks an object
/// up in the watch cache; `fresh` holds what this pass's writes answered.
pub(super) fn gate(
    gates: Gates<'_>,
    id: &SourceId,
    digest: &str,
    phase: &PlannedPhase,
    live: impl Fn(&ObjectKey) -> Option<Arc<DynamicObject>>,
    fresh: &HashMap<ObjectKey, DynamicObject>,
    now: Instant,
) -> Result<Option<Vec<Pending>>, ProviderError> {
    let timeout = match phase.phase {
        Phase::CustomResourceDefinitions => gates.crd_timeout,
        Phase::Workloads => gates.deployment_timeout,
        _ => return Ok(None),
    };
    let pending = pending(phase, |key| {
        let cached = live(key);
        to_judge(cached.as_deref(), fresh.get(key)).cloned()
    });
    if pending.is_empty() {
        gates.history.gate_passed(id, phase.phase);
        return Ok(None);
    }
    let since = gates.history.gate_since(id, digest, phase.phase, now);
    if now.duration_since(since) > timeout {
        return Err(ProviderError::GateTimeout {
            phase: phase.phase,
            timeout,
            pending,
        });
    }
    Ok(Some(pending))
}

/// The objects of `phase` that are not ready (kstatus rules), given a lookup of live objects. Pure.
pub(crate) fn pending(
    phase: &PlannedPhase,
    live: impl Fn(&ObjectKey) -> Option<DynamicObject>,
) -> Vec<Pending> {
    phase
        .objects
        .iter()
        .filter_map(|o| {
            let r = match live(&o.key) {
                Some(obj) => readiness(&o.key.group, &o.key.kind, &obj),
                None => Readiness::NotFound,
            };
            (!r.is_current()).then(|| Pending {
                key: o.key.clone(),
                readiness: r,
            })
        })
        .collect()
}

/// What a gate judges: the cached object while it is the same object at the same or a later
/// generation than a write's answer, otherwise the write's answer (the cache may lag behind the write;
/// trusting it could pass a gate on the previous generation of a Deployment). Generations only grow
/// for one object (one uid), while resourceVersions are opaque and can go back after an etcd restore,
/// so only the first is compared. A cached copy from before a write that kept the generation speaks
/// for the same spec, so its readiness still holds.
fn to_judge<'a>(
    cached: Option<&'a DynamicObject>,
    fresh: Option<&'a DynamicObject>,
) -> Option<&'a DynamicObject> {
    match (cached, fresh) {
        (Some(c), Some(f)) => {
            let same_object = c.metadata.uid.is_some() && c.metadata.uid == f.metadata.uid;
            let caught_up = matches!(
                (c.metadata.generation, f.metadata.generation),
                (Some(c), Some(f)) if c >= f
            );
            Some(if same_object && caught_up { c } else { f })
        }
        (c, f) => c.or(f),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use capi_apply::KindResolver;
    use kube::ResourceExt;

    fn obj(yaml: &str) -> DynamicObject {
        serde_saphyr::from_str(yaml).unwrap()
    }

    #[test]
    fn pending_lists_what_is_not_current() {
        let deployment = |rv: &str, available: &str| {
            obj(&format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: d, namespace: ns, generation: 1, resourceVersion: \"{rv}\"}}\nspec: {{replicas: 1}}\nstatus: {{observedGeneration: 1, replicas: 1, updatedReplicas: 1, availableReplicas: 1, readyReplicas: 1, conditions: [{{type: Available, status: \"{available}\"}}]}}\n"
            ))
        };
        let plan = capi_apply::plan(
            vec![obj(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: ns}\n",
            )],
            &KindResolver::builtin(),
        )
        .unwrap();
        let phase = plan.phase(Phase::Workloads).unwrap();
        let missing = pending(phase, |_| None);
        assert_eq!(missing.len(), 1);
        assert_eq!(missing[0].readiness, Readiness::NotFound);
        let ready = deployment("5", "True");
        assert!(pending(phase, |_| Some(ready.clone())).is_empty());
        let unavailable = deployment("6", "False");
        assert_eq!(pending(phase, |_| Some(unavailable.clone())).len(), 1);

        assert!(to_judge(None, None).is_none());
    }

    #[test]
    fn a_gate_judges_the_cache_only_once_it_caught_up_with_the_write() {
        let at = |uid: &str, generation: i64, rv: &str| {
            obj(&format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: d, namespace: ns, uid: {uid}, generation: {generation}, resourceVersion: \"{rv}\"}}\n"
            ))
        };
        let judged = |cached: &DynamicObject, fresh: &DynamicObject| {
            to_judge(Some(cached), Some(fresh))
                .unwrap()
                .resource_version()
                .unwrap()
        };
        // The write bumped the generation and the cache has not seen it: the write's answer.
        assert_eq!(judged(&at("u", 1, "5"), &at("u", 2, "7")), "7");
        // The cache caught up (a later status at the same generation), whatever the resourceVersions
        // say (opaque; they go back after an etcd restore).
        assert_eq!(judged(&at("u", 2, "3"), &at("u", 2, "7")), "3");
        assert_eq!(judged(&at("u", 3, "9"), &at("u", 2, "7")), "9");
        // Another object of that name (deleted and created again): the write's answer.
        assert_eq!(judged(&at("v", 4, "9"), &at("u", 2, "7")), "7");
        assert_eq!(
            to_judge(None, Some(&at("u", 2, "7")))
                .unwrap()
                .resource_version()
                .unwrap(),
            "7"
        );
    }

    #[test]
    fn a_gate_waits_for_what_the_cache_holds_then_times_out() {
        let plan = capi_apply::plan(
            vec![obj(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: ns}\n",
            )],
            &KindResolver::builtin(),
        )
        .unwrap();
        let workloads = plan.phase(Phase::Workloads).unwrap();
        let deployment = |available: &str| {
            Arc::new(obj(&format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: d, namespace: ns, uid: u, generation: 1}}\nspec: {{replicas: 1}}\nstatus: {{observedGeneration: 1, replicas: 1, updatedReplicas: 1, availableReplicas: 1, readyReplicas: 1, conditions: [{{type: Available, status: \"{available}\"}}]}}\n"
            )))
        };
        // The watch cache, filled: what a gate reads.
        let mut cache: HashMap<ObjectKey, Arc<DynamicObject>> = HashMap::new();
        let id = SourceId::ConfigMap("aws".into());
        let mut history = History::default();
        let t0 = Instant::now();
        let mut look = |cache: &HashMap<ObjectKey, Arc<DynamicObject>>, at: Duration| {
            let gates = Gates {
                history: &mut history,
                crd_timeout: Duration::from_secs(60),
                deployment_timeout: Duration::from_secs(300),
            };
            gate(
                gates,
                &id,
                "digest",
                workloads,
                |k| cache.get(k).cloned(),
                &HashMap::new(),
                t0 + at,
            )
        };

        let waiting = look(&cache, Duration::ZERO)
            .unwrap()
            .expect("nothing in the cache yet");
        assert_eq!(waiting[0].readiness, Readiness::NotFound);
        let key = workloads.objects[0].key.clone();
        cache.insert(key.clone(), deployment("False"));
        assert_eq!(
            look(&cache, Duration::from_secs(299))
                .unwrap()
                .map(|p| p.len()),
            Some(1),
            "not Available, within the timeout: waiting"
        );
        assert!(
            matches!(
                look(&cache, Duration::from_secs(301)),
                Err(ProviderError::GateTimeout {
                    phase: Phase::Workloads,
                    ..
                })
            ),
            "counted from the first look, not from each"
        );
        cache.insert(key, deployment("True"));
        assert_eq!(
            look(&cache, Duration::from_secs(400)).unwrap(),
            None,
            "Available: the gate passes"
        );
    }
}
