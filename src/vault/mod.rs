//! Per-organization secrets, encrypted under the master key.

pub mod api;
pub mod crypto;
pub mod error;
pub mod model;
pub mod pages;
pub mod service;
pub mod store;

use actix_web::web;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/vault", web::get().to(pages::index))
        .route("/vault", web::post().to(pages::create))
        .route("/vault/{id}/rotate", web::post().to(pages::rotate))
        .route("/vault/{id}/bind", web::post().to(pages::bind))
        .route("/vault/{id}/delete", web::post().to(pages::delete));
}
