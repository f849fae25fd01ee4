//! A real node: containerd and runc run the pods, a kubelet and kube-proxy (from the pinned Kubernetes
//! module) join the control plane, a bridge CNI gives pods addresses, and everything (etcd and the API
//! server included) runs in namespaces of its own, so that nothing a test starts can touch the machine
//! or another test's node.
//!
//! The namespaces are held by one process, `unshare --pid --mount --net --fork --kill-child`, whose child
//! (`sleep`, pid 1 of the new pid namespace) every component joins with `nsenter`. Killing that pid 1 is
//! the teardown: the kernel kills every process of the pid namespace (containerd's shims and the
//! containers, which no process tree of ours holds, included); the mount namespace (pod volumes, overlay
//! root filesystems, the pods' network namespace files) and the network namespace (the bridge, the pods'
//! veths, kube-proxy's iptables rules) go with their last process. `unshare` dies with the test process
//! (parent-death signal) and takes pid 1 with it (`--kill-child`), so a killed test leaves no process
//! either. Only the containers' cgroup folders outlive them: they are removed after the kill, and the
//! leftovers of a node whose test process was killed are removed when the next node starts
//! ([`sweep_leftovers`]).
//!
//! Inside, the node has loopback, which also holds the node address [`NODE_IP`] (the API server's
//! advertise address, so the `kubernetes` Service points at it), and the CNI bridge for pods
//! ([`POD_CIDR`]). Pods reach the API server through the `kubernetes` Service, the API server reaches
//! webhook Services through kube-proxy's rules. This process reaches the API server through a proxy on
//! its own loopback ([`Services`]), and serves containerd the images from an OCI layout
//! ([`crate::registry`]): the providers' Deployments say `imagePullPolicy: Always`, so the kubelet asks
//! containerd to pull on every container start, and a pull needs a registry to answer.

use std::fs::{self, File};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::error::{Error, io};

pub use crate::pki::{NODE_IP, NODE_NAME};
/// Where pods get their addresses (the CNI bridge `cni0`, gateway `.1`).
pub const POD_CIDR: &str = "10.88.0.0/16";
/// The API server's port inside the node's network namespace.
pub const API_PORT: u16 = 6443;
/// The image registry's port inside the node's network namespace (loopback).
pub const REGISTRY_PORT: u16 = 5000;
/// Where leftovers of nodes are recorded, one file per node named by the holder's pid, holding the
/// node's folder (a tmpfs on every machine this runs on, so nothing survives a reboot).
const RECORDS: &str = "/run/capi-installer-nodes";
/// Mount points the node covers with a tmpfs of its own, because the node's software writes there
/// whatever its configuration says: the pods' network namespace files (containerd), shim sockets and
/// runc's state, CNI's cache, the kubelet's log symlinks.
const PRIVATE_DIRS: &[&str] = &[
    "/run/netns",
    "/run/containerd",
    "/var/lib/cni",
    "/var/log/containers",
];
/// What the node needs from the machine (Debian's packages: runc, containernetworking-plugins,
/// iptables, iproute2, util-linux); `hack/node-prerequisites.sh` installs them. containerd is built
/// from its Go module ([`crate::containerd`]).
const PREREQUISITES: &[&str] = &[
    crate::containerd::RUNC,
    "/usr/lib/cni/bridge",
    "/usr/lib/cni/host-local",
    "/usr/lib/cni/loopback",
    "/usr/sbin/iptables",
    "/usr/bin/unshare",
    "/usr/bin/nsenter",
];
pub(crate) const CNI_BIN_DIR: &str = "/usr/lib/cni";
/// The kernel settings the kubelet sets when it starts (`setupKernelTunables`: `vm.overcommit_memory=1`,
/// `kernel.panic=10`, `kernel.panic_on_oops=1`, ...). They are the machine's, not a namespace's, and
/// `protectKernelDefaults` would only make the kubelet refuse a machine that differs. So in the node's
/// mount namespace each of them is a copy of the machine's value, a file of the node's
/// ([`KERNEL_SETTINGS_DIR`]) mounted over the `/proc/sys` entry: the kubelet reads and writes the copy.
pub const KUBELET_KERNEL_SETTINGS: &[&str] = &[
    "vm/overcommit_memory",
    "vm/panic_on_oom",
    "kernel/panic",
    "kernel/panic_on_oops",
    "kernel/keys/root_maxkeys",
    "kernel/keys/root_maxbytes",
];
/// Where, in a control plane's folder, the node's copies of [`KUBELET_KERNEL_SETTINGS`] are (named
/// with dots: `vm.overcommit_memory`).
pub const KERNEL_SETTINGS_DIR: &str = "node/kernel";

