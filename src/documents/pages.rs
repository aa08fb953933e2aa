//! HTML: `/documents` (all files, a strip of tiles, groups, search, the "who" filter, pages) and a
//! workspace's page (its tree, a preview pane, download), and the bytes behind both.

use actix_web::web::{Data, Path, Query};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;
use serde::Deserialize;
use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::OffsetDateTime;

use super::api::{DocumentsQuery, FileQuery};
use super::error::DocumentError;
use super::filters::{Sort, Type};
use super::grouping::Who;
use super::listing::MAX_DEPTH;
use super::model::{DocumentsPage, FileKind, ListingStatus, Reach, Tile, TreeNode, WorkspaceDocuments};
use super::paging::TextPage;
use super::rendering::{self, Rendered, Table};
use super::service;
use super::serving;
use super::thumbnails::kind_of;
use crate::sandbox::operations::model::thousands;
use crate::sandbox::operations::pages::ago;
use crate::state::AppState;
use crate::web::{page, paths, AppError, PageCaller, PageError, Shell};

#[derive(Template)]
#[template(path = "documents/index.html")]
pub struct DocumentsView {
    pub shell: Shell,
    pub q: String,
    pub who: String,
    /// `newest`, `name` or `size` as asked (empty: the default).
    pub sort: String,
    /// `images`, `documents`, `data` or `code` as asked (empty: every type).
    pub kind: String,
    pub data: Option<DocumentsPage>,
    /// A query that could not be used, said inline.
    pub error: Option<String>,
}

impl DocumentsView {
    pub fn next_page(&self) -> Option<String> {
        let cursor = self.data.as_ref()?.next_cursor.as_deref()?;
        Some(paths::documents(&self.q, &self.who, &self.sort, &self.kind, Some(cursor)))
    }
    pub fn is_empty(&self) -> bool {
        self.data.as_ref().is_none_or(|d| d.groups.is_empty())
    }
    /// Filtered: the groups left out had no match.
    pub fn is_filtered(&self) -> bool {
        self.data.as_ref().is_some_and(|d| d.reach.is_some())
    }
    pub fn filter_path(&self, who: &str) -> String {
        paths::documents(&self.q, who, &self.sort, &self.kind, None)
    }
    /// This page without the search.
    pub fn clear_search_path(&self) -> String {
        paths::documents("", &self.who, &self.sort, &self.kind, None)
    }
    pub fn who_is(&self, who: &str) -> &'static str {
        if self.who == who || (who == "anyone" && self.who.is_empty()) {
            "page"
        } else {
            "false"
        }
    }
    pub fn sorts(&self) -> Vec<(&'static str, &'static str, bool)> {
        let current = Sort::parse(&self.sort).unwrap_or_default();
        Sort::ALL.iter().map(|s| (s.as_str(), s.label(), *s == current)).collect()
    }
    pub fn types(&self) -> Vec<(&'static str, &'static str, bool)> {
        Type::ALL.iter().map(|t| (t.as_str(), t.label(), t.as_str() == self.kind)).collect()
    }
    /// What the filter counted, in words (see [`reach_words`]).
    pub fn reach_words(&self) -> Option<String> {
        let d = self.data.as_ref()?;
        let reach = d.reach.as_ref()?;
        Some(reach_words(reach, &self.q, &self.who, &self.kind, &self.sort, d.hits.is_some()))
    }
}

/// What a filter counted, in words: "3 images attached by a person match “q” in 2 of the 37
/// workspaces you may see.", and when the scan was cut, of how many.
pub fn reach_words(reach: &Reach, q: &str, who: &str, kind: &str, sort: &str, has_hits: bool) -> String {
    let (one, many) = Type::parse(kind).map_or(("file", "files"), Type::nouns);
    let n = reach.files as usize;
    let mut words = crate::words::count(n, one, many);
    match Who::parse(who) {
        Some(Who::Person) => words.push_str(" attached by a person"),
        Some(Who::Agent) => words.push_str(" written by the agent"),
        _ => {}
    }
    if !q.trim().is_empty() {
        words.push_str(if n == 1 { " matches" } else { " match" });
        words.push_str(&format!(" “{}”", q.trim()));
    }
    if reach.is_cut() {
        words.push_str(&format!(
            " in {} of the {} most recently changed workspaces; you may see {}, and a filter reads at most {}.",
            reach.workspaces,
            reach.searched,
            reach.visible,
            service::SCAN
        ));
    } else {
        let all = crate::words::count(reach.visible as usize, "workspace", "workspaces");
        words.push_str(&format!(" in {} of the {all} you may see.", reach.workspaces));
    }
    if has_hits && reach.hits_shown < reach.files {
        let order = Sort::parse(sort).unwrap_or_default();
        words.push_str(&format!(" The first {} ({}) are shown.", reach.hits_shown, order.label().to_lowercase()));
    }
    words
}

