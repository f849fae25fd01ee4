//! Dev-only: a real etcd + kube-apiserver (+ controller-manager, scheduler, KWOK) for tests and the demo.
//!
//! [`ControlPlane::start`] runs etcd and kube-apiserver on free loopback ports with certificates made
//! for this one start, Node+RBAC authorization, ServiceAccount tokens and an audit log of every request
//! (`<dir>/audit.log`), loads the OpenShift config CRDs and writes an admin kubeconfig
//! (`<dir>/kubeconfig`). With [`ControlPlaneOptions::with_workloads`] it also runs
//! kube-controller-manager, kube-scheduler and KWOK with one fake node (`kwok-node-0`) so that
//! Deployments become Available without any container runtime.
//!
//! Children never outlive a test: they are killed on drop, and, because an aborted or killed test
//! process never runs drop, they also carry `PR_SET_PDEATHSIG=SIGKILL`. That signal fires when the
//! *thread* that forked a child exits, so children are forked from one dedicated thread per control
//! plane, which ends only after its children are dead (or with the whole process).
//! Only the `up` command (and [`ControlPlane::start_background`]) leaves them running on purpose.
//!
//! ```no_run
//! # async fn demo() -> Result<(), control_plane::Error> {
//! use control_plane::{ControlPlane, ControlPlaneOptions};
//!
//! let cp = ControlPlane::start(ControlPlaneOptions::default()).await?;
//! let mut config = cp.admin_config();
//! // kube-rs sends no User-Agent by itself; set one to find your requests in the audit log.
//! config.headers.push((http::header::USER_AGENT, http::HeaderValue::from_static("me/1")));
//! let client = kube::Client::try_from(config).unwrap();
//! // ... requests ...
//! let writes = cp.audit_events()?.into_iter().filter(|e| e.is_write()).count();
//! # let _ = (client, writes);
//! # Ok(()) }
//! ```
//!
//! A ControlPlane is `Send + Sync` and may be shared between tests (e.g. in a `OnceLock`). A shared
//! one is never dropped, so its processes end only with the test process (parent-death signal) and
//! a temporary folder stays behind; and build clients per test from [`ControlPlane::admin_config`],
//! because a client is tied to the tokio runtime it was created on.

mod audit;
mod containerd;
mod crds;
mod error;
mod files;
mod locations;
pub mod netpol;
pub mod node;
mod pki;
pub mod ports;
mod process;
pub mod registry;
pub mod service_ca;
mod workloads;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use base64::Engine;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use kube::api::{Api, ObjectMeta, PostParams};

pub use audit::{AuditEvent, AuditObjectRef, AuditUser};
pub use error::Error;

use error::{io, kube as kube_err};
use files::{Files, SERVICE_CIDR, args, config_from_kubeconfig, ignore_exists, write_kubeconfig};
pub use locations::{bin_dir, images_dir, repository_crds_dir, shared_fixture};
use locations::{build_script, is_ci, openshift_api_crds_dir, repo_root};
use process::{Process, Spawner};

/// Which OpenShift CRDs (`Infrastructure`, `ClusterOperator`, `ClusterVersion`, `FeatureGate`, `Proxy`,
/// `ClusterAPI`; `APIServer`, the Cloud Credential Operator's `CredentialsRequest` and
/// `CompatibilityRequirement` from [`repository_crds_dir`]) to load before [`ControlPlane::start`]
/// returns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum OpenShiftCrds {
    /// The CRDs of the pinned `github.com/openshift/api` module (`tools/openshift-api/build.sh`'s
    /// `openshift/`) and this crate's [`repository_crds_dir`]. When they cannot be had (no Go, the
    /// module proxy unreachable) they are skipped with a printed reason, except with env `CI=true`,
    /// where it is an error.
    #[default]
    Default,
    Skip,
    /// Every CustomResourceDefinition in the `*.yaml`/`*.yml` files of this folder.
    From(PathBuf),
}

