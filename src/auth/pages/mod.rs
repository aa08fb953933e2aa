//! HTML: first-run setup, sign-in, sign-out; a forgotten password in [`forgot`].

pub mod forgot;
pub mod two_factor;

use actix_web::cookie::{time::Duration as CookieDuration, Cookie, SameSite};
use actix_web::web::{Data, Form, Query};
use actix_web::{HttpRequest, HttpResponse, HttpResponseBuilder};
use askama::Template;
use secrecy::SecretString;
use serde::Deserialize;

use super::error::AuthError;
use super::service::{self, LoginInput, NewSession, SetupInput, SignIn};
use crate::state::AppState;
use crate::web::csrf;
use crate::web::error::AppError;
use crate::web::{paths, FieldErrors, FormRefusal, PageError};

#[derive(Template)]
#[template(path = "auth/setup.html")]
pub struct SetupPage {
    pub csrf_token: String,
    pub email: String,
    pub organization: String,
    pub errors: FieldErrors,
}

#[derive(Template)]
#[template(path = "auth/login.html")]
pub struct LoginPage {
    pub csrf_token: String,
    /// Where to go once signed in (a same-site path), or empty for Home.
    pub next: String,
    pub email: String,
    pub message: Option<String>,
    /// Good news above the form (a password just set with a mailed link).
    pub notice: Option<String>,
    pub errors: FieldErrors,
}

/// An auth page's HTML answer, with the CSRF cookie a first visit gets.
pub(super) fn html(mut res: HttpResponseBuilder, body: String, cookie: Option<Cookie<'static>>) -> HttpResponse {
    res.content_type("text/html; charset=utf-8");
    if let Some(c) = cookie {
        res.cookie(c);
    }
    res.body(body)
}

/// The sign-in cookie of a new session.
pub fn session_cookie(st: &AppState, s: &NewSession) -> Cookie<'static> {
    Cookie::build(csrf::SESSION_COOKIE, s.cookie_value.clone())
        .path("/")
        .http_only(true)
        .secure(st.config.http.secure_cookies())
        .same_site(SameSite::Lax)
        .max_age(CookieDuration::seconds(s.max_age_seconds))
        .finish()
}

/// Signed in: to `next` when it is a path on this site, else Home.
pub(super) fn signed_in_redirect(st: &AppState, s: &NewSession, next: &str) -> HttpResponse {
    let mut res = crate::web::see_other(paths::safe_next(next).unwrap_or(paths::HOME));
    let _ = res.add_cookie(&session_cookie(st, s));
    res
}

pub async fn setup_form(st: Data<AppState>, req: HttpRequest) -> Result<HttpResponse, PageError> {
    if !service::setup_needed(&st.db).await? {
        return Err(AppError::not_found().into());
    }
    let (csrf_token, cookie) = csrf::token_for_page(&st.csrf_key, &req, st.config.http.secure_cookies());
    let page = SetupPage { csrf_token, email: String::new(), organization: String::new(), errors: FieldErrors::new() };
    Ok(html(HttpResponse::Ok(), page.render().map_err(AppError::from)?, cookie))
}

#[derive(Deserialize)]
pub struct SetupForm {
    #[serde(default)]
    email: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    organization: String,
}

pub async fn setup(st: Data<AppState>, req: HttpRequest, form: Form<SetupForm>) -> Result<HttpResponse, PageError> {
    let f = form.into_inner();
    let input = SetupInput {
        email: f.email.clone(),
        password: SecretString::from(f.password),
        organization: f.organization.clone(),
    };
    match service::setup(&st, input).await {
        Ok(session) => Ok(signed_in_redirect(&st, &session, paths::HOME)),
        Err(e @ AuthError::Invalid(_)) => {
            let refusal = FormRefusal::of(e);
            let (csrf_token, cookie) = csrf::token_for_page(&st.csrf_key, &req, st.config.http.secure_cookies());
            let res = refusal.response();
            let page = SetupPage { csrf_token, email: f.email, organization: f.organization, errors: refusal.errors };
            Ok(html(res, page.render().map_err(AppError::from)?, cookie))
        }
        Err(e) => Err(AppError::from(e).into()),
    }
}

/// `?next=`: the page that asked for a sign-in.
#[derive(Deserialize, Default)]
pub struct NextQuery {
    #[serde(default)]
    next: String,
    /// `done` after a password was set with a mailed link.
    #[serde(default)]
    reset: String,
}

/// `next` when it is a same-site path, else empty (sign-in then goes Home).
pub(super) fn checked_next(next: &str) -> String {
    paths::safe_next(next).unwrap_or_default().to_string()
}

pub async fn login_form(
    st: Data<AppState>,
    req: HttpRequest,
    query: Query<NextQuery>,
) -> Result<HttpResponse, PageError> {
    if service::setup_needed(&st.db).await? {
        return Ok(crate::web::see_other(paths::SETUP));
    }
    let (csrf_token, cookie) = csrf::token_for_page(&st.csrf_key, &req, st.config.http.secure_cookies());
    let next = checked_next(&query.next);
    let notice = (query.reset == "done").then(|| "Your new password is set. Sign in with it.".to_string());
    let page = LoginPage { csrf_token, next, email: String::new(), message: None, notice, errors: FieldErrors::new() };
    Ok(html(HttpResponse::Ok(), page.render().map_err(AppError::from)?, cookie))
}

#[derive(Deserialize)]
pub struct LoginForm {
    #[serde(default)]
    email: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    next: String,
}

pub async fn login(st: Data<AppState>, req: HttpRequest, form: Form<LoginForm>) -> Result<HttpResponse, PageError> {
    let f = form.into_inner();
    let result =
        service::login(&st, LoginInput { email: f.email.clone(), password: SecretString::from(f.password) }).await;
    // The form shows these refusals itself, with the table's status and words (web/error.rs).
    let refusal = match result {
        Ok(SignIn::Session(session)) => return Ok(signed_in_redirect(&st, &session, &f.next)),
        Ok(SignIn::SecondStep(challenge)) => {
            let next = checked_next(&f.next);
            let to = match next.is_empty() {
                true => paths::LOGIN_TWO_FACTOR.to_string(),
                false => paths::login_two_factor_then(&next),
            };
            let mut res = crate::web::see_other(&to);
            let _ = res.add_cookie(&two_factor::challenge_cookie(&st, &challenge));
            return Ok(res);
        }
        Err(e @ (AuthError::Invalid(_) | AuthError::BadCredentials | AuthError::LockedOut { .. })) => {
            FormRefusal::of(e)
        }
        Err(e) => return Err(AppError::from(e).into()),
    };
    let (csrf_token, cookie) = csrf::token_for_page(&st.csrf_key, &req, st.config.http.secure_cookies());
    let res = refusal.response();
    let FormRefusal { message, errors, .. } = refusal;
    let page = LoginPage { csrf_token, next: checked_next(&f.next), email: f.email, message, notice: None, errors };
    Ok(html(res, page.render().map_err(AppError::from)?, cookie))
}

pub async fn logout(st: Data<AppState>, req: HttpRequest) -> Result<HttpResponse, PageError> {
    if let Some(c) = req.cookie(csrf::SESSION_COOKIE) {
        service::logout(&st.db, c.value()).await?;
    }
    let mut res = crate::web::see_other(paths::LOGIN);
    let mut gone = Cookie::build(csrf::SESSION_COOKIE, "").path("/").finish();
    gone.make_removal();
    let _ = res.add_cookie(&gone);
    Ok(res)
}
