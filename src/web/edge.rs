//! The edge: what no handler, query or host should ever see is refused here, before routing
//! reaches a handler.
//! - a control character (NUL, CR, LF, …) anywhere in the path: 404, as for any unknown address
//!   (such a segment could otherwise end up in a `Location` header or a SQL bind);
//! - an id segment (`{id}`, `{run_id}`, …) that is not a UUID: 404 — a malformed id names nothing;
//! - a control character in a query value, a NUL in a form value or anywhere in a JSON body
//!   (PostgreSQL cannot store it in text): 422 naming the field.
//!
//! Other control characters inside JSON strings (a command's newlines, a file's tabs) are the
//! business of each field's own rules.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{Error, HttpMessage};

use super::body::{peek_body, PeekedBody, BODY_PEEK_LIMIT};
use super::error::{AppError, FieldErrors};
use super::page_error::page_error_response;
use super::problem::problem_response;

/// Path parameters that carry something other than one of our UUIDs.
const NOT_UUID_PARAMS: &[&str] = &["session_id", "action"];

pub async fn input_guard(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, Error> {
    if let Some(err) = path_problem(&req).or_else(|| query_problem(&req)) {
        return Ok(refuse(req, err));
    }
    let content_type = req.content_type().to_ascii_lowercase();
    let is_json = content_type == "application/json" || content_type.ends_with("+json");
    let is_form = content_type == "application/x-www-form-urlencoded";
    if is_json || is_form {
        let known_small = req
            .headers()
            .get(actix_web::http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok())
            .is_some_and(|n| n <= BODY_PEEK_LIMIT);
        if known_small || req.headers().contains_key(actix_web::http::header::TRANSFER_ENCODING) {
            let body = match peek_body(&mut req).await {
                Ok(b) => b,
                Err(e) => return Ok(refuse(req, e)),
            };
            let field = if is_json { json_nul_field(&body) } else { form_nul_field(&body) };
            req.extensions_mut().insert(PeekedBody(body));
            if let Some(field) = field {
                return Ok(refuse(req, nul_error(&field)));
            }
        }
    }
    Ok(next.call(req).await?.map_into_boxed_body())
}

fn refuse(req: ServiceRequest, err: AppError) -> ServiceResponse<BoxBody> {
    let res = if req.path().starts_with("/api/") { problem_response(&err) } else { page_error_response(&err) };
    req.into_response(res)
}

fn nul_error(field: &str) -> AppError {
    let mut f = FieldErrors::new();
    f.add(field, "This value contains a NUL or another control character, which no field accepts.");
    AppError::invalid(f)
}

/// A control character in the path, or an id segment that is not a UUID.
fn path_problem(req: &ServiceRequest) -> Option<AppError> {
    let raw = req.uri().path();
    if percent_decode(raw).chars().any(char::is_control) {
        return Some(AppError::not_found());
    }
    let pattern = route_pattern(req)?;
    let values = raw.split('/');
    for (segment, value) in pattern.split('/').zip(values) {
        let Some(name) = segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) else { continue };
        let is_id = name == "id" || name.ends_with("_id");
        if is_id && !NOT_UUID_PARAMS.contains(&name) && uuid::Uuid::try_parse(&percent_decode(value)).is_err() {
            return Some(AppError::not_found());
        }
    }
    None
}

/// The route pattern a path matches, remembered per worker thread by the path's shape (every
/// UUID segment read as the nil UUID): matching walks every route of the product, which costs
/// more than the rest of this guard together on a proxied read.
fn route_pattern(req: &ServiceRequest) -> Option<Rc<str>> {
    /// Shapes remembered per worker; past this, a new shape is matched each time (never evicted,
    /// so a caller inventing paths cannot push the product's own routes out).
    const MAX_SHAPES: usize = 2048;
    thread_local! {
        static SHAPES: RefCell<HashMap<String, Option<Rc<str>>>> = RefCell::new(HashMap::new());
    }
    let shape = path_shape(req.path());
    if let Some(hit) = SHAPES.with(|m| m.borrow().get(&shape).cloned()) {
        return hit;
    }
    let pattern: Option<Rc<str>> = req.match_pattern().map(Rc::from);
    SHAPES.with(|m| {
        let mut m = m.borrow_mut();
        if m.len() < MAX_SHAPES {
            m.insert(shape, pattern.clone());
        }
    });
    pattern
}

