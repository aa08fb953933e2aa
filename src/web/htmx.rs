//! htmx requests: the one place that decides whether a request wants a fragment.

use actix_web::HttpRequest;

/// An htmx request for a fragment (a swap or a poll) — not a boosted navigation or a history
/// restore, which want the whole page. One handler answers both; fragment-only endpoints redirect
/// to their page when this is false.
pub fn wants_fragment(req: &HttpRequest) -> bool {
    let h = req.headers();
    h.contains_key("hx-request") && !h.contains_key("hx-boosted") && !h.contains_key("hx-history-restore-request")
}
