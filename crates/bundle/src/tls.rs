//! The cluster's TLS security profile (`APIServer/cluster`, config.openshift.io/v1) as the
//! substitutions `TLS_MIN_VERSION` and `TLS_CIPHER_SUITES` that provider manifests use for their
//! servers' flags (`--tls-min-version=${TLS_MIN_VERSION}`), decided exactly as the reference decides
//! them (ref §3.4: OpenShift's controller-runtime-common and library-go). Pure.
//!
//! - `spec.tlsAdherence` unset or `LegacyAdheringComponentsOnly`: the profile is not honoured, the
//!   Intermediate profile is used (components that did not follow the cluster's profile before keep
//!   their own default); `StrictAllComponents`, or any value not known yet, honours it.
//! - `spec.tlsSecurityProfile` unset, or `type` empty or unknown: Intermediate; `Old`, `Intermediate`,
//!   `Modern`: OpenShift's profiles ([`profile_spec`]); `Custom`: its `custom` spec, which must be set.
//! - `TLS_MIN_VERSION` is the Go name of the minimum version (`VersionTLS12`; empty means TLS 1.2).
//! - `TLS_CIPHER_SUITES` is the comma-joined IANA names of the profile's ciphers (OpenSSL names in the
//!   profile), in the profile's order; ciphers Go's crypto/tls does not implement are dropped.
//!
//! A missing `APIServer/cluster` (a cluster that is not OpenShift, a test control plane without the
//! kind) counts as one without a profile: Intermediate. The reference refuses to start then; a
//! provider's TLS flags still get the platform's default instead of an empty value.

use std::collections::BTreeMap;

use serde_json::Value;

pub const MIN_VERSION_VARIABLE: &str = "TLS_MIN_VERSION";
pub const CIPHER_SUITES_VARIABLE: &str = "TLS_CIPHER_SUITES";

use capi_openshift::resources::APISERVER_NAME;

/// A TLS profile: the minimum version (`VersionTLS12`) and the ciphers by OpenSSL name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profile {
    pub min_version: String,
    pub ciphers: Vec<String>,
}

/// An `APIServer/cluster` whose TLS profile cannot be used; the message names the field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("APIServer {APISERVER_NAME}: {field}: {message}")]
pub struct TlsError {
    pub field: &'static str,
    pub message: String,
}

/// OpenShift's predefined profiles (openshift/api `config/v1` `TLSProfiles`): ciphers by OpenSSL
/// name, in their order, and the minimum version.
pub fn profile_spec(profile_type: &str) -> Option<Profile> {
    const TLS13: [&str; 3] = [
        "TLS_AES_128_GCM_SHA256",
        "TLS_AES_256_GCM_SHA384",
        "TLS_CHACHA20_POLY1305_SHA256",
    ];
    const INTERMEDIATE12: [&str; 6] = [
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        "ECDHE-RSA-AES128-GCM-SHA256",
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        "ECDHE-RSA-AES256-GCM-SHA384",
        "ECDHE-ECDSA-CHACHA20-POLY1305",
        "ECDHE-RSA-CHACHA20-POLY1305",
    ];
    const OLD_ONLY: [&str; 15] = [
        "ECDHE-ECDSA-AES128-SHA256",
        "ECDHE-RSA-AES128-SHA256",
        "ECDHE-ECDSA-AES128-SHA",
        "ECDHE-RSA-AES128-SHA",
        "ECDHE-ECDSA-AES256-SHA384",
        "ECDHE-RSA-AES256-SHA384",
        "ECDHE-ECDSA-AES256-SHA",
        "ECDHE-RSA-AES256-SHA",
        "AES128-GCM-SHA256",
        "AES256-GCM-SHA384",
        "AES128-SHA256",
        "AES256-SHA256",
        "AES128-SHA",
        "AES256-SHA",
        "DES-CBC3-SHA",
    ];
    let (min, lists): (&str, &[&[&str]]) = match profile_type {
        "Old" => ("VersionTLS10", &[&TLS13, &INTERMEDIATE12, &OLD_ONLY]),
        "Intermediate" => ("VersionTLS12", &[&TLS13, &INTERMEDIATE12]),
        "Modern" => ("VersionTLS13", &[&TLS13]),
        _ => return None,
    };
    Some(Profile {
        min_version: min.to_string(),
        ciphers: lists
            .iter()
            .flat_map(|l| l.iter())
            .map(|c| c.to_string())
            .collect(),
    })
}

