//! `agenticos doctor`: checks every registered connection of every organization (docs/design.md §6).
//!
//! A sandboxd connection is checked in five steps: the host is reachable (`/healthz`), its
//! credential is present (the vault secret exists and decrypts), the host accepts it (`/policy`
//! does not answer 401; only a key of purpose `sandboxd` saved for the connection's address is
//! sent), it allows at least one runtime, and it serves every route this platform
//! calls (its index at `/`; when one is missing, the version-mismatch message names the image
//! that must run). A Daytona connection is checked in four: its API answers like Daytona's, its
//! key is present, Daytona accepts it, and the snapshot new sandboxes start from exists. The
//! report names vault keys,
//! never their values, and no token. With a Docker engine configured, the engine's view of the
//! sandboxd containers follows (`doctor_engine.rs`).

use std::fmt::Write as _;
use std::time::Duration;

use secrecy::SecretString;

use crate::sandbox::connections::address;
use crate::sandbox::connections::error::{host_message, ConnectionError};
use crate::sandbox::connections::keys;
use crate::sandbox::connections::model::{Connection, ConnectionKind};
use crate::sandbox::connections::service as connections;
use crate::sandbox::doctor_engine::EngineSection;
use crate::sandbox::hosts::daytona::client::Timeouts as DaytonaTimeouts;
use crate::sandbox::hosts::daytona::connections as daytona;
use crate::sandbox::hosts::sandboxd::client::{
    required_routes, SandboxdClient, SandboxdError, ServicePolicy, Timeouts,
};
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

/// Everything found about one connection.
#[derive(Debug, Clone)]
pub struct ConnectionReport {
    pub organization: String,
    pub connection: Connection,
    /// Empty for a connection that is not checked.
    pub checks: Vec<Check>,
    /// Why the connection was not checked.
    pub not_checked: Option<String>,
}

impl ConnectionReport {
    pub fn is_healthy(&self) -> bool {
        !self.checks.iter().any(|c| matches!(c.outcome, Outcome::Failed(_)))
    }
}

/// The whole report.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub connections: Vec<ConnectionReport>,
    /// The Docker engine's sandboxd containers; none when no engine is configured.
    pub engine: Option<EngineSection>,
    /// The sandboxd image's name and pinned version, for the engine section.
    pub image_name: String,
    pub pin: String,
}

impl Report {
    /// Whether no connection failed a check (also true when there are none).
    pub fn is_healthy(&self) -> bool {
        self.connections.iter().all(ConnectionReport::is_healthy)
            && self.engine.as_ref().is_none_or(EngineSection::is_healthy)
    }

    /// The report as lines for a terminal: a heading per connection, then ✓/✗ per check; then
    /// the Docker engine's view when one is configured.
    pub fn render(&self) -> String {
        let mut out = self.render_connections();
        if let Some(engine) = &self.engine {
            out.push('\n');
            out.push_str(&engine.render(&self.image_name, &self.pin));
        }
        out
    }

    fn render_connections(&self) -> String {
        let mut out = String::new();
        if self.connections.is_empty() {
            out.push_str("No connections are registered; nothing to check.\n");
            return out;
        }
        for report in &self.connections {
            let c = &report.connection;
            let mut facts = vec![c.kind.label().to_owned()];
            if let Some(address) = &c.address {
                facts[0] = format!("{} at {address}", c.kind.label());
            }
            if c.is_default {
                facts.push("default".into());
            }
            if !c.is_enabled {
                facts.push("switched off".into());
            }
            let _ = writeln!(out, "{} / {} ({})", report.organization, c.name, facts.join(", "));
            if let Some(why) = &report.not_checked {
                let _ = writeln!(out, "  - {why}");
            }
            for check in &report.checks {
                let (mark, text) = match &check.outcome {
                    Outcome::Passed(t) => ("✓", t),
                    Outcome::Failed(t) => ("✗", t),
                    Outcome::Skipped(t) => ("-", t),
                };
                let _ = writeln!(out, "  {mark} {:<20} {text}", check.name);
            }
            out.push('\n');
        }
        let unhealthy = self.connections.iter().filter(|r| !r.is_healthy()).count();
        let unchecked = self.connections.iter().filter(|r| r.not_checked.is_some()).count();
        let checked = self.connections.len() - unchecked;
        let checked_words = crate::words::count(checked, "connection", "connections");
        let _ = write!(out, "{checked_words} checked: {} healthy, {unhealthy} unhealthy", checked - unhealthy);
        if unchecked > 0 {
            let _ = write!(out, "; {unchecked} not checked");
        }
        out.push_str(".\n");
        out
    }
}

