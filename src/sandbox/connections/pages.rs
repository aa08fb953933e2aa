//! HTML: the connections table at `/sandboxes`, the connection dialog (htmx, server-rendered; a
//! plain page without JavaScript), "Test this host", and the row actions.

use actix_web::http::StatusCode;
use actix_web::web::{Data, Form, Path};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;
use secrecy::SecretString;
use serde::Deserialize;

use super::error::ConnectionError;
use super::model::Connection;
use super::service::{self, ConnectionInput, Probe, ProbeInput, ProbeStatus, RuntimeMark};
use crate::state::AppState;
use crate::vault::model::Secret;
use crate::web::{
    page, paths, redirect_with_flash, render_status, AppError, FieldErrors, PageCaller, PageError, Shell,
};

#[derive(Template)]
#[template(path = "sandbox/connections/index.html")]
pub struct ConnectionsPage {
    pub shell: Shell,
    pub connections: Vec<Connection>,
    pub can_manage: bool,
}

pub async fn index(st: Data<AppState>, caller: PageCaller, req: HttpRequest) -> Result<HttpResponse, PageError> {
    let connections = service::list(&st, &caller).await?;
    let p = ConnectionsPage {
        shell: Shell::new(&caller, &req, "sandboxes"),
        connections,
        can_manage: caller.role.can_manage_connections(),
    };
    page(&p.shell, &p)
}

/// The *Default runtime* field: the catalog before a probe, marked after one.
#[derive(Template)]
#[template(path = "sandbox/connections/_runtime_field.html")]
pub struct RuntimeFieldPartial {
    pub marks: Vec<RuntimeMark>,
    pub selected: String,
    pub probe: Option<Probe>,
    pub error: Option<String>,
}

impl RuntimeFieldPartial {
    /// A warning when the selected alias is not offered by the host that was just asked.
    pub fn warning(&self) -> Option<String> {
        let probe = self.probe.as_ref().filter(|p| p.status == ProbeStatus::Ok)?;
        let alias = if self.selected.is_empty() { probe.host_default_runtime.clone()? } else { self.selected.clone() };
        let offered = self.marks.iter().any(|m| m.alias == alias && m.offered == Some(true));
        (!offered).then(|| format!("This host does not offer “{alias}”: workspaces on this connection could not open. Pick a runtime the host offers."))
    }
    pub fn probe_class(&self) -> &'static str {
        match self.probe.as_ref().map(|p| &p.status) {
            Some(ProbeStatus::Ok) => "alert alert-success",
            Some(ProbeStatus::NotAsked) => "alert alert-info",
            _ => "alert alert-error",
        }
    }
}

/// The connection form, inside the modal dialog or on its own page.
#[derive(Template)]
#[template(path = "sandbox/connections/_form.html")]
pub struct FormPartial {
    pub csrf_token: String,
    /// None for a new connection.
    pub connection_id: Option<String>,
    pub name: String,
    pub kind: String,
    pub address: String,
    pub address_note: Option<String>,
    pub credential_secret_id: String,
    pub secrets: Vec<Secret>,
    pub runtime: RuntimeFieldPartial,
    pub errors: FieldErrors,
    pub error: Option<String>,
}

impl FormPartial {
    pub fn action(&self) -> String {
        match &self.connection_id {
            Some(id) => paths::connection(id),
            None => paths::SANDBOXES.to_string(),
        }
    }
    pub fn title(&self) -> &'static str {
        if self.connection_id.is_some() {
            "Edit connection"
        } else {
            "Add a connection"
        }
    }
}

#[derive(Template)]
#[template(path = "sandbox/connections/_dialog.html")]
pub struct DialogPartial {
    pub form: FormPartial,
}

#[derive(Template)]
#[template(path = "sandbox/connections/form_page.html")]
pub struct FormPage {
    pub shell: Shell,
    pub form: FormPartial,
}

/// The form as the request wants it: the dialog for htmx, else a page.
fn show_form(
    caller: &PageCaller,
    req: &HttpRequest,
    status: StatusCode,
    form: FormPartial,
) -> Result<HttpResponse, PageError> {
    if crate::web::htmx::wants_fragment(req) {
        // A fresh dialog for a click on "Add connection"/"Edit"; the form alone when the form posted.
        if req.headers().get("hx-target").and_then(|v| v.to_str().ok()) == Some("connection-form") {
            return render_status(status, &form);
        }
        return render_status(status, &DialogPartial { form });
    }
    let p = FormPage { shell: Shell::new(caller, req, "sandboxes"), form };
    crate::web::page_status(status, &p.shell, &p)
}

