//! HTML: the agents table at `/agents`, the agent form (server-rendered; htmx refreshes the
//! *Runtime* and *Session scope* fields), the conversations list and a conversation's page with
//! its workspace state (polled while the sandbox is being prepared).

use actix_web::http::StatusCode;
use actix_web::web::{Data, Form, Path, Query};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;
use serde::Deserialize;

use super::model::{Agent, Backend, Conversation, Run, WorkspaceFile};
use super::service::{self, AgentInput, ConversationSummary, FormOptions, LatestWorkspace, RuntimeChoice};
use crate::sandbox::connections::model::Connection;
use crate::sandbox::workspaces::key::Scope;
use crate::sandbox::workspaces::model::WorkspaceState;
use crate::startup::AppState;
use crate::web::{
    page, page_status, paths, redirect_with_flash, render_status, see_other, AppError, Caller, FieldErrors, Kind,
    PageError, Shell,
};

fn is_htmx(req: &HttpRequest) -> bool {
    req.headers().contains_key("hx-request")
}

// ---------------------------------------------------------------------------------------------
// The files textarea

/// The textarea format of an agent's skills and manifest files: each file starts with a line
/// `--- path` and the lines below it, up to the next such line, are its content (trailing blank
/// lines dropped, ending in one newline). A path ending in `/` is an empty folder.
pub fn parse_files(text: &str) -> Result<Vec<WorkspaceFile>, String> {
    let text = text.replace("\r\n", "\n");
    let mut files = Vec::new();
    let mut current: Option<(String, Vec<&str>)> = None;
    for (n, line) in text.split('\n').enumerate() {
        if line.trim_end() == "---" || line.starts_with("--- ") {
            if let Some(done) = current.take() {
                files.push(file_of(done)?);
            }
            let path = line.trim_end().strip_prefix("---").unwrap_or_default().trim();
            if path.is_empty() {
                return Err(format!("Line {}: write the file's path after “--- ”.", n + 1));
            }
            current = Some((path.to_string(), Vec::new()));
        } else if let Some((_, lines)) = current.as_mut() {
            lines.push(line);
        } else if !line.trim().is_empty() {
            return Err(format!("Line {}: start each file with a line “--- path”.", n + 1));
        }
    }
    if let Some(done) = current.take() {
        files.push(file_of(done)?);
    }
    Ok(files)
}

fn file_of((path, mut lines): (String, Vec<&str>)) -> Result<WorkspaceFile, String> {
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    if let Some(folder) = path.strip_suffix('/') {
        if !lines.is_empty() {
            return Err(format!("{path} ends in / so it is a folder, and a folder has no content."));
        }
        return Ok(WorkspaceFile { path: folder.to_string(), content: String::new(), is_dir: true });
    }
    let content = if lines.is_empty() { String::new() } else { format!("{}\n", lines.join("\n")) };
    Ok(WorkspaceFile { path, content, is_dir: false })
}