pub async fn index(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    query: Query<DocumentsQuery>,
) -> Result<HttpResponse, PageError> {
    let query = query.into_inner();
    let q = query.q.clone().unwrap_or_default();
    let who = query.who.clone().unwrap_or_default();
    let sort = query.sort.clone().unwrap_or_default();
    let kind = query.kind.clone().unwrap_or_default();
    let (data, error) = match service::list(&st, &caller, query.into()).await {
        Ok(d) => (Some(d), None),
        Err(DocumentError::Invalid(f)) => (None, Some(AppError::invalid(f).detail)),
        Err(e) => return Err(AppError::from(e).into()),
    };
    let v = DocumentsView { shell: Shell::new(&caller, &req, "documents"), q, who, sort, kind, data, error };
    page(&v.shell, &v)
}

/// `?path=` opens a file in the preview pane; `offset=` its page from that line (0 first); `filter=`
/// keeps the tree's files whose path holds it (ignoring case).
#[derive(Debug, Default, Deserialize)]
pub struct PreviewQuery {
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub offset: Option<String>,
    #[serde(default)]
    pub filter: Option<String>,
}

/// Longest tree filter.
const FILTER_MAX: usize = 200;
/// A tree of at most this many nodes shows its folders open; a larger one opens only those on
/// the way to the open file (and every folder under a filter).
const OPEN_TREE: usize = 200;

/// One node of the tree as drawn: nested `<details>` per folder, closed before it as needed.
pub struct TreeRow<'a> {
    pub node: &'a TreeNode,
    /// Folders to close before this node (it is shallower than the one before it).
    pub closes: usize,
    /// A folder drawn open.
    pub open: bool,
}

/// The tree's nodes to draw, filtered: a file whose path holds `filter` (ignoring case), and the
/// folders above one; with no filter, all. Returns the rows and how many folders stay open at the
/// end (to close).
pub fn tree_rows<'a>(tree: &'a [TreeNode], filter: &str, open_path: Option<&str>) -> (Vec<TreeRow<'a>>, usize) {
    let needle = filter.trim().to_lowercase();
    let shown_dirs: std::collections::HashSet<&str> = if needle.is_empty() {
        tree.iter().filter(|n| n.is_dir).map(|n| n.path.as_str()).collect()
    } else {
        let mut dirs = std::collections::HashSet::new();
        for n in tree.iter().filter(|n| !n.is_dir && n.path.to_lowercase().contains(&needle)) {
            let mut at = n.path.as_str();
            while let Some((parent, _)) = at.rsplit_once('/') {
                dirs.insert(parent);
                at = parent;
            }
        }
        dirs
    };
    let small = tree.len() <= OPEN_TREE;
    let on_the_way = |dir: &str| open_path.is_some_and(|p| p.starts_with(dir) && p[dir.len()..].starts_with('/'));
    let mut rows = Vec::new();
    let mut depth = 0usize;
    for n in tree {
        let shown = if n.is_dir {
            shown_dirs.contains(n.path.as_str())
        } else {
            needle.is_empty() || n.path.to_lowercase().contains(&needle)
        };
        if !shown {
            continue;
        }
        let d = n.depth as usize;
        let closes = depth.saturating_sub(d);
        depth = d + usize::from(n.is_dir);
        let open = n.is_dir && (small || !needle.is_empty() || on_the_way(&n.path));
        rows.push(TreeRow { node: n, closes, open });
    }
    (rows, depth)
}

/// The preview pane's file.
pub struct Preview {
    pub path: String,
    pub kind: FileKind,
    /// A text's page of lines (a table's: its header first on the first page).
    pub page: Option<TextPage>,
    /// Markdown, a table or JSON drawn from the page.
    pub rendered: Option<Rendered>,
    /// Lines a page holds.
    pub limit: u64,
    /// A CSV or TSV (its line 0 is the header; a page is counted in rows).
    pub table: bool,
    /// The file's size from the listing, for an estimate when the read did not count the lines.
    pub size: Option<u64>,
    pub error: Option<String>,
}

