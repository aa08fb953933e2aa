//! What a manifest may be saved with (an agent's, or a run's own): each message names its entry
//! (`manifest.entries[3].path`). Paths are workspace-relative: absolute paths and `..` are
//! refused, not normalised away. Bounds: [`ENTRIES_MAX`] entries, [`FILE_BYTES_MAX`] per file,
//! [`TOTAL_BYTES_MAX`] for all contents and values together.

use std::collections::BTreeSet;

use base64::Engine as _;

use super::{Manifest, ManifestEntry, ENTRIES_MAX, FILE_BYTES_MAX, TOTAL_BYTES_MAX};
use crate::db;
use crate::validate::FieldErrors;
use crate::vocabulary::command::{is_variable_name, ARG_MAX_BYTES};
use crate::vocabulary::paths;

/// The vault purpose an `env` secret must have: a host's key (`sandboxd`, `daytona`) never
/// reaches a sandbox's commands.
pub const ENV_SECRET_PURPOSE: &str = "other";
/// The longest URL and ref.
const URL_MAX: usize = 2048;
const REF_MAX: usize = 255;

/// A workspace-relative path: no leading `/`, no `..`, no NUL or control characters; normalised
/// (`a//b/./c` is `a/b/c`). None (with a message at `field`) otherwise.
pub fn relative_path(errors: &mut FieldErrors, field: &str, raw: &str, root_ok: bool) -> Option<String> {
    let refuse = |errors: &mut FieldErrors, m: &str| {
        errors.add(field, m);
        None
    };
    if raw.starts_with('/') || raw.starts_with('~') {
        return refuse(errors, "A manifest path is relative to the workspace root: no leading “/” or “~”.");
    }
    if raw.split('/').any(|p| p == "..") {
        return refuse(errors, "A manifest path cannot contain “..”.");
    }
    match paths::normalise(raw) {
        Err(m) => refuse(errors, &m),
        Ok(p) if p.is_root() && !root_ok => refuse(errors, "Give a path inside the workspace, not its root."),
        Ok(p) => Some(p.relative().to_string()),
    }
}

fn has_control(s: &str, allow_lines: bool) -> bool {
    s.chars().any(|c| c.is_control() && !(allow_lines && matches!(c, '\n' | '\r' | '\t')))
}

