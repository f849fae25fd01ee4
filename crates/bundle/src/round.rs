//! One pass's inputs, gathered once, and the pure planning step that every pass shares — the
//! controller's reconcile, `capi-installer diff` and `capi-installer render` (the way Flux's
//! `ApplyAllStaged` composes `ApplyAll` and `WaitForSet` instead of copying them):
//!
//! ```text
//! wanted providers + candidate sources + owners + render context
//!     → Round::new: the selection (install order, missing, refused) and the context of this pass
//!     → Planner::plan, provider by provider: render, bundle policy, plan (crate::prepare)
//! the controller:  plan → admit (crate::order) → reconcile → Outcome → report
//! diff:            plan → preview (server-side dry-run) → report
//! render:          plan → print
//! ```
//!
//! A new source kind is one more [`crate::source::SourceCatalog`] whose candidates go into
//! [`Round::new`]; nothing here changes.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use capi_apply::{CrdNames, KindResolver, NameClaims, ObjectKey};

use crate::desired::Wanted;
use crate::policy::{Among, Ceiling, FieldBound, Holdings};
use crate::prepare::{self, Prepared, RenderContext, RenderError, Rendered};
use crate::source::{self, Payload, ProviderSource, Selection, SourceId, Target};
use crate::unmanaged::{Unmanaged, UnmanagedError};

/// Everything one pass knows before it renders anything: which sources provide the wanted providers,
/// and what rendering needs.
#[derive(Clone, Debug)]
pub struct Round {
    /// The providers to reconcile in install order, the required ones without a source, and the
    /// second sources of a provider.
    pub selection: Selection,
    /// Every source selected, refused ones included (their objects are not "unselected").
    pub selected: BTreeSet<SourceId>,
    /// What rendering needs, with every transport ConfigMap among the candidates protected: no bundle
    /// may write one (by name, whatever labels the bundle's object carries). Shared with the planning
    /// steps that run off the async runtime.
    pub ctx: Arc<RenderContext>,
    /// Which CRDs are unmanaged (`ClusterAPI/cluster`); an unreadable one fails every provider of the
    /// pass, as no CRD may be written then. Only the controller reads it (none elsewhere).
    pub unmanaged: Result<Unmanaged, UnmanagedError>,
    /// The names the cluster's CRDs hold (their accepted names): they had them first. Each provider's
    /// plan claims its CRDs' names after them and after the providers before it ([`Planner::plan`]).
    pub(crate) names: NameClaims,
    /// Who holds each resource the cluster's CRDs serve: (group, plural) → the provider label of the
    /// provider that installed it, "" for one no provider of this installer did. A provider's
    /// admission acts on no resource another holds.
    pub(crate) resources: BTreeMap<(String, String), String>,
}

impl Round {
    /// Selects the sources of `wanted` among `candidates` (of two sources of one provider, the one in
    /// `owners` — the sources that own objects — is kept; see [`source::select`]), and protects the
    /// transport ConfigMaps among the candidates in `ctx`'s bundle policy. Pure.
    pub fn new(
        wanted: &[Wanted],
        candidates: &[ProviderSource],
        owners: &BTreeSet<SourceId>,
        ctx: &RenderContext,
    ) -> Round {
        let selection = source::select(wanted, candidates, owners);
        let mut ctx = ctx.clone();
        for name in candidates.iter().filter_map(|c| c.id.configmap()) {
            ctx.policy.protected = ctx.policy.protected.with(ObjectKey::new(
                "",
                "v1",
                "ConfigMap",
                Some(&ctx.namespace),
                name,
            ));
        }
        Round {
            selected: selection.ids(),
            selection,
            ctx: Arc::new(ctx),
            unmanaged: Ok(Unmanaged::default()),
            names: NameClaims::new(),
            resources: BTreeMap::new(),
        }
    }

    /// With the CRDs on the cluster: each as (name, its accepted names, the `cluster.x-k8s.io/provider`
    /// label of the provider that installed it, if this installer did).
    pub fn with_live_crds(
        mut self,
        crds: impl IntoIterator<Item = (String, CrdNames, Option<String>)>,
    ) -> Round {
        for (name, accepted, owner) in crds {
            self.names.hold_live(&name, &accepted, owner.as_deref());
            // The plural from the CRD's name (`<plural>.<group>`): the accepted names are empty until
            // the API server accepted them.
            if let Some(plural) = name
                .strip_suffix(&accepted.group)
                .and_then(|p| p.strip_suffix('.'))
            {
                self.resources.insert(
                    (accepted.group.clone(), plural.to_string()),
                    owner.unwrap_or_default(),
                );
            }
        }
        self
    }

