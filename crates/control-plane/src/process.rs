//! Child processes: spawning with their logs in the control-plane folder, pid files, log tails for
//! error messages, and stopping.

use std::fs::{self, File};
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::{Error, io};

/// Processes in the order `down` stops them: clients of the API server first, etcd last, so that
/// nothing logs a storm of connection errors while shutting down.
pub(crate) const STOP_ORDER: &[&str] = &[
    "kwok",
    "kube-scheduler",
    "kube-controller-manager",
    "kube-apiserver",
    "etcd",
];

pub(crate) struct Process {
    pub name: &'static str,
    pub child: Child,
    pub log: PathBuf,
}

type SpawnRequest = (Command, mpsc::Sender<std::io::Result<Child>>);

/// Where children are forked from.
///
/// `PR_SET_PDEATHSIG` fires when the *thread* that forked the child exits, not the process. Forking
/// from whatever tokio worker happens to run `start` would kill the children whenever the runtime
/// retires that worker (and a `#[tokio::test]` runtime is dropped before the test's locals are). So
/// attached children are forked from one dedicated thread that lives exactly as long as the
/// ControlPlane: it ends only after the children are dead, or together with the whole process.
pub(crate) enum Spawner {
    /// Children die with the test process, even on abort or SIGKILL.
    Attached {
        requests: Option<mpsc::Sender<SpawnRequest>>,
        thread: Option<JoinHandle<()>>,
    },
    /// Children outlive this process (the `up` command); `down` stops them through the pid files.
    Detached,
}

impl Spawner {
    pub fn attached() -> Result<Spawner, Error> {
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        let thread = std::thread::Builder::new()
            .name("control-plane-spawner".into())
            .spawn(move || {
                for (mut command, reply) in rx {
                    // SAFETY: getpid is async-signal-safe and called here, before the fork.
                    let parent = unsafe { libc::getpid() };
                    // SAFETY: the closure runs between fork and exec and calls only async-signal-safe
                    // functions (prctl, getppid).
                    unsafe {
                        command.pre_exec(move || {
                            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                                return Err(std::io::Error::last_os_error());
                            }
                            // The parent may have died between fork and prctl: then nobody would
                            // ever send the signal. (No allocation here: we are between fork and exec.)
                            if libc::getppid() != parent {
                                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
                            }
                            Ok(())
                        });
                    }
                    let _ = reply.send(command.spawn());
                }
            })
            .map_err(io("start the control-plane spawner thread"))?;
        Ok(Spawner::Attached {
            requests: Some(tx),
            thread: Some(thread),
        })
    }

    fn spawn(&self, command: Command) -> std::io::Result<Child> {
        match self {
            Spawner::Attached { requests, .. } => {
                let (tx, rx) = mpsc::channel();
                requests
                    .as_ref()
                    .and_then(|r| r.send((command, tx)).ok())
                    .ok_or_else(|| std::io::Error::other("spawner thread is gone"))?;
                rx.recv()
                    .map_err(|_| std::io::Error::other("spawner thread is gone"))?
            }
            Spawner::Detached => {
                let mut command = command;
                command.spawn()
            }
        }
    }

    /// Ends the spawner thread; call only once every attached child has been reaped.
    pub fn shutdown(&mut self) {
        if let Spawner::Attached { requests, thread } = self {
            requests.take();
            if let Some(thread) = thread.take() {
                let _ = thread.join();
            }
        }
    }
}

/// Starts `binary` with its output in `<dir>/logs/<name>.log` and its pid in `<dir>/pids/<name>.pid`.
pub(crate) fn spawn(
    spawner: &Spawner,
    dir: &Path,
    name: &'static str,
    binary: &Path,
    args: &[String],
) -> Result<Process, Error> {
    let log = dir.join("logs").join(format!("{name}.log"));
    let out = File::create(&log).map_err(io(format!("create {}", log.display())))?;
    let err = out
        .try_clone()
        .map_err(io(format!("open {}", log.display())))?;
    let mut command = Command::new(binary);
    command
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        // Own process group: a Ctrl-C meant for `cargo test` or for the shell that ran `up` reaches
        // only us; we decide how the children end.
        .process_group(0);
    let child = spawner
        .spawn(command)
        .map_err(io(format!("start {name} ({})", binary.display())))?;
    let pid_file = pid_file(dir, name);
    fs::write(&pid_file, format!("{}\n", child.id()))
        .map_err(io(format!("write {}", pid_file.display())))?;
    Ok(Process { name, child, log })
}

pub(crate) fn pid_file(dir: &Path, name: &str) -> PathBuf {
    dir.join("pids").join(format!("{name}.pid"))
}

