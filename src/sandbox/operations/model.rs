//! The operation log as the API and the console show it.

use serde::Serialize;

/// What an item says of an agent that was deleted (its rows keep no id).
pub const AGENT_DELETED: &str = "agent deleted";

/// One recorded workspace operation.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema, sqlx::FromRow)]
pub struct OperationItem {
    /// The row's id (a UUID).
    pub id: String,
    /// When it ended: epoch milliseconds.
    pub time: i64,
    /// `read`, `write`, `ls`, `mkdir`, `remove` or `execute`.
    pub op: String,
    /// The path, or the command, at most 512 characters.
    pub target: String,
    /// Whether it went well (a command: exit 0).
    #[schema(value_type = bool)]
    #[serde(serialize_with = "as_bool")]
    pub ok: i64,
    /// A line written by us (`120 bytes`, `exit 2`, `timed out`), never the host's output.
    pub detail: String,
    /// How long it took, in milliseconds.
    pub duration_ms: i64,
    /// The host session's key.
    pub session_key: String,
    /// The workspace, null once it was deleted.
    pub workspace_id: Option<String>,
    /// The connection (host), null once it was deleted.
    pub connection_id: Option<String>,
    /// The connection's name, null once it was deleted.
    pub connection_name: Option<String>,
    /// The agent, null once it was deleted.
    pub agent_id: Option<String>,
    /// The agent's name, or `agent deleted`.
    pub agent_name: String,
    /// The run it was part of, null once the run was deleted.
    pub run_id: Option<String>,
    /// The conversation the run was a turn of, if any (null once deleted).
    pub conversation_id: Option<String>,
    /// The person the run acted for (their e-mail), while they are a member of the organization
    /// (docs/design.md §4); null for a run without a person, a deleted run, or once they left.
    pub user_name: Option<String>,
}

fn as_bool<S: serde::Serializer>(v: &i64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_bool(*v != 0)
}

impl OperationItem {
    pub fn is_ok(&self) -> bool {
        self.ok != 0
    }
}

/// How many rows match the filters, as far as the pages read so far tell: exact once the last
/// page is reached, else at least `count` (no statement reads every match to count them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Total {
    /// The rows known to match: through this page's last row.
    pub count: u64,
    /// Whether more than `count` rows match (older pages follow).
    pub more: bool,
}

/// Rows that arrived above a deep page's first page counted at most this many (beyond it, the
/// page's position is not told).
pub const COUNT_CAP: u64 = 10_000;

impl Total {
    /// `count` rows known, and whether more follow.
    pub fn at_least(count: u64, more: bool) -> Total {
        Total { count, more }
    }

    /// `1,234` or `50+`.
    pub fn label(&self) -> String {
        format!("{}{}", thousands(self.count), if self.more { "+" } else { "" })
    }
}

pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// A page of the log.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct OperationsPage {
    /// Newest first.
    pub items: Vec<OperationItem>,
    /// The rows matching the filters (not only this page's).
    pub total: Total,
    /// `total` in words: `1,234`, or `50+` while older pages follow.
    pub total_label: String,
    /// The 1-based position of this page's first row among the matching rows (the rows that
    /// arrived since the first page included); null on an empty page, from a cursor written
    /// without a rank, or when more than 10,000 rows arrived since.
    pub first_position: Option<u64>,
    /// The page size asked for.
    pub limit: u32,
    /// Older rows: pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
    /// Newer rows: pass as `cursor` for the previous page; null on the first page.
    pub prev_cursor: Option<String>,
    /// Rows that arrived after this page's newest row: pass as `cursor` to fetch them (the
    /// console's "new rows" poll); null on an empty page.
    pub poll_cursor: Option<String>,
    /// The operations this organization's log holds, for a filter's choices (kept a minute).
    pub vocabulary: Vec<String>,
    /// Rows older than this many days are deleted (`OPERATION_RETENTION_DAYS`).
    pub retention_days: u32,
}

#[cfg(test)]
mod tests {
    #[test]
    fn totals_say_when_they_stopped_counting() {
        assert_eq!(super::Total::at_least(1234, false).label(), "1,234");
        assert_eq!(super::Total::at_least(50, true).label(), "50+");
        assert_eq!(super::Total::at_least(10_050, true).label(), "10,050+");
        assert_eq!(super::thousands(7), "7");
        assert_eq!(super::thousands(1_000_000), "1,000,000");
    }
}
