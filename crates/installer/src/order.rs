//! Who waits for whom: the one ordering rule between the providers of a pass. Pure.
//!
//! Every provider of a pass is planned first, in install order ([`crate::source::select`]: core first,
//! then each infrastructure provider followed by its companion). Then the providers are reconciled in
//! [`chains`]: core's first; then every other chain — an infrastructure provider and its companion, in
//! that order — at the same time as the others. Each provider is admitted by [`admit`] from the outcomes
//! of those it may wait for (core's, and those before it in its chain):
//! - core serves before any infrastructure provider starts (their controllers need core's CRDs and
//!   conversion webhooks) — a core provider without a source included;
//! - an infrastructure provider's companion (`openshift-cluster-api-<infra>`) waits for that provider;
//! - infrastructure providers never wait for each other;
//! - a provider that fails while its previous version still serves holds nothing back;
//! - while what a provider waits for rolls out (progressing, not failing or missing), it applies what
//!   needs nothing of it — its CRDs and base objects — to shorten a cold install (SPEC §4); its
//!   Deployments and admission objects wait ([`Until`]). Behind a missing or failing provider it waits
//!   whole.
//!
//! A second source of a provider is reported after every selected provider (the controller's loop), so
//! that it holds nothing back.

use capi_apply::Phase;
use capi_manifests::ProviderType;

use crate::desired::Wanted;
use crate::outcome::{Outcome, ProviderState};
use crate::source::Target;

/// How far a provider may go while one it depends on rolls out: the phases before `before` need
/// nothing of it; at `before` the provider stops, `Blocked` behind `behind`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Until {
    pub(crate) before: Phase,
    pub(crate) behind: String,
}

/// Whether a provider is reconciled now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Admit {
    /// Nothing to wait for: reconciled whole.
    Go,
    /// What it waits for is rolling out: reconciled until the phase it must not reach yet.
    Until(Until),
    /// What it waits for does not serve and is not on its way: not reconciled, `Blocked` behind
    /// `behind` (a source id, or `<provider> (core), which has no source`).
    Blocked { behind: String },
}

impl Admit {
    /// How far a provider reconciled ahead of what it waits for may go.
    pub(crate) fn until(&self) -> Option<&Until> {
        match self {
            Admit::Until(until) => Some(until),
            _ => None,
        }
    }
}

/// Whether `target` is reconciled now, after `earlier` (the outcomes of the providers before it in
/// install order) and with `missing` (the required providers without a source).
pub(crate) fn admit(target: &Target, earlier: &[&Outcome], missing: &[Wanted]) -> Admit {
    let infrastructure = target.source.provider_type == ProviderType::Infrastructure;
    if infrastructure
        && let Some(core) = missing
            .iter()
            .find(|w| w.provider_type == ProviderType::Core)
    {
        return Admit::Blocked {
            behind: format!("{}, which has no source", core.describe()),
        };
    }
    let depends_on = |o: &Outcome| {
        o.target.source.provider_type == ProviderType::Core
            || o.target.clusterctl_label == target.clusterctl_label
    };
    match earlier.iter().find(|o| depends_on(o) && !o.serving) {
        None => Admit::Go,
        Some(o) => {
            let behind = o.id().to_string();
            let rolling_out = earlier.iter().any(|e| {
                e.id().to_string() == behind && matches!(e.state, ProviderState::Progressing { .. })
            });
            match rolling_out {
                true => Admit::Until(Until {
                    before: Phase::Workloads,
                    behind,
                }),
                false => Admit::Blocked { behind },
            }
        }
    }
}

/// Providers reconciled one after the other, each with its index in install order.
pub(crate) type Chain<T> = Vec<(usize, T)>;

