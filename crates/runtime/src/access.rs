//! How every binary finds and reaches the cluster, by kubectl's rules, and what it says when it cannot.
//!
//! Loading rules (those of kubectl and client-go, in this order):
//! 1. `--kubeconfig FILE`: that file, which must exist;
//! 2. else `$KUBECONFIG` when set and not empty: a list of files (`:`-separated), merged in order (the
//!    first file to set a value wins); files that do not exist are skipped, as kubectl skips them;
//! 3. else `~/.kube/config`, when it exists;
//! 4. else the in-cluster configuration (the pod's ServiceAccount token and CA), when running in a pod.
//!
//! `--context` picks a context of the kubeconfig instead of its `current-context`. [`probe`] asks the
//! server for its version once, so that a command fails with a message that names the server and says
//! what to check (refused, not an API server, credentials refused) instead of a client library's
//! error chain.

use std::ffi::OsStr;
use std::fmt;
use std::path::{Path, PathBuf};

use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::args::KubeArgs;

/// What the loading rules read from the environment (a value, so tests need not change the process's).
#[derive(Clone, Debug, Default)]
pub(crate) struct Environment {
    /// `$KUBECONFIG`.
    pub kubeconfig: Option<std::ffi::OsString>,
    /// `$HOME`.
    pub(crate) home: Option<PathBuf>,
    /// Whether `$KUBERNETES_SERVICE_HOST` is set: the process runs in a pod.
    pub(crate) in_pod: bool,
}

impl Environment {
    pub(crate) fn of_process() -> Environment {
        Environment {
            kubeconfig: std::env::var_os("KUBECONFIG"),
            home: std::env::var_os("HOME").map(PathBuf::from),
            in_pod: std::env::var_os("KUBERNETES_SERVICE_HOST").is_some(),
        }
    }
}

/// Where a client configuration came from, as errors name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// Kubeconfig files (merged in this order) and what of them is used.
    Kubeconfig {
        files: Vec<PathBuf>,
        context: String,
        cluster: String,
        user: String,
    },
    /// The pod's ServiceAccount.
    InCluster,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Kubeconfig {
                files,
                context,
                cluster,
                user,
            } => write!(
                f,
                "kubeconfig {} (context {context}: cluster {cluster}, user {user})",
                join_paths(files)
            ),
            Source::InCluster => {
                f.write_str("the in-cluster configuration (the pod's ServiceAccount)")
            }
        }
    }
}

/// A client configuration and where it came from.
pub struct Loaded {
    pub config: kube::Config,
    pub source: Source,
}

/// Why no client configuration could be loaded, or the server could not be reached.
#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    #[error("reading kubeconfig {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: kube::config::KubeconfigError,
    },
    /// The file itself could not be read (missing, no permission): its path and the system's reason,
    /// without the client library's restatement of both.
    #[error("reading kubeconfig {}", path.display())]
    Unreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "no cluster to talk to: {tried}, and this is not a pod (KUBERNETES_SERVICE_HOST is not set); pass --kubeconfig FILE or set KUBECONFIG"
    )]
    NoConfiguration { tried: String },
    #[error("the in-cluster configuration")]
    InCluster(#[source] kube::config::InClusterError),
    #[error(
        "--context {context}: the in-cluster configuration has no contexts; pass --kubeconfig too"
    )]
    ContextInCluster { context: String },
    #[error("kubeconfig {files}: no context {context:?} (contexts: {known})")]
    UnknownContext {
        files: String,
        context: String,
        known: String,
    },
    #[error("kubeconfig {files}: no current-context; pass --context (contexts: {known})")]
    NoCurrentContext { files: String, known: String },
    #[error("kubeconfig {files}, context {context}")]
    Config {
        files: String,
        context: String,
        #[source]
        source: kube::config::KubeconfigError,
    },
    #[error(
        "the connection to the server {server} was refused: is the API server running there, and is that the right host and port? (the server of {source_})"
    )]
    Refused {
        server: String,
        source_: Box<Source>,
    },
    #[error("cannot reach the server {server} ({source_})")]
    Unreachable {
        server: String,
        source_: Box<Source>,
        #[source]
        source: Box<kube::Error>,
    },
    #[error(
        "{server} is not a Kubernetes API server: GET /version answered {answer}; check the server URL of {source_}"
    )]
    NotApiServer {
        server: String,
        answer: String,
        source_: Box<Source>,
    },
    #[error(
        "the server {server} refused the credentials of {source_} (401 Unauthorized): log in again or pick another --context"
    )]
    Unauthorized {
        server: String,
        source_: Box<Source>,
    },
}

