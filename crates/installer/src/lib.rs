//! The installer controller: reads the platform and the transport ConfigMaps, renders and validates each
//! provider's plan, applies it phase by phase with the apply engine, prunes what a new version dropped,
//! and reports on `ClusterOperator/cluster-api`.
//!
//! One reconcile is a pipeline: *read inputs → render and validate the whole plan (pure) → apply phase by
//! phase → write status from what was applied*. A plan that fails validation never reaches a write.

pub mod controller;
pub mod metrics;
pub mod platform;
pub mod policy;
pub mod profiles;
pub mod provider;
pub mod render;
pub mod sources;
pub mod status;

pub use controller::{Installer, InstallerConfig, user_agent};
pub use metrics::Metrics;
