//! The bundle policy: what a provider bundle may contain. Pure; checked on the rendered objects of a
//! provider before anything of it is written.
//!
//! The installer holds the broadest write power in the cluster, and anyone who can write a ConfigMap in
//! its namespace (a compromised provider controller often can) decides what it applies. Without a
//! policy, a bundle is a way to become cluster-admin: bind `cluster-admin`, grant `*` on `*`, rewrite a
//! CRD of the release payload, run a pod as the installer's own ServiceAccount. Every rule below closes
//! one such way, and every real provider bundle satisfies all of them (a test checks each bundle of
//! `../shared/fixtures`).
//!
//! | rule | what a bundle may contain |
//! |---|---|
//! | [`Rule::Kind`] | only the kinds manifests-gen emits ([`capi_manifests::customize::kind_allowed`]) |
//! | [`Rule::Protected`] | none of the installer's or its controllers' objects, no transport ConfigMap |
//! | [`Rule::RbacWildcard`] | no `*` in `apiGroups`, `verbs` or `nonResourceURLs`; `*` resources only inside the provider family's groups |
//! | [`Rule::RbacVerb`] | no `escalate`, `bind` or `impersonate` |
//! | [`Rule::RbacRoleRef`] | bindings only to roles of the same bundle (plus [`PolicyConfig::extra_roles`]) |
//! | [`Rule::RbacSubject`] | subjects only ServiceAccounts of the installer's namespace, never the installer's own |
//! | [`Rule::RbacAggregation`] | no `…/aggregate-to-*` labels outside the family; aggregation only by family labels |
//! | [`Rule::WebhookClient`] | webhooks (admission and CRD conversion) only through Services of the namespace, no `url` |
//! | [`Rule::AdmissionScope`] | webhooks and admission policies only for the family's groups; bindings only to policies of the bundle |
//! | [`Rule::CrdGroup`] | CRDs only in the family's groups (`cluster.x-k8s.io` and `*.cluster.x-k8s.io`, plus [`PolicyConfig::extra_groups`]) |
//! | [`Rule::WorkloadIdentity`] | pods only as a ServiceAccount of the bundle (or `default`) |
//! | [`Rule::WorkloadHostAccess`] | no host network/PID/IPC, privileged containers or hostPath volumes |
//!
//! A bundle that breaks rules gets one [`Violation`] per problem, each naming the source (ConfigMap),
//! the document index, the object and the rule.

pub mod protected;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use capi_apply::ObjectKey;
use kube::api::DynamicObject;
use serde_json::Value;

pub use protected::Protected;

/// The installer's leader-election Lease (also covered by the `capi-installer` name prefix).
pub const LEADER_LEASE: &str = "capi-installer-leader";

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
    RbacRoleRef,
    RbacSubject,
    RbacAggregation,
    WebhookClient,
    AdmissionScope,
    CrdGroup,
    WorkloadIdentity,
    WorkloadHostAccess,
}

impl Rule {
    pub const ALL: [Rule; 12] = [
        Rule::Kind,
        Rule::Protected,
        Rule::RbacWildcard,
        Rule::RbacVerb,
        Rule::RbacRoleRef,
        Rule::RbacSubject,
        Rule::RbacAggregation,
        Rule::WebhookClient,
        Rule::AdmissionScope,
        Rule::CrdGroup,
        Rule::WorkloadIdentity,
        Rule::WorkloadHostAccess,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Rule::Kind => "allowed-kinds",
            Rule::Protected => "protected-objects",
            Rule::RbacWildcard => "rbac-no-wildcards",
            Rule::RbacVerb => "rbac-no-escalation-verbs",
            Rule::RbacRoleRef => "rbac-bundle-roles-only",
            Rule::RbacSubject => "rbac-namespace-service-accounts-only",
            Rule::RbacAggregation => "rbac-family-aggregation-only",
            Rule::WebhookClient => "webhook-namespace-services-only",
            Rule::AdmissionScope => "admission-family-groups-only",
            Rule::CrdGroup => "crd-family-groups-only",
            Rule::WorkloadIdentity => "workload-bundle-service-accounts-only",
            Rule::WorkloadHostAccess => "workload-no-host-access",
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

/// Every problem of a bundle (never empty).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bundle policy: {} violation(s): {}", .0.len(), .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
pub struct Violations(pub Vec<Violation>);

/// What the policy allows beyond its defaults. Explicit and empty by default: every real provider
/// bundle passes without any of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyConfig {
    /// The installer's namespace: the only one for namespaced objects, binding subjects and webhook
    /// Services.
    pub namespace: String,
    /// API groups, beyond `cluster.x-k8s.io` and its subdomains, that CRDs, `*`-resource RBAC rules and
    /// admission rules may use.
    pub extra_groups: BTreeSet<String>,
    /// Roles outside the bundle that a binding may reference: (`ClusterRole` | `Role`, name).
    pub extra_roles: BTreeSet<(String, String)>,
    pub protected: Protected,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        PolicyConfig::installer(capi_manifests::TARGET_NAMESPACE)
    }
}

