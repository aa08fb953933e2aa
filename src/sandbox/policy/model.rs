//! What the policy panel and the API show of a host's live policy, and its words.

use serde::Serialize;

use crate::sandbox::connections::model::Connection;
use crate::sandbox::hosts::sandboxd::client::ServicePolicy;

/// The connection a view is about.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ConnectionRef {
    /// The connection's id (a UUID).
    pub id: String,
    /// The connection's name.
    pub name: String,
}

impl ConnectionRef {
    pub fn of(conn: &Connection) -> Self {
        ConnectionRef { id: conn.id.clone(), name: conn.name.clone() }
    }
}

/// One runtime the host allows, with its effective ceilings.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct PolicyRuntime {
    /// The runtime's alias, as agents and connections name it.
    pub alias: String,
    /// What the runtime holds, in the host's words.
    pub description: String,
    /// The image, or `<base> + N package(s)` for a runtime built from packages.
    pub image: String,
    /// Docker syntax, e.g. `1g`; null is no limit.
    pub mem_limit: Option<String>,
    /// CPUs a sandbox may use (fractions allowed); null is no limit.
    pub cpus: Option<f64>,
    /// `none` means no network.
    pub network_mode: Option<String>,
    /// Built on this host on first use (the first session waits for the build).
    pub builds: bool,
    /// The host's default runtime.
    pub is_default: bool,
    /// This deployment's catalog ships this alias.
    pub in_catalog: bool,
    /// `offered by this host` or `only on this host`.
    pub mark: String,
}

impl PolicyRuntime {
    pub fn memory_words(&self) -> String {
        self.mem_limit.clone().unwrap_or_else(|| "no limit".into())
    }
    pub fn cpus_words(&self) -> String {
        self.cpus.map(|c| format!("{c}")).unwrap_or_else(|| "no limit".into())
    }
    pub fn network_words(&self) -> String {
        match self.network_mode.as_deref() {
            None | Some("none") => "none".into(),
            Some(mode) => mode.to_string(),
        }
    }
    pub fn builds_words(&self) -> &'static str {
        if self.builds {
            "yes, on first use"
        } else {
            "no, ready-made image"
        }
    }
}

/// A catalog runtime this host does not allow.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct CatalogOnly {
    /// The runtime's alias in this deployment's catalog.
    pub alias: String,
    /// What the runtime holds, from the catalog.
    pub description: String,
}

/// The ceilings in force on the host. Seconds for durations; null is "no limit" / "unset".
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Ceilings {
    /// Sessions one organization (sandboxd tenant) may hold open.
    pub max_sessions_per_tenant: Option<u64>,
    /// Resident sandboxes on the host, all organizations together.
    pub max_sessions: Option<u64>,
    /// Open sessions on the host, hibernated ones included.
    pub max_open_sessions: Option<u64>,
    /// Seconds: an idle session's container is closed after this; its files stay.
    pub idle_timeout: u64,
    /// Seconds: an idle session is hibernated after this, to make room.
    pub evict_idle_after: Option<u64>,
    /// Containers are kept (stopped) between turns.
    pub persist_containers: bool,
    /// Seconds: a stopped container is removed after this.
    pub container_ttl: Option<u64>,
    /// Seconds: an unused workspace directory is removed after this; unset keeps it forever.
    pub workspace_ttl: Option<u64>,
    /// Seconds: the deadline of every command.
    pub execute_timeout: u64,
}

/// One line of the ceilings list, in words.
pub struct CeilingRow {
    pub key: &'static str,
    pub label: &'static str,
    pub value: String,
    pub hint: &'static str,
}

impl Ceilings {
    pub fn of(p: &ServicePolicy) -> Self {
        Ceilings {
            max_sessions_per_tenant: p.max_sessions_per_tenant,
            max_sessions: p.max_sessions,
            max_open_sessions: p.max_open_sessions,
            idle_timeout: p.idle_timeout,
            evict_idle_after: p.evict_idle_after,
            persist_containers: p.persist_containers,
            container_ttl: p.container_ttl,
            workspace_ttl: p.workspace_ttl,
            execute_timeout: p.execute_timeout,
        }
    }

