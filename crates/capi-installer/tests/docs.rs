//! The documentation's relative links resolve: every `[text](path#anchor)` in the repository's Markdown
//! files (README, DEVELOPERS, BENCHMARKS, `docs/`) names a file or folder that exists and, with an
//! anchor, a heading of that file. A moved section or a renamed file breaks a link silently otherwise:
//! nothing renders these files before a reader follows them.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Every `*.md` below `dir`, skipping build output and hidden folders.
fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" {
                markdown_files(&path, out);
            }
        } else if name.ends_with(".md") {
            out.push(path);
        }
    }
}

/// The text outside fenced code blocks and inline code spans, line by line: what is inside them is not
/// rendered as links. A code span may go on over a line break, but not past the end of a paragraph.
fn prose_lines(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut in_code_span = false;
    let mut lines = Vec::new();
    for line in text.lines() {
        // Code lines stay as empty lines, so that a line's index is its line number.
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            in_code_span = false;
            lines.push(String::new());
            continue;
        }
        if fenced {
            lines.push(String::new());
            continue;
        }
        if line.trim().is_empty() {
            in_code_span = false;
        }
        let mut prose = String::new();
        for (i, part) in line.split('`').enumerate() {
            if i > 0 {
                in_code_span = !in_code_span;
            }
            if !in_code_span {
                prose.push_str(part);
            }
        }
        lines.push(prose);
    }
    lines
}

/// GitHub's anchor of a heading: lower case, code spans unwrapped, every character but letters, digits,
/// `-`, `_` and spaces dropped, spaces turned into `-`; a repeated anchor gets `-1`, `-2`, ...
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let Some(heading) = line
            .strip_prefix('#')
            .filter(|_| !fenced)
            .map(|h| h.trim_start_matches('#'))
            .filter(|h| h.starts_with(' '))
        else {
            continue;
        };
        let slug: String = heading
            .trim()
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut unique = slug.clone();
        let mut n = 0;
        while seen.contains(&unique) {
            n += 1;
            unique = format!("{slug}-{n}");
        }
        seen.insert(unique);
    }
    seen
}

/// The targets of the inline links of one line: what stands between `](` and the next `)`.
fn link_targets(line: &str) -> Vec<&str> {
    line.match_indices("](")
        .filter_map(|(i, _)| {
            let rest = &line[i + 2..];
            rest.find(')').map(|end| rest[..end].trim())
        })
        .collect()
}

#[test]
fn every_relative_link_of_the_documentation_resolves() {
    let root = repo();
    let mut files = Vec::new();
    markdown_files(&root, &mut files);
    files.sort();
    for required in ["README.md", "DEVELOPERS.md", "docs/README.md"] {
        assert!(files.contains(&root.join(required)), "{required} missing");
    }
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let shown = file.strip_prefix(&root).unwrap().display().to_string();
        for (n, line) in prose_lines(&text).iter().enumerate() {
            for target in link_targets(line) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                checked += 1;
                let (path, anchor) = match target.split_once('#') {
                    Some((path, anchor)) => (path, Some(anchor)),
                    None => (target, None),
                };
                let linked = if path.is_empty() {
                    file.clone()
                } else {
                    file.parent().unwrap().join(path)
                };
                let place = format!("{shown}:{}: ({target})", n + 1);
                if !linked.exists() {
                    broken.push(format!("{place}: no such file"));
                    continue;
                }
                if let Some(anchor) = anchor {
                    let Ok(linked_text) = std::fs::read_to_string(&linked) else {
                        broken.push(format!("{place}: an anchor into a folder"));
                        continue;
                    };
                    if !anchors(&linked_text).contains(anchor) {
                        broken.push(format!("{place}: no heading with this anchor"));
                    }
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    // The split documentation links across its files: finding none means the scan is broken.
    assert!(checked > 50, "only {checked} relative links found");
}

#[test]
fn anchors_follow_githubs_rules() {
    let text =
        "# A `ClusterAPI.spec.x` heading: yes\n## Twice\n## Twice\n```\n# not a heading\n```\n";
    assert_eq!(
        anchors(text),
        ["a-clusterapispecx-heading-yes", "twice", "twice-1"]
            .map(String::from)
            .into()
    );
    assert_eq!(
        link_targets("see [a](b.md#c) and [d](e/) and `[f](g)`"),
        ["b.md#c", "e/", "g"]
    );
    assert_eq!(prose_lines("x `[f](g)` y"), ["x  y"]);
    assert_eq!(
        prose_lines("a `code\nspan` [b](c)\n\n`open\n\n[d](e)"),
        ["a ", " [b](c)", "", "", "", "[d](e)"]
    );
}
