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
use super::export::{self, Format};
use super::filter::{FilterInput, OnPage, FILTERS, OPERATIONS};
use super::model::{thousands, OperationItem, OperationsPage};
use super::range::Range;
use super::service;
use super::timeline::CAP;
use super::timeline::{Bar, Timeline};
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
    /// The window the rows are in (a preset is already `since` in `input`).
    pub range: Range,
    /// The bars and the total above the table; `None` while a filter is refused or the log
    /// holds nothing to count from.
    pub timeline: Option<Timeline>,
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
    pub range_choices: Vec<Choice>,
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
    /// The filters the form has no control for ([`OnPage::Hidden`]), kept as hidden fields.
    pub fn hidden_pairs(&self) -> Vec<(&'static str, String)> {
        let kept = |k: &str| FILTERS.iter().any(|p| p.key == k && p.on_page == OnPage::Hidden);
        self.results.input.pairs().into_iter().filter(|(k, _)| kept(k)).collect()
    }
    /// Messages of the fields without a control that shows them ([`OnPage::Control`], and the
    /// range picker): the others, and the page's (`limit`, `cursor`).
    pub fn other_errors(&self) -> Vec<&crate::validate::FieldError> {
        let shown = |f: &str| f == "range" || FILTERS.iter().any(|p| p.key == f && p.on_page == OnPage::Control);
        self.errors.0.iter().filter(|e| !shown(&e.field)).collect()
    }
    pub fn failed_only(&self) -> bool {
        self.results.input.pairs().iter().any(|(k, _)| *k == "failed_only")
    }
    /// The range's bounds as a `datetime-local` field shows them (UTC, to the minute); a value
    /// that is not a time stays as typed.
    pub fn since_value(&self) -> String {
        minutes(&self.results.input.since, false)
    }
    pub fn until_value(&self) -> String {
        minutes(&self.results.input.until, true)
    }
}

/// The time range picker's options.
fn range_choices() -> Vec<Choice> {
    [
        (Range::Any, "Any time"),
        (Range::Hour, "Last hour"),
        (Range::Day, "Last 24 hours"),
        (Range::Week, "Last 7 days"),
        (Range::Custom, "Custom range"),
    ]
    .into_iter()
    .map(|(r, label)| Choice::new(r.as_str(), label))
    .collect()
}

