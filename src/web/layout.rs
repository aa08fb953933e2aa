//! What the base layout needs on every signed-in page: who, which organization, which nav item,
//! the CSRF token, and a one-time flash message carried across a redirect in a cookie.

use actix_web::cookie::{Cookie, SameSite};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;
use base64::Engine;

use super::error::AppError;
use super::guard::PageCaller;
use super::page_error::PageError;
use crate::orgs::model::{OrgChoice, Role};

const FLASH_COOKIE: &str = "agos_flash";

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Flash {
    pub level: String,
    pub message: String,
}

/// The frame around every signed-in page.
#[derive(Debug, Clone)]
pub struct Shell {
    pub email: String,
    pub org_id: String,
    pub org_name: String,
    pub role: Role,
    pub orgs: Vec<OrgChoice>,
    pub csrf_token: String,
    pub active: &'static str,
    pub flash: Option<Flash>,
}

impl Shell {
    pub fn new(caller: &PageCaller, req: &HttpRequest, active: &'static str) -> Shell {
        Shell {
            email: caller.email.clone(),
            org_id: caller.org_id.clone(),
            org_name: caller.org_name.clone(),
            role: caller.role,
            orgs: caller.orgs.clone(),
            csrf_token: caller.csrf_token.clone(),
            active,
            flash: read_flash(req),
        }
    }

    /// `aria-current="page"` for the active nav item.
    pub fn current(&self, item: &str) -> &'static str {
        if self.active == item {
            "page"
        } else {
            "false"
        }
    }

    pub fn csrf_header(&self) -> String {
        serde_json::json!({ "X-CSRF-Token": self.csrf_token }).to_string()
    }
}

fn read_flash(req: &HttpRequest) -> Option<Flash> {
    let c = req.cookie(FLASH_COOKIE)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(c.value()).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Renders a signed-in page; a flash it showed is cleared.
pub fn page<T: Template>(shell: &Shell, t: &T) -> Result<HttpResponse, PageError> {
    page_status(actix_web::http::StatusCode::OK, shell, t)
}

pub fn page_status<T: Template>(
    status: actix_web::http::StatusCode,
    shell: &Shell,
    t: &T,
) -> Result<HttpResponse, PageError> {
    let body = t.render().map_err(AppError::from)?;
    let mut res = HttpResponse::build(status);
    res.content_type("text/html; charset=utf-8");
    if shell.flash.is_some() {
        let mut gone = Cookie::build(FLASH_COOKIE, "").path("/").finish();
        gone.make_removal();
        res.cookie(gone);
    }
    Ok(res.body(body))
}

/// A 303 (or `HX-Redirect`) to `to` that shows `message` on the next page.
pub fn redirect_with_flash(to: &str, level: &str, message: impl Into<String>) -> HttpResponse {
    let flash = Flash { level: level.to_string(), message: message.into() };
    let value = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(serde_json::to_vec(&flash).unwrap_or_default());
    let mut res = super::page_error::see_other(to);
    let cookie = Cookie::build(FLASH_COOKIE, value).path("/").http_only(true).same_site(SameSite::Lax).finish();
    let _ = res.add_cookie(&cookie);
    res
}