    /// Each ceiling in words, its explanation chosen to agree with its value (a ceiling that is
    /// not set is not explained as if it were).
    pub fn rows(&self) -> Vec<CeilingRow> {
        let limit = |n: Option<u64>| n.map(|n| n.to_string()).unwrap_or_else(|| "no limit".into());
        let after = |n: Option<u64>, none: &str| n.map(duration).unwrap_or_else(|| none.to_string());
        let hint = |set: bool, yes: &'static str, no: &'static str| if set { yes } else { no };
        let idle_set = self.idle_timeout > 0;
        vec![
            CeilingRow {
                key: "max_sessions_per_tenant",
                label: "Sessions per organization",
                value: limit(self.max_sessions_per_tenant),
                hint: hint(
                    self.max_sessions_per_tenant.is_some(),
                    "Opening one more is refused until one of them is released.",
                    "Only the host-wide ceilings below limit how many an organization opens.",
                ),
            },
            CeilingRow {
                key: "max_sessions",
                label: "Host-wide sessions",
                value: limit(self.max_sessions),
                hint: hint(
                    self.max_sessions.is_some(),
                    "Resident sandboxes, all organizations on this host together.",
                    "The host does not cap its resident sandboxes; its memory and CPUs do.",
                ),
            },
            CeilingRow {
                key: "max_open_sessions",
                label: "Host-wide open sessions",
                value: self.max_open_sessions.map(|n| n.to_string()).unwrap_or_else(|| "no separate ceiling".into()),
                hint: hint(
                    self.max_open_sessions.is_some(),
                    "Hibernated sessions included.",
                    "Hibernated sessions are not counted against any ceiling of their own.",
                ),
            },
            CeilingRow {
                key: "idle_timeout",
                label: "Idle timeout",
                value: if idle_set { duration(self.idle_timeout) } else { "never".into() },
                hint: hint(
                    idle_set,
                    "An idle session's container is closed; its files stay.",
                    "An idle session keeps its container until it is closed.",
                ),
            },
            CeilingRow {
                key: "evict_idle_after",
                label: "Hibernate idle sessions after",
                value: after(self.evict_idle_after, "never"),
                hint: hint(
                    self.evict_idle_after.is_some(),
                    "Idle sessions are put to sleep to make room.",
                    "Idle sessions are not put to sleep to make room.",
                ),
            },
            CeilingRow {
                key: "persist_containers",
                label: "Containers kept between turns",
                value: if self.persist_containers { "yes" } else { "no, each session starts a fresh container" }.into(),
                hint: hint(
                    self.persist_containers,
                    "A kept container keeps what was installed in it.",
                    "What a session installed is gone with its container; its files stay.",
                ),
            },
            CeilingRow {
                key: "container_ttl",
                label: "Stopped containers removed after",
                value: after(self.container_ttl, "never"),
                hint: match (self.persist_containers, self.container_ttl.is_some()) {
                    (false, _) => "No container is kept, so none waits to be removed.",
                    (true, true) => "Installs are reclaimed; the workspace is untouched.",
                    (true, false) => "Kept containers and their installs stay until removed by hand.",
                },
            },
            CeilingRow {
                key: "workspace_ttl",
                label: "Workspace TTL",
                value: after(self.workspace_ttl, "unset: workspaces are kept forever"),
                hint: hint(
                    self.workspace_ttl.is_some(),
                    "Unused workspace directories are removed after this.",
                    "Unused workspace directories are never removed by the host.",
                ),
            },
            CeilingRow {
                key: "execute_timeout",
                label: "Command deadline",
                value: duration(self.execute_timeout),
                hint: "A command still running then is stopped.",
            },
        ]
    }
}

/// Something the operator should know about this host.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Notice {
    /// `no_runtime`, `workspace_ttl_unset` or `version_mismatch`.
    pub code: String,
    /// `error` or `warning`.
    pub level: String,
    /// What is wrong and what fixes it, in words.
    pub message: String,
}

