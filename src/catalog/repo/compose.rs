//! The compose files at a repository's root and their `SANDBOXD_RUNTIMES` settings: listing the
//! files, reading the value each sets, and rewriting it to what the catalog renders.

use std::path::{Path, PathBuf};

use super::yaml::{compose_scalar, compose_unescape, decode_scalar, leading_blanks};
use crate::catalog::RUNTIMES_VARIABLE;

/// The compose files at the root of a repository (`docker-compose*.yml`, `compose*.yaml`, …),
/// sorted by name: the files whose `SANDBOXD_RUNTIMES` must match the catalog.
pub fn compose_files(repo_root: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for dir_entry in std::fs::read_dir(repo_root)? {
        let dir_entry = dir_entry?;
        let name = dir_entry.file_name().to_string_lossy().into_owned();
        let is_compose = (name.starts_with("docker-compose") || name.starts_with("compose"))
            && (name.ends_with(".yml") || name.ends_with(".yaml"));
        if is_compose && dir_entry.file_type()?.is_file() {
            files.push(dir_entry.path());
        }
    }
    files.sort();
    Ok(files)
}

/// The problem of a repository root where [`compose_files`] finds none.
pub fn no_compose_file(repo_root: &Path) -> String {
    format!("{} holds no compose file (docker-compose*.yml, compose*.yaml)", repo_root.display())
}

/// `text` with every `SANDBOXD_RUNTIMES` setting (`SANDBOXD_RUNTIMES: …` in a mapping, or
/// `- SANDBOXD_RUNTIMES=…` in a list) replaced by `value`, written as one single-quoted YAML
/// scalar with `$` doubled for compose's interpolation. A value spread over several lines (a
/// block scalar, or a folded continuation) is replaced whole. Every other byte is kept.
pub fn rewrite_compose(text: &str, value: &str) -> String {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out = String::with_capacity(text.len() + value.len());
    let mut copied = 0;
    for setting in runtimes_settings(&lines) {
        out.extend(lines[copied..setting.start].iter().copied());
        let body = setting.line;
        out.push_str(&body[..setting.value_start]);
        if setting.value_start == body.len() && body.ends_with(':') {
            out.push(' ');
        }
        out.push_str(&compose_scalar(&setting.style.written(value)));
        out.push_str(&lines[setting.start][body.len()..]);
        copied = setting.end;
    }
    out.extend(lines[copied..].iter().copied());
    out
}

/// Whether `text` fails to set `SANDBOXD_RUNTIMES` to exactly `value`: true when it never sets it
/// (sandboxd would fall back to its library's own runtimes), or when any setting reads otherwise
/// after YAML quoting and compose's `$$` are undone. A value compose would interpolate (a lone
/// `$`) or that spans several lines counts as drifted; [`rewrite_compose`] writes the one form
/// that does not.
pub fn compose_drift(text: &str, value: &str) -> bool {
    let values = compose_runtimes_values(text);
    values.is_empty() || values.iter().any(|v| v.as_deref() != Some(value))
}

/// Every `SANDBOXD_RUNTIMES` value in a compose text, decoded; `None` for one that cannot be read
/// back as a literal (multi-line, malformed quoting, or compose interpolation).
pub fn compose_runtimes_values(text: &str) -> Vec<Option<String>> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    runtimes_settings(&lines)
        .map(|setting| {
            if setting.end > setting.start + 1 {
                return None;
            }
            let scalar = decode_scalar(&setting.line[setting.value_start..])?;
            compose_unescape(&setting.style.read(scalar)?)
        })
        .collect()
}

/// How a setting is written: `SANDBOXD_RUNTIMES: value` in a mapping, or a list item
/// `- SANDBOXD_RUNTIMES=value`.
enum Style {
    Mapping,
    List,
}

impl Style {
    /// The scalar that sets `value` in this style.
    fn written(&self, value: &str) -> String {
        match self {
            Style::Mapping => value.to_owned(),
            Style::List => format!("{RUNTIMES_VARIABLE}={value}"),
        }
    }

    /// The value a scalar of this style sets; `None` for a list item naming another variable.
    fn read(&self, scalar: String) -> Option<String> {
        match self {
            Style::Mapping => Some(scalar),
            Style::List => scalar.strip_prefix(&format!("{RUNTIMES_VARIABLE}=")).map(str::to_owned),
        }
    }
}

struct Setting<'a> {
    style: Style,
    /// Index of the line the setting starts on.
    start: usize,
    /// That line, without its line ending.
    line: &'a str,
    /// Byte offset in the line where the value (for a list item: the whole item) starts.
    value_start: usize,
    /// Index of the first line after the setting (continuation lines included).
    end: usize,
}

/// Every `SANDBOXD_RUNTIMES` setting among `lines`, in order.
fn runtimes_settings<'a>(lines: &'a [&'a str]) -> impl Iterator<Item = Setting<'a>> {
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < lines.len() {
            if let Some(setting) = runtimes_setting(lines, i) {
                i = setting.end;
                return Some(setting);
            }
            i += 1;
        }
        None
    })
}

