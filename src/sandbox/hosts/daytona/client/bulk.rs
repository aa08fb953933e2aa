//! Many files a request: `POST /files/bulk-download` (`{"paths": […]}` → one multipart part per
//! path, a `file` or an `error` part, in the order asked: daytonaio/daytona
//! apps/daemon/pkg/toolbox/fs/download_files.go) and `POST /files/bulk-upload` (`files[i].path`
//! and `files[i].file` for each file: upload_files.go). Neither route limits the number of files
//! or the bytes of a request; the SDK sends all the files it is given in one request. We keep
//! each request to [`BULK_FILES`] files and [`BULK_BYTES`] bytes, so a failure costs little and
//! memory stays bounded.

use reqwest::Method;

use super::error::{DaytonaError, ErrorBody, Side};
use super::http::{json_body, Body};
use super::multipart;
use super::multipart_read::{Part, PartReader};
use super::toolbox::Toolbox;

/// Files in one bulk request at most.
pub const BULK_FILES: usize = 64;
/// Bytes of files in one bulk request at most (by their listed sizes; one larger file goes
/// alone).
pub const BULK_BYTES: u64 = 8 * 1024 * 1024;
/// Bulk requests in flight at once: two keep the reads and writes flowing (one is parsed while
/// the next streams) while asking less of the host at once than three did; the snapshots bench
/// through the fake (docs/benchmarks.md) measured both.
pub const BULK_IN_FLIGHT: usize = 2;

/// One path's share of a bulk download.
#[derive(Debug)]
pub enum Fetched {
    Bytes(Vec<u8>),
    /// Not there (removed meanwhile, or now a folder).
    Gone,
    /// Over the limit asked for.
    TooLarge,
    /// The daemon could not read it (permission denied, …).
    Failed(DaytonaError),
}

#[derive(serde::Serialize)]
struct Paths<'a> {
    paths: &'a [String],
}

impl Toolbox {
    /// `POST /files/bulk-download`: each path's bytes (at most `max_each`; a longer file is
    /// [`Fetched::TooLarge`], its bytes never held), in the order of `paths`. The answer is read
    /// as it streams. A daemon without the route answers 404: [`DaytonaError::NotFound`] for the
    /// whole request.
    pub async fn download_many(&self, paths: &[String], max_each: usize) -> Result<Vec<Fetched>, DaytonaError> {
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        let url = self.url(&["files", "bulk-download"], &[]);
        let body = json_body(&Paths { paths })?;
        let mut response = self.client.send(Side::Toolbox, Method::POST, url, body, self.operation()).await?;
        let content_type =
            response.headers().get(reqwest::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
        let Some(boundary) = boundary_of(content_type) else {
            tracing::debug!(target: "daytona", content_type, "a bulk-download answer that is not multipart");
            return Err(DaytonaError::NotDaytona);
        };
        let mut reader = PartReader::new(&boundary, max_each);
        let mut matched = Matched::new(paths);
        while let Some(chunk) = response.chunk().await.map_err(DaytonaError::from_transport)? {
            reader.feed(&chunk).map_err(not_daytona)?;
            for part in reader.take() {
                matched.add(part);
            }
        }
        reader.finish().map_err(not_daytona)?;
        matched.finish()
    }

    /// `POST /files/bulk-upload` with every `(path, bytes)` of `files`: parents are created, files
    /// there replaced. Any file refused fails the whole call (the daemon writes the others).
    pub async fn upload_many(&self, files: &[(&str, &[u8])]) -> Result<(), DaytonaError> {
        if files.is_empty() {
            return Ok(());
        }
        let (boundary, bytes) = multipart::bulk_upload_many(files)?;
        let url = self.url(&["files", "bulk-upload"], &[]);
        let body = Body::Multipart { boundary, bytes };
        self.client.send(Side::Toolbox, Method::POST, url, body, self.operation()).await.map(drop)
    }
}

fn not_daytona(reason: String) -> DaytonaError {
    tracing::debug!(target: "daytona", reason, "a bulk-download answer that is not Daytona's");
    DaytonaError::NotDaytona
}

/// `boundary=` of a `multipart/…` content type.
fn boundary_of(content_type: &str) -> Option<String> {
    let (kind, params) = content_type.split_once(';')?;
    if !kind.trim().to_ascii_lowercase().starts_with("multipart/") {
        return None;
    }
    params.split(';').find_map(|p| {
        let (k, v) = p.split_once('=')?;
        (k.trim().eq_ignore_ascii_case("boundary")).then(|| v.trim().trim_matches('"').to_string())
    })
}

/// The answer's parts matched to the paths asked for, in order: one part per path. A part past
/// the last path (an old daemon's `download-summary.error.txt`) is ignored; an `error` part naming
/// the path before it (a file that failed while it streamed) replaces that path's bytes.
struct Matched<'a> {
    paths: &'a [String],
    out: Vec<Fetched>,
}

