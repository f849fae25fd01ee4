//! Command-line flags every long-running binary of the project shares, as clap argument groups to
//! `#[command(flatten)]` into a binary's `run` arguments, so that both binaries spell, default and
//! document them identically.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::duration::parse_duration_arg;

/// Where the cluster is, found by kubectl's rules ([`crate::access`]).
#[derive(clap::Args, Clone, Debug, Default)]
pub struct KubeArgs {
    /// Kubeconfig file. Default, as kubectl: the files listed in $KUBECONFIG (missing ones skipped), else
    /// ~/.kube/config, else the in-cluster configuration (the pod's ServiceAccount).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use instead of its current-context.
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
}

/// Leader election on a `coordination.k8s.io/v1` Lease (see [`crate::leader`]).
#[derive(clap::Args, Clone, Debug)]
pub struct LeaderElectionArgs {
    /// Take part in leader election: only the holder of the Lease runs the controller.
    /// `--leader-elect=false` only where a single replica runs (tests, debugging).
    #[arg(
        long,
        default_value_t = true,
        action = clap::ArgAction::Set,
        num_args = 0..=1,
        default_missing_value = "true",
        value_name = "BOOL"
    )]
    pub(crate) leader_elect: bool,
    /// Namespace of the Lease; default: --namespace.
    #[arg(long, value_name = "NS")]
    pub(crate) leader_elect_namespace: Option<String>,
    /// Name of this replica: its leader election identity (the installer also names it as the source
    /// of its Events); usually the pod name. Default: host name and process id.
    #[arg(long, env = "POD_NAME", value_name = "NAME")]
    pub instance: Option<String>,
    /// How long a Lease stays valid after its last renewal: a standby takes over a Lease not renewed
    /// for this long.
    #[arg(long, default_value = "137s", value_parser = parse_duration_arg, value_name = "DURATION")]
    pub(crate) leader_elect_lease_duration: Duration,
    /// The leader gives up (exits 1) when it could not renew the Lease for this long. Every renewal
    /// request is bounded by what remains of it. Shorter than the lease duration.
    #[arg(long, default_value = "107s", value_parser = parse_duration_arg, value_name = "DURATION")]
    pub(crate) leader_elect_renew_deadline: Duration,
    /// How often the leader renews and a standby looks at the Lease.
    #[arg(long, default_value = "26s", value_parser = parse_duration_arg, value_name = "DURATION")]
    pub(crate) leader_elect_retry_period: Duration,
}

impl LeaderElectionArgs {
    /// The election's timings, as given.
    pub fn timing(&self) -> crate::leader::Timing {
        crate::leader::Timing {
            lease_duration: self.leader_elect_lease_duration,
            renew_deadline: self.leader_elect_renew_deadline,
            retry_period: self.leader_elect_retry_period,
        }
    }

    /// This replica's identity in the election ([`crate::leader::default_identity`]).
    pub fn identity(&self) -> String {
        crate::leader::default_identity(self.instance.as_deref())
    }
}

impl Default for LeaderElectionArgs {
    fn default() -> Self {
        let timing = crate::leader::Timing::default();
        LeaderElectionArgs {
            leader_elect: true,
            leader_elect_namespace: None,
            instance: None,
            leader_elect_lease_duration: timing.lease_duration,
            leader_elect_renew_deadline: timing.renew_deadline,
            leader_elect_retry_period: timing.retry_period,
        }
    }
}

/// The health and metrics endpoints (see [`crate::http`]).
#[derive(clap::Args, Clone, Debug)]
pub struct HttpArgs {
    /// Address of the plain-HTTP health endpoints /healthz and /readyz (for the kubelet's probes).
    #[arg(long, default_value = "0.0.0.0:9440", value_name = "ADDR")]
    pub(crate) http_addr: SocketAddr,
    /// Address of /metrics, served over TLS only to callers whose bearer token the API server
    /// authenticates (TokenReview) and authorizes for `get` on the non-resource URL /metrics
    /// (SubjectAccessReview).
    #[arg(long, default_value = "0.0.0.0:8443", value_name = "ADDR")]
    pub(crate) metrics_addr: SocketAddr,
    /// PEM certificate (chain) of /metrics, e.g. the service-ca serving certificate `tls.crt`; read
    /// again when it changes, so a rotated certificate needs no restart. Default: a self-signed
    /// certificate made at start.
    #[arg(long, value_name = "PATH", requires = "metrics_key_file")]
    pub(crate) metrics_cert_file: Option<PathBuf>,
    /// PEM private key of --metrics-cert-file (`tls.key`).
    #[arg(long, value_name = "PATH", requires = "metrics_cert_file")]
    pub(crate) metrics_key_file: Option<PathBuf>,
}

impl HttpArgs {
    /// `command` with other defaults for the addresses of its subcommand `subcommand` (help text
    /// included): each binary has its own ports, so that two of them run side by side on one host.
    pub fn with_defaults(
        command: clap::Command,
        subcommand: &str,
        http_addr: &'static str,
        metrics_addr: &'static str,
    ) -> clap::Command {
        command.mut_subcommand(subcommand, |run| {
            run.mut_arg("http_addr", |a| a.default_value(http_addr))
                .mut_arg("metrics_addr", |a| a.default_value(metrics_addr))
        })
    }
}

