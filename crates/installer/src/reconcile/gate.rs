//! Readiness gates: CRDs Established before anything uses them, Deployments Available before the
//! webhooks they serve are registered. Read from the watch cache, bounded by a timeout that turns into a
//! failure, never a hang.

use std::collections::HashMap;
use std::time::Instant;

use capi_apply::{ObjectKey, Phase, PlannedPhase, Readiness, readiness};
use kube::ResourceExt;
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
            newest(cached.as_deref(), fresh.get(key)).cloned()
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

/// The newer of the cached object and the one a write just returned (the cache may lag behind the
/// write; trusting it could pass a gate on the previous generation of a Deployment).
fn newest<'a>(
    cached: Option<&'a DynamicObject>,
    fresh: Option<&'a DynamicObject>,
) -> Option<&'a DynamicObject> {
    let version = |o: &DynamicObject| {
        o.resource_version()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    match (cached, fresh) {
        (Some(c), Some(f)) => Some(if version(f) > version(c) { f } else { c }),
        (c, f) => c.or(f),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use capi_apply::KindResolver;

    fn obj(yaml: &str) -> DynamicObject {
        serde_saphyr::from_str(yaml).unwrap()
    }

    #[test]
    fn pending_lists_what_is_not_current_and_newest_wins() {
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

        let stale_cache = deployment("5", "True");
        let written = deployment("7", "False");
        let newer = newest(Some(&stale_cache), Some(&written)).unwrap();
        assert_eq!(newer.resource_version().as_deref(), Some("7"));
        assert!(newest(None, None).is_none());
    }
}
