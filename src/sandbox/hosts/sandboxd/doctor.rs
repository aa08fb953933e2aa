//! `agenticos doctor`'s checks of a sandboxd connection (docs/design.md §6): the host is
//! reachable, its credential present and accepted, it allows a runtime and serves every route
//! this platform calls.

use secrecy::SecretString;

use crate::sandbox::connections::address;
use crate::sandbox::connections::error::host_message;
use crate::sandbox::connections::model::Connection;
use crate::sandbox::doctor_check::{
    credential, failed, passed, skipped, Check, CREDENTIAL_ACCEPTED, CREDENTIAL_PRESENT, REACHABLE, READ_TIMEOUT,
    ROUTES_PRESENT, RUNTIMES_ALLOWED,
};
use crate::sandbox::hosts::sandboxd::client::{
    required_routes, SandboxdClient, SandboxdError, ServicePolicy, Timeouts,
};
use crate::state::AppState;

/// The five checks of one sandboxd connection.
pub async fn checks(st: &AppState, org_id: &str, conn: &Connection) -> Vec<Check> {
    let token = credential(st, org_id, conn).await;
    let (client, reachable) = reach(st, conn).await;
    let mut checks = vec![reachable];
    checks.push(match &token {
        Ok(_) => passed(CREDENTIAL_PRESENT, format!("vault key \"{}\"", conn.credential_name.as_deref().unwrap_or(""))),
        Err(why) => failed(CREDENTIAL_PRESENT, why.clone()),
    });

    let Some(client) = client else {
        let why = "not checked (the host is not reachable)";
        checks.extend([
            skipped(CREDENTIAL_ACCEPTED, why),
            skipped(RUNTIMES_ALLOWED, why),
            skipped(ROUTES_PRESENT, why),
        ]);
        return checks;
    };

    let policy: Option<ServicePolicy> = match token {
        Err(_) => {
            let why = "not checked (no usable credential)";
            checks.extend([skipped(CREDENTIAL_ACCEPTED, why), skipped(RUNTIMES_ALLOWED, why)]);
            None
        }
        Ok(token) => match client.with_token(token).policy().await {
            Ok(policy) => {
                checks.push(passed(CREDENTIAL_ACCEPTED, "the host accepted the key"));
                Some(policy)
            }
            Err(SandboxdError::CredentialRefused) => {
                checks.push(failed(CREDENTIAL_ACCEPTED, "credential refused: the host did not accept this key"));
                checks.push(skipped(RUNTIMES_ALLOWED, "not checked (the credential was refused)"));
                None
            }
            Err(e) => {
                checks.push(failed(
                    CREDENTIAL_ACCEPTED,
                    format!("the policy could not be read: {}", host_message(&e.into())),
                ));
                checks.push(skipped(RUNTIMES_ALLOWED, "not checked (the policy could not be read)"));
                None
            }
        },
    };
    if let Some(policy) = policy {
        checks.push(if policy.runtimes.is_empty() {
            failed(RUNTIMES_ALLOWED, "the host allows no runtime: no sandbox can start there")
        } else {
            let aliases: Vec<&str> = policy.runtimes.iter().map(|r| r.alias.as_str()).collect();
            match conn.default_runtime.as_deref().filter(|d| !aliases.contains(d)) {
                // The connection's default is a selection with a hole in it: its first workspace fails.
                Some(missing) => failed(
                    RUNTIMES_ALLOWED,
                    format!(
                        "the connection's default runtime \"{missing}\" is not offered by this host (it offers {}): \
                         edit the connection and pick one it offers",
                        aliases.join(", ")
                    ),
                ),
                None => passed(RUNTIMES_ALLOWED, aliases.join(", ")),
            }
        });
    }

    checks.push(match client.missing_routes().await {
        Ok(missing) if missing.is_empty() => {
            passed(ROUTES_PRESENT, format!("all {} routes this platform calls are served", required_routes().len()))
        }
        Ok(missing) => failed(
            ROUTES_PRESENT,
            SandboxdError::VersionMismatch { missing, expected: st.sandboxd_version.clone() }.to_string(),
        ),
        Err(e) => failed(ROUTES_PRESENT, format!("the host's index could not be read: {}", host_message(&e.into()))),
    });
    checks
}

/// A client of the connection's host (no token yet) and the `reachable` check; no client when
/// the host cannot be asked.
async fn reach(st: &AppState, conn: &Connection) -> (Option<SandboxdClient>, Check) {
    let Some(raw) = conn.address.as_deref() else {
        return (None, failed(REACHABLE, "no address is registered"));
    };
    let url = match address::parse(raw) {
        Ok(url) => url,
        Err(why) => return (None, failed(REACHABLE, why)),
    };
    if let Err(why) = address::check_resolved(&url).await {
        return (None, failed(REACHABLE, why));
    }
    let client = SandboxdClient::new(st.http.clone(), url, SecretString::from(String::new()))
        .with_expected_version(st.sandboxd_version.clone())
        .with_timeouts(Timeouts { read: READ_TIMEOUT, ..Timeouts::default() });
    match client.health().await {
        Ok(health) => {
            let running =
                format!("healthy, {} running", crate::words::count(health.sessions as usize, "sandbox", "sandboxes"));
            (Some(client), passed(REACHABLE, running))
        }
        Err(e) => (None, failed(REACHABLE, host_message(&e.into()))),
    }
}
