//! The runtime's one error. A module of its own: [`crate::run`] returns it, and so do the servers and
//! the client it starts (`http`, `process`), which must not import `run` back.

use std::net::SocketAddr;

/// Why a process could not start or run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Access(#[from] crate::access::AccessError),
    #[error("user agent {user_agent:?} is not a valid header value")]
    UserAgent { user_agent: String },
    #[error("building the Kubernetes client")]
    Client(#[source] kube::Error),
    #[error("binding {addr}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Timing(#[from] crate::leader::TimingError),
    #[error("the metrics endpoint's certificate")]
    Tls(#[from] crate::tls::TlsError),
    #[error("the leader election thread")]
    Election(#[source] std::io::Error),
    #[error("the controller failed")]
    Controller(#[source] Box<dyn std::error::Error + Send + Sync>),
}