/// The last lines of a log, for error messages.
pub(crate) fn tail(log: &Path) -> String {
    const MAX_BYTES: u64 = 8 * 1024;
    const MAX_LINES: usize = 40;
    let Ok(mut file) = File::open(log) else {
        return String::from("(no log)");
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len > MAX_BYTES {
        let _ = file.seek(SeekFrom::Start(len - MAX_BYTES));
    }
    let mut bytes = Vec::new();
    let _ = file.read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.lines().collect();
    let skip = lines.len().saturating_sub(MAX_LINES);
    lines[skip..].join("\n")
}

impl Process {
    /// `Err` when the process has exited: it was expected to keep running.
    pub fn check_running(&mut self) -> Result<(), Error> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(self.exited(status.to_string())),
            Err(e) => Err(self.exited(format!("wait failed: {e}"))),
        }
    }

    fn exited(&self, status: String) -> Error {
        Error::ProcessExited {
            name: self.name.to_string(),
            status,
            log: self.log.clone(),
            tail: tail(&self.log),
        }
    }

    /// Waits up to `timeout` for the process to exit by itself (and reaps it).
    pub fn wait_exit(&mut self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL and reap. The control plane of a test is thrown away with its data, so there is
    /// nothing a graceful shutdown would save, and waiting for one would slow every test down.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether `pid` is a live process started for the control plane in `dir`. The command line check
/// guards against a recycled pid: every child has the folder in its arguments.
fn is_ours(pid: i32, dir: &Path) -> bool {
    if !running(pid) {
        return false;
    }
    let Ok(cmdline) = fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let needle = dir.as_os_str().as_encoded_bytes();
    cmdline.windows(needle.len().max(1)).any(|w| w == needle)
}

/// Stops the processes recorded in `<dir>/pids`: SIGTERM, then SIGKILL after `grace`, and waits until
/// every one is gone. Returns the names of the processes that were running.
pub(crate) fn stop_recorded(dir: &Path, grace: Duration) -> Result<Vec<String>, Error> {
    let pids_dir = dir.join("pids");
    let mut recorded: Vec<(String, i32)> = Vec::new();
    let entries = match fs::read_dir(&pids_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io(format!("read {}", pids_dir.display()))(e)),
    };
    for entry in entries {
        let path = entry
            .map_err(io(format!("read {}", pids_dir.display())))?
            .path();
        let Some(name) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".pid"))
        else {
            continue;
        };
        let text = fs::read_to_string(&path).map_err(io(format!("read {}", path.display())))?;
        let pid: i32 = text.trim().parse().map_err(|_| Error::State {
            dir: dir.to_path_buf(),
            message: format!("{} does not hold a pid: {text:?}", path.display()),
        })?;
        recorded.push((name.to_string(), pid));
    }
    let rank = |name: &str| {
        STOP_ORDER
            .iter()
            .position(|n| *n == name)
            .unwrap_or(usize::MAX)
    };
    recorded.sort_by_key(|(name, _)| rank(name));

    let mut stopped = Vec::new();
    for (name, pid) in &recorded {
        if is_ours(*pid, dir) {
            stopped.push(name.clone());
            terminate(*pid, grace);
        }
        let _ = fs::remove_file(pid_file(dir, name));
    }
    Ok(stopped)
}

fn terminate(pid: i32, grace: Duration) {
    // SAFETY: plain kill(2) on a pid we just checked belongs to this control plane.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    if wait_gone(pid, grace) {
        return;
    }
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    wait_gone(pid, Duration::from_secs(30));
}

/// Whether `pid` is a process that has not exited yet. The state follows the parenthesised command
/// name; a zombie has exited already (orphans of `up` may stay zombies for a while when pid 1 does not
/// reap them).
fn running(pid: i32) -> bool {
    let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next());
    !matches!(state, Some('Z') | Some('X') | None)
}

/// Waits until `pid`, known to be ours, has exited. Only its state is looked at, not its command line:
/// a process on its way out (etcd unmapping its database on a busy machine can take seconds) already
/// shows an empty command line, and counting that as gone made `down` return before etcd was.
fn wait_gone(pid: i32, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if !running(pid) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Names of the recorded processes of `dir` that are still running.
pub(crate) fn running_recorded(dir: &Path) -> Vec<String> {
    let Ok(entries) = fs::read_dir(dir.join("pids")) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let path = e.path();
            let name = path
                .file_name()?
                .to_str()?
                .strip_suffix(".pid")?
                .to_string();
            let pid: i32 = fs::read_to_string(&path).ok()?.trim().parse().ok()?;
            is_ours(pid, dir).then_some(name)
        })
        .collect()
}
