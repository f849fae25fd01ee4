//! The names CustomResourceDefinitions claim in their API group, and which CRD holds each: found before
//! anything is written, so that two sets of CRDs meant for one cluster never leave a CRD that is not
//! Established. Pure.
//!
//! The API server's naming controller accepts a CRD's names only when no *other* CRD of the same group
//! holds them in its `status.acceptedNames`: plural, singular and short names share one set per group,
//! kind and list kind another; categories are not checked. A CRD with one name refused is never
//! Established, so its kinds are not served, whichever name it was. Real providers do clash: Azure's
//! and GCP's managed-cluster templates both declare the short names `amct`, `amcpt` and `ammpt` in
//! `infrastructure.cluster.x-k8s.io`, and whichever came second never served its kinds.
//!
//! [`NameClaims`] decides as the API server would, but before the first write and with a rule for what
//! may give way:
//!
//! 1. What the cluster's CRDs hold ([`NameClaims::hold_live`], their accepted names) was there first.
//! 2. Then each claimant ([`NameClaims::claim`]) in the caller's stable order.
//! 3. A short name held by another CRD is only a convenience of `kubectl get`: it is dropped from the
//!    later CRD ([`DroppedShortName`]), which is then accepted.
//! 4. Any other name (plural, singular, kind, list kind) held by another CRD, or the same CRD claimed
//!    twice, is a real conflict ([`NameConflict`]): the claimant gets nothing, and holds nothing.
//!
//! Because the cluster's holdings come first, the decision does not change when the order of the
//! claimants does (a restart, a provider added later): whoever has a name keeps it.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

use crate::plan::Plan;

/// The fields of a live CRD that [`NameClaims::hold_live`] reads: what the watch cache keeps of a CRD
/// for it ([`crate::slim`]).
pub(crate) const READS: &[&str] = &["/spec/group", "/status/acceptedNames"];

/// The names of one CRD in its group: requested (`spec.names`) or accepted (`status.acceptedNames`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CrdNames {
    pub group: String,
    pub plural: String,
    pub singular: String,
    pub(crate) short_names: Vec<String>,
    pub kind: String,
    pub(crate) list_kind: String,
}

impl CrdNames {
    /// The names `crd` asks for (`spec.names`), with the API server's defaults for singular (the
    /// lowercased kind) and list kind (the kind + `List`).
    pub fn requested(crd: &Value) -> CrdNames {
        let mut names = Self::read(crd, "/spec/names");
        if names.singular.is_empty() {
            names.singular = names.kind.to_lowercase();
        }
        if names.list_kind.is_empty() && !names.kind.is_empty() {
            names.list_kind = format!("{}List", names.kind);
        }
        names
    }

    /// The names the API server accepted for `crd` (`status.acceptedNames`; empty before it decided).
    pub fn accepted(crd: &Value) -> CrdNames {
        Self::read(crd, "/status/acceptedNames")
    }

    fn read(crd: &Value, pointer: &str) -> CrdNames {
        let names = crd.pointer(pointer).unwrap_or(&Value::Null);
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        CrdNames {
            group: text(crd.pointer("/spec/group").unwrap_or(&Value::Null)),
            plural: text(&names["plural"]),
            singular: text(&names["singular"]),
            short_names: names["shortNames"]
                .as_array()
                .map(|a| a.iter().map(text).filter(|s| !s.is_empty()).collect())
                .unwrap_or_default(),
            kind: text(&names["kind"]),
            list_kind: text(&names["listKind"]),
        }
    }

    /// The names of the group's resource set (plural, singular, short names), each with its field.
    fn resources(&self) -> impl Iterator<Item = (Field, &str)> {
        [
            (Field::Plural, &self.plural),
            (Field::Singular, &self.singular),
        ]
        .into_iter()
        .map(|(f, n)| (f, n.as_str()))
        .chain(
            self.short_names
                .iter()
                .map(|n| (Field::ShortName, n.as_str())),
        )
        .filter(|(_, n)| !n.is_empty())
    }

    /// The names of the group's kind set (kind, list kind), each with its field.
    fn kinds(&self) -> impl Iterator<Item = (Field, &str)> {
        [
            (Field::Kind, &self.kind),
            (Field::ListKind, &self.list_kind),
        ]
        .into_iter()
        .map(|(f, n)| (f, n.as_str()))
        .filter(|(_, n)| !n.is_empty())
    }
}

