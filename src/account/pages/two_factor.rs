//! HTML: setting up two-factor sign-in (the QR code, the secret as text, the first code), the
//! recovery codes shown once, and switching it off. The enrolment page is also where a member of
//! an organization that requires two-factor sign-in is sent before anything else.

use actix_web::http::StatusCode;
use actix_web::web::{Data, Form};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;
use serde::Deserialize;

use crate::auth::error::AuthError;
use crate::auth::two_factor::service::{self as two_factor, Enrolment};
use crate::state::AppState;
use crate::web::{paths, redirect_with_flash, render_status, EnrollingTwoFactor, FieldErrors, PageCaller, PageError};

#[derive(Template)]
#[template(path = "account/two_factor.html")]
pub struct EnrolPage {
    pub csrf_token: String,
    pub email: String,
    pub enrolment: Enrolment,
    /// Sent here by an organization's requirement (the page says so, and offers no way back).
    pub required: bool,
    pub errors: FieldErrors,
}

#[derive(Template)]
#[template(path = "account/recovery_codes.html")]
pub struct RecoveryCodesPage {
    pub csrf_token: String,
    pub codes: Vec<String>,
}

async fn enrol_page(
    st: &AppState,
    who: &crate::web::SignedIn,
    errors: FieldErrors,
) -> Result<Option<EnrolPage>, PageError> {
    let Some(enrolment) = two_factor::enrolment(st, &who.user_id, &who.email).await? else {
        return Ok(None);
    };
    Ok(Some(EnrolPage {
        csrf_token: who.csrf_token.clone(),
        email: who.email.clone(),
        enrolment,
        required: who.must_enrol_two_factor,
        errors,
    }))
}

/// The enrolment page; with two-factor sign-in on already, the account page.
pub async fn enrol_form(st: Data<AppState>, who: EnrollingTwoFactor) -> Result<HttpResponse, PageError> {
    match enrol_page(&st, &who.0, FieldErrors::new()).await? {
        Some(p) => render_status(StatusCode::OK, &p),
        None => Ok(crate::web::see_other(paths::ACCOUNT)),
    }
}

#[derive(Deserialize)]
pub struct CodeForm {
    #[serde(default)]
    code: String,
}

/// The first code: two-factor sign-in is on, and the recovery codes are shown, once.
pub async fn confirm(
    st: Data<AppState>,
    who: EnrollingTwoFactor,
    form: Form<CodeForm>,
) -> Result<HttpResponse, PageError> {
    let who = who.0;
    match two_factor::confirm(&st, &who.user_id, &who.email, &form.code).await {
        Ok(codes) => render_status(StatusCode::OK, &RecoveryCodesPage { csrf_token: who.csrf_token, codes }),
        Err(AuthError::Invalid(errors)) => match enrol_page(&st, &who, errors).await? {
            Some(p) => render_status(StatusCode::UNPROCESSABLE_ENTITY, &p),
            None => Ok(crate::web::see_other(paths::ACCOUNT)),
        },
        Err(e) => Err(e.into()),
    }
}

#[derive(Deserialize)]
pub struct DisableForm {
    #[serde(default)]
    two_factor_proof: String,
}

/// Switches two-factor sign-in off, with a code of the app or the password.
pub async fn disable(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    form: Form<DisableForm>,
) -> Result<HttpResponse, PageError> {
    match two_factor::disable(&st, &caller.user_id, &caller.email, form.into_inner().two_factor_proof).await {
        Ok(()) => Ok(redirect_with_flash(
            paths::ACCOUNT,
            "success",
            "Two-factor sign-in is off: your password alone signs you in. Your recovery codes no longer work.",
        )),
        Err(AuthError::Invalid(errors)) => super::refused(&st, &caller, &req, errors).await,
        Err(e) => Err(e.into()),
    }
}
