//! Server-side apply with ownership safety and zero writes in steady state.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use futures::StreamExt;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};

use crate::crd_safety::{self, CrdProblem};
use crate::drift::{self, desired_hash, projection_hash};
use crate::fight::{self, Fights};
use crate::identity::{Identities, IdentityError};
use crate::inventory::Inventory;
use crate::key::{ObjectKey, api_for};
use crate::ownership::{Ownership, OwnershipPolicy, Recorded};
use crate::plan::{Plan, PlannedObject, PlannedPhase};
use crate::prune::crd_has_instances;
use crate::slim;
use crate::takeover;
use crate::watch::{LiveCache, Lookup, Namespaces};

pub use crate::ownership::DEFAULT_HASH_ANNOTATION;
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApplyAction {
    Created,
    Configured,
    Unchanged,
    Adopted,
}

#[derive(Debug, Clone)]
pub struct ApplyOutcome {
    pub key: ObjectKey,
    pub action: ApplyAction,
    /// The live object after the step (the cached one when unchanged).
    pub object: DynamicObject,
}

#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error(
        "{key} exists and the installer did not create it: this provider's inventory does not hold it; written by [{}]; not touching it",
        .managers.join(", ")
    )]
    Conflict {
        key: ObjectKey,
        managers: Vec<String>,
    },
    /// Another writer keeps reverting fields we own: the object's drift was repaired
    /// [`fight::REPAIRS`] times within [`fight::WINDOW`]; it is not written again until the oldest
    /// repair leaves the window ([`crate::fight`]).
    #[error(
        "{key}: another writer keeps reverting fields the installer owns: repaired {repairs} times within {}s, now left as it is (field managers: {ours} and [{}])",
        fight::WINDOW.as_secs(),
        .others.join(", ")
    )]
    WriteFight {
        key: ObjectKey,
        repairs: usize,
        ours: String,
        others: Vec<String>,
    },
    /// An adoption the bound on taking over forbids ([`OwnershipPolicy::check`]).
    #[error(
        "{key} exists, the installer did not create it, and it is not adopted: {reason}; not touching it"
    )]
    AdoptionRefused { key: ObjectKey, reason: String },
    /// Someone created the object between our check (absent) and our create: it is theirs, not ours.
    /// The create does not force, so values we contradict fail it and nothing is written; what it
    /// merged into their object is withdrawn ([`Applier::apply`]).
    #[error(
        "{key} was created by [{}] between the installer's check and its write: not the installer's; {outcome}",
        .managers.join(", ")
    )]
    Preempted {
        key: ObjectKey,
        managers: Vec<String>,
        /// What became of our write: refused whole, or merged and withdrawn (or why not).
        outcome: String,
    },
    #[error("{key} is being deleted; apply again once it is gone")]
    Terminating { key: ObjectKey },
    #[error("apply {key}: {source}")]
    Api {
        key: ObjectKey,
        #[source]
        source: kube::Error,
    },
    /// A change to a live CRD that would strand stored data (found before anything was written).
    #[error("{key}: refusing the change: {}", .problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    UnsafeCrdChange {
        key: ObjectKey,
        problems: Vec<CrdProblem>,
    },
    /// The API server refused a server-side dry-run of the object (nothing was written).
    #[error("dry-run {key}: {source}")]
    DryRun {
        key: ObjectKey,
        #[source]
        source: kube::Error,
    },
    /// The caller's judge refused the object as the API server's dry-run returned it (what would be
    /// stored: defaults filled, aliases resolved, numbers typed); nothing was written.
    #[error("{key}: as the API server would store it: {reason}")]
    Refused { key: ObjectKey, reason: String },
    /// The owner has no identity to write as ([`Applier::with_identities`]); nothing was written.
    #[error("{key}: {source}")]
    Identity {
        key: ObjectKey,
        #[source]
        source: IdentityError,
    },
}

/// What the caller says about an object as the API server would store it (the answer of a
/// server-side dry-run): `Err` with why refuses it. The engine knows no policy; the caller's judge is.
pub type Judge<'j> =
    dyn Fn(&PlannedObject, &DynamicObject) -> Result<(), String> + Send + Sync + 'j;

/// A judge that accepts every stored object.
fn accept(_: &PlannedObject, _: &DynamicObject) -> Result<(), String> {
    Ok(())
}

impl ApplyError {
    /// [`ApplyError::Identity`] of the object `key` that could not be written.
    fn identity(key: &ObjectKey) -> impl FnOnce(IdentityError) -> ApplyError + '_ {
        |source| ApplyError::Identity {
            key: key.clone(),
            source,
        }
    }

    pub fn key(&self) -> &ObjectKey {
        match self {
            ApplyError::Conflict { key, .. }
            | ApplyError::AdoptionRefused { key, .. }
            | ApplyError::Preempted { key, .. }
            | ApplyError::WriteFight { key, .. }
            | ApplyError::Terminating { key }
            | ApplyError::Api { key, .. }
            | ApplyError::UnsafeCrdChange { key, .. }
            | ApplyError::DryRun { key, .. }
            | ApplyError::Refused { key, .. }
            | ApplyError::Identity { key, .. } => key,
        }
    }
}

