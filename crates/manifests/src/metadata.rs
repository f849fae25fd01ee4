//! The clusterctl `Metadata` document (`metadata.yaml`). The transport ConfigMap carries the text
//! verbatim; this type only validates it.

use serde::{Deserialize, Serialize};

use crate::error::Error;

pub(crate) const METADATA_API_VERSION: &str = "clusterctl.cluster.x-k8s.io/v1alpha3";
pub(crate) const METADATA_KIND: &str = "Metadata";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    /// Empty when the file leaves it out (see [`Metadata::parse`]).
    #[serde(default)]
    pub api_version: String,
    /// Empty when the file leaves it out (see [`Metadata::parse`]).
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub(crate) release_series: Vec<ReleaseSeries>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ReleaseSeries {
    pub(crate) major: u32,
    pub(crate) minor: u32,
    pub(crate) contract: String,
}

impl Metadata {
    /// Parses and validates metadata text; `source` names it in errors.
    pub fn parse(source: &str, text: &str) -> Result<Self, Error> {
        let err = |message: String| Error::Metadata {
            source_name: source.to_owned(),
            message,
        };
        let md: Metadata = serde_saphyr::from_str(text).map_err(|e| err(e.to_string()))?;
        // The metadata.yaml of the release-4.19/4.20 provider branches has no `kind` (only
        // `apiVersion` and `releaseSeries`). clusterctl decodes the file into its typed
        // `Metadata`, which fills a missing kind or apiVersion from the type, so such files are
        // valid; only a *different* kind or apiVersion is another document.
        let api_version_ok = md.api_version.is_empty() || md.api_version == METADATA_API_VERSION;
        let kind_ok = md.kind.is_empty() || md.kind == METADATA_KIND;
        if !api_version_ok || !kind_ok {
            return Err(err(format!(
                "expected apiVersion {METADATA_API_VERSION} and kind {METADATA_KIND} (either may be left out), found apiVersion {:?}, kind {:?}",
                md.api_version, md.kind
            )));
        }
        if md.release_series.is_empty() {
            return Err(err("releaseSeries is empty".to_owned()));
        }
        if let Some(rs) = md.release_series.iter().find(|rs| rs.contract.is_empty()) {
            return Err(err(format!(
                "release series {}.{} has an empty contract",
                rs.major, rs.minor
            )));
        }
        Ok(md)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "# comment\napiVersion: clusterctl.cluster.x-k8s.io/v1alpha3\nkind: Metadata\nreleaseSeries:\n  - major: 1\n    minor: 11\n    contract: v1beta2\n  - major: 1\n    minor: 10\n    contract: v1beta1\n";

    #[test]
    fn parses_release_series() {
        let md = Metadata::parse("metadata.yaml", GOOD).unwrap();
        let series: Vec<(u32, u32, &str)> = md
            .release_series
            .iter()
            .map(|rs| (rs.major, rs.minor, rs.contract.as_str()))
            .collect();
        assert_eq!(series, [(1, 11, "v1beta2"), (1, 10, "v1beta1")]);
    }

    #[test]
    fn kind_and_api_version_may_be_left_out() {
        // As on the release-4.19/4.20 branches of the provider forks.
        let no_kind = "apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3\nreleaseSeries:\n  - major: 2\n    minor: 8\n    contract: v1beta1\n";
        let md = Metadata::parse("metadata.yaml", no_kind).unwrap();
        assert_eq!(md.kind, "");
        assert_eq!(md.release_series[0].contract, "v1beta1");
        let neither = "releaseSeries:\n  - {major: 1, minor: 0, contract: v1beta1}\n";
        assert_eq!(
            Metadata::parse("metadata.yaml", neither)
                .unwrap()
                .release_series
                .len(),
            1
        );
    }

    #[test]
    fn rejects_wrong_documents() {
        for (text, want) in [
            ("apiVersion: v1\nkind: ConfigMap\n", "expected apiVersion"),
            (
                "apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3\nkind: Provider\nreleaseSeries: [{major: 1, minor: 0, contract: v1beta1}]\n",
                r#"kind "Provider""#,
            ),
            (
                "kind: Metadata\napiVersion: clusterctl.cluster.x-k8s.io/v1alpha4\nreleaseSeries: [{major: 1, minor: 0, contract: v1beta1}]\n",
                r#"found apiVersion "clusterctl.cluster.x-k8s.io/v1alpha4""#,
            ),
            (
                "apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3\nkind: Metadata\nreleaseSeries: []\n",
                "releaseSeries is empty",
            ),
            (
                "apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3\nkind: Metadata\nreleaseSeries:\n- {major: x, minor: 1, contract: v1}\n",
                "",
            ),
            ("{{{", ""),
        ] {
            let err = Metadata::parse("md.yaml", text).unwrap_err().to_string();
            assert!(
                err.starts_with("md.yaml: invalid clusterctl metadata"),
                "{err}"
            );
            assert!(err.contains(want), "{err}");
        }
    }
}
