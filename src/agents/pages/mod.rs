//! HTML: the agents table at `/agents` and the agent form (server-rendered; htmx refreshes the
//! *Runtime* and *Session scope* fields); the conversations pages in [`conversations`].

pub mod agent_delete;
pub mod conversation_delete;
pub mod conversations;
pub mod fields;
pub mod files;

use actix_web::http::StatusCode;
use actix_web::web::{Data, Form, Path};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;
use serde::Deserialize;

use self::fields::{RuntimeFieldPartial, ScopeFieldPartial};
use self::files::{files_text, parse_files};
use super::check::AgentInput;
use super::error::AgentError;
use super::model::{Agent, AgentSummary, Backend};
use super::service::{self, FormOptions};
use crate::sandbox::connections::model::Connection;
use crate::sandbox::workspaces::key::Scope;
use crate::state::AppState;
use crate::validate::FieldErrors;
use crate::web::htmx::wants_fragment;
use crate::web::{page, page_status, paths, redirect_with_flash, render_status, PageCaller, PageError, Shell};

// ---------------------------------------------------------------------------------------------
// The agents table

#[derive(Template)]
#[template(path = "agents/index.html")]
pub struct AgentsPage {
    pub shell: Shell,
    pub agents: Vec<AgentSummary>,
    pub connections: Vec<Connection>,
    pub can_edit: bool,
}

impl AgentsPage {
    /// The connection column: none for a document, else the chosen one or the default.
    pub fn connection_label(&self, a: &AgentSummary) -> String {
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
// The agent form (its htmx-refreshed fields in [`fields`])

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
                choice: options.runtimes.into(),
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
    /// A saved agent, and a role that may edit (and so delete) agents.
    pub can_delete: bool,
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
            // The checkbox is ticked by default and means nothing for a document: only a host's
            // agent sends it (the API refuses `true` with `state`).
            shell_enabled: (Backend::parse(&self.backend) != Some(Backend::State))
                .then_some(self.shell_enabled.is_some()),
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
    let can_delete = form.agent_id.is_some() && caller.role.can_edit_agents();
    let p = FormPage { shell: Shell::new(caller, req, "agents"), form, can_delete };
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
    result: Result<Agent, AgentError>,
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
        Err(e) => match e.fields() {
            Some(errors) => {
                let conn = Some(f.connection_id.as_str()).filter(|c| !c.is_empty());
                let options = service::form_options(st, caller, &f.backend, conn).await?;
                let form = FormPartial::build(caller, id, f, options, errors);
                show_form(caller, req, StatusCode::UNPROCESSABLE_ENTITY, form)
            }
            None => Err(e.into()),
        },
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
        Err(errors) => Err(AgentError::Invalid(errors)),
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
        Err(errors) => Err(AgentError::Invalid(errors)),
    };
    saved_or_form(&st, &caller, &req, f, Some(id.into_inner()), result).await
}

#[cfg(test)]
mod tests {
    use askama::Template;

    use super::fields::RuntimeOffer;
    use super::{FormPartial, RuntimeFieldPartial, ScopeFieldPartial};
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
                choice: RuntimeOffer { runtimes: vec!["python".into()], unavailable: None, is_state: false },
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
