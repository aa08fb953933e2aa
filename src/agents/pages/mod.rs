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
    /// What describes the select: its hint, and the warning the agent scope shows.
    pub fn hint_ids(&self) -> &'static str {
        if self.is_agent() {
            "agent-scope-hint agent-scope-warning"
        } else {
            "agent-scope-hint"
        }
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
    /// The one way the form is built, for a new agent, a saved one, or what was posted: `values`
    /// are what its fields show, `errors` the messages at them.
    fn build(
        caller: &PageCaller,
        agent_id: Option<String>,
        values: AgentForm,
        options: FormOptions,
        errors: FieldErrors,
    ) -> FormPartial {
        FormPartial {
            csrf_token: caller.csrf_token.clone(),
            agent_id,
            name: values.name,
            backend: values.backend,
            connection_id: values.connection_id,
            connections: options.connections,
            shell_enabled: values.shell_enabled.is_some(),
            skills: values.skills,
            manifest_files: values.manifest_files,
            runtime: RuntimeFieldPartial {
                choice: options.runtimes,
                selected: values.runtime,
                error: errors.get("runtime").map(str::to_string),
            },
            scope: ScopeFieldPartial { selected: values.scope, error: errors.get("scope").map(str::to_string) },
            errors,
        }
    }

    pub fn action(&self) -> String {
        paths::agent_save(self.agent_id.as_deref())
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

/// What the form posts, and what its fields show.
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct AgentForm {
    name: String,
    backend: String,
    connection_id: String,
    scope: String,
    runtime: String,
    shell_enabled: Option<String>,
    skills: String,
    manifest_files: String,
}

impl AgentForm {
    /// The fields of a saved agent, or of a new one (its backend chosen by the service).
    fn of(agent: Option<&Agent>, backend: Backend) -> AgentForm {
        AgentForm {
            name: agent.map(|a| a.name.clone()).unwrap_or_default(),
            backend: backend.as_str().to_string(),
            connection_id: agent.and_then(|a| a.connection_id.clone()).unwrap_or_default(),
            scope: agent.map(|a| a.scope.as_str()).unwrap_or(Scope::Conversation.as_str()).to_string(),
            runtime: agent.and_then(|a| a.runtime.clone()).unwrap_or_default(),
            shell_enabled: agent.is_none_or(|a| a.shell_enabled).then(|| "on".to_string()),
            skills: agent.map(|a| files_text(&a.skills)).unwrap_or_default(),
            manifest_files: agent.map(|a| files_text(&a.manifest_files)).unwrap_or_default(),
        }
    }

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

/// The form of a saved or new agent, as the service describes it.
fn form_of(caller: &PageCaller, form: service::AgentForm) -> FormPartial {
    let values = AgentForm::of(form.agent.as_ref(), form.backend);
    let id = form.agent.map(|a| a.id);
    FormPartial::build(caller, id, values, form.options, FieldErrors::new())
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
            let form = FormPartial::build(caller, id, f, options, e.fields);
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

#[cfg(test)]
mod tests {
    use askama::Template;

    use super::{FormPartial, RuntimeFieldPartial, ScopeFieldPartial};
    use crate::agents::service::RuntimeChoice;
    use crate::web::filters::aria;
    use crate::web::FieldErrors;

    #[test]
    fn every_message_of_the_form_is_named_by_its_control() {
        let mut errors = FieldErrors::new();
        for field in ["name", "backend", "connection_id", "skills", "manifest_files"] {
            errors.add(field, "Wrong.");
        }
        let form = FormPartial {
            csrf_token: "t".into(),
            agent_id: None,
            name: String::new(),
            backend: "service".into(),
            connection_id: String::new(),
            connections: Vec::new(),
            shell_enabled: true,
            skills: String::new(),
            manifest_files: String::new(),
            runtime: RuntimeFieldPartial {
                choice: RuntimeChoice { runtimes: vec!["python".into()], unavailable: None, is_state: false },
                selected: String::new(),
                error: Some("Not offered.".into()),
            },
            scope: ScopeFieldPartial { selected: "agent".into(), error: Some("Pick one.".into()) },
            errors,
        };
        let html = form.render().expect("renders");
        assert_eq!(aria::assert_wired(&html), 7, "{html}");
        assert!(html.contains(r#"action="/agents""#), "{html}");
    }
}
