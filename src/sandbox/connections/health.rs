//! A connection's health in one word: what the Connections table shows per row, what "Test this
//! host" and a save's check find, and which field of the dialog a problem belongs to.
//!
//! The table's health is cheap: each answer is kept for [`HEALTH_TTL`](super::cache::HEALTH_TTL)
//! per version of the connection (address, key, last edit), hosts are asked in parallel, each
//! within [`ASK_WITHIN`], and the page itself never waits for a host (it shows what is cached and
//! asks for the rest once it is on screen). Every answer is also the connection's last known
//! state (`checks.rs`), which the background check keeps fresh.

use std::time::Duration;

use futures_util::future::join_all;

use super::error::ConnectionError;
use super::model::Connection;
pub use super::model::{ConnectionHealth, Health};
use crate::sandbox::hosts::sandboxd::connections::{Probe, ProbeStatus};
use crate::state::AppState;

/// How long the table waits for one host before it reads "no answer".
pub const ASK_WITHIN: Duration = Duration::from_secs(4);

/// A connection that could not be asked, as a health word and why; `Err` for what is no
/// health problem (not found, not allowed, internal).
pub fn of_refusal(e: ConnectionError) -> Result<(Health, String), ConnectionError> {
    let health = match &e {
        ConnectionError::Host(h) => Health::of_error(h),
        ConnectionError::NoCredential => Health::NoKey,
        ConnectionError::KeyRefused(_) => Health::KeyRefused,
        ConnectionError::AddressRefused(_) | ConnectionError::NoAddress => Health::NoAnswer,
        ConnectionError::NotSandboxd => Health::NotSupported,
        _ => Health::HostError,
    };
    let message = match e {
        ConnectionError::NotFound | ConnectionError::Forbidden | ConnectionError::Internal(_) => return Err(e),
        ConnectionError::NoCredential => {
            "This connection has no key in the vault: the host is not asked. Edit it and pick or paste the host's token."
                .to_string()
        }
        ConnectionError::Host(h) => super::error::host_message(&h),
        other => other.to_string(),
    };
    Ok((health, message))
}

/// A probe's outcome for `conn`, with its default runtime checked against what the host offers.
pub fn of_probe(conn: &Connection, probe: &Probe) -> ConnectionHealth {
    if probe.status == ProbeStatus::Ok && !probe.offers(conn.default_runtime.as_deref()) {
        return ConnectionHealth::new(conn, Health::NoRuntime, runtime_not_offered(conn.default_runtime.as_deref()));
    }
    ConnectionHealth::new(conn, probe.health, probe.message.clone())
}

/// Why a connection's default runtime is a problem on a host that answered.
pub fn runtime_not_offered(alias: Option<&str>) -> String {
    format!(
        "This host does not offer “{}”: workspaces on this connection could not open. Pick a runtime the host offers.",
        alias.unwrap_or_default()
    )
}

/// What the table shows before a host was asked (or when it is never asked): a switched-off
/// connection needs no request.
fn without_asking(conn: &Connection) -> Option<ConnectionHealth> {
    if !conn.is_enabled {
        return Some(ConnectionHealth::new(conn, Health::SwitchedOff, "Switched off: no new work starts there."));
    }
    None
}

/// The cached (or never asked) health of each connection, without any request: None where the
/// host has to be asked.
pub fn known(st: &AppState, org_id: &str, conns: &[Connection]) -> Vec<Option<ConnectionHealth>> {
    conns
        .iter()
        .map(|c| without_asking(c).or_else(|| st.health_cache.get(&cache_key(org_id, c), &c.version())))
        .collect()
}

/// The health of each connection: cached answers, and every other host asked in parallel,
/// each within [`ASK_WITHIN`].
pub async fn of_all(
    st: &AppState,
    org_id: &str,
    conns: &[Connection],
) -> Result<Vec<ConnectionHealth>, ConnectionError> {
    join_all(conns.iter().map(|c| of_one(st, org_id, c))).await.into_iter().collect()
}

async fn of_one(st: &AppState, org_id: &str, conn: &Connection) -> Result<ConnectionHealth, ConnectionError> {
    if let Some(h) = without_asking(conn) {
        return Ok(h);
    }
    let key = cache_key(org_id, conn);
    let version = conn.version();
    if let Some(h) = st.health_cache.get(&key, &version) {
        return Ok(h);
    }
    let began = crate::db::now_ms();
    let health = ask(st, org_id, conn).await?;
    st.health_cache.put(key, version, health.clone());
    super::seen::keep_seen(st, org_id, conn, &health, began).await;
    Ok(health)
}

/// Asks `conn`'s host now, within [`ASK_WITHIN`] (no cache): its health, or `Err` for what is
/// no health problem (not found, not allowed, internal).
pub async fn ask(st: &AppState, org_id: &str, conn: &Connection) -> Result<ConnectionHealth, ConnectionError> {
    let asked = async { crate::sandbox::hosts::dispatch::connections::probe_saved(st, org_id, conn).await };
    Ok(match tokio::time::timeout(ASK_WITHIN, asked).await {
        Ok(Ok(probe)) => of_probe(conn, &probe),
        Ok(Err(e)) => {
            let (health, message) = of_refusal(e)?;
            ConnectionHealth::new(conn, health, message)
        }
        Err(_) => ConnectionHealth::new(
            conn,
            Health::NoAnswer,
            format!("The sandbox service did not answer within {} seconds.", ASK_WITHIN.as_secs()),
        ),
    })
}

/// Keeps what a save's check found, so the table shows it at once and it is the connection's
/// last known state (Home, the health report, the metrics).
pub async fn remember(st: &AppState, org_id: &str, conn: &Connection, probe: &Probe) {
    if without_asking(conn).is_none() {
        let health = of_probe(conn, probe);
        st.health_cache.put(cache_key(org_id, conn), conn.version(), health.clone());
        super::seen::keep_seen(st, org_id, conn, &health, crate::db::now_ms()).await;
    }
}

fn cache_key(org_id: &str, conn: &Connection) -> String {
    format!("{org_id}/{}", conn.id)
}

#[cfg(test)]
mod tests {
    use super::Health;
    use crate::sandbox::hosts::error::HostError;
    use crate::sandbox::hosts::sandboxd::client::SandboxdError;

    fn of(e: SandboxdError) -> Health {
        Health::of_error(&HostError::from(e))
    }

    #[test]
    fn each_host_failure_is_a_health_word_at_its_field() {
        let refused = of(SandboxdError::CredentialRefused);
        assert_eq!((refused.label(), refused.field("new_key")), ("key refused", "new_key"));
        let silent = of(SandboxdError::Timeout);
        assert_eq!((silent.label(), silent.field("new_key")), ("no answer", "address"));
        let old = of(SandboxdError::VersionMismatch { missing: vec!["/x".into()], expected: "1".into() });
        assert_eq!((old.label(), old.field("new_key")), ("version mismatch", "address"));
        assert_eq!(Health::NoRuntime.field("new_key"), "default_runtime");
        assert_eq!(of(SandboxdError::NotJson), Health::NotASandboxService);
    }
}
