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
use super::model::{DocumentsPage, FileKind, Tile, WorkspaceDocuments};
use super::rendering::{self, Rendered, Table};
use super::service;
use super::serving;
use super::thumbnails::kind_of;
use crate::sandbox::operations::pages::ago;
use crate::state::AppState;
use crate::web::{page, paths, AppError, PageCaller, PageError, Shell};

#[derive(Template)]
#[template(path = "documents/index.html")]
pub struct DocumentsView {
    pub shell: Shell,
    pub q: String,
    pub who: String,
    pub data: Option<DocumentsPage>,
    /// A query that could not be used, said inline.
    pub error: Option<String>,
}

impl DocumentsView {
    pub fn next_page(&self) -> Option<String> {
        let cursor = self.data.as_ref()?.next_cursor.as_deref()?;
        Some(paths::documents(&self.q, &self.who, Some(cursor)))
    }
    pub fn is_empty(&self) -> bool {
        self.data.as_ref().is_none_or(|d| d.groups.is_empty())
    }
    pub fn filter_path(&self, who: &str) -> String {
        paths::documents(&self.q, who, None)
    }
    pub fn who_is(&self, who: &str) -> &'static str {
        if self.who == who || (who == "anyone" && self.who.is_empty()) {
            "page"
        } else {
            "false"
        }
    }
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
    let (data, error) = match service::list(&st, &caller, query.into()).await {
        Ok(d) => (Some(d), None),
        Err(DocumentError::Invalid(f)) => (None, Some(AppError::invalid(f).detail)),
        Err(e) => return Err(AppError::from(e).into()),
    };
    let v = DocumentsView { shell: Shell::new(&caller, &req, "documents"), q, who, data, error };
    page(&v.shell, &v)
}

/// `?path=` opens a file in the preview pane; `whole=true` shows all of a text file.
#[derive(Debug, Default, Deserialize)]
pub struct PreviewQuery {
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub whole: Option<String>,
}

/// The preview pane's file.
pub struct Preview {
    pub path: String,
    pub kind: FileKind,
    /// A text's lines (the first ones unless the whole file was asked for).
    pub text: Option<String>,
    /// Markdown, a table or JSON drawn from the text.
    pub rendered: Option<Rendered>,
    pub whole: bool,
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

/// Lines a text preview shows before "Show the whole file".
const PREVIEW_LINES: u64 = 60;
/// Lines "the whole file" reads at most.
const WHOLE_LINES: u64 = 100_000;

#[derive(Template)]
#[template(path = "documents/workspace.html")]
pub struct WorkspaceView {
    pub shell: Shell,
    pub data: WorkspaceDocuments,
    pub preview: Option<Preview>,
}

impl WorkspaceView {
    pub fn file_url(&self, path: &str) -> String {
        paths::document_file(&self.data.workspace.id, path, false)
    }
    pub fn download_url(&self, path: &str) -> String {
        paths::document_file(&self.data.workspace.id, path, true)
    }
    pub fn open_url(&self, path: &str) -> String {
        paths::document_preview(&self.data.workspace.id, path, false)
    }
    pub fn whole_url(&self, path: &str) -> String {
        paths::document_preview(&self.data.workspace.id, path, true)
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
            let whole = matches!(query.whole.as_deref(), Some("true"));
            let mut p = Preview { path: path.to_string(), kind, text: None, rendered: None, whole, error: None };
            if kind == FileKind::Text {
                // A rendered preview reads the whole text (a table then shows its first rows).
                let lines = if whole || rendering::is_rendered(path) { WHOLE_LINES } else { PREVIEW_LINES };
                match service::text(&st, &caller, &id, path, lines).await {
                    Ok(t) => {
                        p.rendered = rendering::render(path, &t, whole);
                        p.text = Some(t);
                    }
                    Err(e) => p.error = Some(AppError::from(e).public_detail()),
                }
            }
            Some(p)
        }
    };
    let v = WorkspaceView { shell: Shell::new(&caller, &req, "documents"), data, preview };
    page(&v.shell, &v)
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
        paths::document_preview(&t.file.workspace_id, &t.file.path, false)
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
}
