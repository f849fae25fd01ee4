//! The YAML layer on real data: every fixture document survives serialize → parse unchanged
//! (multi-line descriptions, strings that look like numbers or booleans, empty strings,
//! `x-kubernetes-*` keys, megabyte CRDs), and serialization is stable.

use std::path::Path;

use capi_manifests::yaml::{parse_documents, to_multi_yaml};

fn fixtures() -> Option<std::path::PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures");
    if dir.join("manifests-gen").is_dir() {
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
fn fixture_documents_round_trip() {
    let Some(dir) = fixtures() else { return };
    let mut files = 0;
    let mut documents = 0;
    let mut lookalikes = Lookalikes::default();
    for sub in [
        "manifests-gen/aws",
        "manifests-gen/gcp",
        "manifests-gen/core",
        "openshift-crds",
        "profiles/aws",
    ] {
        for e in std::fs::read_dir(dir.join(sub)).unwrap().flatten() {
            let p = e.path();
            if p.extension().is_none_or(|x| x != "yaml")
                || p.file_name().unwrap() == "metadata.yaml"
            {
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap();
            let docs = parse_documents(&p.display().to_string(), &text).unwrap();
            let values: Vec<_> = docs.into_iter().map(|d| d.value).collect();
            let out = to_multi_yaml(&values).unwrap();
            let back: Vec<_> = parse_documents("round trip", &out)
                .unwrap()
                .into_iter()
                .map(|d| d.value)
                .collect();
            assert_eq!(back.len(), values.len(), "{}", p.display());
            for (i, (a, b)) in values.iter().zip(&back).enumerate() {
                assert!(
                    a == b,
                    "{} document {i} changed by the round trip",
                    p.display()
                );
            }
            assert_eq!(
                to_multi_yaml(&back).unwrap(),
                out,
                "{}: stable",
                p.display()
            );
            files += 1;
            documents += values.len();
            values
                .iter()
                .for_each(|v| count_lookalikes(v, &mut lookalikes));
        }
    }
    assert!(
        files >= 8 && documents > 100,
        "{files} files, {documents} documents"
    );
    // The round trip above covered the tricky shapes, not just easy ones.
    assert!(
        lookalikes.empty > 0 && lookalikes.boolish > 0 && lookalikes.numeric > 0,
        "{lookalikes:?}"
    );
    assert!(
        lookalikes.multiline > 100 && lookalikes.x_kubernetes_keys > 0,
        "{lookalikes:?}"
    );
}

/// Strings that a careless emitter would change: empty, boolean- or number-looking, multi-line;
/// and `x-kubernetes-*` keys.
#[derive(Debug, Default)]
struct Lookalikes {
    empty: usize,
    boolish: usize,
    numeric: usize,
    multiline: usize,
    x_kubernetes_keys: usize,
}

fn count_lookalikes(v: &serde_json::Value, c: &mut Lookalikes) {
    match v {
        serde_json::Value::String(s) => {
            if s.is_empty() {
                c.empty += 1;
            } else if ["true", "false", "yes", "no", "on", "off"].contains(&s.as_str()) {
                c.boolish += 1;
            } else if s.parse::<f64>().is_ok() {
                c.numeric += 1;
            } else if s.contains('\n') {
                c.multiline += 1;
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| count_lookalikes(x, c)),
        serde_json::Value::Object(m) => {
            c.x_kubernetes_keys += m.keys().filter(|k| k.starts_with("x-kubernetes-")).count();
            m.values().for_each(|x| count_lookalikes(x, c));
        }
        _ => {}
    }
}
