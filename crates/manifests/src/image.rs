//! Container image references and the release's images file (key → image), checked where they are
//! read: an empty or malformed image would otherwise be written into a Deployment, where only the
//! kubelet's pull would fail, long after the installer reported success.
//!
//! The grammar is the one container runtimes and registries use (the distribution project's
//! `reference` package):
//!
//! ```text
//! reference  := name [ ":" tag ] [ "@" digest ]
//! name       := [ domain "/" ] path-component { "/" path-component }
//! domain     := host [ ":" port ]            host: DNS labels joined by ".", or [IPv6]
//! path-component := [a-z0-9]+ { separator [a-z0-9]+ }     separator: "." | "_" | "__" | "-"+
//! tag        := [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}
//! digest     := algorithm ":" hex             algorithm: [A-Za-z][A-Za-z0-9]* joined by [+._-];
//!                                             hex: 32 or more [0-9a-fA-F] (sha256: exactly 64)
//! ```
//!
//! A name is at most 255 characters. A first component counts as a domain when it has a `.` or a
//! `:`, or is `localhost`, or has an upper-case letter (which a path component may not).

use std::collections::BTreeMap;

/// Why a string is not an image reference.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reference:?} is not an image reference: {why}")]
pub struct ImageRefError {
    pub reference: String,
    pub why: String,
}

/// A parsed image reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRef<'a> {
    /// The registry host (and port), when the reference names one.
    pub domain: Option<&'a str>,
    /// The repository path below the domain.
    pub path: &'a str,
    pub tag: Option<&'a str>,
    pub digest: Option<&'a str>,
}

const NAME_MAX: usize = 255;
const TAG_MAX: usize = 128;

/// Parses `reference` by the grammar above.
pub fn parse(reference: &str) -> Result<ImageRef<'_>, ImageRefError> {
    let fail = |why: &str| ImageRefError {
        reference: reference.to_string(),
        why: why.to_string(),
    };
    if reference.is_empty() {
        return Err(fail("it is empty"));
    }
    if let Some(c) = reference
        .chars()
        .find(|c| c.is_whitespace() || c.is_control())
    {
        return Err(fail(&format!("it contains {c:?}")));
    }
    let (rest, digest) = match reference.split_once('@') {
        Some((rest, digest)) => {
            check_digest(digest).map_err(|why| fail(&why))?;
            (rest, Some(digest))
        }
        None => (reference, None),
    };
    // The tag is after the last ':' that comes after the last '/' (a ':' before it is a port).
    let last_slash = rest.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match rest[last_slash..].rfind(':') {
        Some(i) => {
            let at = last_slash + i;
            (&rest[..at], Some(&rest[at + 1..]))
        }
        None => (rest, None),
    };
    if let Some(tag) = tag {
        check_tag(tag).map_err(|why| fail(&why))?;
    }
    if name.is_empty() {
        return Err(fail("it has no repository name"));
    }
    if name.len() > NAME_MAX {
        return Err(fail(&format!(
            "its name is {} characters long (at most {NAME_MAX})",
            name.len()
        )));
    }
    let (domain, path) = match name.split_once('/') {
        Some((first, path))
            if first.contains(['.', ':'])
                || first == "localhost"
                || first.chars().any(|c| c.is_ascii_uppercase()) =>
        {
            check_domain(first).map_err(|why| fail(&why))?;
            (Some(first), path)
        }
        _ => (None, name),
    };
    for component in path.split('/') {
        check_path_component(component).map_err(|why| fail(&why))?;
    }
    Ok(ImageRef {
        domain,
        path,
        tag,
        digest,
    })
}