/// Checks `m` (messages under `field`, e.g. `manifest`) and gives it back normalised. The
/// secrets its `env` entries name are checked by [`check_secrets`].
pub fn check(errors: &mut FieldErrors, field: &str, m: &Manifest) -> Manifest {
    if m.entries.len() > ENTRIES_MAX {
        errors.add(&format!("{field}.entries"), format!("A manifest holds at most {ENTRIES_MAX} entries."));
        return Manifest::default();
    }
    let mut total = 0usize;
    let mut names = BTreeSet::new();
    let mut out = Vec::new();
    for (i, e) in m.entries.iter().enumerate() {
        let at = |name: &str| format!("{field}.entries[{i}].{name}");
        let entry = match e {
            ManifestEntry::File { path, content, content_base64 } => {
                let path = relative_path(errors, &at("path"), path, false);
                let size = match content_base64 {
                    Some(b) if !content.is_empty() => {
                        errors.add(&at("content"), "Give either content (text) or content_base64 (bytes), not both.");
                        b.len()
                    }
                    Some(b) => match base64::engine::general_purpose::STANDARD.decode(b) {
                        Ok(bytes) => bytes.len(),
                        Err(_) => {
                            errors.add(&at("content_base64"), "This is not valid base64.");
                            0
                        }
                    },
                    None => {
                        if has_control(content, true) {
                            errors.add(
                                &at("content"),
                                "Text content cannot contain NUL or control characters (tabs and line breaks are fine); send bytes as content_base64.",
                            );
                        }
                        content.len()
                    }
                };
                if size > FILE_BYTES_MAX {
                    errors.add(&at("content"), format!("A file's content has at most {} KiB.", FILE_BYTES_MAX / 1024));
                }
                total += size;
                path.map(|path| ManifestEntry::File {
                    path,
                    content: content.clone(),
                    content_base64: content_base64.clone(),
                })
            }
            ManifestEntry::Dir { path } => {
                relative_path(errors, &at("path"), path, false).map(|path| ManifestEntry::Dir { path })
            }
            ManifestEntry::GitRepo { url, git_ref, path } => {
                let path = relative_path(errors, &at("path"), path, true);
                let url = check_url(errors, &at("url"), url);
                let git_ref = git_ref.as_deref().map(str::trim).filter(|r| !r.is_empty());
                if let Some(r) = git_ref {
                    if !is_ref(r) {
                        errors.add(&at("ref"), "A ref is a branch or tag name: letters, digits and . _ / -, not starting with “-”, no “..”.");
                    }
                }
                match (path, url) {
                    (Some(path), Some(url)) => {
                        Some(ManifestEntry::GitRepo { url, git_ref: git_ref.map(str::to_string), path })
                    }
                    _ => None,
                }
            }
            ManifestEntry::Env { name, value, secret_id, ephemeral } => {
                let name = name.trim();
                if !is_variable_name(name) {
                    errors.add(
                        &at("name"),
                        "An environment variable name is letters, digits and _, not starting with a digit.",
                    );
                } else if !names.insert(name.to_string()) {
                    errors.add(&at("name"), format!("“{name}” is set by an earlier entry already."));
                }
                let secret_id = secret_id.as_deref().map(str::trim).filter(|s| !s.is_empty());
                match (value, secret_id) {
                    (Some(_), Some(_)) | (None, None) => {
                        errors.add(&at("value"), "Give either a value or a vault secret (secret_id), not both.")
                    }
                    (Some(v), None) if has_control(v, true) => {
                        errors.add(&at("value"), "A value cannot contain NUL or control characters.")
                    }
                    (Some(v), None) if name.len() + 1 + v.len() > ARG_MAX_BYTES => errors.add(
                        &at("value"),
                        format!("A variable with its value has at most {ARG_MAX_BYTES} bytes (what a sandbox starts)."),
                    ),
                    (Some(v), None) => total += v.len(),
                    (None, Some(s)) if uuid::Uuid::parse_str(s).is_err() => {
                        errors.add(&at("secret_id"), "This is not a secret's id.")
                    }
                    (None, Some(_)) => {}
                }
                Some(ManifestEntry::Env {
                    name: name.to_string(),
                    value: value.clone(),
                    secret_id: secret_id.map(str::to_string),
                    ephemeral: *ephemeral,
                })
            }
            ManifestEntry::Unknown => {
                errors.add(&at("kind"), "Choose one of file, dir, git_repo or env.");
                None
            }
        };
        out.extend(entry);
    }
    if total > TOTAL_BYTES_MAX {
        errors.add(
            &format!("{field}.entries"),
            format!("A manifest's contents and values take at most {} MiB together.", TOTAL_BYTES_MAX / 1024 / 1024),
        );
    }
    Manifest { entries: out }
}

/// `http://`, `https://` or `git://`, a host, no credentials (they would be stored and shown:
/// a private repository is not supported yet), no control characters.
fn check_url(errors: &mut FieldErrors, field: &str, raw: &str) -> Option<String> {
    let raw = raw.trim();
    let parsed = (!raw.is_empty() && raw.len() <= URL_MAX && !has_control(raw, false))
        .then(|| url::Url::parse(raw).ok())
        .flatten();
    let message = match &parsed {
        None => "Give the repository's URL (http://, https:// or git://).",
        Some(u) if !matches!(u.scheme(), "http" | "https" | "git") => {
            "Only http://, https:// and git:// repositories are fetched (no ssh, file or other schemes)."
        }
        Some(u) if u.host_str().is_none_or(str::is_empty) => "The URL names no host.",
        Some(u) if !u.username().is_empty() || u.password().is_some() => {
            "A URL cannot carry credentials; only public repositories are fetched."
        }
        Some(_) => return Some(raw.to_string()),
    };
    errors.add(field, message);
    None
}

/// A branch or tag name git accepts, conservatively.
fn is_ref(r: &str) -> bool {
    r.len() <= REF_MAX
        && !r.starts_with(['-', '/', '.'])
        && !r.ends_with(['/', '.'])
        && !r.contains("..")
        && !r.contains("//")
        && !r.ends_with(".lock")
        && r.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '/' | '-'))
}

/// The secrets an environment variable may take (purpose [`ENV_SECRET_PURPOSE`]).
pub fn env_secrets(secrets: Vec<crate::vault::model::Secret>) -> Vec<crate::vault::model::Secret> {
    secrets.into_iter().filter(|s| s.purpose == ENV_SECRET_PURPOSE).collect()
}

