//! The installer's providers as rows of one table ([`Rows`]), kept from one pass to the next, and
//! what a pass does with them ([`Rows::todo`], pure): every provider, or only those whose objects or
//! inputs changed (issue 30) — a drift of one provider's object is repaired, a new payload in one
//! provider's source or a rollback of one provider applied, by planning and reconciling that provider
//! alone, without rendering or checking the others, whether core is settled or still rolling out.
//!
//! Planning is a chain — each provider is planned with what the providers before it hold and claim
//! ([`crate::round::Planner`]) — so planning one provider again needs the planner as it stood before
//! it. Each row keeps what that planner knew ([`PlannerState`], without the round's context), the
//! inputs it was planned from, its outcome (a settled one as its [`Outcome::settled`] copy), when it
//! is due, and, while it is not settled, the plan a limited pass made of it: not the plans of settled
//! providers (keeping those cost megabytes, BENCHMARKS.md).
//!
//! A pass may be limited ([`Todo::Only`]) when it is not the resync and no change was lost
//! ([`Changes::everything`]), its round has the same fingerprint
//! ([`crate::round::fingerprint_but_versions`]: the platform, the policy, `ClusterAPI`, the selected
//! sources… are in it, not their versions: a new version is a change of the source's object), and
//! every changed object is in some source's inventory (one of a source not selected, a provider
//! being uninstalled, wakes the uninstall and the report alone): it reconciles the providers of the
//! changed objects, those whose own inputs changed since they were planned ([`ProviderInputs`]: their
//! source's payload, a rollback request, a rollback recorded after a timeout), those due (a gate's or a retry's timer wakes it for them),
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
use crate::error::ProviderError;
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
    /// The hold of its revisions: a rollback decided after a rollout timed out, which the next
    /// pass applies ([`crate::revision::Hold`]).
    pub(crate) hold: Option<String>,
}

/// A timer may wake the loop a little before the instant it was set for; a provider due within this
/// is reconciled by the pass it wakes.
const DUE_SLACK: Duration = Duration::from_millis(50);

/// A plan, or why there is none, with the provider's target as its source was read (the version it
/// declared then).
pub(crate) type Plan = (Target, Result<Prepared, ProviderError>);

/// One provider: everything a pass and the next know of it.
pub(crate) struct Row {
    /// As the round selected it.
    pub(crate) target: Target,
    /// What the planner knew before this provider was planned.
    pub(crate) planner: PlannerState,
    /// Its inputs when it was last planned.
    pub(crate) inputs: ProviderInputs,
    /// The plan this pass made of it, until it is reconciled; between passes, while it is not
    /// settled, the one a limited pass made, for the next limited passes of its rollout: what it was
    /// planned from cannot have changed in between (its inputs changing make it planned again, the
    /// round changing makes a pass of every provider, which keeps no plan), so it is not rendered and
    /// checked again at each look. Dropped once it settles: kept plans cost megabytes.
    pub(crate) plan: Option<Plan>,
    /// Its outcome: what a pass that does not reconcile it reports. `None` until a pass reconciles
    /// it; between passes, a settled one is its [`Outcome::settled`] copy.
    pub(crate) outcome: Option<Outcome>,
    /// Its outcome before this pass reconciled it (a limited pass): what the providers after it
    /// were admitted from ([`readmitted`]).
    pub(crate) was: Option<Outcome>,
    /// When its own timer asks for it again (a gate's look, a retry, a workload's unavailability
    /// turning persistent); `None`: only a change does (settled, blocked behind its chain, or held
    /// by a rollback until its source changes).
    pub(crate) due: Option<Instant>,
}

impl Row {
    /// A provider about to be reconciled for the first time in this table, planned from `inputs`
    /// after `planner`.
    pub(crate) fn planned(
        target: Target,
        planner: PlannerState,
        inputs: ProviderInputs,
        plan: Plan,
    ) -> Row {
        Row {
            target,
            planner,
            inputs,
            plan: Some(plan),
            outcome: None,
            was: None,
            due: None,
        }
    }

