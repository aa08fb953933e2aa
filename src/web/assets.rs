//! Static files, embedded in the binary so the console runs from any directory. Served with a
//! long cache lifetime under a versioned path.

use actix_web::http::header;
use actix_web::{web, HttpResponse};

pub const HTMX: &str = "/static/vendor/htmx-2.0.4.min.js";
pub const CSS: &str = "/static/css/app.css";
pub const APP_JS: &str = "/static/js/app.js";
pub const FAVICON: &str = "/static/img/favicon.svg";

const FILES: &[(&str, &str, &[u8])] = &[
    (
        "vendor/htmx-2.0.4.min.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../static/vendor/htmx-2.0.4.min.js"),
    ),
    ("css/app.css", "text/css; charset=utf-8", include_bytes!("../../static/css/app.css")),
    ("js/app.js", "text/javascript; charset=utf-8", include_bytes!("../../static/js/app.js")),
    ("img/favicon.svg", "image/svg+xml", include_bytes!("../../static/img/favicon.svg")),
];

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/static/{path:.*}", web::get().to(serve));
}

async fn serve(path: web::Path<String>) -> HttpResponse {
    match FILES.iter().find(|(p, _, _)| *p == path.as_str()) {
        Some((_, mime, bytes)) => HttpResponse::Ok()
            .content_type(*mime)
            .insert_header((header::CACHE_CONTROL, "public, max-age=3600"))
            .body(*bytes),
        None => HttpResponse::NotFound().content_type("text/plain").body("not found"),
    }
}
