//! CSRF protection for every state-changing request.
//!
//! Signed in, the token is an HMAC of the session cookie under a key derived from the vault
//! master key, so it is checked without a database round trip. Signed out (setup, login), it is a
//! random double-submit cookie. Plain forms carry it in the hidden field `csrf_token`; htmx sends
//! the `X-CSRF-Token` header (the layout sets it once). Bearer-token requests carry no ambient
//! credential and need none.

use actix_web::cookie::{Cookie, SameSite};
use actix_web::HttpRequest;

pub use crate::auth::secrets::CsrfKey;

pub const SESSION_COOKIE: &str = "agos_session";
pub const ANON_COOKIE: &str = "agos_csrf";
pub const HEADER: &str = "x-csrf-token";
pub const FIELD: &str = "csrf_token";

/// The token a request must present, or `None` when it holds no cookie to protect.
pub fn expected(key: &CsrfKey, req: &HttpRequest) -> Option<String> {
    if let Some(c) = req.cookie(SESSION_COOKIE) {
        return Some(key.for_session(c.value()));
    }
    req.cookie(ANON_COOKIE).map(|c| c.value().to_string()).filter(|v| v.len() >= 32)
}

/// The token for a page shown to this request, plus the anonymous cookie to set when the
/// browser has none yet. Mirrors [`expected`] exactly.
pub fn token_for_page(key: &CsrfKey, req: &HttpRequest, secure: bool) -> (String, Option<Cookie<'static>>) {
    if let Some(t) = expected(key, req) {
        return (t, None);
    }
    let token = crate::auth::secrets::random_token(32);
    let cookie = Cookie::build(ANON_COOKIE, token.clone())
        .path("/")
        .http_only(true)
        .secure(secure)
        .same_site(SameSite::Lax)
        .finish();
    (token, Some(cookie))
}

pub fn matches(expected: &str, provided: &str) -> bool {
    use subtle::ConstantTimeEq;
    expected.len() == provided.len() && bool::from(expected.as_bytes().ct_eq(provided.as_bytes()))
}
