//! The export: the same filtered rows as the pages, newest first, streamed as NDJSON or CSV: a
//! first keyset batch ([`first_batch`]: 200 rows, 1,000 on SQLite), then the rest in ranges of
//! time read two at once (`segments.rs`), each in batches of up to 10,000 ([`MAX_BATCH`]) — a few
//! batches in memory, whatever the size of the log.

use std::collections::VecDeque;

use actix_web::web::{Bytes, Data};

pub use super::batches::{first_batch, BATCH, FIRST_BATCH, MAX_BATCH};
use super::cursor::Cursor;
use super::error::OperationsError;
use super::filter::Filter;
use super::model::OperationItem;
use super::segments::{Plan, Range};
use super::service;
use crate::state::AppState;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Ndjson,
    Csv,
}

impl Format {
    /// `format=` first (`ndjson`, `json`, `csv`), else the `Accept` header (`text/csv`), else NDJSON.
    /// `None` for a `format` we do not write.
    pub fn choose(format: Option<&str>, accept: Option<&str>) -> Option<Format> {
        match format.map(str::trim) {
            Some("csv") => return Some(Format::Csv),
            Some("ndjson" | "json" | "jsonl") => return Some(Format::Ndjson),
            Some("") | None => {}
            Some(_) => return None,
        }
        Some(match accept {
            Some(a) if a.contains("text/csv") => Format::Csv,
            _ => Format::Ndjson,
        })
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Format::Ndjson => "application/x-ndjson",
            Format::Csv => "text/csv; charset=utf-8",
        }
    }

    pub fn extension(self) -> &'static str {
        match self {
            Format::Ndjson => "ndjson",
            Format::Csv => "csv",
        }
    }
}

/// The download's name: the organization and the range, e.g.
/// `acme-activity-2026-12-05_1400Z-to-2026-12-06_1400Z.csv` (UTC, to the minute; `start` without
/// a `since`, the export's own time without an `until`). ASCII only: the organization's name is
/// lower-cased, anything but letters and digits becomes `-`.
pub fn file_name(org_name: &str, f: &Filter, now_ms: i64, format: Format) -> String {
    let mut org = String::new();
    for ch in org_name.chars().flat_map(char::to_lowercase) {
        if ch.is_ascii_alphanumeric() {
            org.push(ch);
        } else if !org.ends_with('-') && !org.is_empty() {
            org.push('-');
        }
    }
    let mut org: String = org.trim_end_matches('-').chars().take(40).collect();
    org = org.trim_end_matches('-').to_string();
    if org.is_empty() {
        org = "organization".into();
    }
    let from = f.since.map_or_else(|| "start".to_string(), minute_stamp);
    let to = minute_stamp(f.until.unwrap_or(now_ms));
    format!("{org}-activity-{from}-to-{to}.{}", format.extension())
}

/// `2026-12-05_1400Z`: epoch milliseconds, UTC, to the minute.
fn minute_stamp(ms: i64) -> String {
    let fmt = time::macros::format_description!("[year]-[month]-[day]_[hour][minute]Z");
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&fmt).ok())
        .unwrap_or_else(|| ms.to_string())
}

const CSV_HEADER: &str = "time,op,target,ok,detail,duration_ms,session_key,connection_id,connection_name,agent_id,agent_name,run_id,conversation_id,id\r\n";

/// A CSV field: quoted when it holds a separator, a quote or a line break; a leading `=`, `+`,
/// `-`, `@`, tab or carriage return is prefixed with `'` so a spreadsheet shows it as text
/// instead of running it as a formula.
fn csv_field(out: &mut String, v: &str) {
    let guarded = matches!(v.chars().next(), Some('=' | '+' | '-' | '@' | '\t' | '\r'));
    let quoted = v.contains([',', '"', '\n', '\r']);
    if quoted {
        out.push('"');
    }
    if guarded {
        out.push('\'');
    }
    if quoted {
        out.push_str(&v.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(v);
    }
}

fn csv_row(out: &mut String, r: &OperationItem) {
    fn opt(v: &Option<String>) -> &str {
        v.as_deref().unwrap_or_default()
    }
    let (time, ok, duration) = (crate::words::timestamp_utc(r.time), r.is_ok().to_string(), r.duration_ms.to_string());
    let fields = [
        time.as_str(),
        &r.op,
        &r.target,
        &ok,
        &r.detail,
        &duration,
        &r.session_key,
        opt(&r.connection_id),
        opt(&r.connection_name),
        opt(&r.agent_id),
        &r.agent_name,
        opt(&r.run_id),
        opt(&r.conversation_id),
        &r.id,
    ];
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        csv_field(out, f);
    }
    out.push_str("\r\n");
}

