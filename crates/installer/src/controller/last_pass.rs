//! What lets a pass reconcile only the providers whose objects or inputs changed (issue 30): a drift
//! of one provider's object is repaired, a new payload in one provider's source or a rollback of one
//! provider applied, by planning and reconciling that provider alone, without rendering or checking
//! the others, whether core is settled or still rolling out.
//!
//! Planning is a chain — each provider is planned with what the providers before it hold and claim
//! ([`crate::round::Planner`]) — so planning one provider again needs the planner as it stood before
//! it. Every pass keeps, per provider, what that planner knew ([`PlannerState`], without the round's
//! context) and its outcome, a settled one as its [`Outcome::settled`] copy ([`LastPass`]): not the
//! plans of settled providers (keeping those cost megabytes, BENCHMARKS.md).
//!
//! A later pass may then be limited ([`LastPass::limit`]) when it is not the resync and no change was
//! lost ([`Changes::everything`]), its round has the same fingerprint
//! ([`crate::round::fingerprint_but_versions`]: the platform, the policy, `ClusterAPI`, the selected
//! sources… are in it, not their versions: a new version is a change of the source's object), and
//! every changed object is in some source's inventory (one of a source not selected, a provider
//! being uninstalled, wakes the uninstall and the report alone): it reconciles the providers of the
//! changed objects, those whose own inputs changed since they were planned ([`ProviderInputs`]: their
//! source's payload, a rollback request), those due (a gate's or a retry's timer wakes it for them),
//! and a provider whose admission ([`crate::order::admit`]) the outcomes of this pass change — an
//! infrastructure provider when core comes to serve, or stops ([`readmitted`]). A provider whose
//! inputs changed is planned first, from the planner state kept for it: when the planner then knows
//! something else than what was kept for the next provider (it claims other CRD names, holds other
//! Secrets…), the pass plans every provider after all (the installer's `controller`). Anything else
//! is a pass of every provider. A pass woken only by the installer's own writes coming back (its
//! status, its revision log) reconciles no provider at all.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use capi_apply::{Inventory, ObjectKey};

use crate::desired::Wanted;
use crate::order;
use crate::outcome::Outcome;
use crate::prepare::Prepared;
use crate::round::PlannerState;
use crate::source::{SourceId, Target};

/// What changed since the last pass, as the loop was told (for what woke it, see [`capi_runtime::pace::Woken`]).
#[derive(Debug, Default)]
pub(crate) struct Changes {
    /// The resync fired, or changes were lost: every provider is reconciled.
    pub(crate) everything: bool,
    /// Objects the providers applied that changed (a drift, a deletion, a workload's status).
    pub(crate) objects: BTreeSet<ObjectKey>,
}

/// What a provider's reconcile reads beyond the round, as tokens that change when it does: a pass
/// that finds other ones than those it was planned from plans it again.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ProviderInputs {
    /// Its source's revision ([`crate::source::SourceCatalog::revision`]), read before its payload.
    pub(crate) source: Option<String>,
    /// The rollback request for it, as written (`capi-installer rollback`).
    pub(crate) rollback: Option<String>,
}

/// A timer may wake the loop a little before the instant it was set for; a provider due within this
/// is reconciled by the pass it wakes.
const DUE_SLACK: Duration = Duration::from_millis(50);

/// One provider of a kept pass.
pub(crate) struct KeptProvider {
    pub(crate) target: Target,
    /// What the planner knew before this provider was planned.
    pub(crate) planner: PlannerState,
    /// Its inputs when it was last planned.
    pub(crate) inputs: ProviderInputs,
    /// Its last outcome: what a pass that does not reconcile it reports. A settled one is its
    /// [`Outcome::settled`] copy; another stands for it only until it is due.
    pub(crate) outcome: Outcome,
    /// When its own timer asks for it again (a gate's look, a retry, a workload's unavailability
    /// turning persistent); `None`: only a change does (settled, blocked behind its chain, or held
    /// by a rollback until its source changes).
    pub(crate) due: Option<Instant>,
    /// While it is not settled, the plan a limited pass made of it (with its target as read), for the
    /// next limited passes of its rollout: what it was planned from cannot have changed in between
    /// (its inputs changing make it planned again, the round changing makes a pass of every
    /// provider, which keeps no plan), so it is not rendered and checked again at each look. Dropped once it settles: kept plans cost megabytes.
    pub(crate) plan: Option<(Target, Prepared)>,
}

