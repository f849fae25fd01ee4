//! Who may read /metrics: the kube-rbac-proxy pattern, in-process. The caller's bearer token is checked
//! with a `TokenReview` (authentication) and the user it names with a `SubjectAccessReview` for `get` on
//! the non-resource URL (authorization), so access is granted with ordinary RBAC:
//!
//! ```yaml
//! rules:
//! - nonResourceURLs: [/metrics]
//!   verbs: [get]
//! ```
//!
//! Results are cached per token (allowed for a minute, refused for ten seconds), so a scraper every 30 s
//! costs the API server two requests a minute at most, and a revoked grant stops working within a
//! minute. The process needs `create` on `tokenreviews` and `subjectaccessreviews`.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::Api;
use kube::api::PostParams;
use sha2::{Digest, Sha256};

const ALLOWED_FOR: Duration = Duration::from_secs(60);
const REFUSED_FOR: Duration = Duration::from_secs(10);
/// Enough for every scraper of a cluster; a flood of distinct tokens empties the cache instead of
/// growing it.
const MAX_ENTRIES: usize = 1024;

/// The answer for one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    Allowed {
        user: String,
    },
    /// 401: no bearer token, or the API server does not accept it.
    Unauthenticated {
        reason: String,
    },
    /// 403: a valid user without `get` on the path.
    Forbidden {
        user: String,
        reason: String,
    },
}

/// The API server could not be asked.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AuthError {
    #[error("creating a TokenReview")]
    TokenReview(#[source] kube::Error),
    #[error("creating a SubjectAccessReview for {user}")]
    SubjectAccessReview {
        user: String,
        #[source]
        source: kube::Error,
    },
}

/// Authenticates and authorizes callers of one non-resource path.
pub(crate) struct Authorizer {
    client: kube::Client,
    path: String,
    cache: Mutex<HashMap<[u8; 32], (Instant, Decision)>>,
}

impl Authorizer {
    pub(crate) fn new(client: kube::Client, path: &str) -> Authorizer {
        Authorizer {
            client,
            path: path.to_string(),
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// Decides on the value of the request's `Authorization` header.
    pub(crate) async fn check(&self, authorization: Option<&str>) -> Result<Decision, AuthError> {
        let Some(token) = bearer_token(authorization) else {
            return Ok(Decision::Unauthenticated {
                reason: "no bearer token".into(),
            });
        };
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some(decision) = self.cached(&key) {
            return Ok(decision);
        }
        let decision = self.review(token).await?;
        self.remember(key, decision.clone());
        Ok(decision)
    }

    async fn review(&self, token: &str) -> Result<Decision, AuthError> {
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_string()),
                ..Default::default()
            },
            ..Default::default()
        };
        let reviews: Api<TokenReview> = Api::all(self.client.clone());
        let status = reviews
            .create(&PostParams::default(), &review)
            .await
            .map_err(AuthError::TokenReview)?
            .status
            .unwrap_or_default();
        let user = status.user.unwrap_or_default();
        let name = user.username.clone().unwrap_or_default();
        if status.authenticated != Some(true) || name.is_empty() {
            return Ok(Decision::Unauthenticated {
                reason: status
                    .error
                    .filter(|e| !e.is_empty())
                    .unwrap_or_else(|| "the token is not valid".into()),
            });
        }
        let access = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: user.username,
                groups: user.groups,
                uid: user.uid,
                extra: user.extra,
                non_resource_attributes: Some(NonResourceAttributes {
                    path: Some(self.path.clone()),
                    verb: Some("get".into()),
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let access_reviews: Api<SubjectAccessReview> = Api::all(self.client.clone());
        let status = access_reviews
            .create(&PostParams::default(), &access)
            .await
            .map_err(|source| AuthError::SubjectAccessReview {
                user: name.clone(),
                source,
            })?
            .status
            .unwrap_or_default();
        Ok(if status.allowed && status.denied != Some(true) {
            Decision::Allowed { user: name }
        } else {
            Decision::Forbidden {
                reason: status
                    .reason
                    .filter(|r| !r.is_empty())
                    .unwrap_or_else(|| format!("{name} may not get {}", self.path)),
                user: name,
            }
        })
    }

    fn cached(&self, key: &[u8; 32]) -> Option<Decision> {
        let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        let (at, decision) = cache.get(key)?;
        (at.elapsed() < ttl(decision)).then(|| decision.clone())
    }

    fn remember(&self, key: [u8; 32], decision: Decision) {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= MAX_ENTRIES {
            cache.retain(|_, (at, d)| at.elapsed() < ttl(d));
            if cache.len() >= MAX_ENTRIES {
                cache.clear();
            }
        }
        cache.insert(key, (Instant::now(), decision));
    }
}

fn ttl(decision: &Decision) -> Duration {
    match decision {
        Decision::Allowed { .. } => ALLOWED_FOR,
        _ => REFUSED_FOR,
    }
}

/// The token of `Authorization: Bearer <token>` (the scheme is case-insensitive, RFC 7235).
fn bearer_token(header: Option<&str>) -> Option<&str> {
    let (scheme, token) = header?.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens() {
        for (header, token) in [
            (None, None),
            (Some(""), None),
            (Some("Bearer"), None),
            (Some("Bearer "), None),
            (Some("Basic dXNlcjpwYXNz"), None),
            (Some("Bearer abc.def"), Some("abc.def")),
            (Some("bearer  abc "), Some("abc")),
        ] {
            assert_eq!(bearer_token(header), token, "{header:?}");
        }
    }
}