async fn secrets_for(st: &AppState, caller: &PageCaller) -> Result<Vec<Secret>, PageError> {
    Ok(crate::vault::service::list(st, caller).await?)
}

pub async fn new_form(st: Data<AppState>, caller: PageCaller, req: HttpRequest) -> Result<HttpResponse, PageError> {
    if !caller.role.can_manage_connections() {
        return Err(AppError::forbidden().into());
    }
    let (address, address_note) = match service::discover_local(&st).await {
        Some(a) => {
            (a.clone(), Some(format!("Found this deployment's sandbox service at {a} (only its /healthz was asked).")))
        }
        None => (
            String::new(),
            Some("No sandbox service of this deployment answered; enter your host's address.".to_string()),
        ),
    };
    let form = FormPartial {
        csrf_token: caller.csrf_token.clone(),
        connection_id: None,
        name: String::new(),
        kind: "sandboxd".into(),
        address,
        address_note,
        credential_secret_id: String::new(),
        secrets: secrets_for(&st, &caller).await?,
        runtime: RuntimeFieldPartial {
            marks: service::catalog_marks(&st),
            selected: st.catalog.default_runtime().alias.clone(),
            probe: None,
            error: None,
        },
        errors: FieldErrors::new(),
        error: None,
    };
    show_form(&caller, &req, StatusCode::OK, form)
}

pub async fn edit_form(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    id: Path<String>,
) -> Result<HttpResponse, PageError> {
    if !caller.role.can_manage_connections() {
        return Err(AppError::forbidden().into());
    }
    let c = service::get(&st, &caller, &id).await?;
    let form = FormPartial {
        csrf_token: caller.csrf_token.clone(),
        connection_id: Some(c.id.clone()),
        name: c.name.clone(),
        kind: c.kind.as_str().into(),
        address: c.address.clone().unwrap_or_default(),
        address_note: None,
        credential_secret_id: c.credential_secret_id.clone().unwrap_or_default(),
        secrets: secrets_for(&st, &caller).await?,
        runtime: RuntimeFieldPartial {
            marks: service::catalog_marks(&st),
            selected: c.default_runtime.clone().unwrap_or_default(),
            probe: None,
            error: None,
        },
        errors: FieldErrors::new(),
        error: None,
    };
    show_form(&caller, &req, StatusCode::OK, form)
}

#[derive(Deserialize)]
pub struct ConnectionForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    address: String,
    #[serde(default)]
    credential_secret_id: String,
    #[serde(default)]
    new_key: String,
    #[serde(default)]
    default_runtime: String,
}

impl ConnectionForm {
    fn input(&self) -> ConnectionInput {
        ConnectionInput {
            name: self.name.clone(),
            kind: self.kind.clone(),
            address: self.address.clone(),
            credential_secret_id: self.credential_secret_id.clone(),
            new_key: (!self.new_key.is_empty()).then(|| SecretString::from(self.new_key.clone())),
            default_runtime: self.default_runtime.clone(),
        }
    }
}

async fn form_again(
    st: &AppState,
    caller: &PageCaller,
    f: &ConnectionForm,
    id: Option<String>,
    errors: FieldErrors,
    error: Option<String>,
) -> Result<FormPartial, PageError> {
    Ok(FormPartial {
        csrf_token: caller.csrf_token.clone(),
        connection_id: id,
        name: f.name.clone(),
        kind: f.kind.clone(),
        address: f.address.clone(),
        address_note: None,
        credential_secret_id: f.credential_secret_id.clone(),
        secrets: secrets_for(st, caller).await?,
        runtime: RuntimeFieldPartial {
            marks: service::catalog_marks(st),
            selected: f.default_runtime.clone(),
            probe: None,
            error: errors.get("default_runtime").map(str::to_string),
        },
        errors,
        error,
    })
}

