//! HTML: the API tokens page.

use actix_web::http::StatusCode;
use actix_web::web::{Data, Form, Path};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;
use serde::Deserialize;

use super::error::TokenError;
use super::model::{ApiToken, EXPIRY_DAYS};
use super::service::{self, NewToken};
use crate::orgs::model::Role;
use crate::state::AppState;
use crate::web::filters::Choice;
use crate::web::{page, page_status, paths, redirect_with_flash, FieldErrors, PageCaller, PageError, Shell};

#[derive(Template)]
#[template(path = "tokens/index.html")]
pub struct TokensPage {
    pub shell: Shell,
    pub tokens: Vec<ApiToken>,
    pub roles: Vec<Role>,
    pub form_name: String,
    pub form_description: String,
    pub form_role: String,
    /// The expiry chosen, in days (`never` for none).
    pub form_expires: String,
    pub errors: FieldErrors,
    pub created: Option<(String, String)>,
}

impl TokensPage {
    pub fn role_choices(&self) -> Vec<Choice> {
        Choice::roles(&self.roles)
    }
    pub fn expiry_choices(&self) -> Vec<Choice> {
        let mut choices: Vec<Choice> =
            EXPIRY_DAYS.iter().map(|d| Choice::new(d.to_string(), format!("{d} days"))).collect();
        choices.push(Choice::new("never".to_string(), "No expiry".to_string()));
        choices
    }
}

/// The form's expiry as the rules take it: `never` is none; anything else is a number of days
/// (one that is not a number is refused with the others).
fn expiry_of(raw: &str) -> Option<(i64, &'static str)> {
    match raw.trim() {
        "" | "never" => None,
        days => Some((days.parse().unwrap_or(0), "expires")),
    }
}

async fn tokens_page(st: &AppState, caller: &PageCaller, req: &HttpRequest) -> Result<TokensPage, PageError> {
    Ok(TokensPage {
        shell: Shell::new(caller, req, "tokens"),
        tokens: service::list(&st.db, caller).await?,
        roles: Role::ALL.into_iter().filter(|r| !r.outranks(caller.role)).collect(),
        form_name: String::new(),
        form_description: String::new(),
        form_role: "operator".into(),
        form_expires: "90".into(),
        errors: FieldErrors::new(),
        created: None,
    })
}

pub async fn index(st: Data<AppState>, caller: PageCaller, req: HttpRequest) -> Result<HttpResponse, PageError> {
    let p = tokens_page(&st, &caller, &req).await?;
    page(&p.shell, &p)
}

#[derive(Deserialize)]
pub struct TokenForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    role: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    expires: String,
}

pub async fn create(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    form: Form<TokenForm>,
) -> Result<HttpResponse, PageError> {
    let f = form.into_inner();
    let input = NewToken { name: f.name.clone(), role: f.role.clone(), description: f.description.clone() };
    match service::create_expiring(&st.db, &caller, input, expiry_of(&f.expires)).await {
        Ok(created) => {
            let mut p = tokens_page(&st, &caller, &req).await?;
            p.created = Some((created.token.name, created.value));
            page(&p.shell, &p)
        }
        Err(TokenError::Invalid(errors)) => {
            let mut p = tokens_page(&st, &caller, &req).await?;
            p.form_name = f.name;
            p.form_description = f.description;
            p.form_role = f.role;
            p.form_expires = f.expires;
            p.errors = errors;
            page_status(StatusCode::UNPROCESSABLE_ENTITY, &p.shell, &p)
        }
        Err(e) => Err(e.into()),
    }
}

pub async fn revoke(st: Data<AppState>, caller: PageCaller, id: Path<String>) -> Result<HttpResponse, PageError> {
    let t = service::revoke(&st.db, &st.token_callers, &caller, &id).await?;
    Ok(redirect_with_flash(
        paths::TOKENS,
        "success",
        format!("Token “{}” revoked. Clients using it now get 401.", t.name),
    ))
}
