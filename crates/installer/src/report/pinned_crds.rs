//! The CRDs the `CompatibilityRequirement`s pin, each watched whole by name (the installer's cache of
//! CRDs keeps them without their schemas, and only its own providers' changes wake a pass): a change of
//! one by anyone — an administrator, another operator, the installer itself — wakes a pass, so that
//! each requirement's `Compatible` condition follows the live CRD, and the status is judged against the
//! watch's copy without a read per pass. Watches start when a requirement names a CRD and end when none
//! does.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};

use capi_runtime::optional_watch::{OptionalKind, Wake};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::DynamicObject;
use kube::core::ApiResource;
use tokio::sync::Notify;

/// One watch per pinned CRD name.
#[derive(Default)]
pub(crate) struct PinnedCrds {
    watches: Mutex<BTreeMap<String, Watch>>,
}

struct Watch {
    crd: OptionalKind,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What a pinned CRD's watch knows.
pub(crate) enum Pinned {
    /// Not listed yet.
    Unknown,
    /// Listed: the CRD, or `None` when there is none.
    Known(Option<Arc<DynamicObject>>),
}

impl PinnedCrds {
    /// Watches exactly the CRDs `names`: those not watched yet are started (their changes waking
    /// `wake`), those no longer named are stopped.
    pub(crate) fn follow(&self, client: &Client, names: &BTreeSet<&str>, wake: &Arc<Notify>) {
        let mut watches = self.watches.lock().unwrap_or_else(PoisonError::into_inner);
        watches.retain(|name, _| names.contains(name.as_str()));
        for name in names {
            if watches.contains_key(*name) {
                continue;
            }
            let (crd, task) = OptionalKind::start_named(
                client.clone(),
                &ApiResource::erase::<CustomResourceDefinition>(&()),
                name,
                "a CRD a CompatibilityRequirement pins",
                Wake::OnChange(wake.clone()),
            );
            watches.insert(name.to_string(), Watch { crd, task });
        }
    }

    /// The CRD `name` as its watch has it.
    pub(crate) fn get(&self, name: &str) -> Pinned {
        let watches = self.watches.lock().unwrap_or_else(PoisonError::into_inner);
        match watches.get(name).and_then(|w| w.crd.objects()) {
            None => Pinned::Unknown,
            Some(objects) => Pinned::Known(objects.into_iter().next()),
        }
    }
}
