//! A tombstone, why it was written, and the retry schedule.

use serde::Serialize;

/// The first pause after a failed destroy; each further failure doubles it.
pub const FIRST_PAUSE_MS: i64 = 2 * 60 * 1000;
/// The longest pause between two attempts.
pub const MAX_PAUSE_MS: i64 = 6 * 60 * 60 * 1000;
/// How long a sweeper holds a claimed tombstone before another may take it (a sweeper that died
/// mid-destroy leaves its claim behind; it lapses).
pub const CLAIM_MS: i64 = 15 * 60 * 1000;

/// The pause after the `attempts`-th failed attempt: 2, 4, 8 … minutes, at most 6 hours.
pub fn pause_after(attempts: i64) -> i64 {
    let doublings = attempts.saturating_sub(1).clamp(0, 20) as u32;
    FIRST_PAUSE_MS.saturating_mul(1_i64 << doublings).min(MAX_PAUSE_MS)
}

/// Why a sandbox was removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    ConversationDeleted,
    AgentDeleted,
    MemberRemoved,
    RunFinished,
    FilesDeleted,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::ConversationDeleted => "conversation_deleted",
            Reason::AgentDeleted => "agent_deleted",
            Reason::MemberRemoved => "member_removed",
            Reason::RunFinished => "run_finished",
            Reason::FilesDeleted => "files_deleted",
        }
    }
}

/// One sandbox waiting to be destroyed at its provider.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Tombstone {
    pub id: String,
    pub organization_id: String,
    pub connection_id: String,
    pub session_key: String,
    /// The host's id of the session to destroy.
    pub session_id: String,
    pub reason: String,
    pub attempts: i64,
    /// Epoch milliseconds.
    pub next_attempt_at: i64,
    pub last_error: Option<String>,
    pub created_at: i64,
}

/// What a connection still has to destroy, for its row on the Sandboxes page.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Pending {
    /// Sandboxes waiting to be destroyed at this host.
    pub count: i64,
    /// When the sweep tries next (epoch milliseconds); null when none is waiting.
    pub next_attempt_at: Option<i64>,
    /// Why the latest failed attempt failed, in our words (never a token or an address).
    pub last_error: Option<String>,
}

impl Pending {
    /// "1 sandbox pending removal", "3 sandboxes pending removal"
    pub fn label(&self) -> String {
        let n = self.count.max(0) as usize;
        format!("{} pending removal", crate::words::count(n, "sandbox", "sandboxes"))
    }
}

/// What one sweep (or one attempt after a delete) did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SweepReport {
    /// Tombstones this sweeper claimed (another sweeper's are not counted).
    pub claimed: usize,
    /// Destroyed at the provider (or already gone there): their tombstones are removed.
    pub destroyed: usize,
    /// Still there: the next attempt is scheduled.
    pub failed: usize,
    /// Not destroyed: a live workspace uses the session now; their tombstones are removed.
    pub retired: usize,
    /// Not attempted: an open of the name was under way; due again in 2 minutes.
    pub deferred: usize,
    /// The ids destroyed, for whoever wants to know which.
    #[serde(skip)]
    pub destroyed_ids: Vec<String>,
}

impl SweepReport {
    pub fn add(&mut self, other: SweepReport) {
        self.claimed += other.claimed;
        self.destroyed += other.destroyed;
        self.failed += other.failed;
        self.retired += other.retired;
        self.deferred += other.deferred;
        self.destroyed_ids.extend(other.destroyed_ids);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pause_doubles_from_two_minutes_to_six_hours() {
        let minutes: Vec<i64> = (1..=12).map(|n| pause_after(n) / 60_000).collect();
        assert_eq!(minutes, vec![2, 4, 8, 16, 32, 64, 128, 256, 360, 360, 360, 360]);
        assert_eq!(pause_after(0), FIRST_PAUSE_MS);
        assert_eq!(pause_after(i64::MAX), MAX_PAUSE_MS);
    }
}