/// Each `env` entry's secret exists in the organization with purpose [`ENV_SECRET_PURPOSE`].
pub async fn check_secrets(
    c: &mut db::Conn,
    org_id: &str,
    errors: &mut FieldErrors,
    field: &str,
    m: &Manifest,
) -> anyhow::Result<()> {
    for (i, e) in m.entries.iter().enumerate() {
        let ManifestEntry::Env { secret_id: Some(id), .. } = e else { continue };
        let at = format!("{field}.entries[{i}].secret_id");
        match crate::vault::service::for_use(c, org_id, id).await {
            Ok(Some(s)) if s.purpose == ENV_SECRET_PURPOSE => {}
            Ok(Some(s)) => errors.add(
                &at,
                format!(
                    "The secret “{}” is a {} key: only secrets of purpose “{ENV_SECRET_PURPOSE}” reach a sandbox's commands.",
                    s.name, s.purpose
                ),
            ),
            Ok(None) => errors.add(&at, "This secret does not exist in this organization's vault."),
            Err(e) => return Err(anyhow::anyhow!("reading a vault secret: {e}")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(json: &str) -> Vec<String> {
        let m: Manifest = serde_json::from_str(json).unwrap();
        let mut errors = FieldErrors::new();
        check(&mut errors, "manifest", &m);
        errors.0.into_iter().map(|e| e.field).collect()
    }

    #[test]
    fn each_refusal_names_its_entry() {
        let ok = r#"{"entries":[{"kind":"dir","path":"out"},{"kind":"file","path":"a/./b.txt","content":"x\n"},
            {"kind":"git_repo","url":"https://example.org/r.git","ref":"v1.2","path":""},
            {"kind":"env","name":"A","value":"1"},{"kind":"env","name":"B","secret_id":"0b6f2c5e-1d7a-4c1e-9a7e-4c0f1f7b8d2a"}]}"#;
        assert!(fields(ok).is_empty(), "{:?}", fields(ok));
        assert_eq!(
            fields(r#"{"entries":[{"kind":"dir","path":"ok"},{"kind":"file","path":"/etc/x"}]}"#),
            ["manifest.entries[1].path"]
        );
        assert_eq!(fields(r#"{"entries":[{"kind":"dir","path":"a/../b"}]}"#), ["manifest.entries[0].path"]);
        assert_eq!(
            fields(r#"{"entries":[{"kind":"dir","path":"a"},{"kind":"zip","path":"b","x":1}]}"#),
            ["manifest.entries[1].kind"]
        );
        assert_eq!(fields(r#"{"entries":[{"kind":"dir","path":"a\u0001"}]}"#), ["manifest.entries[0].path"]);
        assert_eq!(
            fields(r#"{"entries":[{"kind":"file","path":"f","content":"a\u0000"}]}"#),
            ["manifest.entries[0].content"]
        );
        assert_eq!(
            fields(r#"{"entries":[{"kind":"git_repo","url":"ssh://h/r","path":"r"}]}"#),
            ["manifest.entries[0].url"]
        );
        assert_eq!(
            fields(r#"{"entries":[{"kind":"git_repo","url":"file:///etc","path":"r"}]}"#),
            ["manifest.entries[0].url"]
        );
        assert_eq!(
            fields(r#"{"entries":[{"kind":"git_repo","url":"https://u:p@h/r","path":"r"}]}"#),
            ["manifest.entries[0].url"]
        );
        assert_eq!(
            fields(r#"{"entries":[{"kind":"git_repo","url":"https://h/r","ref":"--upload-pack=x","path":"r"}]}"#),
            ["manifest.entries[0].ref"]
        );
        assert_eq!(fields(r#"{"entries":[{"kind":"env","name":"1X","value":"v"}]}"#), ["manifest.entries[0].name"]);
        assert_eq!(fields(r#"{"entries":[{"kind":"env","name":"X"}]}"#), ["manifest.entries[0].value"]);
        assert_eq!(
            fields(r#"{"entries":[{"kind":"env","name":"X","value":"v"},{"kind":"env","name":"X","value":"w"}]}"#),
            ["manifest.entries[1].name"]
        );
        let big =
            format!(r#"{{"entries":[{{"kind":"file","path":"f","content":"{}"}}]}}"#, "x".repeat(FILE_BYTES_MAX + 1));
        assert_eq!(fields(&big), ["manifest.entries[0].content"]);
        let many = format!(r#"{{"entries":[{}]}}"#, vec![r#"{"kind":"dir","path":"d"}"#; ENTRIES_MAX + 1].join(","));
        assert_eq!(fields(&many), ["manifest.entries"]);
        let each = format!(r#"{{"kind":"file","path":"f","content":"{}"}}"#, "x".repeat(FILE_BYTES_MAX));
        let total =
            format!(r#"{{"entries":[{}]}}"#, vec![each.as_str(); TOTAL_BYTES_MAX / FILE_BYTES_MAX + 1].join(","));
        assert_eq!(fields(&total), ["manifest.entries"]);
    }
}
