//! HTML: deleting an agent or a conversation, one confirmation for both — a dialog for htmx,
//! else a page — saying how many workspaces and sandboxes go and at which hosts; the post deletes
//! it with its workspaces (docs/design.md §10): an agent with its conversations, runs and workspaces of
//! every scope, a conversation with its runs and workspaces.

use actix_web::web::{Data, Path};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use crate::sandbox::workspaces::removal::{self, Preview, Removal};
use crate::state::AppState;
use crate::web::{page, paths, redirect_with_flash, render, PageCaller, PageError, Shell};
use crate::words::count;

/// What is being deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deleting {
    Agent,
    Conversation,
}

impl Deleting {
    /// `agent`, `conversation`: in the confirmation's words and its elements' ids.
    pub fn noun(self) -> &'static str {
        match self {
            Deleting::Agent => "agent",
            Deleting::Conversation => "conversation",
        }
    }
    /// The flash after it starts with this.
    fn name(self) -> &'static str {
        match self {
            Deleting::Agent => "Agent",
            Deleting::Conversation => "Conversation",
        }
    }
    /// The navigation's section.
    fn section(self) -> &'static str {
        match self {
            Deleting::Agent => "agents",
            Deleting::Conversation => "conversations",
        }
    }
    /// Where the flash is shown once it is gone: its list.
    fn list(self) -> &'static str {
        match self {
            Deleting::Agent => paths::AGENTS,
            Deleting::Conversation => paths::CONVERSATIONS,
        }
    }
}

/// The confirmation: what goes, and where.
#[derive(Template)]
#[template(path = "agents/_delete_form.html")]
pub struct DeleteForm {
    pub csrf_token: String,
    pub id: String,
    pub what: Deleting,
    pub preview: Preview,
}

impl DeleteForm {
    pub fn is_agent(&self) -> bool {
        self.what == Deleting::Agent
    }
    pub fn action(&self) -> String {
        match self.what {
            Deleting::Agent => paths::agent_delete(&self.id),
            Deleting::Conversation => paths::conversation_delete(&self.id),
        }
    }
    pub fn back(&self) -> String {
        match self.what {
            Deleting::Agent => paths::agent(&self.id),
            Deleting::Conversation => paths::conversation(&self.id),
        }
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

/// The confirmation as a modal dialog (htmx puts it into the page's dialog slot).
#[derive(Template)]
#[template(path = "agents/_delete_dialog.html")]
pub struct DeleteDialog {
    pub form: DeleteForm,
}

/// The confirmation as a page of its own (without JavaScript, or opened directly).
#[derive(Template)]
#[template(path = "agents/delete.html")]
pub struct DeletePage {
    pub shell: Shell,
    pub form: DeleteForm,
}

async fn confirmation(
    st: &AppState,
    caller: &PageCaller,
    req: &HttpRequest,
    id: String,
    what: Deleting,
) -> Result<HttpResponse, PageError> {
    let preview = match what {
        Deleting::Agent => removal::agent_preview(st, caller, &id).await?,
        Deleting::Conversation => removal::conversation_preview(st, caller, &id).await?,
    };
    let form = DeleteForm { csrf_token: caller.csrf_token.clone(), id, what, preview };
    if crate::web::htmx::wants_fragment(req) {
        return render(&DeleteDialog { form });
    }
    let shell = Shell::new(caller, req, what.section());
    page(&shell, &DeletePage { shell: shell.clone(), form })
}

/// The flash after a delete: what went, and what is still pending removal.
fn words(what: Deleting, r: &Removal) -> String {
    let mut s = format!("{} deleted with {}.", what.name(), count(r.workspaces, "workspace", "workspaces"));
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

pub async fn agent_form(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    id: Path<String>,
) -> Result<HttpResponse, PageError> {
    confirmation(&st, &caller, &req, id.into_inner(), Deleting::Agent).await
}

pub async fn conversation_form(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    id: Path<String>,
) -> Result<HttpResponse, PageError> {
    confirmation(&st, &caller, &req, id.into_inner(), Deleting::Conversation).await
}

pub async fn agent(st: Data<AppState>, caller: PageCaller, id: Path<String>) -> Result<HttpResponse, PageError> {
    let r = removal::delete_agent(&st, &caller, &id).await?;
    Ok(redirect_with_flash(Deleting::Agent.list(), "success", words(Deleting::Agent, &r)))
}

pub async fn conversation(st: Data<AppState>, caller: PageCaller, id: Path<String>) -> Result<HttpResponse, PageError> {
    let r = removal::delete_conversation(&st, &caller, &id).await?;
    Ok(redirect_with_flash(Deleting::Conversation.list(), "success", words(Deleting::Conversation, &r)))
}
