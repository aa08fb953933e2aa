//! The export: the same filtered rows as the pages, newest first, streamed as NDJSON or CSV in
//! keyset batches of 1,000 growing to 10,000 ([`batch_size`]) — one batch in memory and one read
//! ahead, whatever the size of the log.

use actix_web::web::{Bytes, Data};

pub use super::batches::{batch_size, BATCH, MAX_BATCH};
use super::cursor::Cursor;
use super::error::OperationsError;
use super::filter::Filter;
use super::model::OperationItem;
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

/// One batch read and encoded: its bytes, and where the next batch starts with the rows this one
/// asked for (`None` once a batch came back short: the export is complete).
struct Read {
    bytes: Vec<u8>,
    next: Option<(Cursor, u32)>,
}

/// The batch read ahead while the one before it is sent: aborted when the download is dropped
/// (the client went away), so it reads nothing more.
struct Ahead(tokio::task::JoinHandle<Result<Read, OperationsError>>);

impl Drop for Ahead {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Starts reading (and encoding) the batch after `after`, the one before it having asked for
/// `asked` rows.
fn read_ahead(
    st: &Data<AppState>,
    org_id: &str,
    filter: &Filter,
    format: Format,
    after: Option<Cursor>,
    asked: Option<u32>,
) -> Ahead {
    let (st, org_id, filter) = (st.clone(), org_id.to_string(), filter.clone());
    Ahead(actix_web::rt::spawn(async move {
        let (rows, n) = service::export_batch(&st, &org_id, &filter, after.as_ref(), asked).await?;
        let next = match rows.last() {
            Some(last) if rows.len() >= n as usize => Some((Cursor::after(last.time, &last.id), n)),
            _ => None,
        };
        // Encoded on a blocking thread (as `Compress` gzips a chunk), not on the worker that
        // answers other requests.
        let bytes = actix_web::web::block(move || encode(format, &rows))
            .await
            .map_err(|e| OperationsError::Internal(anyhow::anyhow!("encoding an export batch: {e}")))?;
        Ok(Read { bytes, next })
    }))
}

struct State {
    st: Data<AppState>,
    org_id: String,
    filter: Filter,
    format: Format,
    /// The batch being read; `None` once the last one was sent.
    ahead: Option<Ahead>,
    started: bool,
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

/// The rows as a stream of chunks: the CSV header first, then one chunk per batch, in the order of
/// the pages (each batch starts after the last row of the one before). While a chunk is sent (and
/// compressed), the next batch is read and encoded ([`read_ahead`]): the database's work and the
/// console's overlap, and one batch is read ahead, never more. A database failure midway ends the
/// stream (the status is already sent) and is logged.
pub fn stream(
    st: Data<AppState>,
    org_id: String,
    filter: Filter,
    format: Format,
) -> impl futures_util::Stream<Item = Result<Bytes, actix_web::Error>> {
    let ahead = read_ahead(&st, &org_id, &filter, format, None, None);
    let state = State { st, org_id, filter, format, ahead: Some(ahead), started: false };
    futures_util::stream::unfold(state, |mut s| async move {
        let mut ahead = s.ahead.take()?;
        let mut chunk = Vec::new();
        if !s.started {
            s.started = true;
            if s.format == Format::Csv {
                chunk.extend_from_slice(CSV_HEADER.as_bytes());
            }
        }
        let read = match (&mut ahead.0).await {
            Ok(read) => read.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        match read {
            Ok(read) => {
                if let Some((after, asked)) = read.next {
                    s.ahead = Some(read_ahead(&s.st, &s.org_id, &s.filter, s.format, Some(after), Some(asked)));
                }
                if chunk.is_empty() {
                    chunk = read.bytes;
                } else {
                    chunk.extend_from_slice(&read.bytes);
                }
            }
            Err(e) => {
                tracing::error!(error = %e, event = "operations_export_failed", "the operation log export stopped");
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
