//! User-data sync controller: mirrors Secret `openshift-machine-api/worker-user-data` (written by the
//! machine-config operator for Machine API workers) into openshift-cluster-api for Cluster API's
//! machines: `data.value` = the source's `userData`, `data.format` = `ignition`, the same type.
//!
//! The target is never emptied or deleted: while the source is missing the controller waits, and a
//! source without `userData` is an error that leaves the last good copy in place.

use std::sync::Arc;

use base64::Engine;
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::config::ControllerKind;
use crate::context::{Context, Exit, Outcome, Synced, Writer, owned_by_label};
use crate::error::InputError;
use crate::names::*;
use crate::runner::Reconcile;
use crate::status::{State, Wait};
use crate::watch::{Kind, WatchKey};

pub(crate) struct SecretSyncController;

/// The target Secret for a source Secret (both as JSON, `data` base64).
pub(crate) fn desired_user_data(source: &Value, namespace: &str) -> Result<Value, InputError> {
    let user_data = source
        .pointer("/data/userData")
        .and_then(Value::as_str)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| InputError::Missing {
            object: format!("Secret {MAPI_NAMESPACE}/{USER_DATA_SECRET}"),
            field: "data.userData".into(),
        })?;
    let type_ = source
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("Opaque");
    Ok(json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": USER_DATA_SECRET,
            "namespace": namespace,
            "labels": {MANAGED_BY_LABEL: OWNERSHIP_LABEL_VALUE},
        },
        "type": type_,
        "data": {
            "value": user_data,
            "format": base64::engine::general_purpose::STANDARD.encode("ignition"),
        },
    }))
}

impl Reconcile for SecretSyncController {
    const KIND: ControllerKind = ControllerKind::SecretSync;

    async fn reconcile(&mut self, ctx: &Context, wake: &Arc<Notify>) -> Result<Outcome, Exit> {
        let ns = ctx.cluster(wake)?.info.namespace;
        let ns = ns.as_str();
        let source = ctx
            .synced(
                &WatchKey::object(Kind::secret(), Some(MAPI_NAMESPACE), USER_DATA_SECRET),
                wake,
            )?
            .get(USER_DATA_SECRET);
        let target = ctx
            .synced(
                &WatchKey::object(Kind::secret(), Some(ns), USER_DATA_SECRET),
                wake,
            )?
            .get(USER_DATA_SECRET);
        let Some(source) = source else {
            return Ok(Outcome::report(State::Waiting {
                wait: Wait::Source,
                message: format!(
                    "waiting for Secret {MAPI_NAMESPACE}/{USER_DATA_SECRET} (written by the machine-config operator)"
                ),
            }));
        };
        let desired = desired_user_data(&serde_json::to_value(&*source).unwrap_or_default(), ns)?;
        let writer = Writer {
            ctx,
            controller: Self::KIND,
        };
        match writer
            .sync(&Kind::secret(), &desired, target, owned_by_label)
            .await?
        {
            Synced::Foreign(message) => Ok(Outcome::report(State::ExternallyManaged { message })),
            Synced::Unchanged(_) | Synced::Written(_) => Ok(Outcome::report(State::Done {
                message: format!(
                    "Secret {ns}/{USER_DATA_SECRET} mirrors {MAPI_NAMESPACE}/{USER_DATA_SECRET}"
                ),
            })),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mirrors_user_data_as_value_with_the_ignition_format() {
        let source = json!({"type": "Opaque", "data": {"userData": "eyJpZ25pdGlvbiI6e319", "disableTemplating": "dHJ1ZQ=="}});
        let target = desired_user_data(&source, "openshift-cluster-api").unwrap();
        assert_eq!(
            target["data"],
            json!({"value": "eyJpZ25pdGlvbiI6e319", "format": "aWduaXRpb24="})
        );
        assert_eq!(target["type"], "Opaque");
        assert_eq!(target["metadata"]["namespace"], "openshift-cluster-api");
    }

    #[test]
    fn a_source_without_user_data_is_an_error_naming_it() {
        for source in [
            json!({"data": {}}),
            json!({}),
            json!({"data": {"userData": ""}}),
        ] {
            assert_eq!(
                desired_user_data(&source, "openshift-cluster-api")
                    .unwrap_err()
                    .to_string(),
                "Secret openshift-machine-api/worker-user-data: data.userData is not set"
            );
        }
    }
}
