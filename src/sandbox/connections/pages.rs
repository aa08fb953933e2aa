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
use crate::web::filters::Choice;
use crate::web::{
    page, paths, redirect_with_flash, render_status, AppError, FieldErrors, PageCaller, PageError, Shell,
};

#[derive(Template)]
#[template(path = "sandbox/connections/index.html")]
pub struct ConnectionsPage {
    pub shell: Shell,
    pub connections: Vec<Connection>,
    pub can_manage: bool,
    /// Why the last action was refused (a connection agents are pinned to), shown above the table.
    pub error: Option<String>,
}

async fn connections_page(st: &AppState, caller: &PageCaller, req: &HttpRequest) -> Result<ConnectionsPage, PageError> {
    Ok(ConnectionsPage {
        shell: Shell::new(caller, req, "sandboxes"),
        connections: service::list(st, caller).await?,
        can_manage: caller.role.can_manage_connections(),
        error: None,
    })
}

pub async fn index(st: Data<AppState>, caller: PageCaller, req: HttpRequest) -> Result<HttpResponse, PageError> {
    let p = connections_page(&st, &caller, &req).await?;
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
    /// The field before a probe: the runtimes this deployment ships.
    fn catalog(st: &AppState, selected: String, error: Option<String>) -> RuntimeFieldPartial {
        RuntimeFieldPartial { marks: service::catalog_marks(st), selected, probe: None, error }
    }

    /// The field after a probe: the catalog marked with what the host offers.
    fn probed(probe: Probe, selected: String) -> RuntimeFieldPartial {
        RuntimeFieldPartial { marks: probe.runtimes.clone(), selected, probe: Some(probe), error: None }
    }

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
    /// The one way the form is built, for a new connection, a saved one, or what was posted:
    /// `values` are what its fields show, `errors` the messages at them.
    async fn build(
        st: &AppState,
        caller: &PageCaller,
        connection_id: Option<String>,
        values: &ConnectionForm,
        errors: FieldErrors,
    ) -> Result<FormPartial, PageError> {
        let runtime_error = errors.get("default_runtime").map(str::to_string);
        Ok(FormPartial {
            csrf_token: caller.csrf_token.clone(),
            connection_id,
            name: values.name.clone(),
            kind: values.kind.clone(),
            address: values.address.clone(),
            address_note: None,
            credential_secret_id: values.credential_secret_id.clone(),
            secrets: crate::vault::service::list(st, caller).await?,
            runtime: RuntimeFieldPartial::catalog(st, values.default_runtime.clone(), runtime_error),
            errors,
            error: None,
        })
    }

    pub fn action(&self) -> String {
        paths::connection_save(self.connection_id.as_deref())
    }
    pub fn title(&self) -> &'static str {
        if self.connection_id.is_some() {
            "Edit connection"
        } else {
            "Add a connection"
        }
    }
    pub fn kind_choices(&self) -> [Choice; 2] {
        [
            Choice::new("sandboxd", "sandboxd — a container per session on your host"),
            Choice::new("daytona", "Daytona — hosted sandboxes on your Daytona account"),
        ]
    }
    /// No credential, or one of the vault's keys.
    pub fn credential_choices(&self) -> Vec<Choice> {
        let keys = self
            .secrets
            .iter()
            .map(|s| Choice::new(&s.id, format!("{} ({}, {}; for {})", s.name, s.purpose, s.hint, s.binding())));
        std::iter::once(Choice::new("", "— none —")).chain(keys).collect()
    }
    pub fn address_hint(&self) -> String {
        let rule = "http(s), no credentials in the address.";
        match &self.address_note {
            Some(note) => format!("{note} {rule}"),
            None => rule.to_string(),
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
    let values = ConnectionForm {
        kind: "sandboxd".into(),
        address,
        default_runtime: st.catalog.default_runtime().alias.clone(),
        ..ConnectionForm::default()
    };
    let form = FormPartial::build(&st, &caller, None, &values, FieldErrors::new()).await?;
    show_form(&caller, &req, StatusCode::OK, FormPartial { address_note, ..form })
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
    let form =
        FormPartial::build(&st, &caller, Some(c.id.clone()), &ConnectionForm::of(&c), FieldErrors::new()).await?;
    show_form(&caller, &req, StatusCode::OK, form)
}

/// What the form posts, and what its fields show.
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct ConnectionForm {
    name: String,
    kind: String,
    address: String,
    credential_secret_id: String,
    new_key: String,
    default_runtime: String,
}

impl ConnectionForm {
    /// The fields of a saved connection.
    fn of(c: &Connection) -> ConnectionForm {
        ConnectionForm {
            name: c.name.clone(),
            kind: c.kind.as_str().into(),
            address: c.address.clone().unwrap_or_default(),
            credential_secret_id: c.credential_secret_id.clone().unwrap_or_default(),
            new_key: String::new(),
            default_runtime: c.default_runtime.clone().unwrap_or_default(),
        }
    }

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
            let form = FormPartial::build(st, caller, id, f, errors).await?;
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

/// What "Test this host" posts: the form's fields (`hx-include`), of which it reads these.
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct ProbeForm {
    address: String,
    credential_secret_id: String,
    new_key: String,
    default_runtime: String,
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
        Ok(p) => RuntimeFieldPartial::probed(p, f.default_runtime),
        Err(ConnectionError::Invalid(errors)) => {
            let msg = errors.0.first().map(|e| e.message.clone()).unwrap_or_else(|| "Check the address.".into());
            RuntimeFieldPartial::catalog(&st, f.default_runtime, Some(msg))
        }
        Err(ConnectionError::KeyRefused(msg)) => RuntimeFieldPartial::catalog(&st, f.default_runtime, Some(msg)),
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

pub async fn delete(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    id: Path<String>,
) -> Result<HttpResponse, PageError> {
    match service::delete(&st, &caller, &id).await {
        Ok(c) => Ok(redirect_with_flash(paths::SANDBOXES, "success", format!("Connection “{}” deleted.", c.name))),
        Err(ConnectionError::InUse(message)) => {
            let p = ConnectionsPage { error: Some(message), ..connections_page(&st, &caller, &req).await? };
            crate::web::page_status(StatusCode::CONFLICT, &p.shell, &p)
        }
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use askama::Template;

    use super::{FormPartial, RuntimeFieldPartial};
    use crate::web::filters::aria;
    use crate::web::FieldErrors;

    #[test]
    fn every_message_of_the_form_is_named_by_its_control() {
        let mut errors = FieldErrors::new();
        for field in ["name", "kind", "address", "credential_secret_id", "new_key"] {
            errors.add(field, "Wrong.");
        }
        let form = FormPartial {
            csrf_token: "t".into(),
            connection_id: Some("c1".into()),
            name: "eu".into(),
            kind: "sandboxd".into(),
            address: "http://sandboxd:8080".into(),
            address_note: Some("Found it.".into()),
            credential_secret_id: String::new(),
            secrets: Vec::new(),
            runtime: RuntimeFieldPartial {
                marks: Vec::new(),
                selected: String::new(),
                probe: None,
                error: Some("Not offered.".into()),
            },
            errors,
            error: None,
        };
        let html = form.render().expect("renders");
        assert_eq!(aria::assert_wired(&html), 5, "{html}");
        assert!(html.contains(r#"action="/sandboxes/c1""#), "{html}");
        assert!(html.contains("Found it. http(s), no credentials in the address."), "{html}");
    }
}
