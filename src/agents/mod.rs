//! Agents, conversations and runs: only what the sandbox needs. Agents and their settings here
//! (`service.rs`, `check.rs`, `store.rs`); conversations and runs in their own folders, each
//! with its service and store. The workspaces service reads runs through `runs::service`; below
//! the pages nothing here imports the workspaces (the conversation and delete pages compose the
//! two; a scope and a workspace path are `crate::vocabulary`'s).

pub mod api;
pub mod check;
pub mod conversations;
pub mod error;
pub mod manifest;
pub mod model;
pub mod pages;
pub mod pins;
pub mod runs;
pub mod service;
pub mod store;

use actix_web::web;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/agents", web::get().to(pages::index))
        .route("/agents", web::post().to(pages::create))
        .route("/agents/new", web::get().to(pages::new_form))
        .route("/agents/_runtime_field", web::get().to(pages::fields::runtime_field_partial))
        .route("/agents/_scope_field", web::get().to(pages::fields::scope_field_partial))
        .route("/agents/{id}", web::get().to(pages::edit_form))
        .route("/agents/{id}", web::post().to(pages::update))
        .route("/agents/{id}/delete", web::get().to(pages::delete::agent_form))
        .route("/agents/{id}/delete", web::post().to(pages::delete::agent))
        .route("/conversations", web::get().to(pages::conversations::conversations))
        .route("/conversations/{id}", web::get().to(pages::conversations::show))
        .route("/conversations/{id}/files", web::post().to(pages::uploads::upload))
        .route("/conversations/{id}/workspace", web::get().to(pages::conversations::workspace_partial))
        .route("/conversations/{id}/delete", web::get().to(pages::delete::conversation_form))
        .route("/conversations/{id}/delete", web::post().to(pages::delete::conversation));
}
