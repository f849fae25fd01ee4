//! The bundle policy: what a provider bundle may contain. Pure; checked on the rendered objects of a
//! provider before anything of it is written (by `capi-bundle`'s `prepare`, which re-exports this crate
//! as `capi_bundle::policy`).
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
//! | [`Rule::RbacCeiling`] | every (group, resource, verb) a role grants inside the [`ceiling`]: ClusterRoles against what may be granted cluster-wide, Roles against what may be granted in the namespace; no non-resource URLs; aggregated ClusterRoles only of the ceiling's names |
//! | [`Rule::RbacRoleRef`] | bindings only to roles of the same bundle (plus [`PolicyConfig::extra_roles`]) |
//! | [`Rule::RbacSubject`] | subjects only ServiceAccounts of the installer's namespace, never the installer's own |
//! | [`Rule::RbacAggregation`] | no `…/aggregate-to-*` labels outside the family; aggregation only by family labels |
//! | [`Rule::WebhookClient`] | webhooks (admission and CRD conversion) only through Services of the same bundle, no `url` |
//! | [`Rule::AdmissionScope`] | webhooks and admission policies only for the family's groups; policy parameters only of family kinds (and the Infrastructure that the generated protection policy reads); bindings only to policies of the bundle |
//! | [`Rule::StoredAsWritten`] | nothing the API server stores differently: no number written as a float outside a CRD's schema, no deprecated alias (`serviceAccount`); and every rule holds on each object as the preflight's dry-run says it would be stored ([`stored`]) |
//! | [`Rule::References`] | pods read only Secrets their own Services' serving certificates become, their provider's credentials Secret, and ConfigMaps of the bundle; a Service asks service-ca for no credentials or installer Secret ([`references`]) |
//! | [`Rule::ProvidersApart`] | per provider ([`provider_bound`]): Services select on its own provider label, pods carry no other provider's nor a release Service's labels, admission only on its own CRDs' resources; and nothing of another provider: no Secret it reads or asks for, no pod labels its Services select, no Service selecting its pods, no admission on its resources or the cluster's CRDs' ([`references`]), no role naming its CRDs; its aggregated roles and aggregation labels ([`AGGREGATED_ROLES`], [`AGGREGATION_LABELS`]) are its own (rule [`Rule::RbacAggregation`]) |
//! | [`Rule::ServiceType`] | Services only of type ClusterIP, without `externalIPs` |
//! | [`Rule::CrdGroup`] | CRDs only in its own provider's family groups ([`provider_bound::CRD_GROUPS`]) and, there, under its own provider's names ([`provider_bound::CRD_NAME_PREFIXES`]) (`cluster.x-k8s.io` and `*.cluster.x-k8s.io`, plus [`PolicyConfig::extra_groups`]); a release image's own group that nobody else serves ([`PolicyConfig::trusting`]) |
//! | [`Rule::WorkloadIdentity`] | pods only as a ServiceAccount of the bundle (or `default`) |
//! | [`Rule::WorkloadHostAccess`] | no host network/PID/IPC, host ports or hostPath volumes |
//! | [`Rule::WorkloadPrivilege`] | no privileged containers, added capabilities, `runAsUser: 0` or `allowPrivilegeEscalation: true` |
//! | [`Rule::WorkloadVolumes`] | volumes only of the kinds providers use (Secret, ConfigMap, projected, emptyDir, downward API) |
//! | [`Rule::WorkloadImage`] | container images only images of the release payload (after substitution) |
//! | [`Rule::ClusterProxy`] | no proxy variable, `envFrom` or trusted CA bundle of its own: those are the cluster's proxy's ([`crate::proxy`]) |
//! | [`Rule::Adoption`] | `adopt-existing` only on what the release ships for that provider (a release image's profile; else only core's IPAM CRDs), never on a built-in object ([`adoption`]) |
//! | [`Rule::Reserved`] | nothing created under a built-in name (`system:`, the cluster's own objects), with the bootstrapping label, another provider's `cluster.x-k8s.io/provider` value or the policy's own extension labels ([`adoption`]) |
//! | [`Rule::FieldPath`] | per kind, only the field paths real bundles have (the [`fields`] bound; judged on an object no other rule refused) |
//! | [`Rule::FieldValue`] | per kind, the sensitive fields (security contexts, tolerations, priority class, replicas, Service types, admission targets, ...) only with the values real bundles use |
//!
//! A bundle that breaks rules gets one [`Violation`] per problem, each naming the source (ConfigMap),
//! the document index, the object and the rule.

