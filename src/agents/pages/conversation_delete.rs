//! HTML: deleting a conversation — the confirmation (a dialog for htmx, else a page) says what is
//! removed and where; the post deletes it with its workspaces (DESIGN.md §10).

use actix_web::web::{Data, Path};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use crate::sandbox::workspaces::removal::{self, Preview, Removal};
use crate::state::AppState;
use crate::web::{page, paths, redirect_with_flash, render, PageCaller, PageError, Shell};
use crate::words::count;

/// The confirmation: what goes, and where.
#[derive(Template)]
#[template(path = "conversations/_delete_form.html")]
pub struct DeleteForm {
    pub csrf_token: String,
    pub id: String,
    pub preview: Preview,
}

impl DeleteForm {
    pub fn action(&self) -> String {
        paths::conversation_delete(&self.id)
    }
    pub fn back(&self) -> String {
        paths::conversation(&self.id)
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
#[template(path = "conversations/_delete_dialog.html")]
pub struct DeleteDialog {
    pub form: DeleteForm,
}

#[derive(Template)]
#[template(path = "conversations/delete.html")]
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
    let preview = removal::conversation_preview(&st, &caller, &id).await?;
    let form = DeleteForm { csrf_token: caller.csrf_token.clone(), id: id.into_inner(), preview };
    if crate::web::htmx::wants_fragment(&req) {
        return render(&DeleteDialog { form });
    }
    let shell = Shell::new(&caller, &req, "conversations");
    page(&shell, &DeletePage { shell: shell.clone(), form })
}

pub async fn delete(st: Data<AppState>, caller: PageCaller, id: Path<String>) -> Result<HttpResponse, PageError> {
    let r = removal::delete_conversation(&st, &caller, &id).await?;
    Ok(redirect_with_flash(paths::CONVERSATIONS, "success", words("Conversation", &r)))
}

/// The flash after a delete: what went, and what is still pending removal.
pub(super) fn words(what: &str, r: &Removal) -> String {
    let mut s = format!("{what} deleted with {}.", count(r.workspaces, "workspace", "workspaces"));
    if r.destroyed > 0 {
        s.push_str(&format!(
            " {} destroyed at {} host.",
            count(r.destroyed, "sandbox", "sandboxes"),
            if r.destroyed == 1 { "its" } else { "their" }
        ));
    }
    if r.pending > 0 {
        s.push_str(&format!(
            " {} could not be destroyed yet: pending removal, retried in the background (the connection's row on Sandboxes shows it).",
            count(r.pending, "sandbox", "sandboxes")
        ));
    }
    s
}
