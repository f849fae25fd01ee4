//! `capi-installer rollback --provider P --to N`: asks the running installer to apply revision N of a
//! provider instead of its source's current content, until that content changes
//! ([`capi_commands::rollback`]): asks, then waits until the installer reports it done.

use std::time::Duration;

use anyhow::Result;
use capi_commands::rollback;
use capi_runtime::parse_duration_arg;
use capi_runtime::report::write_stdout;
use serde_json::json;

#[derive(clap::Args)]
pub struct RollbackArgs {
    #[command(flatten)]
    kube: capi_runtime::args::KubeArgs,
    #[command(flatten)]
    namespace: crate::args::namespace::InstallerNamespaceArg,
    /// The provider, by name (`cluster-api`, `aws`, ...), as `capi-installer status` lists it.
    #[arg(long, value_name = "NAME")]
    provider: String,
    /// The revision to go back to (`capi-installer status` lists them with their content).
    #[arg(long, value_name = "N")]
    to: u32,
    /// How long to wait for the installer to carry it out (0s: do not wait).
    #[arg(long, default_value = "5m", value_parser = parse_duration_arg, value_name = "DURATION")]
    wait: Duration,
    /// `text` for people; `json` or `yaml` for scripts (the exit code is the same)
    #[arg(short, long, value_enum, default_value = "text", value_name = "FORMAT")]
    output: Output,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    /// A line when asked, and one when the revision is live.
    Text,
    /// One JSON document at the end: provider, revision, configMap, live (false with --wait 0s).
    Json,
    /// The JSON document as YAML.
    Yaml,
}

/// What a script reads of a rollback, printed once it is asked (`live: false`) or carried out.
fn print_result(args: &RollbackArgs, configmap: &str, live: bool) -> Result<()> {
    let document = json!({
        "provider": args.provider,
        "revision": args.to,
        "configMap": format!("{}/{configmap}", args.namespace.installer_namespace),
        "live": live,
    });
    let text = match args.output {
        Output::Text => return Ok(()),
        Output::Json => format!("{}\n", serde_json::to_string_pretty(&document)?),
        Output::Yaml => capi_manifests::yaml::to_yaml("the rollback", &document)?,
    };
    write_stdout(text)?;
    Ok(())
}

pub async fn main(args: RollbackArgs) -> Result<()> {
    let client = crate::inputs::connect(&args.kube).await?;
    let namespace = &args.namespace.installer_namespace;
    let asked = rollback::ask(&client, namespace, &args.provider, args.to).await?;
    if args.output == Output::Text {
        write_stdout(format_args!(
            "asked the installer to roll {} back to revision {} (ConfigMap {namespace}/{})\n",
            args.provider, args.to, asked.configmap
        ))?;
    }
    if args.wait.is_zero() {
        return print_result(&args, &asked.configmap, false);
    }
    asked.wait(args.wait).await?;
    if args.output == Output::Text {
        write_stdout(format_args!(
            "revision {} of {} is live\n",
            args.to, args.provider
        ))?;
    }
    print_result(&args, &asked.configmap, true)
}
