//! What the Running tab and the API show of a host's sessions, and its words: each row a
//! [`RunningRow`] (for every host kind), a sandboxd session's with its host's report
//! ([`SessionFacts`]).

use serde::Serialize;

pub use super::row::RunningRow;
use super::row::{Cell, OnHost, RowHtml, Shown};
pub use super::whose::Whose;
use crate::sandbox::connections::model::Connection;
pub use crate::sandbox::hosts::daytona::running::model::{DaytonaSandbox, DaytonaSandboxes};
use crate::sandbox::hosts::sandboxd::client::{SessionInfo, SessionList, SessionState};
use crate::sandbox::policy::model::duration;
use crate::sandbox::workspaces::sessions::SessionOwner;

/// One of this organization's sessions on a sandboxd host.
pub type RunningSession = RunningRow<SessionFacts>;

/// What a session is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SessionStatus {
    /// Its sandbox is resident and alive.
    Running,
    /// Put to sleep to make room; the next operation wakes it.
    Hibernated,
    /// Its sandbox died; the next command heals it where the host keeps workspaces.
    Dead,
}

impl SessionStatus {
    pub(super) fn of(info: &SessionInfo) -> Self {
        match (info.state, info.alive) {
            (SessionState::Hibernated, _) => SessionStatus::Hibernated,
            (_, true) => SessionStatus::Running,
            (_, false) => SessionStatus::Dead,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Running => "running",
            SessionStatus::Hibernated => "hibernated",
            SessionStatus::Dead => "dead",
        }
    }
    /// The badge colour class.
    pub fn badge(self) -> &'static str {
        match self {
            SessionStatus::Running => "badge-green",
            SessionStatus::Hibernated => "badge-grey",
            SessionStatus::Dead => "badge-red",
        }
    }
}

/// What a sandboxd host reports of one of this organization's sessions.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct SessionFacts {
    /// The session's name on the host.
    pub session_id: String,
    /// The runtime alias the session runs.
    pub runtime: String,
    /// Where the session stands on its host.
    pub status: SessionStatus,
    /// Seconds since its last operation.
    pub idle_seconds: u64,
    /// Seconds until the host closes it if it stays idle (negative: due); null when the host's
    /// idle timeout is unknown. Its files stay when the host closes it.
    pub closes_in_seconds: Option<i64>,
    /// Only when usage was sampled (`usage=1`) and the host could measure it (a host that
    /// cannot, such as one without Docker, answers 0: that is null here).
    pub memory_bytes: Option<u64>,
    /// Bytes the sandbox may use; null when unsampled or unlimited.
    pub memory_limit_bytes: Option<u64>,
    /// CPU in percent of one core over about a second, from this deployment's Docker engine
    /// (only when usage was sampled and the session's container runs on that engine).
    pub cpu_percent: Option<f64>,
    /// When the host opened it: epoch milliseconds.
    pub created_at: i64,
    /// True for a session of this organization (its tenant, and a key built for this organization
    /// and connection) that no workspace row and no pending removal names: nothing here knows it
    /// any more. "Close and delete files" purges it.
    pub orphaned: bool,
    /// The connection this session belongs to when it is not the one it is listed under: its key
    /// names that connection (which opened it), whose own read of the host does not list it (it
    /// cannot be read, or reaches the host by an address that no longer does). It is closed only
    /// there, so no action is offered here. Null for every session listed under its own connection.
    pub owned_by: Option<String>,
}

impl RunningSession {
    pub(super) fn of(connection_id: &str, info: &SessionInfo, idle_timeout: Option<u64>) -> Self {
        let idle_seconds = info.idle_seconds.max(0.0) as u64;
        let usage = info.usage.as_ref();
        let facts = SessionFacts {
            session_id: info.session_id.clone(),
            runtime: info.runtime.clone(),
            status: SessionStatus::of(info),
            idle_seconds,
            closes_in_seconds: idle_timeout.filter(|t| *t > 0).map(|t| t as i64 - idle_seconds as i64),
            memory_bytes: usage.and_then(|u| u.memory_bytes).filter(|b| *b > 0),
            memory_limit_bytes: usage.and_then(|u| u.memory_limit_bytes),
            cpu_percent: None,
            created_at: (info.created_at * 1000.0) as i64,
            orphaned: false,
            owned_by: None,
        };
        RunningRow::new(connection_id, facts)
    }