/// Files in the textarea format ([`parse_files`] reads it back).
pub fn files_text(files: &[WorkspaceFile]) -> String {
    let mut out = String::new();
    for f in files {
        if f.is_dir {
            out.push_str(&format!("--- {}/\n", f.path));
        } else {
            out.push_str(&format!("--- {}\n{}", f.path, f.content));
            if !f.content.is_empty() && !f.content.ends_with('\n') {
                out.push('\n');
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// The agents table

#[derive(Template)]
#[template(path = "agents/index.html")]
pub struct AgentsPage {
    pub shell: Shell,
    pub agents: Vec<Agent>,
    pub connections: Vec<Connection>,
    pub can_edit: bool,
}

impl AgentsPage {
    /// The connection column: none for a document, else the chosen one or the default.
    pub fn connection_label(&self, a: &Agent) -> String {
        if a.backend == Backend::State {
            return String::new();
        }
        match &a.connection_id {
            Some(id) => self.connections.iter().find(|c| &c.id == id).map(|c| c.name.clone()).unwrap_or_default(),
            None => "organization default".to_string(),
        }
    }
}

pub async fn index(st: Data<AppState>, caller: Caller, req: HttpRequest) -> Result<HttpResponse, PageError> {
    let listing = service::listing(&st, &caller).await?;
    let p = AgentsPage {
        shell: Shell::new(&caller, &req, "agents"),
        agents: listing.agents,
        connections: listing.connections,
        can_edit: caller.role.can_edit_agents(),
    };
    page(&p.shell, &p)
}

// ---------------------------------------------------------------------------------------------
// The agent form and its fields

/// One option of the *Runtime* select.
pub struct RuntimeOption {
    pub alias: String,
    /// False for a saved or typed alias the host does not allow right now.
    pub is_offered: bool,
}

/// The *Runtime* field: what the chosen connection's host allows right now.
#[derive(Template)]
#[template(path = "agents/_runtime_field.html")]
pub struct RuntimeFieldPartial {
    pub choice: RuntimeChoice,
    pub selected: String,
    pub error: Option<String>,
}

impl RuntimeFieldPartial {
    /// The host's runtimes, and the selected alias even when the host does not offer it (the
    /// input is kept; saving then says why).
    pub fn options(&self) -> Vec<RuntimeOption> {
        let mut out: Vec<RuntimeOption> =
            self.choice.runtimes.iter().map(|a| RuntimeOption { alias: a.clone(), is_offered: true }).collect();
        if !self.selected.is_empty() && !self.choice.runtimes.contains(&self.selected) {
            out.push(RuntimeOption { alias: self.selected.clone(), is_offered: false });
        }
        out
    }
    pub fn not_offered_note(&self) -> &'static str {
        if self.choice.is_state || self.choice.unavailable.is_some() {
            ""
        } else {
            " · not offered by this host right now"
        }
    }
}

/// The *Session scope* field; choosing `agent` shows who shares the files.
#[derive(Template)]
#[template(path = "agents/_scope_field.html")]
pub struct ScopeFieldPartial {
    pub selected: String,
    pub error: Option<String>,
}

impl ScopeFieldPartial {
    pub fn scopes(&self) -> [Scope; 5] {
        Scope::ALL
    }
    pub fn is_agent(&self) -> bool {
        Scope::parse(&self.selected) == Some(Scope::Agent)
    }
}

/// The agent form (its own page; htmx swaps it in place on 422).
#[derive(Template)]
#[template(path = "agents/_form.html")]
pub struct FormPartial {
    pub csrf_token: String,
    /// None for a new agent.
    pub agent_id: Option<String>,
    pub name: String,
    pub backend: String,
    pub connection_id: String,
    pub connections: Vec<Connection>,
    pub shell_enabled: bool,
    pub skills: String,
    pub manifest_files: String,
    pub runtime: RuntimeFieldPartial,
    pub scope: ScopeFieldPartial,
    pub errors: FieldErrors,
}

impl FormPartial {
    pub fn action(&self) -> String {
        match &self.agent_id {
            Some(id) => paths::agent(id),
            None => paths::AGENTS.to_string(),
        }
    }
    pub fn submit_label(&self) -> &'static str {
        if self.agent_id.is_some() {
            "Save and publish"
        } else {
            "Create agent"
        }
    }
    pub fn default_connection(&self) -> String {
        match self.connections.iter().find(|c| c.is_default) {
            Some(c) => format!("Organization default ({})", c.name),
            None => "Organization default (none registered yet)".to_string(),
        }
    }
    /// Everything the htmx field refreshes send along.
    pub fn runtime_include(&self) -> &'static str {
        "#agent-backend, #agent-connection, #agent-runtime"
    }
}

#[derive(Template)]
#[template(path = "agents/form_page.html")]
pub struct FormPage {
    pub shell: Shell,
    pub form: FormPartial,
}

impl FormPage {
    pub fn title(&self) -> String {
        match &self.form.agent_id {
            Some(_) => format!("Edit {}", self.form.name),
            None => "New agent".to_string(),
        }
    }
}

/// What the form posts.
#[derive(Deserialize)]
pub struct AgentForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    backend: String,
    #[serde(default)]
    connection_id: String,
    #[serde(default)]
    scope: String,
    #[serde(default)]
    runtime: String,
    #[serde(default)]
    shell_enabled: Option<String>,
    #[serde(default)]
    skills: String,
    #[serde(default)]
    manifest_files: String,
}

impl AgentForm {
    /// The service's input, or the textarea problems at their fields.
    fn input(&self) -> Result<AgentInput, FieldErrors> {
        let mut errors = FieldErrors::new();
        let skills = parse_files(&self.skills).unwrap_or_else(|m| {
            errors.add("skills", m);
            Vec::new()
        });
        let manifest_files = parse_files(&self.manifest_files).unwrap_or_else(|m| {
            errors.add("manifest_files", m);
            Vec::new()
        });
        errors.into_result()?;
        Ok(AgentInput {
            name: self.name.clone(),
            backend: self.backend.clone(),
            connection_id: Some(self.connection_id.clone()).filter(|c| !c.is_empty()),
            scope: self.scope.clone(),
            runtime: Some(self.runtime.clone()).filter(|r| !r.is_empty()),
            shell_enabled: self.shell_enabled.is_some(),
            skills,
            manifest_files,
        })
    }
}

