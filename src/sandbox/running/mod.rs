//! The Running tab: this organization's sessions on its sandboxd hosts and its sandboxes on its
//! Daytona connections (switched-off ones too), and one sandboxd session's live activity.

pub mod activity;
pub mod api;
pub mod destroying;
pub mod engine_usage;
pub mod error;
pub mod model;
pub mod orphaned;
pub mod orphans;
pub mod ours;
pub mod pages;
pub mod row;
pub mod section;
pub mod service;
pub mod whose;

use actix_web::web;
use serde::Deserialize;

use crate::web::paths;
use crate::web::route::ApiRoute;

/// The Running tab.
pub const PAGE: &str = paths::RUNNING;

/// Register before any `/sandboxes/{id}` route, so `running` is not taken for an id.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route(PAGE, web::get().to(pages::index))
        .route("/sandboxes/{connection_id}/sessions/{session_id}/activity", web::get().to(pages::activity))
        .route("/sandboxes/{connection_id}/sessions/{session_id}/close", web::post().to(pages::close))
        .route("/sandboxes/{connection_id}/sessions/{session_id}/delete", web::get().to(pages::delete_form))
        .route("/sandboxes/{connection_id}/sessions/{session_id}/delete", web::post().to(pages::delete));
}

pub fn api_routes() -> Vec<ApiRoute> {
    api::routes()
}

/// The Running tab, sampling memory or not.
pub fn page_path(usage: bool) -> String {
    paths::running(usage)
}

/// A session's live activity, entries after `after`.
pub fn activity_path(connection_id: &str, session_id: &str, after: u64) -> String {
    paths::session_activity(connection_id, session_id, after)
}

/// `?usage=1` (the "Sample memory" checkbox): `1`, `true`, `on` or `yes` turn it on.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
pub struct UsageQuery {
    /// Sample each sandbox's memory (slower).
    #[serde(default)]
    pub usage: Option<String>,
}

impl UsageQuery {
    pub fn usage(&self) -> bool {
        matches!(self.usage.as_deref().map(str::trim), Some("1" | "true" | "on" | "yes"))
    }
}

/// `?after=N`: activity entries with a greater sequence number.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AfterQuery {
    /// Only entries whose `seq` is greater (default 0: everything the host still keeps); the
    /// previous answer's `latest_seq`.
    #[serde(default)]
    pub after: u64,
}

/// `?delete_files=true`: closing deletes the session's files on the host too.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CloseQuery {
    /// `true` to delete the session's files on the host too; `false` (the default) keeps them,
    /// and the next run of its workspace attaches to them again.
    #[serde(default)]
    #[param(value_type = Option<bool>)]
    pub delete_files: Option<String>,
}

impl CloseQuery {
    /// `true` or `false` (absent: false); anything else is a message at `delete_files`.
    pub fn delete_files(&self) -> Result<bool, crate::validate::FieldErrors> {
        match self.delete_files.as_deref().map(str::trim) {
            None | Some("false") => Ok(false),
            Some("true") => Ok(true),
            Some(_) => Err(crate::validate::FieldErrors::one("delete_files", "Use true or false.")),
        }
    }
}