    /// The run that last opened the session; empty when unknown.
    pub fn run_id(&self) -> &str {
        self.workspace.as_ref().and_then(|w| w.run_id.as_deref()).unwrap_or("")
    }

    /// The run's id cut to its first 8 characters (the whole one on hover).
    pub fn run_short(&self) -> &str {
        let id = self.run_id();
        id.get(..8).unwrap_or(id)
    }

    /// The run's cell: its short id, the whole one on hover.
    fn run_cell(&self) -> Shown {
        match self.run_id() {
            "" => Shown::Unknown,
            id => Shown::Hover(format!("Run {id}"), self.run_short().to_string()),
        }
    }
}

impl SessionFacts {
    pub fn idle_words(&self) -> String {
        duration(self.idle_seconds)
    }

    /// `25 min`, `due now`, or `—` when the host's idle timeout is unknown.
    pub fn closes_in_words(&self) -> String {
        match self.closes_in_seconds {
            None => "—".into(),
            Some(s) if s <= 0 => "due now".into(),
            Some(s) => duration(s as u64),
        }
    }

    /// `48.2 MiB`, `48.2 MiB of 1.0 GiB`, or `not reported` when the host did not measure it.
    pub fn memory_words(&self) -> String {
        match (self.memory_bytes, self.memory_limit_bytes) {
            (None, _) => "not reported".into(),
            (Some(m), None) => bytes(m),
            (Some(m), Some(l)) => format!("{} of {}", bytes(m), bytes(l)),
        }
    }

    /// `12.5%`, or `—` when not measured.
    pub fn cpu_words(&self) -> String {
        match self.cpu_percent {
            None => "—".into(),
            Some(p) => format!("{p:.1}%"),
        }
    }
}

impl OnHost for RunningSession {
    /// The session's key, its name on the host.
    fn id(&self) -> &str {
        &self.session_id
    }

    fn hover(&self) -> String {
        format!("Session key: {}", self.session_id)
    }

    const HTML: RowHtml =
        RowHtml { row_class: "session", id_attribute: "data-session-id", close_class: "session-close" };

    /// Run, runtime, state, idle, closes if idle in, and memory and CPU when sampled.
    fn cells(&self, usage: &bool, engine: &bool) -> Vec<Cell> {
        let mut cells = vec![
            Cell::new("Run", "run mono", self.run_cell()),
            Cell::new("Runtime", "mono runtime", Shown::Text(self.runtime.clone())),
            Cell::new("State", "state", Shown::Badge(self.status.badge(), self.status.as_str().to_string())),
            Cell::new("Idle", "idle num", Shown::Parts(parts(&self.idle_words()))),
            Cell::new("Closes if idle in", "closes-in num", Shown::Parts(parts(&self.closes_in_words()))),
        ];
        if *usage {
            cells.push(Cell::new("Memory", "memory num", Shown::Text(self.memory_words())));
        }
        if *engine {
            cells.push(Cell::new("CPU", "cpu num", Shown::Text(self.cpu_words())));
        }
        cells
    }

    fn live_activity(&self) -> bool {
        true
    }

    fn owned_by(&self) -> Option<&str> {
        self.on_host.owned_by.as_deref()
    }

    fn orphaned(&self) -> bool {
        self.on_host.orphaned
    }
}

/// `4 min 50 s` → `4 min`, `50 s`: a number with its unit; a word without a number alone.
fn parts(words: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in words.split_whitespace() {
        match out.last_mut() {
            Some(last) if last.chars().all(|c| c.is_ascii_digit()) => {
                last.push(' ');
                last.push_str(w);
            }
            _ => out.push(w.to_string()),
        }
    }
    out
}

/// What the host holds in total, beside this organization's share.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct HostCounts {
    /// Open sessions on the host, all tenants, hibernated included.
    pub open_sessions: u64,
    /// The host's ceiling of open sessions, if any.
    pub open_limit: Option<u64>,
    /// The host's ceiling of resident sessions, if any.
    pub resident_limit: Option<u64>,
    /// Sessions one organization may hold there, if limited.
    pub tenant_limit: Option<u64>,
    /// Seconds idle before the host closes a session; null when the policy could not be read.
    pub idle_timeout: Option<u64>,
}

