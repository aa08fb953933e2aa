//! HTML: the Running tab and a session's live activity. Each handler serves the page, or (for an
//! htmx poll) just its fragment.

use actix_web::http::header::{HeaderValue, VARY};
use actix_web::http::StatusCode;
use actix_web::web::{Data, Path, Query};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use super::activity::Activity;
use super::error::RunningError;
use super::model::{HostSessions, RunningRow, RunningSessions, Whose};
use super::row::{OnHost, Shown};
use super::section::{Section, SectionHtml};
use super::service;
use super::whose::Closing;
use super::{AfterQuery, UsageQuery};
use crate::sandbox::connections::model::Connection;
use crate::sandbox::hosts::sandboxd::client::is_session_id;
use crate::state::AppState;
use crate::web::{
    page, paths, redirect_with_flash, render, render_status, AppError, Kind, PageCaller, PageError, Shell,
};

#[derive(Template)]
#[template(path = "sandbox/running/index.html")]
pub struct RunningPage {
    pub shell: Shell,
    pub view: RunningSessions,
    /// For the rows' Close forms.
    pub csrf_token: String,
}

/// The part of the Running tab that refreshes itself (`#running-sessions`).
#[derive(Template)]
#[template(path = "sandbox/running/_sessions.html")]
pub struct SessionsPartial {
    pub view: RunningSessions,
    pub csrf_token: String,
}

/// "Close and delete files", confirmed: what is removed and where.
#[derive(Template)]
#[template(path = "sandbox/running/_delete_form.html")]
pub struct DeleteForm {
    pub csrf_token: String,
    pub connection: Connection,
    pub session: Closing,
}

impl DeleteForm {
    pub fn action(&self) -> String {
        paths::session_delete(&self.connection.id, &self.session.session_id)
    }
}

/// The confirmation as a modal dialog (htmx puts it into the Running tab's dialog slot).
#[derive(Template)]
#[template(path = "sandbox/running/_delete_dialog.html")]
pub struct DeleteDialog {
    pub form: DeleteForm,
}

/// The confirmation as a page of its own (without JavaScript, or opened directly).
#[derive(Template)]
#[template(path = "sandbox/running/delete.html")]
pub struct DeletePage {
    pub shell: Shell,
    pub form: DeleteForm,
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
    let csrf_token = caller.csrf_token.clone();
    if crate::web::htmx::wants_fragment(&req) {
        return varying(render(&SessionsPartial { view, csrf_token }));
    }
    let shell = Shell::new(&caller, &req, "sandboxes");
    varying(page(&shell, &RunningPage { shell: shell.clone(), view, csrf_token }))
}

/// "Close": the host closes the session and keeps its files.
pub async fn close(
    st: Data<AppState>,
    caller: PageCaller,
    path: Path<(String, String)>,
) -> Result<HttpResponse, PageError> {
    let (connection_id, session_id) = path.into_inner();
    closed(service::close(&st, &caller, &connection_id, &session_id, false).await)
}

/// The confirmation of "Close and delete files": a dialog for htmx, else a page.
pub async fn delete_form(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    path: Path<(String, String)>,
) -> Result<HttpResponse, PageError> {
    let (connection_id, session_id) = path.into_inner();
    let (connection, session) = service::session(&st, &caller, &connection_id, &session_id).await.map_err(gone)?;
    let form = DeleteForm { csrf_token: caller.csrf_token.clone(), connection, session };
    if crate::web::htmx::wants_fragment(&req) {
        return render(&DeleteDialog { form });
    }
    let shell = Shell::new(&caller, &req, "sandboxes");
    page(&shell, &DeletePage { shell: shell.clone(), form })
}

/// "Close and delete files", confirmed: the host closes the session and deletes its files.
pub async fn delete(
    st: Data<AppState>,
    caller: PageCaller,
    path: Path<(String, String)>,
) -> Result<HttpResponse, PageError> {
    let (connection_id, session_id) = path.into_inner();
    closed(service::close(&st, &caller, &connection_id, &session_id, true).await)
}

