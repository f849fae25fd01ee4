//! How every binary of the project ends: one error format and exit codes that scripts can rely on.
//!
//! An error is printed on standard error as one line, `error: <what failed>: <why>: <why>`, the chain of
//! causes joined by `: ` (what clap prints for a usage error starts the same way). A cause whose text the
//! previous message already contains is left out: many errors embed their source's text, and printing
//! it twice makes a long line longer.

use std::error::Error;
use std::process::ExitCode;

/// Exit codes shared by the binaries.
pub mod exit {
    /// Success; for a check: nothing to report.
    pub const OK: u8 = 0;
    /// The command ran and its answer is "no": `manifests-gen --check` found stale files, `render`
    /// found a provider it cannot render; also a process that lost its leader election.
    pub const FAILED: u8 = 1;
    /// The command could not do its job: bad input, an unreadable file, an unreachable cluster, a usage
    /// error (clap exits 2 on those too).
    pub const ERROR: u8 = 2;
}

/// Writes a command's output to standard output. A reader that has gone away (`… | head -1`, a closed
/// pipe) is not an error: it wanted no more, and the command's exit code keeps its meaning (`--check`
/// still exits 1 when stale). Rust ignores SIGPIPE, so without this `print!` panics (exit 101) and
/// `write!` fails (an error, exit 2).
pub fn write_stdout(text: impl std::fmt::Display) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let result = write!(out, "{text}").and_then(|()| out.flush());
    match result {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// Writes a line to standard error, for progress and diagnostics. A closed or failing standard error
/// (`… 2>&1 | head -1`) is ignored: there is nowhere left to say anything, and the command's exit code
/// must stay what its work decided (`eprintln!` would panic, exit 101). Use through [`crate::note!`].
pub fn note_line(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    let _ = err.write_fmt(args).and_then(|()| err.write_all(b"\n"));
}

/// `eprintln!` that a closed standard error cannot crash: see [`report::note_line`](crate::report::note_line).
#[macro_export]
macro_rules! note {
    ($($arg:tt)*) => {
        $crate::report::note_line(format_args!($($arg)*))
    };
}

/// The one-line message of an error and its causes: `what failed: why: why`. Of a message that spans
/// lines only the first is kept: YAML parsers follow theirs (`line 3 column 11: unclosed bracket`)
/// with a snippet of the input, which would break the line format.
pub(crate) fn error_chain(err: &(dyn Error + 'static)) -> String {
    let first_line = |e: &dyn Error| e.to_string().lines().next().unwrap_or_default().to_string();
    let mut out = first_line(err);
    let mut source = err.source();
    while let Some(cause) = source {
        let text = first_line(cause);
        if !text.is_empty() && !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = cause.source();
    }
    out
}

/// Prints `error: <chain>` on standard error.
pub(crate) fn print_error(err: &(dyn Error + 'static)) {
    note_line(format_args!("error: {}", error_chain(err)));
}

/// Ends `main`: the code the command chose, or the error printed in the common format and `error_code`.
///
/// ```no_run
/// fn run() -> anyhow::Result<std::process::ExitCode> { anyhow::bail!("no such file") }
/// fn main() -> std::process::ExitCode {
///     capi_runtime::report::finish(run(), capi_runtime::report::exit::ERROR)
/// }
/// ```
pub fn finish<E>(result: Result<ExitCode, E>, error_code: u8) -> ExitCode
where
    E: Into<Box<dyn Error + Send + Sync + 'static>>,
{
    match result {
        Ok(code) => code,
        Err(e) => {
            let e: Box<dyn Error + Send + Sync + 'static> = e.into();
            print_error(e.as_ref());
            ExitCode::from(error_code)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[derive(Debug, thiserror::Error)]
    enum Inner {
        #[error("connection refused")]
        Refused,
    }

    #[derive(Debug, thiserror::Error)]
    enum Outer {
        // Embeds its source's text, as kube's and many other errors do.
        #[error("GET /api: {0}")]
        Embedding(#[source] Inner),
        #[error("cannot list")]
        Plain(#[source] Inner),
    }

    #[test]
    fn the_chain_is_one_line_without_repeats() {
        let cases: Vec<(anyhow::Error, &str)> = vec![
            (anyhow::anyhow!("no such file"), "no such file"),
            (
                Err::<(), _>(Outer::Plain(Inner::Refused))
                    .context("reading the lease")
                    .unwrap_err(),
                "reading the lease: cannot list: connection refused",
            ),
            (
                Err::<(), _>(Outer::Embedding(Inner::Refused))
                    .context("reading the lease")
                    .unwrap_err(),
                "reading the lease: GET /api: connection refused",
            ),
        ];
        #[derive(Debug, thiserror::Error)]
        #[error(
            "line 3 column 11: unclosed bracket '['\n --> <input>:3:11\n  |\n3 | clusters: [x\n  |           ^"
        )]
        struct Snippet;
        let mut cases = cases;
        cases.push((
            Err::<(), _>(Snippet)
                .context("reading kubeconfig k")
                .unwrap_err(),
            "reading kubeconfig k: line 3 column 11: unclosed bracket '['",
        ));
        for (err, expected) in cases {
            let boxed: Box<dyn Error + Send + Sync> = err.into();
            assert_eq!(error_chain(boxed.as_ref()), expected);
        }
    }
}
