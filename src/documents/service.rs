//! Documents (DESIGN.md §9): what agents keep for people. Which workspaces a caller may see comes
//! from `store.rs`; their files from `listing.rs` (the host's archive routes, or a `state`
//! workspace's document); `grouping.rs` shapes them; tiles get thumbnails and text previews
//! within a budget per request.

use std::collections::HashMap;

use futures_util::future::join_all;

use super::cache;
use super::error::DocumentError;
use super::grouping::{self, Who};
use super::listing::{self, HostCounter, Listing};
use super::model::{Cost, DocumentsPage, FileItem, Tile, WorkspaceDocuments, WorkspaceSummary};
use super::store::{self, After, VisibleRow};
use super::thumbnails;
use crate::access::Caller;
use crate::sandbox::client::SandboxdClient;
use crate::sandbox::connections::{host, service as connections};
use crate::sandbox::workspaces::document::Document;
use crate::sandbox::workspaces::key::Scope;
use crate::sandbox::workspaces::paths::{self, WorkspacePath};
use crate::state::AppState;
use crate::validate::FieldErrors;

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
    let mut files: Vec<(FileItem, Option<String>)> = Vec::new();
    for row in &rows {
        let listing = listings.remove(&row.id).unwrap_or_else(Listing::empty);
        let summary = summary(st, row, &listing);
        let items: Vec<FileItem> =
            grouping::files_of(&row.id, &listing).into_iter().filter(|f| checked.who.admits(f.added_by)).collect();
        files.extend(items.iter().cloned().map(|f| (f, row.agent_name.clone())));
        groups.push(grouping::group(summary, &items, listing.status));
    }
    let rows_by_id: HashMap<&str, &VisibleRow> = rows.iter().map(|r| (r.id.as_str(), r)).collect();
    let mut cost = Cost::default();
    let hits = match &checked.q {
        Some(q) => {
            let hits: Vec<(FileItem, Option<String>)> =
                files.iter().filter(|(f, agent)| grouping::matches(q, f, agent.as_deref())).cloned().collect();
            Some(tiles(st, &caller.org_id, &rows_by_id, hits, &counter, &mut cost).await)
        }
        None => None,
    };
    // A search lists its hits instead of the strip (and spends the thumbnail budget on them).
    let strip = if hits.is_some() { Vec::new() } else { grouping::newest(files, STRIP) };
    let tiles = tiles(st, &caller.org_id, &rows_by_id, strip, &counter, &mut cost).await;
    cost.host_requests = counter.get();
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

async fn visible_one(st: &AppState, caller: &Caller, id: &str) -> Result<VisibleRow> {
    let mut c = st.db.conn().await?;
    store::visible_one(&mut c, &caller.org_id, member(caller), id)
        .await?
        .ok_or_else(|| DocumentError::NotFound("There is no such workspace, or you may not see it.".into()))
}

// ---------------------------------------------------------------------------------------------
// Where the files are

/// The host session of a `sandboxd` workspace, when it ever stored files there.
fn session_of(row: &VisibleRow) -> Option<&str> {
    match (row.state.as_str(), row.session_ref.as_deref()) {
        ("lost", _) => None,
        (_, Some(reference)) => Some(reference),
        ("open", None) => Some(row.session_key.as_str()),
        _ => None,
    }
}