impl<'a> Matched<'a> {
    fn new(paths: &'a [String]) -> Self {
        Self { paths, out: Vec::with_capacity(paths.len()) }
    }

    fn add(&mut self, part: Part) {
        let i = self.out.len();
        let is_error = part.name == "error";
        if is_error && i > 0 && !names(&part, self.paths.get(i)) && names(&part, self.paths.get(i - 1)) {
            if matches!(self.out[i - 1], Fetched::Bytes(_)) {
                self.out[i - 1] = error_of(&part);
            }
            return;
        }
        if i >= self.paths.len() {
            return;
        }
        self.out.push(if is_error {
            error_of(&part)
        } else if part.over {
            Fetched::TooLarge
        } else {
            Fetched::Bytes(part.body)
        });
    }

    fn finish(self) -> Result<Vec<Fetched>, DaytonaError> {
        if self.out.len() < self.paths.len() {
            return Err(not_daytona(format!("{} parts for {} paths", self.out.len(), self.paths.len())));
        }
        Ok(self.out)
    }
}

/// Whether `part` names `path`: by its filename (the path, or on old daemons its last name) or
/// by its field name (old daemons name the field by the path).
fn names(part: &Part, path: Option<&String>) -> bool {
    let Some(path) = path else { return false };
    let base = path.rsplit('/').next().unwrap_or(path);
    part.filename.as_deref().is_some_and(|f| f == path || f == base) || part.name == *path
}

/// An `error` part: Daytona's `ErrorResponse` JSON (`statusCode`, `code`, `message`) or, on
/// daemons before it, plain text (`file not found or invalid: <path>`, `error opening file: …`).
fn error_of(part: &Part) -> Fetched {
    let text = String::from_utf8_lossy(&part.body).into_owned();
    let status = serde_json::from_slice::<serde_json::Value>(&part.body)
        .ok()
        .and_then(|v| v.get("statusCode").and_then(|s| s.as_u64()));
    let (message, code) = match ErrorBody::parse(&part.body) {
        Some(b) => (b.message, b.code),
        None => (text.trim().to_string(), None),
    };
    let lower = message.to_ascii_lowercase();
    let gone = status == Some(404)
        || matches!(code.as_deref(), Some("FILE_NOT_FOUND"))
        || lower.contains("not found")
        || lower.contains("is a directory");
    if gone {
        return Fetched::Gone;
    }
    if status == Some(413) || lower.contains("too large") {
        return Fetched::TooLarge;
    }
    let denied = status == Some(403)
        || matches!(code.as_deref(), Some("FILE_ACCESS_DENIED"))
        || lower.contains("permission denied");
    if denied {
        return Fetched::Failed(DaytonaError::AccessDenied { message });
    }
    Fetched::Failed(DaytonaError::Status { status: status.map_or(500, |s| s as u16), message })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(name: &str, filename: &str, body: &str) -> Part {
        Part { name: name.into(), filename: Some(filename.into()), body: body.as_bytes().to_vec(), ..Part::default() }
    }

    #[test]
    fn parts_are_matched_in_order_and_errors_are_sorted() {
        let paths: Vec<String> = ["/w/a", "/w/gone", "/w/locked", "/w/big", "/w/late"].map(String::from).to_vec();
        let mut m = Matched::new(&paths);
        m.add(part("file", "/w/a", "A"));
        m.add(part(
            "error",
            "/w/gone",
            r#"{"statusCode":404,"message":"file not found: /w/gone","code":"FILE_NOT_FOUND"}"#,
        ));
        m.add(part("error", "locked", "error opening file: open /w/locked: permission denied"));
        m.add(Part { name: "file".into(), filename: Some("/w/big".into()), over: true, ..Part::default() });
        m.add(part("file", "/w/late", "L"));
        m.add(part("error", "/w/late", "error streaming file: EOF"));
        m.add(part("error", "download-summary.error.txt", "download errors: …"));
        let out = m.finish().unwrap();
        assert!(matches!(&out[0], Fetched::Bytes(b) if b == b"A"));
        assert!(matches!(out[1], Fetched::Gone));
        assert!(matches!(&out[2], Fetched::Failed(DaytonaError::AccessDenied { .. })));
        assert!(matches!(out[3], Fetched::TooLarge));
        assert!(matches!(&out[4], Fetched::Failed(DaytonaError::Status { .. })));
        let mut short = Matched::new(&paths);
        short.add(part("file", "/w/a", "A"));
        assert!(short.finish().is_err(), "a path with no part");
    }

    #[test]
    fn the_boundary_is_read_from_the_content_type() {
        assert_eq!(
            boundary_of("multipart/form-data; boundary=DAYTONA-FILE-BOUNDARY").as_deref(),
            Some("DAYTONA-FILE-BOUNDARY")
        );
        assert_eq!(boundary_of("multipart/form-data; boundary=\"q b\"").as_deref(), Some("q b"));
        assert_eq!(boundary_of("application/json"), None);
    }
}
