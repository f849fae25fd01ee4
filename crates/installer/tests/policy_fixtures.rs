//! Every real provider bundle of `../shared/fixtures` — each transport ConfigMap of
//! `transport-configmaps` and each fork's current profile of `profiles` — renders, passes the bundle
//! policy with its default configuration (as a source that is no release image: a ConfigMap or a
//! folder laid out by hand), and plans: the policy refuses nothing that real providers ship. And the
//! bounds the release ships are exactly what those bundles have:
//!
//! - the RBAC ceiling is what they grant: the derivation is printed (`-- --nocapture`), with the
//!   rules to paste into `manifests/0000_30_capi-installer_03_ceiling.yaml` when a fixture changes;
//! - the field bound is what their objects have: `CAPI_WRITE_FIELDS=1 cargo test -p
//!   capi-installer-controller --test policy_fixtures` writes
//!   `manifests/0000_30_capi-installer_03_fields.yaml` from the fixtures; without it the test fails
//!   when the shipped file differs from the derivation, naming each difference.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use capi_apply::KindResolver;
use capi_installer_controller::policy::ceiling::{self, Coverage, Grants, Names, Scope, Triple};
use capi_installer_controller::policy::{self, Ceiling, FieldBound, PolicyConfig, Protected};
use capi_installer_controller::prepare::{self, RenderContext, Rendered};
use capi_installer_controller::source::profile::ProfileCatalog;
use capi_installer_controller::source::{SourceCatalog, Target, configmap};
use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::{Value, json};

const NS: &str = "openshift-cluster-api";

/// One real bundle, rendered as the installer renders it.
struct Real {
    path: PathBuf,
    name: String,
    rendered: Rendered,
    images: BTreeMap<String, String>,
    /// Its `cluster.x-k8s.io/provider` label.
    provider: String,
}

/// Every real bundle of the fixtures: the transport ConfigMaps and the forks' current profiles.
fn real_bundles() -> Option<Vec<Real>> {
    let mut all = transport_bundles()?;
    all.extend(profile_bundles()?);
    Some(all)
}

/// The release images a bundle of provider `name` runs: its own and core's, by their keys.
fn images_of(name: &str) -> BTreeMap<String, String> {
    [
        "cluster-capi-controllers".to_string(),
        format!("{name}-cluster-api-controllers"),
    ]
    .into_iter()
    .map(|k| (k, "quay.io/example/image@sha256:0".to_string()))
    .collect()
}

/// The profiles of `../shared/fixtures/profiles`, each in a folder of its own as an image carries
/// it (a folder laid out by hand, no release image: read as a source that is not trusted), rendered.
fn profile_bundles() -> Option<Vec<Real>> {
    let dir = control_plane::shared_fixture("profiles")?;
    let root = tempfile::tempdir().unwrap();
    let mut providers: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    providers.sort();
    for p in &providers {
        let folder = root
            .path()
            .join(format!("{p}-img/capi-operator-manifests/default"));
        std::fs::create_dir_all(&folder).unwrap();
        for file in ["metadata.yaml", "manifests.yaml"] {
            std::os::unix::fs::symlink(dir.join(p).join(file), folder.join(file)).unwrap();
        }
    }
    let catalog = ProfileCatalog::read(root.path(), None).unwrap();
    assert!(catalog.problems.is_empty(), "{:?}", catalog.problems);
    let mut out = Vec::new();
    for (source, profile) in catalog.profiles() {
        let name = source.name.clone();
        let target = Target {
            clusterctl_label: source.provider_type.clusterctl_label(&source.name),
            source: source.clone(),
        };
        let images = images_of(&name);
        let ctx = RenderContext {
            namespace: NS.into(),
            images: images.clone(),
            ..Default::default()
        };
        let path = dir.join(&name).join("manifests.yaml");
        let payload = catalog
            .load(&source.id)
            .expect("a profile of the catalog")
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let rendered = prepare::render(&payload, &target, &ctx)
            .unwrap_or_else(|e| panic!("{}: {e}", profile.metadata.name));
        out.push(Real {
            path: dir.join(format!("{}/manifests.yaml", profile.metadata.name)),
            name: format!("profile {name}"),
            rendered,
            images,
            provider: target.clusterctl_label.clone(),
        });
    }
    assert_eq!(out.len(), providers.len(), "one bundle per profile");
    Some(out)
}

/// Every transport ConfigMap of the fixtures, rendered; `None` (after saying why) without fixtures.
fn transport_bundles() -> Option<Vec<Real>> {
    let dir = control_plane::shared_fixture("transport-configmaps")?;
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains("_04_cm."))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let value: Value = serde_saphyr::from_str(&text).unwrap();
        let cm: ConfigMap = serde_json::from_value(value.clone()).unwrap();
        let name = cm.metadata.name.clone().unwrap();
        let source = configmap::candidate(&cm)
            .unwrap_or_else(|| panic!("{} declares no provider", path.display()));
        let target = Target {
            clusterctl_label: source.provider_type.clusterctl_label(&source.name),
            source,
        };
        let images = images_of(&name);
        let ctx = RenderContext {
            namespace: NS.into(),
            images: images.clone(),
            substitutions: Default::default(),
            ..Default::default()
        };
        let rendered = configmap::payload(&value)
            .map_err(|e| e.to_string())
            .and_then(|payload| prepare::render(&payload, &target, &ctx).map_err(|e| e.to_string()))
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        out.push(Real {
            path,
            name,
            rendered,
            images,
            provider: target.clusterctl_label.clone(),
        });
    }
    Some(out)
}