/// The rows as the download's bytes: CSV lines or one JSON object a line, written straight into
/// the buffer (no string a row).
pub fn encode(format: Format, rows: &[OperationItem]) -> Vec<u8> {
    let mut out = Vec::with_capacity(rows.len() * 512);
    for r in rows {
        match format {
            Format::Csv => {
                let mut line = String::with_capacity(512);
                csv_row(&mut line, r);
                out.extend_from_slice(line.as_bytes());
            }
            Format::Ndjson => {
                if serde_json::to_writer(&mut out, r).is_ok() {
                    out.push(b'\n');
                }
            }
        }
    }
    out
}

/// The first batch read and encoded: its bytes, its rows' newest and oldest times, and the cursor
/// after its last row when it was full (`None`: the export is complete).
struct Read {
    bytes: Vec<u8>,
    rows: usize,
    times: Option<(i64, i64)>,
    next: Option<Cursor>,
}

/// A task of the export's, aborted when dropped (the download was dropped: the client went away),
/// so it reads nothing more.
struct Task<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for Task<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The rows encoded on a blocking thread (as `Compress` gzips a chunk), not on the worker that
/// answers other requests.
async fn encoded(format: Format, rows: Vec<OperationItem>) -> Result<Vec<u8>, OperationsError> {
    actix_web::web::block(move || encode(format, &rows))
        .await
        .map_err(|e| OperationsError::Internal(anyhow::anyhow!("encoding an export batch: {e}")))
}

/// Starts reading (and encoding) the export's first batch.
fn read_first(
    st: &Data<AppState>,
    org_id: &str,
    filter: &Filter,
    format: Format,
) -> Task<Result<Read, OperationsError>> {
    let (st, org_id, filter) = (st.clone(), org_id.to_string(), filter.clone());
    Task(actix_web::rt::spawn(async move {
        let rows = service::export_first_batch(&st, &org_id, &filter).await?;
        let next = match rows.last() {
            Some(last) if rows.len() >= first_batch(st.log.kind()) as usize => Some(Cursor::after(last.time, &last.id)),
            _ => None,
        };
        let times = rows.first().zip(rows.last()).map(|(a, b)| (a.time, b.time));
        let count = rows.len();
        Ok(Read { bytes: encoded(format, rows).await?, rows: count, times, next })
    }))
}

/// A range of the export being read (`segments.rs`): its batches' bytes come through `chunks`
/// (one waits while the one before is not taken: at most two batches a range in memory), and its
/// task ends with the rows it read.
struct Segment {
    range: Range,
    chunks: tokio::sync::mpsc::Receiver<Vec<u8>>,
    task: Task<Result<usize, OperationsError>>,
}

/// Starts reading `range`'s rows (after `after`, the first batch's last row, for the first range)
/// in batches of `fetch` rows, each encoded and handed to the stream.
fn read_range(s: &State, range: Range, after: Option<Cursor>, fetch: u32) -> Segment {
    let (tx, chunks) = tokio::sync::mpsc::channel(1);
    let (st, org_id, filter, format) = (s.st.clone(), s.org_id.clone(), s.filter.clone(), s.format);
    let task = Task(actix_web::rt::spawn(async move {
        let (mut after, mut read) = (after, 0);
        loop {
            let rows = service::export_batch_within(&st, &org_id, &filter, range, after.as_ref(), fetch).await?;
            read += rows.len();
            after = match rows.last() {
                Some(last) if rows.len() >= fetch as usize => Some(Cursor::after(last.time, &last.id)),
                _ => None,
            };
            if tx.send(encoded(format, rows).await?).await.is_err() || after.is_none() {
                return Ok(read);
            }
        }
    }));
    Segment { range, chunks, task }
}

struct State {
    st: Data<AppState>,
    org_id: String,
    filter: Filter,
    format: Format,
    /// The first batch being read; `None` once it was sent.
    first: Option<Task<Result<Read, OperationsError>>>,
    /// The ranges after it being read, in order ([`super::segments::IN_FLIGHT`] at most).
    reading: VecDeque<Segment>,
    /// The ranges not started yet.
    plan: Option<Plan>,
}

impl State {
    /// Starts ranges until [`super::segments::IN_FLIGHT`] are read (the first after `after`).
    fn fill(&mut self, mut after: Option<Cursor>) {
        // A range's batches are as large as the range is meant to be (tests size both smaller).
        let fetch = self.st.log.export_range_rows().min(MAX_BATCH);
        while self.reading.len() < self.st.log.export_ranges_at_once() {
            let Some(range) = self.plan.as_mut().and_then(Plan::next_range) else { return };
            let segment = read_range(self, range, after.take(), fetch);
            self.reading.push_back(segment);
        }
    }

