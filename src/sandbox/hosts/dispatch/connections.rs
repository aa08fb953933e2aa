//! Asking a host of any kind: "Test this host" before a connection is saved, and a saved
//! connection's health; and what the connection form says for each kind.

use secrecy::SecretString;
use url::Url;

use crate::sandbox::connections::error::ConnectionError;
use crate::sandbox::connections::model::{Connection, ConnectionKind, Probe};
use crate::sandbox::connections::words::FormWords;
use crate::sandbox::hosts::{daytona, sandboxd};
use crate::state::AppState;

type Result<T> = std::result::Result<T, ConnectionError>;

/// Whether `runtime` may be a connection's default runtime on a host of `kind`: a catalog alias on
/// a sandboxd host, a snapshot name (or `image:` and an image reference) on Daytona; `Err` says
/// what one looks like.
pub fn check_runtime(kind: ConnectionKind, runtime: &str) -> std::result::Result<(), &'static str> {
    let (valid, message) = match kind {
        ConnectionKind::Daytona => (
            daytona::connections::is_snapshot_name(runtime),
            "A Daytona snapshot name is 1 to 200 letters, digits and . _ - : / @ (like daytonaio/sandbox:0.4.3), or image: and an image reference (like image:python:3.12-slim).",
        ),
        ConnectionKind::Sandboxd => (
            crate::catalog::is_valid_alias(runtime),
            "A runtime alias is lower-case letters, digits and dashes, starting with a letter.",
        ),
    };
    if valid {
        Ok(())
    } else {
        Err(message)
    }
}

/// What the connection form says for a host of `kind`.
pub fn form_words(kind: ConnectionKind) -> &'static FormWords {
    match kind {
        ConnectionKind::Sandboxd => &sandboxd::connections::FORM_WORDS,
        ConnectionKind::Daytona => &daytona::connections::FORM_WORDS,
    }
}

/// Asks the host of `kind` at `url` with `token`: a sandboxd host's policy and routes, or
/// Daytona's API (the key, the snapshot `runtime` or the organization's default).
pub async fn probe(
    st: &AppState,
    kind: ConnectionKind,
    url: &Url,
    address: &str,
    token: SecretString,
    runtime: Option<&str>,
) -> Result<Probe> {
    match kind {
        ConnectionKind::Sandboxd => sandboxd::connections::ask(st, url, address, token).await,
        ConnectionKind::Daytona => daytona::connections::ask(st, url, address, token, runtime).await,
    }
}

/// Asks a saved connection's host with its stored key (no cache, no time limit: the caller's).
pub async fn probe_saved(st: &AppState, org_id: &str, conn: &Connection) -> Result<Probe> {
    match conn.kind {
        ConnectionKind::Sandboxd => sandboxd::connections::ask_saved(st, org_id, conn).await,
        ConnectionKind::Daytona => daytona::connections::ask_saved(st, org_id, conn).await,
    }
}
