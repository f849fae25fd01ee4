//! The pure half of the installer's planning: which providers a cluster needs ([`desired`], from
//! `Infrastructure/cluster` and the `InfrastructureProvider` objects as [`api`] reads them; the CRDs
//! left to others, [`unmanaged`]), which sources provide them ([`source`]: the sources' identities,
//! payloads and selection; the source kinds that read them are the installer's), which provider a
//! platform needs ([`platform`]), one pass's inputs and its planner ([`round`]), and each provider's
//! plan ([`prepare`]): the run-time substitutions of its components ([`render`]: `${VAR}`s, images,
//! fields owned elsewhere; [`tls`]: the cluster's TLS profile as substitutions; [`proxy`]: the
//! cluster-wide proxy on every provider Deployment), what a provider bundle
//! may contain ([`policy`]), judged on the rendered objects before anything of it is written, and the
//! apply plan. Also the names of the installer's own objects that no bundle may touch ([`names`]) and
//! the reference's names and content IDs ([`reference`]). No I/O and no Kubernetes client: the
//! installer gathers the cluster's inputs (the sources' payloads, its RBAC ceiling, the field bound's
//! extensions, `APIServer/cluster`) and passes them in.
//!
//! Moved out of the installer library step by step (issue 30).

#![warn(unreachable_pub)]

pub mod api;
pub mod compatibility;
pub mod desired;
pub mod envsubst;
pub mod images;
pub use capi_policy::names;
pub mod platform;
pub use capi_policy as policy;
pub mod prepare;
pub use capi_policy::proxy;
pub mod reference;
pub mod render;
pub mod round;
pub mod source;
pub mod tls;
pub mod unmanaged;
