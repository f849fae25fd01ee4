//! The RBAC ceiling: the (API group, resource, verb) triples a provider bundle's roles may grant, deny
//! by default.
//!
//! The ceiling is RBAC data, not code: the rules of the ClusterRoles labelled [`LABEL`] (`cluster` for
//! what a ClusterRole may grant, `namespaced` for what a Role in the providers' namespace may grant
//! beyond that), one provider's when the role also carries [`PROVIDER_LABEL`] with the provider's
//! `cluster.x-k8s.io/provider` value, every provider's without it. A provider's bound is
//! [`Ceiling::of`] it: never another provider's grants. The release ships one pair per provider of the
//! real bundles (`manifests/0000_30_capi-installer_03_ceiling.yaml`, generated and checked by
//! `tests/policy_fixtures.rs`) and binds them, aggregated, to that provider's identity, which the
//! installer impersonates for the provider's writes: the API server's own escalation check then refuses
//! whatever this policy would miss. An administrator extends a ceiling with one more labelled
//! ClusterRole; the aggregated roles give it to the identities, and the installer reads it into the
//! policy.
//!
//! A ceiling rule with `resourceNames` allows the triple only for those names: a bundle rule for that
//! triple must name a subset (names narrow, never widen). `*` as a ceiling resource allows every
//! resource (and subresource) of its group for that verb. `escalate` on `clusterroles` with names is
//! not a grant a bundle may make (rule `rbac-no-escalation-verbs`): it lists the aggregated
//! ClusterRoles a provider's bundle may ship, which the API server lets only a holder of `escalate` (or
//! cluster-admin) create.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use kube_core::DynamicObject;
use serde_json::Value;

/// The label of the ClusterRoles whose rules make the ceiling; its value is the scope.
pub const LABEL: &str = "capi-installer.openshift.io/provider-ceiling";
/// [`LABEL`] value of what a ClusterRole of a bundle may grant (bound cluster-wide or aggregated).
pub const CLUSTER: &str = "cluster";
/// [`LABEL`] value of what a Role of a bundle may grant in the providers' namespace, beyond
/// [`CLUSTER`].
pub const NAMESPACED: &str = "namespaced";
/// The label that makes a labelled ClusterRole one provider's ceiling only: its value is the
/// provider's `cluster.x-k8s.io/provider` value. Without it, the role extends every provider's.
pub const PROVIDER_LABEL: &str = "capi-installer.openshift.io/ceiling-provider";

/// The aggregated ClusterRole of provider `label`'s ceiling in `scope`, bound to its identity
/// ([`crate::names::provider_identity`]): cluster-wide, or by a RoleBinding in the providers'
/// namespace.
pub fn role_of(label: &str, scope: Scope) -> String {
    let identity = crate::names::provider_identity(label);
    match scope {
        Scope::Cluster => identity,
        Scope::Namespaced => format!("{identity}-namespaced"),
    }
}

/// One grant: an API group, a resource (possibly `name/subresource`) and a verb.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Triple {
    pub group: String,
    pub resource: String,
    pub verb: String,
}

impl Triple {
    pub fn new(group: &str, resource: &str, verb: &str) -> Self {
        Triple {
            group: group.into(),
            resource: resource.into(),
            verb: verb.into(),
        }
    }
}

impl fmt::Display for Triple {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({:?}, {}, {})", self.group, self.resource, self.verb)
    }
}

/// Which names a triple is allowed for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Names {
    Any,
    Only(BTreeSet<String>),
}

impl Names {
    fn merge(&mut self, other: Names) {
        match (&mut *self, other) {
            (Names::Any, _) => {}
            (_, Names::Any) => *self = Names::Any,
            (Names::Only(mine), Names::Only(theirs)) => mine.extend(theirs),
        }
    }

    fn of(rule: &Value) -> Names {
        let names = strings(rule.get("resourceNames"));
        if names.is_empty() {
            Names::Any
        } else {
            Names::Only(names.into_iter().map(String::from).collect())
        }
    }
}

/// A set of triples with the names each is allowed for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grants(BTreeMap<Triple, Names>);

impl Grants {
    /// The triples of RBAC `rules` (a JSON list of PolicyRules). Rules for non-resource URLs grant no
    /// triple (a bundle's are refused, see [`Grants::outside`]).
    pub fn of_rules(rules: Option<&Value>) -> Grants {
        let mut g = Grants::default();
        g.add_rules(rules);
        g
    }

