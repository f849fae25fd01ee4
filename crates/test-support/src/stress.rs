//! A busy machine on purpose, for the stress test and the pause benchmark: cores kept busy by
//! spinning threads, an API server that answers slowly (a CPU quota on its processes where the cgroup v1
//! `cpu` controller can be written, which root can without CAP_SYS_RESOURCE), and a proxy in front of
//! it that delays or stops forwarding. Everything stops by itself: the threads after a time limit, the
//! quota and the proxy when dropped.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Threads that spin until dropped or `at_most` has passed, at the priority of everything else.
/// Threads of this process rather than processes: they end with it, however it ends.
pub struct CpuBurn {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl CpuBurn {
    pub fn start(threads: usize, at_most: Duration) -> CpuBurn {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..threads)
            .map(|i| {
                let stop = stop.clone();
                std::thread::Builder::new()
                    .name(format!("cpu-burn-{i}"))
                    .spawn(move || {
                        let until = Instant::now() + at_most;
                        let mut x: u64 = 1;
                        while !stop.load(Ordering::Relaxed) && Instant::now() < until {
                            for _ in 0..100_000 {
                                x = std::hint::black_box(x.wrapping_mul(6364136223846793005) + 1);
                            }
                        }
                    })
                    .expect("a thread starts")
            })
            .collect();
        CpuBurn { stop, threads }
    }
}

