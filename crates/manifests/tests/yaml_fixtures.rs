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

/// A components text recalled from the memo is what parsing it returns, for every provider's
/// transport ConfigMap and profile of the fixtures (values, identities, locations).
#[test]
fn memo_recalls_every_real_provider_as_parsed() {
    use capi_manifests::TransportConfigMap;
    use capi_manifests::memo::ParseMemo;
    use capi_manifests::yaml::parse_objects;

    let Some(dir) = fixtures() else { return };
    let mut texts: Vec<(String, String)> = Vec::new();
    for e in std::fs::read_dir(dir.join("transport-configmaps"))
        .unwrap()
        .flatten()
    {
        let p = e.path();
        if !p.to_string_lossy().contains("_04_cm.") {
            continue;
        }
        let value: serde_json::Value =
            serde_saphyr::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        let content = TransportConfigMap::decode(&value).unwrap().content;
        texts.push((p.display().to_string(), content.components));
    }
    for e in std::fs::read_dir(dir.join("profiles")).unwrap().flatten() {
        let p = e.path().join("manifests.yaml");
        if p.is_file() {
            texts.push((
                p.display().to_string(),
                std::fs::read_to_string(&p).unwrap(),
            ));
        }
    }
    assert!(texts.len() >= 8, "{} texts", texts.len());
    let memo = ParseMemo::default();
    for (source, text) in &texts {
        let parsed = parse_objects(source, text).unwrap();
        assert_eq!(
            memo.parse_objects(source, text).unwrap(),
            parsed,
            "{source}: first"
        );
        assert_eq!(
            memo.parse_objects(source, text).unwrap(),
            parsed,
            "{source}: recalled"
        );
    }
    let stats = memo.stats();
    assert_eq!((stats.entries, stats.recalled), (texts.len(), texts.len()));
    // A few tens of kB per provider (BENCHMARKS.md, "the components parsed once").
    assert!(
        stats.bytes < texts.len() * 100_000,
        "{stats:?} for {} texts",
        texts.len()
    );
}
