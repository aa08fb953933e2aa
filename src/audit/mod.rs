//! The audit log.

pub mod api;
pub mod error;
pub mod events;
pub mod filter;
pub mod model;
pub mod pages;
pub mod service;
pub mod store;

use actix_web::web;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/audit", web::get().to(pages::index));
}
