//! Kubeconfig controller: keeps Secret `<infrastructureName>-kubeconfig` (type `cluster.x-k8s.io/secret`,
//! label `cluster.x-k8s.io/cluster-name`) whose `value` is a kubeconfig for this cluster's API server,
//! with its CA and a token of ServiceAccount `capi-controllers-kubeconfig`. Cluster API treats the
//! OpenShift cluster as its own workload cluster through it.
//!
//! Tokens come from the TokenRequest API, bound to the ServiceAccount and expiring after
//! [`Settings::token_lifetime`]; a new one replaces the old after [`Settings::rotate_after`] (30
//! minutes, as in the reference), in one write, while the old one is still valid. So the Secret is
//! never empty and never holds a token that no longer works. (The reference cleared a legacy token
//! Secret and waited for the token controller to refill it; its kubeconfig held a revoked token
//! meanwhile.)

pub mod render;

use std::sync::Arc;

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, PostParams};
use tokio::sync::Notify;

use crate::config::ControllerKind;
use crate::context::{Context, Exit, Outcome, Synced, Writer, owned_by_label};
use crate::error::{ControllerError, InputError};
use crate::names::*;
use crate::runner::Reconcile;
use crate::status::State;
use crate::watch::{Kind, WatchKey};

pub use crate::config::Settings;

pub(crate) struct KubeconfigController;

impl Reconcile for KubeconfigController {
    const KIND: ControllerKind = ControllerKind::Kubeconfig;

    async fn reconcile(&mut self, ctx: &Context, wake: &Arc<Notify>) -> Result<Outcome, Exit> {
        let settings = &ctx.config.kubeconfig;
        let cluster = ctx.cluster(wake)?;
        let cluster_name = &cluster.info.infrastructure_name;
        let ns = cluster.info.namespace.as_str();
        let name = render::secret_name(cluster_name);
        let what = format!("Secret {ns}/{name}");
        let live = ctx
            .synced(&WatchKey::object(Kind::secret(), Some(ns), &name), wake)?
            .get(&name);
        if let Some(owner) = live.as_deref().and_then(owned_by_label) {
            return Ok(Outcome::report(State::ExternallyManaged {
                message: format!("{what} exists and is managed by {owner}: left alone"),
            }));
        }

        let now = Timestamp::now();
        // Keep the live token while it is young and the kubeconfig around it is exactly ours; any
        // other difference (server, CA, an edit, an unreadable time) gets a fresh token.
        let current = live.as_deref().and_then(|live| {
            let data = serde_json::to_value(live).ok()?;
            let text = render::kubeconfig_of(&data)?;
            let token = render::token_of(&text)?;
            let issued = live
                .metadata
                .annotations
                .as_ref()?
                .get(TOKEN_REFRESH_ANNOTATION)?;
            let left = render::remaining(Some(issued), now, settings.rotate_after);
            (text == render::render(cluster_name, ns, &settings.target, &token) && !left.is_zero())
                .then(|| (text, issued.clone(), left))
        });
        let (kubeconfig, issued, left) = match current {
            Some(current) => current,
            None => {
                let token = request_token(ctx, ns, settings).await?;
                let issued = capi_openshift::time::rfc3339(now);
                let text = render::render(cluster_name, ns, &settings.target, &token);
                (text, issued, settings.rotate_after)
            }
        };
        let desired = render::desired_secret(cluster_name, ns, &kubeconfig, &issued);
        let writer = Writer {
            ctx,
            controller: Self::KIND,
        };
        if let Synced::Foreign(message) = writer
            .sync(&Kind::secret(), &desired, live, owned_by_label)
            .await?
        {
            return Ok(Outcome::report(State::ExternallyManaged { message }));
        }
        Ok(Outcome::Report {
            state: State::Done {
                message: format!(
                    "{what} holds a kubeconfig for {} with a token of ServiceAccount {ns}/{} issued at {issued}",
                    settings.target.server, settings.service_account
                ),
            },
            // Wake up to renew it.
            recheck: Some(left),
        })
    }
}

async fn request_token(
    ctx: &Context,
    ns: &str,
    settings: &Settings,
) -> Result<String, ControllerError> {
    let accounts: Api<ServiceAccount> = Api::namespaced(ctx.client.clone(), ns);
    let request = TokenRequest {
        spec: TokenRequestSpec {
            expiration_seconds: Some(settings.token_lifetime.as_secs() as i64),
            ..Default::default()
        },
        ..Default::default()
    };
    let what = format!("ServiceAccount {ns}/{}", settings.service_account);
    let response = accounts
        .create_token_request(&settings.service_account, &PostParams::default(), &request)
        .await
        .map_err(|e| match e {
            kube::Error::Api(s) if s.code == 404 => ControllerError::Input(InputError::NoSource(
                format!("{what} does not exist: no token for the kubeconfig"),
            )),
            e => ControllerError::api("request a token for", &what, e),
        })?;
    let token = response.status.map(|s| s.token).unwrap_or_default();
    if token.is_empty() {
        return Err(InputError::Missing {
            object: format!("TokenRequest for {what}"),
            field: "status.token".into(),
        }
        .into());
    }
    tracing::info!(service_account = %what, "issued a token for the kubeconfig");
    Ok(token)
}
