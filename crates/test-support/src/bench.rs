//! What the benchmarks (the examples) need besides the tests' setup. Measured there, never asserted in
//! tests; errors are returned to be reported, not panics.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// `cargo build --release` of binary `bin` of `package` (a no-op when fresh), into the target folder
/// of the running example; returns its path. Called outside every measurement.
pub fn release_binary(package: &str, bin: &str) -> Result<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = std::process::Command::new(cargo)
        .args(["build", "--release", "-p", package, "--bin", bin])
        .status()
        .context("running cargo build")?;
    if !status.success() {
        bail!("cargo build of the {bin} binary: {status}");
    }
    // <target>/release/examples/<example> → <target>/release/<bin>
    let exe = std::env::current_exe()?;
    let path = exe
        .parent()
        .and_then(Path::parent)
        .context("folder of this example")?
        .join(bin);
    if !path.exists() {
        bail!("{} is missing after the build", path.display());
    }
    Ok(path)
}

/// (VmRSS, VmHWM) of a process, in KiB.
pub fn proc_status(pid: u32) -> Result<(u64, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |name: &str| -> Result<u64> {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .with_context(|| format!("{name} in /proc/{pid}/status"))
    };
    Ok((field("VmRSS:")?, field("VmHWM:")?))
}

/// Polls `check` every `poll` until it holds; an error after `timeout`.
pub async fn wait_until<F, Fut>(
    timeout: Duration,
    poll: Duration,
    what: &str,
    mut check: F,
) -> Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    while !check().await {
        if Instant::now() > deadline {
            bail!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(poll).await;
    }
    Ok(())
}
