//! Per-request context (request id, htmx or not, the page to return to) reachable from error rendering, which has no
//! access to the request itself. Set by the request middleware in `web::middleware`.

#[derive(Debug, Clone)]
pub struct RequestContext {
    pub request_id: String,
    pub is_htmx: bool,
    pub is_api: bool,
    /// The page a person asked for (a GET outside `/api/`; for htmx, the page it was sent from),
    /// to return to after signing in. Checked again where it is used (`paths::safe_next`).
    pub return_to: Option<String>,
}

tokio::task_local! {
    pub static REQUEST: RequestContext;
}

pub fn current() -> Option<RequestContext> {
    REQUEST.try_with(|c| c.clone()).ok()
}

pub fn request_id() -> String {
    current().map(|c| c.request_id).unwrap_or_else(|| "-".to_string())
}
