//! Invitations: how a person joins an organization. An admin invites an e-mail address with a
//! role (the members page, `POST /api/v1/members`); the person opens the link, or sees the
//! invitation on their home page once signed in, and accepts. The link's code is shown once and
//! stored only as its SHA-256.

pub mod api;
pub mod error;
pub mod model;
pub mod pages;
pub mod service;
pub mod store;

use actix_web::web;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/invitations/{code}", web::get().to(pages::show))
        .route("/invitations/{code}", web::post().to(pages::accept))
        .route("/invitations/{id}/accept", web::post().to(pages::accept_pending))
        .route("/invitations/{id}/decline", web::post().to(pages::decline_pending));
}
