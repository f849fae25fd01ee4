//! `capi-installer`: the installer's binary. Parses the command line and hands each command to its
//! module under [`cmd`]; the work is in the libraries.

use std::process::ExitCode;

use capi_runtime::report::{exit, finish};
use clap::{Parser, Subcommand};

mod args;
mod cmd;
mod inputs;
mod table;

#[derive(Parser)]
#[command(
    name = "capi-installer",
    version,
    about = "Installs Cluster API providers from transport ConfigMaps and image-based profiles"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the installer controller against a cluster.
    Run(Box<cmd::run::RunArgs>),
    /// Print the ordered plan (and, with --output yaml, the rendered objects) of a platform, offline.
    Render(cmd::render::RenderArgs),
    /// Show what is installed: providers, versions, state, objects ready, and the ClusterOperator.
    Status(cmd::status::StatusArgs),
    /// Roll a provider back to an earlier revision (kept until its source's content changes).
    Rollback(cmd::rollback::RollbackArgs),
    /// Show what the installer would change for new transport ConfigMaps, without writing: objects
    /// created, changed (field by field), pruned, and what it would refuse. Exit 0: no change; 1: changes,
    /// refusals or a missing provider; 2: it cannot run (bad input, the cluster refused or unreachable).
    Diff(cmd::diff::DiffArgs),
    /// Keep the installer's Deployment, with an image volume per provider image of the release and
    /// of the revisions still kept (run by the release's Deployment; the installer runs in the one
    /// it applies).
    Deployer(Box<cmd::deployer::DeployerArgs>),
}

#[tokio::main]
async fn main() -> ExitCode {
    let done = |r: anyhow::Result<()>| r.map(|()| ExitCode::SUCCESS);
    match Cli::parse().command {
        Command::Run(args) => finish(done(cmd::run::main(*args).await), exit::ERROR),
        Command::Render(args) => finish(cmd::render::main(args), exit::ERROR),
        Command::Status(args) => finish(cmd::status::main(args).await, exit::ERROR),
        Command::Rollback(args) => finish(done(cmd::rollback::main(args).await), exit::ERROR),
        Command::Diff(args) => finish(cmd::diff::main(args).await, exit::ERROR),
        Command::Deployer(args) => finish(done(cmd::deployer::main(*args).await), exit::ERROR),
    }
}
