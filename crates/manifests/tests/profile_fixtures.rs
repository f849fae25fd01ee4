//! The profile metadata of real provider images (`../shared/fixtures/profiles/{aws,core,gcp}`):
//! parsed, and selected per platform in the reference's order.

use std::path::Path;

use capi_manifests::profile::{ProfileMetadata, select};

fn profiles() -> Option<std::path::PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/profiles");
    if dir.join("core/metadata.yaml").is_file() {
        return Some(dir);
    }
    assert!(
        std::env::var("CI").map_or(true, |v| v != "true"),
        "{} missing (CI=true)",
        dir.display()
    );
    eprintln!("skipping: {} missing", dir.display());
    None
}

#[test]
fn real_profiles_parse_and_select() {
    let Some(dir) = profiles() else { return };
    let all: Vec<ProfileMetadata> = ["gcp", "aws", "core"]
        .iter()
        .map(|p| {
            let path = dir.join(p).join("metadata.yaml");
            let text = std::fs::read_to_string(&path).unwrap();
            ProfileMetadata::parse(&path.display().to_string(), &text).unwrap()
        })
        .collect();
    let core = all.iter().find(|m| m.name == "cluster-api").unwrap();
    assert_eq!(core.ocp_platform, None, "core is for every platform");
    assert_eq!(core.install_order, 10);
    assert_eq!(core.attributes["type"], "core");
    assert_eq!(
        core.self_image_ref.as_deref(),
        Some("registry.ci.openshift.org/openshift:cluster-capi-controllers")
    );
    let names = |platform: &str| {
        select(&all, platform, |m| m)
            .into_iter()
            .map(|m| m.name.as_str())
            .collect::<Vec<_>>()
    };
    assert_eq!(names("AWS"), ["cluster-api", "cluster-api-provider-aws"]);
    assert_eq!(names("GCP"), ["cluster-api", "cluster-api-provider-gcp"]);
    assert_eq!(names("VSphere"), ["cluster-api"]);
}
