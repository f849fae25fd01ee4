use std::path::PathBuf;

/// Everything that can go wrong while starting, using or stopping a control plane. Each variant names
/// the process, file or object it concerns; startup failures carry the tail of the failing process's log.
#[derive(thiserror::Error)]
pub enum Error {
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },

    #[error("binaries of {script}: {message}")]
    Build { script: PathBuf, message: String },

    #[error("generate {what}: {source}")]
    Certificate {
        what: &'static str,
        #[source]
        source: rcgen::Error,
    },

    #[error("{name} exited during startup ({status}); last lines of {}:\n{tail}", log.display())]
    ProcessExited {
        name: String,
        status: String,
        log: PathBuf,
        tail: String,
    },

    #[error("timed out after {seconds}s waiting for {what}{}", log_tail(log, tail))]
    Timeout {
        what: String,
        seconds: u64,
        log: Option<PathBuf>,
        tail: String,
    },

    #[error("{context}: {source}")]
    Kube {
        context: String,
        #[source]
        source: kube::Error,
    },

    #[error("kubeconfig {}: {source}", path.display())]
    Kubeconfig {
        path: PathBuf,
        #[source]
        source: kube::config::KubeconfigError,
    },

    #[error("{} document {index}: {message}", file.display())]
    Manifest {
        file: PathBuf,
        index: usize,
        message: String,
    },

    #[error("audit log {} line {line}: {source}", path.display())]
    AuditLog {
        path: PathBuf,
        line: usize,
        #[source]
        source: serde_json::Error,
    },

    #[error("control plane in {}: {message}", dir.display())]
    State { dir: PathBuf, message: String },

    #[error("{context}: {message}")]
    Other { context: String, message: String },
}

fn log_tail(log: &Option<PathBuf>, tail: &str) -> String {
    match log {
        Some(log) => format!("; last lines of {}:\n{tail}", log.display()),
        None => String::new(),
    }
}

pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let context = context.into();
    move |source| Error::Io { context, source }
}

pub(crate) fn kube(context: impl Into<String>) -> impl FnOnce(kube::Error) -> Error {
    let context = context.into();
    move |source| Error::Kube { context, source }
}

/// Debug shows the message (with its log tail, line breaks intact), so that `start(..).unwrap()` in a
/// test prints something readable.
impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self}")?;
        // Every variant's message already includes its direct source.
        let mut source = std::error::Error::source(self).and_then(|s| s.source());
        while let Some(cause) = source {
            write!(f, "\ncaused by: {cause}")?;
            source = cause.source();
        }
        Ok(())
    }
}
