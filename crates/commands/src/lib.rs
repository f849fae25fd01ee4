//! The back ends of `capi-installer`'s commands beside `run`, so that the binary only parses arguments
//! and formats, and the installer library holds only what the loop runs:
//!
//! | command | module | I/O |
//! |---|---|---|
//! | `diff` | [`diff`]: the steps of a reconcile, stopped before the first write | API server (reads, dry-runs) |
//! | `render` | [`offline`]: the planning from files, no cluster | files |
//! | `status` | [`status`]: what is installed, from the cluster's records | API server (reads) |
//! | `rollback` | [`rollback`]: ask the installer to serve an earlier revision | API server (reads; one PATCH) |
//!
//! Each reaches the installer library's steps by the names it had there (`crate::source`, ...):
//! the imports below.

#![warn(unreachable_pub)]

pub mod diff;
pub mod offline;
pub mod rollback;
pub mod status;

use capi_bundle::render;
use capi_installer_controller::{
    api, desired, extensions, inventory, names, policy, prepare, proxy, revision, round, source,
    tls,
};