/// `/api/v1/runs/0191…/workspace/files` → `/api/v1/runs/00000000-0000-0000-0000-000000000000/workspace/files`.
fn path_shape(path: &str) -> String {
    let mut shape = String::with_capacity(path.len());
    for (i, segment) in path.split('/').enumerate() {
        if i > 0 {
            shape.push('/');
        }
        let is_uuid = segment.len() >= 32 && uuid::Uuid::try_parse(segment).is_ok();
        shape.push_str(if is_uuid { NIL_UUID } else { segment });
    }
    shape
}

const NIL_UUID: &str = "00000000-0000-0000-0000-000000000000";

fn query_problem(req: &ServiceRequest) -> Option<AppError> {
    let query = req.query_string();
    if query.is_empty() {
        return None;
    }
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query).ok()?;
    pairs
        .iter()
        .find(|(k, v)| k.chars().chain(v.chars()).any(char::is_control))
        .map(|(k, _)| nul_error(if k.chars().any(char::is_control) { "query" } else { k }))
}

fn form_nul_field(body: &[u8]) -> Option<String> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_bytes(body).ok()?;
    pairs.into_iter().find(|(k, v)| k.contains('\0') || v.contains('\0')).map(|(k, _)| {
        if k.contains('\0') {
            "body".to_string()
        } else {
            k
        }
    })
}

/// The first field (as `a.b[2]`) whose key or string value holds a NUL.
fn json_nul_field(body: &[u8]) -> Option<String> {
    // A NUL can only be written `\u0000` in JSON: skip the parse for the common case.
    let text = std::str::from_utf8(body).ok()?;
    if !text.to_ascii_lowercase().contains("\\u0000") {
        return None;
    }
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    find_nul(&value, String::new())
}

fn find_nul(v: &serde_json::Value, at: String) -> Option<String> {
    let here = || if at.is_empty() { "body".to_string() } else { at.clone() };
    match v {
        serde_json::Value::String(s) if s.contains('\0') => Some(here()),
        serde_json::Value::Array(items) => {
            items.iter().enumerate().find_map(|(i, item)| find_nul(item, format!("{}[{i}]", here())))
        }
        serde_json::Value::Object(map) => map.iter().find_map(|(k, item)| {
            let path = if at.is_empty() { k.clone() } else { format!("{at}.{k}") };
            if k.contains('\0') {
                Some(here())
            } else {
                find_nul(item, path)
            }
        }),
        _ => None,
    }
}

fn percent_decode(raw: &str) -> String {
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push(h * 16 + l);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nul_in_a_json_body_is_found_with_its_field() {
        assert_eq!(json_nul_field(br#"{"name":"a\u0000b"}"#), Some("name".into()));
        assert_eq!(json_nul_field(br#"{"env":{"X":"\u0000"}}"#), Some("env.X".into()));
        assert_eq!(json_nul_field(br#"{"argv":["ls","a\u0000"]}"#), Some("argv[1]".into()));
        assert_eq!(json_nul_field(br#""\u0000""#), Some("body".into()));
        assert_eq!(json_nul_field(br#"{"command":"printf 'a\nb'"}"#), None);
        assert_eq!(json_nul_field(br#"{"command":"echo \\u0000"}"#), None, "an escaped backslash is no NUL");
    }

    #[test]
    fn a_nul_in_a_form_is_found_with_its_field() {
        assert_eq!(form_nul_field(b"email=a%00b&password=x"), Some("email".into()));
        assert_eq!(form_nul_field(b"email=a%40b.c"), None);
    }

    #[test]
    fn a_path_shape_reads_every_uuid_as_the_nil_uuid() {
        assert_eq!(
            path_shape("/api/v1/runs/0191b7c2-0000-7000-8000-000000000001/workspace/files"),
            format!("/api/v1/runs/{NIL_UUID}/workspace/files")
        );
        assert_eq!(path_shape("/sandboxes/running"), "/sandboxes/running");
        assert_eq!(path_shape("/api/v1/runs/not-a-uuid"), "/api/v1/runs/not-a-uuid");
    }

    #[test]
    fn percent_escapes_are_decoded_for_the_checks() {
        assert_eq!(percent_decode("/a%00b"), "/a\0b");
        assert_eq!(percent_decode("/a%0D%0Ab"), "/a\r\nb");
        assert_eq!(percent_decode("/100%"), "/100%");
        assert_eq!(percent_decode("/%zz"), "/%zz");
    }
}
