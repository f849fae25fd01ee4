//! Which field managers' objects the installer may take over, one group shared by `run` and `diff`:
//! a diff with another default would preview adoptions (or refusals) that `run` does not make.

use capi_installer_controller::reference;

#[derive(clap::Args, Clone, Debug)]
pub struct AdoptArgs {
    /// The release's own field managers (repeatable): an object only they wrote is "as the release
    /// ships it", the one kind a bundle's `adopt-existing` may take over (docs/design/ownership.md).
    #[arg(
        long = "adopt-from-manager",
        default_value = "cluster-version-operator",
        value_name = "MANAGER"
    )]
    pub adopt_from_managers: Vec<String>,
    /// Take over, in place, the provider objects that OpenShift's cluster-capi-operator applied
    /// (either generation), and remove its marks from them. Only once the reference is stopped: see
    /// docs/admin/switching.md.
    #[arg(long)]
    pub take_over_reference: bool,
}

impl AdoptArgs {
    /// The field managers the installer replaces for good.
    pub fn retired_managers(&self) -> Vec<String> {
        match self.take_over_reference {
            true => reference::FIELD_MANAGERS.map(String::from).to_vec(),
            false => Vec::new(),
        }
    }
}
