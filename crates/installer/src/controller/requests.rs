//! What the loop does for the `InfrastructureProvider` objects: uninstall the deleted ones' providers,
//! hold each object with the installer's finalizer until then, and write each object's status.

use std::sync::Arc;

use capi_openshift::time::now_rfc3339;
use kube::api::DynamicObject;

use super::Installer;
use crate::api::{self, Request};
use crate::desired::{Desired, Requests, Role};
use crate::outcome::Removal;
use crate::reconcile;
use crate::report;
use crate::unmanaged::{Unmanaged, UnmanagedError};
use capi_status::conditions::Observed;
use capi_status::provider::{self, ProviderView};

impl Installer {
    /// One pass of every uninstall. Without a readable `ClusterAPI/cluster` nothing is removed: which
    /// CRDs are someone else's is unknown.
    pub(super) async fn uninstall(
        &self,
        requests: &Requests,
        unmanaged: &Result<Unmanaged, UnmanagedError>,
    ) -> Vec<Removal> {
        let mut removals = Vec::new();
        for u in &requests.uninstall {
            let removal = match unmanaged {
                Ok(unmanaged) => reconcile::uninstall(&self.cx, u, unmanaged).await,
                Err(e) => Removal {
                    name: u.name.clone(),
                    failed: vec![e.to_string()],
                    ..Default::default()
                },
            };
            removals.push(removal);
        }
        removals
    }

    /// Every live object holds the finalizer; a deleted one is let go once its provider is removed —
    /// at once when it removes nothing (it names the platform's provider, or cannot be acted on).
    pub(super) async fn finalize(
        &self,
        objects: &[Arc<DynamicObject>],
        requested: &[Request],
        requests: &Requests,
        removals: &[Removal],
    ) {
        for (obj, r) in objects.iter().zip(requested) {
            let keep = match requests.roles.get(&r.name) {
                _ if !r.deleting => true,
                Some(Role::Uninstalling) => !removals.iter().any(|x| x.name == r.name && x.done),
                _ => false,
            };
            if keep == r.finalized {
                continue;
            }
            match api::set_finalizer(&self.client, obj, keep).await {
                Ok(()) if !keep => {
                    tracing::info!(provider = %r.name, "InfrastructureProvider released")
                }
                Ok(()) => {}
                Err(e) => {
                    tracing::warn!(provider = %r.name, error = %e, "cannot update the finalizer; retrying")
                }
            }
        }
    }

    /// Each object's status, written when it changed; not for an object that was just let go.
    pub(super) async fn report_providers(
        &self,
        observed: &Observed<'_>,
        objects: &[Arc<DynamicObject>],
        requested: &[Request],
        requests: &Requests,
    ) {
        let now = now_rfc3339();
        for (obj, r) in objects.iter().zip(requested) {
            let Some(role) = requests.roles.get(&r.name) else {
                continue;
            };
            let removal = observed.removals.iter().find(|x| x.name == r.name);
            if r.deleting && (removal.is_none_or(|x| x.done)) {
                continue;
            }
            let view = self.view(observed, r, role, removal);
            let current = obj.data.get("status");
            let status = provider::status(&view, current, &now);
            if let Err(e) = report::provider::write(&self.client, &r.name, current, &status).await {
                tracing::warn!(provider = %r.name, error = %e, "cannot write InfrastructureProvider status; retrying");
            }
        }
    }

    fn view<'a>(
        &self,
        observed: &Observed<'a>,
        request: &'a Request,
        role: &'a Role,
        removal: Option<&'a Removal>,
    ) -> ProviderView<'a> {
        let label = capi_manifests::ProviderType::Infrastructure.clusterctl_label(&request.name);
        let outcomes: Vec<_> = observed
            .outcomes
            .iter()
            .copied()
            .filter(|o| o.target.clusterctl_label == label)
            .collect();
        let own = outcomes
            .iter()
            .find(|o| o.target.source.name == request.name);
        let desired: &'a Desired = observed.desired;
        ProviderView {
            request,
            role,
            desired,
            missing: observed.missing.iter().any(|w| w.name == request.name),
            revision: own.and_then(|o| self.cx.revisions.current(o.id())),
            outcomes,
            removal,
        }
    }
}