#[test]
fn every_real_bundle_passes_the_policy() {
    let Some(bundles) = real_bundles() else {
        return;
    };
    let mut seen = BTreeSet::new();
    let mut crd_groups = BTreeSet::new();
    for real in bundles {
        let config = PolicyConfig::new(
            NS,
            Protected::installer(NS, "capi-installer-inventory", "capi-installer-leader"),
        );
        let payload: BTreeSet<&str> = real.images.values().map(String::as_str).collect();
        let among = policy::Among::alone(&real.provider);
        if let Err(v) = policy::check(&real.rendered.bundle(), &config, &payload, &among) {
            panic!("{}: {v}", real.path.display());
        }
        for input in &real.rendered.inputs {
            if input.object.types.as_ref().unwrap().kind == "CustomResourceDefinition" {
                crd_groups.insert(
                    input.object.data["spec"]["group"]
                        .as_str()
                        .unwrap()
                        .to_string(),
                );
            }
        }
        let plan = capi_apply::plan(real.rendered.inputs, &KindResolver::builtin())
            .unwrap_or_else(|e| panic!("{}: {e}", real.path.display()));
        assert!(!plan.is_empty());
        seen.insert(real.name);
    }
    assert_eq!(
        seen,
        [
            "aws",
            "azure",
            "cluster-api",
            "gcp",
            "vsphere",
            "profile aws",
            "profile azure",
            "profile cluster-api",
            "profile gcp",
            "profile ibmcloud",
            "profile openstack",
            "profile vsphere",
        ]
        .map(String::from)
        .into()
    );
    // The groups docs/maintainers/bundles.md lists as what real providers need.
    assert_eq!(
        crd_groups,
        [
            "addons.cluster.x-k8s.io",
            "bootstrap.cluster.x-k8s.io",
            "cluster.x-k8s.io",
            "controlplane.cluster.x-k8s.io",
            "infrastructure.cluster.x-k8s.io",
            "ipam.cluster.x-k8s.io",
            "runtime.cluster.x-k8s.io",
        ]
        .map(String::from)
        .into()
    );
}

/// Where a derived grant came from: `aws ClusterRole capa-manager-role rules[3]`.
type Provenance = BTreeMap<(Scope, Triple), BTreeSet<String>>;

/// The ceiling the real bundles imply: every rule of their ClusterRoles (cluster-wide) and Roles (in
/// the namespace), and `escalate` on the names of their aggregated ClusterRoles.
fn derive_of(bundles: &[&Real]) -> (Ceiling, Provenance) {
    // What the library derives from a bundle (as it does for a release image's), and where each
    // grant came from, for the printout.
    let derived = Ceiling::granted_by(
        bundles
            .iter()
            .flat_map(|r| r.rendered.inputs.iter().map(|i| &i.object)),
    );
    let mut from = Provenance::new();
    for real in bundles {
        for (input, origin) in real.rendered.inputs.iter().zip(&real.rendered.origins) {
            let kind = input.object.types.as_ref().unwrap().kind.as_str();
            let name = input.object.metadata.name.clone().unwrap_or_default();
            let data = &input.object.data;
            let scope = match kind {
                "ClusterRole" => Scope::Cluster,
                "Role" => Scope::Namespaced,
                _ => continue,
            };
            let mut add = |triple: Triple, names: Names, at: String| {
                from.entry((scope, triple.clone()))
                    .or_default()
                    .insert(format!(
                        "{} document {} {kind} {name} {at}",
                        real.name, origin.document
                    ));
                assert!(
                    derived.covers(scope, &triple, &wanted(&names)) == Coverage::Inside,
                    "{triple} of {} is in the derived ceiling",
                    real.name
                );
            };
            if data.get("aggregationRule").is_some_and(|r| !r.is_null()) {
                add(
                    Triple::new("rbac.authorization.k8s.io", "clusterroles", "escalate"),
                    Names::Only([name.clone()].into()),
                    "(aggregated: the installer needs escalate on it)".into(),
                );
            }
            for (i, rule) in data["rules"].as_array().into_iter().flatten().enumerate() {
                let one = Grants::of_rules(Some(&Value::Array(vec![rule.clone()])));
                for (triple, names) in one.iter() {
                    add(triple.clone(), names.clone(), format!("rules[{i}]"));
                }
            }
        }
    }
    (derived, from)
}

/// The names a grant asks for (empty: every name).
fn wanted(names: &Names) -> BTreeSet<&str> {
    match names {
        Names::Any => BTreeSet::new(),
        Names::Only(n) => n.iter().map(String::as_str).collect(),
    }
}

/// Leaves out what another entry of the same set already covers (a resource under a `*` of its group)
/// and, from the namespaced set, what the cluster-wide set covers: the rules the manifest ships.
fn minimal(ceiling: &Ceiling) -> Ceiling {
    let reduce = |grants: &Grants, also: Option<&Grants>| {
        let mut out = Grants::default();
        for (triple, names) in grants.iter() {
            let wanted: BTreeSet<&str> = match names {
                Names::Any => BTreeSet::new(),
                Names::Only(n) => n.iter().map(String::as_str).collect(),
            };
            let star = Triple::new(&triple.group, "*", &triple.verb);
            let under_star = triple.resource != "*"
                && grants.covers(&star, &BTreeSet::new()) == Coverage::Inside;
            let elsewhere = also.is_some_and(|a| a.covers(triple, &wanted) == Coverage::Inside);
            if !under_star && !elsewhere {
                out.insert(triple.clone(), names.clone());
            }
        }
        out
    };
    Ceiling {
        cluster: reduce(&ceiling.cluster, None),
        namespaced: reduce(&ceiling.namespaced, Some(&ceiling.cluster)),
        providers: BTreeMap::new(),
    }
}

/// The entries of `inner` that `outer` does not cover in `scope`, with their names.
fn not_covered(outer: &Ceiling, scope: Scope, inner: &Grants) -> Vec<(Scope, Triple, String)> {
    inner
        .iter()
        .filter_map(|(triple, names)| {
            let wanted: BTreeSet<&str> = match names {
                Names::Any => BTreeSet::new(),
                Names::Only(n) => n.iter().map(String::as_str).collect(),
            };
            (outer.covers(scope, triple, &wanted) != Coverage::Inside)
                .then(|| (scope, triple.clone(), format!("{names:?}")))
        })
        .collect()
}

/// The release file of the providers' identities and ceilings.
const CEILING_FILE: &str = "manifests/0000_30_capi-installer_03_ceiling.yaml";
const INSTALLER_NS: &str = "openshift-cluster-api-operator";
const RELEASE_ANNOTATIONS: &str = "  annotations:\n    exclude.release.openshift.io/internal-openshift-hosted: \"true\"\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n    include.release.openshift.io/single-node-developer: \"true\"\n    release.openshift.io/feature-gate: \"ClusterAPIMachineManagement\"\n    capability.openshift.io/name: ClusterAPI\n";

