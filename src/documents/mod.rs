//! Documents (docs/design.md §9): what agents keep for people. Visibility and rows (`store.rs`),
//! listings (`listing.rs`; each host kind's own in its folder, `sandbox/hosts/<kind>/documents`,
//! reached through `hosts/dispatch/stored_files.rs`), exclusions, grouping, thumbnails,
//! safe serving, and the pages and API over them.

pub mod api;
pub mod cache;
pub mod error;
pub mod exclusions;
pub mod files;
pub mod filters;
pub mod grouping;
pub mod labels;
pub mod listing;
pub mod model;
pub mod pages;
pub mod paging;
pub mod rendering;
pub mod service;
pub mod serving;
pub mod stamp;
pub mod store;
pub mod thumbnails;
pub mod tiles;
pub mod uploaders;

use actix_web::web;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/documents", web::get().to(pages::index))
        .route("/documents/workspaces/{id}/file", web::get().to(pages::file))
        .route("/documents/workspaces/{id}", web::get().to(pages::workspace));
}
