//! HTML: the connection dialog (htmx, server-rendered; a plain page without JavaScript). "Test
//! this host" and a refused save both redraw the whole form, every message at the field it is
//! about, so nothing of an earlier answer stays; a save whose host check failed offers "Save
//! anyway".

use actix_web::http::StatusCode;
use actix_web::web::{Data, Form, Path};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;
use secrecy::SecretString;
use serde::Deserialize;

use super::super::discovered::{self, Discovery};
use super::super::error::ConnectionError;
use super::super::health::runtime_not_offered;
use super::super::keys;
use super::super::model::{Connection, ConnectionKind};
use super::super::service::{self, ConnectionInput, LocalService, Probe, ProbeInput, ProbeStatus, RuntimeMark};
use super::super::words::{FormWords, Part};
use crate::sandbox::hosts::dispatch::connections::form_words;
use crate::state::AppState;
use crate::vault::model::Secret;
use crate::web::{paths, redirect_with_flash, render_status, AppError, FieldErrors, PageCaller, PageError, Shell};

/// The *Default runtime* field: the catalog as cards before a probe, marked after one.
#[derive(Template)]
#[template(path = "sandbox/connections/_runtime_field.html")]
pub struct RuntimeFieldPartial {
    pub marks: Vec<RuntimeMark>,
    pub selected: String,
    /// The host's own default, once it answered.
    pub host_default: Option<String>,
    pub error: Option<String>,
}

impl RuntimeFieldPartial {
    /// The field before a host answered: the runtimes this deployment ships.
    fn catalog(st: &AppState, selected: String, error: Option<String>) -> RuntimeFieldPartial {
        let mut field = RuntimeFieldPartial { marks: service::catalog_marks(st), selected, host_default: None, error };
        field.keep_selected();
        field
    }

    /// A selected alias no card offers (a runtime only the host offers, saved earlier) gets a
    /// card of its own, checked: editing the connection keeps it unless a person picks another.
    fn keep_selected(&mut self) {
        let selected = self.selected.trim();
        if selected.is_empty() || self.marks.iter().any(|m| m.alias == selected) {
            return;
        }
        self.marks.push(RuntimeMark {
            alias: selected.to_string(),
            description:
                "Not a runtime this deployment ships: the host offered it when it was chosen. “Test this host” \
                          says whether it still does."
                    .into(),
            image: "as the host defines it".into(),
            builds: false,
            in_catalog: false,
            offered: None,
        });
    }