/// The kubeconfig files the loading rules pick (steps 1–3), the ones of `$KUBECONFIG` that do not exist
/// left out; empty when none applies (step 4: in-cluster).
pub(crate) fn kubeconfig_files(explicit: Option<&Path>, env: &Environment) -> Vec<PathBuf> {
    if let Some(path) = explicit {
        return vec![path.to_path_buf()];
    }
    if let Some(list) = env.kubeconfig.as_deref().filter(|v| !v.is_empty()) {
        return std::env::split_paths(list)
            .filter(|p| !p.as_os_str().is_empty() && p.exists())
            .collect();
    }
    env.home
        .as_deref()
        .map(|home| home.join(".kube").join("config"))
        .filter(|p| p.exists())
        .into_iter()
        .collect()
}

/// What the loading rules tried before the in-cluster configuration, for the error when that fails too.
fn tried(env: &Environment) -> String {
    match env.kubeconfig.as_deref().filter(|v| !v.is_empty()) {
        Some(list) => format!(
            "none of the files in KUBECONFIG ({}) exists",
            OsStr::to_string_lossy(list)
        ),
        None => match &env.home {
            Some(home) => format!(
                "no --kubeconfig, KUBECONFIG is not set, {} does not exist",
                home.join(".kube/config").display()
            ),
            None => "no --kubeconfig, KUBECONFIG and HOME are not set".to_string(),
        },
    }
}

/// The client configuration by the loading rules, with `args.context`.
pub(crate) async fn load(args: &KubeArgs, env: &Environment) -> Result<Loaded, AccessError> {
    let files = kubeconfig_files(args.kubeconfig.as_deref(), env);
    if files.is_empty() {
        if let Some(context) = &args.context {
            return Err(AccessError::ContextInCluster {
                context: context.clone(),
            });
        }
        if !env.in_pod {
            return Err(AccessError::NoConfiguration { tried: tried(env) });
        }
        let config = kube::Config::incluster().map_err(AccessError::InCluster)?;
        return Ok(Loaded {
            config,
            source: Source::InCluster,
        });
    }
    let mut merged = Kubeconfig::default();
    for path in &files {
        let next = Kubeconfig::read_from(path).map_err(|source| match source {
            kube::config::KubeconfigError::ReadConfig(source, _) => AccessError::Unreadable {
                path: path.clone(),
                source,
            },
            source => AccessError::Read {
                path: path.clone(),
                source,
            },
        })?;
        merged = merged.merge(next).map_err(|source| AccessError::Read {
            path: path.clone(),
            source,
        })?;
    }
    let source = describe(&merged, &files, args.context.as_deref())?;
    let Source::Kubeconfig { context, .. } = &source else {
        unreachable!("a kubeconfig's source")
    };
    let options = KubeConfigOptions {
        context: Some(context.clone()),
        ..Default::default()
    };
    let config = kube::Config::from_custom_kubeconfig(merged, &options)
        .await
        .map_err(|source| AccessError::Config {
            files: join_paths(&files),
            context: context.clone(),
            source,
        })?;
    Ok(Loaded { config, source })
}

/// The context (given or current), its cluster and user; errors that list the contexts there are.
fn describe(
    kubeconfig: &Kubeconfig,
    files: &[PathBuf],
    context: Option<&str>,
) -> Result<Source, AccessError> {
    let known = || {
        let names: Vec<&str> = kubeconfig
            .contexts
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        }
    };
    let name = match context.or(kubeconfig.current_context.as_deref()) {
        Some(name) if !name.is_empty() => name,
        _ => {
            return Err(AccessError::NoCurrentContext {
                files: join_paths(files),
                known: known(),
            });
        }
    };
    let Some(named) = kubeconfig.contexts.iter().find(|c| c.name == name) else {
        return Err(AccessError::UnknownContext {
            files: join_paths(files),
            context: name.to_string(),
            known: known(),
        });
    };
    let inner = named.context.as_ref();
    Ok(Source::Kubeconfig {
        files: files.to_vec(),
        context: name.to_string(),
        cluster: inner.map(|c| c.cluster.clone()).unwrap_or_default(),
        user: inner.and_then(|c| c.user.clone()).unwrap_or_default(),
    })
}

