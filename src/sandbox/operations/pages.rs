//! HTML: Sandboxes → Activity, the operation log. The filters live in the URL; the form and the
//! pager swap the results in place (htmx) and push the URL, so a search can be shared. While the
//! newest rows are shown, a poll adds rows that arrive at the top.

use actix_web::http::header::{HeaderValue, VARY};
use actix_web::http::StatusCode;
use actix_web::web::Data;
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use super::cursor::Cursor;
use super::error::OperationsError;
use super::filter::{FilterInput, OPERATIONS};
use super::model::{OperationItem, OperationsPage};
use super::service;
use crate::state::AppState;
use crate::web::filters::Choice;
use crate::web::{page_status, paths, render, render_status, FieldErrors, PageCaller, PageError, Shell};

/// The results part of the page (`#oplog-results`): counts, rows, pager, poll.
#[derive(Template)]
#[template(path = "sandbox/operations/_results.html")]
pub struct Results {
    /// `None` while a filter is refused.
    pub view: Option<OperationsPage>,
    pub input: FilterInput,
    pub now: i64,
}

#[derive(Template)]
#[template(path = "sandbox/operations/index.html")]
pub struct ActivityLogPage {
    pub shell: Shell,
    pub results: Results,
    pub errors: FieldErrors,
    pub op_choices: Vec<Choice>,
    pub connection_choices: Vec<Choice>,
    pub agent_choices: Vec<Choice>,
    pub retention_days: u32,
}

/// Rows newer than the poll's cursor, then the next poll.
#[derive(Template)]
#[template(path = "sandbox/operations/_new.html")]
pub struct NewRows {
    pub view: OperationsPage,
    pub input: FilterInput,
    pub now: i64,
}

impl ActivityLogPage {
    pub fn op_selected(&self) -> String {
        self.results.input.op.first().cloned().unwrap_or_default()
    }
    /// The filters the form has no control for, kept as hidden fields.
    pub fn hidden_pairs(&self) -> Vec<(&'static str, String)> {
        const KEPT: [&str; 6] = ["session_key", "workspace_id", "run_id", "conversation_id", "since", "until"];
        self.results.input.pairs().into_iter().filter(|(k, _)| KEPT.contains(k)).collect()
    }
    /// Messages of the fields without a control of their own (and of the page: `limit`, `cursor`).
    pub fn other_errors(&self) -> Vec<&crate::validate::FieldError> {
        const SHOWN: [&str; 4] = ["q", "op", "connection_id", "agent_id"];
        self.errors.0.iter().filter(|e| !SHOWN.contains(&e.field.as_str())).collect()
    }
    pub fn failed_only(&self) -> bool {
        self.results.input.pairs().iter().any(|(k, _)| *k == "failed_only")
    }
}

/// What the row and pager templates share.
pub trait RowsView {
    fn input(&self) -> &FilterInput;
    fn now(&self) -> i64;

    fn page_link(&self, cursor: &str) -> String {
        paths::operations_with(paths::OPERATIONS, &self.input().pairs(), Some(cursor))
    }
    fn poll_link(&self, cursor: &str) -> String {
        paths::operations_with(paths::OPERATIONS_NEW, &self.input().pairs(), Some(cursor))
    }
    fn ago(&self, r: &OperationItem) -> String {
        ago(self.now() - r.time)
    }
    fn exact(&self, r: &OperationItem) -> String {
        crate::web::filters::timestamp_utc(&r.time)
    }
    fn conversation_link(&self, r: &OperationItem) -> Option<String> {
        r.conversation_id.as_deref().map(paths::conversation)
    }
    /// The workspace's page, while the workspace exists.
    fn workspace_link(&self, r: &OperationItem) -> Option<String> {
        r.workspace_id.as_deref().map(paths::document_workspace)
    }
}

impl RowsView for Results {
    fn input(&self) -> &FilterInput {
        &self.input
    }
    fn now(&self) -> i64 {
        self.now
    }
}

impl RowsView for NewRows {
    fn input(&self) -> &FilterInput {
        &self.input
    }
    fn now(&self) -> i64 {
        self.now
    }
}