/// The providers of a pass as [`admit`] orders them: core's (reconciled first, one after the other),
/// then one chain per clusterctl label among the others — an infrastructure provider and its companion,
/// in install order — the chains independent of each other. Each item keeps its index in `targets`,
/// so that outcomes can be reported in install order.
pub(crate) fn chains<T>(
    targets: impl IntoIterator<Item = T>,
    target: impl Fn(&T) -> &Target,
) -> (Chain<T>, Vec<Chain<T>>) {
    let mut core = Vec::new();
    let mut others: Vec<Chain<T>> = Vec::new();
    for (index, item) in targets.into_iter().enumerate() {
        let t = target(&item);
        if t.source.provider_type == ProviderType::Core {
            core.push((index, item));
            continue;
        }
        let label = t.clusterctl_label.clone();
        match others
            .iter_mut()
            .find(|chain| target(&chain[0].1).clusterctl_label == label)
        {
            Some(chain) => chain.push((index, item)),
            None => others.push(vec![(index, item)]),
        }
    }
    (core, others)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use capi_apply::{ObjectKey, Readiness};

    use super::*;
    use crate::desired::wanted;
    use crate::error::{Pending, ProviderError};
    use crate::source::{ProviderSource, SourceError, SourceId};

    use ProviderType::{Core, Infrastructure};

    fn target(name: &str, provider_type: ProviderType, label: &str) -> Target {
        Target {
            source: ProviderSource {
                id: SourceId::ConfigMap(name.into()),
                name: name.into(),
                provider_type,
                version: Some("v1.0.0".into()),
                created: None,
            },
            clusterctl_label: label.into(),
        }
    }

    fn core() -> Target {
        target("cluster-api", Core, "cluster-api")
    }
    fn aws() -> Target {
        target("aws", Infrastructure, "infrastructure-aws")
    }
    fn aws_companion() -> Target {
        target(
            "openshift-cluster-api-aws",
            Infrastructure,
            "infrastructure-aws",
        )
    }
    fn gcp() -> Target {
        target("gcp", Infrastructure, "infrastructure-gcp")
    }

    /// Where an earlier provider stands, as ordering reads it.
    #[derive(Clone, Copy)]
    enum Was {
        Installed,
        Progressing,
        /// Failed, its previous version serving or not.
        Failed {
            serving: bool,
        },
        Blocked,
    }

    fn was(target: Target, was: Was) -> Outcome {
        let (state, serving) = match was {
            Was::Installed => (ProviderState::Installed, true),
            Was::Progressing => (
                ProviderState::Progressing {
                    phase: Phase::Workloads,
                    pending: vec![Pending {
                        key: ObjectKey::new("apps", "v1", "Deployment", Some("ns"), "d"),
                        readiness: Readiness::NotFound,
                    }],
                },
                false,
            ),
            Was::Failed { serving } => (
                ProviderState::Failed {
                    error: ProviderError::Source(SourceError::Gone {
                        id: target.source.id.clone(),
                    }),
                    attempts: 1,
                    failing_for: Duration::ZERO,
                },
                serving,
            ),
            Was::Blocked => (
                ProviderState::Blocked {
                    behind: "ConfigMap cluster-api".into(),
                },
                false,
            ),
        };
        Outcome {
            target,
            state,
            serving,
            unavailable: Vec::new(),
            rolled_out: None,
            related: Vec::new(),
            held: None,
            content_id: None,
            dropped_short_names: Vec::new(),
        }
    }

    fn ahead(behind: &str) -> Admit {
        Admit::Until(Until {
            before: Phase::Workloads,
            behind: behind.into(),
        })
    }

    fn blocked(behind: &str) -> Admit {
        Admit::Blocked {
            behind: behind.into(),
        }
    }

    #[test]
    fn who_waits_for_whom() {
        let core_missing: Vec<Wanted> = wanted(&["aws"])
            .into_iter()
            .filter(|w| w.name == "cluster-api")
            .collect();
        let aws_missing: Vec<Wanted> = wanted(&["aws"])
            .into_iter()
            .filter(|w| w.name == "aws")
            .collect();
        // (case, target, earlier outcomes, missing providers, expected)
        type Case<'a> = (&'a str, Target, Vec<Outcome>, &'a [Wanted], Admit);
        let cases: Vec<Case> = vec![
            ("core goes first", core(), vec![], &[], Admit::Go),
            (
                "core's companion waits for core, as everything does",
                target("openshift-cluster-api", Core, "cluster-api"),
                vec![was(core(), Was::Progressing)],
                &[],
                ahead("ConfigMap cluster-api"),
            ),
            (
                "infrastructure behind a serving core",
                aws(),
                vec![was(core(), Was::Installed)],
                &[],
                Admit::Go,
            ),
            (
                "infrastructure ahead while core rolls out",
                aws(),
                vec![was(core(), Was::Progressing)],
                &[],
                ahead("ConfigMap cluster-api"),
            ),
            (
                "infrastructure blocked behind a failing core",
                aws(),
                vec![was(core(), Was::Failed { serving: false })],
                &[],
                blocked("ConfigMap cluster-api"),
            ),
            (
                "a failing core whose previous version serves holds nothing back",
                aws(),
                vec![was(core(), Was::Failed { serving: true })],
                &[],
                Admit::Go,
            ),
            (
                "infrastructure blocked behind a blocked core",
                aws(),
                vec![was(core(), Was::Blocked)],
                &[],
                blocked("ConfigMap cluster-api"),
            ),
            (
                "infrastructure blocked while core has no source",
                aws(),
                vec![],
                &core_missing,
                blocked("cluster-api (core), which has no source"),
            ),
            (
                "a companion ahead while its provider rolls out",
                aws_companion(),
                vec![was(core(), Was::Installed), was(aws(), Was::Progressing)],
                &[],
                ahead("ConfigMap aws"),
            ),
            (
                "a companion blocked behind its failing provider",
                aws_companion(),
                vec![
                    was(core(), Was::Installed),
                    was(aws(), Was::Failed { serving: false }),
                ],
                &[],
                blocked("ConfigMap aws"),
            ),
            (
                "a companion whose provider has no source waits for nothing",
                aws_companion(),
                vec![was(core(), Was::Installed)],
                &aws_missing,
                Admit::Go,
            ),
            (
                "infrastructure providers never wait for each other",
                gcp(),
                vec![
                    was(core(), Was::Installed),
                    was(aws(), Was::Failed { serving: false }),
                    was(aws_companion(), Was::Blocked),
                ],
                &[],
                Admit::Go,
            ),
        ];
        for (case, target, earlier, missing, expected) in cases {
            let earlier: Vec<&Outcome> = earlier.iter().collect();
            assert_eq!(admit(&target, &earlier, missing), expected, "{case}");
        }
    }

    #[test]
    fn chains_put_core_first_and_each_infrastructure_provider_with_its_companion() {
        let targets = vec![core(), aws(), aws_companion(), gcp()];
        let (first, rest) = chains(targets, |t| t);
        let ids = |chain: &[(usize, Target)]| {
            chain
                .iter()
                .map(|(i, t)| (*i, t.source.name.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(&first), vec![(0, "cluster-api".to_string())]);
        assert_eq!(
            rest.iter().map(|c| ids(c)).collect::<Vec<_>>(),
            vec![
                vec![
                    (1, "aws".to_string()),
                    (2, "openshift-cluster-api-aws".to_string())
                ],
                vec![(3, "gcp".to_string())],
            ]
        );
    }
}
