//! The installer controller: reads the platform and the provider sources, renders and validates each
//! provider's plan, applies it phase by phase with the apply engine, prunes what a new version dropped,
//! and reports on `ClusterOperator/cluster-api`.
//!
//! | step | module | I/O |
//! |---|---|---|
//! | what the cluster needs | [`desired`] (+ [`platform`]) | none |
//! | which sources provide it | [`source`] (kinds: [`source::configmap`]) | watch caches |
//! | render and validate | [`prepare`] (+ [`render`]) | none |
//! | apply, gate, prune | [`reconcile`] → [`outcome::Outcome`] | API server |
//! | errors → reasons | [`error`] | none |
//! | conditions, versions, records | [`report`], [`inventory`] | writes only on change |
//! | the loop | [`controller`] | watches |
//! | records carried over from an earlier release's namespace, before the loop | [`records`] | API server |
//!
//! One reconcile is a pipeline: *read inputs → render and validate the whole plan (pure) → apply phase by
//! phase → write status from what was applied*. A plan that fails validation never reaches a write.

pub mod api;
mod compute;
pub mod config;
pub mod controller;
pub mod desired;
pub mod diff;
pub mod error;
pub mod events;
pub mod history;
pub mod inventory;
pub mod metrics;
pub mod names;
pub mod optional_watch;
pub mod order;
pub mod outcome;
pub mod platform;
pub mod policy;
pub mod prepare;
pub mod reconcile;
pub mod records;
pub mod reference;
pub mod render;
pub mod report;
pub mod revision;
pub mod round;
pub mod source;
pub mod tls;
pub mod unmanaged;

pub use config::InstallerConfig;
pub use controller::Installer;
pub use metrics::Metrics;
pub use names::user_agent;
