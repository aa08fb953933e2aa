//! HTML: the agents table at `/agents` and the agent form (server-rendered; htmx refreshes the
//! *Runtime* and *Session scope* fields); the conversations pages in [`conversations`].

pub mod conversations;
pub mod files;

use actix_web::http::StatusCode;
use actix_web::web::{Data, Form, Path, Query};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;
use serde::Deserialize;

use self::files::{files_text, parse_files};
use super::model::{Agent, Backend};
use super::service::{self, AgentInput, FormOptions, RuntimeChoice};
use crate::sandbox::connections::model::Connection;
use crate::sandbox::workspaces::key::Scope;
use crate::state::AppState;
use crate::web::{
    page, page_status, paths, redirect_with_flash, render_status, see_other, AppError, FieldErrors, Kind, PageCaller,
    PageError, Shell,
};

use crate::web::htmx::wants_fragment;

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

pub async fn index(st: Data<AppState>, caller: PageCaller, req: HttpRequest) -> Result<HttpResponse, PageError> {
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

fn form_of(caller: &PageCaller, form: service::AgentForm) -> FormPartial {
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
    caller: &PageCaller,
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
    caller: &PageCaller,
    req: &HttpRequest,
    status: StatusCode,
    form: FormPartial,
) -> Result<HttpResponse, PageError> {
    if wants_fragment(req) {
        return render_status(status, &form);
    }
    let p = FormPage { shell: Shell::new(caller, req, "agents"), form };
    page_status(status, &p.shell, &p)
}

pub async fn new_form(st: Data<AppState>, caller: PageCaller, req: HttpRequest) -> Result<HttpResponse, PageError> {
    let form = service::agent_form(&st, &caller, None).await?;
    show_form(&caller, &req, StatusCode::OK, form_of(&caller, form))
}

pub async fn edit_form(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    id: Path<String>,
) -> Result<HttpResponse, PageError> {
    let form = service::agent_form(&st, &caller, Some(&id)).await?;
    show_form(&caller, &req, StatusCode::OK, form_of(&caller, form))
}

async fn saved_or_form(
    st: &AppState,
    caller: &PageCaller,
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
    caller: PageCaller,
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
    caller: PageCaller,
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
    caller: PageCaller,
    req: HttpRequest,
    q: Query<RuntimeQuery>,
) -> Result<HttpResponse, PageError> {
    if !wants_fragment(&req) {
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
    _caller: PageCaller,
    req: HttpRequest,
    q: Query<ScopeQuery>,
) -> Result<HttpResponse, PageError> {
    if !wants_fragment(&req) {
        return Ok(see_other(paths::AGENTS));
    }
    render_status(StatusCode::OK, &ScopeFieldPartial { selected: q.into_inner().scope, error: None })
}
