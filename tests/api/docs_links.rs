//! The README and `docs/` hold together: every relative Markdown link (and `<img src>`) of
//! README.md and `docs/**/*.md` names a file that exists and, with a `#anchor`, a heading of that
//! file (GitHub's slugs); the README stays at most 200 lines and starts with the two commands.
//! Plain files, no database.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use crate::support::source_files::{files_under, repo_root};

/// README.md and every `.md` file under `docs/`, sorted.
fn markdown_files() -> Vec<PathBuf> {
    let mut files = vec![repo_root().join("README.md")];
    files.extend(files_under(&repo_root().join("docs"), Some("md")));
    files.sort();
    files
}

fn display(path: &Path) -> String {
    path.strip_prefix(repo_root()).unwrap_or(path).display().to_string()
}

/// The text with every fenced code block's lines blanked (line breaks kept, so offsets still
/// give line numbers), and the line of a fence left open at the end, if any.
fn fences(text: &str) -> (String, Option<usize>) {
    let mut out = String::with_capacity(text.len());
    let mut fence: Option<(char, usize)> = None;
    let mut opened_at = 0;
    for (number, line) in text.split_inclusive('\n').enumerate() {
        let trimmed = line.trim_start();
        let marker = trimmed.chars().next().filter(|c| *c == '`' || *c == '~');
        let run = marker.map_or(0, |m| trimmed.chars().take_while(|c| *c == m).count());
        let blank = match (fence, marker) {
            (None, Some(m)) if run >= 3 => {
                fence = Some((m, run));
                opened_at = number + 1;
                true
            }
            (Some((m, n)), Some(c)) if c == m && run >= n && trimmed[run..].trim().is_empty() => {
                fence = None;
                true
            }
            (Some(_), _) => true,
            _ => false,
        };
        if blank {
            out.extend(line.chars().filter(|c| *c == '\n'));
        } else {
            out.push_str(line);
        }
    }
    (out, fence.map(|_| opened_at))
}

fn without_fences(text: &str) -> String {
    fences(text).0
}

/// The text with every inline code span blanked (a span opened by N backticks closes at the next
/// run of exactly N; it may cross a line break). An unclosed run stays as it is.
fn without_code_spans(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let run_at = |i: usize| chars[i..].iter().take_while(|c| **c == '`').count();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let n = run_at(i);
        let mut j = i + n;
        let mut close = None;
        while j < chars.len() {
            if chars[j] == '`' {
                let m = run_at(j);
                if m == n {
                    close = Some(j);
                    break;
                }
                j += m;
            } else {
                j += 1;
            }
        }
        match close {
            Some(j) => {
                for c in &chars[i..j + n] {
                    out.push(if *c == '\n' { '\n' } else { ' ' });
                }
                i = j + n;
            }
            None => {
                out.extend(&chars[i..i + n]);
                i += n;
            }
        }
    }
    out
}

/// GitHub's anchor of a heading: lower-case, punctuation (all but `-` and `_`) removed, each space
/// a `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every anchor a file's headings give, a repeated heading getting `-1`, `-2`… as on GitHub.
fn anchors(text: &str) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::new();
    for line in without_fences(text).lines() {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(line[hashes..].trim().trim_end_matches('#'));
        let n = seen.entry(base.clone()).or_insert(0);
        out.push(if *n == 0 { base.clone() } else { format!("{base}-{n}") });
        *n += 1;
    }
    out
}

/// Every link target of the text (outside code) with its line: `[text](target)`, `![alt](target)`
/// and `<img src="target">`.
pub(crate) fn links(text: &str) -> Vec<(usize, String)> {
    let text = without_code_spans(&without_fences(text));
    let line_of = |offset: usize| text[..offset].matches('\n').count() + 1;
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(found) = text[from..].find("](") {
        let start = from + found + 2;
        let rest = &text[start..];
        let end = rest.find(|c: char| c == ')' || c.is_whitespace()).unwrap_or(rest.len());
        let target = rest[..end].trim_start_matches('<').trim_end_matches('>');
        out.push((line_of(start), target.to_string()));
        from = start;
    }
    let mut from = 0;
    while let Some(found) = text[from..].find("src=\"") {
        let start = from + found + 5;
        let end = text[start..].find('"').map_or(text.len(), |e| start + e);
        out.push((line_of(start), text[start..end].to_string()));
        from = end;
    }
    out
}

