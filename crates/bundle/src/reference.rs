//! The names OpenShift's cluster-capi-operator (the reference; `../shared/reference/`) writes on a
//! cluster: what taking a cluster over from it recognizes, and what tools written for it read. One
//! home, so that a name of the reference is spelled once.

/// The field managers under which the reference applied provider objects: the first generation's
/// client-side create/update (client-go's default manager, the binary's name), the current
/// generation's server-side apply (boxcutter, ref §3.6). `--take-over-reference` retires them.
pub const FIELD_MANAGERS: [&str; 2] = [
    "cluster-capi-operator",
    "capi-operator.openshift.io/InstallerController",
];

pub mod content_id;

/// The longest revision name (the `ClusterAPI` CRD's `maxLength`).
const MAX_REVISION_NAME: usize = 255;

/// The name the reference gives a revision in `ClusterAPI/cluster` status:
/// `<release>-<first 8 of the content ID>-<n>`, the release cut so that the whole fits 255
/// characters.
pub fn revision_name(release: &str, content_id: &str, n: i64) -> String {
    let suffix = format!("-{}-{n}", &content_id[..content_id.len().min(8)]);
    let room = MAX_REVISION_NAME.saturating_sub(suffix.len());
    let release: String = release.chars().take(room).collect();
    format!("{release}{suffix}")
}

/// The label the reference's current generation sets on every object of a component (a profile),
/// to the profile's metadata name (`cluster-api-provider-aws`); part of what its content ID hashes.
pub(crate) const COMPONENT_LABEL: &str = "capi-operator.openshift.io/managed-by";

/// A profile's annotation that lets a provider take over an object that exists already, whoever
/// manages it (`always`), or not (`never`, the default); any other value is an error. Stripped
/// before apply (ref §3.5, §6.14).
pub(crate) const ADOPT_EXISTING: &str = "capi-operator.openshift.io/adopt-existing";

/// What the annotation [`ADOPT_EXISTING`] asks of an object: `Ok(true)` take it over, `Ok(false)`
/// the ordinary ownership rules, `Err` the value that is neither `always` nor `never`.
pub(crate) fn adopt_existing(value: Option<&str>) -> Result<bool, String> {
    match value {
        None | Some("never") => Ok(false),
        Some("always") => Ok(true),
        Some(other) => Err(format!(
            "annotation {ADOPT_EXISTING} is {other:?}; the values are \"always\" and \"never\""
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adopt_existing_knows_two_values() {
        assert_eq!(adopt_existing(None), Ok(false));
        assert_eq!(adopt_existing(Some("never")), Ok(false));
        assert_eq!(adopt_existing(Some("always")), Ok(true));
        for bad in ["Always", "true", "", "always "] {
            let err = adopt_existing(Some(bad)).unwrap_err();
            assert!(err.contains(&format!("{bad:?}")), "{err}");
        }
    }
}