/// One sandboxd connection and this organization's sessions on it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct HostSessions {
    /// The connection's id (a UUID).
    pub connection_id: String,
    /// The connection's name.
    pub connection_name: String,
    /// Whether the connection is switched on. A switched-off one is listed too: off stops new
    /// work, not what still runs there, and its sessions may still be closed.
    pub is_enabled: bool,
    /// The name of another connection of this organization that reaches the same host, listed
    /// first (the same address in another spelling, or both list one session): each session shows
    /// once, under the connection it belongs to, and this host's counts are not added again. Null
    /// for a host reached by one connection.
    pub same_host_as: Option<String>,
    /// Why the host could not be read (unreachable, no credential, key refused, another
    /// release); null when it answered.
    pub problem: Option<String>,
    /// What the host holds in total; null when the host could not be read.
    pub host: Option<HostCounts>,
    /// Only this organization's sessions (sandboxd tenant = organization id).
    #[schema(inline)]
    pub sessions: Vec<RunningSession>,
}

impl HostSessions {
    pub(super) fn read(conn: &Connection, org_id: &str, list: SessionList, idle_timeout: Option<u64>) -> Self {
        let sessions = list
            .sessions
            .iter()
            .filter(|s| s.tenant.as_deref() == Some(org_id))
            .map(|s| RunningSession::of(&conn.id, s, idle_timeout))
            .collect();
        HostSessions {
            connection_id: conn.id.clone(),
            connection_name: conn.name.clone(),
            is_enabled: conn.is_enabled,
            same_host_as: None,
            problem: None,
            host: Some(HostCounts {
                open_sessions: list.sessions.len() as u64,
                open_limit: list.open_limit,
                resident_limit: list.limit,
                tenant_limit: list.tenant_limit,
                idle_timeout,
            }),
            sessions,
        }
    }

    pub(super) fn unavailable(conn: &Connection, problem: String) -> Self {
        HostSessions {
            connection_id: conn.id.clone(),
            connection_name: conn.name.clone(),
            is_enabled: conn.is_enabled,
            same_host_as: None,
            problem: Some(problem),
            host: None,
            sessions: Vec::new(),
        }
    }

    /// `3 of this organization's sessions (at most 10); host: 12 open of 20`.
    pub fn counts_words(&self) -> String {
        let Some(h) = &self.host else {
            return String::new();
        };
        let n = self.sessions.len();
        let ours = match h.tenant_limit {
            Some(l) => format!("{n} of this organization's sessions (at most {l})"),
            None => format!("{n} of this organization's sessions"),
        };
        let host = match h.open_limit.or(h.resident_limit) {
            Some(l) => format!("host: {} open of {l}", h.open_sessions),
            None => format!("host: {} open, no ceiling", h.open_sessions),
        };
        format!("{ours}; {host}")
    }

    /// `used 2 of 10`: this organization's open sessions of the host's per-organization limit.
    pub fn used_words(&self) -> String {
        let n = self.sessions.len();
        match self.host.as_ref().and_then(|h| h.tenant_limit) {
            Some(l) => format!("used {n} of {l}"),
            None => format!("used {n}"),
        }
    }

    pub fn has_tenant_limit(&self) -> bool {
        self.host.as_ref().is_some_and(|h| h.tenant_limit.is_some())
    }

    /// Whether this organization's sessions, or the host's all told, are at 80 % of a limit or
    /// more; none while there is room. A host sharing another connection's address is counted
    /// under that one.
    pub fn near_cap(&self) -> Option<NearCap> {
        let host = self.host.as_ref().filter(|_| self.same_host_as.is_none())?;
        let near = |used: u64, limit: u64| limit > 0 && used * 5 >= limit * 4;
        let mine = self.sessions.len() as u64;
        if let Some(limit) = host.tenant_limit.filter(|l| near(mine, *l)) {
            let full = mine >= limit;
            let at = if full { "full: new runs here are refused until a session closes" } else { "near the limit" };
            let why = format!("{mine} of the {limit} sessions this organization may hold here are open, {at}.");
            return Some(NearCap { full, why });
        }
        let limit = host.open_limit.filter(|l| near(host.open_sessions, *l))?;
        let full = host.open_sessions >= limit;
        let at = if full { "full" } else { "near its limit" };
        let why =
            format!("{} of the host's {limit} sessions are open (every organization's), {at}.", host.open_sessions);
        Some(NearCap { full, why })
    }
}

