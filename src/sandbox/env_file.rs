//! The env file docker compose reads (`.env` beside `docker-compose.yml`), and the one thing this
//! product writes into it: this deployment's sandboxd token (`agenticos sandbox-token`).
//!
//! The token is written once. A host keeps its sessions' workspaces under the token they were
//! opened with, so a new token orphans every workspace the host holds: an existing non-empty
//! `SANDBOXD_TOKEN` is never replaced. The token is never printed.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use secrecy::{ExposeSecret as _, SecretString};

/// The variable the token is written to; sandboxd and the app both read it.
pub const TOKEN_VARIABLE: &str = "SANDBOXD_TOKEN";

/// Random bytes in a new token (43 characters of base64url).
const TOKEN_BYTES: usize = 32;

/// What [`write_token`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenWritten {
    /// The file did not exist; it was created with mode 0600.
    Created,
    /// The token line was appended to an existing file.
    Appended,
    /// An empty `SANDBOXD_TOKEN=` line was filled in.
    Filled,
}

/// Why the token was not written.
#[derive(Debug, thiserror::Error)]
pub enum EnvFileError {
    #[error(
        "{} already sets {TOKEN_VARIABLE}; it was left unchanged. A new token would orphan every workspace \
         the sandboxd host holds (their sessions belong to the token they were opened with). To rotate it \
         on purpose, edit the file by hand and redeploy both services.",
        .path.display()
    )]
    TokenExists { path: PathBuf },
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// A new random token: 32 bytes as unpadded base64url (43 characters).
pub fn new_token() -> SecretString {
    SecretString::from(crate::auth::secrets::random_token(TOKEN_BYTES))
}

/// Writes a new token to the env file at `path`, once: creates the file (mode 0600) when it is
/// missing, fills in an empty `SANDBOXD_TOKEN=` line, or appends a line. Refuses, leaving the
/// file as it is, when it already sets a non-empty `SANDBOXD_TOKEN`.
pub fn write_token(path: &Path) -> Result<TokenWritten, EnvFileError> {
    write_given_token(path, &new_token())
}

fn write_given_token(path: &Path, token: &SecretString) -> Result<TokenWritten, EnvFileError> {
    let line = format!("{TOKEN_VARIABLE}={}", token.expose_secret());
    let write_err = |source| EnvFileError::Write { path: path.to_path_buf(), source };
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut file = OpenOptions::new().write(true).create_new(true).mode(0o600).open(path).map_err(write_err)?;
            file.write_all(format!("{line}\n").as_bytes()).map_err(write_err)?;
            return Ok(TokenWritten::Created);
        }
        Err(source) => return Err(EnvFileError::Read { path: path.to_path_buf(), source }),
    };

    let settings: Vec<(usize, bool)> = text
        .split_inclusive('\n')
        .enumerate()
        .filter_map(|(i, l)| token_setting(l).map(|is_set| (i, is_set)))
        .collect();
    if settings.iter().any(|(_, is_set)| *is_set) {
        return Err(EnvFileError::TokenExists { path: path.to_path_buf() });
    }
    if let Some((at, _)) = settings.last() {
        // compose takes the last assignment: fill in that one.
        let rewritten: String = text
            .split_inclusive('\n')
            .enumerate()
            .map(|(i, l)| {
                if i == *at {
                    let ending = &l[l.trim_end_matches(['\n', '\r']).len()..];
                    format!("{line}{}", if ending.is_empty() { "\n" } else { ending })
                } else {
                    l.to_owned()
                }
            })
            .collect();
        let mut file = OpenOptions::new().write(true).truncate(true).open(path).map_err(write_err)?;
        file.write_all(rewritten.as_bytes()).map_err(write_err)?;
        return Ok(TokenWritten::Filled);
    }
    let mut file = OpenOptions::new().append(true).open(path).map_err(write_err)?;
    let separator = if text.is_empty() || text.ends_with('\n') { "" } else { "\n" };
    file.write_all(format!("{separator}{line}\n").as_bytes()).map_err(write_err)?;
    Ok(TokenWritten::Appended)
}

/// Whether a line sets `SANDBOXD_TOKEN`: `None` when it does not, `Some(true)` for a non-empty
/// value, `Some(false)` for an empty one (`SANDBOXD_TOKEN=`, `=""`, `=''`, or the bare name).
fn token_setting(line: &str) -> Option<bool> {
    let line = line.trim();
    let line = line.strip_prefix("export ").map(str::trim_start).unwrap_or(line);
    let (name, value) = line.split_once('=').unwrap_or((line, ""));
    if name.trim_end() != TOKEN_VARIABLE {
        return None;
    }
    let value = value.trim();
    let value = match value.chars().next() {
        Some(q @ ('"' | '\'')) => value[1..].split(q).next().unwrap_or(""),
        // An unquoted value ends at a comment (` #`).
        _ => value.split(" #").next().unwrap_or("").trim_end(),
    };
    Some(!value.is_empty() && !value.starts_with('#'))
}

/// Whether others than the owner may read the file at `path` (group or world read bits).
pub fn is_readable_by_others(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o044 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token() -> SecretString {
        SecretString::from("tok-1".to_owned())
    }

    #[test]
    fn a_new_token_is_43_url_safe_characters() {
        let t = new_token();
        let t = t.expose_secret();
        assert_eq!(t.len(), 43);
        assert!(t.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'), "{t}");
        assert_ne!(t, new_token().expose_secret());
    }

    #[test]
    fn settings_are_read_in_every_spelling() {
        assert_eq!(token_setting("SANDBOXD_TOKEN=abc\n"), Some(true));
        assert_eq!(token_setting("export SANDBOXD_TOKEN = 'abc'"), Some(true));
        assert_eq!(token_setting("SANDBOXD_TOKEN=\n"), Some(false));
        assert_eq!(token_setting("SANDBOXD_TOKEN=\"\"  # later"), Some(false));
        assert_eq!(token_setting("SANDBOXD_TOKEN= # later"), Some(false));
        assert_eq!(token_setting("SANDBOXD_TOKEN"), Some(false));
        assert_eq!(token_setting("# SANDBOXD_TOKEN=abc"), None);
        assert_eq!(token_setting("SANDBOXD_TOKENS=abc"), None);
        assert_eq!(token_setting("OTHER=SANDBOXD_TOKEN=abc"), None);
    }

    #[test]
    fn the_token_is_created_appended_or_filled_in_once() {
        let dir = tempfile_dir("env-file");
        let path = dir.join(".env");
        assert_eq!(write_given_token(&path, &token()).expect("created"), TokenWritten::Created);
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "SANDBOXD_TOKEN=tok-1\n");
        assert_eq!(std::fs::metadata(&path).expect("meta").permissions().mode() & 0o777, 0o600);
        assert!(!is_readable_by_others(&path));
        assert!(matches!(write_given_token(&path, &token()), Err(EnvFileError::TokenExists { .. })));

        std::fs::write(&path, "A=1").expect("write");
        assert_eq!(write_given_token(&path, &token()).expect("appended"), TokenWritten::Appended);
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "A=1\nSANDBOXD_TOKEN=tok-1\n");

        std::fs::write(&path, "SANDBOXD_TOKEN=\nB=2\nSANDBOXD_TOKEN=''\r\nC=3").expect("write");
        assert_eq!(write_given_token(&path, &token()).expect("filled"), TokenWritten::Filled);
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "SANDBOXD_TOKEN=\nB=2\nSANDBOXD_TOKEN=tok-1\r\nC=3");
        std::fs::remove_dir_all(&dir).ok();
    }

    fn tempfile_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("{name}-{}-{}", std::process::id(), uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir
    }
}
