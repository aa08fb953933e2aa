//! The workspace page's snapshots (Documents → a workspace): the list (time, size, files), "Take a
//! snapshot", each one's download and "Restore into a new run". An htmx fragment the page loads;
//! every refusal is a message in it.

use actix_web::web::{self, Data, Path};
use actix_web::HttpResponse;
use askama::Template;

use super::model::Snapshot;
use super::service;
use super::store::Pending;
use crate::agents::runs::service::{self as runs, RunInput};
use crate::state::AppState;
use crate::web::error::AppError;
use crate::web::paths;
use crate::web::PageCaller;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/documents/workspaces/{id}/snapshots", web::get().to(list))
        .route("/documents/workspaces/{id}/snapshots", web::post().to(take))
        .route("/documents/workspaces/{id}/snapshots/{snapshot_id}/restore", web::post().to(restore));
}

#[derive(Template)]
#[template(path = "snapshots/_list.html")]
pub struct ListView {
    pub workspace_id: String,
    pub snapshots: Vec<Snapshot>,
    /// Taken when a run finished, not in the store yet (the last error of each).
    pub pending: Vec<Pending>,
    pub message: Option<String>,
    pub error: Option<String>,
    /// "Restore into a new run" is offered: the caller's role may start runs (operators and
    /// above; a member is refused, so not shown it).
    pub may_restore: bool,
}

impl ListView {
    pub fn size(&self, s: &Snapshot) -> String {
        crate::documents::pages::size(&(s.size_bytes.max(0) as u64))
    }
    pub fn files(&self, s: &Snapshot) -> String {
        crate::documents::pages::files(&(s.file_count.max(0) as u64))
    }
    pub fn taken_by(&self, s: &Snapshot) -> &'static str {
        if s.taken_by == "finish" {
            "when a run finished"
        } else {
            "on demand"
        }
    }
    pub fn take_url(&self) -> String {
        paths::document_workspace_snapshots(&self.workspace_id)
    }
    pub fn restore_url(&self, s: &Snapshot) -> String {
        paths::document_workspace_snapshot_restore(&self.workspace_id, &s.id)
    }
    pub fn download_url(&self, s: &Snapshot) -> String {
        paths::snapshot_archive(&s.id)
    }
    pub fn attempts(&self, p: &Pending) -> String {
        crate::words::count(p.attempts.max(0) as usize, "attempt", "attempts")
    }
}

fn html(v: &ListView) -> HttpResponse {
    match v.render() {
        Ok(body) => HttpResponse::Ok().content_type("text/html; charset=utf-8").body(body),
        Err(e) => HttpResponse::Ok()
            .content_type("text/html; charset=utf-8")
            .body(format!("<p class=\"alert alert-error\">{}</p>", AppError::from(e).public_detail())),
    }
}

/// The list, with a message or an error above it.
async fn view(
    st: &AppState,
    caller: &PageCaller,
    id: &str,
    message: Option<String>,
    error: Option<String>,
) -> HttpResponse {
    let listed =
        async { Ok::<_, AppError>((service::list(st, caller, id).await?, service::pending_of(st, caller, id).await?)) };
    match listed.await {
        Ok((snapshots, pending)) => html(&ListView {
            workspace_id: id.to_string(),
            snapshots,
            pending,
            message,
            error,
            may_restore: caller.role.can_see_sandboxes(),
        }),
        Err(e) => html(&ListView {
            workspace_id: id.to_string(),
            snapshots: Vec::new(),
            pending: Vec::new(),
            message: None,
            error: Some(e.public_detail()),
            may_restore: false,
        }),
    }
}

async fn list(st: Data<AppState>, caller: PageCaller, id: Path<String>) -> HttpResponse {
    view(&st, &caller, &id, None, None).await
}

async fn take(st: Data<AppState>, caller: PageCaller, id: Path<String>) -> HttpResponse {
    match service::take_on_demand(&st, &caller, &id).await {
        Ok(s) => view(&st, &caller, &id, Some(format!("Snapshot of {} saved.", s.time_label())), None).await,
        Err(e) => view(&st, &caller, &id, None, Some(AppError::from(e).public_detail())).await,
    }
}

async fn restore(st: Data<AppState>, caller: PageCaller, ids: Path<(String, String)>) -> HttpResponse {
    let (id, snapshot_id) = ids.into_inner();
    let started = async {
        let (agent_id, conversation_id) = service::visible(&st, &caller, &id).await.map_err(AppError::from)?;
        let s = service::get(&st, &caller, &snapshot_id).await.map_err(AppError::from)?;
        let input = RunInput {
            agent_id: agent_id.unwrap_or_default(),
            conversation_id,
            started_by: "member".into(),
            user_id: Some(caller.user_id.clone()),
            trigger_as_creator: false,
            channel_sender: None,
            manifest: None,
            snapshot_id: Some(s.id.clone()),
            session_state: None,
        };
        let run = runs::create(&st, &caller, input).await.map_err(AppError::from)?;
        Ok::<String, AppError>(format!("Run {} starts from the snapshot of {}.", run.id, s.time_label()))
    };
    match started.await {
        Ok(m) => view(&st, &caller, &id, Some(m), None).await,
        Err(e) => view(&st, &caller, &id, None, Some(e.public_detail())).await,
    }
}
