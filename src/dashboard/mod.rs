//! The console's home page.

pub mod error;
pub mod getting_started;
pub mod pages;
pub mod service;
pub mod store;

use actix_web::web;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/", web::get().to(pages::index));
}
