//! Documents (docs/design.md §9): what agents keep for people. Which workspaces a caller may see comes
//! from `store.rs`; their files from their host kind's listing (`hosts/dispatch/stored_files.rs`)
//! or a `state` workspace's document; `grouping.rs` shapes them; tiles get thumbnails and text previews
//! within a budget per request.

use std::collections::HashMap;

use super::error::DocumentError;
use super::files::{list_rows, read_bytes, read_text};
use super::filters::{Sort, Type};
use super::grouping::{self, Who};
use super::labels::summary;
use super::listing::{Entry, HostCounter, Listing};
use super::model::{AddedBy, Cost, DocumentsPage, FileItem, Reach, Tile, WorkspaceDocuments, WorkspaceGroup};
use super::paging::TextPage;
use super::store::{self, After, VisibleRow};
use super::tiles::tiles;
use super::uploaders::Uploaders;
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

/// Workspaces a filter (`q`, `who`, `type`) reads at most: the most recently changed first.
pub const SCAN: i64 = 500;
/// Search hits listed at most (all are counted).
pub const HITS: usize = 200;

/// What `/documents` is asked.
#[derive(Debug, Default, Clone)]
pub struct ListQuery {
    pub q: Option<String>,
    pub who: Option<String>,
    pub cursor: Option<String>,
    pub sort: Option<String>,
    pub kind: Option<String>,
}

/// A query checked: a search, whose files, of what type, in what order, and where the page starts.
struct Checked {
    q: Option<String>,
    who: Who,
    kind: Option<Type>,
    sort: Sort,
    after: Option<After>,
}

impl Checked {
    /// A filter narrows the files: it reads every workspace the caller may see (up to [`SCAN`]).
    fn is_filtered(&self) -> bool {
        self.q.is_some() || self.who != Who::Anyone || self.kind.is_some()
    }
    fn admits(&self, e: &Entry) -> bool {
        !e.is_dir && self.who.admits(AddedBy::of(&e.path)) && self.kind.is_none_or(|k| k.admits(&e.path))
    }
}

/// A choice from a short list: none when empty, a message naming the choices otherwise.
fn choice<T>(
    errors: &mut FieldErrors,
    field: &str,
    raw: Option<&str>,
    parse: fn(&str) -> Option<T>,
    message: &str,
) -> Option<T> {
    let raw = raw.map(str::trim).filter(|v| !v.is_empty())?;
    let parsed = parse(raw);
    if parsed.is_none() {
        errors.add(field, message);
    }
    parsed
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
    let who = choice(&mut errors, "who", query.who.as_deref(), Who::parse, "Choose anyone, person or agent.")
        .unwrap_or(Who::Anyone);
    let sort = choice(&mut errors, "sort", query.sort.as_deref(), Sort::parse, "Sort by newest, name or size.")
        .unwrap_or_default();
    let kind = choice(
        &mut errors,
        "type",
        query.kind.as_deref(),
        Type::parse,
        "Choose a type: images, documents, data or code.",
    );
    let after = match query.cursor.as_deref().filter(|c| !c.is_empty()) {
        None => None,
        Some(c) => parse_cursor(c).or_else(|| {
            errors.add("cursor", "This cursor is not one this API gave; start again without it.");
            None
        }),
    };
    errors.into_result().map_err(DocumentError::Invalid)?;
    Ok(Checked { q, who, kind, sort, after })
}

/// `<updated_at>.<workspace id>`.
fn cursor_of(updated_at: i64, id: &str) -> String {
    format!("{updated_at}.{id}")
}

fn parse_cursor(raw: &str) -> Option<After> {
    let (at, id) = raw.split_once('.')?;
    let updated_at = at.parse::<i64>().ok()?;
    uuid::Uuid::parse_str(id).ok()?;
    Some(After { updated_at, id: id.to_string() })
}

/// Whether a workspace comes after the cursor (newest first, then by id, descending).
fn is_after(after: Option<&After>, updated_at: i64, id: &str) -> bool {
    after.is_none_or(|a| updated_at < a.updated_at || (updated_at == a.updated_at && id < a.id.as_str()))
}

fn member(caller: &Caller) -> Option<&str> {
    (!caller.role.can_see_sandboxes()).then_some(caller.user_id.as_str())
}

