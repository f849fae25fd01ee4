//! Apply engine: ordered phases, server-side apply, readiness, inventory and prune. Knows Kubernetes,
//! knows nothing about Cluster API.
//!
//! Like fluxcd/pkg/ssa, the engine is a set of steps the caller composes; none of them decides policy
//! for the others:
//!
//! | step | function | requests |
//! |---|---|---|
//! | resolve kinds | [`KindResolver::discover`] (+ CRDs in the set) | discovery |
//! | plan | [`plan()`] → [`Plan`] of [`PlannedPhase`]s | none (pure) |
//! | names | [`NameClaims`]: CRD names unique per group across several plans and the cluster; a clashing short name dropped ([`crd_names`]) | none (pure) |
//! | observe | [`LiveCache`]: a watch per kind, slim copies ([`slim`]) of ours and others' objects | one watch per kind (streaming list) |
//! | check | [`Applier::dry_run_all`]: ownership, [CRD safety](crd_safety), server-side dry-run; objects of kinds only the plan's CRDs define ([`Plan::split_by_served`]) once those are Established | 0 when unchanged, else dry-run PATCH (+ a list when a CRD stops serving a version) |
//! | apply | [`Applier::apply`] / [`Applier::apply_phase`] → [`ApplyOutcome`] | 0 when unchanged, else SSA PATCH (no read first: [`Applier::with_cache`]) |
//! | gate | [`wait_ready`] with [`readiness()`] per kind | GET per poll |
//! | record | [`Inventory`] in a ConfigMap via [`InventoryStore`] | write only on change |
//! | prune | [`Inventory::stale`] → [`prune()`] → [`PruneReport`] | GET + DELETE per stale object |
//!
//! A typical reconcile:
//!
//! ```text
//! let resolver = KindResolver::discover(&client).await?;
//! let plan = plan(objects, &resolver)?;                   // PlanErrors: nothing is written
//! let (now, later) = plan.split_by_served(&resolver);
//! let old = store.load(owner).await?;                      // the owner's record decides ownership
//! let errors = applier.dry_run_all(now, |k| cache.get(k), &old, &judge).await; // any error: nothing is written
//! let mut new = Inventory::from_plan(owner, &plan);       // the intent, saved before the first write
//! store.save(&union(&old, &new)).await?;
//! for p in &plan.phases {
//!     let out = applier.apply_phase(p, |k| cache.get(k), &new).await; // 0 requests when unchanged
//!     if gated(p.phase) { wait_ready(&client, &p.wait_targets(), timeout, interval).await? }
//!     for (r, namespaced) in p.resources() { cache.ensure_watched(&r, namespaced) }
//! }
//! let report = prune(&client, old.prune_targets(&new, &resolver), applier.ownership()).await;
//! new.retain_from(&old, report.retry_keys());            // kept CRDs and failures are retried
//! store.save(&new).await?;                               // written only when it changed
//! ```
//!
//! # Phases
//! [`Phase`]: CustomResourceDefinitions (gate: Established) → Base (Namespaces, RBAC, ServiceAccounts,
//! ConfigMaps, Secrets, Services, every other kind) → Workloads (Deployments, StatefulSets,
//! DaemonSets; gate: kstatus Current, bounded by a timeout) → Admission (webhook configurations and
//! admission policies, last, so no webhook is registered before the Deployment serving it is
//! Available). Inside a phase a fixed kind order (Flux's), then group, kind, namespace, name; the
//! objects of one kind are sent concurrently (up to [`CONCURRENCY`] at once), kinds one after the
//! other (a Namespace exists before what it holds). Dry-runs persist nothing, so the preflight checks
//! every object concurrently, whatever its kind.
//!
//! # Zero writes in steady state
//! The applier stamps an annotation (default [`DEFAULT_HASH_ANNOTATION`]) with the sha256 of the
//! normalized desired object. An object is left alone, without any request, when the live object
//! carries the same hash and the desired object is a semantic subset of it ([`needs_apply`]), or
//! when the live object still shows the resourceVersion, or the same fields owned by our field
//! manager ([`drift::managed_digest`]), that our own last apply left. The subset test knows quantities
//! (`0.1` = `100m`); the memory absorbs the rest of the API server's normalization (e.g.
//! `readOnly: false` dropped as omitempty), which the subset test must not guess (for other fields
//! absent means true). The watch cache keeps only slim copies (the digest of our fields, not the
//! fields), which the memory answers for; that memory is in-process: after a restart each object is
//! read once (a GET) and judged by the hash and the subset test, an object the server normalized is
//! applied once more (a no-op PATCH), and both are remembered from then on.
//!
//! # Identity and errors
//! [`ObjectKey`] is group, kind, namespace and name; the version is carried but not compared, so a
//! version bump is neither a duplicate nor stale. Every error names its object as `Kind namespace/name`
//! (`Kind name` when cluster-scoped), plus the caller's origin (e.g. ConfigMap and document index)
//! for plan errors. [`plan()`] reports every problem of a set at once ([`PlanErrors`]).
//!
//! # Ownership
//! 1. What an owner may write is decided by its own record, its [`Inventory`] (which only we write),
//!    never by what the live object says of itself: its name, labels and field managers are written
//!    by whoever writes it. Every write takes the owner's record ([`Applier::apply`]'s `record`).
//! 2. An object that does not exist is created. An existing one that the record holds (created, or
//!    adopted) is updated. An existing one it does not hold is adopted (action
//!    [`ApplyAction::Adopted`]) only when the caller's plan asks for it ([`PlannedObject::take_over`])
//!    and it is as the release applied it (its spec written by [`OwnershipPolicy::adoptable_managers`]
//!    or a retired installer alone), or when a retired installer wrote it
//!    ([`OwnershipPolicy::retired_managers`]); never a built-in object nor one carrying another
//!    owner's label ([`OwnershipPolicy::check`]).
//! 3. Otherwise apply fails with [`ApplyError::Conflict`] (or [`ApplyError::AdoptionRefused`]) naming
//!    the object and its writers, and writes nothing. A caller records what it is about to create, and
//!    what the check found it adopts, before the first write: an interrupted apply leaves nothing its
//!    record does not hold. A name recorded to be created stays pending ([`Inventory::pending`]) until
//!    the caller confirms the write: an object found under it is ours only if our apply created it
//!    ([`OwnershipPolicy::created_by_us`]), and its create does not force and checks its answer
//!    ([`Applier::create`]), so an object someone creates between our check and our write stays theirs.
//! 4. Every object we apply carries the ownership label ([`OwnershipPolicy::selector`]): the watches
//!    and prune find our writes by it. The cache sees every object of a watched kind, ours or not; one
//!    its synced watch does not have does not exist. When it cannot tell (kind not watched or not
//!    synced yet, or our own write not seen yet), the object is read with a GET before any write: a
//!    cache miss never turns into a silent take-over.
//! 5. Prune deletes only what the record holds as created (a pending name: created by our apply) and
//!    still carries the label and the owner's value of the owner label, with a UID precondition; an adopted object is released (our marks and
//!    field ownership removed), never deleted; a CRD with instances is never deleted (reported and
//!    retried).
//!
//! Apart from normalization ([`drift::normalize`]: server-set metadata and `status` dropped, a
//! Secret's `stringData` folded into `data`) the engine never strips or special-cases fields: a caller
//! that must not own a field (e.g. a webhook's `caBundle`, owned by service-ca) leaves it out of the
//! desired object, and server-side apply keeps the other manager's value.

