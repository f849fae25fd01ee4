//! The kubeconfig Secret's content, and when its token is due for renewal. Pure.

use std::time::Duration;

use base64::Engine;
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use crate::config::Target;
use crate::names::*;

/// Cluster API's Secret type for cluster kubeconfigs.
pub(crate) const CLUSTER_SECRET_TYPE: &str = "cluster.x-k8s.io/secret";

pub(crate) fn secret_name(cluster: &str) -> String {
    format!("{cluster}-kubeconfig")
}

/// The kubeconfig text: one cluster, one user with `token`, one context (namespace
/// openshift-cluster-api). Written by hand so that the same inputs give the same bytes, which is how
/// an unchanged Secret is recognized.
pub(crate) fn render(cluster: &str, namespace: &str, target: &Target, token: &str) -> String {
    let q = |s: &str| serde_json::to_string(s).expect("strings serialize");
    let ca = base64::engine::general_purpose::STANDARD.encode(target.ca_pem.as_bytes());
    let user = KUBECONFIG_SERVICE_ACCOUNT;
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: {c}
  cluster:
    server: {server}
    certificate-authority-data: {ca}
users:
- name: {user}
  user:
    token: {token}
contexts:
- name: {c}
  context:
    cluster: {c}
    user: {user}
    namespace: {ns}
current-context: {c}
",
        c = q(cluster),
        server = q(&target.server),
        token = q(token),
        ns = q(namespace),
    )
}

/// The token of a kubeconfig this module rendered (`None` for anything else).
pub fn token_of(kubeconfig: &str) -> Option<String> {
    let parsed: Value = serde_saphyr::from_str(kubeconfig).ok()?;
    parsed
        .pointer("/users/0/user/token")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
}

/// The kubeconfig text of a live Secret (`data.value`, base64).
pub fn kubeconfig_of(secret: &Value) -> Option<String> {
    let encoded = secret.pointer("/data/value").and_then(Value::as_str)?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()?;
    String::from_utf8(bytes).ok()
}

/// The Secret as we apply it. `issued_at` (RFC 3339) is when its token was issued.
pub(crate) fn desired_secret(
    cluster: &str,
    namespace: &str,
    kubeconfig: &str,
    issued_at: &str,
) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": secret_name(cluster),
            "namespace": namespace,
            "labels": {
                CLUSTER_NAME_LABEL: cluster,
                MANAGED_BY_LABEL: OWNERSHIP_LABEL_VALUE,
            },
            "annotations": {TOKEN_REFRESH_ANNOTATION: issued_at},
        },
        "type": CLUSTER_SECRET_TYPE,
        "data": {"value": base64::engine::general_purpose::STANDARD.encode(kubeconfig.as_bytes())},
    })
}

/// How long the token issued at `issued_at` may still be used before renewal; zero when it is due now
/// (or the time is unreadable: better a new token than one of unknown age).
pub(crate) fn remaining(
    issued_at: Option<&str>,
    now: Timestamp,
    rotate_after: Duration,
) -> Duration {
    let Some(issued) = issued_at.and_then(|t| t.parse::<Timestamp>().ok()) else {
        return Duration::ZERO;
    };
    let age = now.duration_since(issued);
    let age = Duration::try_from(age).unwrap_or(Duration::ZERO);
    rotate_after.saturating_sub(age)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::pem;

    fn target() -> Target {
        Target {
            server: "https://api-int.demo.example.com:6443".into(),
            ca_pem: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n".into(),
        }
    }

    #[test]
    fn renders_a_kubeconfig_that_kubeconfig_parsers_read() {
        let text = render(
            "demo-x7k2p",
            "openshift-cluster-api",
            &target(),
            "eyJhbGciOi.abc.def",
        );
        let parsed = kube::config::Kubeconfig::from_yaml(&text).expect("kube parses it");
        assert_eq!(parsed.current_context.as_deref(), Some("demo-x7k2p"));
        let cluster = parsed.clusters[0].cluster.as_ref().unwrap();
        assert_eq!(
            cluster.server.as_deref(),
            Some("https://api-int.demo.example.com:6443")
        );
        let ca = base64::engine::general_purpose::STANDARD
            .decode(cluster.certificate_authority_data.as_ref().unwrap())
            .unwrap();
        assert_eq!(String::from_utf8(ca).unwrap(), target().ca_pem);
        let context = parsed.contexts[0].context.as_ref().unwrap();
        assert_eq!(context.namespace.as_deref(), Some("openshift-cluster-api"));
        assert_eq!(
            token_of(&text).as_deref(),
            Some("eyJhbGciOi.abc.def"),
            "the token reads back"
        );
        assert_eq!(token_of("not: [a kubeconfig"), None);
        assert_eq!(token_of("users: []"), None);
    }

    #[test]
    fn the_secret_round_trips_its_kubeconfig() {
        let text = render("demo", "openshift-cluster-api", &target(), "t");
        let secret = desired_secret(
            "demo",
            "openshift-cluster-api",
            &text,
            "2026-01-01T00:00:00Z",
        );
        assert_eq!(secret["metadata"]["name"], "demo-kubeconfig");
        assert_eq!(secret["type"], "cluster.x-k8s.io/secret");
        assert_eq!(
            secret["metadata"]["labels"]["cluster.x-k8s.io/cluster-name"],
            "demo"
        );
        assert_eq!(kubeconfig_of(&secret).as_deref(), Some(text.as_str()));
    }

    #[test]
    fn tokens_are_renewed_after_the_rotation_period() {
        let now: Timestamp = "2026-01-01T01:00:00Z".parse().unwrap();
        let thirty = Duration::from_secs(1800);
        let cases = [
            (Some("2026-01-01T00:50:00Z"), Duration::from_secs(1200)),
            (Some("2026-01-01T00:30:00Z"), Duration::ZERO),
            (Some("2025-12-31T00:00:00Z"), Duration::ZERO),
            (Some("yesterday"), Duration::ZERO),
            (None, Duration::ZERO),
        ];
        for (issued, expected) in cases {
            assert_eq!(remaining(issued, now, thirty), expected, "{issued:?}");
        }
    }

    #[test]
    fn pem_wraps_der_at_64_columns() {
        let pem = pem(&[vec![0u8; 60]]);
        let lines: Vec<&str> = pem.lines().collect();
        assert_eq!(lines[0], "-----BEGIN CERTIFICATE-----");
        assert_eq!(lines[1].len(), 64);
        assert_eq!(lines[2].len(), 16);
        assert_eq!(lines[3], "-----END CERTIFICATE-----");
    }
}