/// What a pass keeps besides its outcomes, to make a [`LastPass`] of them once it has reported them.
pub(crate) struct ToKeep {
    /// The fingerprint of its round.
    pub(crate) round: String,
    /// What the planner knew before each provider, in install order.
    pub(crate) planners: Vec<PlannerState>,
    /// The inputs each one was planned from.
    pub(crate) inputs: Vec<ProviderInputs>,
    /// When each is due again.
    pub(crate) dues: Vec<Option<Instant>>,
    /// The plan a limited pass made of each (see [`KeptProvider::plan`]).
    pub(crate) plans: Vec<Option<(Target, Prepared)>>,
}

impl ToKeep {
    /// Nothing kept yet, for a pass of the round with fingerprint `round`.
    pub(crate) fn new(round: String) -> ToKeep {
        ToKeep {
            round,
            planners: Vec::new(),
            inputs: Vec::new(),
            dues: Vec::new(),
            plans: Vec::new(),
        }
    }

    /// The next provider, in install order.
    pub(crate) fn push(
        &mut self,
        planner: PlannerState,
        inputs: ProviderInputs,
        due: Option<Instant>,
        plan: Option<(Target, Prepared)>,
    ) {
        self.planners.push(planner);
        self.inputs.push(inputs);
        self.dues.push(due);
        self.plans.push(plan);
    }

    /// The soonest instant a provider is due.
    pub(crate) fn next_due(&self) -> Option<Instant> {
        self.dues.iter().flatten().min().copied()
    }
}

/// Whether this pass's outcomes of the providers before `target` in its chain (`now`: core's, then
/// its own chain's) admit it otherwise than their outcomes in the last pass did (`was`): what it
/// waits for came to serve, started or stopped rolling out, or stopped serving. Only then may its
/// kept outcome no longer stand for it: a provider's reconcile reads the others' outcomes through
/// [`order::admit`] alone, and `missing` is part of the round.
pub(crate) fn readmitted(
    target: &Target,
    was: &[&Outcome],
    now: &[&Outcome],
    missing: &[Wanted],
) -> bool {
    order::admit(target, was, missing) != order::admit(target, now, missing)
}

/// The last pass of a round, per provider.
pub(crate) struct LastPass {
    /// The fingerprint of its round.
    round: String,
    /// In install order.
    pub(crate) providers: Vec<KeptProvider>,
}

impl LastPass {
    /// From a pass (`kept`) and its outcomes: `planners[i]` is what the planner knew before
    /// `outcomes[i]`'s provider was planned, `inputs[i]` what it was planned from, `dues[i]` when
    /// that provider is due again, `plans[i]` its plan, if the pass kept it. `None` when they do not
    /// line up.
    pub(crate) fn of(kept: ToKeep, outcomes: Vec<Outcome>) -> Option<LastPass> {
        let ToKeep {
            round,
            planners,
            inputs,
            dues,
            plans,
        } = kept;
        let n = outcomes.len();
        if [planners.len(), inputs.len(), dues.len(), plans.len()] != [n; 4] {
            return None;
        }
        let providers: Vec<KeptProvider> = planners
            .into_iter()
            .zip(inputs)
            .zip(outcomes)
            .zip(dues)
            .zip(plans)
            .map(|((((planner, inputs), outcome), due), plan)| {
                let settled = outcome.settled();
                KeptProvider {
                    target: outcome.target.clone(),
                    planner,
                    inputs,
                    plan: plan.filter(|_| settled.is_none()),
                    outcome: settled.unwrap_or(outcome),
                    due,
                }
            })
            .collect();
        Some(LastPass { round, providers })
    }

