//! HTML: the Running tab and a session's live activity. Each handler serves the page, or (for an
//! htmx poll) just its fragment.

use actix_web::http::header::{HeaderValue, VARY};
use actix_web::http::StatusCode;
use actix_web::web::{Data, Path, Query};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use super::activity::Activity;
use super::error::RunningError;
use super::model::RunningSessions;
use super::service;
use super::{AfterQuery, UsageQuery};
use crate::state::AppState;
use crate::web::{page, render, render_status, PageCaller, PageError, Shell};

#[derive(Template)]
#[template(path = "sandbox/running/index.html")]
pub struct RunningPage {
    pub shell: Shell,
    pub view: RunningSessions,
}

/// The part of the Running tab that refreshes itself (`#running-sessions`).
#[derive(Template)]
#[template(path = "sandbox/running/_sessions.html")]
pub struct SessionsPartial {
    pub view: RunningSessions,
}

#[derive(Template)]
#[template(path = "sandbox/running/activity.html")]
pub struct ActivityPage {
    pub shell: Shell,
    pub view: Activity,
}

/// New activity rows, then the poller that asks for the next ones (and, once there are rows, the
/// "nothing yet" line removed out of band).
#[derive(Template)]
#[template(path = "sandbox/running/_activity_poll.html")]
pub struct ActivityRowsPartial {
    pub view: Activity,
}

/// Replaces the poller when the session is gone (or never was this organization's): polling stops.
#[derive(Template)]
#[template(path = "sandbox/running/_activity_ended.html")]
pub struct ActivityEndedPartial;

pub async fn index(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    query: Query<UsageQuery>,
) -> Result<HttpResponse, PageError> {
    let view = service::list(&st, &caller, query.usage()).await?;
    if crate::web::htmx::wants_fragment(&req) {
        return varying(render(&SessionsPartial { view }));
    }
    let shell = Shell::new(&caller, &req, "sandboxes");
    varying(page(&shell, &RunningPage { shell: shell.clone(), view }))
}

pub async fn activity(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    path: Path<(String, String)>,
    query: Query<AfterQuery>,
) -> Result<HttpResponse, PageError> {
    let (connection_id, session_id) = path.into_inner();
    let fragment = crate::web::htmx::wants_fragment(&req);
    match service::activity(&st, &caller, &connection_id, &session_id, query.after).await {
        Ok(view) if fragment => varying(render(&ActivityRowsPartial { view })),
        Ok(view) => {
            let shell = Shell::new(&caller, &req, "sandboxes");
            varying(page(&shell, &ActivityPage { shell: shell.clone(), view }))
        }
        Err(RunningError::NotFound) if fragment => varying(render_status(StatusCode::NOT_FOUND, &ActivityEndedPartial)),
        Err(e) => Err(e.into()),
    }
}

/// The same URL answers a page or a fragment: caches must keep them apart.
fn varying(res: Result<HttpResponse, PageError>) -> Result<HttpResponse, PageError> {
    res.map(|mut r| {
        r.headers_mut().insert(VARY, HeaderValue::from_static("HX-Request"));
        r
    })
}