/// What we remember about our last apply of an object (or the first full read that found it
/// unchanged).
#[derive(Debug, Clone)]
struct Applied {
    hash: String,
    /// The object's uid then: the cache's record of its deletion names it ([`LiveCache::saw_deleted`]).
    uid: Option<String>,
    resource_version: Option<String>,
    projection: String,
    /// [`drift::managed_digest`] of the object then: what a slim cached copy is compared with.
    managed: Option<String>,
}

/// Whether `live` still shows what our own last apply (`rec`) of the same desired object left: the
/// same resourceVersion, or the same projection onto the desired object's fields.
fn unchanged_since(
    rec: Option<&Applied>,
    desired: &DynamicObject,
    live: &DynamicObject,
    hash_annotation: &str,
) -> bool {
    let Some(rec) = rec else { return false };
    if rec.hash != stamped_hash(desired, hash_annotation) {
        return false;
    }
    let same_version =
        rec.resource_version.is_some() && rec.resource_version == live.metadata.resource_version;
    same_version || rec.projection == projection_hash(desired, live)
}

impl Applied {
    /// The record of `after`, a full object (an apply's answer or a read).
    fn after(
        desired: &DynamicObject,
        after: &DynamicObject,
        hash_annotation: &str,
        field_manager: &str,
    ) -> Self {
        Applied {
            hash: stamped_hash(desired, hash_annotation).into_owned(),
            uid: after.metadata.uid.clone(),
            resource_version: after.metadata.resource_version.clone(),
            projection: projection_hash(desired, after),
            managed: drift::managed_digest(after, field_manager),
        }
    }
}

/// What [`Applier::verdict`] can tell about an object of ours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Unchanged,
    Changed,
    /// A slim copy and no record to compare it with (e.g. after a restart): read the object.
    Unknown,
}

/// What [`Applier::decide`] found.
enum Decision {
    Unchanged(DynamicObject),
    Write {
        action: ApplyAction,
        /// The live object (`None` when it is to be created).
        live: Option<DynamicObject>,
    },
}

/// The result of applying a phase: what happened to each object, and what failed.
#[derive(Debug, Default)]
pub struct PhaseOutcome {
    pub outcomes: Vec<ApplyOutcome>,
    pub errors: Vec<ApplyError>,
}

/// Applies planned objects with server-side apply (force, as `field_manager`).
///
/// Steady state costs no request: an object is skipped when the desired-hash annotation and the
/// subset test say nothing changed ([`drift::needs_apply`]), or when the live object still has the
/// resourceVersion, or the same projection onto our fields, that our own last apply left (this absorbs
/// the API server's normalization, which would otherwise make the subset test fail forever).
pub struct Applier {
    client: Client,
    field_manager: String,
    ownership: OwnershipPolicy,
    hash_annotation: String,
    applied: Mutex<HashMap<ObjectKey, Applied>>,
    /// The dry-runs that passed: (desired hash, live resourceVersion) per object.
    passed: Mutex<HashMap<ObjectKey, (String, Option<String>)>>,
    /// Answers for objects the caller has no copy of ([`Applier::with_cache`]).
    cache: Option<LiveCache>,
    /// Repairs of drift per object: a write fight stops writing ([`crate::fight`]).
    fights: Mutex<Fights>,
    /// Whom each owner's writes impersonate; `None`: every write is this applier's client's.
    identities: Option<Identities>,
}

/// What [`Applier::preview`] found: the write apply would make, the live object it would replace,
/// and the object the API server answered the dry-run with (`None` when nothing would be written, or
/// the dry-run could not be asked yet: an admission policy binding whose policy is missing).
#[derive(Debug, Clone)]
pub struct Preview {
    pub action: ApplyAction,
    pub live: Option<DynamicObject>,
    pub after: Option<DynamicObject>,
}

impl Applier {
    pub fn new(
        client: Client,
        field_manager: impl Into<String>,
        ownership: OwnershipPolicy,
    ) -> Self {
        let field_manager = field_manager.into();
        let mut ownership = ownership;
        ownership.field_manager = field_manager.clone();
        Applier {
            client,
            field_manager,
            ownership,
            hash_annotation: DEFAULT_HASH_ANNOTATION.to_owned(),
            applied: Mutex::new(HashMap::new()),
            passed: Mutex::new(HashMap::new()),
            cache: None,
            fights: Mutex::default(),
            identities: None,
        }
    }

    /// Writes each owner's objects as the identity `identities` assigns it ([`crate::identity`]):
    /// the API server then authorizes every write, and the escalation of every role and binding, by
    /// that identity's RBAC. Reads stay this applier's client's.
    pub fn with_identities(mut self, identities: Identities) -> Self {
        self.identities = Some(identities);
        self
    }

    pub fn identities(&self) -> Option<&Identities> {
        self.identities.as_ref()
    }

    /// The client that writes `owner`'s objects: its identity's, or this applier's own when it has
    /// none configured.
    pub fn writer(&self, owner: &str) -> Result<Client, IdentityError> {
        match &self.identities {
            Some(ids) => ids.client_for(owner),
            None => Ok(self.client.clone()),
        }
    }

