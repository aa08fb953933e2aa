//! The console's home page.

pub mod error;
pub mod pages;
pub mod service;

use actix_web::web;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/", web::get().to(pages::index));
}