/// Which name of a CRD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Plural,
    Singular,
    ShortName,
    Kind,
    ListKind,
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Field::Plural => "plural",
            Field::Singular => "singular name",
            Field::ShortName => "short name",
            Field::Kind => "kind",
            Field::ListKind => "list kind",
        })
    }
}

/// The CRD that holds a name, and who brought it: a claimant of this pass, or the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Holder {
    pub crd: String,
    /// The claimant ([`NameClaims::claim`]) or, for a CRD on the cluster, its owner as the caller
    /// knows it (`None`: not one of the caller's).
    pub owner: Option<String>,
    /// Whether the name was accepted on the cluster (rather than claimed in this pass).
    pub(crate) on_cluster: bool,
}

impl fmt::Display for Holder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CustomResourceDefinition {}", self.crd)?;
        match (&self.owner, self.on_cluster) {
            (Some(owner), true) => write!(f, " ({owner}, on the cluster)"),
            (Some(owner), false) => write!(f, " ({owner})"),
            (None, _) => write!(f, " (on the cluster, not installed by this installer)"),
        }
    }
}

/// A short name removed from a CRD because another CRD of its group holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DroppedShortName {
    pub crd: String,
    pub(crate) short_name: String,
    pub(crate) held_by: Holder,
}

impl fmt::Display for DroppedShortName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "short name {} of CustomResourceDefinition {} dropped: held by {}",
            self.short_name, self.crd, self.held_by
        )
    }
}

/// A name of a CRD that another CRD holds and that cannot be dropped, or a CRD claimed twice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameConflict {
    pub crd: String,
    /// `None`: the CRD itself (same name) is claimed by another claimant of this pass.
    pub field: Option<Field>,
    pub name: String,
    pub(crate) held_by: Holder,
}

impl fmt::Display for NameConflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.field {
            None => write!(f, "{} is also in {}", self.held_by, self.name),
            Some(field) => write!(
                f,
                "CustomResourceDefinition {}: {field} {} is held by {}",
                self.crd, self.name, self.held_by
            ),
        }
    }
}

/// Every conflict of one claimant, in plan order.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct NameConflicts(pub Vec<NameConflict>);

impl fmt::Display for NameConflicts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, c) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

/// The names held in each group, and by which CRD (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NameClaims {
    /// (group, plural/singular/short name) → holder.
    resources: BTreeMap<(String, String), Holder>,
    /// (group, kind/list kind) → holder.
    kinds: BTreeMap<(String, String), Holder>,
    /// CRD name → claimant, for the CRDs claimed in this pass.
    claimed: BTreeMap<String, String>,
}

impl NameClaims {
    pub fn new() -> NameClaims {
        NameClaims::default()
    }

    /// Records what a CRD on the cluster holds (its accepted names): it had them first. `owner`: the
    /// caller's name for whoever installed it, if it is the caller's.
    pub fn hold_live(&mut self, crd: &str, accepted: &CrdNames, owner: Option<&str>) {
        let holder = Holder {
            crd: crd.to_string(),
            owner: owner.map(str::to_string),
            on_cluster: true,
        };
        self.hold(accepted, &holder);
    }