fn join_paths(files: &[PathBuf]) -> String {
    files
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(":")
}

/// `host:port` of a server URL, as kubectl names it in its connection errors.
fn host_port(server: &http::Uri) -> String {
    match (server.host(), server.port_u16()) {
        (Some(host), Some(port)) => format!("{host}:{port}"),
        (Some(host), None) => match server.scheme_str() {
            Some("http") => format!("{host}:80"),
            _ => format!("{host}:443"),
        },
        _ => server.to_string(),
    }
}

/// Asks the server for its version (GET /version, which every API server answers to any client):
/// `Ok` when it answers as a Kubernetes API server does, else an error that names it and says what to
/// check.
pub(crate) async fn probe(client: &kube::Client, loaded: &Loaded) -> Result<(), AccessError> {
    let server = &loaded.config.cluster_url;
    match client.apiserver_version().await {
        Ok(_) => Ok(()),
        Err(e) => Err(explain(e, server, &loaded.source)),
    }
}

/// The error a failed GET /version means, in words that say what to do.
pub(crate) fn explain(err: kube::Error, server: &http::Uri, source: &Source) -> AccessError {
    let url = server.to_string().trim_end_matches('/').to_string();
    match &err {
        kube::Error::Api(status) if status.code == 401 => AccessError::Unauthorized {
            server: url,
            source_: Box::new(source.clone()),
        },
        kube::Error::Api(status) => AccessError::NotApiServer {
            server: url,
            answer: format!("HTTP {} without a Kubernetes version", status.code),
            source_: Box::new(source.clone()),
        },
        kube::Error::SerdeError(_) => AccessError::NotApiServer {
            server: url,
            answer: "something other than a Kubernetes version".to_string(),
            source_: Box::new(source.clone()),
        },
        _ if refused(&err) => AccessError::Refused {
            server: host_port(server),
            source_: Box::new(source.clone()),
        },
        _ => AccessError::Unreachable {
            server: url,
            source_: Box::new(source.clone()),
            source: Box::new(err),
        },
    }
}

