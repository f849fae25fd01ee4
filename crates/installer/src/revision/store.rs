//! The revisions ConfigMaps in the cluster: watched (a `capi-installer rollback` request wakes the
//! installer), what this process wrote kept in memory (authoritative while it runs, as for the
//! inventory), written with server-side apply only when they change.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams};
use kube::runtime::reflector;

use super::{DEFAULT_KEPT, LABEL, RevisionLog, RollbackRequest, Stored, configmap_name};
use crate::names::FIELD_MANAGER;
use crate::source::SourceId;

pub(crate) struct Revisions {
    client: Client,
    namespace: String,
    live: reflector::Store<ConfigMap>,
    memory: Mutex<HashMap<SourceId, Stored>>,
    /// Revisions whose content is kept besides the current one.
    kept: usize,
}

impl Revisions {
    /// `live` is a watch of the ConfigMaps labelled [`LABEL`] in `namespace` (the caller runs it).
    pub(crate) fn new(client: Client, namespace: &str, live: reflector::Store<ConfigMap>) -> Self {
        Revisions {
            client,
            namespace: namespace.to_string(),
            live,
            memory: Mutex::default(),
            kept: DEFAULT_KEPT,
        }
    }

    fn live(&self, id: &SourceId) -> Option<std::sync::Arc<ConfigMap>> {
        self.live
            .get(&reflector::ObjectRef::new(&configmap_name(id)).within(&self.namespace))
    }

    /// The revisions of `id` (memory, else the stored ones, else none yet) and the rollback request
    /// the ConfigMap holds now. A log that cannot be read starts afresh (logged): rollback needs
    /// trustworthy history, and a corrupt one must not block the provider.
    pub(crate) fn load(&self, id: &SourceId, source: &str, provider: &str) -> Stored {
        let live = self.live(id).map(|cm| Stored::from_configmap(&cm));
        let request: Option<RollbackRequest> = match &live {
            Some(Ok(stored)) => stored.request.clone(),
            _ => None,
        };
        if let Some(mut remembered) = self.memory.lock().expect("revisions").get(id).cloned() {
            remembered.request = request;
            return remembered;
        }
        match live {
            Some(Ok(stored)) => stored,
            Some(Err(e)) => {
                tracing::warn!(source = %id, error = %e, "unreadable revisions; starting a new history");
                Stored {
                    log: RevisionLog::new(source, provider),
                    ..Default::default()
                }
            }
            None => Stored {
                log: RevisionLog::new(source, provider),
                ..Default::default()
            },
        }
    }

    /// The rollback request for `id` as the watch holds it, unparsed: what tells a pass that it
    /// changed.
    pub(crate) fn request_text(&self, id: &SourceId) -> Option<String> {
        self.live(id)?
            .data
            .as_ref()?
            .get(super::KEY_ROLLBACK)
            .cloned()
    }

    /// The hold of `id`'s revisions (a rollback serving an earlier revision instead of the
    /// source's content), as a token: what tells a pass that a rollback was decided, so that it
    /// reconciles the provider at once.
    pub(crate) fn hold_text(&self, id: &SourceId) -> Option<String> {
        let held = |s: &Stored| {
            s.log
                .hold
                .as_ref()
                .map(|h| format!("{} {} {:?}", h.digest, h.serving, h.failed))
        };
        if let Some(s) = self.memory.lock().expect("revisions").get(id) {
            return held(s);
        }
        // The log alone: the contents (up to hundreds of kB) say nothing of the hold.
        let cm = self.live(id)?;
        let name = cm.metadata.name.as_deref().unwrap_or_default();
        let data = cm.data.as_ref()?;
        Stored::decode(name, data, &BTreeMap::new())
            .ok()
            .and_then(|s| held(&s))
    }

    /// The current revision of `id`, as last recorded.
    pub(crate) fn current(&self, id: &SourceId) -> Option<u32> {
        if let Some(s) = self.memory.lock().expect("revisions").get(id) {
            return s.log.current;
        }
        self.live(id)
            .and_then(|cm| Stored::from_configmap(&cm).ok())
            .and_then(|s| s.log.current)
    }

    /// Writes `stored` when it differs from what this process last wrote (the content that does not
    /// fit the ConfigMap is dropped first, see [`capi_status::revision::select_contents`]).
    pub(crate) async fn save(&self, id: &SourceId, stored: &mut Stored) -> Result<(), kube::Error> {
        let (data, binary) = stored.encode(self.kept);
        let same = |m: &Stored| m.log == stored.log && m.contents == stored.contents;
        let remembered = self.memory.lock().expect("revisions").get(id).map(same);
        // After a restart nothing is remembered: what is stored counts, so that a new process writes
        // nothing when nothing changed.
        let unchanged = remembered.unwrap_or_else(|| {
            self.live(id)
                .and_then(|cm| Stored::from_configmap(&cm).ok())
                .is_some_and(|live| same(&live))
        });
        if unchanged {
            if remembered.is_none() {
                self.remember(id, stored);
            }
            return Ok(());
        }
        let name = configmap_name(id);
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(self.namespace.clone()),
                labels: Some(BTreeMap::from([(LABEL.to_string(), "true".to_string())])),
                ..Default::default()
            },
            data: Some(data),
            binary_data: Some(
                binary
                    .into_iter()
                    .map(|(k, v)| (k, ByteString(v)))
                    .collect(),
            ),
            ..Default::default()
        };
        let mut body = serde_json::to_value(&cm).expect("a ConfigMap serializes");
        body["apiVersion"] = "v1".into();
        body["kind"] = "ConfigMap".into();
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), &self.namespace);
        api.patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&body),
        )
        .await?;
        tracing::info!(source = %id, revisions = stored.log.revisions.len(), current = ?stored.log.current, "revisions recorded");
        self.remember(id, stored);
        Ok(())
    }

    fn remember(&self, id: &SourceId, stored: &Stored) {
        let mut remembered = stored.clone();
        remembered.request = None;
        self.memory
            .lock()
            .expect("revisions")
            .insert(id.clone(), remembered);
    }

    /// Deletes the revisions of a source that is gone (uninstalled).
    pub(crate) async fn remove(&self, id: &SourceId) -> Result<(), kube::Error> {
        self.memory.lock().expect("revisions").remove(id);
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), &self.namespace);
        match api
            .delete(&configmap_name(id), &DeleteParams::default())
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.is_not_found() => Ok(()),
            Err(e) => Err(e),
        }
    }
}