    /// The providers a pass needs to reconcile, when it may be limited to some: it is not for every
    /// provider ([`Changes::everything`]), its round (with `fingerprint`, selecting `targets`) is the
    /// one this was planned from, and each changed object is in some source's inventory (of those
    /// providers, or of a source not selected: a provider being uninstalled). Then the providers of the changed objects, those whose inputs are no longer the
    /// ones they were planned from (`inputs`: each target's now), those due by `now`, and each one's chain
    /// (the providers with its `cluster.x-k8s.io/provider` label: a companion waits for its
    /// provider). `None`: every provider.
    pub(crate) fn limit(
        &self,
        fingerprint: &str,
        targets: &[Target],
        inputs: &[ProviderInputs],
        changes: &Changes,
        inventories: &[(SourceId, Inventory)],
        now: Instant,
    ) -> Option<BTreeSet<SourceId>> {
        let same_providers = targets.len() == self.providers.len()
            && targets
                .iter()
                .zip(&self.providers)
                .all(|(t, p)| t.source.id == p.target.source.id);
        if changes.everything || fingerprint != self.round || !same_providers {
            return None;
        }
        let mut changed = BTreeSet::new();
        for key in &changes.objects {
            let mut holders = inventories
                .iter()
                .filter(|(_, inventory)| inventory.entries.contains_key(key))
                .map(|(id, _)| id)
                .peekable();
            // An object no inventory holds: nobody knows what it changes.
            holders.peek()?;
            // One of a source not selected (a provider being uninstalled, one left behind) is for
            // the uninstall and the report, which every pass makes.
            changed.extend(
                holders
                    .filter(|id| self.providers.iter().any(|p| p.target.source.id == **id))
                    .cloned(),
            );
        }
        changed.extend(self.inputs_changed(inputs));
        let labels: BTreeSet<&str> = self
            .providers
            .iter()
            .filter(|p| {
                p.due.is_some_and(|due| due <= now + DUE_SLACK)
                    || changed.contains(&p.target.source.id)
            })
            .map(|p| p.target.clusterctl_label.as_str())
            .collect();
        Some(
            self.providers
                .iter()
                .filter(|p| labels.contains(p.target.clusterctl_label.as_str()))
                .map(|p| p.target.source.id.clone())
                .collect(),
        )
    }