pub mod adoption;
pub mod ceiling;
mod config;
pub mod fields;
mod index;
pub mod names;
pub mod own_crds;
pub mod protected;
pub mod provider_bound;
pub mod proxy;
pub mod references;
mod report;
pub mod schema;
pub mod stored;
mod written;

use std::collections::BTreeSet;

use capi_apply::ObjectKey;
use kube_core::DynamicObject;
use serde_json::Value;

pub use ceiling::Ceiling;
pub use fields::FieldBound;
pub use protected::Protected;
pub use references::Among;
pub use references::Holdings;
pub use stored::Stored;

use ceiling::{Coverage, Scope, strings};
pub use config::{LEADER_LEASE, PolicyConfig};
use index::Bundle;
use provider_bound::CrdName;
pub use report::{BundleObject, FAMILY_GROUP, Origin, Reading, Rule, Violation, Violations};
use report::{Report, in_family, items, quoted};

/// Judging a bundle as trusted as the release: what it brings extends the bound.
impl PolicyConfig {
    /// This policy for a bundle as trusted as the release (a profile read from a release image,
    /// pinned by digest in the images ConfigMap the cluster-version operator writes): what its own
    /// roles grant extends the ceiling and what its own objects have extends the field bound, so a
    /// provider release that needs one more rule or field brings it; and the API groups of its own
    /// CRDs outside the family that nobody else serves ([`own_groups`]) are its own, for its CRDs and
    /// its admission. Every other rule holds as for any bundle (no `*`, `escalate`, `bind` or
    /// `impersonate`, own references, ...).
    pub fn trusting(&self, objects: &[BundleObject<'_>], among: &Among<'_>) -> PolicyConfig {
        let mut config = self.clone();
        let mut fields = FieldBound::default();
        for o in objects {
            fields.add_rendered(o.object);
        }
        config
            .extra_groups
            .extend(own_groups(objects.iter().map(|o| o.object), among));
        config.ceiling = config
            .ceiling
            .with(&Ceiling::granted_by(objects.iter().map(|o| o.object)));
        config.fields = config.fields.with(&fields);
        config
    }
}

/// Domains whose API groups the cluster itself serves or reserves: Kubernetes' (the API server
/// refuses CRDs there without an API review) and OpenShift's.
const CLUSTER_DOMAINS: [&str; 3] = ["k8s.io", "kubernetes.io", "openshift.io"];

/// The API groups outside the family that `objects`' CRDs define and that no other provider of the
/// round nor a CRD of the cluster serves, outside the cluster's own domains: a provider's own API group
/// (an IPAM provider's `ipam.<vendor>`), which only a release image may bring.
fn own_groups<'a>(
    objects: impl IntoIterator<Item = &'a DynamicObject>,
    among: &Among<'_>,
) -> BTreeSet<String> {
    objects
        .into_iter()
        .filter(|o| {
            o.types
                .as_ref()
                .is_some_and(|t| t.kind == "CustomResourceDefinition")
        })
        .filter_map(|o| o.data.pointer("/spec/group").and_then(Value::as_str))
        .filter(|g| !in_family(g) && g.contains('.'))
        .filter(|g| {
            !CLUSTER_DOMAINS
                .iter()
                .any(|d| *g == *d || g.ends_with(&format!(".{d}")))
        })
        .filter(|g| among.holder_of(g, "*").is_none())
        .map(str::to_string)
        .collect()
}

