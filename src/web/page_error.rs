//! Answering a page: a template rendered (a template error is a 500), a 303, or the error page —
//! for htmx, the message swapped into `#flash` — with the status from the table in
//! [`super::error`].

use std::fmt;

use actix_web::http::{header, StatusCode};
use actix_web::{HttpResponse, HttpResponseBuilder, ResponseError};
use askama::Template;

use super::context;
use super::error::{AppError, FieldErrors, Kind};

/// The error page for someone not signed in; [`super::error_frame`] frames a 403 or 404 in the
/// console's navigation for someone who is (it finds this page in the response's extensions).
#[derive(Template, Clone, Debug)]
#[template(path = "errors/error.html")]
pub struct ErrorPage {
    pub status: u16,
    pub title: String,
    pub detail: String,
    pub request_id: String,
}

#[derive(Template)]
#[template(path = "errors/_flash.html")]
pub struct FlashPartial {
    pub level: &'static str,
    pub message: String,
}

pub struct PageError(pub AppError);

impl<E: Into<AppError>> From<E> for PageError {
    fn from(e: E) -> Self {
        PageError(e.into())
    }
}

impl fmt::Debug for PageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Display for PageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

pub fn page_error_response(err: &AppError) -> HttpResponse {
    err.log();
    let ctx = context::current();
    let is_htmx = ctx.as_ref().map(|c| c.is_htmx).unwrap_or(false);
    let status = err.kind.status();
    if matches!(
        err.kind,
        Kind::Unauthenticated | Kind::NeedsOrganization | Kind::PasswordChangeRequired | Kind::TwoFactorRequired
    ) {
        let to = match err.kind {
            Kind::Unauthenticated => super::paths::login_then(ctx.as_ref().and_then(|c| c.return_to.as_deref())),
            Kind::PasswordChangeRequired => super::paths::ACCOUNT_PASSWORD.to_string(),
            Kind::TwoFactorRequired => super::paths::ACCOUNT_TWO_FACTOR.to_string(),
            _ => super::paths::ORGS_NEW.to_string(),
        };
        return if is_htmx {
            HttpResponse::Ok().insert_header(("HX-Redirect", to)).finish()
        } else {
            HttpResponse::SeeOther().insert_header((header::LOCATION, to)).finish()
        };
    }
    let mut res = HttpResponse::build(status);
    res.content_type("text/html; charset=utf-8");
    if let Some(s) = err.retry_after {
        res.insert_header((header::RETRY_AFTER, s.to_string()));
    }
    if is_htmx {
        let flash = FlashPartial { level: "error", message: err.public_detail() };
        res.insert_header(("HX-Retarget", "#flash"))
            .insert_header(("HX-Reswap", "innerHTML"))
            .insert_header(("HX-Reselect", ".flash"));
        return res.body(flash.render().unwrap_or_else(|_| "Something went wrong".into()));
    }
    let page = ErrorPage {
        status: status.as_u16(),
        title: err.kind.title().to_string(),
        detail: err.public_detail(),
        request_id: context::request_id(),
    };
    let body = page.render().unwrap_or_else(|_| "Something went wrong".into());
    let mut res = res.body(body);
    res.extensions_mut().insert(page);
    res
}

impl ResponseError for PageError {
    fn status_code(&self) -> StatusCode {
        self.0.kind.status()
    }
    fn error_response(&self) -> HttpResponse {
        page_error_response(&self.0)
    }
}

/// A refusal a form answers by showing itself again (sign-in, first-run setup, joining by
/// invitation) rather than the error page: its status, the words above the form and a lock-out's
/// `Retry-After` are the table's ([`super::error`]); field messages sit at their fields.
pub struct FormRefusal {
    /// Shown above the form; none for field errors (422), which sit at their fields.
    pub message: Option<String>,
    pub errors: FieldErrors,
    status: StatusCode,
    retry_after: Option<u64>,
}

impl FormRefusal {
    pub fn of(err: impl Into<AppError>) -> Self {
        let err = err.into();
        FormRefusal {
            message: (err.kind != Kind::Invalid).then(|| err.public_detail()),
            status: err.kind.status(),
            retry_after: err.retry_after,
            errors: err.fields,
        }
    }

    /// The response to render the form into: the table's status and, for a lock-out, `Retry-After`.
    pub fn response(&self) -> HttpResponseBuilder {
        let mut res = HttpResponse::build(self.status);
        if let Some(s) = self.retry_after {
            res.insert_header((header::RETRY_AFTER, s.to_string()));
        }
        res
    }
}

/// Renders a template into a 200 HTML response; a template error is a 500.
pub fn render<T: Template>(t: &T) -> Result<HttpResponse, PageError> {
    render_status(StatusCode::OK, t)
}

pub fn render_status<T: Template>(status: StatusCode, t: &T) -> Result<HttpResponse, PageError> {
    let body = t.render().map_err(AppError::from)?;
    Ok(HttpResponse::build(status).content_type("text/html; charset=utf-8").body(body))
}

/// 303 to `to` for plain forms; for htmx, `HX-Redirect`.
pub fn see_other(to: &str) -> HttpResponse {
    let is_htmx = context::current().map(|c| c.is_htmx).unwrap_or(false);
    if is_htmx {
        HttpResponse::Ok().insert_header(("HX-Redirect", to.to_string())).finish()
    } else {
        HttpResponse::SeeOther().insert_header((header::LOCATION, to.to_string())).finish()
    }
}