/// A host at 80 % of a session limit or more ([`HostSessions::near_cap`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NearCap {
    /// At the limit itself.
    pub full: bool,
    /// Which limit, how full, and what happens at it.
    pub why: String,
}

/// The Running tab: every sandboxd connection of the organization, switched-off ones marked.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct RunningSessions {
    /// The caller's organization (its id is the hosts' tenant).
    pub organization_id: String,
    /// Its name.
    pub organization_name: String,
    /// Whether memory was sampled (slower: the host measures each sandbox).
    pub usage_sampled: bool,
    /// Whether this deployment's Docker engine was asked too (usage sampled and an engine
    /// configured): CPU, and memory where the host reports none.
    pub engine_sampled: bool,
    /// Each sandboxd connection (switched-off ones too, marked), the default first, then by name.
    pub connections: Vec<HostSessions>,
    /// Each Daytona connection (switched-off ones too) with this organization's sandboxes there.
    pub daytona: Vec<DaytonaSandboxes>,
}

impl RunningSessions {
    /// Sessions on sandboxd hosts and sandboxes on Daytona.
    pub fn session_count(&self) -> usize {
        self.connections.iter().map(|c| c.sessions.len()).sum::<usize>()
            + self.daytona.iter().map(|d| d.sandboxes.len()).sum::<usize>()
    }

    /// No connection of either kind to list.
    pub fn has_no_connections(&self) -> bool {
        self.connections.is_empty() && self.daytona.is_empty()
    }
}

/// What closing a session did.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ClosedSession {
    /// The connection whose host held the session.
    pub connection_id: String,
    /// The connection's name.
    pub connection_name: String,
    /// The session's name on the host.
    pub session_id: String,
    /// Whether the host deleted the session's files too (`delete_files`); false: they stay, and
    /// the next run of its workspace attaches to them again.
    pub files_deleted: bool,
    /// Whose the session was (null for a session no workspace of this organization names).
    pub workspace: Option<SessionOwner>,
    /// True when deleting the files failed at the host: the session is pending removal (a
    /// tombstone the `sandbox-destroy-retry` sweep retries; the connection's row shows it).
    pub pending_removal: bool,
    /// Daytona only: the sandbox was stopped, not deleted (a persistent scope's Close); its files
    /// stay and the next run starts it again.
    pub sandbox_stopped: bool,
}

impl ClosedSession {
    /// The audit log's action and detail: which host, whose workspace, what became of the files.
    pub fn audit_words(&self) -> (&'static str, String) {
        let whose = match &self.workspace {
            Some(w) => {
                let agent = w.agent_name.as_deref().unwrap_or("a deleted agent");
                let mut s = format!("workspace of {agent} ({})", w.access_label);
                if let Some(owner) = &w.owner_name {
                    s.push_str(&format!(", {owner}"));
                }
                s
            }
            None => "no workspace of this organization".to_string(),
        };
        if self.pending_removal {
            (
                "sandbox_session.files_deleted",
                format!("on {}; {whose}; deleting its files failed at the host: pending removal", self.connection_name),
            )
        } else if self.files_deleted {
            (
                "sandbox_session.files_deleted",
                format!("on {}; {whose}; its files were deleted on the host", self.connection_name),
            )
        } else if self.sandbox_stopped {
            (
                "sandbox_session.closed",
                format!("on {}; {whose}; the Daytona sandbox was stopped, its files stay", self.connection_name),
            )
        } else {
            ("sandbox_session.closed", format!("on {}; {whose}; its files stay on the host", self.connection_name))
        }
    }

    /// The flash message after it.
    pub fn words(&self) -> String {
        let whose = match &self.workspace {
            Some(SessionOwner { agent_name: Some(agent), .. }) => format!(" of {agent}"),
            _ => String::new(),
        };
        if self.pending_removal {
            format!(
                "The host of {} could not delete the session{whose} and its files now: it is pending removal, retried every few minutes (its connection's row shows it).",
                self.connection_name
            )
        } else if self.files_deleted {
            format!(
                "Closed the session{whose} on {} and deleted its files there. Its next run starts with an empty workspace.",
                self.connection_name
            )
        } else if self.sandbox_stopped {
            format!(
                "Stopped the Daytona sandbox{whose} on {}. Its files stay: the next run starts it again.",
                self.connection_name
            )
        } else {
            format!(
                "Closed the session{whose} on {}. Its files stay: the next run attaches to them again.",
                self.connection_name
            )
        }
    }
}

