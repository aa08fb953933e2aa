//! HTML: asking for a password-reset link (`/forgot-password`) and the link's own page
//! (`/reset-password/{token}`), both without a sign-in.

use actix_web::http::StatusCode;
use actix_web::web::{Data, Form, Path};
use actix_web::{HttpRequest, HttpResponse, HttpResponseBuilder};
use askama::Template;
use secrecy::SecretString;
use serde::Deserialize;

use super::html;
use crate::auth::error::AuthError;
use crate::auth::{forgot, service};
use crate::state::AppState;
use crate::web::csrf;
use crate::web::error::AppError;
use crate::web::{paths, FieldErrors, FormRefusal, PageError};

#[derive(Template)]
#[template(path = "auth/forgot.html")]
pub struct ForgotPage {
    pub csrf_token: String,
    pub email: String,
    /// Whether this console sends mail (`AGENTICOS_SMTP_URL`); without, the page says whom to ask.
    pub mail: bool,
    /// The address a link was asked for, once the form was sent.
    pub sent: Option<String>,
    pub errors: FieldErrors,
}

#[derive(Template)]
#[template(path = "auth/reset_link.html")]
pub struct ResetLinkPage {
    pub csrf_token: String,
    pub token: String,
    /// Whose password the link sets; empty when the link is gone.
    pub email: String,
    /// The link is unknown, expired or used: the page says so and offers a new one.
    pub gone: bool,
    pub errors: FieldErrors,
}

fn forgot_page(
    st: &AppState,
    req: &HttpRequest,
    res: HttpResponseBuilder,
    email: String,
    sent: Option<String>,
    errors: FieldErrors,
) -> Result<HttpResponse, PageError> {
    let (csrf_token, cookie) = csrf::token_for_page(&st.csrf_key, req, st.config.http.secure_cookies());
    let page = ForgotPage { csrf_token, email, mail: st.mailer.is_some(), sent, errors };
    Ok(html(res, page.render().map_err(AppError::from)?, cookie))
}

pub async fn forgot_form(st: Data<AppState>, req: HttpRequest) -> Result<HttpResponse, PageError> {
    if service::setup_needed(&st.db).await? {
        return Ok(crate::web::see_other(paths::SETUP));
    }
    forgot_page(&st, &req, HttpResponse::Ok(), String::new(), None, FieldErrors::new())
}

#[derive(Deserialize)]
pub struct ForgotForm {
    #[serde(default)]
    email: String,
}

pub async fn forgot(st: Data<AppState>, req: HttpRequest, form: Form<ForgotForm>) -> Result<HttpResponse, PageError> {
    let email = form.into_inner().email;
    if st.mailer.is_none() {
        // Nothing can be sent: the page says whom to ask instead (its form is not shown).
        return forgot_page(&st, &req, HttpResponse::Conflict(), email, None, FieldErrors::new());
    }
    let public_url = st.config.http.public_url.clone();
    let link = move |token: &str| paths::password_reset_link(&public_url, token);
    match forgot::request_link(&st, &email, link).await {
        Ok(()) => {
            let sent = email.trim().to_ascii_lowercase();
            forgot_page(&st, &req, HttpResponse::Ok(), String::new(), Some(sent), FieldErrors::new())
        }
        Err(e @ AuthError::Invalid(_)) => {
            let refusal = FormRefusal::of(e);
            forgot_page(&st, &req, refusal.response(), email, None, refusal.errors)
        }
        Err(e) => Err(AppError::from(e).into()),
    }
}

fn reset_page(
    st: &AppState,
    req: &HttpRequest,
    status: StatusCode,
    token: String,
    email: String,
    errors: FieldErrors,
) -> Result<HttpResponse, PageError> {
    let (csrf_token, cookie) = csrf::token_for_page(&st.csrf_key, req, st.config.http.secure_cookies());
    let gone = status == StatusCode::GONE;
    let token = if gone { String::new() } else { token };
    let page = ResetLinkPage { csrf_token, token, email, gone, errors };
    Ok(html(HttpResponse::build(status), page.render().map_err(AppError::from)?, cookie))
}

pub async fn reset_form(st: Data<AppState>, req: HttpRequest, token: Path<String>) -> Result<HttpResponse, PageError> {
    let token = token.into_inner();
    match forgot::link_email(&st, &token).await {
        Ok(email) => reset_page(&st, &req, StatusCode::OK, token, email, FieldErrors::new()),
        Err(AuthError::ResetLinkGone) => {
            reset_page(&st, &req, StatusCode::GONE, token, String::new(), FieldErrors::new())
        }
        Err(e) => Err(AppError::from(e).into()),
    }
}

#[derive(Deserialize)]
pub struct ResetForm {
    #[serde(default)]
    new_password: String,
    #[serde(default)]
    confirm_password: String,
}

pub async fn reset(
    st: Data<AppState>,
    req: HttpRequest,
    token: Path<String>,
    form: Form<ResetForm>,
) -> Result<HttpResponse, PageError> {
    let token = token.into_inner();
    let f = form.into_inner();
    let result = forgot::reset_with_link(
        &st,
        &token,
        SecretString::from(f.new_password),
        SecretString::from(f.confirm_password),
    )
    .await;
    match result {
        Ok(_) => Ok(crate::web::see_other(paths::LOGIN_AFTER_RESET)),
        Err(AuthError::ResetLinkGone) => {
            reset_page(&st, &req, StatusCode::GONE, token, String::new(), FieldErrors::new())
        }
        Err(e @ AuthError::Invalid(_)) => {
            let email = forgot::link_email(&st, &token).await.unwrap_or_default();
            let refusal = FormRefusal::of(e);
            reset_page(&st, &req, StatusCode::UNPROCESSABLE_ENTITY, token, email, refusal.errors)
        }
        Err(e) => Err(AppError::from(e).into()),
    }
}
