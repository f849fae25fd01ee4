//! `capi-installer rollback --provider P --to N`: asks the running installer to apply revision N of a
//! provider instead of its source's current content, until that content changes. Writes one key
//! (`rollback`) of the provider's revisions ConfigMap, then waits until the installer reports it done.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use capi_installer_controller::revision::{self, RevisionLog, Stored};
use capi_openshift::time::now_rfc3339;
use capi_runtime::parse_duration_arg;
use capi_runtime::report::write_stdout;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::json;

#[derive(clap::Args)]
pub struct RollbackArgs {
    #[command(flatten)]
    kube: capi_runtime::args::KubeArgs,
    #[command(flatten)]
    namespace: crate::namespace_args::InstallerNamespaceArg,
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
    let client = crate::connect(&args.kube).await?;
    let api: Api<ConfigMap> = Api::namespaced(client, &args.namespace.installer_namespace);
    let logs = logs(&api).await?;
    let now = now_rfc3339();
    let (configmap, request) = revision::rollback_request(&logs, &args.provider, args.to, &now)?;
    let patch = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": configmap, "namespace": args.namespace.installer_namespace},
        "data": {revision::KEY_ROLLBACK: serde_json::to_string(&request)?},
    });
    api.patch(
        configmap,
        &PatchParams::apply(revision::ROLLBACK_FIELD_MANAGER).force(),
        &Patch::Apply(&patch),
    )
    .await
    .with_context(|| format!("writing the rollback request into ConfigMap {configmap}"))?;
    if args.output == Output::Text {
        write_stdout(format_args!(
            "asked the installer to roll {} back to revision {} (ConfigMap {}/{configmap})\n",
            args.provider, args.to, args.namespace.installer_namespace
        ))?;
    }
    if args.wait.is_zero() {
        return print_result(&args, configmap, false);
    }
    let deadline = Instant::now() + args.wait;
    loop {
        let cm = api.get(configmap).await.context(configmap.to_string())?;
        let log = Stored::from_configmap(&cm)?.log;
        if revision::carried_out(&log, &request) {
            if args.output == Output::Text {
                write_stdout(format_args!(
                    "revision {} of {} is live\n",
                    args.to, args.provider
                ))?;
            }
            return print_result(&args, configmap, true);
        }
        if Instant::now() > deadline {
            bail!(
                "the installer has not rolled {} back to revision {} within {}s (is it running? see `capi-installer status`)",
                args.provider,
                args.to,
                args.wait.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Every revision log in the namespace, by ConfigMap name.
pub(crate) async fn logs(api: &Api<ConfigMap>) -> Result<Vec<(String, RevisionLog)>> {
    let list = api
        .list(&ListParams::default().labels(revision::LABEL))
        .await
        .context("listing the revisions ConfigMaps")?;
    list.items
        .iter()
        .map(|cm| {
            let stored = Stored::from_configmap(cm)?;
            Ok((cm.metadata.name.clone().unwrap_or_default(), stored.log))
        })
        .collect()
}