    /// Its outcome of this pass, and when it is due again.
    pub(crate) fn reconciled(&mut self, outcome: Outcome, due: Option<Instant>) {
        self.was = self.outcome.replace(outcome);
        self.due = due;
    }
}

/// What a pass does with the table.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Todo {
    /// Plans and reconciles every provider: a new table.
    Every,
    /// Reconciles these providers (and those this pass's outcomes admit otherwise, [`readmitted`]);
    /// the others' rows stand.
    Only(BTreeSet<SourceId>),
}

impl Todo {
    pub(crate) fn limited(&self) -> bool {
        matches!(self, Todo::Only(_))
    }
}

/// The providers of a round, in install order.
#[derive(Default)]
pub(crate) struct Rows {
    /// The fingerprint of the round its providers were planned in.
    pub(crate) round: String,
    pub(crate) rows: Vec<Row>,
}

impl Rows {
    /// What a pass of the round with `fingerprint`, selecting `targets` (whose inputs are now
    /// `inputs`), does after `changes`, given the providers' `inventories`, at `now`: only some
    /// providers when it is not for every provider ([`Changes::everything`]), its round is the one
    /// this table was planned from, and each changed object is in some source's inventory (of
    /// those providers, or of a source not selected: a provider being uninstalled). Then the
    /// providers of the changed objects, those whose inputs are no longer the ones they were planned
    /// from, those due by `now`, and each one's chain (the providers with its
    /// `cluster.x-k8s.io/provider` label: a companion waits for its provider).
    pub(crate) fn todo(
        &self,
        fingerprint: &str,
        targets: &[Target],
        inputs: &[ProviderInputs],
        changes: &Changes,
        inventories: &[(SourceId, Inventory)],
        now: Instant,
    ) -> Todo {
        let same_providers = targets.len() == self.rows.len()
            && targets
                .iter()
                .zip(&self.rows)
                .all(|(t, r)| t.source.id == r.target.source.id)
            && self.rows.iter().all(|r| r.outcome.is_some());
        if changes.everything || fingerprint != self.round || !same_providers {
            return Todo::Every;
        }
        let mut changed = BTreeSet::new();
        for key in &changes.objects {
            let mut holders = inventories
                .iter()
                .filter(|(_, inventory)| inventory.entries.contains_key(key))
                .map(|(id, _)| id)
                .peekable();
            // An object no inventory holds: nobody knows what it changes.
            if holders.peek().is_none() {
                return Todo::Every;
            }
            // One of a source not selected (a provider being uninstalled, one left behind) is for
            // the uninstall and the report, which every pass makes.
            changed.extend(
                holders
                    .filter(|id| self.rows.iter().any(|r| r.target.source.id == **id))
                    .cloned(),
            );
        }
        changed.extend(self.inputs_changed(inputs));
        let labels: BTreeSet<&str> = self
            .rows
            .iter()
            .filter(|r| {
                r.due.is_some_and(|due| due <= now + DUE_SLACK)
                    || changed.contains(&r.target.source.id)
            })
            .map(|r| r.target.clusterctl_label.as_str())
            .collect();
        Todo::Only(
            self.rows
                .iter()
                .filter(|r| labels.contains(r.target.clusterctl_label.as_str()))
                .map(|r| r.target.source.id.clone())
                .collect(),
        )
    }

    /// The providers whose inputs now (`inputs`, in install order) are not the ones they were last
    /// planned from.
    pub(crate) fn inputs_changed(&self, inputs: &[ProviderInputs]) -> BTreeSet<SourceId> {
        self.rows
            .iter()
            .zip(inputs)
            .filter(|(r, now)| r.inputs != **now)
            .map(|(r, _)| r.target.source.id.clone())
            .collect()
    }

    /// The soonest instant a provider is due.
    pub(crate) fn next_due(&self) -> Option<Instant> {
        self.rows.iter().filter_map(|r| r.due).min()
    }

    /// The outcomes of this pass, in install order.
    pub(crate) fn outcomes(&self) -> impl Iterator<Item = &Outcome> {
        self.rows.iter().filter_map(|r| r.outcome.as_ref())
    }

