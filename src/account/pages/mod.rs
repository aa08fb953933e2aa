//! HTML: the account page (password, two-factor sign-in, sign-ins, API tokens) and the page where
//! someone who signed in with a one-time password chooses their own; setting up two-factor
//! sign-in is in [`two_factor`].

pub mod two_factor;

use actix_web::http::StatusCode;
use actix_web::web::{Data, Form, Path};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;
use secrecy::SecretString;
use serde::Deserialize;

use crate::access::Via;
use crate::auth::account::{self, PasswordChange};
use crate::auth::error::AuthError;
use crate::auth::model::SessionInfo;
use crate::auth::two_factor::service::{self as second_factor, Status as TwoFactorStatus};
use crate::state::AppState;
use crate::tokens::model::OwnToken;
use crate::tokens::service as tokens;
use crate::web::{
    page, page_status, paths, redirect_with_flash, render_status, ChoosingPassword, FieldErrors, PageCaller, PageError,
    Shell,
};

#[derive(Template)]
#[template(path = "account/index.html")]
pub struct AccountPage {
    pub shell: Shell,
    /// This browser's sign-in.
    pub session_id: String,
    pub sessions: Vec<SessionInfo>,
    pub tokens: Vec<OwnToken>,
    /// Two-factor sign-in, `None` while off.
    pub two_factor: Option<TwoFactorStatus>,
    pub errors: FieldErrors,
}

impl AccountPage {
    pub fn is_current(&self, s: &SessionInfo) -> bool {
        s.id == self.session_id
    }
    /// The browser of a sign-in in a few words (`Firefox on Linux`).
    pub fn browser(&self, s: &SessionInfo) -> String {
        s.user_agent.as_deref().map(browser_of).unwrap_or_else(|| "Not seen since it started".to_string())
    }
}

