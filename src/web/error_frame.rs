//! The 403 and 404 pages keep the console's navigation: for a person signed in (a live sign-in
//! with an organization), the error page that [`super::page_error`] answered is drawn again inside
//! the base layout, with the same status and headers. Anyone else, the API and htmx requests keep
//! the plain page (or problem, or flash) unchanged.

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{Error, FromRequest};
use askama::Template;

use super::csrf;
use super::guard::PageCaller;
use super::layout::Shell;
use super::page_error::ErrorPage;

/// The error page inside the console's frame.
#[derive(Template)]
#[template(path = "errors/framed.html")]
pub struct FramedErrorPage {
    pub shell: Shell,
    pub page: ErrorPage,
}

/// Frames a page's 403 or 404 for a signed-in person (see the module's words).
pub async fn framed_errors(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, Error> {
    let may_frame = !req.path().starts_with("/api/")
        && !req.headers().contains_key("hx-request")
        && req.cookie(csrf::SESSION_COOKIE).is_some();
    let res = next.call(req).await?.map_into_boxed_body();
    if !may_frame || !matches!(res.status().as_u16(), 403 | 404) {
        return Ok(res);
    }
    let Some(page) = res.response().extensions().get::<ErrorPage>().cloned() else {
        return Ok(res);
    };
    let (req, plain) = res.into_parts();
    // Signed out, an expired sign-in, no organization or a password still to change: the plain page.
    let Ok(caller) = PageCaller::extract(&req).await else {
        return Ok(ServiceResponse::new(req, plain));
    };
    let framed = FramedErrorPage { shell: Shell::new(&caller, &req, ""), page };
    let Ok(body) = framed.render() else {
        return Ok(ServiceResponse::new(req, plain));
    };
    Ok(ServiceResponse::new(req, plain.set_body(BoxBody::new(body))))
}
