//! Which version of the reference generator a provider fork vendors, and what that version did
//! that the current one does not: its output is what the fork committed, so a drop-in reproduces it.
//!
//! The version is the one the fork's Go module (`openshift/tools/go.mod`) requires of the generator
//! module; the generator's kustomize Component is vendored from the same version. The differences
//! that show in output are dated by the commit time in the pseudo-version:
//!
//! - before 2025-12-04 18:40:28 UTC (cluster-capi-operator PR #417, k8s.io/apimachinery v0.34): an
//!   object that went through the typed API carries `creationTimestamp: null`;
//! - before 2026-04-29 15:09:27 UTC (PR #524): the generator adds the workload-partitioning pod
//!   annotation to Deployments itself (later its Component does).

/// A version of the reference generator module (`github.com/openshift/cluster-capi-operator/
/// manifests-gen`), as a fork's `go.mod` requires it: a Go pseudo-version
/// `v0.0.0-<yyyymmddhhmmss>-<commit>` (the module has no tags).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratorVersion {
    pub version: String,
    /// The commit time, `yyyymmddhhmmss` (UTC), of a pseudo-version.
    timestamp: Option<u64>,
}

/// The reference generator's module path: a fork's `go.mod` requires it, and vendors its kustomize
/// Component under `vendor/<this path>`.
pub const GENERATOR_MODULE: &str = "github.com/openshift/cluster-capi-operator/manifests-gen";

/// The time (UTC) at which the reference was built with k8s.io/apimachinery v0.34 (PR #417, merged
/// 2025-12-04 18:40:28): its `ObjectMeta.creationTimestamp` is `omitzero`, so a typed round trip
/// stops writing `creationTimestamp: null`.
const APIMACHINERY_OMITZERO: u64 = 20251204184028;

/// The time (UTC) at which the workload-partitioning pod annotation moved from the generator's Go
/// code into its kustomize Component (cluster-capi-operator PR #524, merged 2026-04-29 15:09:27,
/// commit f2522897): generators of earlier versions add it to every Deployment's pod template
/// themselves, and their Component does not.
const WORKLOAD_ANNOTATION_MOVED: u64 = 20260429150927;

impl GeneratorVersion {
    /// The version `go_mod` requires of [`GENERATOR_MODULE`], if it requires it.
    pub fn from_go_mod(go_mod: &str) -> Option<GeneratorVersion> {
        go_mod.lines().find_map(|line| {
            let line = line.split("//").next().unwrap_or("").trim();
            let line = line.strip_prefix("require").map_or(line, str::trim);
            let mut words = line.split_whitespace();
            (words.next() == Some(GENERATOR_MODULE))
                .then(|| words.next())
                .flatten()
                .map(GeneratorVersion::parse)
        })
    }

    pub fn parse(version: &str) -> GeneratorVersion {
        // vX.Y.Z-<14 digits>-<12 hex> (also vX.Y.Z-pre.0.<14 digits>-<hex>).
        let timestamp = version
            .rsplit('-')
            .nth(1)
            .map(|t| t.rsplit('.').next().unwrap_or(t))
            .filter(|t| t.len() == 14 && t.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|t| t.parse().ok());
        GeneratorVersion {
            version: version.to_owned(),
            timestamp,
        }
    }

    /// Whether this generator's typed round trips write `creationTimestamp: null` (it was built
    /// with k8s.io/apimachinery before v0.34, whose `ObjectMeta` lacks `omitzero`).
    pub fn writes_null_creation_timestamp(&self) -> bool {
        self.timestamp.is_some_and(|t| t < APIMACHINERY_OMITZERO)
    }

    /// Whether this generator adds the workload-partitioning annotation to Deployments itself
    /// (its Component does not).
    pub fn adds_workload_annotation(&self) -> bool {
        self.timestamp
            .is_some_and(|t| t < WORKLOAD_ANNOTATION_MOVED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_a_forks_go_mod_requires() {
        let single = "module tools\n\nrequire github.com/openshift/cluster-capi-operator/manifests-gen v0.0.0-20260518130250-c585235ee71f\n";
        let block = "require (\n\tgithub.com/openshift/cluster-capi-operator/manifests-gen v0.0.0-20251128150503-3d0f9cd4dcdf // indirect\n\tgolang.org/x/tools v0.1.0\n)\n";
        let gcp = GeneratorVersion::from_go_mod(single).unwrap();
        assert_eq!(gcp.version, "v0.0.0-20260518130250-c585235ee71f");
        assert!(!gcp.adds_workload_annotation() && !gcp.writes_null_creation_timestamp());
        let old = GeneratorVersion::from_go_mod(block).unwrap();
        assert!(old.adds_workload_annotation() && old.writes_null_creation_timestamp());
        let between = GeneratorVersion::parse("v0.0.0-20260115171337-6d81723878cd");
        assert!(between.adds_workload_annotation() && !between.writes_null_creation_timestamp());
        assert_eq!(
            GeneratorVersion::from_go_mod("module x\nrequire golang.org/x/tools v0.1.0\n"),
            None
        );
        // Not a pseudo-version: the current behaviour.
        assert!(!GeneratorVersion::parse("v1.2.3").adds_workload_annotation());
    }
}
