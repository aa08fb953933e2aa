//! Who is calling: the extractors every handler uses. A page without a sign-in redirects to
//! `/login`; an API call without credentials is a 401 problem. The API takes a session cookie (its
//! CSRF header is checked by the middleware) or `Authorization: Bearer`.

use actix_web::dev::Payload;
use actix_web::http::header;
use actix_web::web::Data;
use actix_web::{FromRequest, HttpRequest};
use futures_util::future::LocalBoxFuture;

use super::csrf;
use super::error::{AppError, Kind};
use super::page_error::PageError;
use super::problem::ApiError;
use crate::access::{Caller, Via};
use crate::auth::account;
use crate::auth::service as auth;
use crate::orgs::model::OrgChoice;
use crate::orgs::service as orgs;
use crate::state::AppState;
use crate::tokens::model::TokenCheck;
use crate::tokens::service as tokens;

/// A signed-in person, whatever organization they are in (or none yet).
#[derive(Debug, Clone)]
pub struct SignedIn {
    pub user_id: String,
    pub email: String,
    pub session_id: String,
    pub csrf_token: String,
    pub orgs: Vec<OrgChoice>,
    pub current: Option<OrgChoice>,
    /// Signed in with a password that was issued (a one-time password): until the person
    /// chooses their own, every page but the password page sends them there.
    pub must_change_password: bool,
    /// The current organization requires two-factor sign-in and this person has not set it
    /// up: until they do, every page but the enrolment page sends them there.
    pub must_enrol_two_factor: bool,
}

/// A signed-in person who has chosen their password but may still have to set up two-factor
/// sign-in: only the enrolment page takes this.
#[derive(Debug, Clone)]
pub struct EnrollingTwoFactor(pub SignedIn);

/// A signed-in person who may still have to choose their password: only the password page
/// takes this (every other page refuses such a sign-in).
#[derive(Debug, Clone)]
pub struct ChoosingPassword(pub SignedIn);

/// The caller of a page: the [`Caller`] services take, plus what the layout shows (the CSRF token
/// for forms, the organization switcher).
#[derive(Debug, Clone)]
pub struct PageCaller {
    pub caller: Caller,
    pub csrf_token: String,
    pub orgs: Vec<OrgChoice>,
}

impl std::ops::Deref for PageCaller {
    type Target = Caller;
    fn deref(&self) -> &Caller {
        &self.caller
    }
}

fn state(req: &HttpRequest) -> Result<Data<AppState>, AppError> {
    req.app_data::<Data<AppState>>().cloned().ok_or_else(|| AppError::internal(anyhow::anyhow!("no app state")))
}

async fn signed_in(req: &HttpRequest) -> Result<SignedIn, AppError> {
    let st = state(req)?;
    let cookie = req.cookie(csrf::SESSION_COOKIE).ok_or_else(AppError::unauthenticated)?;
    let session = auth::session_for_cookie(&st.db, cookie.value()).await?.ok_or_else(AppError::unauthenticated)?;
    let user_agent = req.headers().get(header::USER_AGENT).and_then(|v| v.to_str().ok());
    account::note_use(&st.db, &session, user_agent).await?;
    let choices = orgs::choices(&st.db, &session.user_id).await?;
    let current = orgs::current(&choices, session.current_organization_id.as_deref());
    let must_enrol_two_factor = session.two_factor_on == 0 && current.as_ref().is_some_and(|c| c.requires_two_factor);
    Ok(SignedIn {
        user_id: session.user_id,
        email: session.email,
        session_id: session.id,
        csrf_token: st.csrf_key.for_session(cookie.value()),
        orgs: choices,
        current,
        must_change_password: session.must_change_password == 1,
        must_enrol_two_factor,
    })
}

/// A sign-in that may act: one still on an issued password may not, until it is changed.
fn chosen_password(s: SignedIn) -> Result<SignedIn, AppError> {
    if s.must_change_password {
        return Err(AppError::new(
            Kind::PasswordChangeRequired,
            "Choose your own password first: the one you signed in with was issued to you.",
        ));
    }
    Ok(s)
}