async fn saved_or_form(
    st: &AppState,
    caller: &PageCaller,
    req: &HttpRequest,
    f: &ConnectionForm,
    id: Option<String>,
    result: Result<Connection, ConnectionError>,
) -> Result<HttpResponse, PageError> {
    match result {
        Ok(c) => {
            let verb = if id.is_some() { "saved" } else { "added" };
            let extra = if c.is_default && id.is_none() { " It is this organization's default." } else { "" };
            Ok(redirect_with_flash(paths::SANDBOXES, "success", format!("Connection “{}” {verb}.{extra}", c.name)))
        }
        Err(ConnectionError::Invalid(errors)) => {
            let form = form_again(st, caller, f, id, errors, None).await?;
            show_form(caller, req, StatusCode::UNPROCESSABLE_ENTITY, form)
        }
        Err(e) => Err(AppError::from(e).into()),
    }
}

pub async fn create(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    form: Form<ConnectionForm>,
) -> Result<HttpResponse, PageError> {
    let f = form.into_inner();
    let result = service::create(&st, &caller, f.input()).await;
    saved_or_form(&st, &caller, &req, &f, None, result).await
}

pub async fn update(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    id: Path<String>,
    form: Form<ConnectionForm>,
) -> Result<HttpResponse, PageError> {
    let f = form.into_inner();
    let result = service::update(&st, &caller, &id, f.input()).await;
    saved_or_form(&st, &caller, &req, &f, Some(id.into_inner()), result).await
}

#[derive(Deserialize)]
pub struct ProbeForm {
    #[serde(default)]
    address: String,
    #[serde(default)]
    credential_secret_id: String,
    #[serde(default)]
    new_key: String,
    #[serde(default)]
    default_runtime: String,
    #[serde(default)]
    connection_id: String,
}

/// "Test this host": answers the *Default runtime* field, marked, with the outcome above it.
pub async fn probe(st: Data<AppState>, caller: PageCaller, form: Form<ProbeForm>) -> Result<HttpResponse, PageError> {
    let f = form.into_inner();
    let input = ProbeInput {
        address: f.address.clone(),
        credential_secret_id: f.credential_secret_id.clone(),
        new_key: (!f.new_key.is_empty()).then(|| SecretString::from(f.new_key.clone())),
        connection_id: (!f.connection_id.is_empty()).then(|| f.connection_id.clone()),
    };
    let field = match service::probe(&st, &caller, input).await {
        Ok(p) => {
            RuntimeFieldPartial { marks: p.runtimes.clone(), selected: f.default_runtime, probe: Some(p), error: None }
        }
        Err(ConnectionError::Invalid(errors)) => {
            let msg = errors.0.first().map(|e| e.message.clone()).unwrap_or_else(|| "Check the address.".into());
            RuntimeFieldPartial {
                marks: service::catalog_marks(&st),
                selected: f.default_runtime,
                probe: None,
                error: Some(msg),
            }
        }
        Err(e) => return Err(AppError::from(e).into()),
    };
    render_status(StatusCode::OK, &field)
}

pub async fn enable(st: Data<AppState>, caller: PageCaller, id: Path<String>) -> Result<HttpResponse, PageError> {
    let c = service::set_enabled(&st, &caller, &id, true).await?;
    Ok(redirect_with_flash(paths::SANDBOXES, "success", format!("Connection “{}” is switched on.", c.name)))
}

pub async fn disable(st: Data<AppState>, caller: PageCaller, id: Path<String>) -> Result<HttpResponse, PageError> {
    let c = service::set_enabled(&st, &caller, &id, false).await?;
    Ok(redirect_with_flash(
        paths::SANDBOXES,
        "success",
        format!("Connection “{}” is switched off: no new work starts there; its sandboxes are still destroyed when deleted.", c.name),
    ))
}

pub async fn make_default(st: Data<AppState>, caller: PageCaller, id: Path<String>) -> Result<HttpResponse, PageError> {
    let c = service::make_default(&st, &caller, &id).await?;
    Ok(redirect_with_flash(paths::SANDBOXES, "success", format!("Connection “{}” is the default now.", c.name)))
}

pub async fn delete(st: Data<AppState>, caller: PageCaller, id: Path<String>) -> Result<HttpResponse, PageError> {
    let c = service::delete(&st, &caller, &id).await?;
    Ok(redirect_with_flash(paths::SANDBOXES, "success", format!("Connection “{}” deleted.", c.name)))
}