fn minutes(raw: &str, end: bool) -> String {
    let fmt = time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]");
    match crate::audit::filter::parse_time(raw.trim(), end) {
        Ok(Some(ms)) => time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
            .ok()
            .and_then(|t| t.format(&fmt).ok())
            .unwrap_or_else(|| raw.to_string()),
        _ => raw.to_string(),
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
    /// The export of these filters and this range, as `csv` or `ndjson`.
    pub fn export_link(&self, format: &str) -> String {
        let mut pairs = self.input.pairs();
        pairs.push(("format", format.to_string()));
        paths::operations_with(paths::OPERATIONS_EXPORT, &pairs, None)
    }
    /// A bar's link: these filters narrowed to the bar's minutes (a custom range).
    pub fn bar_link(&self, bar: &Bar) -> String {
        let mut pairs: Vec<(&'static str, String)> =
            self.input.pairs().into_iter().filter(|(k, _)| *k != "since" && *k != "until").collect();
        pairs.push(("range", "custom".into()));
        pairs.push((
            "since",
            stamp(bar.from, time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]")),
        ));
        pairs.push(("until", stamp(bar.to, time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]"))));
        paths::operations_with(paths::OPERATIONS, &pairs, None)
    }
    /// A bar's accessible name: its minutes and what it counted.
    pub fn bar_label(&self, bar: &Bar) -> String {
        let day = |ms| stamp(ms, time::macros::format_description!("[year]-[month]-[day]"));
        let minute = |ms| stamp(ms, time::macros::format_description!("[hour]:[minute]"));
        let when = if day(bar.from) == day(bar.to) {
            format!("{} {}–{} UTC", day(bar.from), minute(bar.from), minute(bar.to))
        } else {
            format!("{} {} – {} {} UTC", day(bar.from), minute(bar.from), day(bar.to), minute(bar.to))
        };
        if !bar.counted {
            return format!("{when}: not counted (more than {} newer rows); show this range", thousands(CAP));
        }
        let noun = if bar.rows == 1 { "operation" } else { "operations" };
        format!("{when}: {} {noun}, {} failed; show this range", thousands(bar.rows), thousands(bar.failed))
    }
    /// The first and last bars' times under the chart.
    pub fn axis(&self) -> (String, String) {
        let Some(t) = &self.timeline else { return Default::default() };
        let fmt = time::macros::format_description!("[year]-[month]-[day] [hour]:[minute] UTC");
        (
            t.bars.first().map(|b| stamp(b.from, fmt)).unwrap_or_default(),
            t.bars.last().map(|b| stamp(b.to, fmt)).unwrap_or_default(),
        )
    }
    /// A bar's height in the chart's 100 units, at least 1 for a bar with rows.
    pub fn bar_height(&self, rows: &u64) -> u64 {
        let rows = *rows;
        let peak = self.timeline.as_ref().map_or(1, Timeline::peak);
        if rows == 0 {
            0
        } else {
            (rows * 100).div_ceil(peak).max(1)
        }
    }
    /// The chart's width in its own units (10 a bar).
    pub fn chart_width(&self) -> usize {
        self.timeline.as_ref().map_or(0, |t| t.bars.len() * 10)
    }
    /// `Rows 51–100 of 1,234`, or as much of it as is known (the timeline's total, when it has one).
    pub fn counts(&self) -> String {
        let Some(v) = &self.view else { return String::new() };
        let total = match &self.timeline {
            Some(t) if v.total.more || t.total >= v.total.count => t.total_label(),
            _ => v.total_label.clone(),
        };
        let n = v.items.len() as u64;
        match v.first_position {
            Some(first) if n > 0 => format!(
                "Rows {}–{} of {}{}",
                super::model::thousands(first),
                super::model::thousands(first + n - 1),
                total,
                self.range.words()
            ),
            _ if n > 0 => format!("{n} rows of {}{}", total, self.range.words()),
            _ => format!("0 of {}{}", total, self.range.words()),
        }
    }
}

/// Epoch milliseconds in UTC as `format` (a `time` format description) says.
fn stamp(ms: i64, format: &[time::format_description::BorrowedFormatItem<'_>]) -> String {
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(format).ok())
        .unwrap_or_else(|| ms.to_string())
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

/// The filters of the page's URL with its range resolved (a preset becomes `since`).
fn filters_with_range(req: &HttpRequest, now: i64) -> Result<(FilterInput, Range), FieldErrors> {
    let mut input = FilterInput::from_query(req.query_string());
    let range = Range::from_query(req.query_string(), &input).map_err(|m| FieldErrors::one("range", m))?;
    range.apply(&mut input, now);
    Ok((input, range))
}

pub async fn index(st: Data<AppState>, caller: PageCaller, req: HttpRequest) -> Result<HttpResponse, PageError> {
    let now = crate::db::now_ms();
    let (input, range, refused) = match filters_with_range(&req, now) {
        Ok((input, range)) => (input, range, None),
        Err(e) => (FilterInput::from_query(req.query_string()), Range::Any, Some(e)),
    };
    let (status, view, errors) = match refused {
        Some(e) => (StatusCode::UNPROCESSABLE_ENTITY, None, e),
        None => match service::page(&st, &caller, &input).await {
            Ok(v) => (StatusCode::OK, Some(v), FieldErrors::new()),
            Err(OperationsError::Invalid(e)) => (StatusCode::UNPROCESSABLE_ENTITY, None, e),
            Err(e) => return Err(e.into()),
        },
    };
    let timeline = match &view {
        Some(_) => service::timeline(&st, &caller, &input, now).await?,
        None => None,
    };
    let results = Results { view, input, now, range, timeline };
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
        range_choices: range_choices(),
        retention_days: st.config.sandboxd.operation_retention_days,
    };
    varying(page_status(status, &p.shell, &p))
}

/// Export: every row of the page's filters and range (not only the page shown), streamed as CSV
/// or NDJSON (`format=`), the organization's rows only; members are refused as on the page.
pub async fn export(st: Data<AppState>, caller: PageCaller, req: HttpRequest) -> Result<HttpResponse, PageError> {
    let (input, _) = filters_with_range(&req, crate::db::now_ms()).map_err(OperationsError::Invalid)?;
    let filter = service::export_filter(&caller, &input)?;
    let format_param = url::form_urlencoded::parse(req.query_string().as_bytes())
        .find(|(k, _)| k == "format")
        .map(|(_, v)| v.into_owned());
    let format = Format::choose(format_param.as_deref(), None)
        .ok_or_else(|| OperationsError::Invalid(FieldErrors::one("format", "Use csv or ndjson.")))?;
    Ok(export::attachment(st, &caller, filter, format))
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