pub(crate) fn is_external(target: &str) -> bool {
    let lower = target.to_ascii_lowercase();
    ["http:", "https:", "mailto:"].iter().any(|scheme| lower.starts_with(scheme))
}

/// `base/../x` without touching the disk.
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// What is wrong with each relative link of every file, one line each.
fn broken_links() -> Vec<String> {
    let mut anchors_of: HashMap<PathBuf, Vec<String>> = HashMap::new();
    let mut problems = Vec::new();
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).expect("read");
        if let (_, Some(line)) = fences(&text) {
            problems.push(format!("{}:{line}: a code fence opened here is never closed", display(&file)));
        }
        for (line, target) in links(&text) {
            if target.is_empty() || is_external(&target) {
                continue;
            }
            let (path_part, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let dest = if path_part.is_empty() {
                file.clone()
            } else {
                normalise(&file.parent().expect("parent").join(path_part))
            };
            let at = format!("{}:{line}: link `{target}`", display(&file));
            if !dest.exists() {
                problems.push(format!("{at}: {} does not exist", display(&dest)));
                continue;
            }
            let Some(anchor) = anchor else { continue };
            if dest.extension().is_none_or(|e| e != "md") {
                problems.push(format!("{at}: an anchor into {}, which is not Markdown", display(&dest)));
                continue;
            }
            let known = anchors_of
                .entry(dest.clone())
                .or_insert_with(|| anchors(&std::fs::read_to_string(&dest).expect("read target")));
            if !known.iter().any(|a| a == anchor) {
                problems.push(format!("{at}: no heading of {} has the anchor #{anchor}", display(&dest)));
            }
        }
    }
    problems
}

#[test]
fn every_relative_link_of_the_readme_and_docs_resolves() {
    let files = markdown_files();
    assert!(files.len() > 1, "docs/ holds Markdown files: {files:?}");
    let problems = broken_links();
    assert!(problems.is_empty(), "broken links:\n{}", problems.join("\n"));
}

#[test]
fn the_readme_fits_on_a_screen_and_starts_with_the_two_commands() {
    let text = std::fs::read_to_string(repo_root().join("README.md")).expect("README.md");
    let lines = text.lines().count();
    assert!(lines <= 200, "README.md has {lines} lines; at most 200 (move the rest into docs/)");
    let mut blocks = Vec::new();
    let mut current: Option<Vec<&str>> = None;
    for line in text.lines() {
        match current.as_mut() {
            None if line.trim_start().starts_with("```") => current = Some(Vec::new()),
            None => {}
            Some(_) if line.trim_start().starts_with("```") => {
                blocks.push(current.take().expect("block").join("\n"));
            }
            Some(body) => body.push(line),
        }
    }
    let first_two: Vec<&str> = blocks.iter().take(2).map(|b| b.trim()).collect();
    assert_eq!(
        first_two,
        ["cargo run --release", "cargo test"],
        "README.md's first two code blocks are the two commands (`.ci/run` relies on `cargo test`)"
    );
}

#[test]
fn slugs_and_links_are_read_as_github_does() {
    assert_eq!(slug("Deployment (docker compose)"), "deployment-docker-compose");
    assert_eq!(slug("The `state` backend under concurrency"), "the-state-backend-under-concurrency");
    assert_eq!(slug("Durable recording (`--churn`)"), "durable-recording---churn");
    assert_eq!(slug("Deleting conversations, agents and members"), "deleting-conversations-agents-and-members");
    assert_eq!(anchors("# A\n## A\n```\n# not a heading\n```\n### b_c!\n"), ["a", "a-1", "b_c"]);
    assert_eq!(fences("a\n```\nb\n```\nc\n```sh\nd\n"), ("a\n\n\n\nc\n\n\n".to_string(), Some(6)));
    let found = links("[a](x.md) `[b](code.md)` ![c](img.png)\n```\n[d](fenced.md)\n```\n<img src=\"s.png\">\n");
    assert_eq!(found, [(1, "x.md".to_string()), (1, "img.png".to_string()), (5, "s.png".to_string())]);
}
