//! The signed-in person's own account: their password, two-factor sign-in, their sign-ins and the
//! API tokens they created. Pages only; the rules are in `auth::account` and `tokens::service`.

pub mod pages;

use actix_web::web;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/account", web::get().to(pages::index))
        .route("/account", web::post().to(pages::change_password))
        .route("/account/password", web::get().to(pages::password_form))
        .route("/account/password", web::post().to(pages::choose_password))
        .route("/account/two-factor", web::get().to(pages::two_factor::enrol_form))
        .route("/account/two-factor", web::post().to(pages::two_factor::confirm))
        .route("/account/two-factor/disable", web::post().to(pages::two_factor::disable))
        .route("/account/sessions/{id}/end", web::post().to(pages::end_session))
        .route("/account/tokens/{id}/revoke", web::post().to(pages::revoke_token));
}