    /// What the next pass keeps of this one: each settled outcome as its settled copy, and only the
    /// plans of providers not settled. `None` when a provider was left without an outcome.
    pub(crate) fn kept(self) -> Option<Rows> {
        let rows = self
            .rows
            .into_iter()
            .map(|row| {
                let outcome = row.outcome?;
                let settled = outcome.settled();
                let plan = row
                    .plan
                    .filter(|(_, prepared)| prepared.is_ok() && settled.is_none());
                Some(Row {
                    plan,
                    outcome: Some(settled.unwrap_or(outcome)),
                    was: None,
                    ..row
                })
            })
            .collect::<Option<Vec<Row>>>()?;
        Some(Rows {
            round: self.round,
            rows,
        })
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
            hold: None,
        }
    }

    /// The table after a pass of `outcomes` due at `dues`: no plan, each one's source at revision
    /// "1", in round "round".
    fn table(outcomes: Vec<Outcome>, dues: Vec<Option<Instant>>) -> Rows {
        let rows = outcomes
            .into_iter()
            .zip(dues)
            .map(|(outcome, due)| Row {
                target: outcome.target.clone(),
                planner: planner(),
                inputs: at(Some("1")),
                plan: None,
                outcome: Some(outcome),
                was: None,
                due,
            })
            .collect();
        Rows {
            round: "round".into(),
            rows,
        }
        .kept()
        .expect("every row has an outcome")
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
        let settled = table(outcomes, vec![None, None]);
        let inventories = vec![
            inventory(&targets[0].source.id, &["capi-manager"]),
            inventory(&targets[1].source.id, &["capa-manager"]),
        ];
        let changes = |objects: &[&str], everything| Changes {
            everything,
            objects: objects.iter().map(|k| key(k)).collect(),
        };
        let gcp = target("gcp", ProviderType::Infrastructure);
        let uninstalling = [
            inventories.clone(),
            vec![inventory(&gcp.source.id, &["capg-manager"])],
        ]
        .concat();
        let only =
            |i: &[usize]| Todo::Only(i.iter().map(|&i| targets[i].source.id.clone()).collect());
        // What the case is, the changed objects, whether every object changed, the round, the
        // providers selected, their inventories: what the pass does.
        type Case<'a> = (
            &'a str,
            &'a [&'a str],
            bool,
            &'a str,
            &'a [Target],
            &'a [(SourceId, Inventory)],
            Todo,
        );
        let cases: Vec<Case> = vec![
            (
                "aws's object",
                &["capa-manager"],
                false,
                "round",
                &targets,
                &inventories,
                only(&[1]),
            ),
            (
                "both providers' objects",
                &["capa-manager", "capi-manager"],
                false,
                "round",
                &targets,
                &inventories,
                only(&[0, 1]),
            ),
            (
                "the resync",
                &["capa-manager"],
                true,
                "round",
                &targets,
                &inventories,
                Todo::Every,
            ),
            (
                "another round",
                &["capa-manager"],
                false,
                "another round",
                &targets,
                &inventories,
                Todo::Every,
            ),
            (
                "another selection",
                &["capa-manager"],
                false,
                "round",
                &targets[..1],
                &inventories,
                Todo::Every,
            ),
            (
                "an object of no inventory",
                &["nobody's"],
                false,
                "round",
                &targets,
                &inventories,
                Todo::Every,
            ),
            (
                "an object of a source not selected (being uninstalled) asks for no provider",
                &["capg-manager", "capa-manager"],
                false,
                "round",
                &targets,
                &uninstalling,
                only(&[1]),
            ),
            (
                "nothing changed, nothing due",
                &[],
                false,
                "round",
                &targets,
                &inventories,
                only(&[]),
            ),
        ];
        for (case, objects, everything, round, selected, inventories, expected) in cases {
            let changes = changes(objects, everything);
            let inputs = unchanged(selected.len());
            assert_eq!(
                settled.todo(round, selected, &inputs, &changes, inventories, now),
                expected,
                "{case}"
            );
        }
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
        let settled = table(outcomes, dues);
        let inventories = vec![
            inventory(&targets[0].source.id, &["capi-manager"]),
            inventory(&targets[1].source.id, &["capa-manager"]),
            inventory(&targets[2].source.id, &["capg-manager"]),
        ];
        let timer = Changes::default();
        let at_secs = |secs: u64| {
            settled.todo(
                "round",
                &targets,
                &unchanged(3),
                &timer,
                &inventories,
                t0 + Duration::from_secs(secs),
            )
        };
        let ids =
            |i: &[usize]| Todo::Only(i.iter().map(|&i| targets[i].source.id.clone()).collect());
        assert_eq!(at_secs(1), ids(&[]), "nothing due yet");
        assert_eq!(at_secs(5), ids(&[1]), "aws's gate; gcp not due");
        assert_eq!(at_secs(40), ids(&[1, 2]), "both due; core never");
        let gcp_changed = Changes {
            everything: false,
            objects: BTreeSet::from([key("capg-manager")]),
        };
        assert_eq!(
            settled.todo(
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
            settled.todo("round", &targets, &gcp_source, &timer, &inventories, t0),
            ids(&[2]),
            "a new revision of gcp's source reconciles it before it is due"
        );
        let mut aws_rollback = unchanged(3);
        aws_rollback[1].rollback = Some("{\"to\": 1}".into());
        assert_eq!(
            settled.todo("round", &targets, &aws_rollback, &timer, &inventories, t0),
            ids(&[1]),
            "a rollback request for aws reconciles it before it is due"
        );
        let mut aws_rolled_back = unchanged(3);
        aws_rolled_back[1].hold = Some("digest 3 Some(4)".into());
        assert_eq!(
            settled.todo(
                "round",
                &targets,
                &aws_rolled_back,
                &timer,
                &inventories,
                t0
            ),
            ids(&[1]),
            "a rollback recorded for aws after its rollout timed out: the next pass applies it"
        );
        let mut core_gone = unchanged(3);
        core_gone[0] = at(None);
        assert_eq!(
            settled.todo("round", &targets, &core_gone, &timer, &inventories, t0),
            ids(&[0]),
            "a source whose revision cannot be read is not taken as unchanged"
        );
        assert!(
            !settled.rows[2].outcome.as_ref().unwrap().serving,
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

    #[test]
    fn the_next_pass_keeps_settled_outcomes_and_no_failed_plan() {
        let core = target("cluster-api", ProviderType::Core);
        let aws = target("aws", ProviderType::Infrastructure);
        let gone = |t: &Target| -> Plan {
            let error = crate::source::SourceError::Gone {
                id: t.source.id.clone(),
            };
            (t.clone(), Err(error.into()))
        };
        let row = |t: &Target, outcome: Option<Outcome>| Row {
            outcome,
            ..Row::planned(t.clone(), planner(), at(Some("1")), gone(t))
        };
        let not_reconciled = Rows {
            round: "round".into(),
            rows: vec![
                row(&core, Some(outcome(&core, ProviderState::Installed))),
                row(&aws, None),
            ],
        };
        assert!(
            not_reconciled.kept().is_none(),
            "a provider left without an outcome: the next pass plans every provider"
        );

        let mut failing = outcome(&aws, ProviderState::Installed);
        failing.serving = false;
        let mut reconciled = Rows {
            round: "round".into(),
            rows: vec![
                row(&core, Some(outcome(&core, ProviderState::Installed))),
                row(&aws, Some(failing)),
            ],
        };
        reconciled.rows[1].was = reconciled.rows[1]
            .outcome
            .as_ref()
            .and_then(Outcome::settled);
        let kept = reconciled.kept().expect("every provider has an outcome");
        assert!(
            kept.rows
                .iter()
                .all(|r| r.plan.is_none() && r.was.is_none()),
            "a plan that failed is made again, and what a pass was is its own"
        );
        assert_eq!(
            kept.outcomes().map(|o| o.serving).collect::<Vec<_>>(),
            vec![true, false]
        );
        assert_eq!(
            kept.todo(
                "round",
                &[core, aws],
                &unchanged(2),
                &Changes::default(),
                &[],
                Instant::now()
            ),
            Todo::Only(BTreeSet::new()),
            "the kept table lets the next pass be limited"
        );
    }
}