/// `48.2 MiB`.
fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::{conn, info};
    use super::*;

    #[test]
    fn only_the_organizations_own_sessions_are_kept_and_the_host_is_counted_whole() {
        let list = SessionList {
            sessions: vec![
                info(Some("org-a"), SessionState::Running, true, 10.0),
                info(Some("org-b"), SessionState::Running, true, 10.0),
                info(None, SessionState::Running, true, 10.0),
            ],
            limit: Some(20),
            open_limit: None,
            tenant_limit: Some(10),
        };
        let h = HostSessions::read(&conn(), "org-a", list, Some(1800));
        assert_eq!(h.sessions.len(), 1);
        assert_eq!(h.counts_words(), "1 of this organization's sessions (at most 10); host: 3 open of 20");
        assert_eq!(h.used_words(), "used 1 of 10");
    }

    #[test]
    fn a_time_wraps_only_between_its_parts() {
        assert_eq!(parts("4 min 50 s"), ["4 min", "50 s"]);
        assert_eq!(parts("1 d 3 h"), ["1 d", "3 h"]);
        assert_eq!(parts("0 s"), ["0 s"]);
        assert_eq!(parts("due now"), ["due", "now"]);
        assert_eq!(parts("—"), ["—"]);
    }

    #[test]
    fn states_idle_time_and_reaping_read_as_words() {
        let s = RunningSession::of("c1", &info(None, SessionState::Running, true, 300.4), Some(1800));
        assert_eq!(
            (s.status, s.idle_words(), s.closes_in_words()),
            (SessionStatus::Running, "5 min".into(), "25 min".into())
        );
        assert_eq!(s.memory_words(), "50.0 MiB");
        let s = RunningSession::of("c1", &info(None, SessionState::Hibernated, false, 2000.0), Some(1800));
        assert_eq!((s.status, s.closes_in_words()), (SessionStatus::Hibernated, "due now".into()));
        let s = RunningSession::of("c1", &info(None, SessionState::Running, false, 1.0), None);
        assert_eq!((s.status, s.closes_in_words()), (SessionStatus::Dead, "—".into()));
        assert_eq!(bytes(512), "512 B");
        // A host that does not measure memory answers 0: not reported, never "0 B".
        let mut unmeasured = info(None, SessionState::Running, true, 1.0);
        unmeasured.usage =
            Some(crate::sandbox::hosts::sandboxd::client::SessionUsage { memory_bytes: Some(0), ..Default::default() });
        let s = RunningSession::of("c1", &unmeasured, Some(1800));
        assert_eq!((s.memory_bytes, s.memory_words()), (None, "not reported".to_string()));
    }
}

#[cfg(test)]
pub(super) mod fixtures {
    use crate::sandbox::connections::model::{Connection, ConnectionKind};
    use crate::sandbox::hosts::sandboxd::client::{SessionInfo, SessionState, SessionUsage};

    pub fn info(tenant: Option<&str>, state: SessionState, alive: bool, idle: f64) -> SessionInfo {
        SessionInfo {
            session_id: "s-1".into(),
            runtime: "workbench".into(),
            tenant: tenant.map(str::to_string),
            alive,
            state,
            created_at: 1.5,
            last_activity: 1.5,
            idle_seconds: idle,
            usage: Some(SessionUsage { memory_bytes: Some(50 * 1024 * 1024), ..SessionUsage::default() }),
        }
    }

    pub fn conn() -> Connection {
        Connection {
            id: "c1".into(),
            name: "main".into(),
            kind: ConnectionKind::Sandboxd,
            address: None,
            credential_secret_id: None,
            credential_name: None,
            credential: "missing",
            default_runtime: None,
            is_default: true,
            is_enabled: true,
            created_at: 0,
            updated_at: 0,
            credential_updated_at: None,
        }
    }
}