/// Every row's listing: `state` from the database, `sandboxd` per host (hosts asked concurrently).
async fn list_rows(
    st: &AppState,
    org_id: &str,
    rows: &[VisibleRow],
    counter: &HostCounter,
) -> HashMap<String, Listing> {
    let mut out = HashMap::new();
    let mut by_host: HashMap<&str, Vec<(String, String)>> = HashMap::new();
    for row in rows {
        if row.backend == "state" {
            out.insert(row.id.clone(), state_listing(st, org_id, &row.id).await);
            continue;
        }
        match (row.connection_id.as_deref(), session_of(row)) {
            (Some(connection), Some(session)) => {
                by_host.entry(connection).or_default().push((row.id.clone(), session.to_string()))
            }
            (None, Some(_)) => {
                out.insert(row.id.clone(), Listing::unreadable("its connection was deleted"));
            }
            _ => {
                out.insert(row.id.clone(), Listing::empty());
            }
        }
    }
    let hosts = by_host.into_iter().map(|(connection, sessions)| async move {
        match client(st, org_id, connection).await {
            Ok(client) => listing::on_host(&client, &sessions, counter).await,
            Err(e) => {
                let reason = e.to_string();
                sessions.into_iter().map(|(ws, _)| (ws, Listing::unreadable(reason.clone()))).collect()
            }
        }
    });
    for listings in join_all(hosts).await {
        out.extend(listings);
    }
    out
}

async fn client(st: &AppState, org_id: &str, connection_id: &str) -> Result<SandboxdClient> {
    let conn = connections::for_org(st, org_id, connection_id)
        .await?
        .ok_or_else(|| DocumentError::Host("its connection was deleted".into()))?;
    Ok(host::client_for(st, org_id, &conn).await?)
}

async fn document(st: &AppState, org_id: &str, id: &str) -> Result<Document> {
    let mut c = st.db.conn().await?;
    let text = store::document(&mut c, org_id, id).await?;
    Ok(Document::parse(text.as_deref())?)
}

async fn state_listing(st: &AppState, org_id: &str, id: &str) -> Listing {
    match document(st, org_id, id).await {
        Ok(doc) => grouping::document_listing(&doc),
        Err(e) => Listing::unreadable(e.to_string()),
    }
}

async fn read_bytes(
    st: &AppState,
    org_id: &str,
    row: &VisibleRow,
    path: &WorkspacePath,
    counter: &HostCounter,
) -> Result<Vec<u8>> {
    if row.backend == "state" {
        return Ok(document(st, org_id, &row.id).await?.read(path)?);
    }
    let (connection, session) = host_session(row)?;
    let client = client(st, org_id, connection).await?;
    counter.add(1);
    Ok(client.workspace_read_bytes(session, path.relative()).await?)
}

async fn read_text(
    st: &AppState,
    org_id: &str,
    row: &VisibleRow,
    path: &WorkspacePath,
    lines: u64,
    counter: &HostCounter,
) -> Result<String> {
    if row.backend == "state" {
        let bytes = document(st, org_id, &row.id).await?.read(path)?;
        let text = String::from_utf8_lossy(&bytes);
        return Ok(text.lines().take(lines as usize).collect::<Vec<_>>().join("\n"));
    }
    let (connection, session) = host_session(row)?;
    let client = client(st, org_id, connection).await?;
    counter.add(1);
    Ok(client.workspace_read(session, path.relative(), 0, lines).await?)
}

fn host_session(row: &VisibleRow) -> Result<(&str, &str)> {
    match (row.connection_id.as_deref(), session_of(row)) {
        (Some(c), Some(s)) => Ok((c, s)),
        _ => Err(DocumentError::NotFound("This workspace holds no files yet.".into())),
    }
}

// ---------------------------------------------------------------------------------------------
// Tiles

