//! `capi-openshift`: what the installer and the controllers pod both need of OpenShift and Kubernetes,
//! defined once, below both (the way linkerd's `k8s/status` serves its controllers). Knows Kubernetes
//! and OpenShift, nothing about Cluster API.
//!
//! | module | what | I/O |
//! |---|---|---|
//! | [`resources`] | `Infrastructure` and `ClusterOperator` (`config.openshift.io/v1`), their names, the ownership label key | none |
//! | [`conditions`] | a ClusterOperator-style condition, rendered keeping `lastTransitionTime` while the status holds, compared ignoring it | none |
//! | [`controller_status`] | the reference's per-controller pair (`<Name>Progressing`, `<Name>Available`) from how a reconcile ended | none |
//! | [`cluster_operator`] | the status of `ClusterOperator/cluster-api`, applied by one field manager | one PATCH |
//! | [`time`] | times as Kubernetes writes them (RFC 3339, seconds, UTC) | the clock |

#![warn(unreachable_pub)]

pub mod cluster_operator;
pub mod conditions;
pub mod controller_status;
pub mod resources;
pub mod time;

pub use conditions::Condition;
pub use resources::{
    CLUSTER_OPERATOR, CLUSTER_OPERATOR_NAME, INFRASTRUCTURE, INFRASTRUCTURE_NAME, MANAGED_BY_LABEL,
};
