//! A snapshot row, when a run's end takes one, and how many are kept.

use serde::{Deserialize, Serialize};

/// The most snapshots an agent may keep per workspace.
pub const KEEP_MAX: i64 = 100;
/// What an agent keeps when it never said.
pub const KEEP_DEFAULT: i64 = 5;

/// One saved copy of a workspace's files: one compressed archive (tar + gzip) in the object store.
#[derive(Debug, Clone, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct Snapshot {
    /// The snapshot's id (`snapshot_id` at `POST /api/v1/runs`).
    pub id: String,
    #[serde(skip)]
    pub organization_id: String,
    /// The workspace it saved.
    pub workspace_id: String,
    /// The workspace's agent (null once deleted).
    pub agent_id: Option<String>,
    /// When it was taken, epoch milliseconds.
    pub created_at: i64,
    /// The archive's size in bytes (compressed).
    pub size_bytes: i64,
    /// Files in the archive (folders not counted).
    pub file_count: i64,
    #[serde(skip)]
    pub object_key: String,
    /// `finish` (taken when a run finished) or `on_demand`.
    pub taken_by: String,
}

impl Snapshot {
    /// "2026-12-01 20:10:05 UTC"
    pub fn time_label(&self) -> String {
        time_label(self.created_at)
    }
}

/// Epoch milliseconds as "YYYY-MM-DD HH:MM:SS UTC".
pub fn time_label(ms: i64) -> String {
    let fmt = time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]:[second] UTC");
    time::OffsetDateTime::from_unix_timestamp(ms / 1000)
        .ok()
        .and_then(|t| t.format(&fmt).ok())
        .unwrap_or_else(|| ms.to_string())
}

/// Who took a snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TakenBy {
    Finish,
    OnDemand,
}

impl TakenBy {
    pub fn as_str(self) -> &'static str {
        match self {
            TakenBy::Finish => "finish",
            TakenBy::OnDemand => "on_demand",
        }
    }
}

/// When a run's end takes a snapshot of its workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Never (the default).
    #[default]
    Never,
    /// Every time a run finishes.
    OnFinish,
    /// When a run finishes and the workspace changed (a recorded write, mkdir, remove or command)
    /// since the latest snapshot.
    OnFinishWhenChanged,
}

impl Mode {
    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "never" => Some(Mode::Never),
            "on_finish" => Some(Mode::OnFinish),
            "on_finish_when_changed" => Some(Mode::OnFinishWhenChanged),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Never => "never",
            Mode::OnFinish => "on_finish",
            Mode::OnFinishWhenChanged => "on_finish_when_changed",
        }
    }
}

/// An agent's snapshot settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Settings {
    /// `never`, `on_finish` or `on_finish_when_changed`.
    pub snapshots: Mode,
    /// How many snapshots of each workspace are kept (the oldest go first), 1 to 100.
    pub keep_last: i64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings { snapshots: Mode::Never, keep_last: KEEP_DEFAULT }
    }
}