    /// With the provider RBAC ceiling the cluster has now (the administrator's ClusterRoles): the
    /// bundle policy allows what they grant too, beyond the release's.
    pub fn with_ceiling(mut self, cluster: &Ceiling) -> Round {
        let ctx = Arc::make_mut(&mut self.ctx);
        ctx.policy.ceiling = std::mem::take(&mut ctx.policy.ceiling).with(cluster);
        self
    }

    /// With the provider field bound's extensions the cluster has now (the administrator's
    /// ConfigMaps): the bundle policy allows their fields and values too, beyond the release's.
    pub fn with_fields(mut self, extension: &FieldBound) -> Round {
        let ctx = Arc::make_mut(&mut self.ctx);
        ctx.policy.fields = std::mem::take(&mut ctx.policy.fields).with(extension);
        self
    }

    /// With the unmanaged CRDs of this pass.
    pub fn with_unmanaged(mut self, unmanaged: Result<Unmanaged, UnmanagedError>) -> Round {
        self.unmanaged = unmanaged;
        self
    }

    /// The planner of a pass against the cluster: the kinds are what the API server serves (the
    /// controller discovers again when a plan names a kind it does not know).
    pub fn planner(&self) -> Planner {
        self.resume(PlannerState {
            learned: None,
            names: self.names.clone(),
            holdings: Vec::new(),
            resources: self.resources.clone(),
        })
    }

    /// The planner of a pass ahead of the cluster (`diff`, `render`): the kinds of the CRDs of each
    /// provider planned are known to the providers after it, as they will be served once it is applied
    /// (core's before any infrastructure provider's).
    pub fn planner_ahead(&self) -> Planner {
        self.resume(PlannerState {
            learned: Some(KindResolver::new()),
            names: self.names.clone(),
            holdings: Vec::new(),
            resources: self.resources.clone(),
        })
    }

    /// A planner of this round that goes on from `state`: as it stood in a pass whose round had this
    /// one's [`fingerprint`], so with an equal context.
    pub fn resume(&self, state: PlannerState) -> Planner {
        Planner {
            ctx: self.ctx.clone(),
            state,
        }
    }

    /// Every selected provider planned ahead of the cluster ([`Round::planner_ahead`]), in install
    /// order, from `load`'s payloads: for the callers that do nothing between two providers (`render`,
    /// `diff`).
    pub fn plan_all<E>(
        &self,
        served: &KindResolver,
        mut load: impl FnMut(&Target) -> Result<Payload, E>,
    ) -> Vec<Planned<'_, E>> {
        let mut planner = self.planner_ahead();
        self.selection
            .targets
            .iter()
            .map(|target| Planned {
                target,
                prepared: load(target).map(|payload| planner.plan(target, &payload, served)),
            })
            .collect()
    }
}

/// A digest of everything a round holds, as lowercase hex: the selection, the rendering context and
/// bundle policy, the cluster's CRD names and resources, the unmanaged CRDs. Two rounds with one
/// fingerprint plan a provider's payload alike ([`Planner::plan`] is pure), so a pass whose round has
/// the last full pass's fingerprint may plan one provider again with that pass's planner
/// (the installer's `controller`). The encoding is the types' `Debug` output: every part is an ordered
/// collection, and a part whose order varied would only make two equal rounds differ (a full pass),
/// never the reverse.
pub fn fingerprint(round: &Round) -> String {
    use sha2::Digest;
    use std::fmt::Write;

    struct Hashing(sha2::Sha256);
    impl Write for Hashing {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0.update(s.as_bytes());
            Ok(())
        }
    }
    let mut hashing = Hashing(sha2::Sha256::new());
    write!(hashing, "{round:?}").expect("hashing does not fail");
    capi_object::lower_hex(&hashing.0.finalize())
}

