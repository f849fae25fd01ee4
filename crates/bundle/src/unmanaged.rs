//! CRDs someone else owns: `ClusterAPI/cluster` (`operator.openshift.io/v1alpha1`, the reference's
//! configuration object) lists them in `spec.unmanagedCustomResourceDefinitions` (e.g. HyperShift or
//! ACM running their own Cluster API version, ref §3.13). The installer never writes, adopts or prunes
//! them; a provider that ships one needs the live CRD to serve what the provider's own would, else the
//! provider is reported and nothing of it is applied (never half-installed). Pure: the live CRDs are
//! read by the caller.

use std::collections::BTreeSet;
use std::fmt;

use capi_apply::{Phase, Plan, PlannedObject};
use kube_core::ResourceExt;
use kube_core::{ApiResource, DynamicObject};
use serde_json::Value;

pub const CLUSTER_API_NAME: &str = "cluster";
const FIELD: &str = "spec.unmanagedCustomResourceDefinitions";

pub fn cluster_api_resource() -> ApiResource {
    ApiResource {
        group: "operator.openshift.io".into(),
        version: "v1alpha1".into(),
        api_version: "operator.openshift.io/v1alpha1".into(),
        kind: "ClusterAPI".into(),
        plural: "clusterapis".into(),
    }
}

/// The names of the unmanaged CRDs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Unmanaged(BTreeSet<String>);

/// `ClusterAPI/cluster` cannot be read: which CRDs are unmanaged is unknown, so no provider is
/// written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("ClusterAPI {CLUSTER_API_NAME}: {field}: {message}")]
pub struct UnmanagedError {
    pub field: String,
    pub message: String,
}

impl Unmanaged {
    /// Reads `ClusterAPI/cluster`; none means nothing is unmanaged.
    pub fn read(cluster_api: Option<&DynamicObject>) -> Result<Self, UnmanagedError> {
        let Some(list) =
            cluster_api.and_then(|o| o.data.pointer("/spec/unmanagedCustomResourceDefinitions"))
        else {
            return Ok(Unmanaged::default());
        };
        let fail = |field: String, message: String| UnmanagedError { field, message };
        let items = match list {
            Value::Null => return Ok(Unmanaged::default()),
            Value::Array(items) => items,
            other => return Err(fail(FIELD.into(), format!("must be a list, not {other}"))),
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| match item.as_str() {
                Some(name) if !name.is_empty() => Ok(name.to_string()),
                _ => Err(fail(
                    format!("{FIELD}[{i}]"),
                    format!("must be a CRD name, not {item}"),
                )),
            })
            .collect::<Result<_, _>>()
            .map(Unmanaged)
    }

    pub fn contains(&self, crd: &str) -> bool {
        self.0.contains(crd)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Takes the unmanaged CRDs out of `plan` (after planning, so that the kinds they define still
    /// resolve for the rest of the plan) and returns them, to be checked against the live CRDs.
    pub fn take_from(&self, plan: &mut Plan) -> Vec<PlannedObject> {
        let mut taken = Vec::new();
        for phase in plan
            .phases
            .iter_mut()
            .filter(|p| p.phase == Phase::CustomResourceDefinitions)
        {
            let (out, keep) = std::mem::take(&mut phase.objects)
                .into_iter()
                .partition(|o| self.contains(&o.key.name));
            phase.objects = keep;
            taken.extend::<Vec<_>>(out);
        }
        plan.phases.retain(|p| !p.objects.is_empty());
        taken
    }
}

/// Why an unmanaged CRD does not serve what the provider needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UnmanagedProblem {
    Missing,
    NotEstablished,
    /// What differs from the provider's own CRD.
    Incompatible(String),
}

/// An unmanaged CRD a provider needs, and why it cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct UnmanagedCrd {
    pub name: String,
    pub problem: UnmanagedProblem,
}

