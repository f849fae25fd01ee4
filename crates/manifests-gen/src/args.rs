//! The command line of both generations, Go's spellings included (`-flag`, `-flag=false`, `0x14`).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{ArgAction, Args as ClapArgs, CommandFactory, Parser};

/// Generate the transport ConfigMap (--provider-name) or the image-based profile (--name) of a
/// Cluster API provider for OpenShift.
#[derive(Parser, Debug)]
#[command(name = "manifests-gen", version)]
pub(crate) struct Args {
    /// Output folder: of the transport ConfigMap (normally openshift/manifests), or of the profiles
    /// (a profile is written to <manifests-path>/<profile-name>/). Relative to the working folder.
    #[arg(long)]
    pub(crate) manifests_path: PathBuf,
    /// Kustomize folder: relative to --base-path for the ConfigMap [default: config/default],
    /// relative to the working folder for a profile (required there).
    #[arg(long)]
    pub(crate) kustomize_dir: Option<PathBuf>,
    /// Write nothing; exit 1 and print a diff when the committed outputs are stale (0 when up to date,
    /// 2 on an error).
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, require_equals = true, value_name = "BOOL",
          default_value = "false", default_missing_value = "true", value_parser = go_bool)]
    pub(crate) check: bool,
    #[command(flatten)]
    pub(crate) configmap: ConfigMapArgs,
    #[command(flatten)]
    pub(crate) profile: ProfileArgs,
}

/// The first generation: a transport ConfigMap.
#[derive(ClapArgs, Debug)]
#[command(next_help_heading = "Transport ConfigMap")]
pub(crate) struct ConfigMapArgs {
    /// Root of the provider repository.
    #[arg(long, required_unless_present = "name")]
    pub(crate) base_path: Option<PathBuf>,
    /// clusterctl provider name: cluster-api, aws, gcp, azure, powervs, ...
    #[arg(long, required_unless_present = "name")]
    pub(crate) provider_name: Option<String>,
    /// CoreProvider or InfrastructureProvider.
    #[arg(long, required_unless_present = "name")]
    pub(crate) provider_type: Option<String>,
    /// Provider version, semver with optional leading v (e.g. v2.10.0).
    #[arg(long, required_unless_present = "name")]
    pub(crate) provider_version: Option<String>,
    /// Already-rendered components (FILE, or - for standard input) instead of running kustomize.
    #[arg(long, value_name = "FILE|-")]
    pub(crate) components: Option<PathBuf>,
    /// clusterctl metadata file [default: <base-path>/metadata.yaml].
    #[arg(long, value_name = "FILE")]
    pub(crate) metadata: Option<PathBuf>,
    /// The objects in the order the kustomization lists them, as the reference generator writes
    /// them: the default; the flag is kept for command lines that pass it.
    #[arg(long, conflicts_with = "kind_order")]
    pub(crate) input_order: bool,
    /// The objects in kustomize's order by kind instead of the kustomization's (the reference's).
    /// Only when manifests-gen runs kustomize; a --components file is always taken in its own order.
    #[arg(long)]
    pub(crate) kind_order: bool,
}

/// The newer generation: an image-based profile.
#[derive(ClapArgs, Debug)]
#[command(next_help_heading = "Image-based profile")]
pub(crate) struct ProfileArgs {
    /// Write a profile for this component (e.g. cluster-api-provider-aws) instead of a ConfigMap.
    #[arg(long, requires = "kustomize_dir", conflicts_with_all = [
        "base_path", "provider_name", "provider_type", "provider_version", "components", "metadata",
        "input_order", "kind_order",
    ])]
    pub(crate) name: Option<String>,
    /// The profile's folder under --manifests-path (letters, digits, '-', '_').
    #[arg(long, default_value = capi_manifests::profile::DEFAULT_PROFILE, requires = "name")]
    pub(crate) profile_name: String,
    /// Lower installs first (conventions: core 10, infrastructure providers 20) [default: 0].
    #[arg(long, requires = "name", value_parser = go_int, allow_hyphen_values = true)]
    pub(crate) install_order: Option<i64>,
    /// An attribute of the profile (type=core|infrastructure, version=v1.2.3, ...); repeatable.
    #[arg(long = "attribute", value_name = "KEY=VALUE", requires = "name", value_parser = attribute)]
    pub(crate) attributes: Vec<(String, String)>,
    /// The provider's own image as the manifests name it; the installer replaces it with the
    /// release's image.
    #[arg(long, requires = "name")]
    pub(crate) self_image_ref: Option<String>,
    /// The OpenShift platform type the profile is for (AWS, GCP, ...); none: every platform.
    #[arg(long, requires = "name")]
    pub(crate) platform: Option<String>,
    /// Singular name of the CRD whose objects named after the cluster may not be deleted (e.g.
    /// awscluster) [default: every CRD of group infrastructure.cluster.x-k8s.io whose plural ends in
    /// "clusters"].
    #[arg(long, requires = "name")]
    pub(crate) protect_cluster_resource: Option<String>,
    /// Also write manifests-summary.yaml, the list of the profile's objects.
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, require_equals = true, value_name = "BOOL",
          default_value = "false", default_missing_value = "true", value_parser = go_bool,
          requires = "name")]
    pub(crate) manifests_summary: bool,
}

