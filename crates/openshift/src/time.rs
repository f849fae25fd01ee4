//! Times as Kubernetes writes them in conditions, annotations and records: RFC 3339, whole seconds,
//! UTC (`2026-11-30T10:00:00Z`). One format, so that a time written by one component compares and
//! parses in every other.

use k8s_openapi::jiff::Timestamp;

/// `t` as Kubernetes writes times.
pub fn rfc3339(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Now, as Kubernetes writes times.
pub fn now_rfc3339() -> String {
    rfc3339(Timestamp::now())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_seconds_in_utc() {
        let t: Timestamp = "2026-11-30T10:00:00.123456Z".parse().unwrap();
        assert_eq!(rfc3339(t), "2026-11-30T10:00:00Z");
        let now = now_rfc3339();
        assert!(
            now.parse::<Timestamp>().is_ok() && now.ends_with('Z'),
            "{now}"
        );
    }
}
