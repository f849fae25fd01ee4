//! `capi-runtime`: the process runtime that the project's long-running binaries (`capi-installer run`,
//! `capi-controllers run`) share, made to OpenShift operator conventions. Knows Kubernetes, knows
//! nothing about Cluster API.
//!
//! | module | what |
//! |---|---|
//! | [`access`] | finding and reaching the cluster by kubectl's rules (`$KUBECONFIG` lists, `--context`), errors that name the server |
//! | [`args`] | the flags every binary shares, as clap groups to `#[command(flatten)]` |
//! | [`duration`] | durations on the command line (`30s`, `5m`, `137s`) |
//! | [`report`] | the error format and exit codes of every binary |
//! | [`leader`] | leader election on a Lease, each request bounded by the renew deadline |
//! | [`http`] | /healthz and /readyz (HTTP); /metrics (HTTPS, authenticated and authorized callers only) |
//! | [`auth`] | TokenReview + SubjectAccessReview of /metrics callers (the kube-rbac-proxy pattern) |
//! | [`metrics`] | a component's series: its prefix, its build info and the process's responsiveness (feature `metrics`, in `process`) |
//! | [`responsiveness`] | how late the async runtime runs a ready task, sampled into the process's series |
//! | [`tls`] | the serving certificate from files, re-read when rotated; self-signed where none is given |
//! | [`process`] | logging, the kube client with the binary's user agent, the shutdown signal |
//! | [`pace`] | the one loop of every controller: wake-ups gathered into one pass, the pass's own timer, shutdown between passes |
//! | [`memory`] | malloc's thresholds fixed at start, free heap pages handed back once a loop is quiet |
//! | [`trigger`], [`optional_watch`] | what wakes the loop: watches whose every change notifies it; a watch of a kind that may not be served (feature `watch`) |
//! | [`run`] | campaign → run the controller while holding the lease → release on SIGTERM, exit 1 on loss |
//!
//! A binary's `run` command:
//!
//! ```no_run
//! # use std::sync::Arc;
//! # async fn example(args_kube: capi_runtime::args::KubeArgs, leader: capi_runtime::args::LeaderElectionArgs,
//! #     http: capi_runtime::args::HttpArgs, log: capi_runtime::args::LogArgs) -> Result<(), capi_runtime::Error> {
//! let shutdown = capi_runtime::Shutdown::on_signal(); // first: a SIGTERM before it is lost
//! capi_runtime::process::init_logging(log.log_format);
//! let config = capi_runtime::process::config(&args_kube, "my-binary/0.1.0").await?.config;
//! let client = kube::Client::try_from(config.clone()).map_err(capi_runtime::Error::Client)?;
//! let mut registry = prometheus_client::registry::Registry::default(); // the controller's metrics
//! let mut component = capi_runtime::metrics::component(&mut registry, "my_binary", "0.1.0");
//! let process = capi_runtime::metrics::ProcessMetrics::register(&mut component);
//! let runtime = capi_runtime::Runtime {
//!     config,
//!     namespace: "openshift-cluster-api".into(),
//!     lease_name: "my-binary-leader".into(),
//!     leader,
//!     http,
//!     registry: Arc::new(registry),
//!     process,
//!     shutdown,
//! };
//! capi_runtime::run(runtime, |shutdown| async move {
//!     // Built only now: a standby keeps no watches open.
//!     // my_controller(client).run(shutdown.requested()).await
//!     # let _ = (client, shutdown);
//!     Ok::<(), std::convert::Infallible>(())
//! })
//! .await
//! # }
//! ```
//!
//! The `process` feature (default) holds everything that needs Kubernetes or a server; without it, only
//! the command-line conventions ([`duration`], [`report`]) are built, for `manifests-gen`. Feature
//! `leader` alone builds the election (the installer library retires an earlier release's Lease with
//! it); `metrics` alone, a component's series.

#![warn(unreachable_pub)]

pub(crate) mod duration;
pub mod report;

#[cfg(feature = "process")]
pub(crate) mod access;
#[cfg(feature = "process")]
pub mod args;
#[cfg(feature = "process")]
pub(crate) mod auth;
#[cfg(feature = "process")]
mod error;
#[cfg(feature = "process")]
pub(crate) mod http;
#[cfg(feature = "leader")]
pub mod leader;
#[cfg(feature = "pace")]
pub mod memory;
#[cfg(feature = "metrics")]
pub mod metrics;
#[cfg(feature = "watch")]
pub mod optional_watch;
#[cfg(feature = "pace")]
pub mod pace;
#[cfg(feature = "process")]
pub mod process;
#[cfg(feature = "process")]
pub(crate) mod responsiveness;
#[cfg(feature = "process")]
mod run;
#[cfg(feature = "process")]
pub(crate) mod tls;
#[cfg(feature = "watch")]
pub mod trigger;

pub use duration::parse_duration_arg;
#[cfg(feature = "process")]
pub use error::Error;
#[cfg(feature = "process")]
pub use http::serve_tls;
#[cfg(feature = "process")]
pub use run::{Runtime, Shutdown, run};