/// `rules` as the manifest's YAML lines (`[]` when empty).
fn rules_yaml(grants: &Grants) -> String {
    let rules = grants.to_rules();
    if rules.is_empty() {
        return "rules: []\n".into();
    }
    format!(
        "rules:\n{}",
        serde_saphyr::to_string(&rules).expect("rules serialize")
    )
}

/// The aggregated ClusterRole of `label`'s ceiling in one scope: its own labelled roles and those
/// every provider shares (no provider label).
fn aggregated(name: &str, scope: &str, label: &str) -> String {
    format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {name}\n{RELEASE_ANNOTATIONS}aggregationRule:\n  clusterRoleSelectors:\n  - matchLabels:\n      {}: {scope}\n      {}: {label}\n  - matchLabels:\n      {}: {scope}\n    matchExpressions:\n    - key: {}\n      operator: DoesNotExist\nrules: []\n",
        ceiling::LABEL,
        ceiling::PROVIDER_LABEL,
        ceiling::LABEL,
        ceiling::PROVIDER_LABEL
    )
}

fn labelled(name: &str, scope: &str, label: &str, grants: &Grants) -> String {
    format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {name}\n  labels:\n    {}: {scope}\n    {}: {label}\n{RELEASE_ANNOTATIONS}{}",
        ceiling::LABEL,
        ceiling::PROVIDER_LABEL,
        rules_yaml(grants)
    )
}

fn subjects(accounts: &[String]) -> String {
    let mut text = String::from("subjects:\n");
    for a in accounts {
        text.push_str(&format!(
            "- kind: ServiceAccount\n  name: {a}\n  namespace: {INSTALLER_NS}\n"
        ));
    }
    text
}

fn binding(
    kind: &str,
    name: &str,
    namespace: Option<&str>,
    role_kind: &str,
    role: &str,
    accounts: &[String],
) -> String {
    let ns = namespace
        .map(|n| format!("  namespace: {n}\n"))
        .unwrap_or_default();
    format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: {kind}\nmetadata:\n  name: {name}\n{ns}{RELEASE_ANNOTATIONS}roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: {role_kind}\n  name: {role}\n{}",
        subjects(accounts)
    )
}

/// The release file: per provider, its identity (a ServiceAccount the installer impersonates) bound
/// to its ceiling (what its real bundles grant), and the writes every identity needs.
fn ceiling_manifest(per_provider: &BTreeMap<String, Ceiling>) -> String {
    let mut docs = vec![format!(
        "# The providers' identities and their RBAC ceilings. docs/admin/rbac.md and\n\
         # docs/maintainers/bundles.md (\"The RBAC ceiling\") explain them.\n\
         #\n\
         # The installer writes each provider's objects as that provider's own identity: it impersonates\n\
         # ServiceAccount {INSTALLER_NS}/capi-provider-<cluster.x-k8s.io/provider value> (it holds\n\
         # `impersonate` on these names only, 0000_30_capi-installer_03_rbac.yaml). Each identity holds\n\
         # - its ceiling: what that provider's bundles may grant, cluster-wide (ClusterRole\n\
         #   capi-provider-<provider>) and in openshift-cluster-api (capi-provider-<provider>-namespaced,\n\
         #   bound there), so that the API server's escalation check refuses, on its own, a role or binding\n\
         #   of that provider granting more, whatever the bundle policy might miss; the `-release` roles are\n\
         #   what the provider's real bundles grant (the transport ConfigMaps and every fork's current\n\
         #   profile in ../shared/fixtures), a triple a `*` resource of its group covers left out;\n\
         # - the writes of the kinds a bundle may contain (ClusterRole capi-provider-writer, and Role\n\
         #   capi-provider-writer in openshift-cluster-api), and nothing else.\n\
         #\n\
         # Generated, never edited by hand:\n\
         #   CAPI_WRITE_CEILING=1 cargo test -p capi-installer-controller --test policy_fixtures\n\
         # writes this file from the fixtures, and the same test without the variable checks it.\n\
         #\n\
         # The bundle policy (crates/policy/src/ceiling.rs) reads the same labels: a ClusterRole\n\
         # labelled {}: cluster (or namespaced) extends what a bundle may grant, only\n\
         # provider P's when it is also labelled {}: P, every provider's\n\
         # without it. An administrator extends a ceiling with such a ClusterRole of their own (never by\n\
         # editing these, which the release payload owns): the aggregated roles below give it to the\n\
         # identities, and the installer reads it into the policy. E.g.\n\
         #\n\
         #   apiVersion: rbac.authorization.k8s.io/v1\n\
         #   kind: ClusterRole\n\
         #   metadata:\n\
         #     name: provider-ceiling-aws-extra\n\
         #     labels:\n\
         #       {}: cluster\n\
         #       {}: infrastructure-aws\n\
         #   rules:\n\
         #   - apiGroups: [\"\"]\n\
         #     resources: [persistentvolumes]\n\
         #     verbs: [get, list, watch]\n\
         #\n\
         # A provider not listed here (an extra provider) has no identity until the administrator gives it\n\
         # one: docs/admin/rbac.md, \"A provider's identity\".\n",
        ceiling::LABEL,
        ceiling::PROVIDER_LABEL,
        ceiling::LABEL,
        ceiling::PROVIDER_LABEL
    )];
    let mut accounts = Vec::new();
    for (label, own) in per_provider {
        let account = capi_bundle::names::provider_identity(label);
        let one = [account.clone()];
        docs.push(format!(
            "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: {account}\n  namespace: {INSTALLER_NS}\n{RELEASE_ANNOTATIONS}automountServiceAccountToken: false\n"
        ));
        let cluster = ceiling::role_of(label, Scope::Cluster);
        docs.push(aggregated(&cluster, ceiling::CLUSTER, label));
        docs.push(labelled(
            &format!("{cluster}-release"),
            ceiling::CLUSTER,
            label,
            &own.cluster,
        ));
        docs.push(binding(
            "ClusterRoleBinding",
            &cluster,
            None,
            "ClusterRole",
            &cluster,
            &one,
        ));
        let namespaced = ceiling::role_of(label, Scope::Namespaced);
        docs.push(aggregated(&namespaced, ceiling::NAMESPACED, label));
        docs.push(labelled(
            &format!("{namespaced}-release"),
            ceiling::NAMESPACED,
            label,
            &own.namespaced,
        ));
        docs.push(binding(
            "RoleBinding",
            &namespaced,
            Some(NS),
            "ClusterRole",
            &namespaced,
            &one,
        ));
        accounts.push(account);
    }
    docs.push(format!(
        "# What every identity writes: the cluster-scoped kinds a bundle may contain, with server-side apply\n\
         # (a PATCH that may create) and DELETE (prune); GET for prune's check before it deletes; the list\n\
         # of a Cluster API group's objects (a CRD with instances is not pruned); and reading Infrastructures,\n\
         # the `paramKind` of the bundles' admission policies (the API server lets only a writer who may read\n\
         # a policy's parameters write it). No `update`: the installer never PUTs.\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: capi-provider-writer\n{RELEASE_ANNOTATIONS}rules:\n\
         - apiGroups: [apiextensions.k8s.io]\n  resources: [customresourcedefinitions]\n  verbs: [get, create, patch, delete]\n\
         - apiGroups: [rbac.authorization.k8s.io]\n  resources: [clusterroles, clusterrolebindings]\n  verbs: [get, create, patch, delete]\n\
         - apiGroups: [admissionregistration.k8s.io]\n  resources: [validatingwebhookconfigurations, mutatingwebhookconfigurations, validatingadmissionpolicies, validatingadmissionpolicybindings]\n  verbs: [get, create, patch, delete]\n\
         - apiGroups: [cluster.x-k8s.io, infrastructure.cluster.x-k8s.io, addons.cluster.x-k8s.io, ipam.cluster.x-k8s.io, runtime.cluster.x-k8s.io, bootstrap.cluster.x-k8s.io, controlplane.cluster.x-k8s.io]\n  resources: [\"*\"]\n  verbs: [list]\n\
         - apiGroups: [config.openshift.io]\n  resources: [infrastructures]\n  verbs: [get, list, watch]\n"
    ));
    docs.push(binding(
        "ClusterRoleBinding",
        "capi-provider-writer",
        None,
        "ClusterRole",
        "capi-provider-writer",
        &accounts,
    ));
    docs.push(format!(
        "# ... and the namespaced kinds a bundle may contain, in openshift-cluster-api only.\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: capi-provider-writer\n  namespace: {NS}\n{RELEASE_ANNOTATIONS}rules:\n\
         - apiGroups: [\"\"]\n  resources: [configmaps, services, serviceaccounts]\n  verbs: [get, create, patch, delete]\n\
         - apiGroups: [apps]\n  resources: [deployments]\n  verbs: [get, create, patch, delete]\n\
         - apiGroups: [rbac.authorization.k8s.io]\n  resources: [roles, rolebindings]\n  verbs: [get, create, patch, delete]\n"
    ));
    docs.push(binding(
        "RoleBinding",
        "capi-provider-writer",
        Some(NS),
        "Role",
        "capi-provider-writer",
        &accounts,
    ));
    docs.push(format!(
        "# The installer impersonates the identities, and no one else.\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: capi-installer-impersonate-providers\n  namespace: {INSTALLER_NS}\n{RELEASE_ANNOTATIONS}rules:\n\
         - apiGroups: [\"\"]\n  resources: [serviceaccounts]\n  resourceNames: [{}]\n  verbs: [impersonate]\n",
        accounts.join(", ")
    ));
    docs.push(binding(
        "RoleBinding",
        "capi-installer-impersonate-providers",
        Some(INSTALLER_NS),
        "Role",
        "capi-installer-impersonate-providers",
        &["capi-installer".to_string()],
    ));
    docs.join("---\n")
}