/// `Chrome on macOS` from a user agent; the user agent itself (cut short) when neither is known.
fn browser_of(ua: &str) -> String {
    const BROWSERS: [(&str, &str); 8] = [
        ("Edg/", "Edge"),
        ("OPR/", "Opera"),
        ("Firefox/", "Firefox"),
        ("HeadlessChrome/", "Headless Chrome"),
        ("Chromium/", "Chromium"),
        ("Chrome/", "Chrome"),
        ("Safari/", "Safari"),
        ("curl/", "curl"),
    ];
    const SYSTEMS: [(&str, &str); 7] = [
        ("Windows", "Windows"),
        ("iPhone", "iOS"),
        ("iPad", "iPadOS"),
        ("Android", "Android"),
        ("Mac OS X", "macOS"),
        ("CrOS", "ChromeOS"),
        ("Linux", "Linux"),
    ];
    let find = |table: &[(&str, &'static str)]| table.iter().find(|(needle, _)| ua.contains(needle)).map(|(_, n)| *n);
    match (find(&BROWSERS), find(&SYSTEMS)) {
        (Some(b), Some(o)) => format!("{b} on {o}"),
        (Some(one), None) | (None, Some(one)) => one.to_string(),
        (None, None) => ua.chars().take(60).collect(),
    }
}

pub(super) fn session_id(caller: &PageCaller) -> String {
    match &caller.via {
        Via::Session { session_id } => session_id.clone(),
        _ => String::new(),
    }
}

pub(super) async fn account_page(
    st: &AppState,
    caller: &PageCaller,
    req: &HttpRequest,
) -> Result<AccountPage, PageError> {
    Ok(AccountPage {
        shell: Shell::new(caller, req, "account"),
        session_id: session_id(caller),
        sessions: account::sessions(&st.db, &caller.user_id).await?,
        tokens: tokens::created_by(&st.db, &caller.user_id).await?,
        two_factor: second_factor::status(&st.db, &caller.user_id).await?,
        errors: FieldErrors::new(),
    })
}

pub async fn index(st: Data<AppState>, caller: PageCaller, req: HttpRequest) -> Result<HttpResponse, PageError> {
    let p = account_page(&st, &caller, &req).await?;
    page(&p.shell, &p)
}

#[derive(Deserialize)]
pub struct PasswordForm {
    #[serde(default)]
    current_password: String,
    #[serde(default)]
    new_password: String,
    #[serde(default)]
    confirm_password: String,
}

impl PasswordForm {
    fn change(self) -> PasswordChange {
        PasswordChange {
            current: SecretString::from(self.current_password),
            new: SecretString::from(self.new_password),
            confirm: SecretString::from(self.confirm_password),
        }
    }
}

fn ended_words(ended: u64) -> String {
    match ended {
        0 => "You had no other sign-in.".to_string(),
        1 => "Your 1 other sign-in was ended.".to_string(),
        n => format!("Your {n} other sign-ins were ended."),
    }
}

/// The account page's form: the current password and a new one.
pub async fn change_password(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    form: Form<PasswordForm>,
) -> Result<HttpResponse, PageError> {
    match account::change_password(&st, &caller.user_id, &session_id(&caller), form.into_inner().change()).await {
        Ok(ended) => Ok(redirect_with_flash(
            paths::ACCOUNT,
            "success",
            format!("Password changed. {} API tokens keep working.", ended_words(ended)),
        )),
        Err(AuthError::Invalid(errors)) => refused(&st, &caller, &req, errors).await,
        Err(e) => Err(e.into()),
    }
}

/// The account page again, with the messages of a refused form at their fields (422).
pub(super) async fn refused(
    st: &AppState,
    caller: &PageCaller,
    req: &HttpRequest,
    errors: FieldErrors,
) -> Result<HttpResponse, PageError> {
    let mut p = account_page(st, caller, req).await?;
    p.errors = errors;
    page_status(StatusCode::UNPROCESSABLE_ENTITY, &p.shell, &p)
}

#[derive(Template)]
#[template(path = "account/password.html")]
pub struct PasswordPage {
    pub csrf_token: String,
    pub email: String,
    pub errors: FieldErrors,
}

/// Where a sign-in with a one-time password is sent; anyone else has the account page.
pub async fn password_form(who: ChoosingPassword) -> Result<HttpResponse, PageError> {
    let who = who.0;
    if !who.must_change_password {
        return Ok(crate::web::see_other(paths::ACCOUNT));
    }
    let p = PasswordPage { csrf_token: who.csrf_token, email: who.email, errors: FieldErrors::new() };
    render_status(StatusCode::OK, &p)
}

/// The password page's form (the one-time password and the person's own).
pub async fn choose_password(
    st: Data<AppState>,
    who: ChoosingPassword,
    form: Form<PasswordForm>,
) -> Result<HttpResponse, PageError> {
    let who = who.0;
    match account::change_password(&st, &who.user_id, &who.session_id, form.into_inner().change()).await {
        Ok(_) => Ok(redirect_with_flash(paths::HOME, "success", "Your password is set. Use it from now on.")),
        Err(AuthError::Invalid(errors)) => {
            let p = PasswordPage { csrf_token: who.csrf_token, email: who.email, errors };
            render_status(StatusCode::UNPROCESSABLE_ENTITY, &p)
        }
        Err(e) => Err(e.into()),
    }
}

/// Ends another of the person's sign-ins (that browser is signed out at its next request).
pub async fn end_session(st: Data<AppState>, caller: PageCaller, id: Path<String>) -> Result<HttpResponse, PageError> {
    account::end_session(&st.db, &caller.user_id, &id).await?;
    if *id == session_id(&caller) {
        return Ok(crate::web::see_other(paths::LOGIN));
    }
    Ok(redirect_with_flash(paths::ACCOUNT, "success", "That sign-in was ended: its browser is signed out."))
}

/// Revokes an API token the person created, in whichever of their organizations it lives.
pub async fn revoke_token(st: Data<AppState>, caller: PageCaller, id: Path<String>) -> Result<HttpResponse, PageError> {
    let t = tokens::revoke_own(&st.db, &st.token_callers, &caller.user_id, &caller.email, &session_id(&caller), &id)
        .await?;
    Ok(redirect_with_flash(
        paths::ACCOUNT,
        "success",
        format!("Token “{}” revoked. Clients using it now get 401.", t.name),
    ))
}

#[cfg(test)]
mod tests {
    use super::browser_of;

    #[test]
    fn a_user_agent_reads_as_a_browser_and_a_system() {
        let chrome =
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
        assert_eq!(browser_of(chrome), "Chrome on Linux");
        let firefox = "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0";
        assert_eq!(browser_of(firefox), "Firefox on Windows");
        let safari =
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Version/17.0 Safari/604.1";
        assert_eq!(browser_of(safari), "Safari on iOS");
        assert_eq!(browser_of("curl/8.5.0"), "curl");
        assert_eq!(browser_of("reqwest"), "reqwest");
    }
}