/// [`fingerprint`] of the round but for the selected sources' versions and creation times: those
/// change only with a source's object, which a caller that keeps what each provider was planned from
/// (the installer's `controller`: a transport ConfigMap's `resourceVersion`) plans that provider
/// again for. So a provider's new version leaves the fingerprint as it was, and the plans of the
/// others stand.
pub fn fingerprint_but_versions(round: &Round) -> String {
    let mut round = round.clone();
    let selection = &mut round.selection;
    let targets = selection.targets.iter_mut();
    let refused = selection.refused.iter_mut().map(|r| &mut r.target);
    for source in targets.chain(refused).map(|t| &mut t.source) {
        source.version = None;
        source.created = None;
    }
    fingerprint(&round)
}

/// One provider of [`Round::plan_all`]: its plan, why it has none, or why its payload could not be
/// read (`Err`).
pub struct Planned<'r, E> {
    pub target: &'r Target,
    pub prepared: Result<Result<Prepared, RenderError>, E>,
}

/// Plans the providers of a round one after the other, in install order. Owns what it needs (the
/// round's context, shared), so that a plan can be made on the blocking pool (`crate::compute`).
#[derive(Clone)]
pub struct Planner {
    ctx: Arc<RenderContext>,
    state: PlannerState,
}

/// What a [`Planner`] knows of the providers planned so far, without the round's context: kept
/// between passes ([`Planner::state`], [`Round::resume`]) at the cost of its own size only — the
/// context, with the bundle policy, is the largest part of a round. Two equal states plan a payload
/// alike in one round.
#[derive(Clone, PartialEq, Eq)]
pub struct PlannerState {
    /// Ahead of the cluster: the kinds of the CRDs of the providers planned so far.
    learned: Option<KindResolver>,
    /// The CRD names held on the cluster and claimed by the providers planned so far.
    names: NameClaims,
    /// What the providers planned so far hold (see [`crate::policy::references`]).
    holdings: Vec<Holdings>,
    /// Who holds the cluster's CRDs' resources ([`Round::resources`]).
    resources: BTreeMap<(String, String), String>,
}

impl Planner {
    /// What it knows of the providers planned so far, to go on from in a later pass
    /// ([`Round::resume`]).
    pub fn state(&self) -> PlannerState {
        self.state.clone()
    }

    /// Renders, checks and plans `target`'s payload (see [`prepare::prepare`]) with the kinds `served`
    /// knows (ahead of the cluster, and those of the providers planned before it), then claims its
    /// CRDs' names ([`Planner::claim_names`]). Pure.
    pub fn plan(
        &mut self,
        target: &Target,
        payload: &Payload,
        served: &KindResolver,
    ) -> Result<Prepared, RenderError> {
        let others = self.others(target);
        let among = Among::new(&target.clusterctl_label, &others, &self.state.resources);
        let mut prepared = match self.state.learned {
            None => prepare::prepare_among(payload, target, &self.ctx, served, &among)?,
            Some(_) => {
                prepare::prepare_among(payload, target, &self.ctx, &self.kinds(served), &among)?
            }
        };
        self.claim_names(target, &mut prepared)?;
        self.hold(target, &prepared);
        if let Some(learned) = &mut self.state.learned {
            for crd in prepared
                .plan
                .objects()
                .filter(|o| o.key.kind == "CustomResourceDefinition")
            {
                // A CRD the plan accepted defines its kinds; one that does not is the API server's to
                // refuse.
                let _ = learned.insert_crd(&crd.object);
            }
        }
        Ok(prepared)
    }

    /// Objects rendered earlier (a revision's stored content) through the same checks, plan and name
    /// claims as a fresh render: stored content is as untrusted as any ConfigMap of the namespace.
    pub fn replan(
        &mut self,
        target: &Target,
        rendered: Rendered,
        served: &KindResolver,
    ) -> Result<Prepared, RenderError> {
        let others = self.others(target);
        let among = Among::new(&target.clusterctl_label, &others, &self.state.resources);
        let mut prepared = prepare::plan_rendered(rendered, &self.ctx, served, &among)?;
        self.claim_names(target, &mut prepared)?;
        self.hold(target, &prepared);
        Ok(prepared)
    }

    /// What the providers planned before `target` hold (a provider planned again is not its own
    /// neighbour).
    fn others(&self, target: &Target) -> Vec<Holdings> {
        self.state
            .holdings
            .iter()
            .filter(|h| h.provider != target.clusterctl_label)
            .cloned()
            .collect()
    }

