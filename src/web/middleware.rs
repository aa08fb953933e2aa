//! Request middleware: request id, log span and request metrics, CSRF, security headers.

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::{header, Method};
use actix_web::middleware::Next;
use actix_web::web::Data;
use actix_web::{Error, HttpMessage};
use tracing::Instrument;

use super::body::peek_body;
use super::context::{RequestContext, REQUEST};
use super::csrf;
use super::error::{AppError, Kind};
use super::page_error::page_error_response;
use super::problem::problem_response;
use crate::state::AppState;

/// Gives every request an id (echoed as `X-Request-Id`), a span, and one log line when done.
pub async fn request_context(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, Error> {
    let request_id = uuid::Uuid::new_v4().simple().to_string();
    let is_htmx = req.headers().contains_key("hx-request");
    let is_api = req.path().starts_with("/api/");
    let ctx = RequestContext {
        request_id: request_id.clone(),
        is_htmx,
        is_api,
        return_to: if *req.method() == Method::GET && !is_api { return_to(&req, is_htmx) } else { None },
    };
    // An invitation link's code is a credential: the log shows its path without it.
    let path = super::paths::for_log(req.path()).into_owned();
    let span = tracing::info_span!("request", request_id = %request_id, method = %req.method(), path = %path);
    let started = std::time::Instant::now();
    let fut = REQUEST.scope(ctx, next.call(req));
    let mut res = fut.instrument(span.clone()).await?;
    let status = res.status().as_u16();
    let elapsed = started.elapsed();
    span.in_scope(|| tracing::info!(status, elapsed_ms = elapsed.as_millis() as u64, "request done"));
    // By the route's pattern, never its path (ids, file names and invitation codes stay out).
    crate::instruments::http_request(
        res.request().method().as_str(),
        || res.request().match_pattern(),
        status,
        elapsed,
    );
    if let Ok(v) = header::HeaderValue::from_str(&request_id) {
        res.headers_mut().insert(header::HeaderName::from_static("x-request-id"), v);
    }
    Ok(res)
}

/// The page to come back to after signing in: the one asked for, or for htmx (a poll, a
/// boosted link) the page it was sent from. Only its path and query: never another host.
fn return_to(req: &ServiceRequest, is_htmx: bool) -> Option<String> {
    if is_htmx {
        let current = req.headers().get("hx-current-url")?.to_str().ok()?;
        let url = url::Url::parse(current).ok()?;
        return Some(match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_string(),
        });
    }
    req.uri().path_and_query().map(|pq| pq.as_str().to_string())
}

/// Refuses a state-changing request that does not present its CSRF token (403).
pub async fn csrf_guard(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, Error> {
    // CSRF guards an ambient credential: an API request without the session cookie carries none
    // (a bearer token, or nothing at all, which the API answers with 401).
    let is_api_without_session = req.path().starts_with("/api/") && req.cookie(csrf::SESSION_COOKIE).is_none();
    if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS)
        || is_bearer(&req)
        || is_api_without_session
    {
        return Ok(next.call(req).await?.map_into_boxed_body());
    }
    // Fail closed: without its key the guard cannot tell a forged request from a real one.
    let Some(state) = req.app_data::<Data<AppState>>().cloned() else {
        let err = AppError::internal(anyhow::anyhow!("the CSRF guard found no application state"));
        let res = if req.path().starts_with("/api/") { problem_response(&err) } else { page_error_response(&err) };
        return Ok(req.into_response(res));
    };
    let expected = csrf::expected(&state.csrf_key, req.request());
    let mut provided = req.headers().get(csrf::HEADER).and_then(|v| v.to_str().ok()).map(str::to_string);
    if provided.is_none() && req.content_type() == "application/x-www-form-urlencoded" {
        let body = match peek_body(&mut req).await {
            Ok(b) => b,
            Err(err) => {
                let res =
                    if req.path().starts_with("/api/") { problem_response(&err) } else { page_error_response(&err) };
                return Ok(req.into_response(res));
            }
        };
        provided = serde_urlencoded::from_bytes::<Vec<(String, String)>>(&body)
            .ok()
            .and_then(|pairs| pairs.into_iter().find(|(k, _)| k == csrf::FIELD).map(|(_, v)| v));
    }
    let ok = match (expected, provided) {
        (Some(e), Some(p)) => csrf::matches(&e, &p),
        _ => false,
    };
    if ok {
        return Ok(next.call(req).await?.map_into_boxed_body());
    }
    tracing::warn!(event = "csrf_refused", "state-changing request without a valid CSRF token");
    let err = AppError::new(
        Kind::Forbidden,
        "This form has expired or was not sent by this console. Reload the page and try again.",
    );
    let res = if req.path().starts_with("/api/") { problem_response(&err) } else { page_error_response(&err) };
    Ok(req.into_response(res))
}