impl Notice {
    pub fn new(code: &str, level: &str, message: impl Into<String>) -> Self {
        Notice { code: code.into(), level: level.into(), message: message.into() }
    }
}

/// A host's live policy, as the panel and the API show it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct HostPolicy {
    /// The connection whose host this is.
    pub connection: ConnectionRef,
    /// What a session gets when it names no runtime.
    pub default_runtime: String,
    /// What the host allows, sorted by alias. Empty: no sandbox can start there.
    pub runtimes: Vec<PolicyRuntime>,
    /// Catalog runtimes this host does not allow.
    pub not_on_host: Vec<CatalogOnly>,
    /// The limits in force on the host.
    pub ceilings: Ceilings,
    /// What needs the operator's attention; empty when nothing does.
    pub notices: Vec<Notice>,
}

/// The policy panel: the connection, and the host's policy or why it could not be read.
pub struct PolicyPanel {
    pub connection: ConnectionRef,
    pub policy: std::result::Result<HostPolicy, String>,
}

/// Seconds in words: `45 s`, `30 min`, `1 h 5 min`, `2 d 3 h`.
pub fn duration(secs: u64) -> String {
    let parts = [(secs / 86_400, "d"), (secs % 86_400 / 3600, "h"), (secs % 3600 / 60, "min"), (secs % 60, "s")];
    let Some(first) = parts.iter().position(|(n, _)| *n > 0) else {
        return "0 s".into();
    };
    parts[first..]
        .iter()
        .take(2)
        .filter(|(n, _)| *n > 0)
        .map(|(n, unit)| format!("{n} {unit}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::{duration, Ceilings};

    fn ceilings() -> Ceilings {
        Ceilings {
            max_sessions_per_tenant: None,
            max_sessions: None,
            max_open_sessions: None,
            idle_timeout: 0,
            evict_idle_after: None,
            persist_containers: false,
            container_ttl: None,
            workspace_ttl: None,
            execute_timeout: 300,
        }
    }

    fn says(c: &Ceilings) -> Vec<(String, &'static str)> {
        c.rows().into_iter().map(|r| (r.value, r.hint)).collect()
    }

    #[test]
    fn explanations_agree_with_their_values() {
        // Nothing set: no explanation speaks of a ceiling, a sleep or a removal that does not happen.
        let unset = says(&ceilings());
        for (value, hint) in &unset[..8] {
            assert!(
                !hint.contains("refused")
                    && !hint.contains("after this")
                    && !hint.contains("Installs are reclaimed")
                    && !hint.contains("are put to sleep")
                    && !hint.contains("is closed;")
                    && !hint.starts_with("Hibernated sessions included"),
                "{value}: {hint}"
            );
        }
        assert_eq!(unset[3].0, "never", "an idle timeout of 0 closes nothing");
        // Everything set: each explanation says what the value does.
        let set = Ceilings {
            max_sessions_per_tenant: Some(3),
            max_sessions: Some(20),
            max_open_sessions: Some(40),
            idle_timeout: 1800,
            evict_idle_after: Some(600),
            persist_containers: true,
            container_ttl: Some(3600),
            workspace_ttl: Some(86_400),
            execute_timeout: 300,
        };
        let set = says(&set);
        assert_eq!(set[0], ("3".into(), "Opening one more is refused until one of them is released."));
        assert_eq!(set[3], ("30 min".into(), "An idle session's container is closed; its files stay."));
        assert_eq!(set[6], ("1 h".into(), "Installs are reclaimed; the workspace is untouched."));
        assert_eq!(set[7], ("1 d".into(), "Unused workspace directories are removed after this."));
        for i in 0..8 {
            assert_ne!(unset[i].1, set[i].1, "row {i} explains an unset and a set value alike");
        }
    }

    #[test]
    fn durations_read_as_words() {
        assert_eq!(duration(0), "0 s");
        assert_eq!(duration(45), "45 s");
        assert_eq!(duration(1800), "30 min");
        assert_eq!(duration(3900), "1 h 5 min");
        assert_eq!(duration(3601), "1 h");
        assert_eq!(duration(86_400 * 2 + 3 * 3600 + 5), "2 d 3 h");
    }
}