/// Whether a connection was refused somewhere in the error's causes.
fn refused(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = cause {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return true;
        }
        cause = e.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kubeconfig(dir: &Path, name: &str, contexts: &[&str], current: &str) -> PathBuf {
        let mut text = String::from("apiVersion: v1\nkind: Config\nclusters:\n");
        for c in contexts {
            text.push_str(&format!(
                "- name: {c}\n  cluster:\n    server: https://{c}.example:6443\n"
            ));
        }
        text.push_str("users:\n- name: u\n  user:\n    token: t\ncontexts:\n");
        for c in contexts {
            text.push_str(&format!(
                "- name: {c}\n  context:\n    cluster: {c}\n    user: u\n"
            ));
        }
        if !current.is_empty() {
            text.push_str(&format!("current-context: {current}\n"));
        }
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn env(kubeconfig: Option<&str>, home: Option<&Path>) -> Environment {
        Environment {
            kubeconfig: kubeconfig.map(Into::into),
            home: home.map(Path::to_path_buf),
            in_pod: false,
        }
    }

    #[test]
    fn the_loading_rules_are_kubectls() {
        let tmp = tempfile::tempdir().unwrap();
        let a = kubeconfig(tmp.path(), "a", &["a"], "a");
        let b = kubeconfig(tmp.path(), "b", &["b"], "b");
        let missing = tmp.path().join("missing");
        let home = tmp.path().join("home");
        std::fs::create_dir_all(home.join(".kube")).unwrap();
        let list = |paths: &[&Path]| std::env::join_paths(paths).unwrap().into_string().unwrap();

        // --kubeconfig wins, even over KUBECONFIG, and is taken even when missing (reading it fails).
        let both = list(&[&a, &b]);
        assert_eq!(
            kubeconfig_files(Some(&missing), &env(Some(&both), None)),
            std::slice::from_ref(&missing)
        );
        // A KUBECONFIG list: in order, missing entries and empty ones skipped.
        let with_gaps = format!("{}::{}", list(&[&missing, &b]), a.display());
        assert_eq!(
            kubeconfig_files(None, &env(Some(&with_gaps), Some(&home))),
            [b.clone(), a.clone()]
        );
        // Nothing of KUBECONFIG exists: ~/.kube/config is not read instead (kubectl does not either).
        std::fs::copy(&a, home.join(".kube/config")).unwrap();
        assert!(
            kubeconfig_files(None, &env(Some(missing.to_str().unwrap()), Some(&home))).is_empty()
        );
        // KUBECONFIG unset or empty: ~/.kube/config when it exists.
        assert_eq!(
            kubeconfig_files(None, &env(None, Some(&home))),
            [home.join(".kube/config")]
        );
        assert_eq!(
            kubeconfig_files(None, &env(Some(""), Some(&home))),
            [home.join(".kube/config")]
        );
        assert!(kubeconfig_files(None, &env(None, Some(tmp.path()))).is_empty());
    }

    #[tokio::test]
    async fn contexts_merge_first_wins_and_unknown_ones_are_listed() {
        let tmp = tempfile::tempdir().unwrap();
        let a = kubeconfig(tmp.path(), "a", &["a", "shared"], "a");
        let b = kubeconfig(tmp.path(), "b", &["b", "shared"], "b");
        let list = std::env::join_paths([&b, &a])
            .unwrap()
            .into_string()
            .unwrap();
        let args = |context: Option<&str>| KubeArgs {
            kubeconfig: None,
            context: context.map(Into::into),
        };
        let loaded = load(&args(None), &env(Some(&list), None)).await.unwrap();
        // The first file's current-context wins.
        assert_eq!(loaded.config.cluster_url.host(), Some("b.example"));
        let loaded = load(&args(Some("a")), &env(Some(&list), None))
            .await
            .unwrap();
        assert_eq!(loaded.config.cluster_url.host(), Some("a.example"));
        assert_eq!(
            loaded.source.to_string(),
            format!("kubeconfig {list} (context a: cluster a, user u)")
        );
        let err = load(&args(Some("nope")), &env(Some(&list), None))
            .await
            .err()
            .unwrap()
            .to_string();
        assert_eq!(
            err,
            format!("kubeconfig {list}: no context \"nope\" (contexts: b, shared, a)")
        );
        let no_current = kubeconfig(tmp.path(), "c", &["c"], "");
        let err = load(
            &KubeArgs {
                kubeconfig: Some(no_current.clone()),
                context: None,
            },
            &env(None, None),
        )
        .await
        .err()
        .unwrap()
        .to_string();
        assert!(
            err.contains("no current-context; pass --context (contexts: c)"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn without_any_configuration_the_error_says_what_was_tried() {
        let tmp = tempfile::tempdir().unwrap();
        let args = KubeArgs::default();
        let err = load(&args, &env(None, Some(tmp.path())))
            .await
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("KUBECONFIG is not set") && err.contains(".kube/config does not exist"),
            "{err}"
        );
        assert!(
            err.contains("pass --kubeconfig FILE or set KUBECONFIG"),
            "{err}"
        );
        let missing = tmp.path().join("x");
        let err = load(&args, &env(missing.to_str(), None))
            .await
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("none of the files in KUBECONFIG"), "{err}");
        let context = KubeArgs {
            kubeconfig: None,
            context: Some("x".into()),
        };
        let in_pod = Environment {
            in_pod: true,
            ..env(None, Some(tmp.path()))
        };
        let err = load(&context, &in_pod).await.err().unwrap().to_string();
        assert!(
            err.contains("--context x: the in-cluster configuration has no contexts"),
            "{err}"
        );
    }

    #[test]
    fn servers_are_named_by_host_and_port() {
        for (url, expected) in [
            ("https://127.0.0.1:1", "127.0.0.1:1"),
            ("https://api.example", "api.example:443"),
            ("http://api.example/", "api.example:80"),
        ] {
            assert_eq!(host_port(&url.parse().unwrap()), expected);
        }
    }
}