impl PolicyConfig {
    pub fn new(namespace: impl Into<String>, protected: Protected) -> Self {
        PolicyConfig {
            namespace: namespace.into(),
            extra_groups: BTreeSet::new(),
            extra_roles: BTreeSet::new(),
            protected,
        }
    }

    /// The installer's policy in `namespace`: nothing allowed beyond the defaults, and every object of
    /// the installer and its controllers protected (its run-time objects included).
    pub fn installer(namespace: &str) -> Self {
        PolicyConfig::new(
            namespace,
            Protected::installer(namespace, crate::config::INVENTORY_CONFIGMAP, LEADER_LEASE),
        )
    }

    /// Whether `group` belongs to the provider family (or was allowed explicitly).
    pub fn family_group(&self, group: &str) -> bool {
        in_family(group) || self.extra_groups.contains(group)
    }
}

/// `cluster.x-k8s.io` or a subdomain of it.
fn in_family(domain: &str) -> bool {
    domain == FAMILY_GROUP
        || domain
            .strip_suffix(FAMILY_GROUP)
            .is_some_and(|rest| rest.ends_with('.'))
}

/// Checks a whole bundle. `Ok` when every object satisfies every rule; otherwise every violation, in
/// document order.
pub fn check(objects: &[BundleObject<'_>], config: &PolicyConfig) -> Result<(), Violations> {
    let bundle = Bundle::index(objects);
    let mut out = Vec::new();
    for o in objects {
        let Some(key) = capi_apply::key_of(o.object) else {
            // Objects without identity are refused by planning, with their own message.
            continue;
        };
        let mut v = |rule: Rule, detail: String| {
            out.push(Violation {
                origin: o.origin.clone(),
                object: key.clone(),
                rule,
                detail,
            })
        };
        check_object(&key, o.object, config, &bundle, &mut v);
    }
    out.sort_by(|a, b| a.origin.cmp(&b.origin));
    if out.is_empty() {
        Ok(())
    } else {
        Err(Violations(out))
    }
}

/// What the other rules need to know about the bundle as a whole.
#[derive(Default)]
struct Bundle {
    /// (kind, namespace, name) of the roles the bundle defines.
    roles: BTreeSet<(String, Option<String>, String)>,
    service_accounts: BTreeSet<(Option<String>, String)>,
    admission_policies: BTreeSet<String>,
}

impl Bundle {
    fn index(objects: &[BundleObject<'_>]) -> Self {
        let mut b = Bundle::default();
        for o in objects {
            let Some(key) = capi_apply::key_of(o.object) else {
                continue;
            };
            match (key.group.as_str(), key.kind.as_str()) {
                ("rbac.authorization.k8s.io", "ClusterRole" | "Role") => {
                    b.roles.insert((key.kind, key.namespace, key.name));
                }
                ("", "ServiceAccount") => {
                    b.service_accounts.insert((key.namespace, key.name));
                }
                ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => {
                    b.admission_policies.insert(key.name);
                }
                _ => {}
            }
        }
        b
    }
}

type Report<'a> = dyn FnMut(Rule, String) + 'a;

fn check_object(
    key: &ObjectKey,
    object: &DynamicObject,
    config: &PolicyConfig,
    bundle: &Bundle,
    v: &mut Report<'_>,
) {
    if !capi_manifests::customize::kind_allowed(&key.group, &key.kind) {
        v(
            Rule::Kind,
            format!(
                "kind {}/{} is not one that provider bundles contain (CRDs, RBAC, ServiceAccounts, ConfigMaps, Services, Deployments, webhook configurations, admission policies and their bindings)",
                key.api_version(),
                key.kind
            ),
        );
        return;
    }
    protected(key, object, config, v);
    aggregation_labels(object, v);
    let data = &object.data;
    match (key.group.as_str(), key.kind.as_str()) {
        ("rbac.authorization.k8s.io", "ClusterRole" | "Role") => {
            rbac_rules(data, config, v);
            aggregation_rule(data, v);
        }
        ("rbac.authorization.k8s.io", "ClusterRoleBinding" | "RoleBinding") => {
            role_ref(key, data, config, bundle, v);
            subjects(data, config, v);
        }
        (
            "admissionregistration.k8s.io",
            "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration",
        ) => webhook_configuration(data, config, v),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => {
            admission_policy(data, config, v)
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding") => {
            admission_policy_binding(data, bundle, v)
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => crd(data, config, v),
        ("apps", "Deployment") => {
            if let Some(pod) = data.pointer("/spec/template/spec") {
                workload(key, pod, config, bundle, v);
            }
        }
        _ => {}
    }
}

/// The installer's own objects and transport ConfigMaps, whatever the kind.
fn protected(key: &ObjectKey, object: &DynamicObject, config: &PolicyConfig, v: &mut Report<'_>) {
    if let Some(why) = config.protected.reason(key) {
        v(
            Rule::Protected,
            format!("never written from a bundle: {why}"),
        );
    }
    let labels = object.metadata.labels.as_ref();
    if labels.is_some_and(|l| l.contains_key(capi_manifests::transport::LABEL_NAME)) {
        v(
            Rule::Protected,
            format!(
                "carries label {}: only the release payload writes transport ConfigMaps",
                capi_manifests::transport::LABEL_NAME
            ),
        );
    }
}

/// `<prefix>/aggregate-to-*` labels outside the family, on any object (a label does its harm on a
/// ClusterRole, but it is refused wherever it is, as no provider needs it).
fn aggregation_labels(object: &DynamicObject, v: &mut Report<'_>) {
    let labels = object.metadata.labels.as_ref();
    for label in labels.into_iter().flat_map(|l| l.keys()) {
        if let Some((prefix, name)) = label.split_once('/')
            && name.starts_with("aggregate-to-")
            && !in_family(prefix)
        {
            v(
                Rule::RbacAggregation,
                format!(
                    "label {label} would add this role to roles outside Cluster API (e.g. every admin, edit or view role of the cluster)"
                ),
            );
        }
    }
}

fn webhook_configuration(data: &Value, config: &PolicyConfig, v: &mut Report<'_>) {
    for (i, hook) in items(data.get("webhooks")) {
        let name = hook.get("name").and_then(Value::as_str).unwrap_or("");
        let at = format!("webhooks[{i}] ({name})");
        client_config(hook.get("clientConfig"), &at, config, v);
        for (j, rule) in items(hook.get("rules")) {
            admission_groups(rule, &format!("{at}.rules[{j}]"), config, v);
        }
    }
}

fn admission_policy(data: &Value, config: &PolicyConfig, v: &mut Report<'_>) {
    let rules = data.pointer("/spec/matchConstraints/resourceRules");
    if rules.is_none() {
        v(
            Rule::AdmissionScope,
            "spec.matchConstraints.resourceRules is missing: the policy must name the resources it applies to".into(),
        );
    }
    for (j, rule) in items(rules) {
        admission_groups(
            rule,
            &format!("spec.matchConstraints.resourceRules[{j}]"),
            config,
            v,
        );
    }
}

fn admission_policy_binding(data: &Value, bundle: &Bundle, v: &mut Report<'_>) {
    let policy = data
        .pointer("/spec/policyName")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !bundle.admission_policies.contains(policy) {
        v(
            Rule::AdmissionScope,
            format!("spec.policyName {policy:?} is not a ValidatingAdmissionPolicy of this bundle"),
        );
    }
}

fn crd(data: &Value, config: &PolicyConfig, v: &mut Report<'_>) {
    let group = data
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !config.family_group(group) {
        v(
            Rule::CrdGroup,
            format!(
                "spec.group {group:?} is not a Cluster API group ({FAMILY_GROUP} or *.{FAMILY_GROUP}) nor an allowed extra group"
            ),
        );
    }
    if let Some(webhook) = data.pointer("/spec/conversion/webhook") {
        client_config(
            webhook.get("clientConfig"),
            "spec.conversion.webhook",
            config,
            v,
        );
    }
}

/// The entries of a list field, with their index; nothing when absent or not a list.
fn items(v: Option<&Value>) -> impl Iterator<Item = (usize, &Value)> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
}

fn strings(v: Option<&Value>) -> Vec<&str> {
    items(v).filter_map(|(_, s)| s.as_str()).collect()
}

fn rbac_rules(data: &Value, config: &PolicyConfig, v: &mut Report<'_>) {
    for (i, rule) in items(data.get("rules")) {
        let at = format!("rules[{i}]");
        let groups = strings(rule.get("apiGroups"));
        let verbs = strings(rule.get("verbs"));
        if groups.contains(&"*") {
            v(
                Rule::RbacWildcard,
                format!("{at}.apiGroups contains \"*\" (every API group, present and future)"),
            );
        }
        if verbs.contains(&"*") {
            v(
                Rule::RbacWildcard,
                format!("{at}.verbs contains \"*\" (includes escalate, bind and impersonate)"),
            );
        }
        if strings(rule.get("nonResourceURLs")).contains(&"*") {
            v(
                Rule::RbacWildcard,
                format!("{at}.nonResourceURLs contains \"*\""),
            );
        }
        if strings(rule.get("resources")).contains(&"*") {
            let outside: Vec<&str> = groups
                .iter()
                .copied()
                .filter(|g| *g != "*" && !config.family_group(g))
                .collect();
            if !outside.is_empty() {
                v(
                    Rule::RbacWildcard,
                    format!(
                        "{at}.resources contains \"*\" in API groups outside Cluster API: {}",
                        quoted(&outside)
                    ),
                );
            }
        }
        let escalating: Vec<&str> = verbs
            .iter()
            .copied()
            .filter(|verb| matches!(*verb, "escalate" | "bind" | "impersonate"))
            .collect();
        if !escalating.is_empty() {
            v(
                Rule::RbacVerb,
                format!(
                    "{at}.verbs contains {}: a provider must not grant more than it holds or act as someone else",
                    quoted(&escalating)
                ),
            );
        }
    }
}

fn aggregation_rule(data: &Value, v: &mut Report<'_>) {
    let Some(rule) = data.get("aggregationRule").filter(|r| !r.is_null()) else {
        return;
    };
    let selectors: Vec<(usize, &Value)> = items(rule.get("clusterRoleSelectors")).collect();
    if selectors.is_empty() {
        v(
            Rule::RbacAggregation,
            "aggregationRule without clusterRoleSelectors".into(),
        );
    }
    for (i, selector) in selectors {
        let at = format!("aggregationRule.clusterRoleSelectors[{i}]");
        let mut positive = 0;
        let mut keys = Vec::new();
        if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
            positive += labels.len();
            keys.extend(labels.keys().map(String::as_str));
        }
        for (_, expr) in items(selector.get("matchExpressions")) {
            if let Some(k) = expr.get("key").and_then(Value::as_str) {
                keys.push(k);
            }
            if matches!(
                expr.get("operator").and_then(Value::as_str),
                Some("In" | "Exists")
            ) {
                positive += 1;
            }
        }
        let foreign: Vec<&str> = keys
            .into_iter()
            .filter(|k| {
                !k.split_once('/')
                    .is_some_and(|(prefix, _)| in_family(prefix))
            })
            .collect();
        if !foreign.is_empty() {
            v(
                Rule::RbacAggregation,
                format!(
                    "{at} selects by labels outside Cluster API ({}): it would aggregate roles it does not own",
                    quoted(&foreign)
                ),
            );
        }
        if positive == 0 {
            v(
                Rule::RbacAggregation,
                format!(
                    "{at} selects every ClusterRole that lacks a label (no matchLabels, In or Exists requirement)"
                ),
            );
        }
    }
}

fn role_ref(
    key: &ObjectKey,
    data: &Value,
    config: &PolicyConfig,
    bundle: &Bundle,
    v: &mut Report<'_>,
) {
    let kind = data
        .pointer("/roleRef/kind")
        .and_then(Value::as_str)
        .unwrap_or("");
    let name = data
        .pointer("/roleRef/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let namespace = (kind == "Role").then(|| key.namespace.clone()).flatten();
    let in_bundle = bundle
        .roles
        .contains(&(kind.to_string(), namespace, name.to_string()));
    if !in_bundle
        && !config
            .extra_roles
            .contains(&(kind.to_string(), name.to_string()))
    {
        v(
            Rule::RbacRoleRef,
            format!(
                "roleRef {kind} {name} is not defined in this bundle (nor allowed explicitly): a provider binds only the roles it ships"
            ),
        );
    }
}

fn subjects(data: &Value, config: &PolicyConfig, v: &mut Report<'_>) {
    for (i, s) in items(data.get("subjects")) {
        let kind = s.get("kind").and_then(Value::as_str).unwrap_or("");
        let name = s.get("name").and_then(Value::as_str).unwrap_or("");
        let namespace = s.get("namespace").and_then(Value::as_str).unwrap_or("");
        let at = format!("subjects[{i}] ({kind} {name})");
        if kind != "ServiceAccount" {
            v(
                Rule::RbacSubject,
                format!("{at}: only ServiceAccounts may be bound, never users or groups"),
            );
            continue;
        }
        if namespace != config.namespace {
            v(
                Rule::RbacSubject,
                format!(
                    "{at}: namespace {namespace:?}; only ServiceAccounts of {:?} may be bound",
                    config.namespace
                ),
            );
        } else if let Some(why) = config.protected.service_account(namespace, name) {
            v(Rule::RbacSubject, format!("{at}: {why}"));
        }
    }
}

fn client_config(cc: Option<&Value>, at: &str, config: &PolicyConfig, v: &mut Report<'_>) {
    let Some(cc) = cc else { return };
    if cc.get("url").is_some_and(|u| !u.is_null()) {
        v(
            Rule::WebhookClient,
            format!(
                "{at}.clientConfig.url is set: webhooks must be served by a Service of {:?}",
                config.namespace
            ),
        );
    }
    let Some(service) = cc.get("service").filter(|s| !s.is_null()) else {
        return;
    };
    let namespace = service
        .get("namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    let name = service.get("name").and_then(Value::as_str).unwrap_or("");
    if namespace != config.namespace {
        v(
            Rule::WebhookClient,
            format!(
                "{at}.clientConfig.service is {namespace}/{name}; only Services of {:?} may serve webhooks",
                config.namespace
            ),
        );
    } else if let Some(why) =
        config
            .protected
            .reason(&ObjectKey::new("", "v1", "Service", Some(namespace), name))
    {
        v(
            Rule::WebhookClient,
            format!("{at}.clientConfig.service {namespace}/{name}: {why}"),
        );
    }
}

fn admission_groups(rule: &Value, at: &str, config: &PolicyConfig, v: &mut Report<'_>) {
    let groups = strings(rule.get("apiGroups"));
    let outside: Vec<&str> = groups
        .iter()
        .copied()
        .filter(|g| !config.family_group(g))
        .collect();
    if groups.is_empty() || !outside.is_empty() {
        v(
            Rule::AdmissionScope,
            format!(
                "{at}.apiGroups {}: admission by a provider is limited to Cluster API groups (a webhook on pods or secrets could change or block every workload)",
                if groups.is_empty() {
                    "is empty".to_string()
                } else {
                    format!("contains {}", quoted(&outside))
                }
            ),
        );
    }
}

fn workload(
    key: &ObjectKey,
    pod: &Value,
    config: &PolicyConfig,
    bundle: &Bundle,
    v: &mut Report<'_>,
) {
    let account = pod
        .get("serviceAccountName")
        .or_else(|| pod.get("serviceAccount"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or("default");
    let namespace = key.namespace.clone();
    if let Some(why) = config
        .protected
        .service_account(namespace.as_deref().unwrap_or(""), account)
    {
        v(
            Rule::WorkloadIdentity,
            format!("spec.template.spec.serviceAccountName {account}: {why}"),
        );
    } else if account != "default"
        && !bundle
            .service_accounts
            .contains(&(namespace, account.to_string()))
    {
        v(
            Rule::WorkloadIdentity,
            format!(
                "spec.template.spec.serviceAccountName {account} is not a ServiceAccount of this bundle: its pods would run with another component's permissions"
            ),
        );
    }
    for field in ["hostNetwork", "hostPID", "hostIPC"] {
        if pod.get(field).and_then(Value::as_bool) == Some(true) {
            v(
                Rule::WorkloadHostAccess,
                format!("spec.template.spec.{field} is true"),
            );
        }
    }
    for (i, volume) in items(pod.get("volumes")) {
        if volume.get("hostPath").is_some_and(|h| !h.is_null()) {
            let name = volume.get("name").and_then(Value::as_str).unwrap_or("");
            v(
                Rule::WorkloadHostAccess,
                format!("spec.template.spec.volumes[{i}] ({name}) is a hostPath volume"),
            );
        }
    }
    let containers: BTreeMap<&str, &Value> = [
        ("containers", pod.get("containers")),
        ("initContainers", pod.get("initContainers")),
        ("ephemeralContainers", pod.get("ephemeralContainers")),
    ]
    .into_iter()
    .filter_map(|(k, c)| c.map(|c| (k, c)))
    .collect();
    for (list, value) in containers {
        for (i, c) in items(Some(value)) {
            if c.pointer("/securityContext/privileged")
                .and_then(Value::as_bool)
                == Some(true)
            {
                let name = c.get("name").and_then(Value::as_str).unwrap_or("");
                v(
                    Rule::WorkloadHostAccess,
                    format!("spec.template.spec.{list}[{i}] ({name}) is privileged"),
                );
            }
        }
    }
}

fn quoted(items: &[&str]) -> String {
    items
        .iter()
        .map(|s| format!("{s:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests;
