//! Build-time generator of a Cluster API provider's manifests for OpenShift, in either of the
//! reference's two generations (SPEC §3):
//!
//! - a transport ConfigMap (`--base-path`, `--provider-name`, ...; release-4.21 and before), or
//! - an image-based profile (`--name`, ...; the newer generation).
//!
//! Drop-in for both generations' command lines, Go's single-dash spelling included, so a provider's
//! `openshift/Makefile` keeps working. All processing lives in `capi-manifests`; this binary parses
//! the command line, reads the inputs, runs kustomize and writes (or checks) the outputs.

mod args;
mod configmap;
mod kustomize;
mod output;
mod profile;
mod vendored;

use std::process::ExitCode;

use anyhow::Result;
use args::Args;
use capi_runtime::report::{exit, finish};
use clap::Parser;

fn main() -> ExitCode {
    let args = Args::parse_from(args::go_style_args(std::env::args_os()));
    // 0 written or up to date, 1 stale (--check), 2 any error: a CI script can tell "regenerate" from
    // "broken".
    finish(run(args), exit::ERROR)
}

fn run(args: Args) -> Result<ExitCode> {
    match args.profile.name.clone() {
        Some(name) => profile::run(name, args),
        None => configmap::run(args),
    }
}
