//! Shared helpers for the integration tests: a real control plane, a client with a user agent that
//! tells our requests apart in the audit log, and the test bundle.

#![allow(dead_code)]

use std::time::Duration;

use capi_apply::{
    Applier, Inventory, KindResolver, LiveCache, Namespaces, OwnershipPolicy, Plan, plan,
};
use control_plane::{AuditEvent, ControlPlane, ControlPlaneOptions, OpenShiftCrds};
use kube::Client;
use kube::api::DynamicObject;

pub const UA: &str = "capi-apply-test/0";
pub const MANAGER: &str = "capi-installer";
pub const LABEL: &str = "app.kubernetes.io/managed-by";

pub async fn control_plane(with_workloads: bool) -> ControlPlane {
    ControlPlane::start(ControlPlaneOptions {
        dir: None,
        with_workloads,
        node: None,
        openshift_crds: OpenShiftCrds::Skip,
    })
    .await
    .expect("control plane starts")
}

/// A client whose requests carry [`UA`].
pub fn engine_client(cp: &ControlPlane) -> Client {
    let mut config = cp.admin_config();
    config
        .headers
        .push((http::header::USER_AGENT, http::HeaderValue::from_static(UA)));
    Client::try_from(config).expect("client")
}

pub fn policy() -> OwnershipPolicy {
    OwnershipPolicy::new(LABEL, MANAGER).adoptable(["cluster-version-operator"])
}

/// The owner's record with everything of `plan` recorded as created by it: what a caller saves before
/// its first write of `plan`.
pub fn recorded(plan: &Plan) -> Inventory {
    Inventory::from_plan("test", plan)
}

/// An owner's record that holds nothing.
pub fn unrecorded() -> Inventory {
    Inventory::new("test")
}

pub fn applier(client: &Client) -> Applier {
    Applier::new(client.clone(), MANAGER, policy())
}

pub fn docs(yaml: &str) -> Vec<DynamicObject> {
    yaml.split("\n---\n")
        .filter(|d| !d.trim().is_empty())
        .map(|d| serde_saphyr::from_str(d).expect("test YAML parses"))
        .collect()
}

pub async fn plan_of(client: &Client, yaml: &str) -> Plan {
    let resolver = KindResolver::discover(client).await.expect("discovery");
    plan(docs(yaml), &resolver).expect("valid plan")
}

pub fn cache_for(client: &Client, plan: &Plan) -> LiveCache {
    let cache = LiveCache::new(client.clone(), &applier(client), Namespaces::All);
    for (r, namespaced) in plan.resources() {
        cache.ensure_watched(&r, namespaced);
    }
    cache
}

/// Writes in the audit log from our user agent after the first `skip` events.
pub fn our_writes(cp: &ControlPlane, skip: usize) -> Vec<AuditEvent> {
    cp.audit_events()
        .expect("audit log")
        .into_iter()
        .skip(skip)
        .filter(|e| e.user_agent.as_deref() == Some(UA) && e.is_write())
        .collect()
}

pub fn describe(events: &[AuditEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| format!("{} {}", e.verb, e.request_uri))
        .collect()
}

/// Polls `f` until it returns `Some`, at most `timeout`.
pub async fn eventually<T, F: FnMut() -> Option<T>>(timeout: Duration, mut f: F) -> Option<T> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
