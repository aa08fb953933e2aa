//! One check of `agenticos doctor` and how it reads (`doctor.rs` runs them; each kind's checks
//! are in its folder, `hosts/<kind>/doctor.rs`, reached through `hosts/dispatch/doctor.rs`), and
//! the connection's credential every kind checks first.

use std::time::Duration;

use secrecy::SecretString;

use crate::sandbox::connections::error::ConnectionError;
use crate::sandbox::connections::keys;
use crate::sandbox::connections::model::Connection;
use crate::state::AppState;

/// How long each call to a host may take.
pub const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// The check names, in the order they run and print.
pub const REACHABLE: &str = "reachable";
pub const CREDENTIAL_PRESENT: &str = "credential present";
pub const CREDENTIAL_ACCEPTED: &str = "credential accepted";
pub const RUNTIMES_ALLOWED: &str = "runtimes allowed";
pub const ROUTES_PRESENT: &str = "routes present";
/// Daytona's fourth check (after reachable, credential present and accepted).
pub const SNAPSHOT_PRESENT: &str = "snapshot present";

/// What one check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Passed(String),
    Failed(String),
    /// Not run, because an earlier check failed.
    Skipped(String),
}

/// One check of one connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub name: &'static str,
    pub outcome: Outcome,
}

pub fn passed(name: &'static str, text: impl Into<String>) -> Check {
    Check { name, outcome: Outcome::Passed(text.into()) }
}

pub fn failed(name: &'static str, text: impl Into<String>) -> Check {
    Check { name, outcome: Outcome::Failed(text.into()) }
}

pub fn skipped(name: &'static str, text: impl Into<String>) -> Check {
    Check { name, outcome: Outcome::Skipped(text.into()) }
}

/// The connection's token from the vault, or why there is none (never the value): only a key of
/// purpose `sandboxd` that was saved for the connection's address is sent.
pub async fn credential(st: &AppState, org_id: &str, conn: &Connection) -> Result<SecretString, String> {
    if conn.credential_secret_id.is_none() {
        return Err("no credential: edit the connection and pick or paste the host's token".into());
    }
    match keys::for_connection(st, org_id, conn).await {
        Ok(token) => Ok(token),
        Err(ConnectionError::NoCredential) => {
            Err("the vault key it names is gone: edit the connection and pick another".into())
        }
        Err(ConnectionError::KeyRefused(why)) => Err(format!("not sent: {why}")),
        Err(_) => Err("the vault key does not decrypt with this deployment's vault key \
                       (AGENTICOS_VAULT_KEY or AGENTICOS_VAULT_KEY_FILE)"
            .into()),
    }
}
