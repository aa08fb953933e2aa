//! The API route machinery: every `/api/v1` route is an [`ApiRoute`] built with [`api_route!`]
//! (crate::api_route), so the table in `src/api.rs` can register them and compare them with the
//! OpenAPI document.

use actix_web::http::Method;
use actix_web::{HttpRequest, HttpResponse, Route};

use super::error::AppError;
use super::problem::problem_response;

/// One registered API route.
pub struct ApiRoute {
    pub method: Method,
    pub path: &'static str,
    make: fn() -> Route,
}

impl ApiRoute {
    pub fn new(method: Method, path: &'static str, make: fn() -> Route) -> Self {
        ApiRoute { method, path, make }
    }

    /// The actix route to register at [`ApiRoute::path`].
    pub fn route(&self) -> Route {
        (self.make)()
    }
}

/// `api_route!(GET "/api/v1/me" => handler)`.
#[macro_export]
macro_rules! api_route {
    ($method:ident $path:literal => $handler:path) => {
        $crate::web::route::ApiRoute::new(actix_web::http::Method::$method, $path, || {
            actix_web::web::method(actix_web::http::Method::$method).to($handler)
        })
    };
}

/// Any path under `/api/` no route serves.
pub async fn not_found(req: HttpRequest) -> HttpResponse {
    let mut e = AppError::not_found();
    e.detail = format!("No API route {} {}.", req.method(), req.path());
    problem_response(&e)
}
