//! HTML: the agents table at `/agents` and the agent form (server-rendered; htmx refreshes the
//! *Runtime* and *Session scope* fields); the conversations pages in [`conversations`].

pub mod conversations;
pub mod delete;
pub mod fields;
pub mod files;
pub mod manifest_rows;
pub mod uploads;

use std::collections::BTreeMap;

use actix_web::http::StatusCode;
use actix_web::web::{Data, Form, Path};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;
use serde::Deserialize;

use self::fields::{RuntimeFieldPartial, ScopeFieldPartial};
use self::files::{files_text, parse_files};
use self::manifest_rows::EntryRow;
use super::check::AgentInput;
use super::error::AgentError;
use super::model::{Agent, AgentSummary, Backend};
use super::service::{self, FormOptions};
use crate::sandbox::connections::model::Connection;
use crate::sandbox::snapshots::model::Settings as SnapshotSettings;
use crate::sandbox::snapshots::service as snapshots;
use crate::state::AppState;
use crate::validate::FieldErrors;
use crate::vocabulary::scope::Scope;
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
    /// The manifest's entries, one row each.
    pub manifest_rows: Vec<EntryRow>,
    /// The vault secrets an environment variable may take (purpose `other`).
    pub secrets: Vec<crate::vault::model::Secret>,
    pub runtime: RuntimeFieldPartial,
    pub scope: ScopeFieldPartial,
    /// When a run's end takes a snapshot: `never`, `on_finish`, `on_finish_when_changed`.
    pub snapshots: String,
    /// How many snapshots of each workspace are kept, as shown (or typed).
    pub keep_last: String,
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
        let manifest_rows = values.rows();
        FormPartial {
            csrf_token: caller.csrf_token.clone(),
            agent_id,
            name: values.name,
            backend: values.backend,
            connection_id: values.connection_id,
            connections: options.connections,
            shell_enabled: values.shell_enabled.is_some(),
            manifest_rows,
            skills: values.skills,
            secrets: options.secrets,
            runtime: RuntimeFieldPartial {
                choice: options.runtimes.into(),
                selected: values.runtime,
                error: errors.get("runtime").map(str::to_string),
            },
            scope: ScopeFieldPartial { selected: values.scope, error: errors.get("scope").map(str::to_string) },
            snapshots: values.snapshots,
            keep_last: values.keep_last,
            errors,
        }
    }

    /// Whether `value` is the snapshot setting shown.
    pub fn is_snapshot_mode(&self, value: &str) -> bool {
        self.snapshots == value
    }

    /// The snapshot setting's choices: (value, label).
    pub fn snapshot_modes(&self) -> [(&'static str, &'static str); 3] {
        [
            ("never", "Never"),
            ("on_finish", "When a run finishes"),
            ("on_finish_when_changed", "When a run finishes, if the workspace changed"),
        ]
    }

    /// Whether the vault picker lists the secret `id` (one gone from the vault still shows).
    pub fn is_listed_secret(&self, id: &str) -> bool {
        self.secrets.iter().any(|s| s.id == id)
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
    /// "Add …": the kind of the row to add (the form is shown again, nothing saved).
    add_entry: Option<String>,
    /// "Remove": the index of the row to remove (the form is shown again, nothing saved).
    remove_entry: Option<String>,
    /// When a run's end takes a snapshot (`never`, `on_finish`, `on_finish_when_changed`).
    snapshots: String,
    /// How many snapshots of each workspace are kept, as typed.
    keep_last: String,
    /// The manifest rows' fields: `m0.kind`, `m0.path`, …
    #[serde(flatten)]
    manifest: BTreeMap<String, String>,
}

impl AgentForm {
    /// The fields of a saved agent (with its snapshot settings), or of a new one (its backend
    /// chosen by the service).
    fn of(agent: Option<&Agent>, backend: Backend, settings: SnapshotSettings) -> AgentForm {
        AgentForm {
            name: agent.map(|a| a.name.clone()).unwrap_or_default(),
            backend: backend.as_str().to_string(),
            connection_id: agent.and_then(|a| a.connection_id.clone()).unwrap_or_default(),
            scope: agent.map(|a| a.scope.as_str()).unwrap_or(Scope::Conversation.as_str()).to_string(),
            runtime: agent.and_then(|a| a.runtime.clone()).unwrap_or_default(),
            shell_enabled: agent.is_none_or(|a| a.shell_enabled).then(|| "on".to_string()),
            skills: agent.map(|a| files_text(&a.skills)).unwrap_or_default(),
            add_entry: None,
            remove_entry: None,
            snapshots: settings.snapshots.as_str().to_string(),
            keep_last: settings.keep_last.to_string(),
            manifest: agent.map(|a| manifest_rows::fields_of(&manifest_rows::rows_of(&a.manifest))).unwrap_or_default(),
        }
    }

    /// The manifest's rows as posted, with a row added or removed when a button asked.
    fn rows(&self) -> Vec<EntryRow> {
        let remove = self.remove_entry.as_deref().and_then(|i| i.parse().ok());
        manifest_rows::rows_posted(&self.manifest, remove, self.add_entry.as_deref())
    }

    /// Whether the post only adds or removes a row (the form is shown again, nothing saved).
    fn is_edit_of_rows(&self) -> bool {
        self.add_entry.is_some() || self.remove_entry.is_some()
    }

