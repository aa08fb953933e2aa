//! What the Running tab and the API show of a Daytona connection's sandboxes, and its words
//! (listed and closed by [`super`]).

use serde::Serialize;

use crate::sandbox::policy::model::duration;
use crate::sandbox::running::row::{Cell, OnHost, RowHtml, RunningRow, Shown};
use crate::sandbox::running::section::{Section, SectionHtml};
use crate::sandbox::workspaces::sessions::SessionOwner;
use crate::vocabulary::scope::Scope;

/// The most sandboxes one connection lists (the rest are counted as "more").
pub const LIST_MAX: usize = 200;

/// One Daytona sandbox of this organization.
pub type DaytonaSandbox = RunningRow<SandboxFacts>;

/// What Daytona reports of one of this organization's sandboxes.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct SandboxFacts {
    /// Daytona's id of the sandbox: what closing it names.
    pub sandbox_id: String,
    /// Its name on Daytona: the workspace's session key.
    pub name: String,
    /// Daytona's state word (`started`, `stopped`, `archived`, `error`, …).
    pub state: String,
    /// The workspace scope its labels name (`run`, `conversation`, …); null without the label.
    pub scope: Option<String>,
    /// CPU cores.
    pub cpu: Option<f64>,
    /// Memory, GiB.
    pub memory_gib: Option<f64>,
    /// Disk, GiB.
    pub disk_gib: Option<f64>,
    /// Daytona's last activity on it: epoch milliseconds.
    pub last_activity_at: Option<i64>,
    /// Seconds since that activity, when the list was read.
    pub idle_seconds: Option<u64>,
}

impl SandboxFacts {
    /// The badge colour class of its state.
    pub fn badge(&self) -> &'static str {
        match self.state.as_str() {
            "started" => "badge-green",
            "error" | "build_failed" => "badge-red",
            _ => "badge-grey",
        }
    }

    /// `2 cores`, or `—`.
    pub fn cpu_words(&self) -> String {
        self.cpu.map_or_else(|| "—".into(), |c| format!("{} core{}", trim(c), if c == 1.0 { "" } else { "s" }))
    }

    /// `4 GiB`, or `—`.
    pub fn memory_words(&self) -> String {
        gib(self.memory_gib)
    }

    /// `8 GiB`, or `—`.
    pub fn disk_words(&self) -> String {
        gib(self.disk_gib)
    }

    /// `5 min ago`, or `—` when Daytona gave none.
    pub fn last_activity_words(&self) -> String {
        self.idle_seconds.map_or_else(|| "—".into(), |s| format!("{} ago", duration(s)))
    }
}

impl DaytonaSandbox {
    /// Whether Close deletes it (a `run` scope) rather than stops it.
    pub fn is_run_scoped(&self) -> bool {
        is_run_scope(self.workspace.as_ref(), self.scope.as_deref())
    }
}

impl OnHost for DaytonaSandbox {
    const HTML: RowHtml =
        RowHtml { row_class: "daytona-sandbox", id_attribute: "data-sandbox-id", close_class: "sandbox-close" };

    /// Daytona's id of the sandbox (its name is the session key).
    fn id(&self) -> &str {
        &self.sandbox_id
    }

    /// State, CPU, memory, disk and last activity.
    fn cells(&self, _usage: &bool, _engine: &bool) -> Vec<Cell> {
        vec![
            Cell::new("State", "state", Shown::Badge(self.badge(), self.state.clone())),
            Cell::new("CPU", "cpu num", Shown::Text(self.cpu_words())),
            Cell::new("Memory", "memory num", Shown::Text(self.memory_words())),
            Cell::new("Disk", "disk num", Shown::Text(self.disk_words())),
            Cell::new("Last activity", "last-activity num", Shown::Text(self.last_activity_words())),
        ]
    }

    fn hover(&self) -> String {
        format!("Sandbox {}", self.name)
    }

    /// Daytona keeps no event ring: Activity is the operations this console recorded.
    fn live_activity(&self) -> bool {
        false
    }

    fn close_deletes(&self) -> bool {
        self.is_run_scoped()
    }

    fn close_words(&self) -> &'static str {
        if self.is_run_scoped() {
            "Deletes the sandbox: a run's files end with it."
        } else {
            "Stops the sandbox; its files stay, and the next run starts it again."
        }
    }
}

/// One Daytona connection and this organization's sandboxes there.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct DaytonaSandboxes {
    /// The connection's id (a UUID).
    pub connection_id: String,
    /// The connection's name.
    pub connection_name: String,
    /// Whether the connection is switched on (a switched-off one is listed too: its sandboxes may
    /// still be closed).
    pub is_enabled: bool,
    /// Why Daytona could not be read (no key, key refused, unreachable, no answer in time); null
    /// when it answered.
    pub problem: Option<String>,
    /// True when Daytona holds more of this organization's sandboxes than the list shows (at
    /// most 200).
    pub truncated: bool,
    /// This organization's sandboxes on this connection, the most recently active first.
    #[schema(inline)]
    pub sandboxes: Vec<DaytonaSandbox>,
}

impl DaytonaSandboxes {
    /// `3 sandboxes of this organization`.
    pub fn counts_words(&self) -> String {
        if self.problem.is_some() {
            return String::new();
        }
        let n = self.sandboxes.len();
        let more = if self.truncated { format!(" (the first {LIST_MAX}; Daytona holds more)") } else { String::new() };
        format!("{n} sandbox{} of this organization{more}", if n == 1 { "" } else { "es" })
    }
}

impl Section for DaytonaSandboxes {
    const HTML: SectionHtml = SectionHtml {
        id_prefix: "daytona-",
        class: "daytona",
        badge: Some("Daytona"),
        table_class: "sandboxes",
        nothing: "Daytona sandboxes",
        place: "this connection",
    };
}

/// Whether Close deletes a sandbox (its workspace's scope, else its label, is `run`).
pub(super) fn is_run_scope(workspace: Option<&SessionOwner>, label: Option<&str>) -> bool {
    match workspace {
        Some(w) => w.scope == Scope::Run,
        None => label == Some(Scope::Run.as_str()),
    }
}

/// `2`, `0.5`.
fn trim(n: f64) -> String {
    let s = format!("{n:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn gib(n: Option<f64>) -> String {
    n.map_or_else(|| "—".into(), |g| format!("{} GiB", trim(g)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_and_states_read_as_words() {
        let facts = SandboxFacts {
            sandbox_id: "id".into(),
            name: "n".into(),
            state: "started".into(),
            scope: Some("run".into()),
            cpu: Some(2.0),
            memory_gib: Some(0.5),
            disk_gib: None,
            last_activity_at: Some(0),
            idle_seconds: Some(300),
        };
        let sb = DaytonaSandbox::new("c", facts.clone());
        assert_eq!(
            (sb.cpu_words(), sb.memory_words(), sb.disk_words()),
            ("2 cores".into(), "0.5 GiB".into(), "—".into())
        );
        assert_eq!((sb.badge(), sb.last_activity_words()), ("badge-green", "5 min ago".into()));
        assert!(sb.is_run_scoped());
        let stopped =
            DaytonaSandbox::new("c", SandboxFacts { state: "stopped".into(), scope: Some("agent".into()), ..facts });
        assert!(!stopped.is_run_scoped());
        assert_eq!(stopped.badge(), "badge-grey");
    }
}
