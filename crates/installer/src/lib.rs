//! The installer controller: reads the platform and the provider sources, renders and validates each
//! provider's plan, applies it phase by phase with the apply engine, prunes what a new version dropped,
//! and reports on `ClusterOperator/cluster-api`.
//!
//! | step | module | I/O |
//! |---|---|---|
//! | what the cluster needs | [`desired`] (+ [`capi_bundle::platform`]) | none |
//! | which sources provide it | [`source`] (kinds: [`source::configmap`], [`source::profile`]) | watch caches, files |
//! | render, validate and plan | [`round`], [`prepare`] (from [`capi_bundle`]) | none |
//! | apply, gate, prune | [`reconcile`] → [`outcome::Outcome`] | API server |
//! | errors → reasons, outcomes → statuses, the revision log | [`capi_status`] (as [`error`], [`outcome`], [`revision`]) | none |
//! | statuses, records written | [`report`], [`inventory`], [`revision::store`] | writes only on change |
//! | the loop | [`controller`] | watches |
//! | `capi-installer diff`, `render`, `status`, `rollback` | the crate `capi-commands`, over this one | API server, files |
//! | records carried over from an earlier release's namespace, before the loop | [`records`] | API server |
//!
//! One reconcile is a pipeline: *read inputs → render and validate the whole plan (pure) → apply phase by
//! phase → write status from what was applied*. A plan that fails validation never reaches a write.
//!
//! # The public face
//! Public is what the binary (`capi-installer`), its examples and the integration tests call: the
//! loop ([`Installer`], [`InstallerConfig`], [`Metrics`], [`records`]); the pure steps the commands
//! (`capi-commands`) and the tests chain ([`desired`], [`source`], [`round`], [`prepare`],
//! [`policy`], [`tls`]), with the names and extension reading a reconcile and `diff` share
//! ([`names`], [`extensions`]); and what the tests and commands read of the installer's records
//! ([`inventory`], [`revision`], [`api`], [`reference`]). The loop's own steps (`controller`,
//! `reconcile`, `order`, `outcome`, `error`, `report`, `history`, `events`, ...) are
//! crate-private, and so is every item of a public module that no other crate, test, example or
//! benchmark names (`#![warn(unreachable_pub)]` keeps what no path reaches from being `pub`).

#![warn(unreachable_pub)]

pub mod api;
mod compute;
pub mod config;
pub(crate) mod controller;
pub use capi_bundle::desired;
pub(crate) use capi_status::error;
pub(crate) mod events;
pub mod extensions;
pub(crate) mod history;
pub mod inventory;
pub(crate) mod metrics;
pub mod names;
pub(crate) mod order;
/// The bundle policy, from the pure planning crate (see [`capi_bundle`]).
pub use capi_bundle::policy;
pub use capi_bundle::prepare;
pub use capi_bundle::proxy;
pub(crate) use capi_status::outcome;
pub(crate) mod reconcile;
pub mod records;
pub use capi_bundle::reference;
pub(crate) use capi_bundle::render;
pub(crate) mod report;
pub mod revision;
pub use capi_bundle::round;
pub mod source;
pub use capi_bundle::tls;
pub(crate) use capi_bundle::unmanaged;

pub use config::InstallerConfig;
pub use controller::Installer;
pub use metrics::Metrics;
pub use names::user_agent;