    /// The providers whose inputs now (`inputs`, in install order) are not the ones they were last
    /// planned from.
    pub(crate) fn inputs_changed(&self, inputs: &[ProviderInputs]) -> BTreeSet<SourceId> {
        self.providers
            .iter()
            .zip(inputs)
            .filter(|(p, now)| p.inputs != **now)
            .map(|(p, _)| p.target.source.id.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use capi_apply::Phase;
    use capi_manifests::ProviderType;

    use super::*;
    use crate::outcome::ProviderState;
    use crate::source::ProviderSource;

    fn target(name: &str, provider_type: ProviderType) -> Target {
        Target {
            source: ProviderSource {
                id: SourceId::ConfigMap(name.into()),
                name: name.into(),
                provider_type,
                version: Some("v1.0.0".into()),
                created: None,
            },
            clusterctl_label: provider_type.clusterctl_label(name),
        }
    }

    fn outcome(target: &Target, state: ProviderState) -> Outcome {
        Outcome {
            target: target.clone(),
            state,
            serving: true,
            unavailable: Vec::new(),
            rolled_out: Some("v1.0.0".into()),
            related: Vec::new(),
            held: None,
            content_id: Some("digest".into()),
            dropped_short_names: Vec::new(),
        }
    }

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new("rbac.authorization.k8s.io", "v1", "ClusterRole", None, name)
    }

    fn inventory(id: &SourceId, keys: &[&str]) -> (SourceId, Inventory) {
        let entries: BTreeMap<ObjectKey, Phase> =
            keys.iter().map(|k| (key(k), Phase::Base)).collect();
        (
            id.clone(),
            Inventory {
                owner: id.to_string(),
                entries,
                adopted: BTreeSet::new(),
                pending: BTreeSet::new(),
                uids: BTreeMap::new(),
                record: None,
            },
        )
    }

    fn planner() -> PlannerState {
        crate::round::Round::new(
            &[],
            &[],
            &BTreeSet::new(),
            &crate::prepare::RenderContext::default(),
        )
        .planner_ahead()
        .state()
    }

    /// Inputs of a source at `revision`, without a rollback request.
    fn at(revision: Option<&str>) -> ProviderInputs {
        ProviderInputs {
            source: revision.map(str::to_string),
            rollback: None,
        }
    }

    /// What a pass of providers due at `dues` keeps: no plan, and each one's source at revision "1".
    fn kept(dues: Vec<Option<Instant>>) -> ToKeep {
        let mut keep = ToKeep::new("round".into());
        for due in dues {
            keep.push(planner(), at(Some("1")), due, None);
        }
        keep
    }

    /// `n` providers' inputs as kept.
    fn unchanged(n: usize) -> Vec<ProviderInputs> {
        vec![at(Some("1")); n]
    }

    #[test]
    fn a_pass_woken_by_one_providers_objects_reconciles_that_provider_alone() {
        let targets = vec![
            target("cluster-api", ProviderType::Core),
            target("aws", ProviderType::Infrastructure),
        ];
        let outcomes: Vec<Outcome> = targets
            .iter()
            .map(|t| outcome(t, ProviderState::Installed))
            .collect();
        let now = Instant::now();
        let settled = LastPass::of(kept(vec![None, None]), outcomes).unwrap();
        let inventories = vec![
            inventory(&targets[0].source.id, &["capi-manager"]),
            inventory(&targets[1].source.id, &["capa-manager"]),
        ];
        let changes = |objects: &[&str], everything| Changes {
            everything,
            objects: objects.iter().map(|k| key(k)).collect(),
        };
        let limit = |changes: &Changes, round: &str, targets: &[Target]| {
            let revisions = unchanged(targets.len());
            settled.limit(round, targets, &revisions, changes, &inventories, now)
        };

        let aws = changes(&["capa-manager"], false);
        assert_eq!(
            limit(&aws, "round", &targets),
            Some(BTreeSet::from([targets[1].source.id.clone()]))
        );
        assert_eq!(
            limit(
                &changes(&["capa-manager", "capi-manager"], false),
                "round",
                &targets
            )
            .map(|l| l.len()),
            Some(2)
        );
        assert_eq!(
            limit(&changes(&["capa-manager"], true), "round", &targets),
            None,
            "the resync"
        );
        assert_eq!(limit(&aws, "another round", &targets), None);
        assert_eq!(
            limit(&aws, "round", &targets[..1]),
            None,
            "another selection"
        );
        assert_eq!(
            limit(&changes(&["nobody's"], false), "round", &targets),
            None,
            "an object of no inventory"
        );
        let gcp = target("gcp", ProviderType::Infrastructure);
        let uninstalling = [
            inventories.clone(),
            vec![inventory(&gcp.source.id, &["capg-manager"])],
        ]
        .concat();
        let revisions = unchanged(targets.len());
        let gcp_deleted = changes(&["capg-manager", "capa-manager"], false);
        assert_eq!(
            settled.limit(
                "round",
                &targets,
                &revisions,
                &gcp_deleted,
                &uninstalling,
                now
            ),
            Some(BTreeSet::from([targets[1].source.id.clone()])),
            "an object of a source not selected (being uninstalled) asks for no provider"
        );
    }

    #[test]
    fn unsettled_providers_are_reconciled_when_due() {
        let targets = vec![
            target("cluster-api", ProviderType::Core),
            target("aws", ProviderType::Infrastructure),
            target("gcp", ProviderType::Infrastructure),
        ];
        let progressing = || ProviderState::Progressing {
            phase: Phase::Workloads,
            pending: Vec::new(),
        };
        let mut unserving = outcome(&targets[2], ProviderState::Installed);
        unserving.serving = false;
        let outcomes = vec![
            outcome(&targets[0], ProviderState::Installed),
            outcome(&targets[1], progressing()),
            unserving,
        ];
        // aws's gate looks again in 5 s; gcp, failing, is retried by its own backoff in 40 s.
        let t0 = Instant::now();
        let dues = vec![
            None,
            Some(t0 + Duration::from_secs(5)),
            Some(t0 + Duration::from_secs(40)),
        ];
        let settled = LastPass::of(kept(dues), outcomes).unwrap();
        let inventories = vec![
            inventory(&targets[0].source.id, &["capi-manager"]),
            inventory(&targets[1].source.id, &["capa-manager"]),
            inventory(&targets[2].source.id, &["capg-manager"]),
        ];
        let timer = Changes::default();
        let at_secs = |secs: u64| {
            settled.limit(
                "round",
                &targets,
                &unchanged(3),
                &timer,
                &inventories,
                t0 + Duration::from_secs(secs),
            )
        };
        let ids = |i: &[usize]| -> Option<BTreeSet<SourceId>> {
            Some(i.iter().map(|&i| targets[i].source.id.clone()).collect())
        };
        assert_eq!(at_secs(1), ids(&[]), "nothing due yet");
        assert_eq!(at_secs(5), ids(&[1]), "aws's gate; gcp not due");
        assert_eq!(at_secs(40), ids(&[1, 2]), "both due; core never");
        let gcp_changed = Changes {
            everything: false,
            objects: BTreeSet::from([key("capg-manager")]),
        };
        assert_eq!(
            settled.limit(
                "round",
                &targets,
                &unchanged(3),
                &gcp_changed,
                &inventories,
                t0
            ),
            ids(&[2]),
            "a change of gcp's objects reconciles it before it is due"
        );
        let mut gcp_source = unchanged(3);
        gcp_source[2] = at(Some("2"));
        assert_eq!(
            settled.inputs_changed(&gcp_source),
            BTreeSet::from([targets[2].source.id.clone()])
        );
        assert_eq!(
            settled.limit("round", &targets, &gcp_source, &timer, &inventories, t0),
            ids(&[2]),
            "a new revision of gcp's source reconciles it before it is due"
        );
        let mut aws_rollback = unchanged(3);
        aws_rollback[1].rollback = Some("{\"to\": 1}".into());
        assert_eq!(
            settled.limit("round", &targets, &aws_rollback, &timer, &inventories, t0),
            ids(&[1]),
            "a rollback request for aws reconciles it before it is due"
        );
        let mut core_gone = unchanged(3);
        core_gone[0] = at(None);
        assert_eq!(
            settled.limit("round", &targets, &core_gone, &timer, &inventories, t0),
            ids(&[0]),
            "a source whose revision cannot be read is not taken as unchanged"
        );
        assert!(
            !settled.providers[2].outcome.serving,
            "an unsettled outcome is kept as it was, to stand for gcp until it is due"
        );
    }

    #[test]
    fn a_provider_is_readmitted_when_what_it_waits_for_comes_to_serve_or_stops() {
        let core = target("cluster-api", ProviderType::Core);
        let aws = target("aws", ProviderType::Infrastructure);
        let progressing = || {
            let mut o = outcome(
                &core,
                ProviderState::Progressing {
                    phase: Phase::Workloads,
                    pending: Vec::new(),
                },
            );
            o.serving = false;
            o
        };
        let installed = || outcome(&core, ProviderState::Installed);
        let mut unserving = outcome(&core, ProviderState::Installed);
        unserving.serving = false;
        let readmitted = |was: &Outcome, now: &Outcome| readmitted(&aws, &[was], &[now], &[]);

        assert!(
            !readmitted(&progressing(), &progressing()),
            "core still rolls out (another look of its gate): aws's outcome stands"
        );
        assert!(
            !readmitted(&installed(), &installed()),
            "core serves as before"
        );
        assert!(
            readmitted(&progressing(), &installed()),
            "core came to serve: aws goes on"
        );
        assert!(
            readmitted(&progressing(), &unserving),
            "core stopped rolling out without serving: aws waits whole"
        );
        assert!(
            readmitted(&installed(), &progressing()),
            "core rolls out again"
        );
        assert!(readmitted(&unserving, &installed()), "core serves again");
        let gcp = target("gcp", ProviderType::Infrastructure);
        let mut gcp_failing = outcome(&gcp, ProviderState::Installed);
        gcp_failing.serving = false;
        assert!(
            !readmitted(&outcome(&gcp, ProviderState::Installed), &gcp_failing),
            "infrastructure providers never wait for each other"
        );
    }
}