#[test]
fn the_shipped_ceilings_are_what_each_providers_real_bundles_grant() {
    let Some(bundles) = real_bundles() else {
        return;
    };
    let mut labels: Vec<String> = bundles.iter().map(|r| r.provider.clone()).collect();
    labels.sort();
    labels.dedup();
    let shipped = Ceiling::release();
    let mut per_provider = BTreeMap::new();
    let mut missing = Vec::new();
    let mut extra = Vec::new();
    for label in &labels {
        let of: Vec<&Real> = bundles.iter().filter(|r| &r.provider == label).collect();
        let (derived, from) = derive_of(&of);
        println!("\nprovider {label}:");
        for ((scope, triple), sources) in &from {
            println!("  {triple} {scope}");
            for s in sources {
                println!("      <- {s}");
            }
        }
        let theirs = shipped.of(label);
        for (scope, inner, outer) in [
            (Scope::Cluster, &derived.cluster, &theirs),
            (Scope::Namespaced, &derived.namespaced, &theirs),
        ] {
            for (scope, triple, names) in not_covered(outer, scope, inner) {
                let sources: Vec<String> = from
                    .get(&(scope, triple.clone()))
                    .cloned()
                    .unwrap_or_default()
                    .into_iter()
                    .collect();
                missing.push(format!(
                    "{label}: {triple} {scope} names {names}, granted by {}",
                    sources.join(", ")
                ));
            }
        }
        for (scope, inner) in [
            (Scope::Cluster, &theirs.cluster),
            (Scope::Namespaced, &theirs.namespaced),
        ] {
            for (scope, triple, names) in not_covered(&derived, scope, inner) {
                extra.push(format!("{label}: {triple} {scope} names {names}"));
            }
        }
        per_provider.insert(label.clone(), minimal(&derived));
    }
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(CEILING_FILE);
    let wanted = ceiling_manifest(&per_provider);
    if std::env::var_os("CAPI_WRITE_CEILING").is_some() {
        std::fs::write(&file, &wanted).unwrap();
        println!("wrote {}", file.display());
        return;
    }
    assert_eq!(
        shipped.cluster.iter().count() + shipped.namespaced.iter().count(),
        0,
        "the release grants nothing to every provider alike: each provider's own"
    );
    assert!(
        missing.is_empty(),
        "real bundles grant triples outside their provider's shipped ceiling ({CEILING_FILE}; CAPI_WRITE_CEILING=1 rewrites it), one per line:\n{}",
        missing.join("\n")
    );
    assert!(
        extra.is_empty(),
        "a provider's shipped ceiling grants triples none of its real bundles grants, one per line:\n{}",
        extra.join("\n")
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        wanted,
        "{CEILING_FILE} is the generated text (CAPI_WRITE_CEILING=1 rewrites it)"
    );
    // The cluster-wide and namespaced sets are judged apart: leader election's Lease deletion is
    // granted in the namespace only.
    let delete_leases = Triple::new("coordination.k8s.io", "leases", "delete");
    let aws = shipped.of("infrastructure-aws");
    assert_eq!(
        aws.covers(Scope::Cluster, &delete_leases, &BTreeSet::new()),
        Coverage::Outside
    );
    // Each provider's own: vSphere's manager writes RoleBindings, aws's does not.
    let bindings = Triple::new("rbac.authorization.k8s.io", "rolebindings", "create");
    assert_eq!(
        shipped
            .of("infrastructure-vsphere")
            .covers(Scope::Cluster, &bindings, &BTreeSet::new()),
        Coverage::Inside
    );
    assert_eq!(
        aws.covers(Scope::Cluster, &bindings, &BTreeSet::new()),
        Coverage::Outside
    );
}

