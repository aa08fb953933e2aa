//! API tokens for REST clients.

pub mod api;
pub mod cache;
pub mod error;
pub mod model;
pub mod pages;
pub mod service;
pub mod store;

use actix_web::web;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/tokens", web::get().to(pages::index))
        .route("/tokens", web::post().to(pages::create))
        .route("/tokens/{id}/revoke", web::post().to(pages::revoke));
}
