//! Status from outcomes, pure: what each provider's reconcile returned ([`outcome`], with its failure
//! as a typed error and a reason, [`error`]) becomes the ClusterOperator's conditions, versions and
//! `relatedObjects` ([`conditions`], [`operator`]), each `InfrastructureProvider`'s status
//! ([`provider`]), each `CompatibilityRequirement`'s ([`requirement`]) and `ClusterAPI/cluster`'s revisions ([`cluster_api`]); the installer's own revision
//! log of every applied version, for rollback, is here too ([`revision`]: the record, the choice of
//! what to apply, the stored form).
//!
//! No I/O and no client: the installer reads the live statuses and the revision ConfigMaps, passes
//! them in, and writes what comes out only when it differs (`differs` in each).
//!
//! Moved out of the installer library (issue 30).

#![warn(unreachable_pub)]

pub mod cluster_api;
pub mod conditions;
pub mod error;
pub mod operator;
pub mod outcome;
pub mod provider;
pub mod requirement;
pub mod revision;