/// The field bound's release file: a ConfigMap labelled for the installer, holding the bound derived
/// from the fixtures.
const FIELDS_FILE: &str = "manifests/0000_30_capi-installer_03_fields.yaml";

fn fields_manifest(bound: &FieldBound) -> String {
    let mut text = String::from(
        "# The provider field bound: per kind, the field paths a provider bundle's objects may have and the\n\
         # values their sensitive fields may take (deny by default). README, \"Bundle policy\", and\n\
         # docs/maintainers/bundles.md explain it.\n\
         #\n\
         # Generated, never edited by hand: the union of what the real provider bundles of ../shared/fixtures\n\
         # have (every transport ConfigMap and every fork's current profile), written by\n\
         #   CAPI_WRITE_FIELDS=1 cargo test -p capi-installer-controller --test policy_fixtures\n\
         # and checked by the same test without the variable.\n\
         #\n\
         # An administrator extends the bound with a ConfigMap of their own in this namespace that carries\n\
         # the label capi-installer.openshift.io/provider-fields and the same key, e.g.\n\
         #\n\
         #   apiVersion: v1\n\
         #   kind: ConfigMap\n\
         #   metadata:\n\
         #     name: provider-fields-extra\n\
         #     namespace: openshift-cluster-api-operator\n\
         #     labels: {capi-installer.openshift.io/provider-fields: admin}\n\
         #   data:\n\
         #     fields.yaml: |\n\
         #       Deployment.apps:\n\
         #         paths: [spec.template.spec.containers[].stdin]\n\
         #         maxima: {spec.replicas: 2}\n\
         apiVersion: v1\n\
         kind: ConfigMap\n\
         metadata:\n\
         \x20 name: capi-installer-provider-fields-release\n\
         \x20 namespace: openshift-cluster-api-operator\n\
         \x20 labels:\n\
         \x20   capi-installer.openshift.io/provider-fields: release\n\
         \x20 annotations:\n\
         \x20   exclude.release.openshift.io/internal-openshift-hosted: \"true\"\n\
         \x20   include.release.openshift.io/self-managed-high-availability: \"true\"\n\
         \x20   include.release.openshift.io/single-node-developer: \"true\"\n\
         \x20   release.openshift.io/feature-gate: \"ClusterAPIMachineManagement\"\n\
         \x20   capability.openshift.io/name: ClusterAPI\n\
         data:\n\
         \x20 fields.yaml: |\n",
    );
    for line in bound.to_yaml().lines() {
        text.push_str("    ");
        text.push_str(line);
        text.push('\n');
    }
    text
}

#[test]
fn the_shipped_field_bound_is_what_real_bundles_have() {
    let Some(bundles) = real_bundles() else {
        return;
    };
    let mut derived = FieldBound::default();
    for real in &bundles {
        for input in &real.rendered.inputs {
            derived.add_rendered(&input.object);
        }
    }
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(FIELDS_FILE);
    let wanted = fields_manifest(&derived);
    if std::env::var_os("CAPI_WRITE_FIELDS").is_some() {
        std::fs::write(&file, &wanted).unwrap();
        println!("wrote {}", file.display());
    }
    let shipped = FieldBound::release();
    let mut differences = Vec::new();
    for (kind, fields) in &derived.kinds {
        let theirs = shipped.kinds.get(kind).cloned().unwrap_or_default();
        for p in fields.paths.difference(&theirs.paths) {
            differences.push(format!("{kind}: path {p} of a real bundle is not shipped"));
        }
        for p in theirs.paths.difference(&fields.paths) {
            differences.push(format!("{kind}: shipped path {p} is in no real bundle"));
        }
        if fields.values != theirs.values || fields.maxima != theirs.maxima {
            differences.push(format!(
                "{kind}: values differ: real bundles {:?} {:?}, shipped {:?} {:?}",
                fields.values, fields.maxima, theirs.values, theirs.maxima
            ));
        }
    }
    for kind in shipped
        .kinds
        .keys()
        .filter(|k| !derived.kinds.contains_key(*k))
    {
        differences.push(format!("{kind}: shipped, in no real bundle"));
    }
    assert!(
        differences.is_empty(),
        "{FIELDS_FILE} is not what the real bundles have (CAPI_WRITE_FIELDS=1 rewrites it):\n{}",
        differences.join("\n")
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        wanted,
        "{FIELDS_FILE} is the generated text (CAPI_WRITE_FIELDS=1 rewrites it)"
    );
    // What the attacks need is outside it.
    let d = &shipped.kinds["Deployment.apps"];
    assert_eq!(d.maxima["spec.replicas"], 1);
    assert_eq!(
        d.values["spec.template.spec.priorityClassName"],
        [Value::from("system-cluster-critical")]
    );
    for path in [
        "spec.template.spec.hostNetwork",
        "spec.template.spec.containers[].ports[].hostPort",
        "spec.template.spec.volumes[].hostPath.path",
        "spec.template.spec.securityContext.appArmorProfile.type",
        "spec.template.spec.securityContext.seLinuxOptions.type",
        "spec.template.spec.containers[].securityContext.capabilities.add[]",
    ] {
        assert!(!d.paths.contains(path), "{path} is in the shipped bound");
    }
    assert!(
        !d.values["spec.template.spec.securityContext.seccompProfile.type"]
            .contains(&Value::from("Unconfined"))
    );
}

