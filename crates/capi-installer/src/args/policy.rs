//! The bundle policy's flags, one group shared by `run` and `render`: a render that checks the policy
//! without them would refuse a bundle that `run` with the same flags accepts.

use capi_installer_controller::policy::PolicyConfig;

#[derive(clap::Args, Clone, Debug, Default)]
pub struct PolicyArgs {
    /// An API group, beyond cluster.x-k8s.io and its subdomains, that provider CRDs, `*`-resource RBAC
    /// rules and admission rules may use (repeatable; none by default: real providers need none).
    #[arg(long = "policy-allow-group", value_name = "GROUP")]
    allow_groups: Vec<String>,
    /// A role outside the provider's bundle that its bindings may reference, as `ClusterRole/NAME` or
    /// `Role/NAME` (repeatable; none by default).
    #[arg(long = "policy-allow-role", value_name = "KIND/NAME", value_parser = parse_role)]
    allow_roles: Vec<(String, String)>,
}

impl PolicyArgs {
    /// The installer's policy for `namespace` with these allowances.
    pub fn config(&self, namespace: &str) -> PolicyConfig {
        let mut policy = PolicyConfig::installer(namespace);
        policy
            .extra_groups
            .extend(self.allow_groups.iter().cloned());
        policy.extra_roles.extend(self.allow_roles.iter().cloned());
        policy
    }
}

/// `ClusterRole/NAME` or `Role/NAME`.
fn parse_role(value: &str) -> Result<(String, String), String> {
    match value.split_once('/') {
        Some((kind @ ("ClusterRole" | "Role"), name)) if !name.is_empty() => {
            Ok((kind.to_string(), name.to_string()))
        }
        _ => Err(format!("{value:?}: expected ClusterRole/NAME or Role/NAME")),
    }
}
