//! JSON: this organization's running sandbox sessions.

use actix_web::web::{Data, Json, Path, Query};

use super::activity::Activity;
use super::error::RunningError;
use super::model::{ClosedSession, RunningSessions};
use super::service;
use super::{AfterQuery, CloseQuery, UsageQuery};
use crate::api_route;
use crate::state::AppState;
use crate::web::openapi_errors::{Input, Problems};
use crate::web::route::ApiRoute;
use crate::web::{ApiCaller, ApiError, AppError};

pub fn routes() -> Vec<ApiRoute> {
    vec![
        api_route!(GET "/api/v1/sandbox-sessions" => list_sandbox_sessions),
        api_route!(GET "/api/v1/sandbox-sessions/{connection_id}/{session_id}/events" => session_events),
        api_route!(DELETE "/api/v1/sandbox-sessions/{connection_id}/{session_id}" => close_sandbox_session),
    ]
}

crate::error_subset! {
    /// The list: a host that cannot be asked is listed as unavailable, not refused.
    pub struct Listing: RunningError except RunningError::HostUnavailable(_)
}

/// This organization's sessions on each sandboxd connection, switched-off ones too (`is_enabled`
/// false: what still runs there can be closed), never another tenant's; one host reached by two
/// connections (two spellings of its address, or both list one session) shows each session once,
/// under the connection it belongs to (`same_host_as`): the one its key names, which alone may close
/// it (`owned_by` marks one listed elsewhere), with the host-wide counts. A host that cannot be read carries a `problem` instead of sessions.
/// `daytona` lists each Daytona connection's sandboxes of this organization (by this deployment's,
/// the organization's and the connection's labels; at most 200, `truncated` beyond) with state,
/// CPU, memory, disk and last activity, or the connection's `problem`.
#[utoipa::path(get, path = "/api/v1/sandbox-sessions", tag = "sandboxes", params(UsageQuery),
    responses((status = 200, body = RunningSessions), Problems<Listing>))]
pub async fn list_sandbox_sessions(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    query: Query<UsageQuery>,
) -> Result<Json<RunningSessions>, ApiError> {
    Ok(Json(service::list(&st, &c, query.usage()).await?))
}

/// One of this organization's sessions' live activity: the host's event ring (its last 200
/// entries) after `after`, oldest first, as the Running tab's activity page shows it. Poll again
/// with `after` = `latest_seq`; `missed` counts entries that fell off the ring in between.
#[utoipa::path(get, path = "/api/v1/sandbox-sessions/{connection_id}/{session_id}/events", tag = "sandboxes",
    params(("connection_id" = String, Path, description = "the connection whose host holds the session"),
        ("session_id" = String, Path, description = "the session's name on the host"), AfterQuery),
    responses((status = 200, body = Activity), Problems<RunningError>))]
pub async fn session_events(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    path: Path<(String, String)>,
    query: Query<AfterQuery>,
) -> Result<Json<Activity>, ApiError> {
    let (connection_id, session_id) = path.into_inner();
    Ok(Json(service::activity(&st, &c, &connection_id, &session_id, query.after).await?))
}

/// Closes one of this organization's sessions on its host, as the Running tab's Close does: the
/// sandbox stops and the host forgets the session; its files stay, and the next run of its
/// workspace attaches to them again. With `delete_files=true` (the tab's "Close and delete
/// files") the host deletes the session's files too (everything under `/workspace` of the
/// session) and the next run starts with empty files. Operators and above; audited as
/// `sandbox_session.closed` or `sandbox_session.files_deleted`. The host is asked with the
/// connection's key, which goes only to the address it is bound to. On a Daytona connection
/// `session_id` is the sandbox's id: Close stops a persistent scope's sandbox (`sandbox_stopped`;
/// its files stay, the next run starts it again) and deletes a `run` scope's, or any with
/// `delete_files=true` (a delete Daytona refuses now is `pending_removal`).
#[utoipa::path(delete, path = "/api/v1/sandbox-sessions/{connection_id}/{session_id}", tag = "sandboxes",
    params(("connection_id" = String, Path, description = "the connection whose host holds the session"),
        ("session_id" = String, Path, description = "the session's name on the host"), CloseQuery),
    responses((status = 200, description = "The session is closed (and its files deleted with `delete_files=true`).", body = ClosedSession),
        Problems<(RunningError, Input)>))]
pub async fn close_sandbox_session(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    path: Path<(String, String)>,
    query: Query<CloseQuery>,
) -> Result<Json<ClosedSession>, ApiError> {
    let delete_files = query.delete_files().map_err(|f| ApiError(AppError::invalid(f)))?;
    let (connection_id, session_id) = path.into_inner();
    Ok(Json(service::close(&st, &c, &connection_id, &session_id, delete_files).await?))
}
