//! The real node's NetworkPolicy agent: `sigs.k8s.io/kube-network-policies` (built by
//! `tools/network-policies/build.sh`), a process in the node's namespaces that judges the first packet
//! of every connection to or from a pod against the cluster's NetworkPolicies and drops what they do
//! not allow. The CNI bridge plugin enforces nothing itself.
//!
//! The agent gets its packets from a netfilter queue. Its own nftables rules use the `queue`
//! expression, which this machine's kernel lacks (no `CONFIG_NFT_QUEUE`; its rules fail to load and it
//! says so in its log at every change), so the node sends them with iptables' `NFQUEUE` target instead,
//! to the same queue, at the same place (after a Service's translation, before masquerading): a new
//! connection from or to a pod address, unless it is the node's own (a root socket of the node: the
//! kubelet's probes, containerd's pulls) — but the node's connections to a Service (the API server
//! calling a webhook) are judged like a pod's. Replies follow their connection. The queue has no
//! bypass: while the agent is down, pods' new connections fail rather than pass unjudged.
//!
//! [`connect_from_pod`] makes a connection from inside a pod's network namespace, with the pod's
//! address as source, as a process of that pod would: what the end-to-end tests prove the policies
//! with, from pods whose image has no tool to connect with.

use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::Error;

/// The netfilter queue the node sends packets to and the agent reads.
const QUEUE: u16 = 100;
/// The node's iptables chain (mangle table) that sends packets to the agent.
const CHAIN: &str = "CAPI-NODE-NETWORK-POLICIES";
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// The folder holding `network-policies`: env `CAPI_NETWORK_POLICIES_BIN_DIR` when set, else what
/// `tools/network-policies/build.sh` prints (a build of a few minutes the first time, then a lookup).
pub fn bin_dir() -> Result<PathBuf, Error> {
    static BUILT: Mutex<Option<PathBuf>> = Mutex::new(None);
    crate::locations::built_bin_dir(
        "CAPI_NETWORK_POLICIES_BIN_DIR",
        crate::locations::repo_root().join("tools/network-policies/build.sh"),
        &BUILT,
    )
}

/// The agent's arguments: the node's admin kubeconfig (it reads NetworkPolicies, Namespaces, Pods and
/// writes Events), the node's name, the queue.
pub(crate) fn agent_args(kubeconfig: &Path) -> Vec<String> {
    crate::files::args(&[
        &format!("--kubeconfig={}", kubeconfig.display()),
        &format!("--hostname-override={}", crate::node::NODE_NAME),
        &format!("--nfqueue-id={QUEUE}"),
        "--v=1",
    ])
}

/// The rules that send packets to the agent (a script for [`crate::node::Namespaces::run_inside`]).
pub(crate) fn queue_rules() -> String {
    let pods = crate::node::POD_CIDR;
    format!(
        "set -e
iptables -w -t mangle -N {CHAIN}
iptables -w -t mangle -A POSTROUTING -j {CHAIN}
iptables -w -t mangle -A {CHAIN} -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN
iptables -w -t mangle -A {CHAIN} -m owner --uid-owner 0 -m conntrack ! --ctstate DNAT -j RETURN
iptables -w -t mangle -A {CHAIN} -s {pods} -j NFQUEUE --queue-num {QUEUE}
iptables -w -t mangle -A {CHAIN} -d {pods} -j NFQUEUE --queue-num {QUEUE}
"
    )
}

/// Waits until the agent reads the queue (it binds it once its caches of policies, namespaces and pods
/// are synced), as the node's network namespace lists it in `/proc/<pid>/net/netfilter/nfnetlink_queue`.
pub(crate) async fn wait_listening(init: i32, log: PathBuf) -> Result<(), Error> {
    let queues = format!("/proc/{init}/net/netfilter/nfnetlink_queue");
    let start = Instant::now();
    loop {
        let bound = std::fs::read_to_string(&queues)
            .unwrap_or_default()
            .lines()
            .any(|l| l.split_whitespace().next() == Some(&QUEUE.to_string()));
        if bound {
            return Ok(());
        }
        if start.elapsed() > READY_TIMEOUT {
            return Err(Error::Timeout {
                what: format!("the NetworkPolicy agent to read netfilter queue {QUEUE}"),
                seconds: READY_TIMEOUT.as_secs(),
                tail: crate::process::tail(&log),
                log: Some(log),
            });
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A TCP connection to `addr` made from the network namespace that holds the pod address `pod_ip`
/// among the pods of the real node whose pid 1 is `node_pid` ([`crate::ControlPlane::node_pid`]:
/// other nodes on this machine give their pods the same addresses), given up after `timeout`. A connection the policies drop
/// times out; one they let through connects, or is refused when nothing listens.
pub fn connect_from_pod(
    node_pid: i32,
    pod_ip: Ipv4Addr,
    addr: SocketAddr,
    timeout: Duration,
) -> std::io::Result<TcpStream> {
    let pid = holder_of(node_pid, pod_ip).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("no pod of the node (pid {node_pid}) holds {pod_ip}"),
        )
    })?;
    let netns = std::fs::File::open(format!("/proc/{pid}/ns/net"))?;
    // A thread of its own: setns moves only the calling thread, and the socket stays in the pod's
    // namespace once made, whichever thread uses it.
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                use std::os::fd::AsRawFd;
                // SAFETY: setns on a descriptor we own, for this short-lived thread only.
                if unsafe { libc::setns(netns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                TcpStream::connect_timeout(&addr, timeout)
            })
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the pod's dialing thread panicked")))
    })
}

/// A process of the node's pods in the network namespace whose local addresses include `ip` (its
/// routing table lists it as `/32 host LOCAL`), each namespace read once. A pod's processes have pid
/// namespaces of their own; their parent (containerd's shim) is in the node's.
fn holder_of(node_pid: i32, ip: Ipv4Addr) -> Option<u32> {
    let node = std::fs::read_link(format!("/proc/{node_pid}/ns/pid")).ok()?;
    let in_node = |pid: u32| {
        let parent = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|status| {
                status
                    .lines()
                    .find_map(|l| l.strip_prefix("PPid:"))
                    .and_then(|p| p.trim().parse::<u32>().ok())
            });
        parent.is_some_and(|parent| {
            std::fs::read_link(format!("/proc/{parent}/ns/pid")).is_ok_and(|ns| ns == node)
        })
    };
    let entry = format!("|-- {ip}");
    let mut seen = std::collections::HashSet::new();
    std::fs::read_dir("/proc")
        .ok()?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| in_node(*pid))
        .find(|pid| {
            let Ok(ns) = std::fs::read_link(format!("/proc/{pid}/ns/net")) else {
                return false;
            };
            if !seen.insert(ns) {
                return false;
            }
            let trie =
                std::fs::read_to_string(format!("/proc/{pid}/net/fib_trie")).unwrap_or_default();
            let mut lines = trie.lines();
            while let Some(line) = lines.next() {
                if line.trim_end().ends_with(&entry)
                    && lines.next().is_some_and(|l| l.contains("/32 host LOCAL"))
                {
                    return true;
                }
            }
            false
        })
}
