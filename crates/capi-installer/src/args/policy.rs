//! The bundle policy's flags, one group shared by `run` and `render`: a render that checks the policy
//! without them would refuse a bundle that `run` with the same flags accepts.

use std::path::PathBuf;

use anyhow::{Context, Result};
use capi_installer_controller::policy::{Ceiling, PolicyConfig};
use serde_json::Value;

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
    /// A YAML file of ClusterRoles that extend the provider RBAC ceilings as the cluster's labelled
    /// ones do (`oc get clusterroles -l capi-installer.openshift.io/provider-ceiling -o yaml`): for an
    /// offline `render` to judge as the installer on that cluster would (repeatable; the installer
    /// reads the cluster's own).
    #[arg(long = "policy-ceiling", value_name = "PATH")]
    ceilings: Vec<PathBuf>,
}

impl PolicyArgs {
    /// The installer's policy for `namespace` with these allowances.
    pub fn config(&self, namespace: &str) -> Result<PolicyConfig> {
        let mut policy = PolicyConfig::installer(namespace);
        policy
            .extra_groups
            .extend(self.allow_groups.iter().cloned());
        policy.extra_roles.extend(self.allow_roles.iter().cloned());
        for path in &self.ceilings {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("--policy-ceiling {}", path.display()))?;
            let docs = capi_manifests::yaml::parse_documents(&path.display().to_string(), &text)
                .with_context(|| format!("--policy-ceiling {}", path.display()))?;
            // A `kind: List` (as `oc get -o yaml` writes it) item by item.
            let roles: Vec<Value> = docs
                .into_iter()
                .flat_map(|d| match d.value.get("items").and_then(Value::as_array) {
                    Some(items) if d.value["kind"] == "List" => items.clone(),
                    _ => vec![d.value],
                })
                .filter(|r| r["kind"] == "ClusterRole")
                .collect();
            policy.ceiling = std::mem::take(&mut policy.ceiling).with(&Ceiling::from_roles(&roles));
        }
        Ok(policy)
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