/// Fails with the list of what is missing, and how to get it.
pub(crate) fn check_prerequisites() -> Result<(), Error> {
    let missing: Vec<&str> = PREREQUISITES
        .iter()
        .copied()
        .filter(|p| !Path::new(p).exists())
        .collect();
    let ip = ["/usr/sbin/ip", "/usr/bin/ip", "/sbin/ip", "/bin/ip"]
        .iter()
        .any(|p| Path::new(p).exists());
    if missing.is_empty() && ip {
        return Ok(());
    }
    let mut missing = missing.join(", ");
    if !ip {
        missing.push_str(" ip");
    }
    Err(Error::Other {
        context: "start a real node".into(),
        message: format!(
            "missing {missing}; `hack/node-prerequisites.sh` installs Debian's runc, \
             containernetworking-plugins, iptables and iproute2"
        ),
    })
}

/// The namespaces of one node: the holder (`unshare`, a child of ours) and its child, pid 1 inside.
pub(crate) struct Namespaces {
    /// pid 1 of the node's pid namespace, as this process sees it.
    pub init: i32,
    net: File,
    record: PathBuf,
}

impl Namespaces {
    /// The command that holds the namespaces (spawned by the caller, so that it gets the spawner's
    /// parent-death signal).
    pub fn holder_command() -> (PathBuf, Vec<String>) {
        (
            PathBuf::from("/usr/bin/unshare"),
            crate::files::args(&[
                "--pid",
                "--fork",
                "--kill-child",
                "--mount",
                "--mount-proc",
                "--propagation=private",
                "--net",
                "--",
                "sleep",
                "infinity",
            ]),
        )
    }

