//! The installer's status writes: the ClusterOperator ([`operator`]) and each `InfrastructureProvider`
//! ([`provider`]), from the statuses [`capi_status`] computes from the providers' outcomes; each
//! `CompatibilityRequirement` ([`requirements`]), from the live CRD it pins ([`pinned_crds`]).

pub(crate) mod cluster_api;
pub(crate) mod operator;
pub(crate) mod pinned_crds;
pub(crate) mod provider;
pub(crate) mod requirements;
