//! The process's HTTP endpoints, on two listeners as OpenShift operators serve them:
//!
//! - plain HTTP, for the kubelet's probes: `/healthz` (liveness) and `/readyz` (readiness); nothing else,
//!   so nothing there needs protecting;
//! - HTTPS, `/metrics`, with the service-ca serving certificate (re-read when rotated) and only for
//!   callers whose bearer token the API server authenticates and authorizes ([`crate::auth`]): 401
//!   without a valid token, 403 without RBAC for `get` on `/metrics`.
//!
//! A binary serves other HTTPS endpoints of its own (the controllers pod's admission webhooks) with
//! [`serve_tls`], the same listener and certificate handling.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use prometheus_client::registry::Registry;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use crate::Error;
use crate::args::HttpArgs;
use crate::auth::{Authorizer, Decision};
use crate::tls::{ReloadingCert, SelfSigned, server_config};

/// The path Prometheus scrapes, and the non-resource URL callers need `get` on.
pub(crate) const METRICS_PATH: &str = "/metrics";
/// A TLS handshake that takes longer than this is dropped (a client that connects and sends nothing
/// must not hold a slot).
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Handshakes in progress at once; more connections wait in the kernel's backlog.
const MAX_HANDSHAKES: usize = 64;

/// Whether this replica is ready: shared between the runtime (which sets it) and /readyz.
#[derive(Clone, Debug, Default)]
pub(crate) struct Readiness(Arc<AtomicBool>);

impl Readiness {
    pub(crate) fn set(&self, ready: bool) {
        self.0.store(ready, Ordering::Relaxed);
    }

    pub(crate) fn get(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Serves /healthz and /readyz over plain HTTP in the background; returns the bound address (useful
/// with port 0).
///
/// /healthz (liveness) answers as long as the process serves requests. /readyz answers 200 once this
/// replica either runs the controller (leader) or stands by having reached the API server (standby): a
/// standby counts as ready so that a rolling update of the Deployment can proceed; 503 while starting,
/// when a standby cannot reach the API server, and while shutting down.
pub(crate) async fn serve_health(addr: SocketAddr, ready: Readiness) -> Result<SocketAddr, Error> {
    let app = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/readyz",
            get(move || {
                let ready = ready.get();
                async move {
                    if ready {
                        (StatusCode::OK, "ok")
                    } else {
                        (StatusCode::SERVICE_UNAVAILABLE, "not ready")
                    }
                }
            }),
        );
    let listener = bind(addr).await?;
    let bound = local_addr(&listener, addr)?;
    tracing::info!(addr = %bound, "serving /healthz and /readyz (HTTP)");
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "health server stopped");
        }
    });
    Ok(bound)
}

/// Serves /metrics over TLS in the background, to authenticated and authorized callers only (`client`
/// asks the API server); returns the bound address.
pub(crate) async fn serve_metrics(
    args: &HttpArgs,
    registry: Arc<Registry>,
    client: kube::Client,
) -> Result<SocketAddr, Error> {
    let authorizer = Arc::new(Authorizer::new(client, METRICS_PATH));
    let app = Router::new().route(
        METRICS_PATH,
        get(move |headers: HeaderMap| {
            let (registry, authorizer) = (registry.clone(), authorizer.clone());
            async move { metrics(&registry, &authorizer, &headers).await }
        }),
    );
    let certificate = match (&args.metrics_cert_file, &args.metrics_key_file) {
        (Some(cert), Some(key)) => Some((cert.as_path(), key.as_path())),
        _ => None,
    };
    serve_tls(
        args.metrics_addr,
        certificate,
        app,
        "/metrics (HTTPS, TokenReview + SubjectAccessReview)",
    )
    .await
}

/// Serves `app` over TLS on `addr` in the background, with the certificate and key of `certificate`
/// (PEM files, re-read when they change: the service-ca serving certificate) or a self-signed one;
/// returns the bound address. `what` names the endpoint in the logs.
pub async fn serve_tls(
    addr: SocketAddr,
    certificate: Option<(&Path, &Path)>,
    app: Router,
    what: &'static str,
) -> Result<SocketAddr, Error> {
    let resolver: Arc<dyn rustls::server::ResolvesServerCert> = match certificate {
        Some((cert, key)) => Arc::new(ReloadingCert::load(cert, key)?),
        None => {
            tracing::warn!(
                endpoint = what,
                "no certificate given: serving with a self-signed one"
            );
            Arc::new(SelfSigned::generate()?)
        }
    };
    let acceptor = TlsAcceptor::from(Arc::new(server_config(resolver)?));
    let tcp = bind(addr).await?;
    let bound = local_addr(&tcp, addr)?;
    let listener = TlsListener::start(tcp, acceptor, bound);
    tracing::info!(addr = %bound, "serving {what}");
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "{what}: server stopped");
        }
    });
    Ok(bound)
}

async fn metrics(registry: &Registry, authorizer: &Authorizer, headers: &HeaderMap) -> Response {
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    match authorizer.check(authorization).await {
        Ok(Decision::Allowed { .. }) => encode(registry),
        Ok(Decision::Unauthenticated { reason }) => {
            tracing::debug!(%reason, "refused /metrics: unauthenticated");
            (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer")],
                "Unauthorized\n",
            )
                .into_response()
        }
        Ok(Decision::Forbidden { user, reason }) => {
            tracing::debug!(%user, %reason, "refused /metrics: forbidden");
            (
                StatusCode::FORBIDDEN,
                format!("Forbidden: {user} may not get {METRICS_PATH}\n"),
            )
                .into_response()
        }
        Err(e) => {
            let message = crate::report::error_chain(&e);
            tracing::warn!(error = %message, "cannot check a /metrics caller");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "cannot check the caller's access\n",
            )
                .into_response()
        }
    }
}

/// The registry as OpenMetrics text.
fn encode(registry: &Registry) -> Response {
    let mut body = String::new();
    match prometheus_client::encoding::text::encode(&mut body, registry) {
        Ok(()) => (
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            body,
        )
            .into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

async fn bind(addr: SocketAddr) -> Result<TcpListener, Error> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| Error::Bind { addr, source })
}

fn local_addr(listener: &TcpListener, addr: SocketAddr) -> Result<SocketAddr, Error> {
    listener
        .local_addr()
        .map_err(|source| Error::Bind { addr, source })
}

/// Connections whose TLS handshake completed. Handshakes run in their own tasks, so a slow or silent
/// client holds up nobody else.
struct TlsListener {
    established: tokio::sync::mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
}

impl TlsListener {
    fn start(tcp: TcpListener, acceptor: TlsAcceptor, local: SocketAddr) -> TlsListener {
        let (send, established) = tokio::sync::mpsc::channel(MAX_HANDSHAKES);
        let slots = Arc::new(tokio::sync::Semaphore::new(MAX_HANDSHAKES));
        tokio::spawn(async move {
            loop {
                let Ok(slot) = slots.clone().acquire_owned().await else {
                    return;
                };
                let (stream, peer) = match tcp.accept().await {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        tracing::warn!(error = %e, "accepting a TLS connection");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let (acceptor, send) = (acceptor.clone(), send.clone());
                tokio::spawn(async move {
                    let _slot = slot;
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => {
                            let _ = send.send((tls, peer)).await;
                        }
                        Ok(Err(e)) => tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                });
            }
        });
        TlsListener { established, local }
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.established.recv().await {
            Some(connection) => connection,
            // The accepting task ended (the runtime is shutting down): accept nothing more.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}