impl fmt::Display for UnmanagedCrd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match &self.problem {
            UnmanagedProblem::Missing => "does not exist".to_string(),
            UnmanagedProblem::NotEstablished => "is not Established".to_string(),
            UnmanagedProblem::Incompatible(why) => format!("is incompatible: {why}"),
        };
        write!(
            f,
            "CustomResourceDefinition {} is unmanaged (ClusterAPI {CLUSTER_API_NAME}, {FIELD}) and {what}; the provider needs it, so nothing of the provider is applied",
            self.name
        )
    }
}

/// Whether the live unmanaged CRD serves what the provider's own CRD (`desired`) would: the same
/// group, names and scope, and every version the provider's CRD serves. The schemas are not compared:
/// the owner of an unmanaged CRD may extend them.
pub fn check(desired: &DynamicObject, live: Option<&DynamicObject>) -> Result<(), UnmanagedCrd> {
    let fail = |problem| UnmanagedCrd {
        name: desired.name_any(),
        problem,
    };
    let live = live.ok_or_else(|| fail(UnmanagedProblem::Missing))?;
    let established = live
        .data
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Established" && c["status"] == "True")
        });
    if !established {
        return Err(fail(UnmanagedProblem::NotEstablished));
    }
    for field in [
        "/spec/group",
        "/spec/names/kind",
        "/spec/names/plural",
        "/spec/scope",
    ] {
        let (want, got) = (desired.data.pointer(field), live.data.pointer(field));
        if want.is_some() && want != got {
            return Err(fail(UnmanagedProblem::Incompatible(format!(
                "{} is {} here, the provider's is {}",
                &field[1..].replace('/', "."),
                got.unwrap_or(&Value::Null),
                want.unwrap_or(&Value::Null)
            ))));
        }
    }
    let live_served = served_versions(live);
    let missing: Vec<String> = served_versions(desired)
        .into_iter()
        .filter(|v| !live_served.contains(v))
        .collect();
    if !missing.is_empty() {
        return Err(fail(UnmanagedProblem::Incompatible(format!(
            "does not serve version {}, which the provider's serves",
            missing.join(", ")
        ))));
    }
    Ok(())
}

