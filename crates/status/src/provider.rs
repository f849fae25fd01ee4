//! The `status` of each `InfrastructureProvider`: its provider's conditions and version, built from
//! the same outcomes as the ClusterOperator's; the installer writes it only when [`differs`] says so.

use capi_bundle::api::Request;
use capi_bundle::desired::{Desired, Role};
use capi_openshift::conditions as shared;
use serde_json::{Value, json};

use crate::conditions::{
    Condition, condition, degraded, not_serving_message, not_serving_reason, progressing,
    with_names_notes,
};
use crate::error::Reason;
use crate::outcome::{Outcome, ProviderState, Removal};

/// What one object's status is made of.
pub struct ProviderView<'a> {
    pub request: &'a Request,
    pub role: &'a Role,
    pub desired: &'a Desired,
    /// The outcomes of its provider's sources (the provider and its companion).
    pub outcomes: Vec<&'a Outcome>,
    /// No source provides it.
    pub missing: bool,
    /// Its uninstall, while it runs.
    pub removal: Option<&'a Removal>,
    /// The revision of its provider that is live and was fully rolled out.
    pub revision: Option<u32>,
}

/// The conditions of one object.
pub fn conditions(view: &ProviderView<'_>) -> Vec<Condition> {
    let name = &view.request.name;
    let [available, progressing, degraded] = match (view.role, view.desired) {
        (Role::Invalid(problem), _) => [
            condition(
                "Available",
                false,
                Reason::InvalidInfrastructureProvider,
                problem.clone(),
            ),
            condition("Progressing", false, Reason::AsExpected, String::new()),
            condition(
                "Degraded",
                true,
                Reason::InvalidInfrastructureProvider,
                problem.clone(),
            ),
        ],
        (Role::Uninstalling, _) => removing(view.removal),
        (_, Desired::WaitingForPlatform) => {
            let m = format!("{name} is installed once Infrastructure cluster reports its platform");
            [
                condition("Available", false, Reason::WaitingForPlatform, m.clone()),
                condition("Progressing", true, Reason::WaitingForPlatform, m),
                condition("Degraded", false, Reason::AsExpected, String::new()),
            ]
        }
        (_, Desired::Unsupported { platform, .. }) => {
            let m = format!(
                "not installed: Cluster API is not installed on platform {platform}, extra providers included"
            );
            [
                condition("Available", false, Reason::PlatformNotSupported, m),
                condition("Progressing", false, Reason::AsExpected, String::new()),
                condition("Degraded", false, Reason::AsExpected, String::new()),
            ]
        }
        (_, Desired::Install(_)) if view.missing => {
            let m = format!(
                "waiting for a transport ConfigMap (or profile) of provider {name} (infrastructure) in the installer's namespace"
            );
            [
                condition(
                    "Available",
                    false,
                    Reason::WaitingForProviderConfigMaps,
                    m.clone(),
                ),
                condition("Progressing", true, Reason::WaitingForProviderConfigMaps, m),
                condition("Degraded", false, Reason::AsExpected, String::new()),
            ]
        }
        (_, Desired::Install(_)) => [
            {
                let mut available = available(&view.outcomes);
                with_names_notes(&mut available, &view.outcomes);
                available
            },
            progressing(&[], &view.outcomes),
            degraded(&view.outcomes),
        ],
    };
    let uninstallable = match view.role {
        Role::Platform => condition(
            "Uninstallable",
            false,
            Reason::PlatformProvider,
            format!(
                "{name} is the platform's infrastructure provider (Infrastructure cluster): it is always installed, and deleting this object does not uninstall it"
            ),
        ),
        _ => condition("Uninstallable", true, Reason::AsExpected, String::new()),
    };
    vec![available, progressing, degraded, uninstallable]
}

fn available(outcomes: &[&Outcome]) -> Condition {
    if !outcomes.is_empty() && outcomes.iter().all(|o| o.serving) {
        let serving: Vec<String> = outcomes.iter().map(|o| o.describe_serving()).collect();
        return condition(
            "Available",
            true,
            Reason::AsExpected,
            format!("installed: {}", serving.join(", ")),
        );
    }
    let not_serving: Vec<&Outcome> = outcomes.iter().copied().filter(|o| !o.serving).collect();
    let reason = not_serving_reason(&not_serving).unwrap_or(Reason::Installing);
    let message: Vec<String> = not_serving.iter().map(|o| not_serving_message(o)).collect();
    condition("Available", false, reason, message.join("; "))
}

fn removing(removal: Option<&Removal>) -> [Condition; 3] {
    let Some(r) = removal else {
        let m = "uninstalling".to_string();
        return [
            condition("Available", false, Reason::Uninstalling, m.clone()),
            condition("Progressing", true, Reason::Uninstalling, m),
            condition("Degraded", false, Reason::AsExpected, String::new()),
        ];
    };
    let message = r.describe();
    let degraded = match r.failed.is_empty() {
        true => condition("Degraded", false, Reason::AsExpected, String::new()),
        false => condition("Degraded", true, Reason::PruneFailed, message.clone()),
    };
    [
        condition("Available", false, Reason::Uninstalling, message.clone()),
        condition("Progressing", true, Reason::Uninstalling, message),
        degraded,
    ]
}

/// The version its provider serves: of the provider's own source (not the companion's).
fn version(view: &ProviderView<'_>) -> Option<String> {
    let own = view
        .outcomes
        .iter()
        .find(|o| o.target.source.name == view.request.name)?;
    match (&own.state, own.serving) {
        (ProviderState::Installed, _) => own.target.source.version.clone(),
        (_, true) => own.rolled_out.clone(),
        _ => None,
    }
}

/// The whole `status`, keeping `lastTransitionTime` of every condition whose status did not change.
pub fn status(view: &ProviderView<'_>, current: Option<&Value>, now: &str) -> Value {
    let conditions = shared::render(&conditions(view), current, now);
    let generation = view.request.generation;
    let conditions: Vec<Value> = conditions
        .into_iter()
        .map(|mut c| {
            if let Some(g) = generation {
                c["observedGeneration"] = json!(g);
            }
            c
        })
        .collect();
    let source = view
        .outcomes
        .iter()
        .find(|o| o.target.source.name == view.request.name)
        .map(|o| o.id().to_string());
    let mut status = json!({"conditions": conditions});
    let fields = [
        ("observedGeneration", generation.map(|g| json!(g))),
        ("source", source.map(Value::String)),
        ("version", version(view).map(Value::String)),
        ("revision", view.revision.map(|n| json!(n))),
        (
            "keptCustomResourceDefinitions",
            view.removal
                .filter(|r| !r.kept.is_empty())
                .map(|r| json!(r.kept_lines())),
        ),
    ];
    for (key, value) in fields {
        if let Some(v) = value {
            status[key] = v;
        }
    }
    status
}

/// Whether the live status differs from the desired one, timestamps aside (the installer is the only
/// writer of this status, so all of it is compared).
pub fn differs(current: Option<&Value>, desired: &Value) -> bool {
    let without_conditions = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = v.as_object_mut() {
            m.remove("conditions");
        }
        v
    };
    let ours = shared::live(Some(desired));
    current.is_none_or(|c| {
        !shared::unchanged(Some(c), ours)
            || shared::live(Some(c)).len() != ours.len()
            || without_conditions(c) != without_conditions(desired)
    })
}