    /// Claims the names of the CRDs in `plan` for `claimant` (see the module docs): short names held by
    /// another CRD are removed from the plan's objects and returned; any other name held by another
    /// CRD, or a CRD already claimed by another claimant, is a conflict, and then nothing of the plan
    /// is claimed (nor changed). A CRD's own holdings on the cluster are replaced by what the plan
    /// asks for.
    pub fn claim(
        &mut self,
        claimant: &str,
        plan: &mut Plan,
    ) -> Result<Vec<DroppedShortName>, NameConflicts> {
        let crds: Vec<(String, CrdNames)> = plan
            .objects()
            .filter(|o| is_crd(&o.key.group, &o.key.kind))
            .map(|o| (o.key.name.clone(), CrdNames::requested(&o.object.data)))
            .collect();
        let mut conflicts = Vec::new();
        let mut dropped = Vec::new();
        // The claimant's own CRDs may not clash with each other either: they are checked against the
        // names kept so far as they go, as the API server would accept them one after the other.
        let mut mine = NameClaims {
            claimed: BTreeMap::new(),
            ..self.clone()
        };
        for (crd, names) in &crds {
            if let Some(other) = self.claimed.get(crd).filter(|c| *c != claimant) {
                conflicts.push(NameConflict {
                    crd: crd.clone(),
                    field: None,
                    name: claimant.to_string(),
                    held_by: Holder {
                        crd: crd.clone(),
                        owner: Some(other.clone()),
                        on_cluster: false,
                    },
                });
                continue;
            }
            mine.release(crd);
            let mut kept = names.clone();
            kept.short_names.clear();
            let held = |set: &BTreeMap<(String, String), Holder>, name: &str| {
                set.get(&(names.group.clone(), name.to_string()))
                    .filter(|h| h.crd != *crd)
                    .cloned()
            };
            for (field, name) in names.resources() {
                match (field, held(&mine.resources, name)) {
                    (Field::ShortName, Some(held_by)) => dropped.push(DroppedShortName {
                        crd: crd.clone(),
                        short_name: name.to_string(),
                        held_by,
                    }),
                    (Field::ShortName, None) => kept.short_names.push(name.to_string()),
                    (_, Some(held_by)) => conflicts.push(NameConflict {
                        crd: crd.clone(),
                        field: Some(field),
                        name: name.to_string(),
                        held_by,
                    }),
                    (_, None) => {}
                }
            }
            for (field, name) in names.kinds() {
                if let Some(held_by) = held(&mine.kinds, name) {
                    conflicts.push(NameConflict {
                        crd: crd.clone(),
                        field: Some(field),
                        name: name.to_string(),
                        held_by,
                    });
                }
            }
            let holder = Holder {
                crd: crd.clone(),
                owner: Some(claimant.to_string()),
                on_cluster: false,
            };
            mine.hold(&kept, &holder);
        }
        if !conflicts.is_empty() {
            return Err(NameConflicts(conflicts));
        }
        for (crd, _) in &crds {
            mine.claimed.insert(crd.clone(), claimant.to_string());
        }
        mine.claimed.extend(std::mem::take(&mut self.claimed));
        *self = mine;
        drop_short_names(plan, &dropped);
        Ok(dropped)
    }

    fn hold(&mut self, names: &CrdNames, holder: &Holder) {
        for (_, name) in names.resources() {
            self.resources
                .insert((names.group.clone(), name.to_string()), holder.clone());
        }
        for (_, name) in names.kinds() {
            self.kinds
                .insert((names.group.clone(), name.to_string()), holder.clone());
        }
    }

    /// Forgets what `crd` holds: its planned names replace them.
    fn release(&mut self, crd: &str) {
        self.resources.retain(|_, h| h.crd != crd);
        self.kinds.retain(|_, h| h.crd != crd);
    }
}

fn is_crd(group: &str, kind: &str) -> bool {
    group == "apiextensions.k8s.io" && kind == "CustomResourceDefinition"
}

