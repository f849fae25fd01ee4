//! Kubernetes Events on `ClusterOperator/cluster-api`.

use capi_apply::ObjectKey;
use capi_openshift::cluster_operator;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};

use crate::source::SourceId;

/// Publishes Events regarding the ClusterOperator. A failure to publish is logged, never fatal.
pub(crate) struct Events {
    recorder: Recorder,
    namespace: String,
}

impl Events {
    pub(crate) fn new(client: Client, instance: Option<String>, namespace: &str) -> Self {
        Events {
            recorder: Recorder::new(
                client,
                Reporter {
                    controller: "capi-installer".into(),
                    instance,
                },
            ),
            namespace: namespace.to_string(),
        }
    }

    /// The related object of an Event about a source: its ConfigMap, or for a profile (no API object)
    /// a reference that names it, so that the Events of different providers are not folded into one
    /// series.
    pub(crate) fn source_reference(&self, id: &SourceId) -> ObjectReference {
        match id {
            SourceId::Profile(p) => ObjectReference {
                kind: Some("Profile".into()),
                name: Some(format!("{}/{}", p.image, p.profile)),
                ..Default::default()
            },
            SourceId::ConfigMap(name) => ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("ConfigMap".into()),
                namespace: Some(self.namespace.clone()),
                name: Some(name.clone()),
                ..Default::default()
            },
        }
    }

    /// Records an Event. The recorder folds events with the same reason, action and related object
    /// into one series (keeping the first note), so `action` and `related` must tell different steps
    /// apart: the phase, and the source or object concerned.
    pub(crate) async fn publish(
        &self,
        type_: EventType,
        reason: &str,
        action: &str,
        related: Option<ObjectReference>,
        note: String,
    ) {
        let mut note = note;
        if note.len() > 1000 {
            let mut cut = 1000;
            while !note.is_char_boundary(cut) {
                cut -= 1;
            }
            note.truncate(cut);
        }
        let event = Event {
            type_,
            reason: reason.into(),
            note: Some(note),
            action: action.into(),
            secondary: related,
        };
        if let Err(e) = self
            .recorder
            .publish(&event, &cluster_operator::reference())
            .await
        {
            tracing::debug!(error = %e, "cannot record event");
        }
    }
}

/// The related object of an Event about one applied or pruned object.
pub(crate) fn object_reference(key: &ObjectKey) -> ObjectReference {
    ObjectReference {
        api_version: Some(key.api_version()),
        kind: Some(key.kind.clone()),
        namespace: key.namespace.clone(),
        name: Some(key.name.clone()),
        ..Default::default()
    }
}
