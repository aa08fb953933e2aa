//! HTML: the conversations list and a conversation's page with the state of its latest run's
//! workspace (polled while the sandbox is being prepared). The conversation comes from the
//! conversations service, which decides who may see it; the workspace then from the workspaces
//! service.

use actix_web::http::StatusCode;
use actix_web::web::{Data, Path};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use crate::access::Caller;
use crate::agents::conversations::service::{self as conversations, ConversationSummary};
use crate::agents::model::{Agent, Conversation, Run};
use crate::documents::pages::TilesPartial;
use crate::documents::service as documents;
use crate::sandbox::workspaces::model::{RunWorkspace, WorkspaceState};
use crate::sandbox::workspaces::service as workspaces;
use crate::state::AppState;
use crate::vocabulary::scope::Scope;
use crate::web::htmx::wants_fragment;
use crate::web::{page, paths, render_status, see_other, AppError, PageCaller, PageError, Shell};

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
    let conversations = conversations::list(&st, &caller).await?;
    let p = ConversationsPage {
        shell: Shell::new(&caller, &req, "conversations"),
        conversations,
        can_see_agents: caller.role.can_see_sandboxes(),
    };
    page(&p.shell, &p)
}

/// The workspace of a conversation's latest run, from our rows only (never a host call).
#[derive(Debug)]
pub enum LatestWorkspace {
    /// The conversation has no run yet.
    NoRun,
    Known {
        run_id: String,
        state: WorkspaceState,
        scope: Scope,
        /// `sandboxd` or `state`.
        backend: String,
        runtime: Option<String>,
    },
    /// The run gets no workspace (a scope it cannot have, a switched-off connection, …).
    Refused { run_id: String, message: String },
}

/// The workspace of `run` (the latest of a conversation the caller was allowed to see).
async fn latest_workspace(st: &AppState, caller: &Caller, run: Option<&Run>) -> Result<LatestWorkspace, PageError> {
    let Some(run) = run else { return Ok(LatestWorkspace::NoRun) };
    let run_id = run.id.clone();
    Ok(match workspaces::of_visible_run(st, caller, &run.id).await? {
        RunWorkspace::Known(w) => {
            LatestWorkspace::Known { run_id, state: w.state, scope: w.scope, backend: w.backend, runtime: w.runtime }
        }
        RunWorkspace::NotYet { scope, backend } => {
            LatestWorkspace::Known { run_id, state: WorkspaceState::NotOpened, scope, backend, runtime: None }
        }
        RunWorkspace::Refused(e) => LatestWorkspace::Refused { run_id, message: AppError::from(e).public_detail() },
    })
}

/// The workspace of the conversation's latest run; polls itself while it is being prepared.
#[derive(Template)]
#[template(path = "conversations/_workspace.html")]
pub struct WorkspacePartial {
    pub conversation_id: String,
    pub workspace: LatestWorkspace,
    /// The latest run as people name it; none without a run.
    pub latest: Option<RunName>,
}

/// A run as the conversation page names it: `Run 3` (its place among the conversation's runs,
/// oldest first), who started it and when; its id only on hover.
#[derive(Debug)]
pub struct RunName {
    pub number: usize,
    pub id: String,
    /// Who started it, naming the person (`Run::starter_words`).
    pub started_by: String,
    pub created_at: i64,
}

impl RunName {
    /// The run at `index` of `runs` (newest first, as the conversation lists them).
    pub fn of(runs: &[Run], index: usize) -> Option<RunName> {
        let r = runs.get(index)?;
        Some(RunName {
            number: runs.len() - index,
            id: r.id.clone(),
            started_by: r.starter_words(),
            created_at: r.created_at,
        })
    }
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
    /// The newest files of the conversation's workspaces, as Documents draws them (empty: none).
    pub files_html: String,
    /// Operators and above read the operation log.
    pub can_see_log: bool,
    /// Operators and above, or the conversation's owner.
    pub can_delete: bool,
}

impl ConversationPage {
    /// The largest file a person may attach, as the drop zone checks it before sending.
    pub fn max_bytes(&self) -> usize {
        crate::sandbox::workspaces::uploads::MAX_BYTES
    }
    pub fn max_mib(&self) -> usize {
        self.max_bytes() / 1024 / 1024
    }
    pub fn log_path(&self) -> String {
        paths::operations_of_conversation(&self.conversation.id)
    }
}

pub async fn show(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    id: Path<String>,
) -> Result<HttpResponse, PageError> {
    let o = conversations::overview(&st, &caller, &id).await?;
    let workspace = latest_workspace(&st, &caller, o.runs.first()).await?;
    let can_delete =
        caller.role.can_see_sandboxes() || o.conversation.owner_user_id.as_deref() == Some(caller.user_id.as_str());
    let files_html = match documents::of_conversation(&st, &caller, &o.conversation.id).await {
        Ok(tiles) if !tiles.is_empty() => {
            TilesPartial { tiles: &tiles, id: "conversation-tiles" }.render().map_err(AppError::from)?
        }
        Ok(_) => String::new(),
        Err(e) => {
            tracing::warn!(error = %e, "a conversation's files could not be listed");
            String::new()
        }
    };
    let p = ConversationPage {
        files_html,
        can_delete,
        shell: Shell::new(&caller, &req, "conversations"),
        workspace: WorkspacePartial {
            conversation_id: o.conversation.id.clone(),
            workspace,
            latest: RunName::of(&o.runs, 0),
        },
        conversation: o.conversation,
        agent: o.agent,
        member_emails: o.member_emails,
        runs: o.runs,
        can_edit_agent: caller.role.can_edit_agents(),
        can_see_log: caller.role.can_see_sandboxes(),
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
    let runs = conversations::runs_of(&st, &caller, &id).await?;
    let workspace = latest_workspace(&st, &caller, runs.first()).await?;
    let latest = RunName::of(&runs, 0);
    render_status(StatusCode::OK, &WorkspacePartial { conversation_id: id.into_inner(), workspace, latest })
}