impl Results {
    pub fn is_filtered(&self) -> bool {
        !self.input.pairs().is_empty()
    }
    /// The poll's cursor, while the newest rows are shown: after the first row, or (an empty
    /// first page) from the beginning.
    pub fn poll_cursor(&self) -> Option<String> {
        let v = self.view.as_ref()?;
        if v.prev_cursor.is_some() {
            return None;
        }
        v.poll_cursor.clone().or_else(|| Some(Cursor::before(0, "00000000-0000-0000-0000-000000000000").encode()))
    }
    pub fn newest_link(&self) -> String {
        paths::operations_with(paths::OPERATIONS, &self.input.pairs(), None)
    }
    /// `Rows 51–100 of 1,234`, or as much of it as is known.
    pub fn counts(&self) -> String {
        let Some(v) = &self.view else { return String::new() };
        let n = v.items.len() as u64;
        match v.first_position {
            Some(first) if n > 0 => format!(
                "Rows {}–{} of {}",
                super::model::thousands(first),
                super::model::thousands(first + n - 1),
                v.total_label
            ),
            _ if n > 0 => format!("{n} rows of {}", v.total_label),
            _ => format!("0 of {}", v.total_label),
        }
    }
}

/// `12 s ago`, `5 min ago`, `3 h ago`, `2 d ago`.
pub fn ago(ms: i64) -> String {
    let s = (ms / 1000).max(0);
    match s {
        0..=59 => format!("{s} s ago"),
        60..=3599 => format!("{} min ago", s / 60),
        3600..=86_399 => format!("{} h ago", s / 3600),
        _ => format!("{} d ago", s / 86_400),
    }
}

fn varying(res: Result<HttpResponse, PageError>) -> Result<HttpResponse, PageError> {
    res.map(|mut r| {
        r.headers_mut().insert(VARY, HeaderValue::from_static("HX-Request"));
        r
    })
}

pub async fn index(st: Data<AppState>, caller: PageCaller, req: HttpRequest) -> Result<HttpResponse, PageError> {
    let input = FilterInput::from_query(req.query_string());
    let now = crate::db::now_ms();
    let (status, view, errors) = match service::page(&st, &caller, &input).await {
        Ok(v) => (StatusCode::OK, Some(v), FieldErrors::new()),
        Err(OperationsError::Invalid(e)) => (StatusCode::UNPROCESSABLE_ENTITY, None, e),
        Err(e) => return Err(e.into()),
    };
    let results = Results { view, input, now };
    if crate::web::htmx::wants_fragment(&req) {
        return varying(render_status(status, &results));
    }
    let vocabulary = match &results.view {
        Some(v) => v.vocabulary.clone(),
        None => service::vocabulary(&st, &caller.org_id).await?,
    };
    let mut op_choices = vec![Choice::new("", "Any operation")];
    op_choices.extend(
        OPERATIONS
            .iter()
            .map(|o| o.as_str())
            .filter(|o| vocabulary.iter().any(|v| v == o) || results.input.op.iter().any(|s| s == o))
            .map(|o| Choice::new(o, o)),
    );
    let mut connection_choices = vec![Choice::new("", "Any host")];
    let connections = crate::sandbox::connections::service::list(&st, &caller).await.map_err(PageError::from)?;
    connection_choices.extend(connections.into_iter().map(|c| Choice::new(c.id, c.name)));
    let mut agent_choices = vec![Choice::new("", "Any agent")];
    let agents = crate::agents::service::list(&st, &caller).await.map_err(PageError::from)?;
    agent_choices.extend(agents.into_iter().map(|a| Choice::new(a.id, a.name)));
    let p = ActivityLogPage {
        shell: Shell::new(&caller, &req, "sandboxes"),
        results,
        errors,
        op_choices,
        connection_choices,
        agent_choices,
        retention_days: st.config.sandboxd.operation_retention_days,
    };
    varying(page_status(status, &p.shell, &p))
}

/// The poll: rows newer than its cursor (newest first) and the next poll; a refused query ends
/// the polling.
pub async fn newer(st: Data<AppState>, caller: PageCaller, req: HttpRequest) -> Result<HttpResponse, PageError> {
    let input = FilterInput::from_query(req.query_string());
    match service::newer(&st, &caller, &input).await {
        Ok(view) => render(&NewRows { view, input, now: crate::db::now_ms() }),
        Err(OperationsError::Invalid(_)) => Ok(HttpResponse::UnprocessableEntity().finish()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn times_read_as_how_long_ago() {
        assert_eq!(super::ago(12_500), "12 s ago");
        assert_eq!(super::ago(-5), "0 s ago");
        assert_eq!(super::ago(300_000), "5 min ago");
        assert_eq!(super::ago(3 * 3_600_000), "3 h ago");
        assert_eq!(super::ago(2 * 86_400_000), "2 d ago");
    }
}
