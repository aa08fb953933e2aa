//! HTML: the conversations list and a conversation's page with its workspace state (polled
//! while the sandbox is being prepared).

use actix_web::http::StatusCode;
use actix_web::web::{Data, Path};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use crate::agents::model::{Agent, Conversation, Run};
use crate::agents::service::{self, ConversationSummary, LatestWorkspace};
use crate::sandbox::workspaces::model::WorkspaceState;
use crate::state::AppState;
use crate::web::htmx::wants_fragment;
use crate::web::{page, paths, render_status, see_other, PageCaller, PageError, Shell};

#[derive(Template)]
#[template(path = "conversations/index.html")]
pub struct ConversationsPage {
    pub shell: Shell,
    pub conversations: Vec<ConversationSummary>,
    pub can_see_agents: bool,
}

pub async fn conversations(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
) -> Result<HttpResponse, PageError> {
    let conversations = service::list_conversations(&st, &caller).await?;
    let p = ConversationsPage {
        shell: Shell::new(&caller, &req, "agents"),
        conversations,
        can_see_agents: caller.role.can_see_sandboxes(),
    };
    page(&p.shell, &p)
}

/// The workspace of the conversation's latest run; polls itself while it is being prepared.
#[derive(Template)]
#[template(path = "conversations/_workspace.html")]
pub struct WorkspacePartial {
    pub conversation_id: String,
    pub workspace: LatestWorkspace,
}

impl WorkspacePartial {
    /// `none`, `not_opened`, `preparing`, `open`, `lost` or `refused`.
    pub fn status(&self) -> &'static str {
        match &self.workspace {
            LatestWorkspace::NoRun => "none",
            LatestWorkspace::Known { state, .. } => state.as_str(),
            LatestWorkspace::Refused { .. } => "refused",
        }
    }
    pub fn is_preparing(&self) -> bool {
        matches!(self.workspace, LatestWorkspace::Known { state: WorkspaceState::Preparing, .. })
    }
    pub fn poll_path(&self) -> String {
        paths::conversation_workspace(&self.conversation_id)
    }
    pub fn run_id(&self) -> &str {
        match &self.workspace {
            LatestWorkspace::NoRun => "",
            LatestWorkspace::Known { run_id, .. } | LatestWorkspace::Refused { run_id, .. } => run_id,
        }
    }
    pub fn shared_with(&self) -> &'static str {
        match &self.workspace {
            LatestWorkspace::Known { scope, .. } => scope.access_label(),
            _ => "",
        }
    }
    pub fn carrier(&self) -> &'static str {
        match &self.workspace {
            LatestWorkspace::Known { backend, .. } if backend == "state" => {
                "a document in this console's database (files only)"
            }
            LatestWorkspace::Known { .. } => "a sandbox on the connection's host (files and a shell)",
            _ => "",
        }
    }
    pub fn runtime(&self) -> &str {
        match &self.workspace {
            LatestWorkspace::Known { runtime: Some(r), .. } => r,
            _ => "",
        }
    }
    pub fn refusal(&self) -> &str {
        match &self.workspace {
            LatestWorkspace::Refused { message, .. } => message,
            _ => "",
        }
    }
}

#[derive(Template)]
#[template(path = "conversations/show.html")]
pub struct ConversationPage {
    pub shell: Shell,
    pub conversation: Conversation,
    pub agent: Agent,
    pub member_emails: Vec<String>,
    pub runs: Vec<Run>,
    pub workspace: WorkspacePartial,
    pub can_edit_agent: bool,
}

pub async fn show(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    id: Path<String>,
) -> Result<HttpResponse, PageError> {
    let o = service::conversation_overview(&st, &caller, &id).await?;
    let p = ConversationPage {
        shell: Shell::new(&caller, &req, "agents"),
        workspace: WorkspacePartial { conversation_id: o.conversation.id.clone(), workspace: o.workspace },
        conversation: o.conversation,
        agent: o.agent,
        member_emails: o.member_emails,
        runs: o.runs,
        can_edit_agent: caller.role.can_edit_agents(),
    };
    page(&p.shell, &p)
}

/// The workspace fragment the conversation page polls.
pub async fn workspace_partial(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    id: Path<String>,
) -> Result<HttpResponse, PageError> {
    if !wants_fragment(&req) {
        return Ok(see_other(&paths::conversation(&id)));
    }
    let workspace = service::conversation_workspace(&st, &caller, &id).await?;
    render_status(StatusCode::OK, &WorkspacePartial { conversation_id: id.into_inner(), workspace })
}
