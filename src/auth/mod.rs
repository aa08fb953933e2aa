//! Accounts, sign-in sessions, argon2id, two-factor sign-in.

pub mod account;
pub mod accounts;
pub mod admin_reset;
pub mod error;
pub mod forgot;
pub mod joining;
pub mod model;
pub mod pages;
pub mod password;
pub mod reset;
pub mod secrets;
pub mod service;
pub mod store;
pub mod two_factor;

use actix_web::web;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/setup", web::get().to(pages::setup_form))
        .route("/setup", web::post().to(pages::setup))
        .route("/login", web::get().to(pages::login_form))
        .route("/login", web::post().to(pages::login))
        .route("/login/two-factor", web::get().to(pages::two_factor::form))
        .route("/login/two-factor", web::post().to(pages::two_factor::submit))
        .route("/logout", web::post().to(pages::logout))
        .route("/forgot-password", web::get().to(pages::forgot::forgot_form))
        .route("/forgot-password", web::post().to(pages::forgot::forgot))
        .route("/reset-password/{token}", web::get().to(pages::forgot::reset_form))
        .route("/reset-password/{token}", web::post().to(pages::forgot::reset));
}