impl Preview {
    pub fn markdown(&self) -> Option<&str> {
        match &self.rendered {
            Some(Rendered::Markdown(html)) => Some(html),
            _ => None,
        }
    }
    pub fn table(&self) -> Option<&Table> {
        match &self.rendered {
            Some(Rendered::Table(t)) => Some(t),
            _ => None,
        }
    }
    pub fn json(&self) -> Option<&str> {
        match &self.rendered {
            Some(Rendered::Json(j)) => Some(j),
            _ => None,
        }
    }
}

impl Preview {
    /// "Lines 1–200 of 134,805", "Rows 201–400 of about 120,000", "Lines 1–200; more follow".
    pub fn position(&self) -> Option<String> {
        let page = self.page.as_ref()?;
        let (unit, header) = if self.table { ("Rows", u64::from(page.offset == 0)) } else { ("Lines", 0) };
        let skip = if self.table { 1 } else { 0 };
        let first = page.offset.max(skip) + 1 - skip;
        let shown = page.lines - header;
        if shown == 0 {
            return Some(if page.offset == 0 {
                "The file is empty.".to_string()
            } else {
                format!("Nothing from line {}: the file is shorter.", thousands(page.offset + 1))
            });
        }
        let last = first + shown - 1;
        let of = match (page.total, self.size.and_then(|s| page.estimate(s))) {
            (Some(total), _) => format!(" of {}", thousands(total.saturating_sub(skip))),
            (None, Some(about)) => format!(" of about {}", thousands(about.saturating_sub(skip))),
            (None, None) if page.more => "; more follow".to_string(),
            (None, None) => String::new(),
        };
        Some(format!("{unit} {}–{}{of}", thousands(first), thousands(last)))
    }
    /// The previous page's offset, when this is not the first.
    pub fn previous(&self) -> Option<u64> {
        let page = self.page.as_ref()?;
        (page.offset > 0).then(|| {
            let back = page.offset.saturating_sub(self.limit);
            // A table's first page holds its header too.
            if self.table && back <= 1 {
                0
            } else {
                back
            }
        })
    }
    /// The next page's offset, when lines follow.
    pub fn next(&self) -> Option<u64> {
        self.page.as_ref().filter(|p| p.more).map(TextPage::next)
    }
}

/// Lines a text page holds.
const PAGE_LINES: u64 = 200;
/// Lines a JSON page holds (it is drawn indented only when the page is the whole file).
const JSON_LINES: u64 = 2_000;

#[derive(Template)]
#[template(path = "documents/workspace.html")]
pub struct WorkspaceView {
    pub shell: Shell,
    pub data: WorkspaceDocuments,
    pub preview: Option<Preview>,
    /// The tree's filter, as typed.
    pub filter: String,
    /// A filter that could not be used, said inline.
    pub filter_error: Option<String>,
}

impl WorkspaceView {
    /// The tree as drawn, and the folders to close at its end.
    pub fn rows(&self) -> (Vec<TreeRow<'_>>, usize) {
        let filter = if self.filter_error.is_some() { "" } else { self.filter.as_str() };
        tree_rows(&self.data.tree, filter, self.preview.as_ref().map(|p| p.path.as_str()))
    }
    /// Files the filter keeps.
    pub fn filtered_files(&self) -> usize {
        self.rows().0.iter().filter(|r| !r.node.is_dir).count()
    }
    /// The page itself (no file open, no filter).
    pub fn page_url(&self) -> String {
        paths::document_workspace(&self.data.workspace.id)
    }
    /// The page without the open file, its filter kept.
    pub fn close_url(&self) -> String {
        let mut url = self.page_url();
        if !self.filter.is_empty() {
            let q = url::form_urlencoded::Serializer::new(String::new()).append_pair("filter", &self.filter).finish();
            url = format!("{url}?{q}");
        }
        url
    }
    pub fn file_url(&self, path: &str) -> String {
        paths::document_file(&self.data.workspace.id, path, false)
    }
    pub fn download_url(&self, path: &str) -> String {
        paths::document_file(&self.data.workspace.id, path, true)
    }
    pub fn open_url(&self, path: &str) -> String {
        self.at_url(path, &0)
    }
    /// The open file's page from line `offset` (the filter kept).
    pub fn at_url(&self, path: &str, offset: &u64) -> String {
        let url = paths::document_preview(&self.data.workspace.id, path, *offset);
        if self.filter.is_empty() {
            url
        } else {
            let q = url::form_urlencoded::Serializer::new(String::new()).append_pair("filter", &self.filter).finish();
            format!("{url}&{q}")
        }
    }
    pub fn is_open(&self, path: &str) -> bool {
        self.preview.as_ref().is_some_and(|p| p.path == path)
    }
    /// "1.2 MiB used of 4 MiB" for a `state` workspace.
    pub fn usage(&self) -> Option<String> {
        let w = &self.data.workspace;
        Some(format!("{} used of {}", size(&w.used_bytes?), size(&w.limit_bytes?)))
    }
}

