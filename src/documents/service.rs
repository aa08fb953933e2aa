//! Documents (DESIGN.md §9): what agents keep for people. Which workspaces a caller may see comes
//! from `store.rs`; their files from `listing.rs` (the host's archive routes, or a `state`
//! workspace's document); `grouping.rs` shapes them; tiles get thumbnails and text previews
//! within a budget per request.

use std::collections::HashMap;

use super::error::DocumentError;
use super::files::{list_rows, read_bytes, read_text};
use super::grouping::{self, Who};
use super::labels::summary;
use super::listing::{Entry, HostCounter, Listing};
use super::model::{AddedBy, Cost, DocumentsPage, FileItem, Tile, WorkspaceDocuments};
use super::store::{self, After, VisibleRow};
use super::tiles::tiles;
use crate::access::Caller;
use crate::state::AppState;
use crate::validate::FieldErrors;
use crate::vocabulary::paths::{self, WorkspacePath};

type Result<T> = std::result::Result<T, DocumentError>;

/// Workspaces per page.
pub const PAGE: i64 = 50;
/// Tiles in the strip above the groups.
pub const STRIP: usize = 40;
/// Tiles on a workspace's page and a conversation's.
pub const WORKSPACE_TILES: usize = 12;
/// Longest search.
const Q_MAX: usize = 200;

/// What `/documents` is asked.
#[derive(Debug, Default, Clone)]
pub struct ListQuery {
    pub q: Option<String>,
    pub who: Option<String>,
    pub cursor: Option<String>,
}

/// A query checked: a search, whose files, and where the page starts.
struct Checked {
    q: Option<String>,
    who: Who,
    after: Option<After>,
}

fn check(query: &ListQuery) -> Result<Checked> {
    let mut errors = FieldErrors::new();
    let q = query.q.as_deref().map(str::trim).filter(|q| !q.is_empty()).map(str::to_string);
    if q.as_ref().is_some_and(|q| q.chars().count() > Q_MAX) {
        errors.add("q", format!("A search has at most {Q_MAX} characters."));
    }
    if q.as_ref().is_some_and(|q| q.chars().any(char::is_control)) {
        errors.add("q", "A search cannot contain control characters.");
    }
    let who = match query.who.as_deref().map(str::trim).filter(|w| !w.is_empty()) {
        None => Who::Anyone,
        Some(w) => Who::parse(w).unwrap_or_else(|| {
            errors.add("who", "Choose anyone, person or agent.");
            Who::Anyone
        }),
    };
    let after = match query.cursor.as_deref().filter(|c| !c.is_empty()) {
        None => None,
        Some(c) => parse_cursor(c).or_else(|| {
            errors.add("cursor", "This cursor is not one this API gave; start again without it.");
            None
        }),
    };
    errors.into_result().map_err(DocumentError::Invalid)?;
    Ok(Checked { q, who, after })
}

/// `<updated_at>.<workspace id>`.
fn cursor_of(row: &VisibleRow) -> String {
    format!("{}.{}", row.updated_at, row.id)
}

fn parse_cursor(raw: &str) -> Option<After> {
    let (at, id) = raw.split_once('.')?;
    let updated_at = at.parse::<i64>().ok()?;
    uuid::Uuid::parse_str(id).ok()?;
    Some(After { updated_at, id: id.to_string() })
}

fn member(caller: &Caller) -> Option<&str> {
    (!caller.role.can_see_sandboxes()).then_some(caller.user_id.as_str())
}

/// One page of the workspaces the caller may see, their files grouped, the newest as tiles, and
/// with `q` every match flat.
pub async fn list(st: &AppState, caller: &Caller, query: ListQuery) -> Result<DocumentsPage> {
    let checked = check(&query)?;
    let mut c = st.db.conn().await?;
    let mut rows = store::visible(&mut c, &caller.org_id, member(caller), checked.after.as_ref(), PAGE + 1).await?;
    drop(c);
    let next_cursor = if rows.len() as i64 > PAGE {
        rows.truncate(PAGE as usize);
        rows.last().map(cursor_of)
    } else {
        None
    };
    let counter = HostCounter::default();
    let mut listings = list_rows(st, &caller.org_id, &rows, &counter).await;
    let mut groups = Vec::with_capacity(rows.len());
    // A search lists its hits instead of the strip (and spends the thumbnail budget on them).
    // Only what can be shown is copied: every hit, or each workspace's newest files for the strip.
    let mut shown: Vec<(FileItem, Option<String>)> = Vec::new();
    for row in &rows {
        let mut listing = listings.remove(&row.id).unwrap_or_else(Listing::empty);
        let summary = summary(st, row, &listing);
        let entries = std::mem::take(&mut listing.entries);
        let files: Vec<&Entry> =
            entries.iter().filter(|e| !e.is_dir && checked.who.admits(AddedBy::of(&e.path))).collect();
        let candidates: Vec<&Entry> = match &checked.q {
            Some(q) => {
                let search = grouping::Search::new(q, row.agent_name.as_deref());
                files.iter().copied().filter(|e| search.matches(&e.path)).collect()
            }
            None => grouping::newest_entries(&files, STRIP),
        };
        shown.extend(candidates.into_iter().map(|e| (grouping::file_item(&row.id, e), row.agent_name.clone())));
        groups.push(grouping::group_of(summary, &row.id, &files, listing.status));
    }
    let rows_by_id: HashMap<&str, &VisibleRow> = rows.iter().map(|r| (r.id.as_str(), r)).collect();
    let mut cost = Cost::default();
    let (hits, strip) = match &checked.q {
        Some(_) => (Some(tiles(st, &caller.org_id, &rows_by_id, shown, &counter, &mut cost).await), Vec::new()),
        None => (None, grouping::newest(shown, STRIP)),
    };
    let tiles = tiles(st, &caller.org_id, &rows_by_id, strip, &counter, &mut cost).await;
    cost.host_requests = counter.get();
    cost.host_time = counter.host_time();
    Ok(DocumentsPage { tiles, groups, hits, next_cursor, cost })
}