#[derive(Clone, Debug, Default)]
pub struct ControlPlaneOptions {
    /// Where certificates, kubeconfigs, etcd data, logs, pids and the audit log go. `None`: a fresh
    /// temporary folder, removed when the ControlPlane is dropped.
    pub dir: Option<PathBuf>,
    /// Also run kube-controller-manager, kube-scheduler and KWOK with one fake node.
    pub with_workloads: bool,
    /// Run a real node instead of KWOK (controller-manager and scheduler included): see [`node`].
    pub node: Option<NodeOptions>,
    pub openshift_crds: OpenShiftCrds,
}

/// What a real node runs.
#[derive(Clone, Debug)]
pub struct NodeOptions {
    /// The OCI image layout that `hack/images.sh` writes ([`images_dir`]), served to containerd.
    pub images: PathBuf,
}

/// A real node's parts that live in this process, and its namespaces.
struct Node {
    namespaces: node::Namespaces,
    services: node::Services,
    files: node::NodeFiles,
    service_ca_pem: String,
    /// Started once the API server is ready.
    service_ca: Option<service_ca::ServiceCa>,
}

/// A running control plane. Dropping it (or [`ControlPlane::stop`]) kills its processes.
pub struct ControlPlane {
    dir: PathBuf,
    server: String,
    ca_pem: String,
    admin_config: kube::Config,
    processes: Vec<Process>,
    spawner: Spawner,
    node: Option<Node>,
    // Declared last: the folder goes only after the processes that write into it are dead.
    _temp: Option<tempfile::TempDir>,
}

const _: () = {
    const fn shareable<T: Send + Sync>() {}
    shareable::<ControlPlane>();
};

const API_READY_TIMEOUT: Duration = Duration::from_secs(60);
const CRD_TIMEOUT: Duration = Duration::from_secs(30);
const NODE_READY_TIMEOUT: Duration = Duration::from_secs(30);
const REAL_NODE_READY_TIMEOUT: Duration = Duration::from_secs(120);
const SERVICE_ACCOUNT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

impl ControlPlane {
    /// Starts etcd and kube-apiserver (and the workload components when asked), waits until the API
    /// server is ready and the CRDs are Established (and the fake node Ready), and returns.
    pub async fn start(opts: ControlPlaneOptions) -> Result<ControlPlane, Error> {
        Self::launch_retrying(opts, Spawner::attached).await
    }

    /// Like [`ControlPlane::start`], but the processes keep running after this process exits (no
    /// parent-death signal, nothing killed on return); stop them with [`stop_background`] (the `down`
    /// command). Needs an explicit [`ControlPlaneOptions::dir`]. Returns the kubeconfig path.
    pub async fn start_background(opts: ControlPlaneOptions) -> Result<PathBuf, Error> {
        if opts.dir.is_none() {
            return Err(Error::Other {
                context: "start a background control plane".into(),
                message: "it needs an explicit folder (ControlPlaneOptions::dir)".into(),
            });
        }
        if opts.node.is_some() {
            return Err(Error::Other {
                context: "start a background control plane".into(),
                message:
                    "a real node lives in the process that started it: use `control-plane run`"
                        .into(),
            });
        }
        let mut cp = Self::launch_retrying(opts, || Ok(Spawner::Detached)).await?;
        // Dropping a std Child neither kills nor waits: the processes live on, found again by pid.
        cp.processes.clear();
        Ok(cp.kubeconfig_path())
    }

    /// Free ports are picked, released and only then bound by etcd and kube-apiserver; another
    /// process (a parallel test's client socket, say) may take one in between. That shows as
    /// "address already in use" and is worth another try with fresh ports, not a failed test.
    async fn launch_retrying(
        opts: ControlPlaneOptions,
        spawner: impl Fn() -> Result<Spawner, Error>,
    ) -> Result<ControlPlane, Error> {
        const ATTEMPTS: usize = 3;
        let mut attempt = 1;
        loop {
            match Self::launch(opts.clone(), spawner()?).await {
                Err(Error::ProcessExited { ref tail, .. })
                    if attempt < ATTEMPTS && tail.contains("address already in use") =>
                {
                    attempt += 1;
                }
                result => return result,
            }
        }
    }

