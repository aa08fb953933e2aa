//! JSON: Documents for every member (`/api/v1/documents…`): the workspaces they may see, one
//! workspace's tree, and a file's bytes (served by us, after our authorization).

use actix_web::web::{Data, Json, Path, Query};
use actix_web::HttpResponse;
use serde::Deserialize;

use super::error::DocumentError;
use super::model::{DocumentsPage, WorkspaceDocuments};
use super::service::{self, ListQuery};
use super::serving;
use crate::api_route;
use crate::state::AppState;
use crate::web::openapi_errors::Problems;
use crate::web::route::ApiRoute;
use crate::web::{ApiCaller, ApiError};

pub fn routes() -> Vec<ApiRoute> {
    vec![
        api_route!(GET "/api/v1/documents" => list_documents),
        api_route!(GET "/api/v1/documents/workspaces/{id}" => workspace_documents),
        api_route!(GET "/api/v1/documents/workspaces/{id}/file" => document_file),
    ]
}

crate::error_subset! {
    /// Listing: a host that does not answer leaves its workspaces' listings empty, not refused.
    pub struct Listing: DocumentError only DocumentError::Invalid(_) | DocumentError::Internal(_)
}

crate::error_subset! {
    /// One workspace's tree: as listing, for a workspace the caller may see.
    pub struct Reading: DocumentError only DocumentError::NotFound(_) | DocumentError::Internal(_)
}

/// `?q=&who=&cursor=`.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DocumentsQuery {
    /// A search (at most 200 characters): a path substring, an agent's name, or an extension
    /// (`pdf`). Hits are listed flat in `hits`.
    pub q: Option<String>,
    /// Who put the files there: `anyone` (default), `person` (attached, under `uploads/`) or
    /// `agent` (everything else).
    pub who: Option<String>,
    /// The previous page's `next_cursor`.
    pub cursor: Option<String>,
    /// The order of each group's rows (and of `hits`): `newest` (default), `name` or `size`
    /// (largest first).
    pub sort: Option<String>,
    /// Only files of one type, by extension: `images`, `documents`, `data` or `code`.
    #[serde(rename = "type")]
    pub kind: Option<String>,
}

impl From<DocumentsQuery> for ListQuery {
    fn from(q: DocumentsQuery) -> Self {
        ListQuery { q: q.q, who: q.who, cursor: q.cursor, sort: q.sort, kind: q.kind }
    }
}

/// `?path=` (and `download=true` for an attachment whatever the type).
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct FileQuery {
    /// Relative to the workspace root or absolute under `/workspace`; `..` that climbs out, NUL
    /// bytes and paths over 1,024 bytes are refused.
    #[serde(default)]
    pub path: String,
    /// `true`: always an attachment.
    #[serde(default)]
    #[param(value_type = Option<bool>)]
    pub download: Option<String>,
}

impl FileQuery {
    pub fn download(&self) -> bool {
        matches!(self.download.as_deref(), Some("true" | "1" | "yes" | "on"))
    }
}

/// The raw bytes of a file.
#[derive(utoipa::ToSchema)]
#[schema(value_type = String, format = Binary)]
pub struct DocumentBytes(pub Vec<u8>);

/// What agents keep for the caller, one page of workspaces (at most 50, newest first): each
/// workspace's files grouped (loose files and attachments as rows, each other top-level folder as
/// one row, in `sort`'s order), the newest files as `tiles` (thumbnails for at most 24 images, the
/// first lines of text files), and with `q` the matches in `hits` (at most 200). A filter (`q`,
/// `who`, `type`) reads every workspace the caller may see (the 500 most recently changed at
/// most), leaves out the groups without a match, pages through the groups left, and says in
/// `reach` how many workspaces it read of how many, and how many files and workspaces match. Operators and above see every workspace of the
/// organization; a member those of conversations they are in, their own `user` workspaces and
/// `agent` workspaces of agents they talk to. Skills, the tool-output folder, `.agenticos/` and
/// toolchain folders (`node_modules`, `.git`, `.venv`, …) are never listed or counted. Hosts are
/// read through their archive routes (no sandbox is started): one request per host for up to 100
/// workspaces, at most 6 levels and 2,000 entries each; a cut or incomplete listing says so in
/// `listing.note`, and a workspace that cannot be read carries `listing.unreadable`.
#[utoipa::path(get, path = "/api/v1/documents", tag = "documents", params(DocumentsQuery),
    responses((status = 200, body = DocumentsPage, headers(("Server-Timing" = String, description = "`host;dur=…` the milliseconds spent waiting for hosts' listings, `app;dur=…` the rest"))),
        Problems<Listing>))]
pub async fn list_documents(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    query: Query<DocumentsQuery>,
) -> Result<HttpResponse, ApiError> {
    let started = std::time::Instant::now();
    let page = service::list(&st, &c, query.into_inner().into()).await?;
    let timing = server_timing(started.elapsed(), page.cost.host_time);
    Ok(HttpResponse::Ok().insert_header(("Server-Timing", timing)).json(page))
}

/// `Server-Timing`: the time waited for hosts' listings (`host`) and the rest of the handler
/// (`app`: our database reads, decoding, grouping, previews), in milliseconds.
fn server_timing(total: std::time::Duration, host: std::time::Duration) -> String {
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
    format!("host;dur={:.1};desc=\"sandbox hosts\", app;dur={:.1}", ms(host), ms(total.saturating_sub(host)))
}

/// One workspace the caller may see: its tree (folders first, by name, with counts), its files'
/// count and bytes, the newest as tiles, who may see it (`access_label`), whose it is
/// (`owner_name`, `user` scope only), where it is (`stored` or `on host <name>`), and for `state`
/// its bytes used and limit.
#[utoipa::path(get, path = "/api/v1/documents/workspaces/{id}", tag = "documents",
    params(("id" = String, Path, description = "the workspace's id")),
    responses((status = 200, body = WorkspaceDocuments), Problems<Reading>))]
pub async fn workspace_documents(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    id: Path<String>,
) -> Result<Json<WorkspaceDocuments>, ApiError> {
    Ok(Json(service::workspace(&st, &c, &id).await?))
}

/// A file's bytes, after our authorization: `Content-Type` inline only for png, jpeg, gif, webp
/// and pdf; anything else (svg and html included) is an `application/octet-stream` attachment.
/// Always `X-Content-Type-Options: nosniff` and `Content-Security-Policy: sandbox`; the name is
/// encoded per RFC 5987. A link planted in the workspace never leads outside it (the host refuses).
#[utoipa::path(get, path = "/api/v1/documents/workspaces/{id}/file", tag = "documents",
    params(("id" = String, Path, description = "the workspace's id"), FileQuery),
    responses((status = 200, body = DocumentBytes, content_type = "application/octet-stream", description = "the file's bytes"),
        Problems<DocumentError>))]
pub async fn document_file(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    id: Path<String>,
    query: Query<FileQuery>,
) -> Result<HttpResponse, ApiError> {
    let (path, bytes) = service::file(&st, &c, &id, &query.path).await?;
    Ok(serving::respond(path.relative(), bytes, query.download()))
}