    /// The snapshot settings as posted (empty: the defaults, never and 5), or their problems.
    fn snapshot_settings(&self) -> Result<SnapshotSettings, FieldErrors> {
        let mode = match self.snapshots.trim() {
            "" => SnapshotSettings::default().snapshots.as_str(),
            m => m,
        };
        let keep_last = self.keep_last.trim();
        let parsed = if keep_last.is_empty() { Some(None) } else { keep_last.parse::<i64>().ok().map(Some) };
        let Some(keep_last) = parsed else {
            let mut errors = snapshots::check_settings(mode, None).err().unwrap_or_default();
            errors.add("keep_last", snapshots::keep_last_message());
            return Err(errors);
        };
        snapshots::check_settings(mode, keep_last)
    }

    /// The service's input and the snapshot settings, or every problem found before saving (the
    /// textareas', the snapshot settings') at their fields.
    fn checked(&self) -> Result<(AgentInput, SnapshotSettings), FieldErrors> {
        let settings = self.snapshot_settings();
        match (self.input(), settings) {
            (Ok(input), Ok(settings)) => Ok((input, settings)),
            (input, settings) => {
                let mut errors = input.err().unwrap_or_default();
                errors.0.extend(settings.err().unwrap_or_default().0);
                Err(errors)
            }
        }
    }

    /// The service's input, or the textarea problems at their fields.
    fn input(&self) -> Result<AgentInput, FieldErrors> {
        let mut errors = FieldErrors::new();
        let skills = parse_files(&self.skills).unwrap_or_else(|m| {
            errors.add("skills", m);
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
            manifest: Some(manifest_rows::manifest_of(&self.rows())),
            manifest_files: None,
        })
    }
}

/// The form of a saved or new agent, as the service describes it.
fn form_of(caller: &PageCaller, form: service::AgentForm, settings: SnapshotSettings) -> FormPartial {
    let values = AgentForm::of(form.agent.as_ref(), form.backend, settings);
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
    show_form(&caller, &req, StatusCode::OK, form_of(&caller, form, SnapshotSettings::default()))
}

pub async fn edit_form(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    id: Path<String>,
) -> Result<HttpResponse, PageError> {
    let form = service::agent_form(&st, &caller, Some(&id)).await?;
    let settings = snapshots::settings(&st, &id).await.map_err(|e| AgentError::Internal(e.into()))?;
    show_form(&caller, &req, StatusCode::OK, form_of(&caller, form, settings))
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

/// The form again with a manifest row added or removed, nothing saved (the focus goes to the
/// new row's first control, or to the manifest's fieldset after a removal).
async fn rows_edited(
    st: &AppState,
    caller: &PageCaller,
    req: &HttpRequest,
    f: AgentForm,
    id: Option<String>,
) -> Result<HttpResponse, PageError> {
    let conn = Some(f.connection_id.as_str()).filter(|c| !c.is_empty());
    let options = service::form_options(st, caller, &f.backend, conn).await?;
    let form = FormPartial::build(caller, id, f, options, FieldErrors::new());
    show_form(caller, req, StatusCode::OK, form)
}

pub async fn create(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    form: Form<AgentForm>,
) -> Result<HttpResponse, PageError> {
    let f = form.into_inner();
    if f.is_edit_of_rows() {
        return rows_edited(&st, &caller, &req, f, None).await;
    }
    let result = match f.checked() {
        Ok((input, settings)) => service::create(&st, &caller, input, Some(&settings)).await,
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
    if f.is_edit_of_rows() {
        return rows_edited(&st, &caller, &req, f, Some(id.into_inner())).await;
    }
    let result = match f.checked() {
        Ok((input, settings)) => service::update(&st, &caller, &id, input, Some(&settings)).await,
        Err(errors) => Err(AgentError::Invalid(errors)),
    };
    saved_or_form(&st, &caller, &req, f, Some(id.into_inner()), result).await
}

#[cfg(test)]
mod tests {
    use askama::Template;

    use super::fields::RuntimeOffer;
    use super::manifest_rows::EntryRow;
    use super::{FormPartial, RuntimeFieldPartial, ScopeFieldPartial};
    use crate::web::filters::aria;
    use crate::web::FieldErrors;

    #[test]
    fn every_message_of_the_form_is_named_by_its_control() {
        let mut errors = FieldErrors::new();
        for field in
            ["name", "backend", "connection_id", "skills", "manifest.entries[0].path", "snapshots", "keep_last"]
        {
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
            manifest_rows: vec![EntryRow { kind: "dir".into(), ..EntryRow::default() }],
            secrets: Vec::new(),
            runtime: RuntimeFieldPartial {
                choice: RuntimeOffer { runtimes: vec!["python".into()], unavailable: None, is_state: false },
                selected: String::new(),
                error: Some("Not offered.".into()),
            },
            scope: ScopeFieldPartial { selected: "agent".into(), error: Some("Pick one.".into()) },
            snapshots: "sometimes".into(),
            keep_last: "0".into(),
            errors,
        };
        let html = form.render().expect("renders");
        assert_eq!(aria::assert_wired(&html), 9, "{html}");
        assert!(html.contains(r#"action="/agents""#), "{html}");
    }
}