    /// Reads live objects the caller does not pass from `cache` (built for this applier, see
    /// [`LiveCache::new`]): an object its synced watch does not have does not exist, and is created
    /// without a GET; one it has goes through the ownership decision (the owner's record, and for an
    /// adoption the slim copy's labels and field managers). Only when the cache cannot tell (kind not
    /// watched yet, not synced, or an object we wrote moments ago that the watch has not shown yet) is
    /// the object read.
    pub fn with_cache(mut self, cache: LiveCache) -> Self {
        self.cache = Some(cache);
        self
    }

    pub fn hash_annotation(&self) -> &str {
        &self.hash_annotation
    }

    pub fn field_manager(&self) -> &str {
        &self.field_manager
    }

    pub fn ownership(&self) -> &OwnershipPolicy {
        &self.ownership
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The object exactly as it will be sent: normalized, ownership label and desired-hash set.
    /// Borrowed when the planned object already is that (see [`Applier::stamp_plan`]).
    pub fn desired<'a>(&self, planned: &'a PlannedObject) -> Cow<'a, DynamicObject> {
        debug_assert!(
            !planned.stamped || is_stamped(&planned.object, &self.ownership, &self.hash_annotation),
            "{} changed after stamp_plan",
            planned.key
        );
        if planned.stamped || is_stamped(&planned.object, &self.ownership, &self.hash_annotation) {
            Cow::Borrowed(&planned.object)
        } else {
            Cow::Owned(stamp(
                &planned.object,
                &self.ownership,
                &self.hash_annotation,
            ))
        }
    }

    /// Replaces every object of `plan` by what [`Applier::desired`] makes of it, once: every later
    /// check, dry-run and apply of the plan then borrows it instead of copying it (the resource budget
    /// admits objects of ~5 MiB once parsed, and a reconcile would copy each several times).
    pub fn stamp_plan(&self, plan: &mut Plan) {
        for planned in plan.phases.iter_mut().flat_map(|p| p.objects.iter_mut()) {
            if !planned.stamped
                && !is_stamped(&planned.object, &self.ownership, &self.hash_annotation)
            {
                let object = std::mem::replace(
                    &mut planned.object,
                    DynamicObject {
                        types: None,
                        metadata: Default::default(),
                        data: serde_json::Value::Null,
                    },
                );
                planned.object = stamp_owned(object, &self.ownership, &self.hash_annotation);
            }
            planned.stamped = true;
        }
    }

    /// Whether `apply` would write, given a full live object (pure apart from the in-memory record).
    pub fn needs_apply(&self, planned: &PlannedObject, live: Option<&DynamicObject>) -> bool {
        let desired = self.desired(planned);
        match live {
            None => true,
            Some(live) => self.verdict(&planned.key, &desired, live) != Verdict::Unchanged,
        }
    }

    /// Whether `live`, an object of ours, still shows what we would apply.
    ///
    /// From the record of our own last apply: the same resourceVersion, or the same digest of the fields
    /// we own ([`drift::managed_digest`]; a slim cached copy carries it). Without a record, a full object
    /// is judged by the hash annotation and the subset test (and remembered when unchanged); a slim copy
    /// cannot be, and is [`Verdict::Unknown`].
    fn verdict(&self, key: &ObjectKey, desired: &DynamicObject, live: &DynamicObject) -> Verdict {
        let slim = slim::is_slim(live);
        {
            let applied = self.applied.lock().unwrap_or_else(PoisonError::into_inner);
            let rec = applied.get(key);
            let current = rec.filter(|r| r.hash == stamped_hash(desired, &self.hash_annotation));
            if let Some(rec) = current {
                let same_version = rec.resource_version.is_some()
                    && rec.resource_version == live.metadata.resource_version;
                let digest = if slim {
                    slim::slim_digest(live).map(str::to_owned)
                } else {
                    drift::managed_digest(live, &self.field_manager)
                };
                if same_version || (rec.managed.is_some() && rec.managed == digest) {
                    return Verdict::Unchanged;
                }
            }
            if slim {
                // A record of another desired object, or our fields moved since our apply: write.
                return if rec.is_some() {
                    Verdict::Changed
                } else {
                    Verdict::Unknown
                };
            }
            if unchanged_since(current, desired, live, &self.hash_annotation) {
                return Verdict::Unchanged;
            }
        }
        if drift::needs_apply(desired, Some(live), &self.hash_annotation) {
            return Verdict::Changed;
        }
        self.remember(key, desired, live);
        Verdict::Unchanged
    }

    fn remember(&self, key: &ObjectKey, desired: &DynamicObject, after: &DynamicObject) {
        self.applied
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(
                key.clone(),
                Applied::after(desired, after, &self.hash_annotation, &self.field_manager),
            );
    }

    /// Whether the cache says absent for `key` and is to be believed: we never wrote the object, or
    /// its watch saw the very object our last write left deleted (our own write may otherwise not
    /// have reached the watch yet).
    fn absence_trusted(&self, key: &ObjectKey) -> bool {
        let applied = self.applied.lock().unwrap_or_else(PoisonError::into_inner);
        match applied.get(key) {
            None => true,
            Some(rec) => rec
                .uid
                .as_deref()
                .zip(self.cache.as_ref())
                .is_some_and(|(uid, cache)| cache.saw_deleted(key, uid)),
        }
    }

    /// GETs the live object (full, with managedFields).
    async fn read(&self, planned: &PlannedObject) -> Result<Option<DynamicObject>, ApplyError> {
        api_for(&self.client, &planned.resource, &planned.key)
            .get_opt(&planned.key.name)
            .await
            .map_err(|source| ApplyError::Api {
                key: planned.key.clone(),
                source,
            })
    }

    /// Applies one object. `live` is the cached live object, if the caller has one; `None` makes the
    /// applier GET it (a cache filtered by our label cannot see objects that are not ours yet, and an
    /// apply must never take one over blindly). `record` is the owner's inventory: an existing object
    /// it does not hold is written only if it may be adopted ([`OwnershipPolicy::check`]).
    pub async fn apply(
        &self,
        planned: &PlannedObject,
        live: Option<&DynamicObject>,
        record: &Inventory,
    ) -> Result<ApplyOutcome, ApplyError> {
        let key = &planned.key;
        let desired = self.desired(planned);
        let (action, existing) = match self.decide(planned, &desired, live, record).await? {
            Decision::Unchanged(object) => {
                return Ok(ApplyOutcome {
                    key: key.clone(),
                    action: ApplyAction::Unchanged,
                    object,
                });
            }
            Decision::Write { action, live } => (action, live),
        };
        let writer = self
            .writer(&record.owner)
            .map_err(ApplyError::identity(key))?;
        if action == ApplyAction::Adopted {
            self.absorb_retired(&writer, planned, existing.as_ref())
                .await?;
        }
        if action == ApplyAction::Configured
            && let Some(fight) = self.check_fight(key, &desired, existing.as_ref())
        {
            return Err(fight);
        }
        // A name recorded to be created and not confirmed: nobody's object may be taken under it.
        let after =
            if action == ApplyAction::Created && record.recorded(key, None) == Recorded::Intended {
                self.create(&writer, planned, &desired).await?
            } else {
                self.patch(&writer, planned, &desired, false)
                    .await
                    .map_err(|source| ApplyError::Api {
                        key: key.clone(),
                        source,
                    })?
            };
        self.remember(key, &desired, &after);
        tracing::debug!(object = %key, ?action, "applied");
        Ok(ApplyOutcome {
            key: key.clone(),
            action,
            object: after,
        })
    }

    /// A write of an object of ours that changed since our last write of the same desired object is a
    /// repair of someone else's change: counted, and refused once it is a fight ([`crate::fight`]).
    /// The refusal is returned as a value, not a `Result`: a sync function returning the large
    /// `ApplyError` in a `Result` trips `clippy::result_large_err`.
    fn check_fight(
        &self,
        key: &ObjectKey,
        desired: &DynamicObject,
        live: Option<&DynamicObject>,
    ) -> Option<ApplyError> {
        let hash = stamped_hash(desired, &self.hash_annotation);
        let repair = self
            .applied
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .is_some_and(|rec| rec.hash == hash);
        let mut fights = self.fights.lock().unwrap_or_else(PoisonError::into_inner);
        if !repair {
            fights.forget(key);
            return None;
        }
        let Err(repairs) = fights.repair(key, std::time::Instant::now()) else {
            return None;
        };
        let others = live
            .map(crate::ownership::spec_managers)
            .unwrap_or_default()
            .into_iter()
            .filter(|m| *m != self.field_manager)
            .collect();
        Some(ApplyError::WriteFight {
            key: key.clone(),
            repairs,
            ours: self.field_manager.clone(),
            others,
        })
    }

    /// Before adopting an object that a retired manager wrote, moves that manager's field ownership
    /// to us ([`crate::takeover`]) with one JSON patch of `managedFields`, guarded by the object's
    /// resourceVersion (a concurrent write fails it instead of being overwritten). Reads the object
    /// when `live` is a slim copy or missing: only a full object carries the field sets.
    async fn absorb_retired(
        &self,
        writer: &Client,
        planned: &PlannedObject,
        live: Option<&DynamicObject>,
    ) -> Result<(), ApplyError> {
        let retired = &self.ownership.retired_managers;
        let entries = |o: &DynamicObject| o.metadata.managed_fields.clone().unwrap_or_default();
        if retired.is_empty()
            || !live.is_some_and(|l| takeover::retired_present(&entries(l), retired))
        {
            return Ok(());
        }
        let full = match live {
            Some(l) if !slim::is_slim(l) => Some(l.clone()),
            _ => self.read(planned).await?,
        };
        let Some(full) = full else { return Ok(()) };
        let api = api_for(writer, &planned.resource, &planned.key);
        let moved = takeover::move_ownership(
            &api,
            &full.metadata,
            retired,
            &self.field_manager,
            &planned.resource.api_version,
        )
        .await
        .map_err(|source| ApplyError::Api {
            key: planned.key.clone(),
            source,
        })?;
        if !moved {
            return Ok(());
        }
        tracing::info!(object = %planned.key, retired = ?retired, "field ownership of a retired manager moved to ours before adoption");
        Ok(())
    }

    /// Checks, without writing, that [`Applier::apply`] of `planned` would succeed: the same ownership
    /// decision, for a CRD the [CRD safety](crate::crd_safety) rules against the live CRD, then a
    /// server-side dry-run of the exact request (admission, validation and RBAC escalation checks
    /// included). An object that would not be written costs no request beyond the GET of a cache
    /// miss, and neither does one whose same request passed against the same live object before (a
    /// reconcile that waits for a gate checks the rest of its version again). Returns what apply would
    /// do.
    pub async fn dry_run(
        &self,
        planned: &PlannedObject,
        live: Option<&DynamicObject>,
        record: &Inventory,
    ) -> Result<ApplyAction, ApplyError> {
        self.check(planned, live, record, true, &accept)
            .await
            .map(|p| p.action)
    }

    /// [`Applier::dry_run`] that always asks the API server and returns its answer: what the object
    /// would look like after the write, beside the live object it would replace.
    pub async fn preview(
        &self,
        planned: &PlannedObject,
        live: Option<&DynamicObject>,
        record: &Inventory,
    ) -> Result<Preview, ApplyError> {
        self.check(planned, live, record, false, &accept).await
    }

    /// `judge` sees what the dry-run returned; a refusal is remembered as no pass, so the same request
    /// is sent and judged again next time rather than skipped.
    async fn check(
        &self,
        planned: &PlannedObject,
        live: Option<&DynamicObject>,
        record: &Inventory,
        remembered: bool,
        judge: &Judge<'_>,
    ) -> Result<Preview, ApplyError> {
        let key = &planned.key;
        let desired = self.desired(planned);
        let (action, live) = match self.decide(planned, &desired, live, record).await? {
            Decision::Unchanged(live) => {
                return Ok(Preview {
                    action: ApplyAction::Unchanged,
                    live: Some(live),
                    after: None,
                });
            }
            Decision::Write { action, live } => (action, live),
        };
        let attempt = (
            stamped_hash(&desired, &self.hash_annotation).into_owned(),
            live.as_ref()
                .and_then(|l| l.metadata.resource_version.clone()),
        );
        let passed = |memo: &HashMap<ObjectKey, (String, Option<String>)>| {
            memo.get(key).is_some_and(|p| *p == attempt)
        };
        if remembered && passed(&self.passed.lock().unwrap_or_else(PoisonError::into_inner)) {
            return Ok(Preview {
                action,
                live,
                after: None,
            });
        }
        if let Some(live) = &live
            && key.group == "apiextensions.k8s.io"
            && key.kind == "CustomResourceDefinition"
        {
            let instances = if crd_safety::unserved_versions(live, &desired).is_empty() {
                false
            } else {
                crd_has_instances(&self.client, live)
                    .await
                    .map_err(|source| ApplyError::Api {
                        key: key.clone(),
                        source,
                    })?
                    .is_some()
            };
            let problems = crd_safety::check_crd_change(live, &desired, instances);
            if !problems.is_empty() {
                return Err(ApplyError::UnsafeCrdChange {
                    key: key.clone(),
                    problems,
                });
            }
        }
        if self.referent_missing(planned).await? {
            return Ok(Preview {
                action,
                live,
                after: None,
            });
        }
        let writer = self
            .writer(&record.owner)
            .map_err(ApplyError::identity(key))?;
        let after = self
            .patch(&writer, planned, &desired, true)
            .await
            .map_err(|source| ApplyError::DryRun {
                key: key.clone(),
                source,
            })?;
        judge(planned, &after).map_err(|reason| ApplyError::Refused {
            key: key.clone(),
            reason,
        })?;
        self.passed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key.clone(), attempt);
        Ok(Preview {
            action,
            live,
            after: Some(after),
        })
    }

    /// Whether `planned` is a binding whose referent does not exist yet, so that a dry-run now could
    /// only fail; the referent comes earlier in the same phase (policies before their bindings, roles
    /// before theirs), so the binding is applied right after it and judged then:
    /// - an admission policy binding: the API server judges it by its policy (the permissions its
    ///   `paramKind` needs); without it, it demands `get` on every resource, which no least-privilege
    ///   client holds;
    /// - a (Cluster)RoleBinding: a writer without `bind` must hold what the role grants, and the API
    ///   server reads the role to know it; without it, the binding is refused as not found.
    async fn referent_missing(&self, planned: &PlannedObject) -> Result<bool, ApplyError> {
        let key = &planned.key;
        let data = &planned.object.data;
        let text = |pointer: &str| data.pointer(pointer).and_then(serde_json::Value::as_str);
        let (group, version, kind, plural, namespace, name) =
            match (key.group.as_str(), key.kind.as_str()) {
                ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding") => (
                    key.group.as_str(),
                    planned.resource.version.as_str(),
                    "ValidatingAdmissionPolicy",
                    "validatingadmissionpolicies",
                    None,
                    text("/spec/policyName"),
                ),
                ("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding") => (
                    key.group.as_str(),
                    planned.resource.version.as_str(),
                    "MutatingAdmissionPolicy",
                    "mutatingadmissionpolicies",
                    None,
                    text("/spec/policyName"),
                ),
                ("rbac.authorization.k8s.io", "ClusterRoleBinding" | "RoleBinding") => {
                    match text("/roleRef/kind") {
                        Some("ClusterRole") => (
                            key.group.as_str(),
                            "v1",
                            "ClusterRole",
                            "clusterroles",
                            None,
                            text("/roleRef/name"),
                        ),
                        Some("Role") => (
                            key.group.as_str(),
                            "v1",
                            "Role",
                            "roles",
                            key.namespace.as_deref(),
                            text("/roleRef/name"),
                        ),
                        _ => return Ok(false),
                    }
                }
                _ => return Ok(false),
            };
        let Some(name) = name else {
            return Ok(false);
        };
        let resource = ApiResource {
            group: group.into(),
            version: version.into(),
            api_version: format!("{group}/{version}"),
            kind: kind.into(),
            plural: plural.into(),
        };
        let referent = ObjectKey::new(group, version, kind, namespace, name);
        match self.cache.as_ref().map(|c| c.lookup(&referent)) {
            Some(Lookup::Ours(_) | Lookup::NotOurs(_)) => return Ok(false),
            Some(Lookup::Absent) if self.absence_trusted(&referent) => return Ok(true),
            _ => {}
        }
        let api = match namespace {
            Some(ns) => Api::<DynamicObject>::namespaced_with(self.client.clone(), ns, &resource),
            None => Api::<DynamicObject>::all_with(self.client.clone(), &resource),
        };
        let live = api.get_opt(name).await.map_err(|source| ApplyError::Api {
            key: key.clone(),
            source,
        })?;
        Ok(live.is_none())
    }

    /// [`Applier::dry_run`] for every object, continuing past failures: every object that would fail
    /// is named (in the given order), and the caller writes nothing when any would. All of them are
    /// checked concurrently ([`CONCURRENCY`] at once), whatever their kinds: a dry-run persists nothing,
    /// so no check can depend on another having run first (the order that applies need, a Namespace
    /// before what it holds, would only make a dry-run of a kind wait for the previous kind's answers).
    /// `judge` decides on each object as the API server would store it ([`Judge`]).
    pub async fn dry_run_all<'a, I, F, L>(
        &self,
        objects: I,
        live: F,
        record: &Inventory,
        judge: &Judge<'_>,
    ) -> Vec<ApplyError>
    where
        I: IntoIterator<Item = &'a PlannedObject>,
        F: Fn(&ObjectKey) -> Option<L>,
        L: std::ops::Deref<Target = DynamicObject>,
    {
        self.dry_run_each(objects, live, record, judge)
            .await
            .into_iter()
            .filter_map(|(_, r)| r.err())
            .collect()
    }

    /// [`Applier::dry_run_all`] with each object's answer: what apply would do, or why it would fail
    /// (e.g. which objects it would adopt, for a caller that records them before the first write).
    pub async fn dry_run_each<'a, I, F, L>(
        &self,
        objects: I,
        live: F,
        record: &Inventory,
        judge: &Judge<'_>,
    ) -> Vec<(ObjectKey, Result<ApplyAction, ApplyError>)>
    where
        I: IntoIterator<Item = &'a PlannedObject>,
        F: Fn(&ObjectKey) -> Option<L>,
        L: std::ops::Deref<Target = DynamicObject>,
    {
        // The futures are made first: a stream over a closure that borrows is not `Send` for every
        // lifetime, and the installer's reconcile future must be.
        let checks: Vec<_> = objects
            .into_iter()
            .map(|planned| {
                let cached = live(&planned.key);
                async move {
                    let result = self
                        .check(planned, cached.as_deref(), record, true, judge)
                        .await
                        .map(|p| p.action);
                    (planned.key.clone(), result)
                }
            })
            .collect();
        futures::stream::iter(checks)
            .buffered(CONCURRENCY)
            .collect()
            .await
    }

    /// What to do with `planned`: nothing, or write it (and why). Reads the object only when neither
    /// the caller nor the cache can tell (see [`Applier::with_cache`]).
    async fn decide(
        &self,
        planned: &PlannedObject,
        desired: &DynamicObject,
        live: Option<&DynamicObject>,
        record: &Inventory,
    ) -> Result<Decision, ApplyError> {
        let key = &planned.key;
        let lookup = match (live, &self.cache) {
            (Some(_), _) | (None, None) => Lookup::Unknown,
            (None, Some(cache)) => cache.lookup(key),
        };
        let mut live = match (live, lookup) {
            (Some(l), _) => Some(l.clone()),
            (None, Lookup::Ours(o) | Lookup::NotOurs(o)) => Some((*o).clone()),
            (None, Lookup::Absent) if self.absence_trusted(key) => None,
            (None, _) => self.read(planned).await?,
        };
        let mut read = false;
        loop {
            let Some(existing) = &live else {
                return Ok(Decision::Write {
                    action: ApplyAction::Created,
                    live,
                });
            };
            if existing.metadata.deletion_timestamp.is_some() {
                return Err(ApplyError::Terminating { key: key.clone() });
            }
            let recorded = record.recorded(key, existing.metadata.uid.as_deref());
            // Who created it is in the full object only (a slim copy keeps no times).
            let creator_asked = matches!(recorded, Recorded::Intended | Recorded::Replaced);
            if creator_asked && slim::is_slim(existing) && !read {
                read = true;
                live = self.read(planned).await?;
                continue;
            }
            let ownership = self.ownership.check(
                key,
                existing,
                recorded,
                planned.take_over,
                self.ownership.owner_of(desired),
            );
            let action = match ownership {
                Ownership::Foreign { managers } => {
                    return Err(ApplyError::Conflict {
                        key: key.clone(),
                        managers,
                    });
                }
                Ownership::Refused { reason } => {
                    return Err(ApplyError::AdoptionRefused {
                        key: key.clone(),
                        reason,
                    });
                }
                Ownership::Adoptable => ApplyAction::Adopted,
                Ownership::Owned => match self.verdict(key, desired, existing) {
                    Verdict::Unchanged => return Ok(Decision::Unchanged(existing.clone())),
                    Verdict::Changed => ApplyAction::Configured,
                    Verdict::Unknown if !read => {
                        read = true;
                        live = self.read(planned).await?;
                        continue;
                    }
                    Verdict::Unknown => ApplyAction::Configured,
                },
            };
            return Ok(Decision::Write { action, live });
        }
    }

    /// The server-side apply request (force, as our field manager), optionally as a dry-run.
    async fn patch(
        &self,
        writer: &Client,
        planned: &PlannedObject,
        desired: &DynamicObject,
        dry_run: bool,
    ) -> Result<DynamicObject, kube::Error> {
        let mut params = PatchParams::apply(&self.field_manager).force();
        if dry_run {
            params = params.dry_run();
        }
        // Serialized straight from the object: a JSON copy of a large object first would double it.
        api_for(writer, &planned.resource, &planned.key)
            .patch(&planned.key.name, &params, &Patch::Apply(desired))
            .await
    }

    /// The write of an object [`Applier::apply`] found absent under a name recorded to be created and
    /// not confirmed ([`Recorded::Intended`]; `desired` as [`Applier::desired`] makes it), as
    /// `writer`: server-side apply without force, so that an object someone created
    /// since the check fails it where we would change their values (409: nothing written). One whose
    /// values we do not contradict shows its writers in the answer: then what we merged into it is
    /// withdrawn (an apply of nothing by our manager drops the fields only we hold) and the write is
    /// refused ([`ApplyError::Preempted`]). Public for tests that reproduce that window.
    pub async fn create(
        &self,
        writer: &Client,
        planned: &PlannedObject,
        desired: &DynamicObject,
    ) -> Result<DynamicObject, ApplyError> {
        let key = &planned.key;
        let api = api_for(writer, &planned.resource, key);
        let params = PatchParams::apply(&self.field_manager);
        let after = match api.patch(&key.name, &params, &Patch::Apply(desired)).await {
            Ok(after) => after,
            Err(kube::Error::Api(status)) if status.code == 409 => {
                return Err(ApplyError::Preempted {
                    key: key.clone(),
                    managers: Vec::new(),
                    outcome: format!("nothing written ({})", status.message),
                });
            }
            Err(source) => {
                return Err(ApplyError::Api {
                    key: key.clone(),
                    source,
                });
            }
        };
        let managers = self.ownership.preempted_by(&after);
        if managers.is_empty() {
            return Ok(after);
        }
        let mut nothing = serde_json::json!({
            "apiVersion": planned.resource.api_version,
            "kind": planned.resource.kind,
            "metadata": {"name": key.name},
        });
        if let Some(namespace) = &key.namespace {
            nothing["metadata"]["namespace"] = namespace.clone().into();
        }
        let outcome = match api
            .patch(&key.name, &params.force(), &Patch::Apply(&nothing))
            .await
        {
            Ok(_) => "what the installer's write added is withdrawn".to_string(),
            Err(e) => format!("withdrawing what the installer's write added failed: {e}"),
        };
        Err(ApplyError::Preempted {
            key: key.clone(),
            managers,
            outcome,
        })
    }

    /// Applies every object of a phase, continuing past failures (each failure names its object).
    /// Kinds go in the phase's order (a Namespace before what it holds); the objects of one kind are
    /// applied concurrently ([`CONCURRENCY`]), as nothing orders them. `live` looks objects up in the
    /// caller's cache.
    pub async fn apply_phase<F, L>(
        &self,
        phase: &PlannedPhase,
        live: F,
        record: &Inventory,
    ) -> PhaseOutcome
    where
        F: Fn(&ObjectKey) -> Option<L>,
        L: std::ops::Deref<Target = DynamicObject>,
    {
        let mut out = PhaseOutcome::default();
        for kind in phase.objects.chunk_by(|a, b| same_kind(&a.key, &b.key)) {
            let writes: Vec<_> = kind
                .iter()
                .map(|planned| {
                    let cached = live(&planned.key);
                    async move { self.apply(planned, cached.as_deref(), record).await }
                })
                .collect();
            let results: Vec<_> = futures::stream::iter(writes)
                .buffered(CONCURRENCY)
                .collect()
                .await;
            for result in results {
                match result {
                    Ok(o) => out.outcomes.push(o),
                    Err(e) => out.errors.push(e),
                }
            }
        }
        out
    }

    /// Forgets what we remember about an object (e.g. after it was pruned).
    pub fn forget(&self, key: &ObjectKey) {
        self.applied
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
    }
}

