//! The pure half of the installer's planning: which providers a cluster needs ([`desired`], from
//! `Infrastructure/cluster` and the `InfrastructureProvider` objects as [`api`] reads them; the CRDs
//! left to others, [`unmanaged`]), which provider a platform needs ([`platform`]), the
//! run-time substitutions of a provider's components ([`render`]: `${VAR}`s, images, fields owned
//! elsewhere; [`tls`]: the cluster's TLS profile as substitutions), what a provider bundle may contain
//! ([`policy`]), judged on a provider's rendered objects before anything of it is written, and the
//! names of the installer's own objects that no bundle may touch ([`names`]). No I/O and no Kubernetes
//! client: the installer gathers the cluster's inputs (its RBAC ceiling, the field bound's extensions,
//! `APIServer/cluster`) and passes them in.
//!
//! Moved out of the installer library step by step (issue 30); preparing, the sources and the round
//! are to follow.

#![warn(unreachable_pub)]

pub mod api;
pub mod desired;
pub mod names;
pub mod platform;
pub mod policy;
pub mod render;
pub mod tls;
pub mod unmanaged;
