//! HTML: the vault page.

use actix_web::http::StatusCode;
use actix_web::web::{Data, Form, Path};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;
use secrecy::SecretString;
use serde::Deserialize;

use super::error::VaultError;
use super::model::{Secret, PURPOSES};
use super::service::{self, NewSecret};
use crate::sandbox::connections::usage::SecretUse;
use crate::state::AppState;
use crate::web::filters::Choice;
use crate::web::{page, page_status, paths, redirect_with_flash, FieldErrors, PageCaller, PageError, Shell};

#[derive(Template)]
#[template(path = "vault/index.html")]
pub struct VaultPage {
    pub shell: Shell,
    pub secrets: Vec<Secret>,
    pub purposes: [&'static str; 3],
    pub form_name: String,
    pub form_purpose: String,
    pub form_address: String,
    pub errors: FieldErrors,
    /// The secret whose rotation failed validation, with its message.
    pub rotate_error: Option<(String, String)>,
    /// The secret whose binding was refused, with the address typed and the message.
    pub bind_error: Option<(String, String, String)>,
    /// Whether the caller may bind a stored key to an address (admins and owners).
    pub may_bind: bool,
    /// Why the last action was refused (a secret a connection uses), shown above the table.
    pub error: Option<String>,
    /// Which connections use each secret as their key.
    pub uses: Vec<SecretUse>,
}

impl VaultPage {
    pub fn purpose_choices(&self) -> Vec<Choice> {
        Choice::plain(&self.purposes)
    }
    /// The connections that use `secret_id` as their key ("Used by").
    pub fn used_by(&self, secret_id: &str) -> Vec<&SecretUse> {
        self.uses.iter().filter(|u| u.secret_id == secret_id).collect()
    }
    /// The message of a refused binding, at its secret's row.
    pub fn bind_message(&self, secret_id: &str) -> Option<&str> {
        self.bind_error.as_ref().filter(|(id, _, _)| id == secret_id).map(|(_, _, message)| message.as_str())
    }
    /// The address typed into a refused binding, at its secret's row.
    pub fn bind_typed(&self, secret_id: &str) -> &str {
        self.bind_error.as_ref().filter(|(id, _, _)| id == secret_id).map_or("", |(_, typed, _)| typed.as_str())
    }
    /// The message of a rotation that failed validation, at its secret's row.
    pub fn rotate_message(&self, secret_id: &str) -> Option<&str> {
        self.rotate_error.as_ref().filter(|(id, _)| id == secret_id).map(|(_, message)| message.as_str())
    }
}

async fn vault_page(st: &AppState, caller: &PageCaller, req: &HttpRequest) -> Result<VaultPage, PageError> {
    Ok(VaultPage {
        shell: Shell::new(caller, req, "vault"),
        secrets: service::list(st, caller).await?,
        purposes: PURPOSES,
        form_name: String::new(),
        form_purpose: "sandboxd".into(),
        form_address: String::new(),
        errors: FieldErrors::new(),
        rotate_error: None,
        bind_error: None,
        may_bind: service::may_bind(caller),
        error: None,
        uses: service::usage(st, caller).await?,
    })
}

pub async fn index(st: Data<AppState>, caller: PageCaller, req: HttpRequest) -> Result<HttpResponse, PageError> {
    let p = vault_page(&st, &caller, &req).await?;
    page(&p.shell, &p)
}

#[derive(Deserialize)]
pub struct SecretForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    purpose: String,
    #[serde(default)]
    value: String,
    #[serde(default)]
    address: String,
}

pub async fn create(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    form: Form<SecretForm>,
) -> Result<HttpResponse, PageError> {
    let f = form.into_inner();
    let input = NewSecret {
        name: f.name.clone(),
        purpose: f.purpose.clone(),
        value: SecretString::from(f.value),
        address: f.address.clone(),
    };
    match service::create(&st, &caller, input).await {
        Ok(s) => Ok(redirect_with_flash(paths::VAULT, "success", format!("Secret “{}” stored in the vault.", s.name))),
        Err(VaultError::Invalid(errors)) => {
            let mut p = vault_page(&st, &caller, &req).await?;
            p.form_name = f.name;
            p.form_purpose = f.purpose;
            p.form_address = f.address;
            p.errors = errors;
            page_status(StatusCode::UNPROCESSABLE_ENTITY, &p.shell, &p)
        }
        Err(e) => Err(e.into()),
    }
}

#[derive(Deserialize)]
pub struct RotateForm {
    #[serde(default)]
    value: String,
}

pub async fn rotate(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    id: Path<String>,
    form: Form<RotateForm>,
) -> Result<HttpResponse, PageError> {
    match service::rotate(&st, &caller, &id, SecretString::from(form.into_inner().value)).await {
        Ok(s) => Ok(redirect_with_flash(paths::VAULT, "success", format!("Secret “{}” rotated.", s.name))),
        Err(VaultError::Invalid(errors)) => {
            let mut p = vault_page(&st, &caller, &req).await?;
            let msg = errors.get("value").unwrap_or("Enter the new value.").to_string();
            p.rotate_error = Some((id.into_inner(), msg));
            page_status(StatusCode::UNPROCESSABLE_ENTITY, &p.shell, &p)
        }
        Err(e) => Err(e.into()),
    }
}

#[derive(Deserialize)]
pub struct BindForm {
    #[serde(default)]
    address: String,
}

/// "Bind": an admin or owner binds a key stored without an address to one.
pub async fn bind(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    id: Path<String>,
    form: Form<BindForm>,
) -> Result<HttpResponse, PageError> {
    let typed = form.into_inner().address;
    match service::bind(&st, &caller, &id, &typed).await {
        Ok(s) => Ok(redirect_with_flash(
            paths::VAULT,
            "success",
            format!("Secret “{}” is bound to {}: it is sent there and nowhere else.", s.name, s.binding()),
        )),
        Err(VaultError::Invalid(errors)) => {
            let mut p = vault_page(&st, &caller, &req).await?;
            let msg = errors.get("address").unwrap_or("Enter the host's address.").to_string();
            p.bind_error = Some((id.into_inner(), typed, msg));
            page_status(StatusCode::UNPROCESSABLE_ENTITY, &p.shell, &p)
        }
        Err(e) => Err(e.into()),
    }
}

pub async fn delete(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    id: Path<String>,
) -> Result<HttpResponse, PageError> {
    match service::delete(&st, &caller, &id).await {
        Ok(s) => Ok(redirect_with_flash(paths::VAULT, "success", format!("Secret “{}” deleted.", s.name))),
        Err(VaultError::InUse(message)) => {
            let mut p = vault_page(&st, &caller, &req).await?;
            p.error = Some(message);
            page_status(StatusCode::CONFLICT, &p.shell, &p)
        }
        Err(e) => Err(e.into()),
    }
}