    /// Finds pid 1 of the holder's pid namespace, records the node for [`sweep_leftovers`] and sets
    /// the namespaces up: loopback and the node address, IP forwarding, the private mount points.
    pub fn open(holder: u32, dir: &Path) -> Result<Namespaces, Error> {
        let deadline = Instant::now() + Duration::from_secs(10);
        let init = loop {
            if let Some(child) = first_child(holder as i32) {
                break child;
            }
            if Instant::now() > deadline {
                return Err(Error::Other {
                    context: "start a real node".into(),
                    message: format!("unshare (pid {holder}) started no namespace holder"),
                });
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        fs::create_dir_all(RECORDS).map_err(io(format!("create {RECORDS}")))?;
        let record = Path::new(RECORDS).join(init.to_string());
        fs::write(&record, dir.as_os_str().as_encoded_bytes())
            .map_err(io(format!("write {}", record.display())))?;
        // The holder's own network namespace equals its child's: unshare(2) moved unshare itself.
        let net_path = format!("/proc/{init}/ns/net");
        let net = File::open(&net_path).map_err(io(format!("open {net_path}")))?;
        let ns = Namespaces { init, net, record };
        for d in PRIVATE_DIRS {
            fs::create_dir_all(d).map_err(io(format!("create {d}")))?;
        }
        let mut mounts: String = PRIVATE_DIRS
            .iter()
            .map(|d| format!("mount -t tmpfs -o mode=0755 tmpfs {d}\n"))
            .collect();
        let kernel = dir.join(KERNEL_SETTINGS_DIR);
        fs::create_dir_all(&kernel).map_err(io(format!("create {}", kernel.display())))?;
        for setting in KUBELET_KERNEL_SETTINGS {
            let copy = kernel.join(setting.replace('/', "."));
            mounts.push_str(&format!(
                "cat /proc/sys/{setting} > '{copy}'\nmount --bind '{copy}' /proc/sys/{setting}\n",
                copy = copy.display()
            ));
        }
        ns.run_inside(&format!(
            "set -e
ip link set lo up
# The node's address lives on loopback (this kernel has no dummy interfaces); pods reach it through
# their bridge's gateway.
ip addr add {NODE_IP}/32 dev lo
# Locally made connections to a Service address need a route before kube-proxy's DNAT picks the pod,
# and a source address a pod can answer (not 127.0.0.1).
ip route add {service_cidr} dev lo src {NODE_IP}
echo 1 > /proc/sys/net/ipv4/ip_forward
# Bridged pod-to-pod traffic through a Service passes iptables only with this (when br_netfilter is
# loaded); kube-proxy masquerades everything anyway, so replies always come back through the node.
[ -w /proc/sys/net/bridge/bridge-nf-call-iptables ] && echo 1 > /proc/sys/net/bridge/bridge-nf-call-iptables
{mounts}",
            service_cidr = crate::files::SERVICE_CIDR,
        ))?;
        Ok(ns)
    }

    /// `nsenter` into all three namespaces, then `binary args`.
    pub fn wrap(&self, binary: &Path, args: &[String]) -> (PathBuf, Vec<String>) {
        let mut wrapped = crate::files::args(&[
            &format!("--target={}", self.init),
            "--net",
            "--mount",
            "--pid",
            "--",
        ]);
        wrapped.push(binary.display().to_string());
        wrapped.extend(args.iter().cloned());
        (PathBuf::from("/usr/bin/nsenter"), wrapped)
    }

    /// Runs a shell script inside the namespaces and waits for it.
    pub fn run_inside(&self, script: &str) -> Result<(), Error> {
        let (nsenter, args) = self.wrap(Path::new("/bin/sh"), &crate::files::args(&["-c", script]));
        let output = Command::new(nsenter)
            .args(args)
            .output()
            .map_err(io("run nsenter"))?;
        if output.status.success() {
            return Ok(());
        }
        Err(Error::Other {
            context: "set up the node's namespaces".into(),
            message: format!(
                "{}: {}{}",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ),
        })
    }

    /// A thread living in the node's network namespace, for sockets there.
    pub fn dialer(&self) -> Result<Dialer, Error> {
        let fd = self.net.try_clone().map_err(io("duplicate the netns fd"))?;
        let (tx, rx) = mpsc::channel::<DialRequest>();
        let (ready_tx, ready_rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("node-netns".into())
            .spawn(move || {
                // SAFETY: setns on a descriptor we own, for this thread only (a network namespace
                // is per thread until the thread creates a process).
                let entered = unsafe { libc::setns(fd.as_raw_fd(), libc::CLONE_NEWNET) } == 0;
                let _ = ready_tx.send(
                    entered
                        .then_some(())
                        .ok_or_else(std::io::Error::last_os_error),
                );
                if !entered {
                    return;
                }
                for request in rx {
                    match request {
                        DialRequest::Connect(addr, reply) => {
                            let _ = reply.send(std::net::TcpStream::connect_timeout(
                                &addr,
                                Duration::from_secs(5),
                            ));
                        }
                        DialRequest::Listen(addr, reply) => {
                            let _ = reply.send(std::net::TcpListener::bind(addr));
                        }
                    }
                }
            })
            .map_err(io("start the node's netns thread"))?;
        ready_rx
            .recv()
            .map_err(|_| Error::Other {
                context: "enter the node's network namespace".into(),
                message: "the thread ended".into(),
            })?
            .map_err(io("enter the node's network namespace"))?;
        Ok(Dialer { requests: tx })
    }

    /// SIGKILL to pid 1 of the node: the kernel kills every process of the namespace.
    pub fn kill(&self) {
        // SAFETY: kill(2) of the pid we found as our holder's child.
        unsafe { libc::kill(self.init, libc::SIGKILL) };
    }

    /// After [`Namespaces::kill`] and the holder reaped: removes the containers' cgroups and the record.
    pub fn sweep(&self, dir: &Path) {
        remove_container_cgroups(dir);
        let _ = fs::remove_file(&self.record);
    }
}

enum DialRequest {
    Connect(
        SocketAddr,
        mpsc::Sender<std::io::Result<std::net::TcpStream>>,
    ),
    Listen(
        SocketAddr,
        mpsc::Sender<std::io::Result<std::net::TcpListener>>,
    ),
}

/// Makes sockets in the node's network namespace (a socket stays in the namespace it was made in,
/// whichever thread uses it later).
#[derive(Clone)]
pub(crate) struct Dialer {
    requests: mpsc::Sender<DialRequest>,
}

impl Dialer {
    pub fn connect(&self, addr: SocketAddr) -> std::io::Result<std::net::TcpStream> {
        let (tx, rx) = mpsc::channel();
        self.requests
            .send(DialRequest::Connect(addr, tx))
            .map_err(|_| std::io::Error::other("the netns thread is gone"))?;
        rx.recv()
            .map_err(|_| std::io::Error::other("the netns thread is gone"))?
    }

    pub fn listen(&self, addr: SocketAddr) -> std::io::Result<std::net::TcpListener> {
        let (tx, rx) = mpsc::channel();
        self.requests
            .send(DialRequest::Listen(addr, tx))
            .map_err(|_| std::io::Error::other("the netns thread is gone"))?;
        rx.recv()
            .map_err(|_| std::io::Error::other("the netns thread is gone"))?
    }
}

fn first_child(pid: i32) -> Option<i32> {
    let children = fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).ok()?;
    children.split_whitespace().next()?.parse().ok()
}

/// Removes what nodes of dead test processes left behind (their containers' cgroups), found through
/// the records of [`RECORDS`] whose pid 1 is gone.
pub(crate) fn sweep_leftovers() {
    let Ok(entries) = fs::read_dir(RECORDS) else {
        return;
    };
    for entry in entries.filter_map(|e| e.ok()) {
        let path = entry.path();
        let Some(pid) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        if let Ok(dir) = fs::read_to_string(&path) {
            remove_container_cgroups(Path::new(&dir));
        }
        let _ = fs::remove_file(&path);
    }
}

/// The cgroup of every container containerd made for the node in `dir` (from the bundles' OCI specs,
/// which outlive the containers in the node folder), removed from every hierarchy, deepest first.
fn remove_container_cgroups(dir: &Path) {
    let bundles = dir.join("node/containerd/state/io.containerd.runtime.v2.task/k8s.io");
    let Ok(entries) = fs::read_dir(&bundles) else {
        return;
    };
    let mut paths: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| fs::read(e.path().join("config.json")).ok())
        .filter_map(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .filter_map(|spec| spec["linux"]["cgroupsPath"].as_str().map(str::to_owned))
        .collect();
    // Containers before the pod folders that hold them.
    paths.sort_by_key(|p| std::cmp::Reverse(p.matches('/').count()));
    let Ok(hierarchies) = fs::read_dir("/sys/fs/cgroup") else {
        return;
    };
    let hierarchies: Vec<PathBuf> = hierarchies
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    for path in &paths {
        for hierarchy in &hierarchies {
            let mut cgroup = hierarchy.join(path.trim_start_matches('/'));
            // rmdir fails while a process is still leaving; the kill was a moment ago.
            for _ in 0..50 {
                match fs::remove_dir(&cgroup) {
                    Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                        std::thread::sleep(Duration::from_millis(20))
                    }
                    _ => break,
                }
            }
            // Empty parents up to the hierarchy (a pod's folder once its last container is gone).
            while cgroup.pop() && cgroup != *hierarchy && fs::remove_dir(&cgroup).is_ok() {}
        }
    }
}

/// The configuration files of containerd, CNI, the kubelet and kube-proxy, in `<dir>/node`.
pub(crate) struct NodeFiles {
    pub root: PathBuf,
    /// The containerd binary ([`crate::containerd::bin_dir`]).
    pub containerd: PathBuf,
    pub containerd_config: PathBuf,
    pub containerd_socket: PathBuf,
    pub kubelet_config: PathBuf,
    pub kubelet_kubeconfig: PathBuf,
    pub proxy_config: PathBuf,
    /// Admin, for components inside the node (the API server at 127.0.0.1:6443 there).
    pub internal_kubeconfig: PathBuf,
}

impl NodeFiles {
    pub fn write(
        dir: &Path,
        pki: &crate::pki::Pki,
        files: &crate::files::Files,
        containerd_bin: &Path,
    ) -> Result<NodeFiles, Error> {
        let root = dir.join("node");
        let containerd = root.join("containerd");
        let hosts = containerd.join("certs.d");
        let cni_conf = root.join("cni/net.d");
        for d in [
            &containerd,
            &cni_conf,
            &root.join("kubelet"),
            &root.join("pod-logs"),
        ] {
            fs::create_dir_all(d).map_err(io(format!("create {}", d.display())))?;
        }
        let node = NodeFiles {
            containerd: containerd_bin.join("containerd"),
            containerd_config: containerd.join("config.toml"),
            containerd_socket: containerd.join("containerd.sock"),
            kubelet_config: root.join("kubelet-config.yaml"),
            kubelet_kubeconfig: root.join("kubeconfig-kubelet"),
            proxy_config: root.join("kube-proxy-config.yaml"),
            internal_kubeconfig: root.join("kubeconfig-internal"),
            root,
        };
        let internal = format!("https://127.0.0.1:{API_PORT}");
        let b64 = |s: &str| base64::Engine::encode(&base64::engine::general_purpose::STANDARD, s);
        crate::files::write_kubeconfig(
            &node.internal_kubeconfig,
            &internal,
            &pki.ca_cert_pem,
            "admin",
            &[
                ("client-certificate-data", b64(&pki.admin_cert_pem)),
                ("client-key-data", b64(&pki.admin_key_pem)),
            ],
        )?;
        crate::files::write_kubeconfig(
            &node.kubelet_kubeconfig,
            &internal,
            &pki.ca_cert_pem,
            &format!("system:node:{NODE_NAME}"),
            &[
                ("client-certificate-data", b64(&pki.kubelet_cert_pem)),
                ("client-key-data", b64(&pki.kubelet_key_pem)),
            ],
        )?;
        let proxy_kubeconfig = node.root.join("kubeconfig-kube-proxy");
        crate::files::write_kubeconfig(
            &proxy_kubeconfig,
            &internal,
            &pki.ca_cert_pem,
            "system:kube-proxy",
            &[
                ("client-certificate-data", b64(&pki.proxy_cert_pem)),
                ("client-key-data", b64(&pki.proxy_key_pem)),
            ],
        )?;
        let p = |p: &Path| p.display().to_string();
        let registry = format!("http://127.0.0.1:{REGISTRY_PORT}");
        // Every registry the images are named after is mirrored by the node's own registry.
        for host in crate::registry::MIRRORED {
            let dir = hosts.join(host);
            fs::create_dir_all(&dir).map_err(io(format!("create {}", dir.display())))?;
            write(
                &dir.join("hosts.toml"),
                &format!(
                    "server = \"https://{host}\"\n[host.\"{registry}\"]\n  capabilities = [\"pull\", \"resolve\"]\n"
                ),
            )?;
        }
        write(
            &node.containerd_config,
            &crate::containerd::config(&crate::containerd::Paths {
                dir: &containerd,
                socket: &node.containerd_socket,
                bin: containerd_bin,
                cni_bin: CNI_BIN_DIR,
                cni_conf: &cni_conf,
                hosts: &hosts,
                sandbox_image: crate::registry::SANDBOX_IMAGE,
            }),
        )?;
        let gateway = POD_CIDR.replace(".0.0/16", ".0.1");
        write(
            &cni_conf.join("10-capi-node.conflist"),
            &serde_json::json!({
                "cniVersion": "1.0.0",
                "name": "capi-node",
                "plugins": [{
                    "type": "bridge",
                    "bridge": "cni0",
                    "isGateway": true,
                    "hairpinMode": true,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": POD_CIDR, "gateway": gateway}]],
                        "routes": [{"dst": "0.0.0.0/0"}],
                        "dataDir": p(&node.root.join("cni/ipam")),
                    },
                }],
            })
            .to_string(),
        )?;
        write(
            &node.kubelet_config,
            &format!(
                r#"apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://{socket}
authentication:
  anonymous: {{enabled: false}}
  webhook: {{enabled: true}}
  x509: {{clientCAFile: {ca}}}
authorization: {{mode: Webhook}}
address: 0.0.0.0
readOnlyPort: 0
# cgroups v1, and root without CAP_SYS_RESOURCE: no QoS or allocatable cgroups of the kubelet's own.
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
podLogsDir: {logs}
# The machine's disk is shared and may be full of others' builds: never evict or collect images.
evictionHard: {{memory.available: "0%", nodefs.available: "0%", nodefs.inodesFree: "0%", imagefs.available: "0%"}}
imageGCHighThresholdPercent: 100
serializeImagePulls: false
localStorageCapacityIsolation: false
"#,
                socket = p(&node.containerd_socket),
                ca = p(&files.ca_cert),
                logs = p(&node.root.join("pod-logs")),
            ),
        )?;
        write(
            &node.proxy_config,
            &format!(
                r#"apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection:
  kubeconfig: {kubeconfig}
hostnameOverride: {NODE_NAME}
clusterCIDR: {POD_CIDR}
# Pod to Service to a pod on the same bridge: without masquerading the reply would skip the node's
# connection tracking.
iptables:
  masqueradeAll: true
# The conntrack table is the machine's, not the namespace's: leave its sizes alone.
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
"#,
                kubeconfig = p(&proxy_kubeconfig),
            ),
        )?;
        Ok(node)
    }