    pub fn add_rules(&mut self, rules: Option<&Value>) {
        for rule in rules.and_then(Value::as_array).into_iter().flatten() {
            let names = Names::of(rule);
            for triple in triples(rule) {
                self.insert(triple, names.clone());
            }
        }
    }

    pub fn insert(&mut self, triple: Triple, names: Names) {
        match self.0.get_mut(&triple) {
            Some(existing) => existing.merge(names),
            None => {
                self.0.insert(triple, names);
            }
        }
    }

    pub fn extend(&mut self, other: &Grants) {
        for (t, n) in &other.0 {
            self.insert(t.clone(), n.clone());
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Triple, &Names)> {
        self.0.iter()
    }

    /// Whether `triple` for `names` (empty: every name) is inside these grants. A ceiling resource
    /// `*` covers every resource and subresource of its group, as RBAC does.
    pub fn covers(&self, triple: &Triple, names: &BTreeSet<&str>) -> Coverage {
        let any_resource = Triple::new(&triple.group, "*", &triple.verb);
        let mut widened = None;
        for entry in [triple, &any_resource] {
            match self.0.get(entry) {
                Some(Names::Any) => return Coverage::Inside,
                Some(Names::Only(allowed)) => {
                    if !names.is_empty() && names.iter().all(|n| allowed.contains(*n)) {
                        return Coverage::Inside;
                    }
                    widened = Some(allowed.clone());
                }
                None => {}
            }
        }
        match widened {
            Some(allowed) => Coverage::OnlyNames(allowed),
            None => Coverage::Outside,
        }
    }

    /// The names of the aggregated ClusterRoles these grants allow (`escalate` on `clusterroles` with
    /// `resourceNames`, see the module documentation).
    pub fn aggregated_roles(&self) -> BTreeSet<String> {
        match self.0.get(&Triple::new(
            "rbac.authorization.k8s.io",
            "clusterroles",
            "escalate",
        )) {
            Some(Names::Only(names)) => names.clone(),
            _ => BTreeSet::new(),
        }
    }

    /// RBAC rules granting exactly these triples, deterministic and compact: per group and names, the
    /// resources with the same verbs in one rule.
    pub fn to_rules(&self) -> Vec<Value> {
        let mut by: BTreeMap<(String, Option<BTreeSet<String>>), VerbsOf> = BTreeMap::new();
        for (t, names) in &self.0 {
            let names = match names {
                Names::Any => None,
                Names::Only(n) => Some(n.clone()),
            };
            by.entry((t.group.clone(), names))
                .or_default()
                .entry(t.resource.clone())
                .or_default()
                .insert(t.verb.clone());
        }
        let mut rules = Vec::new();
        for ((group, names), resources) in by {
            let mut by_verbs: BTreeMap<BTreeSet<String>, Vec<String>> = BTreeMap::new();
            for (resource, verbs) in resources {
                by_verbs.entry(verbs).or_default().push(resource);
            }
            for (verbs, resources) in by_verbs {
                let mut rule = serde_json::json!({
                    "apiGroups": [group],
                    "resources": resources,
                    "verbs": verbs,
                });
                if let Some(names) = &names {
                    rule["resourceNames"] = serde_json::json!(names);
                }
                rules.push(rule);
            }
        }
        rules
    }
}

/// The verbs of each resource.
type VerbsOf = BTreeMap<String, BTreeSet<String>>;

/// How a bundle's triple relates to the ceiling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Coverage {
    Inside,
    /// The ceiling allows the triple only for these names, and the bundle's rule asks for others (or
    /// for every name).
    OnlyNames(BTreeSet<String>),
    Outside,
}

/// Every (group, resource, verb) of one PolicyRule. Rules for non-resource URLs have none.
pub fn triples(rule: &Value) -> Vec<Triple> {
    let mut out = Vec::new();
    for g in strings(rule.get("apiGroups")) {
        for r in strings(rule.get("resources")) {
            for v in strings(rule.get("verbs")) {
                out.push(Triple::new(g, r, v));
            }
        }
    }
    out
}

/// The strings of a JSON list (an RBAC rule's `apiGroups`, `resources`, `verbs`); none when absent.
pub(super) fn strings(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// What a bundle's ClusterRoles and Roles may grant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ceiling {
    /// Cluster-wide: every rule of a ClusterRole (it may be bound cluster-wide or aggregated).
    pub cluster: Grants,
    /// In the providers' namespace (a Role), beyond `cluster`.
    pub namespaced: Grants,
    /// What only one provider may grant beyond the two sets above, by its `cluster.x-k8s.io/provider`
    /// value (roles labelled [`PROVIDER_LABEL`]); a provider's bound is [`Ceiling::of`].
    pub providers: BTreeMap<String, Ceiling>,
}