/// A sign-in that may act: its organization's two-factor requirement is met (API tokens are not
/// concerned: this is the session's rule).
fn two_factor_kept(s: SignedIn) -> Result<SignedIn, AppError> {
    if s.must_enrol_two_factor {
        return Err(AppError::new(
            Kind::TwoFactorRequired,
            "Your organization requires two-factor sign-in. Set it up to continue.",
        ));
    }
    Ok(s)
}

/// Both rules a sign-in keeps before it reaches anything: its own password, then two-factor
/// sign-in where the organization requires it.
fn cleared(s: SignedIn) -> Result<SignedIn, AppError> {
    chosen_password(s).and_then(two_factor_kept)
}

fn caller_of(s: SignedIn) -> Result<PageCaller, AppError> {
    let current = s.current.clone().ok_or_else(|| {
        AppError::new(Kind::NeedsOrganization, "You belong to no organization yet. Create one to continue.")
    })?;
    Ok(PageCaller {
        caller: Caller {
            user_id: s.user_id,
            email: s.email,
            org_id: current.organization_id,
            org_name: current.name,
            role: current.role,
            via: Via::Session { session_id: s.session_id },
        },
        csrf_token: s.csrf_token,
        orgs: s.orgs,
    })
}

fn bearer(req: &HttpRequest) -> Option<String> {
    let v = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    if v.len() > 7 && v[..7].eq_ignore_ascii_case("bearer ") {
        Some(v[7..].trim().to_string())
    } else {
        None
    }
}

async fn api_caller(req: &HttpRequest) -> Result<Caller, AppError> {
    if let Some(token) = bearer(req) {
        let st = state(req)?;
        let t = match tokens::authenticate(&st.db, &st.token_callers, &token).await? {
            TokenCheck::Valid(t) => t,
            TokenCheck::Expired => {
                return Err(AppError::new(
                    Kind::TokenExpired,
                    "This API token has expired. Create a new one on the API tokens page.",
                ))
            }
            TokenCheck::Invalid => {
                return Err(AppError::new(
                    Kind::Unauthenticated,
                    "This API token is not valid: it is unknown, revoked, or its creator left.",
                ))
            }
        };
        return Ok(Caller {
            user_id: t.user_id,
            email: t.email,
            org_id: t.org_id,
            org_name: t.org_name,
            role: t.role,
            via: Via::Token { token_id: t.token_id, name: t.name },
        });
    }
    caller_of(cleared(signed_in(req).await?)?).map(|p| p.caller)
}

impl FromRequest for SignedIn {
    type Error = PageError;
    type Future = LocalBoxFuture<'static, Result<Self, Self::Error>>;
    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move { signed_in(&req).await.and_then(cleared).map_err(PageError) })
    }
}

impl FromRequest for EnrollingTwoFactor {
    type Error = PageError;
    type Future = LocalBoxFuture<'static, Result<Self, Self::Error>>;
    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(
            async move { signed_in(&req).await.and_then(chosen_password).map(EnrollingTwoFactor).map_err(PageError) },
        )
    }
}

impl FromRequest for ChoosingPassword {
    type Error = PageError;
    type Future = LocalBoxFuture<'static, Result<Self, Self::Error>>;
    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move { signed_in(&req).await.map(ChoosingPassword).map_err(PageError) })
    }
}

impl FromRequest for PageCaller {
    type Error = PageError;
    type Future = LocalBoxFuture<'static, Result<Self, Self::Error>>;
    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move { signed_in(&req).await.and_then(cleared).and_then(caller_of).map_err(PageError) })
    }
}

/// A page open to everyone that differs for a signed-in person (an invitation link): `None`
/// without a live sign-in; any other failure is still an error.
pub struct MaybeSignedIn(pub Option<SignedIn>);

impl FromRequest for MaybeSignedIn {
    type Error = PageError;
    type Future = LocalBoxFuture<'static, Result<Self, Self::Error>>;
    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move {
            match signed_in(&req).await.and_then(cleared) {
                Ok(s) => Ok(MaybeSignedIn(Some(s))),
                Err(e) if e.kind == Kind::Unauthenticated => Ok(MaybeSignedIn(None)),
                Err(e) => Err(PageError(e)),
            }
        })
    }
}

/// The caller of an `/api/v1` route.
pub struct ApiCaller(pub Caller);

impl FromRequest for ApiCaller {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, Self::Error>>;
    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move { api_caller(&req).await.map(ApiCaller).map_err(ApiError) })
    }
}
