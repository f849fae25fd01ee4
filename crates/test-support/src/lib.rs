//! Dev-only: the one home of what the integration tests and the benchmarks share. A test file does
//! `use test_support::*;` and finds:
//!
//! | module | what |
//! |---|---|
//! | [`env`] | a real control plane with an admin client ([`Env`]), [`eventually`], clients with a user agent |
//! | [`objects`] | server-side apply as a given manager, kinds found by discovery, the release payload's and this repository's manifests |
//! | [`openshift`] | what OpenShift's installer leaves (`Infrastructure/cluster`, the Machine API), `ClusterOperator/cluster-api` and its conditions |
//! | [`payload`] | the fixtures' transport ConfigMaps, edits of them, small synthetic providers ([`Tiny`]), release images |
//! | [`audit`] | the audit log's requests by user agent, writes, one line per request |
//! | [`installer`] | the installer run in this process ([`Running`]) and its test configurations |
//! | [`reference`] | a cluster as the reference's two generations leave it: its objects, field managers and marks |
//! | [`process`] | binaries run as processes ([`Replica`]): free ports, /healthz, /metrics over TLS, tokens, Leases |
//! | [`stress`] | a busy machine on purpose: spinning threads, a CPU quota on the API server, a proxy that delays or stalls |
//! | [`ec2`] | an emulated EC2 (moto) on a real node's network, the AWS account OpenShift's installer leaves, its instances |
//! | [`bench`] | what the benchmarks (examples) need besides: the release binary, a process's memory |
//! | [`compare`] | semantic comparison of object sets and transport ConfigMaps (not glob-exported) |
//!
//! Everything panics on failure (it is test setup) except [`bench`], whose callers report errors.

pub mod audit;
pub mod bench;
pub mod compare;
pub mod ec2;
pub mod env;
pub mod installer;
pub mod objects;
pub mod openshift;
pub mod payload;
pub mod process;
pub mod reference;
pub mod stress;

pub use audit::*;
pub use env::*;
pub use installer::*;
pub use objects::*;
pub use openshift::*;
pub use payload::*;
pub use process::*;
pub use reference::*;
pub use stress::*;

/// The providers' namespace: the transport ConfigMaps, the provider objects and the controllers pod.
pub const NS: &str = capi_manifests::TARGET_NAMESPACE;
/// The installer's own namespace: its ServiceAccount, Lease, inventory and revisions.
pub const INSTALLER_NS: &str = capi_manifests::INSTALLER_NAMESPACE;
/// The Machine API's namespace (control-plane Machines, the worker user data).
pub const MAPI_NS: &str = "openshift-machine-api";

/// Returns from the test (with a printed reason) when a fixture is missing outside CI.
#[macro_export]
macro_rules! require_fixture {
    ($rel:expr) => {
        match $crate::fixture($rel) {
            Some(p) => p,
            None => return,
        }
    };
}