pub async fn workspace(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    id: Path<String>,
    query: Query<PreviewQuery>,
) -> Result<HttpResponse, PageError> {
    let data = service::workspace(&st, &caller, &id).await.map_err(AppError::from)?;
    let preview = match query.path.as_deref().filter(|p| !p.is_empty()) {
        None => None,
        Some(path) => {
            let kind = kind_of(path);
            let table = rendering::is_table(path);
            let limit = if rendering::is_json(path) { JSON_LINES } else { PAGE_LINES };
            let size = data.tree.iter().find(|n| !n.is_dir && n.path == path).map(|n| n.size);
            let mut p =
                Preview { path: path.to_string(), kind, page: None, rendered: None, limit, table, size, error: None };
            let offset = match query.offset.as_deref().map(str::trim).filter(|o| !o.is_empty()) {
                None => Some(0),
                Some(o) => o.parse::<u64>().ok(),
            };
            match (kind, offset) {
                (FileKind::Text, None) => {
                    p.error = Some("A page starts at a line number (0 is the first line).".to_string())
                }
                (FileKind::Text, Some(offset)) => {
                    // A table's first page is its header and `limit` rows.
                    let lines = if table && offset == 0 { limit + 1 } else { limit };
                    match text_page(&st, &caller, &id, path, offset, lines, table).await {
                        Ok((page, drawn)) => {
                            p.rendered = rendering::render(path, &drawn, offset == 0 && !page.more && !page.cut);
                            p.page = Some(page);
                        }
                        Err(e) => p.error = Some(AppError::from(e).public_detail()),
                    }
                }
                _ => {}
            }
            Some(p)
        }
    };
    let filter = query.filter.clone().unwrap_or_default();
    let filter_error = if filter.chars().count() > FILTER_MAX {
        Some(format!("A filter has at most {FILTER_MAX} characters."))
    } else if filter.chars().any(char::is_control) {
        Some("A filter cannot contain control characters.".to_string())
    } else {
        None
    };
    let v = WorkspaceView { shell: Shell::new(&caller, &req, "documents"), data, preview, filter, filter_error };
    page(&v.shell, &v)
}

/// A page of a text file, and the text to draw it from (a table's header put before a later page).
async fn text_page(
    st: &AppState,
    caller: &PageCaller,
    id: &str,
    path: &str,
    offset: u64,
    lines: u64,
    table: bool,
) -> Result<(TextPage, String), DocumentError> {
    let page = service::text(st, &caller.caller, id, path, offset, lines).await?;
    if page.cut {
        return Ok((page, String::new()));
    }
    let drawn = if table && offset > 0 && page.lines > 0 {
        let header = service::text(st, &caller.caller, id, path, 0, 1).await?;
        format!("{}\n{}", header.text, page.text)
    } else {
        page.text.clone()
    };
    Ok((page, drawn))
}

pub async fn file(
    st: Data<AppState>,
    caller: PageCaller,
    id: Path<String>,
    query: Query<FileQuery>,
) -> Result<HttpResponse, PageError> {
    let (path, bytes) = service::file(&st, &caller, &id, &query.path).await.map_err(AppError::from)?;
    Ok(serving::respond(path.relative(), bytes, query.download()))
}

/// "1 file", "12 files".
pub fn files(n: &u64) -> String {
    if *n == 1 {
        "1 file".to_string()
    } else {
        format!("{n} files")
    }
}