/// Go's `flag` package accepts `-flag` as well as `--flag`; the reference is a Go program, so a
/// Makefile may use either. Rewrite single-dash forms of our long flags before clap sees them.
pub(crate) fn go_style_args(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let command = Args::command();
    let long_flags: Vec<&str> = command
        .get_arguments()
        .filter_map(|a| a.get_long())
        .collect();
    args.into_iter()
        .enumerate()
        .map(|(i, a)| {
            let Some(s) = a.to_str().filter(|_| i > 0) else {
                return a;
            };
            if let Some(rest) = s.strip_prefix('-').filter(|r| !r.starts_with('-')) {
                let name = rest.split_once('=').map_or(rest, |(n, _)| n);
                if long_flags.contains(&name) {
                    return OsString::from(format!("-{s}"));
                }
            }
            a
        })
        .collect()
}

/// A boolean flag's value as Go's `flag` package parses it (`-manifests-summary=false`).
fn go_bool(s: &str) -> Result<bool, String> {
    match s {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(false),
        _ => Err(format!("{s:?} is not a boolean (true or false)")),
    }
}

/// An integer flag's value as Go's `flag` package parses it: decimal, or with a base prefix (`0x14`,
/// `0o24`, `0b10100`, and a leading `0` for octal), underscores allowed between the digits of a
/// prefixed number.
fn go_int(s: &str) -> Result<i64, String> {
    let invalid = || format!("{s:?} is not an integer");
    let (negative, unsigned) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let lower = unsigned.to_ascii_lowercase();
    let (radix, digits) = if let Some(d) = lower.strip_prefix("0x") {
        (16, d.to_owned())
    } else if let Some(d) = lower.strip_prefix("0b") {
        (2, d.to_owned())
    } else if let Some(d) = lower.strip_prefix("0o") {
        (8, d.to_owned())
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, lower[1..].to_owned())
    } else {
        (10, lower.clone())
    };
    let digits = if radix == 10 {
        digits
    } else {
        if digits.starts_with('_') || digits.ends_with('_') || digits.contains("__") {
            return Err(invalid());
        }
        digits.replace('_', "")
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(invalid());
    }
    let magnitude = i128::from_str_radix(&digits, radix).map_err(|_| invalid())?;
    i64::try_from(if negative { -magnitude } else { magnitude }).map_err(|_| invalid())
}

/// `--attribute KEY=VALUE`, split at the first `=` as the reference does.
fn attribute(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some(("", _)) => Err(format!("{s:?}: the key is empty")),
        Some((k, v)) => Ok((k.to_owned(), v.to_owned())),
        None => Err(format!("{s:?} is not KEY=VALUE")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_integers() {
        for (s, want) in [
            ("20", 20),
            ("-3", -3),
            ("+7", 7),
            ("0", 0),
            ("010", 8),
            ("0x14", 20),
            ("0X1_4", 20),
            ("0b1_0100", 20),
            ("0o24", 20),
        ] {
            assert_eq!(go_int(s), Ok(want), "{s}");
        }
        for s in [
            "",
            "x",
            "1_0",
            "0x",
            "0x_14",
            "08",
            "1.5",
            "99999999999999999999",
        ] {
            assert!(go_int(s).is_err(), "{s}");
        }
    }

    #[test]
    fn single_dash_flags_become_long_flags() {
        let args = [
            "manifests-gen",
            "-name",
            "x",
            "-install-order=10",
            "-manifests-summary",
            "-v",
        ]
        .map(OsString::from);
        let got: Vec<String> = go_style_args(args)
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect();
        assert_eq!(
            got,
            [
                "manifests-gen",
                "--name",
                "x",
                "--install-order=10",
                "--manifests-summary",
                "-v"
            ]
        );
    }
}