    async fn launch(opts: ControlPlaneOptions, spawner: Spawner) -> Result<ControlPlane, Error> {
        let bin = tokio::task::spawn_blocking(bin_dir)
            .await
            .map_err(|e| Error::Build {
                script: build_script(),
                message: e.to_string(),
            })??;

        let (dir, temp) = match opts.dir {
            Some(dir) => {
                fs::create_dir_all(&dir).map_err(io(format!("create {}", dir.display())))?;
                // Canonical, because `down` recognizes our processes by this path in their
                // command lines.
                let dir =
                    fs::canonicalize(&dir).map_err(io(format!("resolve {}", dir.display())))?;
                (dir, None)
            }
            None => {
                let temp = tempfile::Builder::new()
                    .prefix("control-plane-")
                    .tempdir()
                    .map_err(io("create a temporary folder"))?;
                (temp.path().to_path_buf(), Some(temp))
            }
        };
        let running = process::running_recorded(&dir);
        if !running.is_empty() {
            return Err(Error::State {
                dir,
                message: format!(
                    "already running ({}); stop it first with `control-plane down`",
                    running.join(", ")
                ),
            });
        }
        for sub in ["logs", "pids", "pki"] {
            let path = dir.join(sub);
            fs::create_dir_all(&path).map_err(io(format!("create {}", path.display())))?;
        }

        let pki = pki::Pki::generate()?;
        let files = Files::new(&dir);
        for (path, content) in [
            (&files.ca_cert, &pki.ca_cert_pem),
            (&files.ca_key, &pki.ca_key_pem),
            (&files.serving_cert, &pki.serving_cert_pem),
            (&files.serving_key, &pki.serving_key_pem),
            (&files.sa_key, &pki.service_account_key_pem),
            (&files.sa_pub, &pki.service_account_pub_pem),
            (&files.admin_cert, &pki.admin_cert_pem),
            (&files.admin_key, &pki.admin_key_pem),
            (&files.audit_policy, &audit::POLICY.to_string()),
        ] {
            fs::write(path, content).map_err(io(format!("write {}", path.display())))?;
        }

        let containerd_bin = match &opts.node {
            Some(_) => {
                node::check_prerequisites()?;
                node::sweep_leftovers();
                let built = tokio::task::spawn_blocking(containerd::bin_dir).await;
                Some(built.map_err(|e| Error::Build {
                    script: repo_root().join("tools/containerd/build.sh"),
                    message: e.to_string(),
                })??)
            }
            None => None,
        };
        let mut processes = Vec::new();
        let node = match (&opts.node, &containerd_bin) {
            (Some(node_opts), Some(containerd_bin)) => Some(Self::start_node_namespaces(
                &spawner,
                &dir,
                node_opts,
                containerd_bin,
                &pki,
                &files,
                &mut processes,
            )?),
            _ => None,
        };
        let [etcd_client, etcd_peer, apiserver_port] = match &node {
            // Inside the node's own network namespace nothing else binds these.
            Some(node) => [2379, 2380, node.services.api_port],
            None => ports::free_loopback_ports().map_err(io("find free loopback ports"))?,
        };
        let server = format!("https://127.0.0.1:{apiserver_port}");
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let kubeconfig = dir.join("kubeconfig");
        write_kubeconfig(
            &kubeconfig,
            &server,
            &pki.ca_cert_pem,
            "admin",
            &[
                ("client-certificate-data", b64(&pki.admin_cert_pem)),
                ("client-key-data", b64(&pki.admin_key_pem)),
            ],
        )?;
        let admin_config = config_from_kubeconfig(&kubeconfig).await?;

        let mut cp = ControlPlane {
            dir: dir.clone(),
            server,
            ca_pem: pki.ca_cert_pem.clone(),
            admin_config,
            processes,
            spawner,
            node,
            _temp: temp,
        };

        let etcd_url = format!("http://127.0.0.1:{etcd_client}");
        let peer_url = format!("http://127.0.0.1:{etcd_peer}");
        cp.spawn(
            "etcd",
            &bin.join("etcd"),
            args(&[
                "--name=control-plane",
                &format!("--data-dir={}", dir.join("etcd").display()),
                &format!("--listen-client-urls={etcd_url}"),
                &format!("--advertise-client-urls={etcd_url}"),
                &format!("--listen-peer-urls={peer_url}"),
                &format!("--initial-advertise-peer-urls={peer_url}"),
                &format!("--initial-cluster=control-plane={peer_url}"),
                // Test data is thrown away: durability only costs time.
                "--unsafe-no-fsync=true",
                "--log-level=warn",
            ]),
        )?;
        let p = |path: &Path| path.display().to_string();
        let mut apiserver_args = match &cp.node {
            // Pods reach it through the `kubernetes` Service (the node address); it fetches logs
            // from the kubelet as admin.
            Some(_) => args(&[
                "--bind-address=0.0.0.0",
                &format!("--advertise-address={}", node::NODE_IP),
                &format!("--secure-port={}", node::API_PORT),
                &format!("--kubelet-client-certificate={}", p(&files.admin_cert)),
                &format!("--kubelet-client-key={}", p(&files.admin_key)),
            ]),
            None => args(&[
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                &format!("--secure-port={apiserver_port}"),
                // The `kubernetes` Service would point at the advertise address, which may not be
                // loopback; nothing in the cluster needs to reach the API server through it.
                "--endpoint-reconciler-type=none",
            ]),
        };
        apiserver_args.extend(args(&[
            &format!("--etcd-servers={etcd_url}"),
            &format!("--cert-dir={}", p(&dir.join("pki"))),
            &format!("--tls-cert-file={}", p(&files.serving_cert)),
            &format!("--tls-private-key-file={}", p(&files.serving_key)),
            &format!("--client-ca-file={}", p(&files.ca_cert)),
            "--authorization-mode=Node,RBAC",
            &format!("--service-account-issuer={SERVICE_ACCOUNT_ISSUER}"),
            &format!("--service-account-key-file={}", p(&files.sa_pub)),
            &format!("--service-account-signing-key-file={}", p(&files.sa_key)),
            &format!("--service-cluster-ip-range={SERVICE_CIDR}"),
            "--allow-privileged=true",
            &format!("--audit-policy-file={}", p(&files.audit_policy)),
            &format!("--audit-log-path={}", p(&dir.join("audit.log"))),
            "--audit-log-format=json",
            // Each event is written before the response is sent: a test that reads the log
            // right after its request finds the event.
            "--audit-log-mode=blocking",
            "--profiling=false",
        ]));
        cp.spawn(
            "kube-apiserver",
            &bin.join("kube-apiserver"),
            apiserver_args,
        )?;
        cp.wait_api_ready(API_READY_TIMEOUT).await?;
        let client = cp.admin_client().await?;

        if cp.node.is_some() {
            cp.start_node(&bin, &files, &client).await?;
        } else if opts.with_workloads {
            workloads::start(
                &mut |name, binary, args| cp.spawn(name, binary, args),
                &bin,
                &files,
                &client,
            )
            .await?;
        }

        let with_repository_crds = opts.openshift_crds == OpenShiftCrds::Default;
        let crd_dir = match opts.openshift_crds {
            OpenShiftCrds::Skip => None,
            OpenShiftCrds::From(dir) => Some(dir),
            OpenShiftCrds::Default => match openshift_api_crds_dir() {
                Ok(dir) => Some(dir.join("openshift")),
                Err(e) if is_ci() => return Err(e),
                Err(e) => {
                    eprintln!("control-plane: OpenShift CRDs not loaded: {e}");
                    None
                }
            },
        };
        if let Some(crd_dir) = crd_dir {
            let mut crds = crds::read_dir(&crd_dir)?;
            // The CRDs the module lacks, kept in this repository (APIServer, at the feature set whose
            // TLS profile fields the installer reads; CredentialsRequest, the Cloud Credential
            // Operator's, for the release's requests of cloud credentials; CompatibilityRequirement,
            // for other users' pins on provider CRDs); with the module's only, as a folder given
            // instead replaces both.
            if with_repository_crds {
                crds.extend(crds::read_dir(&repository_crds_dir())?);
            }
            let apply = crds::apply_and_wait(&client, &crds, CRD_TIMEOUT);
            cp.while_running(apply).await?;
        }

        if opts.with_workloads && cp.node.is_none() {
            let kwok_log = cp.dir.join("logs/kwok.log");
            let ready = workloads::wait_node_ready(&client, NODE_READY_TIMEOUT, &kwok_log);
            cp.while_running(ready).await?;
        }
        Ok(cp)
    }

