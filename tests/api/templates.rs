//! Links and form actions come from `web/paths.rs`, never string-built (docs/style.md, Templates and
//! htmx). This reads every template as text and fails naming the file, line and attribute where
//! a URL attribute holds a hand-written path: `href="/agents"`, `hx-get="/x/{{ id }}"`,
//! `action="{{ base }}/delete"`.

use std::path::PathBuf;

use crate::support::source_files::{files_under, repo_root};

/// Attributes whose value is a URL the console serves.
const URL_ATTRIBUTES: &[&str] = &[
    "href",
    "src",
    "action",
    "formaction",
    "hx-get",
    "hx-post",
    "hx-put",
    "hx-patch",
    "hx-delete",
    "hx-push-url",
    "hx-replace-url",
];

fn templates_dir() -> PathBuf {
    repo_root().join("templates")
}

/// One URL attribute: its name, its value as written, and the value's text outside askama tags.
#[derive(Debug)]
struct UrlAttribute {
    line: usize,
    name: String,
    value: String,
    literal: String,
}

/// The end of an askama tag (`{{ … }}`, `{% … %}`, `{# … #}`) that starts at `at`, if one does.
fn tag_end(text: &str, at: usize) -> Option<usize> {
    let close = match text.get(at..at + 2)? {
        "{{" => "}}",
        "{%" => "%}",
        "{#" => "#}",
        _ => return None,
    };
    text[at + 2..].find(close).map(|i| at + 2 + i + 2)
}

/// Every URL attribute in a template. Quotes inside askama tags (`{{ f("x") }}`) do not end a value.
fn url_attributes(text: &str) -> Vec<UrlAttribute> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < text.len() {
        if let Some(end) = tag_end(text, i) {
            i = end;
            continue;
        }
        let boundary = i == 0 || bytes[i - 1].is_ascii_whitespace();
        let name = URL_ATTRIBUTES.iter().find(|a| {
            boundary
                && text[i..].starts_with(**a)
                && text[i + a.len()..].trim_start().starts_with('=')
                && !text[i + a.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-')
        });
        let Some(name) = name else {
            i += text[i..].chars().next().map_or(1, char::len_utf8);
            continue;
        };
        let after_eq = i + name.len() + text[i + name.len()..].find('=').unwrap_or(0) + 1;
        let start = after_eq + (text[after_eq..].len() - text[after_eq..].trim_start().len());
        let quote = match bytes.get(start) {
            Some(b'"') => '"',
            Some(b'\'') => '\'',
            _ => ' ',
        };
        let mut j = if quote == ' ' { start } else { start + 1 };
        let mut literal = String::new();
        while j < text.len() {
            if let Some(end) = tag_end(text, j) {
                literal.push(' ');
                j = end;
                continue;
            }
            let c = text[j..].chars().next().unwrap_or(' ');
            if c == quote || (quote == ' ' && (c.is_whitespace() || c == '>')) {
                break;
            }
            literal.push(c);
            j += c.len_utf8();
        }
        let value_start = if quote == ' ' { start } else { start + 1 };
        out.push(UrlAttribute {
            line: text[..i].matches('\n').count() + 1,
            name: name.to_string(),
            value: text[value_start..j.min(text.len())].to_string(),
            literal,
        });
        i = j + 1;
    }
    out
}

/// A path written by hand: a `/` in the value's own text (outside askama tags), other than an
/// external `https://` link.
fn is_hand_written(a: &UrlAttribute) -> bool {
    let literal = a.literal.trim();
    let external = ["http://", "https://", "mailto:"].iter().any(|p| literal.starts_with(p));
    literal.contains('/') && !external
}

#[test]
fn templates_take_every_link_and_form_action_from_web_paths() {
    let files = files_under(&templates_dir(), Some("html"));
    assert!(files.len() > 20, "found only {} templates under {:?}", files.len(), templates_dir());
    let mut seen = 0;
    let mut offenders = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("read template");
        let rel = f.strip_prefix(templates_dir()).unwrap_or(f).display().to_string();
        for a in url_attributes(&text) {
            seen += 1;
            if is_hand_written(&a) {
                offenders.push(format!("templates/{rel}:{}: {}=\"{}\"", a.line, a.name, a.value));
            }
        }
    }
    // The check passes trivially if the reader finds nothing: the templates hold many links.
    assert!(seen > 50, "read only {seen} URL attributes");
    assert!(
        offenders.is_empty(),
        "write these with a function or constant of web/paths.rs (or web/assets.rs for static files):\n{}",
        offenders.join("\n")
    );
}

#[test]
fn the_url_reader_tells_hand_written_paths_from_paths_functions() {
    let flagged = |html: &str| url_attributes(html).iter().filter(|a| is_hand_written(a)).count();
    assert_eq!(flagged(r#"<a href="/agents">"#), 1);
    assert_eq!(flagged(r#"<a class="x" href='/agents/{{ a.id }}'>"#), 1);
    assert_eq!(flagged(r#"<form action="{{ base }}/delete" method="post">"#), 1);
    assert_eq!(flagged(r#"<div hx-get="/sandboxes/running" hx-trigger="every 3s">"#), 1);
    assert_eq!(flagged(r#"<button hx-post = "/sandboxes/probe">"#), 1);
    assert_eq!(flagged(r#"<img src="/static/img/favicon.svg">"#), 1);

    assert_eq!(flagged(r#"<a href="{{ crate::web::paths::agent(a.id) }}">"#), 0);
    assert_eq!(flagged(r#"<a href="{{ shell.current("home") }}" data-href="/x">"#), 0);
    assert_eq!(flagged(r##"<a href="#main">Skip</a>"##), 0);
    assert_eq!(flagged(r#"<a href="https://example.com/docs">"#), 0);
    assert_eq!(flagged(r##"<input placeholder="http://sandboxd:8080" hx-target="#runtime-field">"##), 0);
    assert_eq!(flagged(r#"{# href="/commented" #}<p>a/b</p>"#), 0);
    assert_eq!(url_attributes(r#"<a href="{{ f("/") }}">"#).len(), 1);
}