// --- The bound checked, not the list (issue 29, item 7) ---
//
// Every field of the kinds' schemas — as far as the Kubernetes types of `k8s-openapi` describe them
// (`policy::schema`: every struct field, list and map down to a depth; the content of a CRD's
// `openAPIV3Schema` and of raw JSON is data, not fields, and not generated) — added to or changed in
// a real bundle's object must be refused unless the shipped field bound holds that path, and a
// sensitive path's value must be refused unless the bound holds that value.

/// How many field levels below an object the generated paths go
/// (`spec.template.spec.containers[].env[].valueFrom.secretKeyRef.name` is 8).
const DEPTH: usize = 9;

/// The fields of an object's identity: changed, the object is another one.
const IDENTITY: [&str; 4] = ["apiVersion", "kind", "metadata.name", "metadata.namespace"];

/// Every scalar path of `group`/`kind`'s schema within [`DEPTH`] (list items `[]`, map keys `*`).
fn scalar_paths(group: &str, kind: &str) -> Vec<String> {
    let shape = policy::schema::of_kind(group, kind).expect("a kind bundles contain");
    shape
        .paths(DEPTH)
        .into_iter()
        .filter(|(p, node)| {
            **node == policy::schema::Node::Scalar && !IDENTITY.contains(&p.as_str())
        })
        .map(|(p, _)| p)
        .collect()
}

/// One step of a collapsed path: a field (or a map's `*`), or a list's item.
enum Step {
    Key(String),
    Item,
}

fn steps(path: &str) -> Vec<Step> {
    let mut out = Vec::new();
    for part in path.split('.') {
        let mut name = part;
        let mut lists = 0;
        while let Some(rest) = name.strip_suffix("[]") {
            name = rest;
            lists += 1;
        }
        out.push(Step::Key(name.to_string()));
        out.extend((0..lists).map(|_| Step::Item));
    }
    out
}

/// Sets `value` at the collapsed `path` of `object`: a list's first item (a new one when empty), a
/// new key for a map's `*`, missing objects created. The path as written (`containers[0].stdin`),
/// or `None` when the object holds something else on the way (a scalar where the path goes on).
fn set_path(object: &mut Value, path: &str, value: Value) -> Option<String> {
    let steps = steps(path);
    let mut at = String::new();
    let mut here = object;
    for (i, step) in steps.iter().enumerate() {
        let last = i + 1 == steps.len();
        let fresh = || match steps.get(i + 1) {
            None => value.clone(),
            Some(Step::Item) => json!([]),
            Some(Step::Key(_)) => json!({}),
        };
        match step {
            Step::Item => {
                let items = here.as_array_mut()?;
                if items.is_empty() {
                    items.push(fresh());
                } else if last {
                    items[0] = fresh();
                }
                at.push_str("[0]");
                here = &mut items[0];
            }
            Step::Key(name) => {
                let key = if name == "*" {
                    "generated-key"
                } else {
                    name.as_str()
                };
                at = if at.is_empty() {
                    key.to_string()
                } else {
                    format!("{at}.{key}")
                };
                let entry = here
                    .as_object_mut()?
                    .entry(key.to_string())
                    .or_insert(Value::Null);
                if entry.is_null() || last {
                    *entry = fresh();
                }
                here = entry;
            }
        }
    }
    Some(at)
}

/// What the policy says of `real` with object `index` replaced by `changed`: the violations' lines;
/// `None` when `changed` is no Kubernetes object any more (a typed metadata field of another type:
/// rendering refuses it before the policy, as the API server would).
fn judged(real: &mut Real, index: usize, changed: Value) -> Option<Vec<String>> {
    let changed = serde_json::from_value(changed).ok()?;
    let original = std::mem::replace(&mut real.rendered.inputs[index].object, changed);
    let config = PolicyConfig::new(
        NS,
        Protected::installer(NS, "capi-installer-inventory", "capi-installer-leader"),
    );
    let payload: BTreeSet<&str> = real.images.values().map(String::as_str).collect();
    let among = policy::Among::alone(&real.provider);
    let out = match policy::check(&real.rendered.bundle(), &config, &payload, &among) {
        Ok(()) => Vec::new(),
        Err(v) => v.0.iter().map(ToString::to_string).collect(),
    };
    real.rendered.inputs[index].object = original;
    Some(out)
}

/// One generated change and what the bound must say of it.
fn judge_one(real: &mut Real, index: usize, path: &str, value: Value, bound: &FieldBound) {
    let object = &real.rendered.inputs[index].object;
    let key = capi_apply::key_of(object).unwrap();
    let mut changed = serde_json::to_value(object).unwrap();
    let Some(at) = set_path(&mut changed, path, value.clone()) else {
        return;
    };
    let kind = policy::fields::kind_key(&key.group, &key.kind);
    let allowed = bound.kinds.get(&kind).cloned().unwrap_or_default();
    let Some(lines) = judged(real, index, changed) else {
        return;
    };
    // The bound keeps the keys of labels and annotations: the schema's `*` is the generated key.
    let keyed = ["metadata.labels.*", "metadata.annotations.*"]
        .iter()
        .find_map(|m| path.strip_suffix(m).map(|place| (place, &m[..m.len() - 2])));
    let path = match keyed {
        Some((place, map)) => format!("{place}{map}[generated-key]"),
        None => path.to_string(),
    };
    let path = path.as_str();
    let ours = format!("({key}): rule ");
    let about_it: Vec<&String> = lines.iter().filter(|l| l.contains(&ours)).collect();
    let by_fields = |l: &&String| {
        l.contains("rule fields-in-real-bundles-only")
            || l.contains("rule field-values-in-real-bundles-only")
    };
    let what = format!("{} {key}: {at} = {value}", real.name);
    if !allowed.paths.contains(path) {
        assert!(
            !about_it.is_empty(),
            "{what}: a path no real bundle has was not refused"
        );
        // Refused by the field bound (then by name), or by a rule that names what is wrong.
        if about_it.iter().all(by_fields) {
            assert!(
                about_it
                    .iter()
                    .any(|l| l.contains(&format!(": {at} ({path}): no real provider bundle"))),
                "{what}: {about_it:#?}"
            );
        }
        return;
    }
    assert!(
        !lines
            .iter()
            .any(|l| l.contains(&format!(" ({path}): no real provider bundle"))),
        "{what}: a path real bundles have was refused: {lines:#?}"
    );
    let refused_value = match policy::fields::sensitive(&kind, path) {
        Some(policy::fields::Sense::Values) => {
            !allowed.values.get(path).is_some_and(|v| v.contains(&value))
        }
        // Refused unless an integer within the real bundles' maximum.
        Some(policy::fields::Sense::Maximum) => match value.as_i64() {
            Some(n) => allowed.maxima.get(path).is_none_or(|m| n > *m),
            None => true,
        },
        // Refused unless an integer within the margin over the real bundles' maximum.
        Some(policy::fields::Sense::Size) => match value.as_i64() {
            Some(n) => allowed
                .maxima
                .get(path)
                .is_none_or(|m| n > m.saturating_mul(policy::fields::SIZE_MARGIN)),
            None => true,
        },
        // Refused unless a quantity within the margin over what real bundles ask for that resource
        // (the generated key is a resource no real bundle asks for).
        Some(policy::fields::Sense::Quantity) => {
            let keyed = path
                .strip_suffix(".*")
                .map(|p| format!("{p}.generated-key"));
            let max = allowed
                .quantities
                .get(keyed.as_deref().unwrap_or(path))
                .and_then(|m| policy::fields::parse_quantity(m));
            let asked = match &value {
                Value::String(s) => policy::fields::parse_quantity(s),
                Value::Number(n) => policy::fields::parse_quantity(&n.to_string()),
                _ => None,
            };
            !matches!((asked, max), (Some(a), Some(m)) if a <= m * policy::fields::SIZE_MARGIN as f64)
        }
        None => false,
    };
    if refused_value {
        assert!(
            !about_it.is_empty(),
            "{what}: a value no real bundle uses was not refused"
        );
        if about_it.iter().all(by_fields) {
            assert!(
                about_it
                    .iter()
                    .any(|l| l.contains(&format!(": {at} is {value}"))),
                "{what}: {about_it:#?}"
            );
        }
    }
}