/// OpenSSL cipher names → IANA names, for the ciphers Go's crypto/tls implements (library-go's
/// `openSSLToIANACiphers`); TLS 1.3 suites have one name in both.
const OPENSSL_TO_IANA: &[(&str, &str)] = &[
    ("TLS_AES_128_GCM_SHA256", "TLS_AES_128_GCM_SHA256"),
    ("TLS_AES_256_GCM_SHA384", "TLS_AES_256_GCM_SHA384"),
    (
        "TLS_CHACHA20_POLY1305_SHA256",
        "TLS_CHACHA20_POLY1305_SHA256",
    ),
    (
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    ),
    (
        "ECDHE-RSA-AES128-GCM-SHA256",
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    ),
    (
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    ),
    (
        "ECDHE-RSA-AES256-GCM-SHA384",
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    ),
    (
        "ECDHE-ECDSA-CHACHA20-POLY1305",
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
    ),
    (
        "ECDHE-RSA-CHACHA20-POLY1305",
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
    ),
    (
        "ECDHE-ECDSA-AES128-SHA256",
        "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
    ),
    (
        "ECDHE-RSA-AES128-SHA256",
        "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
    ),
    ("AES128-GCM-SHA256", "TLS_RSA_WITH_AES_128_GCM_SHA256"),
    ("AES256-GCM-SHA384", "TLS_RSA_WITH_AES_256_GCM_SHA384"),
    ("AES128-SHA256", "TLS_RSA_WITH_AES_128_CBC_SHA256"),
    (
        "ECDHE-ECDSA-AES128-SHA",
        "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
    ),
    ("ECDHE-RSA-AES128-SHA", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"),
    (
        "ECDHE-ECDSA-AES256-SHA",
        "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
    ),
    ("ECDHE-RSA-AES256-SHA", "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA"),
    ("AES128-SHA", "TLS_RSA_WITH_AES_128_CBC_SHA"),
    ("AES256-SHA", "TLS_RSA_WITH_AES_256_CBC_SHA"),
    ("DES-CBC3-SHA", "TLS_RSA_WITH_3DES_EDE_CBC_SHA"),
    (
        "ECDHE-RSA-DES-CBC3-SHA",
        "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA",
    ),
];

const VERSIONS: [&str; 4] = [
    "VersionTLS10",
    "VersionTLS11",
    "VersionTLS12",
    "VersionTLS13",
];

/// The profile the cluster's providers use, from the `spec` of `APIServer/cluster` (`None`: no such
/// object).
pub fn cluster_profile(spec: Option<&Value>) -> Result<Profile, TlsError> {
    let intermediate = || profile_spec("Intermediate").expect("a predefined profile");
    let Some(spec) = spec else {
        return Ok(intermediate());
    };
    let adherence = spec
        .get("tlsAdherence")
        .and_then(Value::as_str)
        .unwrap_or("");
    if matches!(adherence, "" | "LegacyAdheringComponentsOnly") {
        return Ok(intermediate());
    }
    let Some(profile) = spec.get("tlsSecurityProfile").filter(|p| !p.is_null()) else {
        return Ok(intermediate());
    };
    let profile_type = profile.get("type").and_then(Value::as_str).unwrap_or("");
    if profile_type != "Custom" {
        return Ok(profile_spec(profile_type).unwrap_or_else(intermediate));
    }
    let Some(custom) = profile.get("custom").filter(|c| !c.is_null()) else {
        return Err(TlsError {
            field: "spec.tlsSecurityProfile.custom",
            message: "type Custom needs a custom profile".into(),
        });
    };
    let ciphers = match custom.get("ciphers") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|c| {
                c.as_str().map(str::to_string).ok_or_else(|| TlsError {
                    field: "spec.tlsSecurityProfile.custom.ciphers",
                    message: format!("{c} is not a cipher name"),
                })
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(TlsError {
                field: "spec.tlsSecurityProfile.custom.ciphers",
                message: format!("{other} is not a list of cipher names"),
            });
        }
    };
    let min_version = match custom.get("minTLSVersion") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(v)) => v.clone(),
        Some(other) => {
            return Err(TlsError {
                field: "spec.tlsSecurityProfile.custom.minTLSVersion",
                message: format!("{other} is not a TLS version"),
            });
        }
    };
    Ok(Profile {
        min_version,
        ciphers,
    })
}