    /// The first batch's bytes; when it was full, the ranges after it planned and started.
    async fn take_first(&mut self, task: Task<Result<Read, OperationsError>>) -> Result<Vec<u8>, String> {
        let mut task = task;
        let read = (&mut task.0).await.map_err(|e| e.to_string())?.map_err(|e| e.to_string())?;
        if let (Some(after), Some((newest, last))) = (read.next, read.times) {
            let floor = service::export_floor(&self.st, &self.org_id, &self.filter).await.map_err(|e| e.to_string())?;
            let floor = floor.unwrap_or(last).min(last);
            let rows = self.st.log.export_range_rows();
            self.plan = Some(Plan::after_first(newest, last, read.rows, floor, self.filter.since).sized_for(rows));
            self.fill(Some(after));
        }
        Ok(read.bytes)
    }

    /// The next batch of the ranges in order, `None` once all were sent.
    async fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, String> {
        loop {
            let Some(segment) = self.reading.front_mut() else { return Ok(None) };
            if let Some(bytes) = segment.chunks.recv().await {
                return Ok(Some(bytes));
            }
            let mut done = self.reading.pop_front().expect("a range is read");
            let rows = (&mut done.task.0).await.map_err(|e| e.to_string())?.map_err(|e| e.to_string())?;
            if let Some(plan) = self.plan.as_mut() {
                plan.learned(done.range, rows);
            }
            self.fill(None);
        }
    }
}

/// The answer that streams the rows as a download, named by the organization and the range
/// ([`file_name`]).
pub fn attachment(
    st: Data<AppState>,
    caller: &crate::access::Caller,
    filter: Filter,
    format: Format,
) -> actix_web::HttpResponse {
    use actix_web::http::header;
    let name = file_name(&caller.org_name, &filter, crate::db::now_ms(), format);
    actix_web::HttpResponse::Ok()
        .content_type(format.content_type())
        .insert_header((header::CONTENT_DISPOSITION, format!("attachment; filename=\"{name}\"")))
        .streaming(stream(st, caller.org_id.clone(), filter, format))
}

/// The rows as a stream of chunks, in the order of the pages: the CSV header and the first batch
/// (200 rows, 1,000 on SQLite, or all of them), then, when there are more, the rest cut into ranges of time
/// (`segments.rs`) read two at once, each range's batches sent in order before the next range's.
/// While a chunk is sent (and compressed), the next batches are read and encoded: the database's
/// work and the console's overlap, on two of the database's connections. A database failure
/// midway ends the stream (the status is already sent) and is logged.
pub fn stream(
    st: Data<AppState>,
    org_id: String,
    filter: Filter,
    format: Format,
) -> impl futures_util::Stream<Item = Result<Bytes, actix_web::Error>> {
    let first = read_first(&st, &org_id, &filter, format);
    let state = State { st, org_id, filter, format, first: Some(first), reading: VecDeque::new(), plan: None };
    futures_util::stream::unfold(Some(state), |s| async move {
        let mut s = s?;
        let next = match s.first.take() {
            Some(first) => s.take_first(first).await.map(|bytes| {
                let mut chunk = Vec::new();
                if s.format == Format::Csv {
                    chunk.extend_from_slice(CSV_HEADER.as_bytes());
                }
                chunk.extend_from_slice(&bytes);
                Some(chunk)
            }),
            None => s.next_chunk().await,
        };
        match next {
            Ok(Some(chunk)) => Some((Ok(Bytes::from(chunk)), Some(s))),
            Ok(None) => None,
            Err(e) => {
                tracing::error!(error = %e, event = "operations_export_failed", "the operation log export stopped");
                None
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_are_quoted_and_formulas_defused() {
        let mut out = String::new();
        for v in ["plain", "a,b", "say \"hi\"", "=SUM(A1)", "line\nbreak"] {
            csv_field(&mut out, v);
            out.push('|');
        }
        assert_eq!(out, "plain|\"a,b\"|\"say \"\"hi\"\"\"|'=SUM(A1)|\"line\nbreak\"|");
    }

    #[test]
    fn the_format_comes_from_the_query_then_the_accept_header() {
        assert_eq!(Format::choose(Some("csv"), Some("application/x-ndjson")), Some(Format::Csv));
        assert_eq!(Format::choose(None, Some("text/csv")), Some(Format::Csv));
        assert_eq!(Format::choose(None, None), Some(Format::Ndjson));
        assert_eq!(Format::choose(Some("xml"), None), None);
    }
}