/// Values of every scalar type, the ones attacks use among them.
fn values() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    prop_oneof![
        any::<bool>().prop_map(Value::from),
        (0i64..100_000).prop_map(Value::from),
        Just(Value::from(0)),
        Just(Value::from(500)),
        prop_oneof![
            Just("Unconfined"),
            Just("spc_t"),
            Just("system-node-critical"),
            Just("RuntimeDefault"),
            Just("Exists"),
            Just("ALL"),
            Just("*"),
            Just("NodePort"),
        ]
        .prop_map(Value::from),
        "[a-z][a-z0-9-]{0,12}".prop_map(Value::from),
    ]
}

/// How many paths of each kind the exhaustive test judges: each judgement renders and checks a whole
/// real bundle, and a debug build takes minutes for every path of every kind (over 8 minutes of CPU
/// beside the other tests), so `make test` judges an evenly spaced sample of each kind's paths — every
/// one of them outside the bound must still be refused. `CAPI_FIELD_PATHS_PER_KIND=all` judges all.
fn sampled(paths: Vec<String>) -> Vec<String> {
    let per_kind = match std::env::var("CAPI_FIELD_PATHS_PER_KIND").as_deref() {
        Ok("all") => return paths,
        Ok(n) => n
            .parse()
            .expect("CAPI_FIELD_PATHS_PER_KIND: a number or `all`"),
        Err(_) => 16,
    };
    let stride = paths.len().div_ceil(per_kind).max(1);
    paths.into_iter().step_by(stride).collect()
}

#[test]
fn every_schema_field_outside_the_bound_is_refused_once_per_kind() {
    // Exhaustive over paths: each kind's every scalar path within DEPTH, set on the first object of
    // that kind among the real bundles, with a value no real bundle uses there.
    let Some(mut bundles) = real_bundles() else {
        return;
    };
    let bound = FieldBound::release();
    let mut done = BTreeSet::new();
    let mut judged_paths = 0;
    for bundle in &mut bundles {
        for index in 0..bundle.rendered.inputs.len() {
            let key = capi_apply::key_of(&bundle.rendered.inputs[index].object).unwrap();
            if !done.insert((key.group.clone(), key.kind.clone())) {
                continue;
            }
            for path in sampled(scalar_paths(&key.group, &key.kind)) {
                judge_one(bundle, index, &path, Value::from("generated-value"), &bound);
                judged_paths += 1;
            }
        }
    }
    println!("{judged_paths} paths of {} kinds judged", done.len());
    assert!(
        done.len() >= 12,
        "every kind real bundles contain: {done:?}"
    );
}

#[test]
fn a_generated_change_to_any_real_bundle_is_refused_unless_the_bound_holds_it() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};
    let Some(bundles) = real_bundles() else {
        return;
    };
    let bound = FieldBound::release();
    let bundles = std::cell::RefCell::new(bundles);
    let shape: Vec<usize> = bundles
        .borrow()
        .iter()
        .map(|r| r.rendered.inputs.len())
        .collect();
    let cases = (0..shape.len())
        .prop_flat_map(|b| (Just(b), 0..shape[b]))
        .prop_flat_map(|(b, i)| (Just(b), Just(i), any::<prop::sample::Index>(), values()));
    let mut runner = TestRunner::new(Config {
        cases: 128,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&cases, |(b, i, pick, value)| {
            let mut all = bundles.borrow_mut();
            let real = &mut all[b];
            let key = capi_apply::key_of(&real.rendered.inputs[i].object).unwrap();
            let paths = scalar_paths(&key.group, &key.kind);
            let path = pick.get(&paths).clone();
            judge_one(real, i, &path, value, &bound);
            Ok(())
        })
        .unwrap();
}