fn check_path_component(component: &str) -> Result<(), String> {
    let bad = || {
        format!(
            "repository path component {component:?} must be lower-case letters and digits, separated by '.', '_', '__' or dashes"
        )
    };
    if component.is_empty() {
        return Err("its repository path has an empty component".to_string());
    }
    let bytes = component.as_bytes();
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    if !alnum(bytes[0]) || !alnum(bytes[bytes.len() - 1]) {
        return Err(bad());
    }
    // Between runs of alphanumerics: '.', '_', '__' or one or more '-'.
    let mut i = 0;
    while i < bytes.len() {
        if alnum(bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && !alnum(bytes[i]) {
            i += 1;
        }
        let sep = &component[start..i];
        if !(sep == "." || sep == "_" || sep == "__" || sep.bytes().all(|b| b == b'-')) {
            return Err(bad());
        }
    }
    Ok(())
}

fn check_domain(domain: &str) -> Result<(), String> {
    let bad = |why: &str| format!("registry {domain:?} {why}");
    let (host, port) = if let Some(rest) = domain.strip_prefix('[') {
        let (v6, after) = rest
            .split_once(']')
            .ok_or_else(|| bad("has an unclosed '['"))?;
        if v6.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(bad("is not an IPv6 address in brackets"));
        }
        match after.strip_prefix(':') {
            Some(port) => (None, Some(port)),
            None if after.is_empty() => (None, None),
            None => return Err(bad("has text after its IPv6 address")),
        }
    } else {
        match domain.split_once(':') {
            Some((host, port)) => (Some(host), Some(port)),
            None => (Some(domain), None),
        }
    };
    if let Some(port) = port
        && (port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(bad("has a port that is not a number"));
    }
    if let Some(host) = host {
        let label_ok = |l: &str| {
            !l.is_empty()
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        };
        if !host.split('.').all(label_ok) {
            return Err(bad("is not a host name"));
        }
    }
    Ok(())
}

fn check_tag(tag: &str) -> Result<(), String> {
    let first_ok = tag
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_');
    let rest_ok = tag
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-');
    if tag.is_empty() {
        return Err("its tag (after ':') is empty".to_string());
    }
    if !first_ok || !rest_ok || tag.len() > TAG_MAX {
        return Err(format!(
            "tag {tag:?} must be letters, digits, '_', '.' and '-', not starting with '.' or '-', at most {TAG_MAX} characters"
        ));
    }
    Ok(())
}

fn check_digest(digest: &str) -> Result<(), String> {
    let bad = || {
        format!("digest {digest:?} must be ALGORITHM:HEX, e.g. sha256: and 64 hexadecimal digits")
    };
    let (algorithm, hex) = digest.split_once(':').ok_or_else(bad)?;
    let component_ok = |c: &str| {
        c.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
            && c.bytes().all(|b| b.is_ascii_alphanumeric())
    };
    if !algorithm.split(['+', '.', '_', '-']).all(component_ok) {
        return Err(bad());
    }
    if hex.len() < 32 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad());
    }
    if algorithm == "sha256" && hex.len() != 64 {
        return Err(format!(
            "digest {digest:?}: a sha256 digest has 64 hexadecimal digits, this one {}",
            hex.len()
        ));
    }
    Ok(())
}

/// Whether `reference` names its image by digest only, as `ClusterAPI` status demands of a
/// revision's component image (openshift/api `ImageDigestFormat`): a registry host, a path, no tag,
/// and `@sha256:` with 64 lower-case hexadecimal digits.
pub fn is_digest_reference(reference: &str) -> bool {
    let Ok(parsed) = parse(reference) else {
        return false;
    };
    let digest_ok = parsed
        .digest
        .and_then(|d| d.strip_prefix("sha256:"))
        .is_some_and(|hex| {
            hex.len() == 64
                && hex
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        });
    parsed.domain.is_some() && parsed.tag.is_none() && digest_ok
}

/// Why an images file cannot be used: every problem of it at once.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImagesError {
    #[error("{origin}: expected a JSON object of image keys to image references: {why}")]
    NotAMap { origin: String, why: String },
    #[error("{origin}: {}", .problems.join("; "))]
    Entries {
        origin: String,
        /// `key "k": <why>`, in key order.
        problems: Vec<String>,
    },
}

/// The release's images (key → image reference) from the text of an images file (JSON; YAML is
/// accepted too): every key non-empty, every value an image reference. `origin` names the file or
/// ConfigMap key in errors.
pub fn parse_images(origin: &str, text: &str) -> Result<BTreeMap<String, String>, ImagesError> {
    // Values are read as they are written, not as strings: a YAML parser would make `5` the string
    // "5", which is a valid reference (of `docker.io/library/5`), while the file meant no image.
    let entries: BTreeMap<String, serde_json::Value> =
        serde_saphyr::from_str(text).map_err(|e| ImagesError::NotAMap {
            origin: origin.to_string(),
            // The parser's message may span lines (a snippet of the input): the first says what.
            why: e
                .to_string()
                .lines()
                .next()
                .unwrap_or_default()
                .trim_start_matches("error: ")
                .to_string(),
        })?;
    image_map(origin, entries)
}

