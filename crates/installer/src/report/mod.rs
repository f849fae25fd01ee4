//! The installer's status writes: the ClusterOperator ([`operator`]) and each `InfrastructureProvider`
//! ([`provider`]), from the statuses [`capi_status`] computes from the providers' outcomes.

pub(crate) mod operator;
pub(crate) mod provider;
