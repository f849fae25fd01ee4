//! Writing outputs so that a reader never sees half of them, and `--check`: comparing them with what
//! is committed.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use capi_runtime::note;
use capi_runtime::report::exit;

/// One file to write or check.
pub struct Output {
    pub path: PathBuf,
    pub content: String,
}

/// Exit 0 when every output is as committed, else print a unified diff of each stale one and exit 1.
/// A missing file counts as empty.
pub fn check(outputs: &[Output]) -> Result<ExitCode> {
    let mut stale = false;
    for o in outputs {
        let current = match std::fs::read_to_string(&o.path) {
            Ok(s) => s,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", o.path.display())),
        };
        if current == o.content {
            continue;
        }
        stale = true;
        let name = o.path.display().to_string();
        let (current, generated) = (elide_long_lines(&current), elide_long_lines(&o.content));
        let diff = similar::TextDiff::from_lines(&current, &generated);
        capi_runtime::report::write_stdout(diff.unified_diff().context_radius(3).header(
            &format!("{name} (committed)"),
            &format!("{name} (generated)"),
        ))
        .context("writing the diff to standard output")?;
    }
    if stale {
        note!(
            "generated manifests are stale: run manifests-gen without --check and commit the result"
        );
        Ok(ExitCode::from(exit::FAILED))
    } else {
        note!("generated manifests are up to date");
        Ok(ExitCode::SUCCESS)
    }
}

/// A compressed ConfigMap holds its components in one base64 line of ~100 kB; printing it in a
/// diff helps nobody (the review copy shows the real change). Replace such lines with their
/// length and a hash, so the diff still shows *that* they changed.
fn elide_long_lines(text: &str) -> String {
    const MAX: usize = 400;
    text.split_inclusive('\n')
        .map(|line| {
            if line.len() <= MAX {
                return line.to_owned();
            }
            // FNV-1a: stable and dependency-free; only used to tell lines apart.
            let hash = line.bytes().fold(0xcbf29ce484222325u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
            });
            let indent = &line[..line.len() - line.trim_start().len()];
            let key = line.trim_start().split_once(' ').map_or("", |(k, _)| k);
            format!(
                "{indent}{key} <{} bytes elided, fnv1a {hash:016x}>\n",
                line.len()
            )
        })
        .collect()
}

/// Writes every output to a temporary file beside its target, then renames them all: a reader
/// never sees a half-written file, and a failure before the renames leaves the targets as they
/// were. Says what it wrote on standard error.
pub fn write_all(outputs: &[Output]) -> Result<()> {
    let mut temps = Vec::new();
    let result = (|| -> Result<()> {
        for o in outputs {
            let dir = o
                .path
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create folder {}", dir.display()))?;
            let file_name = o.path.file_name().expect("output paths end in a file name");
            let tmp = dir.join(format!(
                ".{}.tmp-{}",
                file_name.to_string_lossy(),
                std::process::id()
            ));
            temps.push(tmp.clone());
            std::fs::write(&tmp, &o.content)
                .with_context(|| format!("cannot write {}", tmp.display()))?;
        }
        for (o, tmp) in outputs.iter().zip(&temps) {
            std::fs::rename(tmp, &o.path).with_context(|| {
                format!("cannot rename {} to {}", tmp.display(), o.path.display())
            })?;
        }
        Ok(())
    })();
    if result.is_err() {
        for t in &temps {
            let _ = std::fs::remove_file(t);
        }
    } else {
        for o in outputs {
            note!("wrote {} ({} bytes)", o.path.display(), o.content.len());
        }
    }
    result
}