/// One page of the workspaces the caller may see, their files grouped, the newest as tiles, and
/// with `q` every match flat. Without a filter a page is 50 workspaces; with one (`q`, `who`,
/// `type`) every workspace the caller may see is read (up to [`SCAN`]), groups without a match
/// are left out and the page is 50 of the groups left; `reach` says what was read and found.
pub async fn list(st: &AppState, caller: &Caller, query: ListQuery) -> Result<DocumentsPage> {
    let checked = check(&query)?;
    let filtered = checked.is_filtered();
    let mut c = st.db.conn().await?;
    let (rows, mut next_cursor, visible) = if filtered {
        let mut rows = store::visible(&mut c, &caller.org_id, member(caller), None, SCAN + 1).await?;
        let visible = if rows.len() as i64 > SCAN {
            rows.truncate(SCAN as usize);
            store::count_visible(&mut c, &caller.org_id, member(caller)).await?
        } else {
            rows.len() as u64
        };
        (rows, None, visible)
    } else {
        let mut rows = store::visible(&mut c, &caller.org_id, member(caller), checked.after.as_ref(), PAGE + 1).await?;
        let next = if rows.len() as i64 > PAGE {
            rows.truncate(PAGE as usize);
            rows.last().map(|r| cursor_of(r.updated_at, &r.id))
        } else {
            None
        };
        (rows, next, 0)
    };
    drop(c);
    let counter = HostCounter::default();
    let mut listings = list_rows(st, &caller.org_id, &rows, &counter).await;
    let mut groups = Vec::with_capacity(rows.len().min(PAGE as usize));
    let mut reach = Reach { searched: rows.len() as u64, visible, ..Reach::default() };
    // A search lists its hits instead of the strip (and spends the thumbnail budget on them).
    // Only what can be shown is copied: every hit, or each workspace's newest files for the strip.
    let mut shown: Vec<(FileItem, Option<String>)> = Vec::new();
    for row in &rows {
        let mut listing = listings.remove(&row.id).unwrap_or_else(Listing::empty);
        let summary = summary(st, row, &listing);
        let entries = std::mem::take(&mut listing.entries);
        let search = checked.q.as_deref().map(|q| grouping::Search::new(q, row.agent_name.as_deref()));
        let files: Vec<&Entry> = entries
            .iter()
            .filter(|e| checked.admits(e) && search.as_ref().is_none_or(|s| s.matches(&e.path)))
            .collect();
        if filtered {
            if files.is_empty() {
                continue;
            }
            reach.files += files.len() as u64;
            reach.workspaces += 1;
        }
        let candidates: Vec<&Entry> =
            if checked.q.is_some() { files.clone() } else { grouping::newest_entries(&files, STRIP) };
        shown.extend(candidates.into_iter().map(|e| (grouping::file_item(&row.id, e), row.agent_name.clone())));
        if groups.len() as i64 == PAGE {
            // A filtered page is full: the next one starts after its last group.
            if next_cursor.is_none() && is_after(checked.after.as_ref(), row.updated_at, &row.id) {
                next_cursor =
                    groups.last().map(|g: &WorkspaceGroup| cursor_of(g.workspace.updated_at, &g.workspace.id));
            }
            continue;
        }
        if filtered && !is_after(checked.after.as_ref(), row.updated_at, &row.id) {
            continue;
        }
        groups.push(grouping::group_of(summary, &row.id, &files, listing.status, checked.sort));
    }
    let rows_by_id: HashMap<&str, &VisibleRow> = rows.iter().map(|r| (r.id.as_str(), r)).collect();
    let mut cost = Cost::default();
    let (hits, strip) = match &checked.q {
        Some(_) => {
            let sort = checked.sort;
            let mut all = shown;
            if all.len() > HITS {
                all.select_nth_unstable_by(HITS - 1, |(a, _), (b, _)| sort.cmp(a, b));
                all.truncate(HITS);
            }
            all.sort_by(|(a, _), (b, _)| sort.cmp(a, b));
            reach.hits_shown = all.len() as u64;
            (Some(tiles(st, &caller.org_id, &rows_by_id, all, &counter, &mut cost).await), Vec::new())
        }
        None => (None, grouping::newest(shown, STRIP)),
    };
    let tiles = tiles(st, &caller.org_id, &rows_by_id, strip, &counter, &mut cost).await;
    cost.host_requests = counter.get();
    cost.host_time = counter.host_time();
    let mut page = DocumentsPage { tiles, groups, hits, next_cursor, reach: filtered.then_some(reach), cost };
    let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
    Uploaders::of(st, &caller.org_id, &ids).await?.page(&mut page);
    Ok(page)
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
    let mut tree = grouping::tree(&listing);
    let newest = grouping::newest(items.into_iter().map(|f| (f, row.agent_name.clone())).collect(), WORKSPACE_TILES);
    let by_id = HashMap::from([(row.id.as_str(), &row)]);
    let mut cost = Cost::default();
    let mut tiles = tiles(st, &caller.org_id, &by_id, newest, &counter, &mut cost).await;
    cost.host_requests = counter.get();
    let names = Uploaders::of(st, &caller.org_id, &[row.id.as_str()]).await?;
    names.tree(&row.id, &mut tree);
    names.tiles(&mut tiles);
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
    let mut tiles =
        tiles(st, &caller.org_id, &by_id, grouping::newest(files, WORKSPACE_TILES), &counter, &mut cost).await;
    let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
    Uploaders::of(st, &caller.org_id, &ids).await?.tiles(&mut tiles);
    Ok(tiles)
}

/// A file's bytes, for someone who may see its workspace. The path is normalised and confined;
/// the host refuses one that passes through a link.
pub async fn file(st: &AppState, caller: &Caller, id: &str, raw_path: &str) -> Result<(WorkspacePath, Vec<u8>)> {
    let path = file_path(raw_path)?;
    let row = visible_one(st, caller, id).await?;
    let bytes = read_bytes(st, &caller.org_id, &row, &path, &HostCounter::default()).await?;
    Ok((path, bytes))
}

/// Lines `offset..offset+limit` of a text file as the host decodes it (or the document's bytes
/// as UTF-8), one bounded page.
pub async fn text(
    st: &AppState,
    caller: &Caller,
    id: &str,
    raw_path: &str,
    offset: u64,
    limit: u64,
) -> Result<TextPage> {
    let path = file_path(raw_path)?;
    let row = visible_one(st, caller, id).await?;
    read_text(st, &caller.org_id, &row, &path, offset, limit, &HostCounter::default()).await
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