/// Checks a whole bundle. `Ok` when every object satisfies every rule; otherwise every violation, in
/// document order. `payload_images` are the images of the release payload (the values of the images
/// file): the only ones a container may run.
pub fn check(
    objects: &[BundleObject<'_>],
    config: &PolicyConfig,
    payload_images: &BTreeSet<&str>,
    among: &Among<'_>,
) -> Result<(), Violations> {
    if !config.enforce {
        return Ok(());
    }
    // Each provider within its own bound: what its own release grants, not every provider's.
    let own;
    let config = if config.ceiling.providers.is_empty() {
        config
    } else {
        own = config.for_provider(among.provider);
        &own
    };
    let bundle = Bundle::index(objects, payload_images);
    let mut out = Vec::new();
    for o in objects {
        let Some(key) = capi_apply::key_of(o.object) else {
            // Objects without identity are refused by planning, with their own message.
            continue;
        };
        let violation = |rule: Rule, detail: String| Violation {
            origin: o.origin.clone(),
            object: key.clone(),
            rule,
            detail,
        };
        let before = out.len();
        check_object(
            &key,
            o.object,
            config,
            &bundle,
            among,
            Reading::Text,
            &mut |rule, detail| out.push(violation(rule, detail)),
        );
        // An object a rule refused is not judged field by field again: the rule said why.
        if out.len() == before {
            fields::check(
                &key.group,
                &key.kind,
                o.object,
                &config.fields,
                &mut |rule, detail| out.push(violation(rule, detail)),
            );
        }
    }
    out.sort_by(|a, b| a.origin.cmp(&b.origin));
    if out.is_empty() {
        Ok(())
    } else {
        Err(Violations(out))
    }
}

fn check_object(
    key: &ObjectKey,
    object: &DynamicObject,
    config: &PolicyConfig,
    bundle: &Bundle,
    among: &Among<'_>,
    reading: Reading,
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
    aggregation_labels(object, among, v);
    let data = &object.data;
    if reading == Reading::Text {
        written::as_written(key, data, v);
        references::labels_and_selectors(key, data, among, v);
    }
    match (key.group.as_str(), key.kind.as_str()) {
        ("rbac.authorization.k8s.io", "ClusterRole" | "Role") => {
            let scope = match key.kind.as_str() {
                "Role" => Scope::Namespaced,
                _ => Scope::Cluster,
            };
            rbac_rules(data, scope, config, bundle, among, v);
            aggregation_rule(data, among, v);
            if scope == Scope::Cluster {
                aggregated_name(key, data, config, among, v);
            }
        }
        ("rbac.authorization.k8s.io", "ClusterRoleBinding" | "RoleBinding") => {
            role_ref(key, data, config, bundle, v);
            subjects(data, config, v);
        }
        (
            "admissionregistration.k8s.io",
            "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration",
        ) => webhook_configuration(data, config, bundle, among, v),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => {
            admission_policy(data, config, bundle, among, v)
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding") => {
            admission_policy_binding(data, bundle, v)
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => crd(data, config, bundle, among, v),
        ("", "Service") => {
            service(data, v);
            references::serving_certificate(object, config, among, v);
        }
        ("apps", "Deployment") => {
            if let Some(pod) = data.pointer("/spec/template/spec") {
                workload(key, pod, config, bundle, v);
                references::pod_references(pod, "spec.template.spec", bundle, among, v);
            }
            for setting in crate::proxy::own_settings(object) {
                v(Rule::ClusterProxy, setting);
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

/// The aggregated ClusterRoles of real bundles, each with the one provider that ships it and the label
/// its `aggregationRule` selects; derived from every bundle of `../shared/fixtures` and checked by
/// `tests/policy_fixtures.rs`. The installer holds `escalate` on these names, so only their own
/// provider may ship them, and only it may select their label (issue 46).
pub const AGGREGATED_ROLES: [(&str, &str, &str); 3] = [
    (
        "capi-aggregated-manager-role",
        "cluster-api",
        "cluster.x-k8s.io/aggregate-to-manager",
    ),
    (
        "capv-aggregated-manager-role",
        "infrastructure-vsphere",
        "capv.infrastucture.cluster.x-k8s.io/aggregate-to-manager",
    ),
    (
        "capz-manager-role",
        "infrastructure-azure",
        "cluster.x-k8s.io/aggregate-to-capz-manager",
    ),
];

/// The aggregation labels of real bundles' ClusterRoles, each with a provider whose roles carry it:
/// a role with the label joins the aggregated role that selects it, so only these providers' roles
/// may (vSphere's join core's role by Cluster API's contract). Derived and checked as
/// [`AGGREGATED_ROLES`].
pub const AGGREGATION_LABELS: [(&str, &str); 5] = [
    (
        "capv.infrastucture.cluster.x-k8s.io/aggregate-to-manager",
        "infrastructure-vsphere",
    ),
    (
        "cluster.x-k8s.io/aggregate-to-capz-manager",
        "infrastructure-azure",
    ),
    ("cluster.x-k8s.io/aggregate-to-manager", "cluster-api"),
    (
        "cluster.x-k8s.io/aggregate-to-manager",
        "infrastructure-vsphere",
    ),
    (
        "kubeadm.controlplane.cluster.x-k8s.io/aggregate-to-manager",
        "infrastructure-vsphere",
    ),
];

/// The providers whose roles may carry aggregation label `label`, when real bundles carry it.
fn label_holders(label: &str) -> Option<Vec<&'static str>> {
    let holders: Vec<&str> = AGGREGATION_LABELS
        .iter()
        .filter(|(l, _)| *l == label)
        .map(|(_, p)| *p)
        .collect();
    (!holders.is_empty()).then_some(holders)
}

/// `<prefix>/aggregate-to-*` labels outside the family, on any object (a label does its harm on a
/// ClusterRole, but it is refused wherever it is, as no provider needs it); and a family aggregation
/// label that real bundles carry only on other providers' roles ([`AGGREGATION_LABELS`]).
fn aggregation_labels(object: &DynamicObject, among: &Among<'_>, v: &mut Report<'_>) {
    let labels = object.metadata.labels.as_ref();
    for label in labels.into_iter().flat_map(|l| l.keys()) {
        if let Some(holders) = label_holders(label)
            && !holders.contains(&among.provider)
        {
            v(
                Rule::RbacAggregation,
                format!(
                    "label {label} is carried only by roles of {}: it would add this role to the aggregated role that selects it",
                    quoted(&holders)
                ),
            );
        }
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

fn webhook_configuration(
    data: &Value,
    config: &PolicyConfig,
    bundle: &Bundle,
    among: &Among<'_>,
    v: &mut Report<'_>,
) {
    for (i, hook) in items(data.get("webhooks")) {
        let name = hook.get("name").and_then(Value::as_str).unwrap_or("");
        let at = format!("webhooks[{i}] ({name})");
        client_config(hook.get("clientConfig"), &at, config, bundle, v);
        for (j, rule) in items(hook.get("rules")) {
            let at = format!("{at}.rules[{j}]");
            admission_groups(rule, &at, config, v);
            references::admission_resources(rule, &at, bundle, among, v);
        }
    }
}

fn admission_policy(
    data: &Value,
    config: &PolicyConfig,
    bundle: &Bundle,
    among: &Among<'_>,
    v: &mut Report<'_>,
) {
    if let Some(param) = data.pointer("/spec/paramKind").filter(|p| !p.is_null()) {
        let api_version = param
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        let kind = param.get("kind").and_then(Value::as_str).unwrap_or("");
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        let generated = (api_version, kind) == capi_manifests::customize::PROTECTION_PARAM_KIND;
        if !generated && !config.family_group(group) {
            v(
                Rule::AdmissionScope,
                format!(
                    "spec.paramKind {api_version} {kind}: a provider's policy reads only parameters of Cluster API kinds (or the {} {} the protection policy reads); the API server reads every object of this kind for it",
                    capi_manifests::customize::PROTECTION_PARAM_KIND.0,
                    capi_manifests::customize::PROTECTION_PARAM_KIND.1,
                ),
            );
        }
    }
    let rules = data.pointer("/spec/matchConstraints/resourceRules");
    if rules.is_none() {
        v(
            Rule::AdmissionScope,
            "spec.matchConstraints.resourceRules is missing: the policy must name the resources it applies to".into(),
        );
    }
    for (j, rule) in items(rules) {
        let at = format!("spec.matchConstraints.resourceRules[{j}]");
        admission_groups(rule, &at, config, v);
        references::admission_resources(rule, &at, bundle, among, v);
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

fn crd(
    data: &Value,
    config: &PolicyConfig,
    bundle: &Bundle,
    among: &Among<'_>,
    v: &mut Report<'_>,
) {
    let group = data
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or("");
    if in_family(group)
        && !config.extra_groups.contains(group)
        && !provider_bound::crd_group_allowed(among.provider, group)
    {
        v(
            Rule::CrdGroup,
            format!(
                "spec.group {group:?} is not a group of provider {}'s own CRDs ({})",
                among.provider,
                provider_bound::crd_groups_of(among.provider)
            ),
        );
    } else if in_family(group) && !config.extra_groups.contains(group) {
        let plural = data
            .pointer("/spec/names/plural")
            .and_then(Value::as_str)
            .unwrap_or("");
        match provider_bound::crd_name(among.provider, group, plural) {
            CrdName::Own => {}
            CrdName::NotOwn => v(
                Rule::CrdGroup,
                format!(
                    "spec.names.plural {plural:?} is not a name of provider {}'s own CRDs (its release's are named {})",
                    among.provider,
                    provider_bound::crd_name_prefixes_of(among.provider)
                ),
            ),
            CrdName::Others(owner) => v(
                Rule::CrdGroup,
                format!(
                    "spec.names.plural {plural:?} is provider {owner}'s (its release's CRDs are named {}), not {}'s",
                    provider_bound::crd_name_prefixes_of(owner),
                    among.provider
                ),
            ),
        }
    } else if !config.family_group(group) {
        let served = among
            .holder_of(group, "*")
            .map(|holder| format!("; {holder} serves it"))
            .unwrap_or_default();
        v(
            Rule::CrdGroup,
            format!(
                "spec.group {group:?} is not a Cluster API group ({FAMILY_GROUP} or *.{FAMILY_GROUP}), an allowed extra group, nor a group of the provider's own release image that nobody else serves{served}"
            ),
        );
    }
    if let Some(webhook) = data.pointer("/spec/conversion/webhook") {
        client_config(
            webhook.get("clientConfig"),
            "spec.conversion.webhook",
            config,
            bundle,
            v,
        );
    }
}

fn rbac_rules(
    data: &Value,
    scope: Scope,
    config: &PolicyConfig,
    bundle: &Bundle,
    among: &Among<'_>,
    v: &mut Report<'_>,
) {
    for (i, rule) in items(data.get("rules")) {
        let at = format!("rules[{i}]");
        let refused = std::cell::Cell::new(false);
        let mut v = |rule: Rule, detail: String| {
            refused.set(true);
            v(rule, detail)
        };
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
        crd_names(rule, &at, bundle, among, &mut v);
        // A rule refused above is not judged again, triple by triple.
        if !refused.get() {
            within_ceiling(rule, &at, scope, config, among.provider, &mut v);
        }
    }
}

/// A grant on CRDs by `resourceNames` names no CRD another provider or the cluster serves, nor one
/// another provider's release defines (core's own groups, another provider's names:
/// [`provider_bound`]), installed or not: the ceiling holds core's and vSphere's names (their CRD migrators patch their own CRDs,
/// vSphere's also those of its `vmware` group that its bundle leaves out), and another provider's
/// role naming them would let its controller rewrite their API (issue 46).
fn crd_names(rule: &Value, at: &str, bundle: &Bundle, among: &Among<'_>, v: &mut Report<'_>) {
    let crds = strings(rule.get("apiGroups")).contains(&"apiextensions.k8s.io")
        && strings(rule.get("resources"))
            .iter()
            .any(|r| r.starts_with("customresourcedefinitions"));
    if !crds {
        return;
    }
    for name in strings(rule.get("resourceNames")) {
        let own = bundle.resources.iter().any(|(group, plural)| {
            name.strip_prefix(plural.as_str())
                .and_then(|rest| rest.strip_prefix('.'))
                == Some(group.as_str())
        });
        let Some((plural, group)) = name.split_once('.') else {
            continue;
        };
        if own {
            continue;
        }
        if let Some(holder) = among.holder_of(group, plural) {
            v(
                Rule::ProvidersApart,
                format!(
                    "{at}.resourceNames names CustomResourceDefinition {name:?}, which {holder} serves"
                ),
            );
        } else if in_family(group) {
            // Installed or not: what another provider's release defines is not this one's.
            // By group only in core's own groups: vSphere names CRDs of a family group its bundle
            // does not define (`vmware.infrastructure…`), under its own names.
            let core_group = provider_bound::CORE_GROUPS.contains(&group);
            let whose = if core_group && !provider_bound::crd_group_allowed(among.provider, group) {
                Some(format!(
                    "whose group is core's own, not one of provider {}'s",
                    among.provider
                ))
            } else {
                match provider_bound::crd_name(among.provider, group, plural) {
                    CrdName::Others(owner) => Some(format!(
                        "which is provider {owner}'s, not {}'s",
                        among.provider
                    )),
                    CrdName::Own | CrdName::NotOwn => None,
                }
            };
            if let Some(whose) = whose {
                v(
                    Rule::ProvidersApart,
                    format!("{at}.resourceNames names CustomResourceDefinition {name:?}, {whose}"),
                );
            }
        }
    }
}

/// Every triple of one rule inside the ceiling of its scope, and no non-resource URLs (no real
/// bundle grants any).
fn within_ceiling(
    rule: &Value,
    at: &str,
    scope: Scope,
    config: &PolicyConfig,
    provider: &str,
    v: &mut Report<'_>,
) {
    let urls = strings(rule.get("nonResourceURLs"));
    if !urls.is_empty() {
        v(
            Rule::RbacCeiling,
            format!(
                "{at}.nonResourceURLs {}: the provider RBAC ceiling grants no non-resource URLs",
                quoted(&urls)
            ),
        );
    }
    let names: BTreeSet<&str> = strings(rule.get("resourceNames")).into_iter().collect();
    for triple in ceiling::triples(rule) {
        let why = match config.ceiling.covers(scope, &triple, &names) {
            Coverage::Inside => continue,
            Coverage::Outside => "outside the provider RBAC ceiling".to_string(),
            Coverage::OnlyNames(allowed) => {
                let allowed: Vec<&str> = allowed.iter().map(String::as_str).collect();
                format!(
                    "the provider RBAC ceiling allows it only for resourceNames {}",
                    quoted(&allowed)
                )
            }
        };
        v(
            Rule::RbacCeiling,
            format!(
                "{at} grants {triple} {scope}: {why} (ClusterRole {}; README, \"Bundle policy\", says how an administrator extends it)",
                ceiling::role_of(provider, scope)
            ),
        );
    }
}

/// An aggregated ClusterRole only under a name the provider's ceiling lists: the API server lets only a
/// holder of `escalate` on that name (or cluster-admin) write one, and the provider's identity holds it
/// for those names.
fn aggregated_name(
    key: &ObjectKey,
    data: &Value,
    config: &PolicyConfig,
    among: &Among<'_>,
    v: &mut Report<'_>,
) {
    if data.get("aggregationRule").is_none_or(Value::is_null) {
        return;
    }
    if let Some((_, owner, _)) = AGGREGATED_ROLES
        .iter()
        .find(|(name, owner, _)| *name == key.name && *owner != among.provider)
    {
        v(
            Rule::RbacAggregation,
            format!(
                "aggregated ClusterRole {:?} is provider {owner}'s",
                key.name
            ),
        );
    }
    let allowed = config.ceiling.cluster.aggregated_roles();
    if !allowed.contains(&key.name) {
        let allowed: Vec<&str> = allowed.iter().map(String::as_str).collect();
        v(
            Rule::RbacCeiling,
            format!(
                "aggregationRule: the provider RBAC ceiling allows aggregated ClusterRoles only named {}",
                quoted(&allowed)
            ),
        );
    }
}

/// Services only of type ClusterIP and without `externalIPs`: an external IP intercepts the traffic
/// of that address for the whole cluster (CVE-2020-8554), an ExternalName Service sends a webhook's
/// traffic out of the cluster, and node ports and load balancers open the provider to the outside.
fn service(data: &Value, v: &mut Report<'_>) {
    let spec = data.get("spec");
    let kind = spec
        .and_then(|s| s.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP");
    if kind != "ClusterIP" {
        v(
            Rule::ServiceType,
            format!("spec.type {kind}: provider Services are ClusterIP only"),
        );
    }
    for field in ["externalIPs", "externalName"] {
        if spec
            .and_then(|s| s.get(field))
            .is_some_and(|f| !f.is_null() && f != &Value::Array(vec![]))
        {
            v(
                Rule::ServiceType,
                format!("spec.{field} is set: provider Services serve only inside the cluster"),
            );
        }
    }
}

fn aggregation_rule(data: &Value, among: &Among<'_>, v: &mut Report<'_>) {
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
            .iter()
            .copied()
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
        let others: Vec<&str> = keys
            .iter()
            .filter_map(|k| {
                AGGREGATED_ROLES
                    .iter()
                    .find(|(_, owner, label)| label == k && *owner != among.provider)
                    .map(|(_, owner, _)| *owner)
            })
            .collect();
        if !others.is_empty() {
            v(
                Rule::RbacAggregation,
                format!(
                    "{at} selects the aggregation label of provider {}: it would collect that provider's roles",
                    quoted(&others)
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

fn client_config(
    cc: Option<&Value>,
    at: &str,
    config: &PolicyConfig,
    bundle: &Bundle,
    v: &mut Report<'_>,
) {
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
    } else if !bundle
        .services
        .contains(&(Some(namespace.to_string()), name.to_string()))
    {
        v(
            Rule::WebhookClient,
            format!(
                "{at}.clientConfig.service {namespace}/{name} is not a Service of this bundle: a webhook is served by the provider's own Service"
            ),
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
    // As the API server resolves it: an empty serviceAccountName takes the deprecated alias's value.
    let named = |field: &str| {
        pod.get(field)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let account = named("serviceAccountName")
        .or_else(|| named("serviceAccount"))
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
        let name = volume.get("name").and_then(Value::as_str).unwrap_or("");
        let at = format!("spec.template.spec.volumes[{i}] ({name})");
        if volume.get("hostPath").is_some_and(|h| !h.is_null()) {
            v(
                Rule::WorkloadHostAccess,
                format!("{at} is a hostPath volume"),
            );
            continue;
        }
        let kinds: Vec<&str> = volume
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, val)| *k != "name" && !val.is_null())
            .map(|(k, _)| k.as_str())
            .filter(|k| !VOLUME_KINDS.contains(k))
            .collect();
        if !kinds.is_empty() {
            v(
                Rule::WorkloadVolumes,
                format!(
                    "{at} is a {} volume; providers use only {}",
                    quoted(&kinds),
                    quoted(&VOLUME_KINDS)
                ),
            );
        }
    }
    if run_as_root(pod.get("securityContext")) {
        v(
            Rule::WorkloadPrivilege,
            "spec.template.spec.securityContext.runAsUser is 0 (root)".into(),
        );
    }
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        for (i, c) in items(pod.get(list)) {
            let name = c.get("name").and_then(Value::as_str).unwrap_or("");
            let at = format!("spec.template.spec.{list}[{i}] ({name})");
            container(c, &at, bundle, v);
        }
    }
}

/// The volume sources real provider bundles use; every other kind (persistent volumes, CSI, network
/// file systems, ...) is refused.
const VOLUME_KINDS: [&str; 5] = [
    "secret",
    "configMap",
    "projected",
    "emptyDir",
    "downwardAPI",
];

fn run_as_root(security_context: Option<&Value>) -> bool {
    security_context
        .and_then(|s| s.get("runAsUser"))
        .and_then(Value::as_f64)
        == Some(0.0)
}

fn container(c: &Value, at: &str, bundle: &Bundle, v: &mut Report<'_>) {
    let image = c.get("image").and_then(Value::as_str).unwrap_or("");
    if !bundle.payload_images.contains(image) {
        v(
            Rule::WorkloadImage,
            format!(
                "{at}.image {image:?} is not an image of the release payload (the images file); only the payload's images run"
            ),
        );
    }
    for (j, port) in items(c.get("ports")) {
        // Read as any number: `8080.0` is stored as 8080.
        if port.get("hostPort").and_then(Value::as_f64).unwrap_or(0.0) != 0.0 {
            v(
                Rule::WorkloadHostAccess,
                format!("{at}.ports[{j}].hostPort is set"),
            );
        }
    }
    let sc = c.get("securityContext");
    let flag = |field: &str| sc.and_then(|s| s.get(field)).and_then(Value::as_bool);
    if flag("privileged") == Some(true) {
        v(Rule::WorkloadPrivilege, format!("{at} is privileged"));
    }
    if flag("allowPrivilegeEscalation") == Some(true) {
        v(
            Rule::WorkloadPrivilege,
            format!("{at}.securityContext.allowPrivilegeEscalation is true"),
        );
    }
    if run_as_root(sc) {
        v(
            Rule::WorkloadPrivilege,
            format!("{at}.securityContext.runAsUser is 0 (root)"),
        );
    }
    let added = strings(sc.and_then(|s| s.pointer("/capabilities/add")));
    if !added.is_empty() {
        v(
            Rule::WorkloadPrivilege,
            format!(
                "{at}.securityContext.capabilities.add {}: providers drop every capability",
                quoted(&added)
            ),
        );
    }
}

#[cfg(test)]
mod tests;