    /// `aria-describedby` of one card's radio: its description, and the field's message.
    pub fn described_by(&self, about: impl std::fmt::Display) -> String {
        match self.error {
            Some(_) => format!("{about} connection-runtime-error"),
            None => about.to_string(),
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
    /// The vault's keys a sandboxd host may be sent.
    pub secrets: Vec<Secret>,
    pub runtime: RuntimeFieldPartial,
    pub errors: FieldErrors,
    /// What "Test this host" found, when the host answered well.
    pub probe: Option<Probe>,
    /// The label of the field whose problem refused the save: "Save anyway" is offered.
    pub refused_at: Option<&'static str>,
    /// The dialog was just opened (its first field takes the focus), rather than redrawn.
    pub is_first_view: bool,
    /// The sandboxd containers this deployment's Docker engine runs; none without an engine.
    pub discovered: Option<Discovery>,
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
        let mut secrets = crate::vault::service::list(st, caller).await?;
        // The keys this kind of host may be sent (a sandboxd host's, or Daytona's); a kind the
        // form does not know yet offers every kind's.
        match ConnectionKind::parse(&values.kind) {
            Some(k) => secrets.retain(|s| s.purpose == keys::purpose_for(k)),
            None => secrets.retain(|s| ConnectionKind::all().any(|k| s.purpose == keys::purpose_for(k))),
        }
        let discovered = match st.docker {
            Some(_) => Some(discovered::of_engine_for(st, &service::list(st, caller).await?).await),
            None => None,
        };
        Ok(FormPartial {
            csrf_token: caller.csrf_token.clone(),
            connection_id,
            name: values.name.clone(),
            kind: if values.kind.is_empty() {
                ConnectionKind::offered_first().as_str().into()
            } else {
                values.kind.clone()
            },
            address: values.address.clone(),
            address_note: None,
            credential_secret_id: values.credential_secret_id.clone(),
            secrets,
            // Nothing chosen yet, or a word no kind has (refused at the kind field): the form
            // shows the kind it offers first.
            runtime: match ConnectionKind::parse(&values.kind)
                .unwrap_or_else(ConnectionKind::offered_first)
                .is_provider_api()
            {
                // A provider's snapshot (Daytona's) is no catalog runtime: only the organization's
                // default, or the one the connection names.
                true => {
                    let mut field = RuntimeFieldPartial {
                        marks: Vec::new(),
                        selected: values.default_runtime.clone(),
                        host_default: None,
                        error: runtime_error,
                    };
                    field.keep_selected();
                    field
                }
                false => RuntimeFieldPartial::catalog(st, values.default_runtime.clone(), runtime_error),
            },
            errors,
            probe: None,
            refused_at: None,
            is_first_view: false,
            discovered,
        })
    }

    /// The host's answer: its runtimes marked, and (when it answered well) the outcome shown.
    fn answered(mut self, probe: Probe) -> FormPartial {
        self.runtime.marks = probe.runtimes.clone();
        self.runtime.host_default = probe.host_default_runtime.clone();
        self.runtime.keep_selected();
        if probe.status == ProbeStatus::Ok {
            self.probe = Some(probe);
        }
        self
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
    /// A stored key's option label: its name, hint and where it may be sent.
    pub fn secret_label(&self, s: &Secret) -> String {
        format!("{} · {} · {} · for {}", s.name, s.purpose, s.hint, s.binding())
    }
    /// Where a discovered container's address is offered without JavaScript: this dialog again,
    /// with the address filled in.
    pub fn use_address_path(&self, address: &str) -> String {
        format!(
            "{}?address={}",
            crate::web::paths::SANDBOXES_NEW,
            url::form_urlencoded::byte_serialize(address.as_bytes()).collect::<String>()
        )
    }
    /// The form's words for its kind (a word no kind has: the kind offered first, as the form
    /// shows it).
    pub fn words(&self) -> &'static FormWords {
        words_of(&self.kind)
    }
    /// The kinds the form offers: each one's word and label.
    pub fn kinds(&self) -> Vec<(&'static str, &'static str)> {
        ConnectionKind::all().map(|k| (k.as_str(), k.label())).collect()
    }
    pub fn address_hint(&self) -> String {
        let rule = self.words().address_rule;
        match &self.address_note {
            Some(note) => format!("{note} {rule}"),
            None => rule.to_string(),
        }
    }
    /// `aria-describedby` of a control with a hint: the hint, and its message when it has one.
    pub fn described_by(&self, key: &str, id: &str, hint: &str) -> String {
        if self.errors.has(key) {
            format!("{hint} {id}-error")
        } else {
            hint.to_string()
        }
    }
}

fn words_of(kind: &str) -> &'static FormWords {
    form_words(ConnectionKind::parse(kind).unwrap_or_else(ConnectionKind::offered_first))
}