impl Ceiling {
    /// The ceiling of ClusterRoles labelled [`LABEL`] (others are ignored), one provider's when the
    /// role also carries [`PROVIDER_LABEL`].
    pub fn from_roles<'a>(roles: impl IntoIterator<Item = &'a Value>) -> Ceiling {
        let mut c = Ceiling::default();
        for role in roles {
            let labels = role.pointer("/metadata/labels");
            let label = |key: &str| labels.and_then(|l| l.get(key)).and_then(Value::as_str);
            let of = match label(PROVIDER_LABEL) {
                Some(provider) => c.providers.entry(provider.to_string()).or_default(),
                None => &mut c,
            };
            let grants = match label(LABEL) {
                Some(CLUSTER) => &mut of.cluster,
                Some(NAMESPACED) => &mut of.namespaced,
                _ => continue,
            };
            grants.add_rules(role.get("rules"));
        }
        c
    }

    /// Provider `label`'s bound: what every provider may grant and what it alone may.
    pub fn of(&self, label: &str) -> Ceiling {
        let mut c = Ceiling {
            cluster: self.cluster.clone(),
            namespaced: self.namespaced.clone(),
            providers: BTreeMap::new(),
        };
        if let Some(own) = self.providers.get(label) {
            c.cluster.extend(&own.cluster);
            c.namespaced.extend(&own.namespaced);
        }
        c
    }

    /// What the roles among `objects` grant ([`Ceiling::grant`]): the ceiling a bundle brings along.
    pub fn granted_by<'a>(objects: impl IntoIterator<Item = &'a DynamicObject>) -> Ceiling {
        let mut c = Ceiling::default();
        for o in objects {
            let kind = o.types.as_ref().map(|t| t.kind.as_str()).unwrap_or("");
            let name = o.metadata.name.as_deref().unwrap_or("");
            c.grant(kind, name, &o.data);
        }
        c
    }

    /// Adds what one object grants when it is a role: a ClusterRole's rules cluster-wide, a Role's in
    /// the providers' namespace, and for an aggregated ClusterRole `escalate` on its name (the
    /// installer needs it to write one; see the module documentation). `body` holds `rules` and
    /// `aggregationRule`.
    pub fn grant(&mut self, kind: &str, name: &str, body: &Value) {
        let grants = match kind {
            "ClusterRole" => &mut self.cluster,
            "Role" => &mut self.namespaced,
            _ => return,
        };
        if kind == "ClusterRole" && body.get("aggregationRule").is_some_and(|r| !r.is_null()) {
            grants.insert(
                Triple::new("rbac.authorization.k8s.io", "clusterroles", "escalate"),
                Names::Only([name.to_string()].into()),
            );
        }
        grants.add_rules(body.get("rules"));
    }

    /// The ceiling the release ships (the labelled ClusterRoles of the embedded `manifests/`).
    pub fn release() -> Ceiling {
        let objects = super::protected::release_objects();
        Ceiling::from_roles(objects.iter().filter(|o| {
            o.get("kind").and_then(Value::as_str) == Some("ClusterRole")
                && o.get("aggregationRule").is_none_or(Value::is_null)
        }))
    }

    /// This ceiling and `other`'s grants (an administrator's extension read from the cluster).
    pub fn with(mut self, other: &Ceiling) -> Ceiling {
        self.cluster.extend(&other.cluster);
        self.namespaced.extend(&other.namespaced);
        for (provider, own) in &other.providers {
            let mine = self.providers.remove(provider).unwrap_or_default();
            self.providers.insert(provider.clone(), mine.with(own));
        }
        self
    }

    /// Whether a grant of `triple` for `names` in `scope` is inside the ceiling (what every provider
    /// may grant; one provider's is [`Ceiling::of`] it). A namespaced grant is
    /// inside when either set covers it: what may be granted cluster-wide may be granted in one
    /// namespace.
    pub fn covers(&self, scope: Scope, triple: &Triple, names: &BTreeSet<&str>) -> Coverage {
        match (scope, self.cluster.covers(triple, names)) {
            (_, Coverage::Inside) => Coverage::Inside,
            (Scope::Cluster, c) => c,
            (Scope::Namespaced, c) => match self.namespaced.covers(triple, names) {
                Coverage::Outside => c,
                n => n,
            },
        }
    }
}

/// Where a role's grants apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    Cluster,
    Namespaced,
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Scope::Cluster => "cluster-wide",
            Scope::Namespaced => "in the providers' namespace",
        })
    }
}
