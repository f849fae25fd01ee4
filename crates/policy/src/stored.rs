//! Judging what the API server will store, not only what the bundle says (issue 29).
//!
//! On the text ([`super::written`]): a bundle that says something the API server stores differently
//! is refused (floats, deprecated aliases).
//!
//! On the stored object ([`Stored`]): the preflight's server-side dry-run returns each object as it
//! would be stored (defaults filled, aliases resolved, numbers typed), and the rules run again on
//! that, with the same bundle around it.

use std::collections::{BTreeMap, BTreeSet};

use capi_apply::ObjectKey;
use kube_core::DynamicObject;

use super::config::PolicyConfig;
use super::index::Bundle;
use super::references::Among;
use super::report::{BundleObject, Origin, Reading, Rule, Violation};

/// The policy of one bundle, kept to judge its objects again as the API server would store them
/// (the answers of the preflight's dry-run).
#[derive(Debug, Clone)]
pub struct Stored {
    config: PolicyConfig,
    bundle: Bundle,
    provider: String,
    origins: BTreeMap<ObjectKey, Origin>,
}

impl Stored {
    pub fn new(
        objects: &[BundleObject<'_>],
        config: &PolicyConfig,
        payload_images: &BTreeSet<&str>,
        provider: &str,
    ) -> Self {
        Stored {
            // Judged within the provider's own bound, as the text was ([`super::check`]).
            config: config.for_provider(provider),
            bundle: Bundle::index(objects, payload_images),
            provider: provider.to_string(),
            origins: objects
                .iter()
                .filter_map(|o| Some((capi_apply::key_of(o.object)?, o.origin.clone())))
                .collect(),
        }
    }

    /// Every rule on `stored`, the object `key` as the API server would store it. Cross-provider
    /// rules are not judged again: labels, selectors and names are stored as written.
    pub fn violations(&self, key: &ObjectKey, stored: &DynamicObject) -> Vec<Violation> {
        let origin = self.origins.get(key).cloned().unwrap_or(Origin {
            source: String::new(),
            document: 0,
        });
        let mut out = Vec::new();
        let mut v = |rule: Rule, detail: String| {
            out.push(Violation {
                origin: origin.clone(),
                object: key.clone(),
                rule,
                detail: format!("as stored: {detail}"),
            })
        };
        if !self.config.enforce {
            return out;
        }
        let among = Among::alone(&self.provider);
        // The cluster's proxy was added after the policy judged the text ([`crate::proxy`]): the
        // stored object is judged without it, as the text was.
        let without_proxy;
        let stored = if key.group == "apps" && key.kind == "Deployment" {
            let mut object = stored.clone();
            crate::proxy::strip(&mut object);
            without_proxy = object;
            &without_proxy
        } else {
            stored
        };
        super::check_object(
            key,
            stored,
            &self.config,
            &self.bundle,
            &among,
            Reading::Stored,
            &mut v,
        );
        out
    }

    /// [`Stored::violations`] as the apply engine's judge wants it: one line per violation.
    pub fn judge(&self, key: &ObjectKey, stored: &DynamicObject) -> Result<(), String> {
        let violations = self.violations(key, stored);
        match violations.is_empty() {
            true => Ok(()),
            false => Err(violations
                .iter()
                .map(|v| format!("bundle policy: {v}"))
                .collect::<Vec<_>>()
                .join("; ")),
        }
    }
}