/// Back to the Running tab, saying what was done.
fn closed(result: Result<super::model::ClosedSession, RunningError>) -> Result<HttpResponse, PageError> {
    let c = result.map_err(gone)?;
    Ok(redirect_with_flash(paths::RUNNING, "success", c.words()))
}

/// A session that is no longer open (the host closed it meanwhile) is a 404 that says so; one
/// that never was this organization's reads the same.
fn gone(e: RunningError) -> PageError {
    match e {
        RunningError::NotFound => PageError(AppError::new(
            Kind::NotFound,
            "This session is no longer open on its host: there is nothing to close. The Running tab shows what is open now.",
        )),
        other => other.into(),
    }
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

// ---------------------------------------------------------------------------------------------
// The links the Running tab's templates put on a session, a host, the tab and an activity view:
// built here, in the HTTP layer (web/paths.rs), so the model and the services that return it
// never reach `web`.

/// The links of a listed workspace of any host kind: its operation log and its conversation.
pub trait WhoseLinks: Whose {
    /// The operation log of its workspace; none for one no workspace names.
    fn log_path(&self) -> Option<String> {
        self.owner().map(|w| paths::operations_of_workspace(&w.workspace_id))
    }

    /// The conversation's page and title, when there is one.
    fn conversation(&self) -> Option<(String, &str)> {
        let w = self.owner()?;
        Some((paths::conversation(w.conversation_id.as_deref()?), w.conversation_title.as_deref()?))
    }
}

impl<T: Whose> WhoseLinks for T {}

impl<H> RunningRow<H>
where
    Self: OnHost,
{
    /// Whether the row offers actions: a session id, listed under the connection it belongs to.
    fn actionable(&self) -> bool {
        is_session_id(self.id()) && self.owned_by().is_none()
    }

    /// Its activity: the host's live activity page where the host keeps one (none for an id that
    /// is not a session id, or a session of another connection); else the operations this console
    /// recorded on its workspace (the Activity tab, filtered), none for one no workspace names.
    pub fn activity_path(&self) -> Option<String> {
        if !self.live_activity() {
            return self.log_path();
        }
        self.actionable().then(|| super::activity_path(&self.connection_id, self.id(), 0))
    }

    /// The operation log of its workspace beside a live activity (else Activity is the log).
    pub fn log_link(&self) -> Option<String> {
        self.log_path().filter(|_| self.live_activity())
    }

    /// The page of its workspace's files (Documents), beside a live activity, when a workspace
    /// names it.
    pub fn files_path(&self) -> Option<String> {
        let w = self.workspace.as_ref().filter(|_| self.live_activity())?;
        Some(paths::document_workspace(&w.workspace_id))
    }

    /// Where "Close" posts; none as for [`Self::actionable`].
    pub fn close_path(&self) -> Option<String> {
        self.actionable().then(|| paths::session_close(&self.connection_id, self.id()))
    }

    /// The classes of its Close button.
    pub fn close_button(&self) -> String {
        format!("btn btn-sm {}", self.html().close_class)
    }

    /// The confirmation of "Close and delete files" (and where it posts); none as for Close, and
    /// none where Close deletes already (a Daytona run's sandbox).
    pub fn delete_path(&self) -> Option<String> {
        (self.actionable() && !self.close_deletes()).then(|| paths::session_delete(&self.connection_id, self.id()))
    }
}

impl Section for HostSessions {
    const HTML: SectionHtml = SectionHtml {
        id_prefix: "host-",
        class: "",
        badge: None,
        table_class: "sessions",
        nothing: "sessions",
        place: "this host",
    };

    fn same_host(&self) -> Option<&str> {
        self.same_host_as.as_deref()
    }

    /// The host's policy page.
    fn policy_path(&self) -> Option<String> {
        Some(crate::sandbox::policy::page_path(&self.connection_id))
    }
}

impl RunningSessions {
    /// The URL this view polls: itself, with the same sampling choice.
    pub fn poll_path(&self) -> String {
        super::page_path(self.usage_sampled)
    }
}

impl Activity {
    /// The next poll: entries after the latest one seen.
    pub fn poll_path(&self) -> String {
        super::activity_path(&self.connection.id, &self.session.session_id, self.latest_seq)
    }
}
