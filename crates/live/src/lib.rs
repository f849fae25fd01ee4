//! What the apply engine judges from live objects alone, pure (no client, no I/O): whether an object
//! is ready or available ([`readiness`], kstatus rules), whether a change to a CRD is safe for the
//! instances it stores ([`crd_safety`]), which fields a field manager owns and what a dry-run would
//! change in them ([`changes`]), and when repairing an object's drift has become a fight with
//! another writer ([`fight`]).
//!
//! Apart from `capi-apply`, which re-exports it, so that the engine's client-side half and these
//! judgments can each be read alone: none of these needs a request, and each is unit-tested on small
//! YAML.

#![warn(unreachable_pub)]

pub mod changes;
pub mod crd_safety;
pub mod fight;
pub mod readiness;

pub use changes::{Detail, Edit, FieldChange, managed_changes};
pub use crd_safety::CrdProblem;
pub use readiness::{Availability, Readiness, availability, readiness};
