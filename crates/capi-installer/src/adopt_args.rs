//! Which field managers' objects the installer may take over, one group shared by `run` and `diff`:
//! a diff with another default would preview adoptions (or refusals) that `run` does not make.

#[derive(clap::Args, Clone, Debug)]
pub struct AdoptArgs {
    /// Field managers whose objects may be adopted (repeatable).
    #[arg(
        long = "adopt-from-manager",
        default_value = "cluster-version-operator",
        value_name = "MANAGER"
    )]
    pub adopt_from_managers: Vec<String>,
}