/// How many requests for objects of one kind the applier has in flight at once: a cold install's
/// dozens of CRDs are the API server's work, not a queue behind one connection.
pub(crate) const CONCURRENCY: usize = 8;

fn same_kind(a: &ObjectKey, b: &ObjectKey) -> bool {
    a.group == b.group && a.kind == b.kind
}

/// `obj` normalized (see [`drift::normalize`]) with the ownership label and desired-hash annotation set.
pub fn stamp(
    obj: &DynamicObject,
    ownership: &OwnershipPolicy,
    hash_annotation: &str,
) -> DynamicObject {
    stamp_owned(obj.clone(), ownership, hash_annotation)
}

/// [`stamp`] of an object that is not needed any more: its content is moved, not copied (no
/// intermediate JSON of the whole object either).
pub(crate) fn stamp_owned(
    obj: DynamicObject,
    ownership: &OwnershipPolicy,
    hash_annotation: &str,
) -> DynamicObject {
    let mut obj = drift::into_normalized(obj);
    obj.metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert(ownership.label_key.clone(), ownership.label_value.clone());
    let hash = desired_hash(&obj, hash_annotation);
    obj.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(hash_annotation.to_owned(), hash);
    obj
}

/// The desired hash of a stamped object (what [`Applier::desired`] returns): its annotation, written
/// when it was stamped; computed only for an object that has none.
fn stamped_hash<'a>(desired: &'a DynamicObject, hash_annotation: &str) -> Cow<'a, str> {
    match desired
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(hash_annotation))
    {
        Some(hash) => Cow::Borrowed(hash),
        None => Cow::Owned(desired_hash(desired, hash_annotation)),
    }
}