impl Default for HttpArgs {
    fn default() -> Self {
        HttpArgs {
            http_addr: ([0, 0, 0, 0], 9440).into(),
            metrics_addr: ([0, 0, 0, 0], 8443).into(),
            metrics_cert_file: None,
            metrics_key_file: None,
        }
    }
}

/// Log format; the filter comes from `RUST_LOG`.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct LogArgs {
    /// `text` for people, `json` for log collectors. Filter: env RUST_LOG (default info,kube=warn).
    #[arg(long, value_enum, default_value = "text", value_name = "FORMAT")]
    pub log_format: LogFormat,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        kube: KubeArgs,
        #[command(flatten)]
        leader: LeaderElectionArgs,
        #[command(flatten)]
        http: HttpArgs,
        #[command(flatten)]
        log: LogArgs,
    }

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("bin").chain(args.iter().copied()))
    }

    #[test]
    fn defaults_are_openshifts() {
        let cli = parse(&[]).unwrap();
        assert!(cli.leader.leader_elect);
        assert_eq!(
            cli.leader.leader_elect_lease_duration,
            Duration::from_secs(137)
        );
        assert_eq!(
            cli.leader.leader_elect_renew_deadline,
            Duration::from_secs(107)
        );
        assert_eq!(
            cli.leader.leader_elect_retry_period,
            Duration::from_secs(26)
        );
        assert_eq!(cli.http.http_addr.port(), 9440);
        assert_eq!(cli.http.metrics_addr.port(), 8443);
        assert_eq!(cli.log.log_format, LogFormat::Text);
        // The Default impls agree with clap's defaults.
        let d = LeaderElectionArgs::default();
        assert_eq!(
            (
                d.leader_elect_lease_duration,
                d.leader_elect_renew_deadline,
                d.leader_elect_retry_period
            ),
            (
                cli.leader.leader_elect_lease_duration,
                cli.leader.leader_elect_renew_deadline,
                cli.leader.leader_elect_retry_period
            )
        );
        assert_eq!(HttpArgs::default().http_addr, cli.http.http_addr);
        assert_eq!(HttpArgs::default().metrics_addr, cli.http.metrics_addr);
    }

    #[test]
    fn flags_parse() {
        let cli = parse(&[
            "--kubeconfig",
            "/k",
            "--leader-elect=false",
            "--leader-elect-lease-duration",
            "6s",
            "--leader-elect-renew-deadline=4s",
            "--leader-elect-retry-period",
            "500ms",
            "--http-addr",
            "127.0.0.1:1",
            "--metrics-addr",
            "127.0.0.1:2",
            "--metrics-cert-file",
            "/c",
            "--metrics-key-file",
            "/k",
            "--log-format",
            "json",
        ])
        .unwrap();
        assert_eq!(cli.kube.kubeconfig, Some(PathBuf::from("/k")));
        assert!(!cli.leader.leader_elect);
        assert_eq!(
            cli.leader.leader_elect_lease_duration,
            Duration::from_secs(6)
        );
        assert_eq!(
            cli.leader.leader_elect_renew_deadline,
            Duration::from_secs(4)
        );
        assert_eq!(
            cli.leader.leader_elect_retry_period,
            Duration::from_millis(500)
        );
        assert_eq!(cli.http.http_addr, SocketAddr::from(([127, 0, 0, 1], 1)));
        assert_eq!(cli.http.metrics_addr, SocketAddr::from(([127, 0, 0, 1], 2)));
        assert_eq!(cli.http.metrics_cert_file, Some(PathBuf::from("/c")));
        assert_eq!(cli.log.log_format, LogFormat::Json);
        assert!(parse(&["--leader-elect"]).unwrap().leader.leader_elect);
    }

    #[test]
    fn a_binary_can_have_ports_of_its_own() {
        use clap::{CommandFactory, FromArgMatches};
        #[derive(Parser, Debug)]
        enum Bin {
            Run(Cli),
        }
        let command = HttpArgs::with_defaults(Bin::command(), "run", "0.0.0.0:1", "0.0.0.0:2");
        let mut help = Vec::new();
        command
            .clone()
            .find_subcommand_mut("run")
            .unwrap()
            .write_long_help(&mut help)
            .unwrap();
        let help = String::from_utf8(help).unwrap();
        assert!(
            help.contains("[default: 0.0.0.0:1]") && help.contains("[default: 0.0.0.0:2]"),
            "{help}"
        );
        let matches = command.try_get_matches_from(["bin", "run"]).unwrap();
        let Bin::Run(cli) = Bin::from_arg_matches(&matches).unwrap();
        assert_eq!(
            (cli.http.http_addr.port(), cli.http.metrics_addr.port()),
            (1, 2)
        );
    }

    #[test]
    fn bad_values_are_refused_with_the_reason() {
        let err = parse(&["--leader-elect-lease-duration", "137"]).unwrap_err();
        assert!(err.to_string().contains("has no unit"), "{err}");
        // A certificate without its key (and the reverse) is a usage error.
        assert!(parse(&["--metrics-cert-file", "/c"]).is_err());
        assert!(parse(&["--metrics-key-file", "/k"]).is_err());
    }
}