/// A field's label, for "Not saved: see the message at …" (each kind names its own).
fn label_of(field: &str, kind: &str) -> &'static str {
    let words = words_of(kind);
    match field {
        "address" => words.address_label,
        "new_key" => words.new_key_label,
        "credential_secret_id" => "Key",
        "default_runtime" => words.runtime_label,
        _ => "the form",
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

/// `?address=`: a discovered container's address, chosen without JavaScript.
#[derive(Deserialize, Default)]
pub struct NewFormQuery {
    #[serde(default)]
    address: Option<String>,
}

pub async fn new_form(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    query: actix_web::web::Query<NewFormQuery>,
) -> Result<HttpResponse, PageError> {
    if !caller.role.can_manage_connections() {
        return Err(AppError::forbidden().into());
    }
    let chosen = query.into_inner().address.filter(|a| !a.trim().is_empty() && !a.chars().any(char::is_control));
    let found = match chosen {
        Some(a) => Err(a.trim().chars().take(2000).collect::<String>()),
        None => Ok(service::discover_local(&st, &service::list(&st, &caller).await?).await),
    };
    let (address, address_note) = match found {
        Err(chosen) => (chosen, None),
        Ok(LocalService::Found(a)) => {
            (a.clone(), Some(format!("Found this deployment's sandbox service at {a} (only its /healthz was asked).")))
        }
        Ok(LocalService::Connected(name)) => (
            String::new(),
            Some(format!(
                "This deployment's sandbox service is already connected as “{name}”; enter the address of another host."
            )),
        ),
        Ok(LocalService::NotFound) => (
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
    show_form(&caller, &req, StatusCode::OK, FormPartial { address_note, is_first_view: true, ..form })
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
    show_form(&caller, &req, StatusCode::OK, FormPartial { is_first_view: true, ..form })
}

/// What the form posts (saving, or "Test this host"), and what its fields show.
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct ConnectionForm {
    name: String,
    kind: String,
    address: String,
    /// The one credential control: a stored key's id, or empty for the pasted `new_key`.
    credential_secret_id: String,
    new_key: String,
    default_runtime: String,
    /// The saved connection a probe is about (its stored key may be used).
    connection_id: String,
    /// "Save anyway" was pressed.
    save_anyway: String,
}

impl ConnectionForm {
    /// The fields of a saved connection.
    fn of(c: &Connection) -> ConnectionForm {
        ConnectionForm {
            name: c.name.clone(),
            kind: c.kind.as_str().into(),
            address: c.address.clone().unwrap_or_default(),
            credential_secret_id: c.credential_secret_id.clone().unwrap_or_default(),
            default_runtime: c.default_runtime.clone().unwrap_or_default(),
            ..ConnectionForm::default()
        }
    }

    /// The pasted key, when the credential control says "paste" (a chosen stored key wins).
    fn pasted(&self) -> Option<SecretString> {
        (self.credential_secret_id.trim().is_empty() && !self.new_key.is_empty())
            .then(|| SecretString::from(self.new_key.clone()))
    }

    /// The field the key that is used is chosen with.
    fn key_field(&self) -> &'static str {
        if self.credential_secret_id.trim().is_empty() {
            "new_key"
        } else {
            keys::FIELD
        }
    }

    fn input(&self) -> ConnectionInput {
        ConnectionInput {
            name: self.name.clone(),
            kind: self.kind.clone(),
            address: self.address.clone(),
            credential_secret_id: self.credential_secret_id.clone(),
            new_key: self.pasted(),
            default_runtime: self.default_runtime.clone(),
            save_anyway: matches!(self.save_anyway.trim(), "1" | "on" | "true" | "yes"),
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
        Err(ConnectionError::Unhealthy(check)) => {
            let errors = FieldErrors::one(check.field, check.message.clone());
            let form = FormPartial::build(st, caller, id, f, errors).await?.answered(check.probe);
            let form = FormPartial { refused_at: Some(label_of(check.field, &f.kind)), probe: None, ..form };
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

/// The kind changed: the whole form again for that kind, with what was typed kept (no host is
/// asked, no message shown). A runtime of the other kind's is not carried over: sandboxd starts
/// from the catalog's default, Daytona from the organization's default snapshot.
pub async fn kind_changed(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    form: Form<ConnectionForm>,
) -> Result<HttpResponse, PageError> {
    if !caller.role.can_manage_connections() {
        return Err(AppError::forbidden().into());
    }
    let mut f = form.into_inner();
    let in_catalog = st.catalog.get(f.default_runtime.trim()).is_some();
    match ConnectionKind::parse(&f.kind).map(ConnectionKind::is_provider_api) {
        Some(true) if in_catalog => f.default_runtime.clear(),
        Some(false) if !in_catalog => f.default_runtime = st.catalog.default_runtime().alias.clone(),
        Some(_) | None => {}
    }
    // A stored key of the other kind's purpose is not offered: paste one, or choose again.
    let connection_id = (!f.connection_id.trim().is_empty()).then(|| f.connection_id.trim().to_string());
    let mut form = FormPartial::build(&st, &caller, connection_id, &f, FieldErrors::new()).await?;
    if !form.secrets.iter().any(|s| s.id == form.credential_secret_id) {
        form.credential_secret_id.clear();
    }
    show_form(&caller, &req, StatusCode::OK, form)
}

/// "Test this host": the whole form again, with the host's answer — its runtimes marked and the
/// outcome shown when it answered well, or each problem at the field it is about.
pub async fn probe(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    form: Form<ConnectionForm>,
) -> Result<HttpResponse, PageError> {
    let f = form.into_inner();
    let connection_id = (!f.connection_id.trim().is_empty()).then(|| f.connection_id.trim().to_string());
    let input = ProbeInput {
        kind: f.kind.clone(),
        address: f.address.clone(),
        default_runtime: Some(f.default_runtime.clone()),
        credential_secret_id: f.credential_secret_id.clone(),
        new_key: f.pasted(),
        connection_id: connection_id.clone(),
    };
    let mut errors = FieldErrors::new();
    let answer = match service::probe(&st, &caller, input).await {
        Ok(p) if p.status == ProbeStatus::Ok => {
            let selected = Some(f.default_runtime.trim()).filter(|s| !s.is_empty());
            if !p.offers(selected) {
                errors.add("default_runtime", runtime_not_offered(selected));
            }
            Some(p)
        }
        Ok(p) => {
            errors.add(p.health.field(f.key_field()), p.message.clone());
            Some(p)
        }
        Err(ConnectionError::Invalid(fields)) => {
            errors = fields;
            None
        }
        Err(ConnectionError::KeyRefused(message)) => {
            errors.add(keys::FIELD, message);
            None
        }
        Err(e) => return Err(AppError::from(e).into()),
    };
    let mut form = FormPartial::build(&st, &caller, connection_id, &f, errors).await?;
    if let Some(p) = answer {
        form = form.answered(p);
    }
    show_form(&caller, &req, StatusCode::OK, form)
}

#[cfg(test)]
mod tests {
    use askama::Template;

    use super::{FormPartial, RuntimeFieldPartial};
    use crate::sandbox::connections::model::RuntimeMark;
    use crate::web::filters::aria;
    use crate::web::FieldErrors;

    fn form(errors: FieldErrors, runtime_error: Option<String>) -> FormPartial {
        let mark = |alias: &str, builds: bool| RuntimeMark {
            alias: alias.into(),
            description: format!("{alias} runtime"),
            image: "python:3.12".into(),
            builds,
            in_catalog: true,
            offered: Some(alias == "python"),
        };
        FormPartial {
            csrf_token: "t".into(),
            connection_id: Some("c1".into()),
            name: "eu".into(),
            kind: "sandboxd".into(),
            address: "http://sandboxd:8080".into(),
            address_note: Some("Found it.".into()),
            credential_secret_id: String::new(),
            secrets: Vec::new(),
            runtime: RuntimeFieldPartial {
                marks: vec![mark("workbench", true), mark("python", false)],
                selected: "python".into(),
                host_default: Some("python".into()),
                error: runtime_error,
            },
            errors,
            probe: None,
            refused_at: Some("Address"),
            is_first_view: false,
            discovered: None,
        }
    }

    #[test]
    fn every_message_of_the_form_is_named_by_its_control() {
        let mut errors = FieldErrors::new();
        for field in ["name", "kind", "address", "credential_secret_id", "new_key"] {
            errors.add(field, "Wrong.");
        }
        let html = form(errors, Some("Not offered.".into())).render().expect("renders");
        assert_eq!(aria::assert_wired(&html), 6, "{html}");
        assert!(html.contains(r#"action="/sandboxes/c1""#), "{html}");
        assert!(html.contains("Found it. http(s), no credentials in the address."), "{html}");
        assert!(html.contains(r#"id="save-anyway""#), "{html}");
    }

    #[test]
    fn each_runtime_card_shows_its_image_its_builds_badge_and_the_hosts_mark() {
        let html = form(FieldErrors::new(), None).render().expect("renders");
        assert_eq!(aria::assert_wired(&html), 0, "{html}");
        let doc = scraper::Html::parse_fragment(&html);
        let card = |alias: &str| {
            let sel = scraper::Selector::parse(&format!("#connection-runtime-{alias}-card")).expect("selector");
            doc.select(&sel).next().map(|e| e.text().collect::<String>()).unwrap_or_default()
        };
        let wb = card("workbench");
        assert!(wb.contains("builds on first use") && wb.contains("base image python:3.12"), "{wb}");
        assert!(wb.contains("not on this host"), "{wb}");
        let py = card("python");
        assert!(py.contains("ready-made image") && py.contains("image python:3.12"), "{py}");
        assert!(py.contains("offered by this host"), "{py}");
        assert!(html.contains(r#"value="python" checked"#), "{html}");
    }
}