/// Bytes in words: "512 B", "3.4 KiB", "1.2 MiB".
pub fn size(bytes: &u64) -> String {
    let b = *bytes as f64;
    if *bytes < 1024 {
        format!("{bytes} B")
    } else if b < 1024.0 * 1024.0 {
        format!("{:.1} KiB", b / 1024.0)
    } else if b < 1024.0 * 1024.0 * 1024.0 {
        format!("{:.1} MiB", b / 1024.0 / 1024.0)
    } else {
        format!("{:.1} GiB", b / 1024.0 / 1024.0 / 1024.0)
    }
}

/// The tiles partial, shared by `/documents`, a workspace's page and a conversation's.
#[derive(Template)]
#[template(path = "documents/_tiles.html")]
pub struct TilesPartial<'a> {
    pub tiles: &'a [Tile],
    pub id: &'a str,
}

impl TilesPartial<'_> {
    pub fn open_url(&self, t: &Tile) -> String {
        paths::document_preview(&t.file.workspace_id, &t.file.path, 0)
    }
    pub fn download_url(&self, t: &Tile) -> String {
        paths::document_file(&t.file.workspace_id, &t.file.path, true)
    }
}

impl DocumentsView {
    pub fn tiles_html(&self, tiles: &[Tile], id: &str) -> String {
        TilesPartial { tiles, id }.render().unwrap_or_default()
    }
}

impl WorkspaceView {
    pub fn tiles_html(&self) -> String {
        TilesPartial { tiles: &self.data.tiles, id: "workspace-tiles" }.render().unwrap_or_default()
    }
}

/// When a file changed, in words read at a glance, with the full time kept for hovering.
pub struct When {
    /// `3 min ago`.
    pub ago: String,
    /// `2026-12-03 11:30:05 UTC`.
    pub full: String,
    /// The ISO-8601 time, for `<time datetime>`.
    pub iso: String,
}

/// `iso` (RFC 3339) said relative to `now`; none when it does not parse.
pub fn when(iso: &str, now: OffsetDateTime) -> Option<When> {
    let at = OffsetDateTime::parse(iso, &Rfc3339).ok()?.to_offset(time::UtcOffset::UTC);
    let ms = i64::try_from((now - at).whole_milliseconds()).unwrap_or(i64::MAX);
    let full = at.format(format_description!("[year]-[month]-[day] [hour]:[minute]:[second] UTC")).ok()?;
    Some(When { ago: ago(ms), full, iso: iso.to_string() })
}

/// [`when`] relative to this moment.
pub fn since(iso: &Option<String>) -> Option<When> {
    when(iso.as_deref()?, OffsetDateTime::now_utc())
}

/// What a folder of a workspace's tree holds: "3 files", or, when no file below it was listed,
/// why: "empty", or "not listed" when the listing stopped above its files.
pub fn folder_files(node: &TreeNode, listing: &ListingStatus) -> String {
    if node.file_count > 0 {
        files(&node.file_count)
    } else if listing.limited && node.depth + 1 >= MAX_DEPTH {
        format!("not listed: deeper than {MAX_DEPTH} levels")
    } else if !listing.complete {
        "none listed".to_string()
    } else {
        "empty".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_is_said_in_words_and_in_full() {
        let now = OffsetDateTime::parse("2026-12-03T11:33:06Z", &Rfc3339).expect("now");
        let w = when("2026-12-03T11:30:05.123+00:00", now).expect("parses");
        assert_eq!((w.ago.as_str(), w.full.as_str()), ("3 min ago", "2026-12-03 11:30:05 UTC"));
        assert!(when("yesterday", now).is_none());
    }

    #[test]
    fn a_filter_says_what_it_counted_and_when_it_read_only_the_newest_workspaces() {
        let all = Reach { searched: 37, visible: 37, files: 3, workspaces: 2, hits_shown: 3 };
        assert_eq!(
            reach_words(&all, "q3", "person", "images", "", true),
            "3 images attached by a person match “q3” in 2 of the 37 workspaces you may see."
        );
        assert_eq!(
            reach_words(&Reach { files: 1, ..all.clone() }, "", "", "code", "", false),
            "1 code file in 2 of the 37 workspaces you may see."
        );
        let cut = Reach { searched: 500, visible: 812, files: 450, workspaces: 9, hits_shown: 200 };
        assert_eq!(
            reach_words(&cut, "log", "", "", "size", true),
            "450 files match “log” in 9 of the 500 most recently changed workspaces; you may see 812, and a \
             filter reads at most 500. The first 200 (largest first) are shown."
        );
    }
}