    /// The kubelet's arguments.
    pub fn kubelet_args(&self) -> Vec<String> {
        let p = |p: &Path| p.display().to_string();
        crate::files::args(&[
            &format!("--config={}", p(&self.kubelet_config)),
            &format!("--kubeconfig={}", p(&self.kubelet_kubeconfig)),
            &format!("--root-dir={}", p(&self.root.join("kubelet"))),
            &format!("--hostname-override={NODE_NAME}"),
            &format!("--node-ip={NODE_IP}"),
            "--v=1",
        ])
    }
}

fn write(path: &Path, content: &str) -> Result<(), Error> {
    fs::write(path, content).map_err(io(format!("write {}", path.display())))
}

/// The address of the API server as seen from inside the node.
pub(crate) fn internal_api() -> SocketAddr {
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, API_PORT))
}

/// What the node needs from this process, on a runtime of its own (a test's runtime ends with the
/// test, a node shared by tests must not): the API server proxy on this process's loopback, the image
/// registry inside the node, and the service-ca stand-in.
pub(crate) struct Services {
    runtime: Option<tokio::runtime::Runtime>,
    /// The proxy's port on 127.0.0.1 here: the control plane's address for this process, kubectl and
    /// the demo.
    pub api_port: u16,
}

impl Services {
    pub fn start(dialer: Dialer, layout: crate::registry::Layout) -> Result<Services, Error> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("node-services")
            .enable_all()
            .build()
            .map_err(io("start the node's runtime"))?;
        let proxy = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .map_err(io("listen for the API server proxy"))?;
        let api_port = proxy.local_addr().map_err(io("API server proxy"))?.port();
        let registry = dialer
            .listen(SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::LOCALHOST,
                REGISTRY_PORT,
            )))
            .map_err(io("listen for the node's registry"))?;
        for listener in [&proxy, &registry] {
            listener
                .set_nonblocking(true)
                .map_err(io("non-blocking listener"))?;
        }
        runtime.spawn(async move {
            if let Ok(registry) = tokio::net::TcpListener::from_std(registry) {
                crate::registry::serve(layout, registry).await;
            }
        });
        runtime.spawn(async move {
            let Ok(proxy) = tokio::net::TcpListener::from_std(proxy) else {
                return;
            };
            while let Ok((mut inbound, _)) = proxy.accept().await {
                let dialer = dialer.clone();
                tokio::spawn(async move {
                    let connected =
                        tokio::task::spawn_blocking(move || dialer.connect(internal_api())).await;
                    let Ok(Ok(outbound)) = connected else {
                        return;
                    };
                    if outbound.set_nonblocking(true).is_err() {
                        return;
                    }
                    if let Ok(mut outbound) = tokio::net::TcpStream::from_std(outbound) {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
            }
        });
        Ok(Services {
            runtime: Some(runtime),
            api_port,
        })
    }

    /// Runs `task` on the node's runtime until the node stops.
    pub fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        if let Some(runtime) = &self.runtime {
            runtime.spawn(task);
        }
    }

    pub fn shutdown(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            // Not blocking: the ControlPlane may be dropped on a test's runtime.
            runtime.shutdown_background();
        }
    }
}
