//! HTML: deleting an agent — the confirmation (a dialog for htmx, else a page) says how many
//! workspaces and sandboxes go and at which hosts; the post deletes the agent with its
//! conversations, runs and workspaces of every scope (DESIGN.md §10).

use actix_web::web::{Data, Path};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use super::conversation_delete::words;
use crate::sandbox::workspaces::removal::{self, Preview};
use crate::state::AppState;
use crate::web::{page, paths, redirect_with_flash, render, PageCaller, PageError, Shell};
use crate::words::count;

/// The confirmation: what goes, and where.
#[derive(Template)]
#[template(path = "agents/_delete_form.html")]
pub struct DeleteForm {
    pub csrf_token: String,
    pub id: String,
    pub preview: Preview,
}

impl DeleteForm {
    pub fn action(&self) -> String {
        paths::agent_delete(&self.id)
    }
    pub fn back(&self) -> String {
        paths::agent(&self.id)
    }
    pub fn workspaces(&self) -> String {
        count(self.preview.workspaces, "workspace", "workspaces")
    }
    pub fn sandboxes(&self) -> String {
        count(self.preview.sandboxes, "sandbox", "sandboxes")
    }
    /// “a”, “b”
    pub fn hosts(&self) -> String {
        self.preview.hosts.iter().map(|h| format!("“{h}”")).collect::<Vec<_>>().join(", ")
    }
}

#[derive(Template)]
#[template(path = "agents/_delete_dialog.html")]
pub struct DeleteDialog {
    pub form: DeleteForm,
}

#[derive(Template)]
#[template(path = "agents/delete.html")]
pub struct DeletePage {
    pub shell: Shell,
    pub form: DeleteForm,
}

pub async fn delete_form(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    id: Path<String>,
) -> Result<HttpResponse, PageError> {
    let preview = removal::agent_preview(&st, &caller, &id).await?;
    let form = DeleteForm { csrf_token: caller.csrf_token.clone(), id: id.into_inner(), preview };
    if crate::web::htmx::wants_fragment(&req) {
        return render(&DeleteDialog { form });
    }
    let shell = Shell::new(&caller, &req, "agents");
    page(&shell, &DeletePage { shell: shell.clone(), form })
}

pub async fn delete(st: Data<AppState>, caller: PageCaller, id: Path<String>) -> Result<HttpResponse, PageError> {
    let r = removal::delete_agent(&st, &caller, &id).await?;
    Ok(redirect_with_flash(paths::AGENTS, "success", words("Agent", &r)))
}
