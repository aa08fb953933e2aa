//! A row of the operation log as it is written, what a write that failed reports, and what a
//! search asks its index.

use crate::db::DbError;

/// The operations that are recorded (questions like `exists` and `stat` are not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Read,
    Write,
    Ls,
    Mkdir,
    Remove,
    Execute,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Read => "read",
            Operation::Write => "write",
            Operation::Ls => "ls",
            Operation::Mkdir => "mkdir",
            Operation::Remove => "remove",
            Operation::Execute => "execute",
        }
    }
}

/// One row to write.
#[derive(Debug, Clone)]
pub struct Record {
    /// The row's id, minted once when the row is queued ([`crate::db::new_time_ordered_id`]): a
    /// batch tried again writes the same ids, so a try whose commit landed but whose answer was
    /// lost is recognised, never written twice.
    pub id: String,
    pub organization_id: String,
    pub workspace_id: String,
    pub session_key: String,
    pub connection_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: String,
    /// The conversation the run is a turn of, if any.
    pub conversation_id: Option<String>,
    pub operation: Operation,
    pub target: String,
    pub ok: bool,
    pub detail: String,
    pub duration_ms: i64,
    pub created_at: i64,
    pub seq: i64,
}

/// A batch not written whole: how many of its rows are missing from the log (all that were left
/// to write when `told` is false: whether they landed could not be read), and the last error.
#[derive(Debug)]
pub struct NotRecorded {
    pub missing: usize,
    pub told: bool,
    pub error: DbError,
}

/// The rows of the default page a search's walk is sized for (50, and its one row more): what a
/// reader that names no page asks for (`store::walked_to`).
pub const DEFAULT_PAGE: u32 = 51;

/// What a search (`q`) asks a trigram index for, found once per request by [`search_narrowing`]:
/// a few of the term's rarest trigrams. The rows holding all of them are a superset of the rows
/// holding the term, which is then checked on those rows only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Narrowing {
    /// SQLite: an FTS5 expression of the trigrams, joined by AND.
    Fts(String),
    /// PostgreSQL: the trigrams, each asked of the GIN indexes as `LIKE '%…%'`.
    Grams(Vec<String>),
    /// Either database: the term itself is frequent among the organization's newest rows, so a
    /// page fills after a short walk of the organization's rows newest first. The term is then
    /// written so that no trigram index can serve it: asked of an index, a frequent term's
    /// matches are all read and sorted before the first row is known (on PostgreSQL without
    /// fresh statistics the planner cannot tell, and took 1.8 s over 360,000 rows for a common
    /// word until `ANALYZE` ran).
    Common,
    /// Either database: the term checked with the LIKEs alone, no index asked; for rows another
    /// condition finds (not a search's own choice).
    Likes,
}
