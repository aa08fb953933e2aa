//! `agenticos doctor`: checks every registered connection of every organization (docs/design.md §6).
//!
//! A sandboxd connection is checked in five steps: the host is reachable (`/healthz`), its
//! credential is present (the vault secret exists and decrypts), the host accepts it (`/policy`
//! does not answer 401; only a key of purpose `sandboxd` saved for the connection's address is
//! sent), it allows at least one runtime, and it serves every route this platform
//! calls (its index at `/`; when one is missing, the version-mismatch message names the image
//! that must run). A Daytona connection is checked in four: its API answers like Daytona's, its
//! key is present, Daytona accepts it, and the snapshot new sandboxes start from exists (each
//! kind's checks in its folder, `hosts/<kind>/doctor.rs`, through `hosts/dispatch/doctor.rs`). The
//! report names vault keys, never their values, and no token. With a Docker engine configured, the engine's view of the
//! sandboxd containers follows (`doctor_engine.rs`).

use std::fmt::Write as _;

pub use super::doctor_check::{Check, Outcome};
use crate::sandbox::connections::model::Connection;
use crate::sandbox::connections::service as connections;
use crate::sandbox::doctor_engine::EngineSection;
use crate::sandbox::hosts::dispatch::doctor;
use crate::state::AppState;

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
        let checks = doctor::checks(st, &org_id, &connection).await;
        ConnectionReport { organization, connection, checks, not_checked: None }
    });
    let (connections, engine) = tokio::join!(futures_util::future::join_all(checks), EngineSection::of(st));
    Ok(Report {
        connections,
        engine,
        image_name: st.config.docker.sandboxd_image.clone(),
        pin: st.sandboxd_version.clone(),
    })
}
