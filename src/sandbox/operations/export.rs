//! The export: the same filtered rows as the pages, newest first, streamed as NDJSON or CSV in
//! keyset batches of 1,000 — one batch in memory at a time, whatever the size of the log.

use actix_web::web::{Bytes, Data};

use super::cursor::Cursor;
use super::filter::Filter;
use super::model::OperationItem;
use super::service;
use crate::state::AppState;

pub const BATCH: u32 = 1_000;

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
    let text = if guarded { format!("'{v}") } else { v.to_string() };
    if text.contains([',', '"', '\n', '\r']) {
        out.push('"');
        out.push_str(&text.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(&text);
    }
}

fn csv_row(out: &mut String, r: &OperationItem) {
    let opt = |v: &Option<String>| v.clone().unwrap_or_default();
    let time = crate::words::timestamp_utc(r.time);
    let fields = [
        time,
        r.op.clone(),
        r.target.clone(),
        r.is_ok().to_string(),
        r.detail.clone(),
        r.duration_ms.to_string(),
        r.session_key.clone(),
        opt(&r.connection_id),
        opt(&r.connection_name),
        opt(&r.agent_id),
        r.agent_name.clone(),
        opt(&r.run_id),
        opt(&r.conversation_id),
        r.id.clone(),
    ];
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        csv_field(out, f);
    }
    out.push_str("\r\n");
}

pub fn encode(format: Format, rows: &[OperationItem]) -> String {
    let mut out = String::new();
    for r in rows {
        match format {
            Format::Csv => csv_row(&mut out, r),
            Format::Ndjson => {
                out.push_str(&serde_json::to_string(r).unwrap_or_default());
                out.push('\n');
            }
        }
    }
    out
}

struct State {
    st: Data<AppState>,
    org_id: String,
    filter: Filter,
    format: Format,
    after: Option<Cursor>,
    started: bool,
    done: bool,
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

/// The rows as a stream of chunks: the CSV header first, then one chunk per batch. A database
/// failure midway ends the stream (the status is already sent) and is logged.
pub fn stream(
    st: Data<AppState>,
    org_id: String,
    filter: Filter,
    format: Format,
) -> impl futures_util::Stream<Item = Result<Bytes, actix_web::Error>> {
    let state = State { st, org_id, filter, format, after: None, started: false, done: false };
    futures_util::stream::unfold(state, |mut s| async move {
        if s.done {
            return None;
        }
        let mut chunk = String::new();
        if !s.started {
            s.started = true;
            if s.format == Format::Csv {
                chunk.push_str(CSV_HEADER);
            }
        }
        match service::batch(&s.st, &s.org_id, &s.filter, s.after.as_ref(), BATCH).await {
            Ok(rows) => {
                if rows.len() < BATCH as usize {
                    s.done = true;
                }
                if let Some(last) = rows.last() {
                    s.after = Some(Cursor::after(last.time, &last.id));
                }
                chunk.push_str(&encode(s.format, &rows));
            }
            Err(e) => {
                tracing::error!(error = %e, event = "operations_export_failed", "the operation log export stopped");
                s.done = true;
            }
        }
        Some((Ok(Bytes::from(chunk)), s))
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