    /// The node's namespaces (their holder becomes the first process), the services this process
    /// runs for it, and its configuration files.
    fn start_node_namespaces(
        spawner: &Spawner,
        dir: &Path,
        opts: &NodeOptions,
        containerd_bin: &Path,
        pki: &pki::Pki,
        files: &Files,
        processes: &mut Vec<Process>,
    ) -> Result<Node, Error> {
        let layout = registry::Layout::open(&opts.images)?;
        let (unshare, holder_args) = node::Namespaces::holder_command();
        let holder = process::spawn(spawner, dir, "node-namespaces", &unshare, &holder_args)?;
        let holder_pid = holder.child.id();
        processes.push(holder);
        let namespaces = node::Namespaces::open(holder_pid, dir)?;
        let services = node::Services::start(namespaces.dialer()?, layout)?;
        let files = node::NodeFiles::write(dir, pki, files, containerd_bin)?;
        let service_ca = service_ca::ServiceCa::generate()?;
        let service_ca_pem = service_ca.ca_pem().to_string();
        fs::write(dir.join("pki/service-ca.crt"), &service_ca_pem)
            .map_err(io("write pki/service-ca.crt"))?;
        Ok(Node {
            namespaces,
            services,
            files,
            service_ca_pem,
            service_ca: Some(service_ca),
        })
    }