/// One workspace the caller may see: its tree, counts and newest files as tiles.
pub async fn workspace(st: &AppState, caller: &Caller, id: &str) -> Result<WorkspaceDocuments> {
    let row = visible_one(st, caller, id).await?;
    let counter = HostCounter::default();
    let listing = list_rows(st, &caller.org_id, std::slice::from_ref(&row), &counter)
        .await
        .remove(&row.id)
        .unwrap_or_else(Listing::empty);
    let summary = summary(st, &row, &listing);
    let items = grouping::files_of(&row.id, &listing);
    let (file_count, size) = grouping::totals(&items);
    let tree = grouping::tree(&listing);
    let newest = grouping::newest(items.into_iter().map(|f| (f, row.agent_name.clone())).collect(), WORKSPACE_TILES);
    let by_id = HashMap::from([(row.id.as_str(), &row)]);
    let mut cost = Cost::default();
    let tiles = tiles(st, &caller.org_id, &by_id, newest, &counter, &mut cost).await;
    cost.host_requests = counter.get();
    Ok(WorkspaceDocuments { workspace: summary, tree, file_count, size, listing: listing.status, tiles, cost })
}

/// The tiles of the workspaces of a conversation the caller may see (its page shows them).
pub async fn of_conversation(st: &AppState, caller: &Caller, conversation_id: &str) -> Result<Vec<Tile>> {
    let mut c = st.db.conn().await?;
    let rows = store::of_conversation(&mut c, &caller.org_id, member(caller), conversation_id).await?;
    drop(c);
    let counter = HostCounter::default();
    let mut listings = list_rows(st, &caller.org_id, &rows, &counter).await;
    let mut files = Vec::new();
    for row in &rows {
        let listing = listings.remove(&row.id).unwrap_or_else(Listing::empty);
        files.extend(grouping::files_of(&row.id, &listing).into_iter().map(|f| (f, row.agent_name.clone())));
    }
    let by_id: HashMap<&str, &VisibleRow> = rows.iter().map(|r| (r.id.as_str(), r)).collect();
    let mut cost = Cost::default();
    Ok(tiles(st, &caller.org_id, &by_id, grouping::newest(files, WORKSPACE_TILES), &counter, &mut cost).await)
}

/// A file's bytes, for someone who may see its workspace. The path is normalised and confined;
/// the host refuses one that passes through a link.
pub async fn file(st: &AppState, caller: &Caller, id: &str, raw_path: &str) -> Result<(WorkspacePath, Vec<u8>)> {
    let path = file_path(raw_path)?;
    let row = visible_one(st, caller, id).await?;
    let bytes = read_bytes(st, &caller.org_id, &row, &path, &HostCounter::default()).await?;
    Ok((path, bytes))
}

/// A text file's first `lines` lines as the host decodes it (or the document's bytes as UTF-8).
pub async fn text(st: &AppState, caller: &Caller, id: &str, raw_path: &str, lines: u64) -> Result<String> {
    let path = file_path(raw_path)?;
    let row = visible_one(st, caller, id).await?;
    read_text(st, &caller.org_id, &row, &path, lines, &HostCounter::default()).await
}

fn file_path(raw: &str) -> Result<WorkspacePath> {
    if raw.trim().is_empty() {
        return Err(DocumentError::Invalid(FieldErrors::one("path", "Name the file to open.")));
    }
    let path = paths::normalise(raw).map_err(DocumentError::BadPath)?;
    if path.is_root() {
        return Err(DocumentError::BadPath("Name a file, not the workspace root.".into()));
    }
    Ok(path)
}

/// Whether the caller may see the workspace (404 otherwise, also across organizations): its
/// agent and conversation, for the snapshots of its page.
pub async fn may_see(st: &AppState, caller: &Caller, id: &str) -> Result<(Option<String>, Option<String>)> {
    let row = visible_one(st, caller, id).await?;
    Ok((row.agent_id, row.conversation_id))
}

async fn visible_one(st: &AppState, caller: &Caller, id: &str) -> Result<VisibleRow> {
    let mut c = st.db.conn().await?;
    store::visible_one(&mut c, &caller.org_id, member(caller), id)
        .await?
        .ok_or_else(|| DocumentError::NotFound("There is no such workspace, or you may not see it.".into()))
}