/// Recognises a `SANDBOXD_RUNTIMES` setting starting at line `i`.
fn runtimes_setting<'a>(lines: &[&'a str], i: usize) -> Option<Setting<'a>> {
    let line = lines[i].trim_end_matches(['\n', '\r']);
    let indent = leading_blanks(line);
    let rest = &line[indent..];
    let (style, value_start) = if let Some(after) = rest.strip_prefix(RUNTIMES_VARIABLE) {
        let after_trim = after.trim_start_matches([' ', '\t']);
        let colon_rest = after_trim.strip_prefix(':')?;
        if !(colon_rest.is_empty() || colon_rest.starts_with([' ', '\t'])) {
            return None;
        }
        (Style::Mapping, line.len() - colon_rest.len() + leading_blanks(colon_rest))
    } else if let Some(after_dash) = rest.strip_prefix('-') {
        let item = after_dash.trim_start_matches([' ', '\t']);
        if item.len() == after_dash.len() {
            return None;
        }
        let unquoted = item.trim_start_matches(['\'', '"']);
        let name_end = unquoted.strip_prefix(RUNTIMES_VARIABLE)?;
        if !name_end.starts_with('=') {
            return None;
        }
        (Style::List, line.len() - item.len())
    } else {
        return None;
    };

    // Continuation lines: anything more indented than the key (blank lines in between count
    // only when more such lines follow).
    let mut end = i + 1;
    let mut j = i + 1;
    while j < lines.len() {
        let next = lines[j].trim_end_matches(['\n', '\r']);
        if next.trim().is_empty() {
            j += 1;
            continue;
        }
        if leading_blanks(next) > indent {
            j += 1;
            end = j;
        } else {
            break;
        }
    }
    Some(Setting { style, start: i, line, value_start, end })
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMPOSE: &str = "services:\n  sandboxd:\n    image: ghcr.io/vstorm-co/sandboxd:0.2.37\n    environment:\n      SANDBOXD_TOKEN: ${SANDBOXD_TOKEN}\n      SANDBOXD_RUNTIMES: 'old'   # generated\n      SANDBOXD_NETWORK_MODE: none\n";

    #[test]
    fn rewrite_replaces_only_the_runtimes_value() {
        let out = rewrite_compose(COMPOSE, r#"{"a":{"image":"x:1"}}"#);
        assert_eq!(out, COMPOSE.replace("'old'   # generated", r#"'{"a":{"image":"x:1"}}'"#));
        assert!(!compose_drift(&out, r#"{"a":{"image":"x:1"}}"#));
        assert!(compose_drift(COMPOSE, r#"{"a":{"image":"x:1"}}"#));
        assert_eq!(rewrite_compose(&out, r#"{"a":{"image":"x:1"}}"#), out, "idempotent");
    }

    #[test]
    fn rewrite_escapes_dollars_and_quotes_for_compose() {
        let value = r#"{"a":{"runtime":{"setup_commands":["echo \"$HOME\" 'x' $$"]}}}"#;
        let out = rewrite_compose(COMPOSE, value);
        assert!(
            out.contains(r#"SANDBOXD_RUNTIMES: '{"a":{"runtime":{"setup_commands":["echo \"$$HOME\" ''x'' $$$$"]}}}'"#),
            "{out}"
        );
        assert_eq!(compose_runtimes_values(&out), vec![Some(value.to_owned())]);
        assert!(!compose_drift(&out, value));
    }

    #[test]
    fn rewrite_replaces_a_value_spread_over_several_lines() {
        let text = "    environment:\n      SANDBOXD_RUNTIMES: >-\n        {\"a\":\n        {\"image\":\"x:1\"}}\n\n      SANDBOXD_UI_ENABLED: \"0\"\n";
        assert_eq!(compose_runtimes_values(text), vec![None]);
        assert!(compose_drift(text, "v"));
        let out = rewrite_compose(text, "v");
        assert_eq!(out, "    environment:\n      SANDBOXD_RUNTIMES: 'v'\n\n      SANDBOXD_UI_ENABLED: \"0\"\n");
    }

    #[test]
    fn rewrite_handles_list_style_environment_and_a_value_on_the_next_line() {
        let text = "    environment:\n      - SANDBOXD_TOKEN=abc\n      - \"SANDBOXD_RUNTIMES=old\"\n";
        assert_eq!(compose_runtimes_values(text), vec![Some("old".to_owned())]);
        let out = rewrite_compose(text, "{\"a\":1}");
        assert_eq!(out, "    environment:\n      - SANDBOXD_TOKEN=abc\n      - 'SANDBOXD_RUNTIMES={\"a\":1}'\n");
        assert!(!compose_drift(&out, "{\"a\":1}"));

        let text = "      SANDBOXD_RUNTIMES:\n        old\n      X: y\n";
        assert_eq!(rewrite_compose(text, "v"), "      SANDBOXD_RUNTIMES: 'v'\n      X: y\n");
    }

    #[test]
    fn drift_reads_every_quoting_style() {
        assert!(!compose_drift("  SANDBOXD_RUNTIMES: \"{\\\"a\\\":1}\"\n", "{\"a\":1}"));
        assert!(!compose_drift("  SANDBOXD_RUNTIMES: python=python:3.12 # plain\n", "python=python:3.12"));
        assert!(!compose_drift("  SANDBOXD_RUNTIMES: 'it''s $$x'", "it's $x"));
    }

    #[test]
    fn a_file_that_never_sets_the_runtimes_or_interpolates_them_has_drifted() {
        assert!(compose_drift("services: {}\n", "v"));
        assert!(compose_drift("  SANDBOXD_RUNTIMES: ${RUNTIMES}\n", "${RUNTIMES}"));
        assert!(compose_drift("  SANDBOXD_RUNTIMES_EXTRA: 'v'\n", "v"));
        assert!(compose_drift("  SANDBOXD_RUNTIMES: 'v'\n  SANDBOXD_RUNTIMES: 'w'\n", "v"));
    }
}