/// The per-provider aggregation data the policy ships (`policy::AGGREGATED_ROLES`,
/// `policy::AGGREGATION_LABELS`) is exactly what the real bundles do: which provider ships each
/// aggregated ClusterRole and the label it selects, and whose roles carry each aggregation label.
#[test]
fn the_shipped_aggregation_data_is_what_real_bundles_do() {
    let Some(bundles) = real_bundles() else {
        return;
    };
    let mut roles = BTreeSet::new();
    let mut labels = BTreeSet::new();
    for real in &bundles {
        for input in &real.rendered.inputs {
            let object = &input.object;
            if object.types.as_ref().map(|t| t.kind.as_str()) != Some("ClusterRole") {
                continue;
            }
            let name = object.metadata.name.clone().unwrap_or_default();
            for (i, selector) in object.data["aggregationRule"]["clusterRoleSelectors"]
                .as_array()
                .into_iter()
                .flatten()
                .enumerate()
            {
                for key in selector["matchLabels"].as_object().into_iter().flatten() {
                    roles.insert((name.clone(), real.provider.clone(), key.0.clone()));
                }
                assert!(selector.get("matchExpressions").is_none(), "{name} [{i}]");
            }
            for key in object.metadata.labels.iter().flatten().map(|(k, _)| k) {
                if key.contains("/aggregate-to-") {
                    labels.insert((key.clone(), real.provider.clone()));
                }
            }
        }
    }
    let shipped_roles: BTreeSet<(String, String, String)> = policy::AGGREGATED_ROLES
        .iter()
        .map(|(n, p, l)| (n.to_string(), p.to_string(), l.to_string()))
        .collect();
    let shipped_labels: BTreeSet<(String, String)> = policy::AGGREGATION_LABELS
        .iter()
        .map(|(l, p)| (l.to_string(), p.to_string()))
        .collect();
    assert_eq!(roles, shipped_roles, "aggregated roles of real bundles");
    assert_eq!(labels, shipped_labels, "aggregation labels of real bundles");
}

/// Each provider's shipped bound of what it reaches (`policy::provider_bound`) holds what its real
/// bundles do: every CRD group of theirs is among their provider's groups, every CRD name outside
/// core's own groups carries one of their provider's prefixes, and every resource their
/// admission names without a CRD of theirs is listed (and nothing listed that no bundle names).
#[test]
fn the_shipped_per_provider_reach_holds_what_real_bundles_do() {
    use policy::provider_bound::{self, ADMISSION_BEYOND_CRDS, CRD_GROUPS, CRD_NAME_PREFIXES};
    let Some(bundles) = real_bundles() else {
        return;
    };
    let mut beyond = BTreeSet::new();
    let mut outside_groups = Vec::new();
    let mut outside_names = Vec::new();
    for real in &bundles {
        // (kind, object) of each rendered object.
        let objects: Vec<(&str, &Value)> = real
            .rendered
            .inputs
            .iter()
            .map(|i| {
                let kind = i.object.types.as_ref().map_or("", |t| t.kind.as_str());
                (kind, &i.object.data)
            })
            .collect();
        let mut own = BTreeSet::new();
        for (kind, data) in &objects {
            if *kind == "CustomResourceDefinition" {
                let group = data["spec"]["group"].as_str().unwrap_or_default();
                own.insert((
                    group,
                    data["spec"]["names"]["plural"].as_str().unwrap_or(""),
                ));
                if !provider_bound::crd_group_allowed(&real.provider, group) {
                    outside_groups.push(format!("{} ({}): {group}", real.name, real.provider));
                }
                let plural = data["spec"]["names"]["plural"].as_str().unwrap_or("");
                if provider_bound::crd_name(&real.provider, group, plural)
                    != provider_bound::CrdName::Own
                {
                    outside_names.push(format!("{} ({}): {plural}", real.name, real.provider));
                }
            }
        }
        for (kind, data) in &objects {
            let rules: Vec<&Value> = match *kind {
                "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration" => {
                    data["webhooks"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .flat_map(|w| w["rules"].as_array().into_iter().flatten())
                        .collect()
                }
                "ValidatingAdmissionPolicy" => data["spec"]["matchConstraints"]["resourceRules"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .collect(),
                _ => continue,
            };
            for rule in rules {
                for group in rule["apiGroups"].as_array().into_iter().flatten() {
                    for resource in rule["resources"].as_array().into_iter().flatten() {
                        let (group, resource) =
                            (group.as_str().unwrap(), resource.as_str().unwrap());
                        let plural = resource.split('/').next().unwrap();
                        if !own.contains(&(group, plural)) {
                            beyond.insert((
                                real.provider.clone(),
                                group.to_string(),
                                plural.to_string(),
                            ));
                        }
                    }
                }
            }
        }
    }
    assert_eq!(
        outside_groups,
        Vec::<String>::new(),
        "CRD groups outside CRD_GROUPS"
    );
    assert_eq!(
        outside_names,
        Vec::<String>::new(),
        "CRD names outside their provider's CRD_NAME_PREFIXES"
    );
    let shipped: BTreeSet<(String, String, String)> = ADMISSION_BEYOND_CRDS
        .iter()
        .map(|(p, g, r)| (p.to_string(), g.to_string(), r.to_string()))
        .collect();
    assert_eq!(beyond, shipped, "admission beyond the bundles' own CRDs");
    let providers: BTreeSet<&str> = bundles.iter().map(|b| b.provider.as_str()).collect();
    let listed: BTreeSet<&str> = CRD_GROUPS.iter().map(|(p, _)| *p).collect();
    assert_eq!(
        providers, listed,
        "CRD_GROUPS lists exactly the real bundles' providers"
    );
    let named: BTreeSet<&str> = CRD_NAME_PREFIXES.iter().map(|(p, _)| *p).collect();
    assert_eq!(
        providers, named,
        "CRD_NAME_PREFIXES lists exactly the real bundles' providers"
    );
}

/// The bound on label and annotation values (`policy::fields::METADATA_VALUE_MAX`) leaves real bundles
/// a wide margin: their longest value is at most a quarter of it.
#[test]
fn real_label_and_annotation_values_are_far_below_their_bound() {
    use policy::fields::METADATA_VALUE_MAX;
    let Some(bundles) = real_bundles() else {
        return;
    };
    let mut longest = (0, String::new());
    for real in &bundles {
        for input in &real.rendered.inputs {
            let data = serde_json::to_value(&input.object).unwrap();
            for meta in [&data["metadata"], &data["spec"]["template"]["metadata"]] {
                for place in ["labels", "annotations"] {
                    for (key, value) in meta[place].as_object().into_iter().flatten() {
                        let len = value.as_str().map_or(0, str::len);
                        if len > longest.0 {
                            longest = (len, format!("{} {key}", real.name));
                        }
                    }
                }
            }
        }
    }
    assert!(longest.0 > 0);
    assert!(
        longest.0 * 4 <= METADATA_VALUE_MAX,
        "longest real value {longest:?} against {METADATA_VALUE_MAX}"
    );
}
