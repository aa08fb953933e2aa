//! The policy panel of a sandboxd connection: what the host allows and the ceilings in force,
//! read live (docs/design.md §6, §10).

pub mod api;
pub mod error;
pub mod model;
pub mod pages;
pub mod service;

use actix_web::web;

use crate::web::route::ApiRoute;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/sandboxes/{id}/policy", web::get().to(pages::show));
}

pub fn api_routes() -> Vec<ApiRoute> {
    api::routes()
}

/// The policy page of a connection.
pub fn page_path(connection_id: &str) -> String {
    crate::web::paths::connection_policy(connection_id)
}
