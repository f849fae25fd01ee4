//! The two namespaces of the layout (docs/admin/operating.md, "Namespaces"), one group shared by the
//! commands that read the cluster, defaulting to the release's.

#[derive(clap::Args, Clone, Debug)]
pub struct NamespaceArgs {
    /// The providers' namespace: the transport ConfigMaps and every namespaced provider object.
    #[arg(
        short,
        long,
        default_value = capi_manifests::TARGET_NAMESPACE,
        value_name = "NS"
    )]
    pub namespace: String,
    #[command(flatten)]
    pub installer: InstallerNamespaceArg,
}

#[derive(clap::Args, Clone, Debug)]
pub struct InstallerNamespaceArg {
    /// The installer's own namespace: its Lease, inventory and revisions. Those an earlier release kept
    /// in --namespace are carried over by `run`.
    #[arg(long, default_value = capi_manifests::INSTALLER_NAMESPACE, value_name = "NS")]
    pub installer_namespace: String,
}
