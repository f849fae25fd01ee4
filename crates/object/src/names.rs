//! Kubernetes name rules the project checks before a name reaches the API server.

/// Whether `s` is a DNS-1123 label (lower-case letters, digits and `-`, at most 63 characters, a
/// letter or digit at each end): what Kubernetes accepts as a label value that is also a name, and
/// what the reference derives volume and ConfigMap names from. A provider name (it becomes a ConfigMap
/// name and part of object labels) and an image folder (it becomes part of an inventory key) must be
/// one.
pub fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_labels() {
        for ok in ["aws", "cluster-api", "a", "ibmcloud2", &"x".repeat(63)] {
            assert!(is_dns_label(ok), "{ok}");
        }
        for bad in [
            "",
            "-aws",
            "aws-",
            "AWS",
            "a_b",
            "a.b",
            "gcp ",
            &"x".repeat(64),
        ] {
            assert!(!is_dns_label(bad), "{bad:?}");
        }
    }
}
