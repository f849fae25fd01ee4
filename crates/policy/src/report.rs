//! The policy's vocabulary, shared by every check: the rules, where an object came from, what a
//! violation says, and how a check reports one. Pure data, naming nothing else of the policy.

use std::fmt;

use capi_apply::ObjectKey;
use kube_core::DynamicObject;
use serde_json::Value;

/// The API groups of the Cluster API provider family: `cluster.x-k8s.io` and its subdomains.
pub const FAMILY_GROUP: &str = "cluster.x-k8s.io";

/// One rule of the policy. `Display` is the stable name used in status messages and in
/// `docs/maintainers/bundles.md` (a test compares them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    Kind,
    Protected,
    RbacWildcard,
    RbacVerb,
    RbacCeiling,
    RbacRoleRef,
    RbacSubject,
    RbacAggregation,
    WebhookClient,
    AdmissionScope,
    CrdGroup,
    ServiceType,
    WorkloadIdentity,
    WorkloadHostAccess,
    WorkloadPrivilege,
    WorkloadVolumes,
    WorkloadImage,
    ClusterProxy,
    Adoption,
    Reserved,
    StoredAsWritten,
    References,
    ProvidersApart,
    FieldPath,
    FieldValue,
}

impl Rule {
    #[cfg(test)]
    pub const ALL: [Rule; 25] = [
        Rule::Kind,
        Rule::Protected,
        Rule::RbacWildcard,
        Rule::RbacVerb,
        Rule::RbacCeiling,
        Rule::RbacRoleRef,
        Rule::RbacSubject,
        Rule::RbacAggregation,
        Rule::WebhookClient,
        Rule::AdmissionScope,
        Rule::CrdGroup,
        Rule::ServiceType,
        Rule::WorkloadIdentity,
        Rule::WorkloadHostAccess,
        Rule::WorkloadPrivilege,
        Rule::WorkloadVolumes,
        Rule::WorkloadImage,
        Rule::ClusterProxy,
        Rule::Adoption,
        Rule::Reserved,
        Rule::StoredAsWritten,
        Rule::References,
        Rule::ProvidersApart,
        Rule::FieldPath,
        Rule::FieldValue,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Rule::Kind => "allowed-kinds",
            Rule::Protected => "protected-objects",
            Rule::RbacWildcard => "rbac-no-wildcards",
            Rule::RbacVerb => "rbac-no-escalation-verbs",
            Rule::RbacCeiling => "rbac-ceiling",
            Rule::RbacRoleRef => "rbac-bundle-roles-only",
            Rule::RbacSubject => "rbac-namespace-service-accounts-only",
            Rule::RbacAggregation => "rbac-family-aggregation-only",
            Rule::WebhookClient => "webhook-namespace-services-only",
            Rule::AdmissionScope => "admission-family-groups-only",
            Rule::CrdGroup => "crd-family-groups-only",
            Rule::ServiceType => "service-cluster-ip-only",
            Rule::WorkloadIdentity => "workload-bundle-service-accounts-only",
            Rule::WorkloadHostAccess => "workload-no-host-access",
            Rule::WorkloadPrivilege => "workload-no-privilege",
            Rule::WorkloadVolumes => "workload-volume-kinds",
            Rule::WorkloadImage => "workload-payload-images-only",
            Rule::ClusterProxy => "workload-no-proxy-of-its-own",
            Rule::Adoption => "adopt-existing-bounded",
            Rule::Reserved => "reserved-names-and-labels",
            Rule::StoredAsWritten => "stored-as-written",
            Rule::References => "references-own-objects-only",
            Rule::ProvidersApart => "providers-keep-apart",
            Rule::FieldPath => "fields-in-real-bundles-only",
            Rule::FieldValue => "field-values-in-real-bundles-only",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a rendered object came from: its source (e.g. `ConfigMap openshift-cluster-api/aws`) and the
/// 0-based index of its document in the components.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Origin {
    pub source: String,
    pub document: usize,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, document {}", self.source, self.document)
    }
}

/// One rendered object of a bundle, with where it came from.
#[derive(Debug, Clone, Copy)]
pub struct BundleObject<'a> {
    pub origin: &'a Origin,
    pub object: &'a DynamicObject,
}

/// One problem with a bundle.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin} ({object}): rule {rule}: {detail}")]
pub struct Violation {
    pub origin: Origin,
    pub object: ObjectKey,
    pub rule: Rule,
    pub detail: String,
}

/// Every problem of a bundle (never empty), one per line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bundle policy: {} violation(s):\n{}", .0.len(), .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
pub struct Violations(pub Vec<Violation>);

/// `cluster.x-k8s.io` or a subdomain of it.
pub(super) fn in_family(domain: &str) -> bool {
    domain == FAMILY_GROUP
        || domain
            .strip_suffix(FAMILY_GROUP)
            .is_some_and(|rest| rest.ends_with('.'))
}

/// Which reading of an object a rule judges: the bundle's text, or the object as the API server
/// would store it (the preflight's dry-run answer; see [`super::stored`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    Text,
    Stored,
}

pub(super) type Report<'a> = dyn FnMut(Rule, String) + 'a;

/// The entries of a list field, with their index; nothing when absent or not a list.
pub(super) fn items(v: Option<&Value>) -> impl Iterator<Item = (usize, &Value)> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
}

/// `items`, each quoted, comma-separated (for messages).
pub(super) fn quoted(items: &[&str]) -> String {
    items
        .iter()
        .map(|s| format!("{s:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}