/// A form htmx sends (every form of a boosted page) leaves the address bar on the page it was
/// sent from. Without this, htmx puts the form's action there: a refused action or a form shown
/// again with its messages would leave `/members/{id}/delete` in the address bar, and a reload
/// would be a 404. A response that says where to go (`HX-Redirect`, `HX-Location`,
/// `HX-Push-Url`, `HX-Replace-Url`) keeps its choice.
pub async fn keep_page_url(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, Error> {
    let is_htmx_write =
        req.headers().contains_key("hx-request") && !matches!(*req.method(), Method::GET | Method::HEAD);
    let mut res = next.call(req).await?;
    let chooses = ["hx-redirect", "hx-location", "hx-push-url", "hx-replace-url"];
    if is_htmx_write && !chooses.iter().any(|h| res.headers().contains_key(*h)) {
        res.headers_mut()
            .insert(header::HeaderName::from_static("hx-push-url"), header::HeaderValue::from_static("false"));
    }
    Ok(res)
}

fn is_bearer(req: &ServiceRequest) -> bool {
    req.headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.len() > 7 && v[..7].eq_ignore_ascii_case("bearer "))
}

/// Every `/api/` error is `application/problem+json`, including those actix answers itself before
/// a handler runs (a body over the write limit, a broken upload): such a plain-text error is
/// replaced by the problem of the same status.
pub async fn api_problems(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, Error> {
    let is_api = req.path().starts_with("/api/");
    let res = next.call(req).await?;
    let status = res.status();
    let is_problem = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/problem+json"));
    if !is_api || is_problem || !(status.is_client_error() || status.is_server_error()) {
        return Ok(res.map_into_boxed_body());
    }
    let err = match status.as_u16() {
        413 => AppError::new(
            Kind::PayloadTooLarge,
            format!(
                "The body is larger than {} MiB, the most one file write takes.",
                crate::sandbox::workspaces::backend::WRITE_MAX / 1024 / 1024
            ),
        ),
        400 => AppError::new(Kind::BadRequest, "The request could not be read."),
        404 => AppError::not_found(),
        _ => return Ok(res.map_into_boxed_body()),
    };
    let (req, _) = res.into_parts();
    Ok(ServiceResponse::new(req, problem_response(&err)))
}

/// Answers smaller than this go out uncompressed: about one Ethernet frame's payload, which
/// compression would not bring below one or two TCP segments. actix-web's `Compress` hands every
/// chunk of 1,024 bytes or more to a blocking thread to compress and sends a compressed body in
/// parts (chunked), so a 1 KiB file read for a client that accepts gzip cost a thread hop and
/// more writes, for nothing it could save.
pub const COMPRESS_FROM: u64 = 1_500;

/// Marks an answer of known size under [`COMPRESS_FROM`] bytes `Content-Encoding: identity`, which
/// `Compress` (wrapped around this) leaves alone; [`plain_answers_unmarked`], around `Compress`,
/// takes the mark off again. An answer that set its own encoding keeps it.
pub async fn small_answers_plain(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, Error> {
    let mut res = next.call(req).await?;
    let small = matches!(res.response().body().size(), actix_web::body::BodySize::Sized(n) if n < COMPRESS_FROM);
    if small && !res.headers().contains_key(header::CONTENT_ENCODING) {
        res.headers_mut().insert(header::CONTENT_ENCODING, header::HeaderValue::from_static("identity"));
    }
    Ok(res)
}

/// Takes off the `Content-Encoding: identity` that [`small_answers_plain`] put on an answer so that
/// `Compress` would leave it alone: an answer that is not encoded says nothing about it.
pub async fn plain_answers_unmarked(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, Error> {
    let mut res = next.call(req).await?;
    if res.headers().get(header::CONTENT_ENCODING).is_some_and(|v| v == "identity") {
        res.headers_mut().remove(header::CONTENT_ENCODING);
    }
    Ok(res)
}

/// The headers every response carries (each unless the response set it itself).
pub fn security_headers() -> actix_web::middleware::DefaultHeaders {
    actix_web::middleware::DefaultHeaders::new()
        .add((
            header::CONTENT_SECURITY_POLICY,
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; \
             base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
        ))
        // Nothing a signed-in person saw is kept for Back after signing out (static files say
        // otherwise for themselves).
        .add((header::CACHE_CONTROL, "no-store"))
        .add((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .add((header::REFERRER_POLICY, "same-origin"))
        .add((header::X_FRAME_OPTIONS, "DENY"))
        .add(("Cross-Origin-Opener-Policy", "same-origin"))
}

#[cfg(test)]
mod tests {
    use actix_web::middleware::from_fn;
    use actix_web::{test, web, App, HttpResponse};

    #[actix_web::test]
    async fn the_csrf_guard_refuses_a_write_when_it_cannot_find_its_key() {
        // No AppState registered: the guard has no key to check a token against.
        let app = test::init_service(
            App::new()
                .route("/members", web::post().to(|| async { HttpResponse::Ok().body("handler ran") }))
                .wrap(from_fn(super::csrf_guard)),
        )
        .await;
        let req = test::TestRequest::post().uri("/members").insert_header(("x-csrf-token", "anything")).to_request();
        let res = test::call_service(&app, req).await;
        assert_eq!(res.status(), 500);
        let body = test::read_body(res).await;
        assert!(!String::from_utf8_lossy(&body).contains("handler ran"));

        // A read is not state-changing and passes.
        let req = test::TestRequest::get().uri("/members").to_request();
        assert_eq!(test::call_service(&app, req).await.status(), 404);
    }
}
