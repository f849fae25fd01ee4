//! Writing as the owner: each owner's writes impersonate an identity of its own, so that the API
//! server judges them by that identity's RBAC rather than by the writer's.
//!
//! The caller reads with its own client (watch caches, GETs) and assigns each owner (an
//! [`Inventory`](crate::Inventory)'s `owner`) the user its writes impersonate
//! ([`Identities::assign`]). Every write of an owner — server-side apply, its dry-run, the release
//! patch and the DELETE of prune — then goes through a client that sends `Impersonate-User` with that
//! user: the API server checks the writer's right to impersonate it, and then authorizes the request,
//! and checks the escalation of a role or binding it writes, against that user's RBAC alone. An owner
//! without an identity writes nothing ([`IdentityError::Unassigned`]): a forgotten assignment fails
//! closed instead of writing with the caller's wider rights.
//!
//! Hand-written: kube-rs impersonates per `Config` (`auth_info.impersonate`), not per request, so one
//! client is kept per user, built once from the caller's configuration.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use kube::Client;

/// Why an owner's writes have no client.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    #[error("owner {owner} has no identity to write as: nothing of it is written")]
    Unassigned { owner: String },
    #[error("a client impersonating {user}: {source}")]
    Client {
        user: String,
        #[source]
        source: kube::Error,
    },
}

/// The users owners write as, and one client per user. Cheap to clone (shared).
#[derive(Clone)]
pub struct Identities {
    base: kube::Config,
    inner: Arc<Mutex<Assigned>>,
}

#[derive(Default)]
struct Assigned {
    /// owner → user it impersonates.
    users: HashMap<String, String>,
    /// user → client impersonating it.
    clients: HashMap<String, Client>,
}

impl std::fmt::Debug for Identities {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        f.debug_struct("Identities")
            .field("users", &inner.users)
            .finish_non_exhaustive()
    }
}

impl Identities {
    /// Clients made from `base` (the caller's own configuration: its credentials do the impersonating).
    pub fn new(base: kube::Config) -> Self {
        Identities {
            base,
            inner: Arc::default(),
        }
    }

    /// `owner`'s writes impersonate `user` from now on (a ServiceAccount's user name is
    /// `system:serviceaccount:<namespace>:<name>`).
    pub fn assign(&self, owner: &str, user: &str) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if inner.users.get(owner).map(String::as_str) != Some(user) {
            inner.users.insert(owner.to_string(), user.to_string());
        }
    }

    /// The client `owner`'s writes go through.
    pub fn client_for(&self, owner: &str) -> Result<Client, IdentityError> {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let user = inner
            .users
            .get(owner)
            .cloned()
            .ok_or_else(|| IdentityError::Unassigned {
                owner: owner.to_string(),
            })?;
        if let Some(client) = inner.clients.get(&user) {
            return Ok(client.clone());
        }
        let mut config = self.base.clone();
        config.auth_info.impersonate = Some(user.clone());
        // The API server adds a ServiceAccount's own groups when none are named.
        config.auth_info.impersonate_groups = None;
        let client = Client::try_from(config).map_err(|source| IdentityError::Client {
            user: user.clone(),
            source,
        })?;
        inner.clients.insert(user, client.clone());
        Ok(client)
    }
}