fn form_of(caller: &Caller, form: service::AgentForm) -> FormPartial {
    let a = form.agent;
    let options = form.options;
    FormPartial {
        csrf_token: caller.csrf_token.clone(),
        agent_id: a.as_ref().map(|a| a.id.clone()),
        name: a.as_ref().map(|a| a.name.clone()).unwrap_or_default(),
        backend: form.backend.as_str().to_string(),
        connection_id: a.as_ref().and_then(|a| a.connection_id.clone()).unwrap_or_default(),
        connections: options.connections,
        shell_enabled: a.as_ref().is_none_or(|a| a.shell_enabled),
        skills: a.as_ref().map(|a| files_text(&a.skills)).unwrap_or_default(),
        manifest_files: a.as_ref().map(|a| files_text(&a.manifest_files)).unwrap_or_default(),
        runtime: RuntimeFieldPartial {
            choice: options.runtimes,
            selected: a.as_ref().and_then(|a| a.runtime.clone()).unwrap_or_default(),
            error: None,
        },
        scope: ScopeFieldPartial {
            selected: a.as_ref().map(|a| a.scope.as_str()).unwrap_or(Scope::Conversation.as_str()).to_string(),
            error: None,
        },
        errors: FieldErrors::new(),
    }
}

/// The posted form again, with its input kept and the messages at their fields.
fn form_again(
    caller: &Caller,
    f: AgentForm,
    id: Option<String>,
    options: FormOptions,
    errors: FieldErrors,
) -> FormPartial {
    FormPartial {
        csrf_token: caller.csrf_token.clone(),
        agent_id: id,
        name: f.name,
        backend: f.backend,
        connection_id: f.connection_id,
        connections: options.connections,
        shell_enabled: f.shell_enabled.is_some(),
        skills: f.skills,
        manifest_files: f.manifest_files,
        runtime: RuntimeFieldPartial {
            choice: options.runtimes,
            selected: f.runtime,
            error: errors.get("runtime").map(str::to_string),
        },
        scope: ScopeFieldPartial { selected: f.scope, error: errors.get("scope").map(str::to_string) },
        errors,
    }
}

fn show_form(
    caller: &Caller,
    req: &HttpRequest,
    status: StatusCode,
    form: FormPartial,
) -> Result<HttpResponse, PageError> {
    if is_htmx(req) {
        return render_status(status, &form);
    }
    let p = FormPage { shell: Shell::new(caller, req, "agents"), form };
    page_status(status, &p.shell, &p)
}

pub async fn new_form(st: Data<AppState>, caller: Caller, req: HttpRequest) -> Result<HttpResponse, PageError> {
    let form = service::agent_form(&st, &caller, None).await?;
    show_form(&caller, &req, StatusCode::OK, form_of(&caller, form))
}

pub async fn edit_form(
    st: Data<AppState>,
    caller: Caller,
    req: HttpRequest,
    id: Path<String>,
) -> Result<HttpResponse, PageError> {
    let form = service::agent_form(&st, &caller, Some(&id)).await?;
    show_form(&caller, &req, StatusCode::OK, form_of(&caller, form))
}

async fn saved_or_form(
    st: &AppState,
    caller: &Caller,
    req: &HttpRequest,
    f: AgentForm,
    id: Option<String>,
    result: Result<Agent, AppError>,
) -> Result<HttpResponse, PageError> {
    match result {
        Ok(a) => {
            let verb = if id.is_some() { "saved" } else { "created" };
            Ok(redirect_with_flash(
                paths::AGENTS,
                "success",
                format!("Agent “{}” {verb}: its next run uses these settings.", a.name),
            ))
        }
        Err(e) if e.kind == Kind::Invalid => {
            let conn = Some(f.connection_id.as_str()).filter(|c| !c.is_empty());
            let options = service::form_options(st, caller, &f.backend, conn).await?;
            let form = form_again(caller, f, id, options, e.fields);
            show_form(caller, req, StatusCode::UNPROCESSABLE_ENTITY, form)
        }
        Err(e) => Err(e.into()),
    }
}

pub async fn create(
    st: Data<AppState>,
    caller: Caller,
    req: HttpRequest,
    form: Form<AgentForm>,
) -> Result<HttpResponse, PageError> {
    let f = form.into_inner();
    let result = match f.input() {
        Ok(input) => service::create(&st, &caller, input).await,
        Err(errors) => Err(AppError::invalid(errors)),
    };
    saved_or_form(&st, &caller, &req, f, None, result).await
}