    /// controller-manager, scheduler, containerd, kubelet and kube-proxy; returns once the node is
    /// Ready and labelled as OpenShift's control-plane nodes are (provider Deployments select them).
    async fn start_node(
        &mut self,
        bin: &Path,
        files: &Files,
        client: &kube::Client,
    ) -> Result<(), Error> {
        let admin = self.admin_config();
        let node = self.node.as_mut().expect("a node");
        let service_ca = node.service_ca.take();
        let internal = node.files.internal_kubeconfig.clone();
        let containerd = node.files.containerd.clone();
        let containerd_config = node.files.containerd_config.clone();
        let socket = node.files.containerd_socket.clone();
        let kubelet_args = node.files.kubelet_args();
        let proxy_config = node.files.proxy_config.clone();
        node.services.spawn(async move {
            match (kube::Client::try_from(admin), service_ca) {
                (Ok(client), Some(ca)) => ca.run(client).await,
                (Err(e), _) => tracing::warn!(error = %e, "service-ca: no client"),
                (_, None) => {}
            }
        });
        workloads::start_controllers(
            &mut |name, binary, args| self.spawn(name, binary, args),
            bin,
            files,
            &internal,
        )?;
        self.spawn(
            "containerd",
            &containerd,
            args(&["--config", &containerd_config.display().to_string()]),
        )?;
        let deadline = Instant::now() + Duration::from_secs(30);
        while !socket.exists() {
            self.check_running()?;
            if Instant::now() > deadline {
                let log = self.dir.join("logs/containerd.log");
                return Err(Error::Timeout {
                    what: format!("containerd's socket {}", socket.display()),
                    seconds: 30,
                    tail: process::tail(&log),
                    log: Some(log),
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        self.spawn("kubelet", &bin.join("kubelet"), kubelet_args)?;
        self.spawn(
            "kube-proxy",
            &bin.join("kube-proxy"),
            args(&[&format!("--config={}", proxy_config.display())]),
        )?;
        self.start_network_policies(&internal).await?;
        let ready = node_ready(
            client,
            REAL_NODE_READY_TIMEOUT,
            self.dir.join("logs/kubelet.log"),
        );
        self.while_running(ready).await
    }

    /// The NetworkPolicy agent, then the rules that send it the pods' packets ([`netpol`]).
    async fn start_network_policies(&mut self, kubeconfig: &Path) -> Result<(), Error> {
        let agent = netpol::bin_dir()?.join("network-policies");
        self.spawn("network-policies", &agent, netpol::agent_args(kubeconfig))?;
        let node = self.node.as_ref().expect("a node");
        let listening = netpol::wait_listening(
            node.namespaces.init,
            self.dir.join("logs/network-policies.log"),
        );
        self.while_running(listening).await?;
        let node = self.node.as_ref().expect("a node");
        node.namespaces.run_inside(&netpol::queue_rules())
    }

    fn spawn(&mut self, name: &'static str, binary: &Path, args: Vec<String>) -> Result<(), Error> {
        let (binary, args) = match &self.node {
            Some(node) => node.namespaces.wrap(binary, &args),
            None => (binary.to_path_buf(), args),
        };
        let process = process::spawn(&self.spawner, &self.dir, name, &binary, &args)?;
        self.processes.push(process);
        Ok(())
    }

    /// Fails as soon as any process has exited, with that process's log tail.
    fn check_running(&mut self) -> Result<(), Error> {
        self.processes
            .iter_mut()
            .try_for_each(|process| process.check_running())
    }

    /// Runs `fut` while watching the processes: a crashed component fails fast with its log instead
    /// of surfacing later as a timeout.
    async fn while_running<T>(
        &mut self,
        fut: impl Future<Output = Result<T, Error>>,
    ) -> Result<T, Error> {
        let mut fut = std::pin::pin!(fut);
        loop {
            tokio::select! {
                result = &mut fut => return result,
                _ = tokio::time::sleep(Duration::from_millis(200)) => self.check_running()?,
            }
        }
    }

    /// Waits for `/readyz` to pass. `timeout` bounds how long the server may go without progress —
    /// without answering at all, or without one more of its readiness checks passing — not the whole
    /// start: on a busy machine a start takes several times as long as on a quiet one, yet keeps
    /// passing checks; a server that is stuck stops doing so. At most four times `timeout` in all.
    async fn wait_api_ready(&mut self, timeout: Duration) -> Result<(), Error> {
        let mut config = self.admin_config.clone();
        config.default_retry = false;
        config.connect_timeout = Some(Duration::from_secs(1));
        config.read_timeout = Some(Duration::from_secs(5));
        let client = kube::Client::try_from(config).map_err(kube_err("admin client"))?;
        let start = Instant::now();
        let (mut passed, mut progressed) = (None::<usize>, Instant::now());
        loop {
            self.check_running()?;
            let request = http::Request::get("/readyz?verbose")
                .body(Vec::new())
                .expect("static request");
            // A failing /readyz answers 500 with the same list; kube returns it as an error then.
            let body = match client.request_text(request).await {
                Ok(body) => Some(body),
                Err(kube::Error::Api(status)) => Some(status.message),
                Err(_) => None,
            };
            if let Some(body) = &body {
                if body.trim_end().ends_with("readyz check passed") {
                    return Ok(());
                }
                let now = body.lines().filter(|l| l.starts_with("[+]")).count();
                if passed.is_none_or(|before| now > before) {
                    passed = Some(now);
                    progressed = Instant::now();
                }
            }
            if progressed.elapsed() > timeout || start.elapsed() > 4 * timeout {
                let log = self.dir.join("logs/kube-apiserver.log");
                return Err(Error::Timeout {
                    what: format!(
                        "kube-apiserver {} to be ready (no readiness check passed for {:?}; {} passed)",
                        self.server,
                        progressed.elapsed(),
                        passed.unwrap_or(0)
                    ),
                    seconds: start.elapsed().as_secs(),
                    tail: process::tail(&log),
                    log: Some(log),
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The service CA's certificate (PEM) of a real node: what its service-ca stand-in signs serving
    /// certificates with and injects as CA bundles. `None` without a node.
    pub fn service_ca_pem(&self) -> Option<&str> {
        self.node.as_ref().map(|n| n.service_ca_pem.as_str())
    }

    /// pid 1 of a real node's pid namespace (as this process sees it): every process of the node is in
    /// its namespaces. `None` without a node.
    pub fn node_pid(&self) -> Option<i32> {
        self.node.as_ref().map(|n| n.namespaces.init)
    }

    /// Where a real node's kubelet keeps the containers' logs
    /// (`<namespace>_<pod>_<uid>/<container>/<restart>.log`). `None` without a node.
    pub fn pod_logs_dir(&self) -> Option<PathBuf> {
        self.node.as_ref().map(|n| n.files.root.join("pod-logs"))
    }

    /// Every log the real node's kubelet kept of the pods of Deployment `namespace/deployment` (each
    /// container's, each restart's), concatenated; `None` without a node.
    pub fn deployment_logs(&self, namespace: &str, deployment: &str) -> Option<String> {
        let prefix = format!("{namespace}_{deployment}-");
        let mut text = String::new();
        let Ok(pods) = std::fs::read_dir(self.pod_logs_dir()?) else {
            return Some(text);
        };
        for pod in pods.flatten() {
            if !pod.file_name().to_string_lossy().starts_with(&prefix) {
                continue;
            }
            for container in std::fs::read_dir(pod.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                for log in std::fs::read_dir(container.path())
                    .into_iter()
                    .flatten()
                    .flatten()
                {
                    text.push_str(&std::fs::read_to_string(log.path()).unwrap_or_default());
                }
            }
        }
        Some(text)
    }

    /// The folder holding kubeconfig, audit.log, logs/, pids/, pki/ and etcd/.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `<dir>/kubeconfig`: cluster-admin (CN=admin, O=system:masters), usable by kubectl.
    pub fn kubeconfig_path(&self) -> PathBuf {
        self.dir.join("kubeconfig")
    }

    /// The API server URL, `https://127.0.0.1:<port>`.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The admin client configuration. kube-rs sends no User-Agent of its own; to have one in the
    /// audit log push `(http::header::USER_AGENT, value)` onto `headers`.
    pub fn admin_config(&self) -> kube::Config {
        self.admin_config.clone()
    }

    pub async fn admin_client(&self) -> Result<kube::Client, Error> {
        kube::Client::try_from(self.admin_config()).map_err(kube_err("admin client"))
    }

    /// Writes `<dir>/kubeconfig-<namespace>-<name>` holding a 24 h token of that ServiceAccount,
    /// creating the namespace and the ServiceAccount when missing. The account gets no permissions
    /// here: bind the roles the test needs.
    pub async fn service_account_kubeconfig(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<PathBuf, Error> {
        let client = self.admin_client().await?;
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some(namespace.to_string()),
                ..Default::default()
            },
            ..Default::default()
        };
        ignore_exists(namespaces.create(&PostParams::default(), &ns).await)
            .map_err(kube_err(format!("create Namespace {namespace}")))?;
        let accounts: Api<ServiceAccount> = Api::namespaced(client, namespace);
        let sa = ServiceAccount {
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                namespace: Some(namespace.to_string()),
                ..Default::default()
            },
            ..Default::default()
        };
        ignore_exists(accounts.create(&PostParams::default(), &sa).await).map_err(kube_err(
            format!("create ServiceAccount {namespace}/{name}"),
        ))?;
        let request = TokenRequest {
            spec: TokenRequestSpec {
                expiration_seconds: Some(24 * 3600),
                ..Default::default()
            },
            ..Default::default()
        };
        let response = accounts
            .create_token_request(name, &PostParams::default(), &request)
            .await
            .map_err(kube_err(format!(
                "request a token for ServiceAccount {namespace}/{name}"
            )))?;
        let token = response.status.map(|s| s.token).unwrap_or_default();
        let path = self.dir.join(format!("kubeconfig-{namespace}-{name}"));
        write_kubeconfig(
            &path,
            &self.server,
            &self.ca_pem,
            &format!("system:serviceaccount:{namespace}:{name}"),
            &[("token", token)],
        )?;
        Ok(path)
    }

    /// The client configuration of that ServiceAccount (see
    /// [`ControlPlane::service_account_kubeconfig`]); like [`ControlPlane::admin_config`], it sends no
    /// User-Agent unless one is pushed onto `headers`.
    pub async fn service_account_config(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<kube::Config, Error> {
        let path = self.service_account_kubeconfig(namespace, name).await?;
        config_from_kubeconfig(&path).await
    }

    /// A client authenticated as that ServiceAccount (see [`ControlPlane::service_account_kubeconfig`]).
    pub async fn service_account_client(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<kube::Client, Error> {
        let config = self.service_account_config(namespace, name).await?;
        kube::Client::try_from(config).map_err(kube_err(format!(
            "client for ServiceAccount {namespace}/{name}"
        )))
    }

    /// Every event of `<dir>/audit.log` so far, oldest first.
    pub fn audit_events(&self) -> Result<Vec<AuditEvent>, Error> {
        audit::read(&self.dir.join("audit.log"))
    }

    /// Kills the processes (and removes the folder when it was a temporary one). Same as drop.
    pub fn stop(self) {}

    fn kill_all(&mut self) {
        if let Some(node) = &mut self.node {
            node.services.shutdown();
            // Every process of the node at once, the containers included; the holder (the first
            // process) then reaps its child and exits by itself, leaving no zombie.
            node.namespaces.kill();
            if let Some(holder) = self.processes.first_mut() {
                holder.wait_exit(Duration::from_secs(10));
            }
        }
        // Clients of the API server first, etcd last, as `down` does.
        while let Some(mut process) = self.processes.pop() {
            process.kill();
            let _ = fs::remove_file(process::pid_file(&self.dir, process.name));
        }
        if let Some(node) = self.node.take() {
            node.namespaces.sweep(&self.dir);
        }
        self.spawner.shutdown();
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// Stops the processes of a control plane started with [`ControlPlane::start_background`] (the `up`
/// command): SIGTERM, SIGKILL after `grace`, and waits until all are gone. Returns what was running.
pub fn stop_background(dir: &Path, grace: Duration) -> Result<Vec<String>, Error> {
    let dir = fs::canonicalize(dir).map_err(io(format!("resolve {}", dir.display())))?;
    process::stop_recorded(&dir, grace)
}

/// Waits for the real node to register and be Ready, then labels it as OpenShift labels its
/// control-plane nodes (the kubelet may not set `node-role.kubernetes.io/*` on itself).
async fn node_ready(client: &kube::Client, timeout: Duration, log: PathBuf) -> Result<(), Error> {
    use k8s_openapi::api::core::v1::Node as NodeObject;
    let nodes: Api<NodeObject> = Api::all(client.clone());
    let start = Instant::now();
    loop {
        let ready = nodes
            .get_opt(node::NODE_NAME)
            .await
            .map_err(kube_err(format!("get Node {}", node::NODE_NAME)))?
            .and_then(|n| n.status)
            .and_then(|s| s.conditions)
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        if ready {
            let labels = serde_json::json!({"metadata": {"labels": {
                "node-role.kubernetes.io/master": "",
                "node-role.kubernetes.io/control-plane": "",
            }}});
            nodes
                .patch(
                    node::NODE_NAME,
                    &kube::api::PatchParams::default(),
                    &kube::api::Patch::Merge(&labels),
                )
                .await
                .map_err(kube_err(format!("label Node {}", node::NODE_NAME)))?;
            return Ok(());
        }
        if start.elapsed() > timeout {
            return Err(Error::Timeout {
                what: format!("Node {} to be Ready (kubelet)", node::NODE_NAME),
                seconds: timeout.as_secs(),
                tail: process::tail(&log),
                log: Some(log),
            });
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
