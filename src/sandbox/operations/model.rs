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
}

fn as_bool<S: serde::Serializer>(v: &i64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_bool(*v != 0)
}

impl OperationItem {
    pub fn is_ok(&self) -> bool {
        self.ok != 0
    }
}

/// How many rows match the filters: exact up to 10,000.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Total {
    /// The count, at most 10,000.
    pub count: u64,
    /// Whether more than `count` rows match (the count stopped at 10,000).
    pub more: bool,
}

pub const COUNT_CAP: u64 = 10_000;

impl Total {
    pub fn of(counted: u64) -> Total {
        Total { count: counted.min(COUNT_CAP), more: counted > COUNT_CAP }
    }

    /// `1,234` or `10,000+`.
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
    /// `total` in words: `1,234` or `10,000+`.
    pub total_label: String,
    /// The 1-based position of this page's first row among the matching rows, when it is within
    /// the first 10,000; null further down or on an empty page.
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
        assert_eq!(super::Total::of(1234).label(), "1,234");
        assert_eq!(super::Total::of(10_000).label(), "10,000");
        assert_eq!(super::Total::of(10_001).label(), "10,000+");
        assert_eq!(super::thousands(7), "7");
        assert_eq!(super::thousands(1_000_000), "1,000,000");
    }
}