impl Drop for CpuBurn {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// The cgroup v1 `cpu` hierarchy.
const CPU_CGROUPS: &str = "/sys/fs/cgroup/cpu";

/// Processes held to a share of one CPU by a cgroup of their own (cgroup v1 `cpu.cfs_quota_us`).
/// Dropped: the processes go back to the root cgroup and the cgroup is removed.
pub struct CpuQuota {
    dir: PathBuf,
    pids: Vec<u32>,
}

impl CpuQuota {
    /// Limits `pids` to `cpus` (0.5: half of one CPU). `Err` says why it cannot be done here (no
    /// cgroup v1 `cpu` controller, or not writable).
    pub fn limit(name: &str, pids: &[u32], cpus: f64) -> Result<CpuQuota, String> {
        let dir = Path::new(CPU_CGROUPS).join(format!("{name}-{}", std::process::id()));
        std::fs::create_dir(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let quota = CpuQuota {
            dir,
            pids: Vec::new(),
        };
        let period = 100_000.0;
        quota.write("cpu.cfs_period_us", &format!("{period}"))?;
        quota.write("cpu.cfs_quota_us", &format!("{}", (period * cpus) as u64))?;
        let mut quota = quota;
        for pid in pids {
            quota.write("cgroup.procs", &pid.to_string())?;
            quota.pids.push(*pid);
        }
        Ok(quota)
    }

    fn write(&self, file: &str, value: &str) -> Result<(), String> {
        let path = self.dir.join(file);
        std::fs::write(&path, value)
            .map_err(|e| format!("writing {value} to {}: {e}", path.display()))
    }
}

impl Drop for CpuQuota {
    fn drop(&mut self) {
        let root = Path::new(CPU_CGROUPS).join("cgroup.procs");
        for pid in &self.pids {
            // Gone already when the control plane stopped first.
            let _ = std::fs::write(&root, pid.to_string());
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// The pid of each named process of a control plane (`kube-apiserver`, `etcd`), from its pid files.
pub fn control_plane_pids(cp: &control_plane::ControlPlane, names: &[&str]) -> Vec<u32> {
    names
        .iter()
        .map(|name| {
            let file = cp.dir().join("pids").join(format!("{name}.pid"));
            std::fs::read_to_string(&file)
                .ok()
                .and_then(|p| p.trim().parse().ok())
                .unwrap_or_else(|| panic!("no pid in {}", file.display()))
        })
        .collect()
}

/// A TCP proxy to the API server: forwards as it is, or [`Proxy::delay`]s every chunk it forwards (a
/// slow API server or a slow network path), or [`Proxy::stall`]s: from then on it keeps accepting and
/// reading, but nothing reaches the other side in either direction and no connection is closed (what
/// a hung API server or a half-dead connection looks like to a client). TLS passes through untouched
/// (the API server's certificate is valid for 127.0.0.1).
pub struct Proxy {
    addr: SocketAddr,
    mode: tokio::sync::watch::Sender<Mode>,
    task: tokio::task::JoinHandle<()>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    Forward,
    Delay(Duration),
    Stall,
}

impl Proxy {
    /// A proxy to `server` (`https://127.0.0.1:port`), forwarding as it is.
    pub async fn start(server: &str) -> Proxy {
        let upstream: SocketAddr = server
            .trim_start_matches("https://")
            .parse()
            .expect("the API server's address");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (mode, watch) = tokio::sync::watch::channel(Mode::Forward);
        let task = tokio::spawn(async move {
            let mut held = Vec::new();
            loop {
                let Ok((client, _)) = listener.accept().await else {
                    continue;
                };
                if *watch.borrow() == Mode::Stall {
                    held.push(client);
                    continue;
                }
                let watch = watch.clone();
                tokio::spawn(async move {
                    let Ok(server) = tokio::net::TcpStream::connect(upstream).await else {
                        return;
                    };
                    let (client_read, client_write) = client.into_split();
                    let (server_read, server_write) = server.into_split();
                    tokio::join!(
                        pump(client_read, server_write, watch.clone()),
                        pump(server_read, client_write, watch),
                    );
                });
            }
        });
        Proxy { addr, mode, task }
    }

    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// A copy of `kubeconfig` (of the proxied server) whose server is this proxy, written into `dir`.
    pub fn kubeconfig(&self, kubeconfig: &Path, server: &str, dir: &Path) -> PathBuf {
        let name = kubeconfig.file_name().unwrap().to_string_lossy();
        let path = dir.join(format!("{name}-via-proxy"));
        let text = std::fs::read_to_string(kubeconfig).unwrap();
        std::fs::write(&path, text.replace(server, &self.url())).unwrap();
        path
    }

    /// Every chunk forwarded from now on waits `by` first, in both directions.
    pub fn delay(&self, by: Duration) {
        self.mode.send_replace(Mode::Delay(by));
    }

    pub fn stall(&self) {
        self.mode.send_replace(Mode::Stall);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Copies `from` to `to` as the proxy's mode says.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mode: tokio::sync::watch::Receiver<Mode>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let current = *mode.borrow();
        match current {
            Mode::Forward => {}
            Mode::Delay(by) => tokio::time::sleep(by).await,
            // Keep the connection open and forward nothing: the peer waits for an answer forever.
            Mode::Stall => std::future::pending::<()>().await,
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

/// The holder and renew time of a Lease at one moment.
type LeaseRecord = (Option<String>, Option<k8s_openapi::jiff::Timestamp>);

/// What a poller saw of a Lease: every change of its holder or renew time, in order, with the
/// holder's own renew times (written from the holder's clock, on this machine the same clock).
pub struct LeaseWatch {
    seen: Arc<std::sync::Mutex<Vec<LeaseRecord>>>,
    task: tokio::task::JoinHandle<()>,
}

impl LeaseWatch {
    /// Polls Lease `namespace/name` every 100 ms (a renewal every retry period is never missed).
    pub fn start(client: &kube::Client, namespace: &str, name: &str) -> LeaseWatch {
        let leases: kube::Api<k8s_openapi::api::coordination::v1::Lease> =
            kube::Api::namespaced(client.clone(), namespace);
        let name = name.to_string();
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let record = seen.clone();
        let task = tokio::spawn(async move {
            loop {
                if let Ok(Some(lease)) = leases.get_opt(&name).await {
                    let spec = lease.spec.unwrap_or_default();
                    let now = (
                        spec.holder_identity.filter(|h| !h.is_empty()),
                        spec.renew_time.map(|t| t.0),
                    );
                    let mut seen = record.lock().unwrap();
                    if seen.last() != Some(&now) {
                        seen.push(now);
                    }
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        LeaseWatch { seen, task }
    }

    /// Every holder seen, in order, each once per term (`None`: released or not yet taken).
    pub fn holders(&self) -> Vec<Option<String>> {
        let mut out: Vec<Option<String>> = Vec::new();
        for (holder, _) in self.seen.lock().unwrap().iter() {
            if out.last() != Some(holder) {
                out.push(holder.clone());
            }
        }
        out
    }

    /// The longest time between two renewals of one holder, and how many renewals were seen.
    pub fn longest_gap(&self) -> (Duration, usize) {
        let seen = self.seen.lock().unwrap();
        let mut longest = Duration::ZERO;
        for pair in seen.windows(2) {
            if let ((Some(a), Some(t0)), (Some(b), Some(t1))) = (&pair[0], &pair[1])
                && a == b
            {
                let gap = t1.duration_since(*t0).unsigned_abs();
                longest = longest.max(gap);
            }
        }
        (longest, seen.len())
    }
}

impl Drop for LeaseWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// GET `/healthz` every 50 ms from a thread of its own (a kubelet probing the pod), recording how
/// long each took to answer 200 (`None`: no answer within 10 s, or not 200).
pub struct HealthProbe {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Vec<Option<Duration>>>>,
}

impl HealthProbe {
    pub fn start(addr: SocketAddr) -> HealthProbe {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            use std::io::{Read, Write};
            let mut took = Vec::new();
            while !stopped.load(Ordering::Relaxed) {
                let start = Instant::now();
                let limit = Duration::from_secs(10);
                let answered = (|| {
                    let mut s = std::net::TcpStream::connect_timeout(&addr, limit).ok()?;
                    s.set_read_timeout(Some(limit)).ok()?;
                    s.write_all(
                        b"GET /healthz HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n",
                    )
                    .ok()?;
                    let mut response = Vec::new();
                    s.read_to_end(&mut response).ok()?;
                    response.starts_with(b"HTTP/1.1 200").then_some(())
                })();
                took.push(answered.map(|()| start.elapsed()));
                std::thread::sleep(Duration::from_millis(50));
            }
            took
        });
        HealthProbe {
            stop,
            thread: Some(thread),
        }
    }

    /// Stops probing; returns how long each probe took, in order.
    pub fn finish(mut self) -> Vec<Option<Duration>> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap_or_default()
    }
}

impl Drop for HealthProbe {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
