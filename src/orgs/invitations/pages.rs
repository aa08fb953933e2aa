//! HTML: the invitation link's page, open to everyone, and the invitee's Accept and Decline on
//! the notice of their pending invitations.

use actix_web::cookie::Cookie;
use actix_web::http::header;
use actix_web::web::{Data, Form, Path};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;
use secrecy::SecretString;
use serde::Deserialize;

use super::model::InvitationRecord;
use super::service::{self, Invitee};
use crate::auth::error::AuthError;
use crate::auth::joining;
use crate::auth::pages::session_cookie;
use crate::state::AppState;
use crate::web::error::AppError;
use crate::web::{
    csrf, paths, redirect_with_flash, see_other, FieldErrors, FormRefusal, MaybeSignedIn, PageError, SignedIn,
};

/// Who is looking at an invitation link.
pub enum Viewer {
    /// Signed in as the invited address: one button joins.
    Invitee,
    /// Signed in as another address (the one shown).
    Other(String),
    /// Not signed in: one password field, for an existing account or a new one.
    SignedOut,
}

#[derive(Template)]
#[template(path = "orgs/invitations/show.html")]
pub struct InvitationPage {
    pub csrf_token: String,
    pub code: String,
    pub invitation: InvitationRecord,
    pub viewer: Viewer,
    pub message: Option<String>,
    pub errors: FieldErrors,
}

fn viewer(who: &Option<SignedIn>, invitation: &InvitationRecord) -> Viewer {
    match who {
        Some(s) if s.email == invitation.email => Viewer::Invitee,
        Some(s) => Viewer::Other(s.email.clone()),
        None => Viewer::SignedOut,
    }
}

/// The page (with a refusal of the join form, shown on it); never cached, since its address
/// carries the code.
fn invitation_page(
    st: &AppState,
    req: &HttpRequest,
    who: &Option<SignedIn>,
    code: String,
    invitation: InvitationRecord,
    refusal: Option<FormRefusal>,
) -> Result<HttpResponse, PageError> {
    let (csrf_token, cookie) = csrf::token_for_page(&st.csrf_key, req, st.config.http.secure_cookies());
    let viewer = viewer(who, &invitation);
    let (mut res, message, errors) = match refusal {
        Some(r) => (r.response(), r.message, r.errors),
        None => (HttpResponse::Ok(), None, FieldErrors::new()),
    };
    let page = InvitationPage { csrf_token, code, invitation, viewer, message, errors };
    res.content_type("text/html; charset=utf-8").insert_header((header::CACHE_CONTROL, "no-store"));
    if let Some(c) = cookie {
        res.cookie(c);
    }
    Ok(res.body(page.render().map_err(AppError::from)?))
}

pub async fn show(
    st: Data<AppState>,
    req: HttpRequest,
    code: Path<String>,
    who: MaybeSignedIn,
) -> Result<HttpResponse, PageError> {
    let code = code.into_inner();
    let invitation = service::by_code(&st.db, &code).await?;
    invitation_page(&st, &req, &who.0, code, invitation, None)
}

#[derive(Deserialize)]
pub struct JoinForm {
    #[serde(default)]
    password: String,
    /// The password again; a browser always sends it (empty when left blank).
    confirm_password: Option<String>,
}

fn joined_message(i: &InvitationRecord) -> String {
    format!("Welcome to {}. You joined as {}.", i.organization_name, i.role)
}

fn invitee(who: &SignedIn) -> Invitee<'_> {
    Invitee { user_id: &who.user_id, email: &who.email, session_id: &who.session_id }
}

/// Joins: signed in as the invited address, at once; signed out, with the password of the
/// address's account, or the one chosen for a new account.
pub async fn accept(
    st: Data<AppState>,
    req: HttpRequest,
    code: Path<String>,
    who: MaybeSignedIn,
    form: Form<JoinForm>,
) -> Result<HttpResponse, PageError> {
    let code = code.into_inner();
    if let Some(s) = &who.0 {
        let i = service::accept_by_code(&st.db, &invitee(s), &code).await?;
        return Ok(redirect_with_flash(paths::HOME, "success", joined_message(&i)));
    }
    let form = form.into_inner();
    let password = SecretString::from(form.password);
    let confirm = form.confirm_password.map(SecretString::from);
    // The form shows these refusals itself, with the table's status and words (web/error.rs).
    let refusal = match joining::join_with_password(&st, &code, password, confirm).await {
        Ok(joined) => {
            let mut res = redirect_with_flash(paths::HOME, "success", joined_message(&joined.invitation));
            let cookie: Cookie<'static> = session_cookie(&st, &joined.session);
            let _ = res.add_cookie(&cookie);
            return Ok(res);
        }
        Err(e @ (AuthError::Invalid(_) | AuthError::WrongPassword | AuthError::LockedOut { .. })) => FormRefusal::of(e),
        Err(e) => return Err(AppError::from(e).into()),
    };
    let invitation = service::by_code(&st.db, &code).await?;
    invitation_page(&st, &req, &who.0, code, invitation, Some(refusal))
}

/// Accepts one of the signed-in person's pending invitations (the home page's notice).
pub async fn accept_pending(st: Data<AppState>, who: SignedIn, id: Path<String>) -> Result<HttpResponse, PageError> {
    let i = service::accept_by_id(&st.db, &invitee(&who), &id).await?;
    Ok(redirect_with_flash(paths::HOME, "success", joined_message(&i)))
}

/// Declines one of the signed-in person's pending invitations.
pub async fn decline_pending(st: Data<AppState>, who: SignedIn, id: Path<String>) -> Result<HttpResponse, PageError> {
    let i = service::decline(&st.db, &invitee(&who), &id).await?;
    if who.orgs.is_empty() {
        // The page for people without an organization shows no messages.
        return Ok(see_other(paths::ORGS_NEW));
    }
    Ok(redirect_with_flash(paths::HOME, "success", format!("You declined the invitation to {}.", i.organization_name)))
}