/// `TLS_MIN_VERSION` and `TLS_CIPHER_SUITES` of `profile`.
pub fn substitutions(profile: &Profile) -> Result<BTreeMap<String, String>, TlsError> {
    let min = match profile.min_version.as_str() {
        // library-go: an empty version is the default, TLS 1.2.
        "" => "VersionTLS12",
        v if VERSIONS.contains(&v) => v,
        other => {
            return Err(TlsError {
                field: "spec.tlsSecurityProfile.custom.minTLSVersion",
                message: format!(
                    "{other:?} is not a TLS version (one of {})",
                    VERSIONS.join(", ")
                ),
            });
        }
    };
    let ciphers: Vec<&str> = profile
        .ciphers
        .iter()
        .filter_map(|c| {
            OPENSSL_TO_IANA
                .iter()
                .find(|(openssl, _)| openssl == c)
                .map(|(_, iana)| *iana)
        })
        .collect();
    Ok(BTreeMap::from([
        (MIN_VERSION_VARIABLE.to_string(), min.to_string()),
        (CIPHER_SUITES_VARIABLE.to_string(), ciphers.join(",")),
    ]))
}

/// [`substitutions`] of [`cluster_profile`].
pub fn cluster_substitutions(spec: Option<&Value>) -> Result<BTreeMap<String, String>, TlsError> {
    substitutions(&cluster_profile(spec)?)
}

