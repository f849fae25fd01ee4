//! Logging, the kube client, and the shutdown signal: what every binary sets up before its controller.

use std::path::Path;

use crate::Error;
use crate::args::LogFormat;

/// Logs to standard error, as text or JSON; the filter comes from `RUST_LOG` (default
/// `info,kube=warn`). Colours only on a terminal: logs in files (and log collectors) must stay greppable.
pub fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,kube=warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

/// A client whose every request carries `user_agent` (`<binary>/<version>`). kube-rs sends no
/// User-Agent of its own: without one, the API server's audit log cannot tell our requests apart.
/// Without a kubeconfig: `$KUBECONFIG` or `~/.kube/config`, else the in-cluster configuration.
pub async fn client(kubeconfig: Option<&Path>, user_agent: &str) -> Result<kube::Client, Error> {
    kube::Client::try_from(config(kubeconfig, user_agent).await?).map_err(Error::Client)
}

/// The configuration [`client`] builds its client from, for a binary that also needs the server URL
/// or CA it connects with (the controllers put them into a kubeconfig for Cluster API).
pub async fn config(kubeconfig: Option<&Path>, user_agent: &str) -> Result<kube::Config, Error> {
    let mut config = match kubeconfig {
        Some(path) => {
            let kc =
                kube::config::Kubeconfig::read_from(path).map_err(|source| Error::Kubeconfig {
                    path: path.to_path_buf(),
                    source,
                })?;
            kube::Config::from_custom_kubeconfig(kc, &Default::default())
                .await
                .map_err(|source| Error::Kubeconfig {
                    path: path.to_path_buf(),
                    source,
                })?
        }
        None => kube::Config::infer().await.map_err(Error::InferConfig)?,
    };
    let value = http::HeaderValue::from_str(user_agent).map_err(|_| Error::UserAgent {
        user_agent: user_agent.to_string(),
    })?;
    config.headers.push((http::header::USER_AGENT, value));
    Ok(config)
}

/// Resolves on SIGTERM (the kubelet stopping the pod) or SIGINT (Ctrl-C).
pub async fn shutdown_signal() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(term) => term,
        Err(e) => {
            // Not expected on Unix; without the handler SIGTERM still ends the process (uncleanly).
            tracing::warn!(error = %e, "cannot handle SIGTERM");
            let _ = tokio::signal::ctrl_c().await;
            tracing::info!("interrupted: shutting down");
            return;
        }
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM: shutting down"),
        _ = tokio::signal::ctrl_c() => tracing::info!("interrupted: shutting down"),
    }
}
