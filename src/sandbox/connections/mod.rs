//! Connections: an organization's registrations of sandbox hosts, probing, the dialog.

pub mod address;
pub mod api;
pub mod cache;
pub mod checks;
pub mod checks_store;
pub mod common;
pub mod delete;
pub mod discovered;
pub mod discovered_api;
pub mod error;
pub mod health;
pub mod identity;
pub mod keys;
pub mod model;
pub mod pages;
pub mod runtimes;
pub mod seen;
pub mod service;
pub mod store;
pub mod usage;
pub mod words;

use actix_web::web;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/sandboxes", web::get().to(pages::index))
        .route("/sandboxes", web::post().to(pages::create))
        .route("/sandboxes/new", web::get().to(pages::new_form))
        .route("/sandboxes/probe", web::post().to(pages::probe))
        .route("/sandboxes/kind", web::post().to(pages::kind_changed))
        .route("/sandboxes/health", web::get().to(pages::health))
        .route("/sandboxes/{id}", web::post().to(pages::update))
        .route("/sandboxes/{id}/edit", web::get().to(pages::edit_form))
        .route("/sandboxes/{id}/enable", web::post().to(pages::enable))
        .route("/sandboxes/{id}/disable", web::post().to(pages::disable))
        .route("/sandboxes/{id}/default", web::post().to(pages::make_default))
        .route("/sandboxes/{id}/delete", web::get().to(pages::delete_form))
        .route("/sandboxes/{id}/delete", web::post().to(pages::delete));
}
