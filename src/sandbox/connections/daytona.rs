//! Daytona connections (docs/daytona.md): an API URL (Daytona's cloud by default) and a vault key
//! of purpose `daytona` bound to that URL, as a sandboxd key is bound to its address. Asking
//! Daytona checks that the key is accepted (`GET /sandbox?limit=1`) and that the snapshot new
//! sandboxes start from exists (the chosen one, else the organization's default), and says which
//! in plain words. Every request goes through the Daytona client (`sandbox::daytona_client`):
//! the key goes only to the API URL, never with a redirect followed.

use secrecy::SecretString;
use url::Url;

use super::error::ConnectionError;
use super::keys;
use super::model::{Connection, Health, Probe, ProbeStatus};
use crate::state::AppState;

type Result<T> = std::result::Result<T, ConnectionError>;

/// The longest snapshot name a connection keeps.
const SNAPSHOT_NAME_MAX: usize = 200;

/// Whether `s` may name a Daytona snapshot (`daytonaio/sandbox:0.4.3`, `my-python`): 1 to 200
/// letters, digits and `. _ - : / @`.
pub fn is_snapshot_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= SNAPSHOT_NAME_MAX
        && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ':' | '/' | '@'))
}

/// Asks Daytona's API at `url` (shown as `address`) with `token`, the key the service chose for
/// exactly this URL; `snapshot` is the connection's chosen snapshot (none: the organization's
/// default).
pub(super) async fn ask(
    st: &AppState,
    url: &Url,
    address: &str,
    token: SecretString,
    snapshot: Option<&str>,
) -> Result<Probe> {
    super::address::check_resolved(url).await.map_err(super::host::invalid_address)?;
    let _ = (address, token, snapshot);
    Ok(Probe::unanswered(
        st,
        ProbeStatus::NotAsked,
        Health::NotSupported,
        "Daytona's API is not asked yet: this build has no Daytona client.".into(),
    ))
}

/// Asks the Daytona API of a saved connection with its stored key (only a key of purpose
/// `daytona` bound to the connection's API URL; else no request is sent).
pub(super) async fn ask_saved(st: &AppState, org_id: &str, conn: &Connection) -> Result<Probe> {
    let address = conn.address.as_deref().ok_or(ConnectionError::NoAddress)?;
    let url = super::address::parse(address).map_err(super::host::invalid_address)?;
    let token = keys::for_connection(st, org_id, conn).await?;
    ask(st, &url, address, token, conn.default_runtime.as_deref()).await
}

#[cfg(test)]
mod tests {
    use super::is_snapshot_name;

    #[test]
    fn snapshot_names_are_plain_image_like_names() {
        for ok in ["daytonaio/sandbox:0.4.3", "my-python", "registry.example.com/team/img@sha256", "a"] {
            assert!(is_snapshot_name(ok), "{ok:?} refused");
        }
        for bad in ["", "has space", "semi;colon", "new\nline", &"x".repeat(201), "quote\"d"] {
            assert!(!is_snapshot_name(bad), "{bad:?} accepted");
        }
    }
}
