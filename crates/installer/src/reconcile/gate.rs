//! Readiness gates: CRDs Established before anything uses them, Deployments Available before the
//! webhooks they serve are registered. Read from the watch cache, bounded by a timeout that turns into a
//! failure, never a hang.

use std::collections::HashMap;
use std::time::Instant;

use capi_apply::{ObjectKey, Phase, PlannedPhase, Readiness, readiness};
use kube::api::DynamicObject;

use super::Reconciler;
use crate::error::Pending;
use crate::error::ProviderError;
use crate::source::Target;

impl Reconciler {
    /// `None` when `phase` is done (or has no gate); otherwise the objects it waits for. An error once
    /// the gate has waited longer than its timeout.
    pub(super) fn gate(
        &self,
        target: &Target,
        digest: &str,
        phase: &PlannedPhase,
        fresh: &HashMap<ObjectKey, DynamicObject>,
    ) -> Result<Option<Vec<Pending>>, ProviderError> {
        let timeout = match phase.phase {
            Phase::CustomResourceDefinitions => self.config.crd_timeout,
            Phase::Workloads => self.config.deployment_timeout,
            _ => return Ok(None),
        };
        let pending = pending(phase, |key| {
            let cached = self.cache.get(key);
            to_judge(cached.as_deref(), fresh.get(key)).cloned()
        });
        let id = &target.source.id;
        let mut history = self.history.lock().expect("history");
        if pending.is_empty() {
            history.gate_passed(id, phase.phase);
            return Ok(None);
        }
        let since = history.gate_since(id, digest, phase.phase, Instant::now());
        if since.elapsed() > timeout {
            return Err(ProviderError::GateTimeout {
                phase: phase.phase,
                timeout,
                pending,
            });
        }
        Ok(Some(pending))
    }
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
}