    /// Records what `target`'s accepted plan holds, for the providers planned after it.
    fn hold(&mut self, target: &Target, prepared: &Prepared) {
        self.state
            .holdings
            .retain(|h| h.provider != target.clusterctl_label);
        self.state.holdings.push(Holdings::of(
            &target.clusterctl_label,
            prepared.plan.objects().map(|o| &o.object),
        ));
    }

    /// Claims the names of the plan's CRDs for `target` (see [`capi_apply::crd_names`]): after what
    /// the cluster holds, then in install order. A short name another CRD of the group holds is only a
    /// convenience of `kubectl get`, and is dropped from the plan (and reported) rather than left for
    /// the API server to refuse, which would leave the CRD never Established; any other clash refuses
    /// the provider before its first write, naming both CRDs.
    fn claim_names(&mut self, target: &Target, prepared: &mut Prepared) -> Result<(), RenderError> {
        prepared.dropped_short_names = self
            .state
            .names
            .claim(&target.clusterctl_label, &mut prepared.plan)
            .map_err(RenderError::NameConflict)?;
        Ok(())
    }

    /// The kinds a plan may use now: those `served` knows and, ahead of the cluster, those of the
    /// providers planned so far.
    pub fn kinds(&self, served: &KindResolver) -> KindResolver {
        let mut kinds = served.clone();
        if let Some(learned) = &self.state.learned {
            kinds.extend(learned);
        }
        kinds
    }
}

#[cfg(test)]
mod tests {
    use capi_apply::CrdNames;
    use capi_manifests::ProviderType;

    use super::*;
    use crate::desired::wanted;
    use crate::source::{ProviderSource, SourceId};

    fn source(name: &str, provider_type: ProviderType) -> ProviderSource {
        ProviderSource {
            id: SourceId::ConfigMap(name.into()),
            name: name.into(),
            provider_type,
            version: Some("v1.0.0".into()),
            created: None,
        }
    }

    /// A round as a pass builds it, anew each time: the release's policy, the cluster's CRDs.
    fn round(crd: &str, aws_version: &str) -> Round {
        let wanted = wanted(&["aws"]);
        let mut aws = source("aws", ProviderType::Infrastructure);
        aws.version = Some(aws_version.into());
        let candidates = vec![source("cluster-api", ProviderType::Core), aws];
        Round::new(
            &wanted,
            &candidates,
            &BTreeSet::new(),
            &RenderContext::default(),
        )
        .with_live_crds([(
            format!("{crd}.cluster.x-k8s.io"),
            CrdNames::requested(&serde_json::json!({"spec": {
                "group": "cluster.x-k8s.io",
                "names": {"plural": crd, "kind": crd.trim_end_matches('s')},
            }})),
            Some("cluster-api".to_string()),
        )])
    }

    #[test]
    fn rounds_built_alike_have_one_fingerprint_and_any_change_another() {
        let first = round("clusters", "v1.0.0");
        let same = fingerprint(&first);
        assert_eq!(same.len(), 64);
        assert_eq!(
            same,
            fingerprint(&round("clusters", "v1.0.0")),
            "built anew"
        );
        assert_ne!(
            same,
            fingerprint(&round("machines", "v1.0.0")),
            "a CRD of the cluster changed"
        );
        assert_ne!(
            same,
            fingerprint(&round("clusters", "v1.1.0")),
            "a source's version changed"
        );
        let mut ctx = (*first.ctx).clone();
        ctx.substitutions.insert("VAR".into(), "value".into());
        let substituted = Round {
            ctx: Arc::new(ctx),
            ..first.clone()
        };
        assert_ne!(same, fingerprint(&substituted), "a substitution changed");
        // The parse memo is a cache: filled by a plan, it changes nothing the round plans from.
        let text = "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n";
        for _ in 0..2 {
            first.ctx.parsed.parse_objects("src", text).unwrap();
        }
        assert_eq!(first.ctx.parsed.stats().recalled, 1);
        assert_eq!(same, fingerprint(&first), "the parse memo filled");
    }

    #[test]
    fn a_sources_version_is_no_part_of_the_fingerprint_but_versions() {
        let same = fingerprint_but_versions(&round("clusters", "v1.0.0"));
        assert_eq!(
            same,
            fingerprint_but_versions(&round("clusters", "v1.1.0")),
            "a source's version changed"
        );
        assert_ne!(
            same,
            fingerprint_but_versions(&round("machines", "v1.0.0")),
            "a CRD of the cluster changed"
        );
    }
}
