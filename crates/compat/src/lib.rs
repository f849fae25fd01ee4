//! The CRD compatibility judgement: a `CompatibilityRequirement` (`apiextensions.openshift.io/v1alpha1`,
//! the reference's API, unchanged) read from its object, and every way a candidate CRD breaks it.
//!
//! A provider's CRDs are used by others too (HyperShift, ACM/MCE, an administrator's controllers); a
//! requirement pins a whole CRD as they rely on it. The reference judges a candidate only for removed
//! fields and served versions, checks every version whatever `requiredVersions` says, and judges the
//! `Compatible` condition and its webhook against different schemas (one pruned of `excludedFields`,
//! one not). Here there is one judgement, [`judge`], for every caller (the installer before its first
//! write, the `Compatible` condition, admission), and it also finds what breaks a client without
//! removing anything: a type or format changed, an enum narrowed, a field newly required, a tighter
//! bound or pattern, a new CEL rule, unknown fields or `null` no longer accepted, a list's or map's
//! merge semantics changed, a scope, group or kind changed. Loosening is never a finding.
//!
//! The same requirement also judges the CRD's objects ([`validate`]): against the pinned schema,
//! without pruning what it does not know. [`registration`] says which writes admission sends to the
//! judgement: only those of what a requirement pins.
//!
//! Pure: values in, findings out. The pinned CRD's YAML is read with the data model's budgeted parser
//! (`capi_manifests::yaml`), because anyone who may create a requirement writes it and the installer
//! reads it.
//!
//! Not compared: what sits inside `allOf`, `anyOf`, `oneOf` and `not` (validation only, in a
//! structural schema), `default`s, and the schema of a version the candidate no longer serves (its
//! not being served is the finding).

#![warn(unreachable_pub)]

mod judge;
mod object;
mod registration;
mod requirement;
mod schema;
mod verdict;

pub use judge::{Change, Finding, judge};
pub use object::{Violation, validate};
pub use registration::{CRDS_PATH, Endpoint, OBJECTS_PATH, WEBHOOK_CONFIGURATION, registration};
pub use requirement::{
    Action, ExcludedField, ObjectValidation, RequiredVersions, Requirement, RequirementError,
    Selection,
};
pub use verdict::{Verdict, crd_write};
