//! Logging, the kube client, and the shutdown signal: what every binary sets up before its controller.

use crate::Error;
use crate::access;
use crate::args::{KubeArgs, LogFormat};

/// Logs to standard error, as text or JSON; the filter comes from `RUST_LOG` (default
/// `info,kube=warn`). Colours only on a terminal (logs in files and log collectors must stay greppable),
/// and never with `NO_COLOR` set.
pub fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,kube=warn"));
    let ansi = colour(
        std::io::IsTerminal::is_terminal(&std::io::stderr()),
        std::env::var_os("NO_COLOR").as_deref(),
    );
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

/// A client whose every request carries `user_agent` (`<binary>/<version>`), for the cluster the
/// loading rules of [`crate::access`] find. kube-rs sends no User-Agent of its own: without one, the
/// API server's audit log cannot tell our requests apart.
pub async fn client(kube: &KubeArgs, user_agent: &str) -> Result<kube::Client, Error> {
    let loaded = config(kube, user_agent).await?;
    kube::Client::try_from(loaded.config).map_err(Error::Client)
}

/// A client as [`client`] makes it, once the server has answered as a Kubernetes API server: for the
/// commands a person runs, whose first request should fail with a message that names the server
/// ([`access::probe`]) rather than a client library's.
pub async fn connect(kube: &KubeArgs, user_agent: &str) -> Result<kube::Client, Error> {
    let loaded = config(kube, user_agent).await?;
    let client = kube::Client::try_from(loaded.config.clone()).map_err(Error::Client)?;
    access::probe(&client, &loaded).await?;
    Ok(client)
}

/// The configuration [`client`] builds its client from, and where it came from, for a binary that also
/// needs the server URL or CA it connects with (the controllers put them into a kubeconfig for Cluster
/// API).
pub async fn config(kube: &KubeArgs, user_agent: &str) -> Result<access::Loaded, Error> {
    let mut loaded = access::load(kube, &access::Environment::of_process()).await?;
    let value = http::HeaderValue::from_str(user_agent).map_err(|_| Error::UserAgent {
        user_agent: user_agent.to_string(),
    })?;
    loaded
        .config
        .headers
        .push((http::header::USER_AGENT, value));
    Ok(loaded)
}

/// Whether to colour output: on a terminal, unless `NO_COLOR` is set to a value that is not empty (the
/// convention of no-color.org, which clap's own help and errors follow too).
pub(crate) fn colour(is_terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    is_terminal && no_color.is_none_or(|v| v.is_empty())
}

/// Installs the SIGTERM handler at once and returns what resolves on SIGTERM (the kubelet stopping the
/// pod) or SIGINT (Ctrl-C). At once, not when the future is first polled: the process is PID 1 of its
/// container, and the kernel drops a signal sent to PID 1 that has no handler, so a SIGTERM that came
/// before would be lost and the kubelet would kill the process at the end of the grace period.
pub(crate) fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate());
    async move {
        let mut term = match term {
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
}

#[cfg(test)]
mod tests {
    use super::colour;
    use std::ffi::OsStr;

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        assert!(colour(true, None));
        assert!(colour(true, Some(OsStr::new(""))));
        assert!(!colour(true, Some(OsStr::new("1"))));
        assert!(!colour(false, None));
    }
}