/// Checks every connection of every organization, concurrently; the report keeps their order
/// (organization, then name).
pub async fn run(st: &AppState) -> anyhow::Result<Report> {
    let checks = connections::everywhere(st).await?.into_iter().map(|(org_id, organization, connection)| async move {
        match connection.kind {
            ConnectionKind::Daytona => {
                let checks = check_daytona(st, &org_id, &connection).await;
                ConnectionReport { organization, connection, checks, not_checked: None }
            }
            ConnectionKind::Sandboxd => {
                let checks = check_sandboxd(st, &org_id, &connection).await;
                ConnectionReport { organization, connection, checks, not_checked: None }
            }
        }
    });
    let (connections, engine) = tokio::join!(futures_util::future::join_all(checks), EngineSection::of(st));
    Ok(Report {
        connections,
        engine,
        image_name: st.config.docker.sandboxd_image.clone(),
        pin: st.sandboxd_version.clone(),
    })
}

fn passed(name: &'static str, text: impl Into<String>) -> Check {
    Check { name, outcome: Outcome::Passed(text.into()) }
}

fn failed(name: &'static str, text: impl Into<String>) -> Check {
    Check { name, outcome: Outcome::Failed(text.into()) }
}

fn skipped(name: &'static str, text: impl Into<String>) -> Check {
    Check { name, outcome: Outcome::Skipped(text.into()) }
}

/// The five checks of one sandboxd connection.
async fn check_sandboxd(st: &AppState, org_id: &str, conn: &Connection) -> Vec<Check> {
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

/// The four checks of one Daytona connection: its API answers like Daytona's, its key is in the
/// vault (of purpose `daytona`, bound to the API URL), Daytona accepts it, and the snapshot new
/// sandboxes start from exists (the connection's, else Daytona's default). Nothing is sent without
/// a usable key.
async fn check_daytona(st: &AppState, org_id: &str, conn: &Connection) -> Vec<Check> {
    let present = match credential(st, org_id, conn).await {
        Ok(_) => passed(CREDENTIAL_PRESENT, format!("vault key \"{}\"", conn.credential_name.as_deref().unwrap_or(""))),
        Err(why) => failed(CREDENTIAL_PRESENT, why),
    };
    let client = match &present.outcome {
        Outcome::Passed(_) => daytona::client_for(st, org_id, conn).await.map_err(|e| e.to_string()),
        _ => Err("not checked (no usable credential: nothing is sent to Daytona without one)".to_string()),
    };
    let client = match client {
        Ok(c) => c.with_timeouts(DaytonaTimeouts { read: READ_TIMEOUT, ..DaytonaTimeouts::default() }),
        Err(why) => {
            let reach = if matches!(present.outcome, Outcome::Passed(_)) {
                failed(REACHABLE, why.clone())
            } else {
                skipped(REACHABLE, why.clone())
            };
            return vec![reach, present, skipped(CREDENTIAL_ACCEPTED, why.clone()), skipped(SNAPSHOT_PRESENT, why)];
        }
    };
    let found = daytona::find(&client, conn.default_runtime.as_deref()).await;
    if let Err(why) = found.reached() {
        let not = "not checked (Daytona's API did not answer)";
        return vec![
            failed(REACHABLE, why),
            present,
            skipped(CREDENTIAL_ACCEPTED, not),
            skipped(SNAPSHOT_PRESENT, not),
        ];
    }
    let mut checks = vec![passed(REACHABLE, "Daytona's API answered"), present];
    if let Err(e) = &found.key {
        checks.push(failed(CREDENTIAL_ACCEPTED, daytona::words(e)));
        checks.push(skipped(SNAPSHOT_PRESENT, "not checked (the key was refused)"));
        return checks;
    }
    checks.push(passed(CREDENTIAL_ACCEPTED, "Daytona accepted the key"));
    checks.push(match &found.snapshot {
        Some(s) if s.found.is_ok() => {
            passed(SNAPSHOT_PRESENT, format!("\"{}\"{}", s.name, if s.chosen { "" } else { " (Daytona's default)" }))
        }
        _ => failed(SNAPSHOT_PRESENT, found.probe(st).message),
    });
    checks
}

/// The connection's token from the vault, or why there is none (never the value): only a key of
/// purpose `sandboxd` that was saved for the connection's address is sent.
async fn credential(st: &AppState, org_id: &str, conn: &Connection) -> Result<SecretString, String> {
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