/// The substitutions of a render for a cluster whose `APIServer/cluster` is `apiserver` (the whole
/// object; `None` when there is none), under the administrator's (`given`, which win): the values, and
/// the variables without one (a profile that cannot be used: both TLS variables, with the error).
pub fn with_cluster_profile(
    apiserver: Option<&Value>,
    given: &BTreeMap<String, String>,
) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    let (mut values, mut unavailable) = (BTreeMap::new(), BTreeMap::new());
    match cluster_substitutions(apiserver.and_then(|a| a.get("spec"))) {
        Ok(tls) => values.extend(tls),
        Err(e) => {
            for variable in [MIN_VERSION_VARIABLE, CIPHER_SUITES_VARIABLE] {
                if !given.contains_key(variable) {
                    unavailable.insert(variable.to_string(), e.to_string());
                }
            }
        }
    }
    values.extend(given.iter().map(|(k, v)| (k.clone(), v.clone())));
    (values, unavailable)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const INTERMEDIATE_SUITES: &str = "TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384,TLS_CHACHA20_POLY1305_SHA256,TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256";

    fn subs(spec: Option<Value>) -> (String, String) {
        let s = cluster_substitutions(spec.as_ref()).unwrap();
        (
            s[MIN_VERSION_VARIABLE].clone(),
            s[CIPHER_SUITES_VARIABLE].clone(),
        )
    }

    #[test]
    fn without_strict_adherence_the_intermediate_profile_applies() {
        let modern = json!({"type": "Modern", "modern": {}});
        for spec in [
            None,
            Some(json!({})),
            Some(json!({"tlsSecurityProfile": modern})),
            Some(
                json!({"tlsAdherence": "LegacyAdheringComponentsOnly", "tlsSecurityProfile": modern}),
            ),
        ] {
            assert_eq!(
                subs(spec.clone()),
                ("VersionTLS12".into(), INTERMEDIATE_SUITES.into()),
                "{spec:?}"
            );
        }
    }

    #[test]
    fn strict_adherence_honours_each_profile_type() {
        let strict = |profile: Value| {
            Some(json!({"tlsAdherence": "StrictAllComponents", "tlsSecurityProfile": profile}))
        };
        assert_eq!(
            subs(strict(json!({"type": "Modern", "modern": {}}))),
            (
                "VersionTLS13".into(),
                "TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384,TLS_CHACHA20_POLY1305_SHA256".into()
            )
        );
        let (min, old) = subs(strict(json!({"type": "Old", "old": {}})));
        assert_eq!(min, "VersionTLS10");
        let old: Vec<&str> = old.split(',').collect();
        // 24 ciphers in the profile; the three Go does not implement are dropped.
        assert_eq!(old.len(), 21);
        assert_eq!(old.last(), Some(&"TLS_RSA_WITH_3DES_EDE_CBC_SHA"));
        assert!(!old.iter().any(|c| c.contains("CBC_SHA384")));
        for unknown in [json!({"type": ""}), json!({"type": "Future"}), json!(null)] {
            assert_eq!(
                subs(strict(unknown.clone())),
                ("VersionTLS12".into(), INTERMEDIATE_SUITES.into()),
                "{unknown}"
            );
        }
        // A policy value not known yet counts as strict (openshift/api's advice).
        assert_eq!(
            subs(Some(
                json!({"tlsAdherence": "Stricter", "tlsSecurityProfile": {"type": "Modern"}})
            ))
            .0,
            "VersionTLS13"
        );
    }

    #[test]
    fn a_custom_profile_keeps_its_order_and_drops_what_go_lacks() {
        let spec = json!({"tlsAdherence": "StrictAllComponents", "tlsSecurityProfile": {"type": "Custom",
            "custom": {"minTLSVersion": "VersionTLS11", "ciphers": ["ECDHE-RSA-AES256-GCM-SHA384", "AES256-SHA256", "TLS_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"]}}});
        assert_eq!(
            subs(Some(spec)),
            (
                "VersionTLS11".into(),
                "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,TLS_AES_128_GCM_SHA256".into()
            )
        );
        let empty = json!({"tlsAdherence": "StrictAllComponents", "tlsSecurityProfile": {"type": "Custom", "custom": {}}});
        assert_eq!(subs(Some(empty)), ("VersionTLS12".into(), String::new()));
    }

    #[test]
    fn the_administrators_values_win_and_a_broken_profile_leaves_the_variables_without_value() {
        let given: BTreeMap<String, String> =
            [("TLS_MIN_VERSION".to_string(), "VersionTLS13".to_string())].into();
        let (values, unavailable) = with_cluster_profile(None, &given);
        assert_eq!(values[MIN_VERSION_VARIABLE], "VersionTLS13");
        assert_eq!(values[CIPHER_SUITES_VARIABLE], INTERMEDIATE_SUITES);
        assert!(unavailable.is_empty());
        let broken = json!({"spec": {"tlsAdherence": "StrictAllComponents", "tlsSecurityProfile": {"type": "Custom"}}});
        let (values, unavailable) = with_cluster_profile(Some(&broken), &given);
        assert_eq!(values.len(), 1, "{values:?}");
        assert_eq!(
            unavailable.keys().collect::<Vec<_>>(),
            [CIPHER_SUITES_VARIABLE]
        );
        assert!(unavailable[CIPHER_SUITES_VARIABLE].contains("spec.tlsSecurityProfile.custom"));
    }

    #[test]
    fn a_custom_profile_that_cannot_be_used_names_the_field() {
        let strict = |profile: Value| json!({"tlsAdherence": "StrictAllComponents", "tlsSecurityProfile": profile});
        let cases = [
            (json!({"type": "Custom"}), "spec.tlsSecurityProfile.custom"),
            (
                json!({"type": "Custom", "custom": {"minTLSVersion": "TLS1.3"}}),
                "spec.tlsSecurityProfile.custom.minTLSVersion",
            ),
            (
                json!({"type": "Custom", "custom": {"ciphers": "AES128-SHA"}}),
                "spec.tlsSecurityProfile.custom.ciphers",
            ),
        ];
        for (profile, field) in cases {
            let err = cluster_substitutions(Some(&strict(profile.clone()))).unwrap_err();
            assert_eq!(err.field, field, "{profile}");
            assert!(err.to_string().starts_with("APIServer cluster: "), "{err}");
        }
    }
}