/// The release's images from the `data` of a ConfigMap in the reference's format (its
/// `capi-installer-images`: every key an image's name, every value its reference): the same checks as
/// a file's, every problem named by its key. `binary` are the keys of its `binaryData`, which cannot
/// hold a reference (a release never writes one there).
pub fn images_from_data(
    origin: &str,
    data: &BTreeMap<String, String>,
    binary: &[String],
) -> Result<BTreeMap<String, String>, ImagesError> {
    let entries = data
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())));
    match image_map(origin, entries) {
        Ok(map) if binary.is_empty() => Ok(map),
        result => {
            let mut problems = match result {
                Err(ImagesError::Entries { problems, .. }) => problems,
                _ => Vec::new(),
            };
            problems.extend(binary.iter().map(|key| {
                format!("binaryData key {key:?}: an image reference is text, under data")
            }));
            Err(ImagesError::Entries {
                origin: origin.to_string(),
                problems,
            })
        }
    }
}

/// Every key non-empty, every value an image reference; every bad entry named at once.
fn image_map(
    origin: &str,
    entries: impl IntoIterator<Item = (String, serde_json::Value)>,
) -> Result<BTreeMap<String, String>, ImagesError> {
    let mut problems = Vec::new();
    let mut map = BTreeMap::new();
    for (key, value) in entries {
        let Some(image) = value.as_str() else {
            problems.push(format!(
                "key {key:?}: {value} is not a string (an image reference is one)"
            ));
            continue;
        };
        if key.is_empty() {
            problems.push("an empty key".to_string());
        } else if let Err(e) = parse(image) {
            problems.push(format!("key {key:?}: {e}"));
        } else {
            map.insert(key, image.to_string());
        }
    }
    if problems.is_empty() {
        Ok(map)
    } else {
        Err(ImagesError::Entries {
            origin: origin.to_string(),
            problems,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn references_in_use_parse() {
        let digest = format!("quay.io/openshift-release-dev/ocp-v4.0-art-dev@{SHA}");
        let with_both = format!("registry.example:5000/a/b_c__d---e.f:v1.2_x@{SHA}");
        for (reference, domain, path, tag) in [
            (
                digest.as_str(),
                Some("quay.io"),
                "openshift-release-dev/ocp-v4.0-art-dev",
                None,
            ),
            (
                "registry.ci.openshift.org/openshift:aws-cluster-api-controllers",
                Some("registry.ci.openshift.org"),
                "openshift",
                Some("aws-cluster-api-controllers"),
            ),
            ("to.be/replaced:v99", Some("to.be"), "replaced", Some("v99")),
            ("busybox", None, "busybox", None),
            (
                "library/busybox:latest",
                None,
                "library/busybox",
                Some("latest"),
            ),
            ("localhost/x", Some("localhost"), "x", None),
            ("localhost:5000/x:1", Some("localhost:5000"), "x", Some("1")),
            ("[::1]:5000/x", Some("[::1]:5000"), "x", None),
            (
                with_both.as_str(),
                Some("registry.example:5000"),
                "a/b_c__d---e.f",
                Some("v1.2_x"),
            ),
        ] {
            let parsed = parse(reference).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(
                (parsed.domain, parsed.path, parsed.tag),
                (domain, path, tag),
                "{reference}"
            );
        }
    }

    #[test]
    fn what_is_not_a_reference_says_why() {
        for (reference, why) in [
            ("", "it is empty"),
            ("not an image ref!!", "it contains ' '"),
            ("quay.io/x\n", "it contains '\\n'"),
            ("Quay.io", "must be lower-case"),
            ("quay.io/UPPER", "\"UPPER\" must be lower-case"),
            ("quay.io/a//b", "an empty component"),
            ("quay.io/a-", "\"a-\" must be lower-case"),
            ("quay.io/a:", "its tag (after ':') is empty"),
            ("quay.io/a:-x", "tag \"-x\" must be"),
            (
                "quay.io/a@sha256:1",
                "digest \"sha256:1\" must be ALGORITHM:HEX",
            ),
            (
                "quay.io/a@sha256:0123456789abcdef0123456789abcdef",
                "a sha256 digest has 64 hexadecimal digits, this one 32",
            ),
            ("quay.io/a@md5", "must be ALGORITHM:HEX"),
            ("quay.io:x/a", "has a port that is not a number"),
            ("-bad.io/a", "is not a host name"),
            (":tag", "it has no repository name"),
            ("@sha256:x", "must be ALGORITHM:HEX"),
        ] {
            let err = parse(reference).expect_err(reference).to_string();
            assert!(
                err.starts_with(&format!("{reference:?} is not an image reference: "))
                    && err.contains(why),
                "{reference:?}: {err}"
            );
        }
        let long = format!("quay.io/{}", "a".repeat(250));
        assert!(parse(&long).unwrap_err().why.contains("at most 255"));
    }

    #[test]
    fn an_images_file_reports_every_bad_entry_at_once() {
        let text = r#"{"cluster-capi-controllers": "", "aws-cluster-api-controllers": "not an image ref!!",
            "kube-rbac-proxy": "quay.io/openshift/kube-rbac-proxy:4.21"}"#;
        let err = parse_images("images file /x/images.json", text).unwrap_err();
        assert_eq!(
            err.to_string(),
            "images file /x/images.json: key \"aws-cluster-api-controllers\": \"not an image ref!!\" is not an image reference: it contains ' '; key \"cluster-capi-controllers\": \"\" is not an image reference: it is empty"
        );
        let err = parse_images("f", r#"{"a": 1, "b": ["x"], "c": null}"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            "f: key \"a\": 1 is not a string (an image reference is one); key \"b\": [\"x\"] is not a string (an image reference is one); key \"c\": null is not a string (an image reference is one)"
        );
        let err = parse_images("f", "{\"a\": ").unwrap_err();
        assert!(matches!(err, ImagesError::NotAMap { .. }), "{err}");
        assert_eq!(err.to_string().lines().count(), 1, "{err}");
        assert!(!err.to_string().contains("error:"), "{err}");
        let err = parse_images("f", "[\"quay.io/x:1\"]").unwrap_err();
        assert!(matches!(err, ImagesError::NotAMap { .. }), "{err}");
        let ok = parse_images("f", r#"{"kube-rbac-proxy": "quay.io/x:1"}"#).unwrap();
        assert_eq!(ok["kube-rbac-proxy"], "quay.io/x:1");
    }

    #[test]
    fn an_images_configmap_names_itself_and_every_bad_key() {
        let origin = "ConfigMap openshift-cluster-api-operator/capi-installer-images";
        let data: BTreeMap<String, String> = [
            ("aws-cluster-api-controllers", "quay.io/a@sha256:12"),
            ("cluster-capi-controllers", "quay.io/openshift/core@sha256:"),
            (
                "gcp-cluster-api-controllers",
                "registry.ci.openshift.org/openshift:gcp",
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let err = images_from_data(origin, &data, &["blob".to_string()]).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with(&format!("{origin}: key \"aws-cluster-api-controllers\": ")),
            "{text}"
        );
        assert!(
            text.contains("; key \"cluster-capi-controllers\": "),
            "{text}"
        );
        assert!(
            text.ends_with("; binaryData key \"blob\": an image reference is text, under data"),
            "{text}"
        );
        assert!(
            !text.contains("gcp"),
            "a good entry is not a problem: {text}"
        );
        // Only binaryData wrong: still refused, naming it.
        let good: BTreeMap<String, String> = data
            .into_iter()
            .filter(|(k, _)| k.starts_with("gcp"))
            .collect();
        assert_eq!(images_from_data(origin, &good, &[]).unwrap(), good);
        let err = images_from_data(origin, &good, &["x".to_string()]).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("{origin}: binaryData key \"x\": an image reference is text, under data")
        );
    }

    #[test]
    fn digest_references_as_clusterapi_status_takes_them() {
        let hex = "0123456789abcdef".repeat(4);
        assert!(is_digest_reference(&format!(
            "quay.io/openshift/art@sha256:{hex}"
        )));
        assert!(is_digest_reference(&format!(
            "localhost:5000/a/b@sha256:{hex}"
        )));
        for bad in [
            "quay.io/openshift/art:4.22".to_string(),
            format!("quay.io/openshift/art:4.22@sha256:{hex}"),
            format!("art@sha256:{hex}"),
            format!("quay.io/art@sha256:{}", hex.to_uppercase()),
            format!("quay.io/art@sha512:{hex}{hex}"),
        ] {
            assert!(!is_digest_reference(&bad), "{bad}");
        }
    }
}
