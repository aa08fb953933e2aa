//! The operation log (docs/design.md §8): the organization's recorded workspace operations, paged by
//! keyset and searched in the API (`/api/v1/operations`, its export) and the console
//! (Sandboxes → Activity), and deleted after `OPERATION_RETENTION_DAYS` by the sweep. Its SQL is
//! the log store's (`sandbox::log`), read through a settled `log::Reader`.

pub mod api;
pub mod batches;
pub mod cache;
pub mod cursor;
pub mod error;
pub mod export;
pub mod filter;
pub mod model;
pub mod pages;
pub mod range;
pub mod segments;
pub mod service;
pub mod sweep;
pub mod timeline;

use actix_web::web;

use crate::web::paths;
use crate::web::route::ApiRoute;

/// Register before any `/sandboxes/{id}` route, so `activity` is not taken for an id.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route(paths::OPERATIONS_NEW, web::get().to(pages::newer))
        .route(paths::OPERATIONS_EXPORT, web::get().to(pages::export))
        .route(paths::OPERATIONS, web::get().to(pages::index));
}

pub fn api_routes() -> Vec<ApiRoute> {
    api::routes()
}
