//! The pure half of the installer's planning: what a provider bundle may contain ([`policy`]), judged
//! on a provider's rendered objects before anything of it is written, and the names of the installer's
//! own objects that no bundle may touch ([`names`]). No I/O and no Kubernetes client: the installer
//! gathers the cluster's inputs (its RBAC ceiling, the field bound's extensions) and passes them in.
//!
//! The first step of moving the planning out of the installer library (issue 30): rendering,
//! preparing, the sources and the round are to follow, each with its own module here.

#![warn(unreachable_pub)]

pub mod names;
pub mod policy;