async fn tiles(
    st: &AppState,
    org_id: &str,
    rows: &HashMap<&str, &VisibleRow>,
    files: Vec<(FileItem, Option<String>)>,
    counter: &HostCounter,
    cost: &mut Cost,
) -> Vec<Tile> {
    let mut thumbs = 0;
    let mut previews = 0;
    let mut jobs = Vec::with_capacity(files.len());
    for (file, agent_name) in files {
        let thumb = thumbs < thumbnails::MAX_THUMBNAILS && thumbnails::is_thumbnail_candidate(&file.path, file.size);
        let preview =
            previews < thumbnails::MAX_TEXT_PREVIEWS && thumbnails::is_preview_candidate(&file.path, file.size);
        thumbs += usize::from(thumb);
        previews += usize::from(preview);
        jobs.push((file, agent_name, thumb, preview));
    }
    let reads = std::sync::atomic::AtomicU64::new(0);
    let made = join_all(jobs.into_iter().map(|(file, agent_name, thumb, preview)| {
        let reads = &reads;
        async move {
            let row = rows.get(file.workspace_id.as_str()).copied();
            let key = cache::key(&file.workspace_id, &file.path, file.size, file.modified_at.as_deref());
            let mut thumbnail = None;
            let mut text_preview = None;
            if let (true, Some(row)) = (thumb, row) {
                thumbnail = match st.documents_cache.thumbnails.get(&key) {
                    Some(cached) => cached,
                    None => {
                        let made = match paths::normalise(&file.path) {
                            Ok(p) => match read_bytes(st, org_id, row, &p, counter).await {
                                Ok(bytes) => {
                                    if row.backend != "state" {
                                        reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                    }
                                    thumbnails::thumbnail(bytes).await
                                }
                                Err(_) => None,
                            },
                            Err(_) => None,
                        };
                        st.documents_cache.thumbnails.put(key.clone(), made.clone());
                        made
                    }
                };
            }
            if let (true, Some(row)) = (preview, row) {
                text_preview = match st.documents_cache.previews.get(&key) {
                    Some(cached) => cached,
                    None => {
                        let made = match paths::normalise(&file.path) {
                            Ok(p) => read_text(st, org_id, row, &p, thumbnails::PREVIEW_LINES, counter)
                                .await
                                .ok()
                                .map(|t| thumbnails::text_preview(&t)),
                            Err(_) => None,
                        };
                        st.documents_cache.previews.put(key, made.clone());
                        made
                    }
                };
            }
            let glyph = grouping::glyph(file.kind).to_string();
            Tile { file, agent_name, thumbnail, text_preview, glyph }
        }
    }))
    .await;
    cost.image_reads += reads.load(std::sync::atomic::Ordering::Relaxed);
    made
}

// ---------------------------------------------------------------------------------------------
// Labels

/// How a workspace is named and placed: the scope's words, its owner, where it is stored.
fn summary(st: &AppState, row: &VisibleRow, listing: &Listing) -> WorkspaceSummary {
    let scope = Scope::parse(&row.scope).unwrap_or(Scope::Conversation);
    let owner_name = match scope {
        Scope::User => row.owner_email.clone().or_else(|| row.owner_label.clone()),
        _ => None,
    };
    let agent = row.agent_name.clone().unwrap_or_else(|| "a deleted agent".to_string());
    let title = match &row.conversation_title {
        Some(t) => t.clone(),
        None => format!("{agent} · {}", kind_label(scope)),
    };
    let location = if row.backend == "state" {
        "stored".to_string()
    } else {
        format!("on host {}", row.connection_name.as_deref().unwrap_or("(deleted connection)"))
    };
    let (used_bytes, limit_bytes) = if row.backend == "state" {
        let used = listing.entries.iter().map(|e| e.size.unwrap_or(0) + e.path.len() as u64).sum();
        (Some(used), Some(st.config.sandboxd.state_limit_bytes))
    } else {
        (None, None)
    };
    WorkspaceSummary {
        id: row.id.clone(),
        backend: row.backend.clone(),
        scope,
        kind_label: kind_label(scope).to_string(),
        access_label: scope.access_label().to_string(),
        owner_name,
        agent_id: row.agent_id.clone(),
        agent_name: row.agent_name.clone(),
        conversation_id: row.conversation_id.clone(),
        conversation_title: row.conversation_title.clone(),
        title,
        location,
        updated_at: row.updated_at,
        used_bytes,
        limit_bytes,
    }
}

/// What kind of workspace it is, in a few words: one place to add kinds (e.g. a recovery copy of
/// a `state` workspace).
pub fn kind_label(scope: Scope) -> &'static str {
    match scope {
        Scope::Run => "one run's workspace",
        Scope::Conversation => "conversation workspace",
        Scope::Channel => "channel workspace",
        Scope::User => "personal workspace",
        Scope::Agent => "agent workspace",
    }
}