/// Removes each dropped short name from its CRD in `plan` (an emptied list goes too).
fn drop_short_names(plan: &mut Plan, dropped: &[DroppedShortName]) {
    if dropped.is_empty() {
        return;
    }
    for phase in &mut plan.phases {
        for o in &mut phase.objects {
            if !is_crd(&o.key.group, &o.key.kind) {
                continue;
            }
            let gone: Vec<&str> = dropped
                .iter()
                .filter(|d| d.crd == o.key.name)
                .map(|d| d.short_name.as_str())
                .collect();
            let Some(names) = o
                .object
                .data
                .pointer_mut("/spec/names")
                .and_then(Value::as_object_mut)
            else {
                continue;
            };
            if let Some(Value::Array(short)) = names.get_mut("shortNames") {
                short.retain(|s| !s.as_str().is_some_and(|s| gone.contains(&s)));
                if short.is_empty() {
                    names.remove("shortNames");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{PlanInput, plan};
    use crate::testutil::resolver;

    /// A CRD of group `g` named after `plural`, with `kind` and short names.
    fn crd(group: &str, plural: &str, kind: &str, short: &[&str]) -> String {
        format!(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: {plural}.{group}}}\nspec:\n  group: {group}\n  scope: Namespaced\n  names: {{plural: {plural}, kind: {kind}, shortNames: {short:?}, categories: [cluster-api]}}\n  versions: [{{name: v1, served: true, storage: true}}]\n"
        )
    }

    fn plan_of(docs: &[String]) -> Plan {
        let inputs: Vec<_> = docs
            .iter()
            .map(|d| PlanInput::new(crate::testutil::obj(d), "test"))
            .collect();
        plan(inputs, &resolver()).expect("test CRDs plan")
    }

    fn short_names(plan: &Plan, crd: &str) -> Option<Value> {
        plan.objects()
            .find(|o| o.key.name == crd)
            .and_then(|o| o.object.data.pointer("/spec/names/shortNames").cloned())
    }

    const G: &str = "infrastructure.cluster.x-k8s.io";

    fn azure() -> Plan {
        plan_of(&[
            crd(
                G,
                "azuremanagedclustertemplates",
                "AzureManagedClusterTemplate",
                &["amct"],
            ),
            crd(G, "azureclusters", "AzureCluster", &[]),
        ])
    }

    fn gcp() -> Plan {
        plan_of(&[
            crd(
                G,
                "gcpmanagedclustertemplates",
                "GCPManagedClusterTemplate",
                &["amct", "gmct"],
            ),
            crd(G, "gcpclusters", "GCPCluster", &[]),
        ])
    }

    #[test]
    fn a_short_name_goes_to_the_first_claimant_and_is_dropped_from_the_next() {
        let mut claims = NameClaims::new();
        let mut a = azure();
        assert_eq!(claims.claim("azure", &mut a), Ok(vec![]));
        let mut g = gcp();
        let dropped = claims
            .claim("gcp", &mut g)
            .expect("only a short name clashes");
        assert_eq!(
            dropped.iter().map(ToString::to_string).collect::<Vec<_>>(),
            [
                "short name amct of CustomResourceDefinition gcpmanagedclustertemplates.infrastructure.cluster.x-k8s.io dropped: held by CustomResourceDefinition azuremanagedclustertemplates.infrastructure.cluster.x-k8s.io (azure)"
            ]
        );
        // The other short name stays; the holder's is untouched.
        assert_eq!(
            short_names(&g, &format!("gcpmanagedclustertemplates.{G}")),
            Some(serde_json::json!(["gmct"]))
        );
        assert_eq!(
            short_names(&a, &format!("azuremanagedclustertemplates.{G}")),
            Some(serde_json::json!(["amct"]))
        );
    }

    #[test]
    fn what_the_cluster_holds_comes_first_whatever_the_order_of_claimants() {
        // gcp installed alone, then azure requested: azure is first in order but gcp has the name.
        let live = serde_json::json!({"spec": {"group": G}, "status": {"acceptedNames": {
            "plural": "gcpmanagedclustertemplates", "singular": "gcpmanagedclustertemplate",
            "kind": "GCPManagedClusterTemplate", "listKind": "GCPManagedClusterTemplateList",
            "shortNames": ["amct", "gmct"]}}});
        let mut claims = NameClaims::new();
        claims.hold_live(
            &format!("gcpmanagedclustertemplates.{G}"),
            &CrdNames::accepted(&live),
            Some("gcp"),
        );
        let mut a = azure();
        let dropped = claims.claim("azure", &mut a).unwrap();
        assert_eq!(dropped.len(), 1);
        assert_eq!(dropped[0].short_name, "amct");
        assert!(dropped[0].held_by.on_cluster);
        // An emptied list is removed, not sent empty.
        assert_eq!(
            short_names(&a, &format!("azuremanagedclustertemplates.{G}")),
            None
        );
        // gcp itself keeps what it holds: its own CRD is not a clash.
        let mut g = gcp();
        assert_eq!(claims.claim("gcp", &mut g), Ok(vec![]));
        assert_eq!(
            short_names(&g, &format!("gcpmanagedclustertemplates.{G}")),
            Some(serde_json::json!(["amct", "gmct"]))
        );
    }

    #[test]
    fn a_plan_replaces_what_its_own_crd_holds_on_the_cluster() {
        // The live CRD held amct; its new version does not ask for it, so another CRD may have it.
        let live = serde_json::json!({"spec": {"group": G}, "status": {"acceptedNames": {
            "plural": "azuremanagedclustertemplates", "kind": "AzureManagedClusterTemplate",
            "shortNames": ["amct"]}}});
        let mut claims = NameClaims::new();
        claims.hold_live(
            &format!("azuremanagedclustertemplates.{G}"),
            &CrdNames::accepted(&live),
            Some("azure"),
        );
        let mut a = plan_of(&[crd(
            G,
            "azuremanagedclustertemplates",
            "AzureManagedClusterTemplate",
            &[],
        )]);
        assert_eq!(claims.claim("azure", &mut a), Ok(vec![]));
        let mut g = gcp();
        assert_eq!(claims.claim("gcp", &mut g), Ok(vec![]));
    }

    #[test]
    fn real_conflicts_refuse_the_later_claimant_with_both_named_and_claim_nothing() {
        let cases: &[(&str, Vec<String>, &str)] = &[
            (
                "the same CRD",
                vec![crd(G, "azureclusters", "AzureCluster", &[])],
                "CustomResourceDefinition azureclusters.infrastructure.cluster.x-k8s.io (azure) is also in other",
            ),
            (
                "the same kind under another plural",
                vec![crd(G, "azureclusterz", "AzureCluster", &[])],
                "CustomResourceDefinition azureclusterz.infrastructure.cluster.x-k8s.io: singular name azurecluster is held by CustomResourceDefinition azureclusters.infrastructure.cluster.x-k8s.io (azure); CustomResourceDefinition azureclusterz.infrastructure.cluster.x-k8s.io: kind AzureCluster is held by CustomResourceDefinition azureclusters.infrastructure.cluster.x-k8s.io (azure); CustomResourceDefinition azureclusterz.infrastructure.cluster.x-k8s.io: list kind AzureClusterList is held by CustomResourceDefinition azureclusters.infrastructure.cluster.x-k8s.io (azure)",
            ),
            (
                "a plural that is another CRD's short name",
                vec![crd(G, "amct", "Thing", &[])],
                "CustomResourceDefinition amct.infrastructure.cluster.x-k8s.io: plural amct is held by CustomResourceDefinition azuremanagedclustertemplates.infrastructure.cluster.x-k8s.io (azure)",
            ),
            (
                "a singular that is another CRD's",
                vec![crd(G, "azureclusters2", "AzureCluster2", &[]).replace(
                    "kind: AzureCluster2",
                    "kind: AzureCluster2, singular: azurecluster",
                )],
                "CustomResourceDefinition azureclusters2.infrastructure.cluster.x-k8s.io: singular name azurecluster is held by CustomResourceDefinition azureclusters.infrastructure.cluster.x-k8s.io (azure)",
            ),
        ];
        for (what, docs, message) in cases {
            let mut claims = NameClaims::new();
            claims.claim("azure", &mut azure()).unwrap();
            let mut other = plan_of(docs);
            let before = other.clone();
            let err = claims.claim("other", &mut other).expect_err(what);
            assert_eq!(err.to_string(), *message, "{what}");
            assert_eq!(
                format!("{:?}", other.phases),
                format!("{:?}", before.phases),
                "{what}: the refused plan is unchanged"
            );
            // Nothing of the refused claimant is held: a third one may take its names.
            let mut third = plan_of(docs);
            let third_result = claims.claim("third", &mut third);
            assert_eq!(
                third_result.map_err(|e| e.to_string()),
                Err(message.replace("other", "third")),
                "{what}"
            );
        }
    }

    #[test]
    fn kinds_and_names_are_per_group_and_categories_are_not_names() {
        let mut claims = NameClaims::new();
        claims.claim("azure", &mut azure()).unwrap();
        // The same short name and kind in another group, the same category everywhere: all accepted.
        let mut other = plan_of(&[crd(
            "exp.example.com",
            "azureclusters",
            "AzureCluster",
            &["amct"],
        )]);
        assert_eq!(claims.claim("other", &mut other), Ok(vec![]));
    }

    #[test]
    fn a_foreign_crd_on_the_cluster_is_named_as_such() {
        let live = serde_json::json!({"spec": {"group": G}, "status": {"acceptedNames": {
            "plural": "things", "kind": "AzureCluster", "listKind": "ThingList"}}});
        let mut claims = NameClaims::new();
        claims.hold_live(&format!("things.{G}"), &CrdNames::accepted(&live), None);
        let err = claims.claim("azure", &mut azure()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "CustomResourceDefinition azureclusters.infrastructure.cluster.x-k8s.io: kind AzureCluster is held by CustomResourceDefinition things.infrastructure.cluster.x-k8s.io (on the cluster, not installed by this installer)"
        );
    }

    #[test]
    fn a_crd_on_the_cluster_whose_names_are_not_yet_accepted_holds_nothing() {
        let live = serde_json::json!({"spec": {"group": G}, "status": {"acceptedNames": {
            "plural": "", "kind": ""}}});
        let mut claims = NameClaims::new();
        claims.hold_live(&format!("things.{G}"), &CrdNames::accepted(&live), None);
        assert_eq!(claims.claim("azure", &mut azure()), Ok(vec![]));
    }
}
