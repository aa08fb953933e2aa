//! HTML: the Running tab and a session's live activity. Each handler serves the page, or (for an
//! htmx poll) just its fragment.

use actix_web::http::header::{HeaderValue, VARY};
use actix_web::http::StatusCode;
use actix_web::web::{Data, Path, Query};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use super::activity::Activity;
use super::error::RunningError;
use super::model::{HostSessions, RunningSession, RunningSessions, Whose};
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

impl RunningSession {
    /// Whether the row offers actions: a session id, listed under the connection it belongs to.
    fn actionable(&self) -> bool {
        is_session_id(&self.session_id) && self.owned_by.is_none()
    }

    /// The live activity page; none for an id that is not a session id, or a session of another
    /// connection.
    pub fn activity_path(&self) -> Option<String> {
        self.actionable().then(|| super::activity_path(&self.connection_id, &self.session_id, 0))
    }

    /// Where "Close" posts; none for an id that is not a session id, or a session of another
    /// connection.
    pub fn close_path(&self) -> Option<String> {
        self.actionable().then(|| paths::session_close(&self.connection_id, &self.session_id))
    }

    /// The confirmation of "Close and delete files" (and where it posts); none as for Close.
    pub fn delete_path(&self) -> Option<String> {
        self.actionable().then(|| paths::session_delete(&self.connection_id, &self.session_id))
    }

    /// The idle time as its parts (`4 min`, `50 s`): each kept on one line, so a narrow cell wraps
    /// only between them.
    pub fn idle_parts(&self) -> Vec<String> {
        parts(&self.idle_words())
    }

    /// "Closes if idle in" as its parts, as [`Self::idle_parts`].
    pub fn closes_in_parts(&self) -> Vec<String> {
        parts(&self.closes_in_words())
    }

    /// The page of this session's workspace's files (Documents), when a workspace names it.
    pub fn files_path(&self) -> Option<String> {
        Some(paths::document_workspace(&self.workspace.as_ref()?.workspace_id))
    }
}

/// `4 min 50 s` → `4 min`, `50 s`: a number with its unit; a word without a number alone.
fn parts(words: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in words.split_whitespace() {
        match out.last_mut() {
            Some(last) if last.chars().all(|c| c.is_ascii_digit()) => {
                last.push(' ');
                last.push_str(w);
            }
            _ => out.push(w.to_string()),
        }
    }
    out
}

impl crate::sandbox::hosts::daytona::running::model::DaytonaSandbox {
    /// Where "Close" posts (stop, or delete for a run's sandbox).
    pub fn close_path(&self) -> Option<String> {
        is_session_id(&self.sandbox_id).then(|| paths::session_close(&self.connection_id, &self.sandbox_id))
    }

    /// Its activity: Daytona keeps no event ring, so the operations this console recorded on its
    /// workspace (the Activity tab, filtered); none for one no workspace names.
    pub fn activity_path(&self) -> Option<String> {
        self.log_path()
    }

    /// The confirmation of "Close and delete files" (and where it posts); none for a run's
    /// sandbox, whose Close deletes it already.
    pub fn delete_path(&self) -> Option<String> {
        (is_session_id(&self.sandbox_id) && !self.is_run_scoped())
            .then(|| paths::session_delete(&self.connection_id, &self.sandbox_id))
    }
}

impl HostSessions {
    /// The host's policy page.
    pub fn policy_path(&self) -> String {
        crate::sandbox::policy::page_path(&self.connection_id)
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

#[cfg(test)]
mod tests {
    use super::parts;

    #[test]
    fn a_time_wraps_only_between_its_parts() {
        assert_eq!(parts("4 min 50 s"), ["4 min", "50 s"]);
        assert_eq!(parts("1 d 3 h"), ["1 d", "3 h"]);
        assert_eq!(parts("0 s"), ["0 s"]);
        assert_eq!(parts("due now"), ["due", "now"]);
        assert_eq!(parts("—"), ["—"]);
    }
}
