//! Embeds the release manifests (`manifests/*.yaml` at the repository root) so that the bundle policy
//! protects every object the release ships for the installer and its controllers, without a second
//! list to keep in step with the files.

use std::path::Path;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../manifests");
    // A new or removed file changes the folder; an edited file is tracked by `include_str!`.
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("readable manifests folder").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    let mut out = String::from("pub(crate) const MANIFESTS: &[(&str, &str)] = &[\n");
    for path in files {
        let path = path.canonicalize().expect("manifest path");
        let name = path.file_name().expect("file name").to_string_lossy();
        out.push_str(&format!(
            "    ({name:?}, include_str!({:?})),\n",
            path.display().to_string()
        ));
    }
    out.push_str("];\n");
    let target = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("manifests.rs");
    std::fs::write(target, out).expect("write manifests.rs");
}
