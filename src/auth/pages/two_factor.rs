//! HTML: the second step of a sign-in (a code of the app, or a recovery code), behind its own
//! cookie, which opens nothing else.

use actix_web::cookie::{time::Duration as CookieDuration, Cookie, SameSite};
use actix_web::web::{Data, Form};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;
use serde::Deserialize;

use super::{checked_next, html, signed_in_redirect};
use crate::auth::error::AuthError;
use crate::auth::two_factor::sign_in::{self, Challenge};
use crate::state::AppState;
use crate::web::csrf;
use crate::web::error::AppError;
use crate::web::{paths, FieldErrors, FormRefusal, PageError};

/// The cookie of a sign-in's second step; sent only to its page.
pub const COOKIE: &str = "agos_second_step";

#[derive(Template)]
#[template(path = "auth/two_factor.html")]
pub struct SecondStepPage {
    pub csrf_token: String,
    pub next: String,
    pub message: Option<String>,
    pub errors: FieldErrors,
}

/// The second step's cookie: HttpOnly, SameSite, for its page only, for as long as it lasts.
pub(super) fn challenge_cookie(st: &AppState, c: &Challenge) -> Cookie<'static> {
    Cookie::build(COOKIE, c.cookie_value.clone())
        .path(paths::LOGIN_TWO_FACTOR)
        .http_only(true)
        .secure(st.config.http.secure_cookies())
        .same_site(SameSite::Lax)
        .max_age(CookieDuration::seconds(c.max_age_seconds))
        .finish()
}

fn cookie_gone() -> Cookie<'static> {
    let mut gone = Cookie::build(COOKIE, "").path(paths::LOGIN_TWO_FACTOR).finish();
    gone.make_removal();
    gone
}

fn back_to_login() -> HttpResponse {
    let mut res = crate::web::see_other(paths::LOGIN);
    let _ = res.add_cookie(&cookie_gone());
    res
}

#[derive(Deserialize, Default)]
pub struct NextQuery {
    #[serde(default)]
    next: String,
}

pub async fn form(
    st: Data<AppState>,
    req: HttpRequest,
    query: actix_web::web::Query<NextQuery>,
) -> Result<HttpResponse, PageError> {
    let live = match req.cookie(COOKIE) {
        Some(c) => sign_in::is_live(&st, c.value()).await?,
        None => false,
    };
    if !live {
        return Ok(back_to_login());
    }
    let (csrf_token, cookie) = csrf::token_for_page(&st.csrf_key, &req, st.config.http.secure_cookies());
    let page =
        SecondStepPage { csrf_token, next: checked_next(&query.next), message: None, errors: FieldErrors::new() };
    Ok(html(HttpResponse::Ok(), page.render().map_err(AppError::from)?, cookie))
}

#[derive(Deserialize)]
pub struct SecondStepForm {
    #[serde(default)]
    code: String,
    #[serde(default)]
    next: String,
}

pub async fn submit(
    st: Data<AppState>,
    req: HttpRequest,
    form: Form<SecondStepForm>,
) -> Result<HttpResponse, PageError> {
    let f = form.into_inner();
    let Some(cookie_value) = req.cookie(COOKIE).map(|c| c.value().to_string()) else {
        return Ok(back_to_login());
    };
    let refusal = match sign_in::complete(&st, &cookie_value, &f.code).await {
        Ok(session) => {
            let mut res = signed_in_redirect(&st, &session, &f.next);
            let _ = res.add_cookie(&cookie_gone());
            return Ok(res);
        }
        Err(AuthError::SecondStepGone) => return Ok(back_to_login()),
        Err(e @ (AuthError::Invalid(_) | AuthError::LockedOut { .. })) => FormRefusal::of(e),
        Err(e) => return Err(AppError::from(e).into()),
    };
    let (csrf_token, cookie) = csrf::token_for_page(&st.csrf_key, &req, st.config.http.secure_cookies());
    let res = refusal.response();
    let FormRefusal { message, errors, .. } = refusal;
    let page = SecondStepPage { csrf_token, next: checked_next(&f.next), message, errors };
    Ok(html(res, page.render().map_err(AppError::from)?, cookie))
}