fn served_versions(crd: &DynamicObject) -> BTreeSet<String> {
    crd.data
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v["served"] != Value::Bool(false))
        .filter_map(|v| v["name"].as_str().map(String::from))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use capi_apply::KindResolver;

    fn obj(yaml: &str) -> DynamicObject {
        serde_saphyr::from_str(yaml).unwrap()
    }

    fn cluster_api(spec: &str) -> DynamicObject {
        obj(&format!(
            "apiVersion: operator.openshift.io/v1alpha1\nkind: ClusterAPI\nmetadata: {{name: cluster}}\nspec: {spec}\n"
        ))
    }

    fn crd(name: &str, versions: &str, established: bool) -> DynamicObject {
        let (plural, group) = name.split_once('.').unwrap();
        let kind = plural.trim_end_matches('s').to_uppercase();
        obj(&format!(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: {name}}}\nspec: {{group: {group}, scope: Namespaced, names: {{kind: {kind}, plural: {plural}}}, versions: {versions}}}\nstatus: {{conditions: [{{type: Established, status: \"{}\"}}]}}\n",
            if established { "True" } else { "False" }
        ))
    }

    #[test]
    fn reads_the_list_and_refuses_what_is_not_one() {
        assert!(Unmanaged::read(None).unwrap().is_empty());
        assert!(
            Unmanaged::read(Some(&cluster_api("{}")))
                .unwrap()
                .is_empty()
        );
        let u = Unmanaged::read(Some(&cluster_api(
            "{unmanagedCustomResourceDefinitions: [clusters.cluster.x-k8s.io]}",
        )))
        .unwrap();
        assert!(u.contains("clusters.cluster.x-k8s.io"));
        assert!(!u.contains("machines.cluster.x-k8s.io"));
        let cases = [
            (
                "{unmanagedCustomResourceDefinitions: clusters.cluster.x-k8s.io}",
                "ClusterAPI cluster: spec.unmanagedCustomResourceDefinitions: must be a list, not \"clusters.cluster.x-k8s.io\"",
            ),
            (
                "{unmanagedCustomResourceDefinitions: [a.b.c, 7]}",
                "ClusterAPI cluster: spec.unmanagedCustomResourceDefinitions[1]: must be a CRD name, not 7",
            ),
        ];
        for (spec, want) in cases {
            let err = Unmanaged::read(Some(&cluster_api(spec))).unwrap_err();
            assert_eq!(err.to_string(), want);
        }
    }

    #[test]
    fn unmanaged_crds_leave_the_plan_and_the_rest_still_plans() {
        let objects = vec![
            crd(
                "widgets.example.x-k8s.io",
                "[{name: v1, served: true}]",
                false,
            ),
            crd(
                "gadgets.example.x-k8s.io",
                "[{name: v1, served: true}]",
                false,
            ),
            obj("apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: sa, namespace: ns}\n"),
        ];
        let mut plan = capi_apply::plan(objects, &KindResolver::builtin()).unwrap();
        let u = Unmanaged::read(Some(&cluster_api(
            "{unmanagedCustomResourceDefinitions: [widgets.example.x-k8s.io]}",
        )))
        .unwrap();
        let taken = u.take_from(&mut plan);
        assert_eq!(taken.len(), 1);
        assert_eq!(taken[0].key.name, "widgets.example.x-k8s.io");
        let left: Vec<&str> = plan.objects().map(|o| o.key.name.as_str()).collect();
        assert_eq!(left, ["gadgets.example.x-k8s.io", "sa"]);
        let all = Unmanaged::read(Some(&cluster_api(
            "{unmanagedCustomResourceDefinitions: [gadgets.example.x-k8s.io]}",
        )))
        .unwrap();
        all.take_from(&mut plan);
        assert!(plan.phase(Phase::CustomResourceDefinitions).is_none());
    }

    #[test]
    fn the_live_crd_must_exist_be_established_and_serve_the_provider_s_versions() {
        let name = "widgets.example.x-k8s.io";
        let desired = crd(
            name,
            "[{name: v1beta1, served: true}, {name: v1, served: true}, {name: v1alpha1, served: false}]",
            false,
        );
        let problem = |live: Option<&DynamicObject>| check(&desired, live).map_err(|e| e.problem);
        assert_eq!(problem(None), Err(UnmanagedProblem::Missing));
        let pending = crd(name, "[{name: v1beta1}, {name: v1}]", false);
        assert_eq!(
            problem(Some(&pending)),
            Err(UnmanagedProblem::NotEstablished)
        );
        let newer = crd(
            name,
            "[{name: v1beta1, served: true}, {name: v1, served: true}, {name: v2, served: true}]",
            true,
        );
        assert_eq!(problem(Some(&newer)), Ok(()));
        let older = crd(
            name,
            "[{name: v1beta1, served: true}, {name: v1, served: false}]",
            true,
        );
        assert_eq!(
            problem(Some(&older)),
            Err(UnmanagedProblem::Incompatible(
                "does not serve version v1, which the provider's serves".into()
            ))
        );
        let mut cluster_scoped = newer.clone();
        cluster_scoped.data["spec"]["scope"] = "Cluster".into();
        assert_eq!(
            problem(Some(&cluster_scoped)),
            Err(UnmanagedProblem::Incompatible(
                "spec.scope is \"Cluster\" here, the provider's is \"Namespaced\"".into()
            ))
        );
        let message = check(&desired, None).unwrap_err().to_string();
        assert_eq!(
            message,
            "CustomResourceDefinition widgets.example.x-k8s.io is unmanaged (ClusterAPI cluster, spec.unmanagedCustomResourceDefinitions) and does not exist; the provider needs it, so nothing of the provider is applied"
        );
    }
}