/// Whether `obj` is what [`stamp`] makes of it (normalized, labelled, with the hash of its content),
/// checked without copying its content.
pub(crate) fn is_stamped(
    obj: &DynamicObject,
    ownership: &OwnershipPolicy,
    hash_annotation: &str,
) -> bool {
    let Some(hash) = obj
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(hash_annotation))
    else {
        return false;
    };
    ownership.owns(obj)
        && drift::is_normalized(obj)
        && *hash == drift::desired_hash(obj, hash_annotation)
}

impl LiveCache {
    /// A cache for `applier`: its ownership label says what is ours, its field manager whose fields the
    /// drift digest covers, and its desired-hash annotation is kept. Built here, where the
    /// applier is known: the cache itself knows only the ownership policy.
    pub fn new(client: Client, applier: &Applier, namespaces: Namespaces) -> Self {
        let ownership = applier.ownership().clone();
        let slimmer = slim::Slimmer {
            field_manager: applier.field_manager().to_owned(),
            annotations: vec![applier.hash_annotation().to_owned()],
        };
        LiveCache::with(client, namespaces, slimmer, ownership)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::testutil::obj;

    const HASH: &str = DEFAULT_HASH_ANNOTATION;

    fn with(o: &DynamicObject, f: impl FnOnce(&mut serde_json::Value)) -> DynamicObject {
        let mut v = serde_json::to_value(o).unwrap();
        f(&mut v);
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn the_record_of_our_last_apply_absorbs_normalization() {
        let policy = OwnershipPolicy::new("managed-by", "us");
        let doc = |path: &str| {
            obj(&format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: d, namespace: ns}}\nspec: {{template: {{spec: {{containers: [{{name: c, volumeMounts: [{{name: v, mountPath: {path}, readOnly: false}}]}}]}}}}}}\n"
            ))
        };
        let desired = stamp(&doc("/v"), &policy, HASH);
        // What the server answered to our apply: `readOnly: false` dropped (omitempty), a default added.
        let after = with(&desired, |v| {
            v["metadata"]["resourceVersion"] = json!("5");
            let c = &mut v["spec"]["template"]["spec"]["containers"][0];
            c["volumeMounts"][0]
                .as_object_mut()
                .unwrap()
                .remove("readOnly");
            c["imagePullPolicy"] = json!("IfNotPresent");
        });
        assert!(
            drift::needs_apply(&desired, Some(&after), HASH),
            "the subset test alone would re-apply"
        );
        let rec = Applied::after(&desired, &after, HASH, "us");

        assert!(
            unchanged_since(Some(&rec), &desired, &after, HASH),
            "same resourceVersion"
        );
        let touched = with(&after, |v| {
            v["metadata"]["resourceVersion"] = json!("9");
            v["metadata"]["annotations"]["unrelated"] = json!("x");
            v["status"] = json!({"replicas": 1});
        });
        assert!(
            unchanged_since(Some(&rec), &desired, &touched, HASH),
            "same projection"
        );
        let drifted = with(&after, |v| {
            v["metadata"]["resourceVersion"] = json!("9");
            v["spec"]["template"]["spec"]["containers"][0]["volumeMounts"][0]["readOnly"] =
                json!(true);
        });
        assert!(
            !unchanged_since(Some(&rec), &desired, &drifted, HASH),
            "our field changed"
        );

        let new_desired = stamp(&doc("/w"), &policy, HASH);
        assert!(
            !unchanged_since(Some(&rec), &new_desired, &after, HASH),
            "desired changed"
        );
        assert!(!unchanged_since(None, &desired, &after, HASH), "no record");
    }
}
