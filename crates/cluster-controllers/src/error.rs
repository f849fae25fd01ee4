//! Errors of the controllers, and the one place that maps them to status reasons.

/// A problem with what the cluster says (Infrastructure, Machines, source Secrets): the input is
/// untrusted, so each error names the object and the field or key. Deterministic: retrying without a
/// change of the input gives the same error.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum InputError {
    #[error("{object}: {field} is not set")]
    Missing { object: String, field: String },
    #[error("{object}: {field}: {message}")]
    Invalid {
        object: String,
        field: String,
        message: String,
    },
    /// No object to derive from at all (e.g. neither a ControlPlaneMachineSet nor a control-plane
    /// Machine).
    #[error("{0}")]
    NoSource(String),
}

/// Why a reconcile failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ControllerError {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error("{verb} {object}: {source}")]
    Api {
        verb: &'static str,
        object: String,
        #[source]
        source: kube::Error,
    },
    /// A watch the controller needs keeps failing (its watcher retries with backoff meanwhile).
    #[error("watching {what}: {message}")]
    Watch {
        what: String,
        message: String,
        forbidden: bool,
    },
}

/// Status reasons of failures (the `Degraded=True` reason, and `Available=False`'s), also metric labels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum FailureReason {
    /// A field, key or object the controller derives from is absent.
    MissingSource,
    /// A field or key the controller derives from has a value it cannot use.
    InvalidSource,
    /// The API server refused a request for lack of permission.
    Forbidden,
    /// The API server rejected a request (validation, admission, conflict) or could not be reached.
    RequestFailed,
}

impl FailureReason {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            FailureReason::MissingSource => "MissingSource",
            FailureReason::InvalidSource => "InvalidSource",
            FailureReason::Forbidden => "Forbidden",
            FailureReason::RequestFailed => "RequestFailed",
        }
    }
}

impl ControllerError {
    pub(crate) fn api(verb: &'static str, object: impl Into<String>, source: kube::Error) -> Self {
        ControllerError::Api {
            verb,
            object: object.into(),
            source,
        }
    }

    pub(crate) fn reason(&self) -> FailureReason {
        match self {
            ControllerError::Input(InputError::Missing { .. } | InputError::NoSource(_)) => {
                FailureReason::MissingSource
            }
            ControllerError::Input(InputError::Invalid { .. }) => FailureReason::InvalidSource,
            ControllerError::Api {
                source: kube::Error::Api(status),
                ..
            } if status.code == 403 => FailureReason::Forbidden,
            ControllerError::Watch {
                forbidden: true, ..
            } => FailureReason::Forbidden,
            ControllerError::Api { .. } | ControllerError::Watch { .. } => {
                FailureReason::RequestFailed
            }
        }
    }

    /// Whether the same attempt may succeed without any change (a timeout, an overloaded or restarting
    /// API server, an optimistic-concurrency conflict). Such errors degrade the controller only when
    /// they persist; the others (bad input, missing permission, a rejected object) at once.
    pub(crate) fn is_transient(&self) -> bool {
        match self {
            ControllerError::Input(_) => false,
            ControllerError::Api {
                source: kube::Error::Api(status),
                ..
            } => status.code == 409 || status.code == 429 || status.code >= 500,
            ControllerError::Api { .. } => true,
            ControllerError::Watch { forbidden, .. } => !forbidden,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(code: u16) -> ControllerError {
        let status = kube::core::Status::failure("no", "X").with_code(code);
        ControllerError::api("apply", "Secret a/b", kube::Error::Api(Box::new(status)))
    }

    #[test]
    fn reasons_and_transience() {
        let missing = ControllerError::from(InputError::Missing {
            object: "Secret a/b".into(),
            field: "data.userData".into(),
        });
        assert_eq!(missing.reason().as_str(), "MissingSource");
        assert!(!missing.is_transient());
        assert_eq!(missing.to_string(), "Secret a/b: data.userData is not set");
        assert_eq!(api(403).reason(), FailureReason::Forbidden);
        assert!(!api(403).is_transient());
        assert_eq!(api(422).reason(), FailureReason::RequestFailed);
        assert!(!api(422).is_transient());
        for code in [409, 429, 500, 503] {
            assert!(api(code).is_transient(), "{code}");
        }
    }
}
