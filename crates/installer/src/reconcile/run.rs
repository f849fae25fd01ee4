//! What one reconcile of a provider did, up to its outcome ([`super::finish`] turns it into one).

use capi_apply::DroppedShortName;
use serde_json::Value;

use crate::error::ProviderError;
use crate::outcome::ProviderState;
use crate::source::Target;

/// What a reconcile did, up to its outcome: the target (with the version of the content applied, a
/// rolled-back revision's), how it went, and what the outcome carries besides.
pub(super) struct Run {
    pub(crate) target: Target,
    pub(crate) result: Result<ProviderState, ProviderError>,
    /// The digest of the content applied, when it was fully rolled out.
    pub(crate) rolled_out: Option<String>,
    pub(crate) related: Vec<Value>,
    /// The revision served instead of the source's content, by hand.
    pub(crate) held: Option<u32>,
    /// The content the pass wanted as a part of a cluster-wide revision, when it was rendered and
    /// planned ([`crate::prepare::Prepared::revision_part`]).
    pub(crate) content_id: Option<String>,
    /// Short names taken out of its CRDs (held by other CRDs of their group).
    pub(crate) dropped_short_names: Vec<DroppedShortName>,
}

impl Run {
    pub(crate) fn failed(target: &Target, error: ProviderError, related: Vec<Value>) -> Run {
        Run {
            target: target.clone(),
            result: Err(error),
            rolled_out: None,
            related,
            held: None,
            content_id: None,
            dropped_short_names: Vec::new(),
        }
    }
}