pub async fn update(
    st: Data<AppState>,
    caller: Caller,
    req: HttpRequest,
    id: Path<String>,
    form: Form<AgentForm>,
) -> Result<HttpResponse, PageError> {
    let f = form.into_inner();
    let result = match f.input() {
        Ok(input) => service::update(&st, &caller, &id, input).await,
        Err(errors) => Err(AppError::invalid(errors)),
    };
    saved_or_form(&st, &caller, &req, f, Some(id.into_inner()), result).await
}

#[derive(Deserialize)]
pub struct RuntimeQuery {
    #[serde(default)]
    backend: String,
    #[serde(default)]
    connection_id: String,
    #[serde(default)]
    runtime: String,
}

/// The *Runtime* field for the chosen backend and connection (htmx, on change).
pub async fn runtime_field_partial(
    st: Data<AppState>,
    caller: Caller,
    req: HttpRequest,
    q: Query<RuntimeQuery>,
) -> Result<HttpResponse, PageError> {
    if !is_htmx(&req) {
        return Ok(see_other(paths::AGENTS));
    }
    let q = q.into_inner();
    let conn = Some(q.connection_id.as_str()).filter(|c| !c.is_empty());
    let choice = service::runtime_choice(&st, &caller, &q.backend, conn).await?;
    render_status(StatusCode::OK, &RuntimeFieldPartial { choice, selected: q.runtime, error: None })
}

#[derive(Deserialize)]
pub struct ScopeQuery {
    #[serde(default)]
    scope: String,
}

/// The *Session scope* field for the chosen scope (htmx, on change): formatting only.
pub async fn scope_field_partial(
    _caller: Caller,
    req: HttpRequest,
    q: Query<ScopeQuery>,
) -> Result<HttpResponse, PageError> {
    if !is_htmx(&req) {
        return Ok(see_other(paths::AGENTS));
    }
    render_status(StatusCode::OK, &ScopeFieldPartial { selected: q.into_inner().scope, error: None })
}

// ---------------------------------------------------------------------------------------------
// Conversations

#[derive(Template)]
#[template(path = "conversations/index.html")]
pub struct ConversationsPage {
    pub shell: Shell,
    pub conversations: Vec<ConversationSummary>,
    pub can_see_agents: bool,
}

pub async fn conversations(st: Data<AppState>, caller: Caller, req: HttpRequest) -> Result<HttpResponse, PageError> {
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
    caller: Caller,
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
    caller: Caller,
    req: HttpRequest,
    id: Path<String>,
) -> Result<HttpResponse, PageError> {
    if !is_htmx(&req) {
        return Ok(see_other(&paths::conversation(&id)));
    }
    let workspace = service::conversation_workspace(&st, &caller, &id).await?;
    render_status(StatusCode::OK, &WorkspacePartial { conversation_id: id.into_inner(), workspace })
}

#[cfg(test)]
mod tests {
    use super::{files_text, parse_files};
    use crate::agents::model::WorkspaceFile;

    fn file(path: &str, content: &str) -> WorkspaceFile {
        WorkspaceFile { path: path.into(), content: content.into(), is_dir: false }
    }

    #[test]
    fn files_and_folders_are_read_from_the_textarea() {
        let text = "--- review/SKILL.md\r\n# Review\r\n\r\nRead the diff.\r\n\r\n--- data/\r\n--- empty.txt\r\n";
        let files = parse_files(text).expect("parses");
        assert_eq!(
            files,
            vec![
                file("review/SKILL.md", "# Review\n\nRead the diff.\n"),
                WorkspaceFile { path: "data".into(), content: String::new(), is_dir: true },
                file("empty.txt", ""),
            ]
        );
        assert_eq!(parse_files("").expect("empty"), vec![]);
        assert_eq!(parse_files("\n  \n").expect("blank"), vec![]);
    }

    #[test]
    fn the_textarea_reads_back_what_it_shows() {
        let files =
            vec![file("a.md", "one\ntwo\n"), WorkspaceFile { path: "d".into(), content: String::new(), is_dir: true }];
        assert_eq!(files_text(&files), "--- a.md\none\ntwo\n--- d/\n");
        assert_eq!(parse_files(&files_text(&files)).expect("round trip"), files);
    }

    #[test]
    fn problems_name_the_line() {
        assert!(parse_files("hello\n--- a.md\n").unwrap_err().contains("Line 1"));
        assert!(parse_files("--- a.md\nx\n---\n").unwrap_err().contains("Line 3"));
        assert!(parse_files("--- d/\ncontent\n").unwrap_err().contains("folder"));
    }
}
