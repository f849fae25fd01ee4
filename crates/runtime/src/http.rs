//! The process's HTTP endpoints: liveness, readiness and metrics.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use prometheus_client::registry::Registry;

use crate::Error;

/// Whether this replica is ready: shared between the runtime (which sets it) and /readyz.
#[derive(Clone, Debug, Default)]
pub struct Readiness(Arc<AtomicBool>);

impl Readiness {
    pub fn set(&self, ready: bool) {
        self.0.store(ready, Ordering::Relaxed);
    }

    pub fn get(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Serves /healthz, /readyz and /metrics in the background; returns the bound address (useful with
/// port 0).
///
/// /healthz (liveness) answers as long as the process serves requests. /readyz answers 200 once this
/// replica either runs the controller (leader) or stands by having reached the API server (standby): a
/// standby counts as ready so that a rolling update of the Deployment can proceed; 503 while starting,
/// when a standby cannot reach the API server, and while shutting down.
pub async fn serve(
    addr: SocketAddr,
    registry: Arc<Registry>,
    ready: Readiness,
) -> Result<SocketAddr, Error> {
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
        )
        .route(
            "/metrics",
            get(move || {
                let registry = registry.clone();
                async move { encode(&registry) }
            }),
        );
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| Error::Bind { addr, source })?;
    let bound = listener
        .local_addr()
        .map_err(|source| Error::Bind { addr, source })?;
    tracing::info!(addr = %bound, "serving /healthz, /readyz and /metrics");
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "HTTP server stopped");
        }
    });
    Ok(bound)
}

/// The registry as OpenMetrics text.
fn encode(registry: &Registry) -> axum::response::Response {
    let mut body = String::new();
    prometheus_client::encoding::text::encode(&mut body, registry)
        .map(|_| {
            (
                [(
                    header::CONTENT_TYPE,
                    "application/openmetrics-text; version=1.0.0; charset=utf-8",
                )],
                body,
            )
                .into_response()
        })
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}