#![warn(unreachable_pub)]

pub mod apply;
// The judgments of live objects alone, a crate of their own (no client): re-exported where the
// engine has always had them.
pub use capi_live::{
    Availability, CrdProblem, Detail, Edit, FieldChange, Readiness, availability, changes,
    crd_safety, fight, managed_changes, readiness,
};
pub mod crd_names;
pub mod drift;
pub mod identity;
pub(crate) mod inventory;
pub(crate) mod key;
pub mod ownership;
pub mod plan;
pub mod prune;
pub(crate) mod resolve;
pub mod slim;
pub mod takeover;
pub(crate) mod wait;
pub(crate) mod watch;

pub use apply::{
    Applier, ApplyAction, ApplyError, ApplyOutcome, DEFAULT_HASH_ANNOTATION, Judge, PhaseOutcome,
    Preview,
};
pub use crd_names::{CrdNames, DroppedShortName, NameClaims, NameConflict, NameConflicts};
pub use drift::needs_apply;
pub use identity::{Identities, IdentityError};
pub use inventory::{Inventory, InventoryError, InventoryStore};
pub use key::{ObjectKey, key_of};
pub use ownership::{Ownership, OwnershipPolicy, Recorded};
pub use plan::{Phase, Plan, PlanError, PlanErrors, PlanInput, PlannedObject, PlannedPhase, plan};
pub use prune::{KeepReason, PruneReport, PruneTarget, prune, prune_dry_run};
pub use resolve::{KindResolver, ResolvedKind};
pub use wait::{WaitError, WaitTarget, wait_ready};
pub use watch::{LiveCache, Lookup, Namespaces};

#[cfg(test)]
pub(crate) mod testutil {
    use kube::api::DynamicObject;

    use crate::resolve::KindResolver;

    /// A dynamic object from a small YAML document.
    pub(crate) fn obj(yaml: &str) -> DynamicObject {
        serde_saphyr::from_str(yaml).expect("test YAML parses")
    }

    /// A resolver that knows the built-in kinds the tests use, as discovery would report them.
    pub(crate) fn resolver() -> KindResolver {
        KindResolver::builtin()
    }
}
