//! HTML: files a person attaches to a conversation they may see (issue 49). The page's drop zone
//! and file picker send each file as the body of `POST /conversations/{id}/files?name=…`
//! (`application/octet-stream`, the CSRF token in its header, progress from the browser's
//! upload events); the answer is one line for the page's list, a refusal in words with its status.
//! The conversations service decides who may see the conversation (cross-organization: 404); the
//! workspaces service writes the file as a recorded operation naming the person.

use actix_web::http::StatusCode;
use actix_web::web::{Data, Path, Payload, Query};
use actix_web::{HttpMessage, HttpRequest, HttpResponse};
use askama::Template;
use futures_util::StreamExt;
use serde::Deserialize;

use crate::agents::conversations::service as conversations;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::sandbox::workspaces::uploads::{self, MAX_BYTES};
use crate::state::AppState;
use crate::web::{render_status, AppError, Kind, PageCaller, PageError};

#[derive(Deserialize)]
pub struct NameQuery {
    #[serde(default)]
    pub name: String,
}

/// One line of the page's list of attached files: the file stored, or why not.
#[derive(Template)]
#[template(path = "conversations/_upload.html")]
pub struct UploadLine {
    pub name: String,
    /// Where it landed (`uploads/…`), on success.
    pub path: Option<String>,
    pub size: u64,
    pub error: Option<String>,
}

fn refused(status: StatusCode, name: &str, message: impl Into<String>) -> Result<HttpResponse, PageError> {
    render_status(status, &UploadLine { name: name.to_string(), path: None, size: 0, error: Some(message.into()) })
}

fn too_large(name: &str) -> Result<HttpResponse, PageError> {
    refused(
        StatusCode::PAYLOAD_TOO_LARGE,
        name,
        format!("{name} is larger than {} MiB, the most one file may be.", MAX_BYTES / 1024 / 1024),
    )
}

pub async fn upload(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    id: Path<String>,
    q: Query<NameQuery>,
    mut body: Payload,
) -> Result<HttpResponse, PageError> {
    // Who may see the conversation first: nothing about a hidden one is said.
    let o = conversations::overview(&st, &caller, &id).await?;
    let name = q.name.clone();
    let path = match uploads::path_of(&name) {
        Ok(p) => p,
        Err(m) => return refused(StatusCode::UNPROCESSABLE_ENTITY, &name, m),
    };
    if req.content_type() != "application/octet-stream" {
        return refused(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            &name,
            "Send the file's bytes as application/octet-stream.",
        );
    }
    let declared = req
        .headers()
        .get(actix_web::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > MAX_BYTES) {
        return too_large(&name);
    }
    let mut bytes = Vec::with_capacity(declared.unwrap_or(0));
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| AppError::new(Kind::BadRequest, format!("The file could not be read: {e}")))?;
        if bytes.len() + chunk.len() > MAX_BYTES {
            return too_large(&name);
        }
        bytes.extend_from_slice(&chunk);
    }
    let Some(run) = o.runs.first() else {
        return refused(
            StatusCode::CONFLICT,
            &name,
            "This conversation has no run yet, so it has no workspace: attach files once the agent has taken a turn.",
        );
    };
    match uploads::attach(&st, &caller, run, &o.agent, &path, &bytes).await {
        Ok(()) => render_status(
            StatusCode::OK,
            &UploadLine { name, path: Some(path.relative().to_string()), size: bytes.len() as u64, error: None },
        ),
        Err(e @ WorkspaceError::Internal(_)) => Err(AppError::from(e).into()),
        Err(e) => {
            let e = AppError::from(e);
            refused(e.kind.status(), &name, e.public_detail())
        }
    }
}

impl UploadLine {
    pub fn size_ref(&self) -> &u64 {
        &self.size
    }
}
