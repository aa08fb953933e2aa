//! Organizations, memberships, roles.

pub mod api;
pub mod error;
pub mod invitations;
pub mod model;
pub mod pages;
pub mod service;
pub mod store;

use actix_web::web;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/orgs/new", web::get().to(pages::new_form))
        // The form posts to its own page's URL, so a refused name leaves a URL that reloads.
        .route("/orgs/new", web::post().to(pages::create))
        .route("/orgs", web::post().to(pages::create))
        .route("/orgs/switch", web::post().to(pages::switch))
        .route("/members", web::get().to(pages::index))
        .route("/members", web::post().to(pages::add))
        .route("/members/two-factor", web::post().to(pages::require_two_factor))
        .route("/members/invitations/{id}/revoke", web::post().to(pages::revoke_invitation))
        .route("/members/{id}/role", web::post().to(pages::change_role))
        .route("/members/{id}/delete", web::get().to(pages::confirm::remove_form))
        .route("/members/{id}/delete", web::post().to(pages::remove))
        .route("/members/{id}/password-reset", web::get().to(pages::confirm::reset_form))
        .route("/members/{id}/password-reset", web::post().to(pages::reset_password));
    invitations::routes(cfg);
}
