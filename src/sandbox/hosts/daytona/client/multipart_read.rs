//! Reading the `multipart/form-data` answer of `POST /files/bulk-download` as it streams: parts
//! come out whole, each body kept up to a limit (a longer one is marked `over` and the rest of it
//! is never held), so a reader never holds more than its parts' limits.

use memchr::memmem;

/// One part of the answer.
#[derive(Debug, Default)]
pub(super) struct Part {
    /// `name` of its `Content-Disposition` (`file`, `error`; old daemons: the path).
    pub name: String,
    /// `filename*` (RFC 5987, decoded) when sent, else `filename`.
    pub filename: Option<String>,
    pub content_type: Option<String>,
    /// Its bytes, at most the limit.
    pub body: Vec<u8>,
    /// Longer than the limit: `body` is empty.
    pub over: bool,
}

enum State {
    /// Before a delimiter (the preamble, or between a part and the next delimiter).
    Seek,
    /// After a delimiter: `--` ends the answer, else a part's headers follow.
    AfterDelimiter,
    Headers,
    Body(Part),
    Done,
}

/// A streaming reader of one multipart answer.
pub(super) struct PartReader {
    /// `\r\n--<boundary>`: the stream is read as if it began with `\r\n`.
    delimiter: Vec<u8>,
    buf: Vec<u8>,
    state: State,
    max: usize,
    parts: Vec<Part>,
}

impl PartReader {
    /// A reader of parts of at most `max` bytes each.
    pub fn new(boundary: &str, max: usize) -> Self {
        Self {
            delimiter: format!("\r\n--{boundary}").into_bytes(),
            buf: b"\r\n".to_vec(),
            state: State::Seek,
            max,
            parts: Vec::new(),
        }
    }

    /// The parts finished so far, taken.
    pub fn take(&mut self) -> Vec<Part> {
        std::mem::take(&mut self.parts)
    }

    /// Reads the next bytes of the answer.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), String> {
        self.buf.extend_from_slice(chunk);
        loop {
            match std::mem::replace(&mut self.state, State::Done) {
                State::Done => return Ok(()),
                State::Seek => match memmem::find(&self.buf, &self.delimiter) {
                    Some(at) => {
                        self.buf.drain(..at + self.delimiter.len());
                        self.state = State::AfterDelimiter;
                    }
                    None => {
                        let keep = self.delimiter.len() - 1;
                        if self.buf.len() > keep {
                            self.buf.drain(..self.buf.len() - keep);
                        }
                        self.state = State::Seek;
                        return Ok(());
                    }
                },
                State::AfterDelimiter => {
                    if self.buf.len() < 2 {
                        self.state = State::AfterDelimiter;
                        return Ok(());
                    }
                    if self.buf.starts_with(b"--") {
                        self.buf.clear();
                        self.state = State::Done;
                        return Ok(());
                    }
                    // Transport padding may follow a delimiter before its line break.
                    let Some(eol) = memmem::find(&self.buf, b"\r\n") else {
                        self.state = State::AfterDelimiter;
                        return Ok(());
                    };
                    if !self.buf[..eol].iter().all(|b| *b == b' ' || *b == b'\t') {
                        return Err("a multipart delimiter followed by other text".into());
                    }
                    self.buf.drain(..eol + 2);
                    self.state = State::Headers;
                }
                State::Headers => {
                    let Some(end) = memmem::find(&self.buf, b"\r\n\r\n") else {
                        if self.buf.len() > 16 * 1024 {
                            return Err("a multipart part's headers are too long".into());
                        }
                        self.state = State::Headers;
                        return Ok(());
                    };
                    let part = headers(&String::from_utf8_lossy(&self.buf[..end]));
                    self.buf.drain(..end + 4);
                    // The body starts here; an empty one is followed by its delimiter at once.
                    self.state = State::Body(part);
                }
                State::Body(mut part) => match memmem::find(&self.buf, &self.delimiter) {
                    Some(at) => {
                        self.append(&mut part, at);
                        self.buf.drain(..self.delimiter.len());
                        self.parts.push(part);
                        self.state = State::AfterDelimiter;
                    }
                    None => {
                        let keep = self.delimiter.len() - 1;
                        if self.buf.len() > keep {
                            let n = self.buf.len() - keep;
                            self.append(&mut part, n);
                        }
                        self.state = State::Body(part);
                        return Ok(());
                    }
                },
            }
        }
    }

    /// Moves the first `n` bytes of the buffer into `part`'s body, within the limit.
    fn append(&mut self, part: &mut Part, n: usize) {
        if !part.over && part.body.len() + n > self.max {
            part.over = true;
            part.body = Vec::new();
        }
        if part.over {
            self.buf.drain(..n);
        } else {
            part.body.extend(self.buf.drain(..n));
        }
    }

    /// The answer ended: an error when it was cut before its closing delimiter.
    pub fn finish(&mut self) -> Result<(), String> {
        match self.state {
            State::Done => Ok(()),
            _ => Err("the multipart answer ended before its closing delimiter".into()),
        }
    }
}

/// A part's headers: its `Content-Disposition` parameters and `Content-Type`.
fn headers(text: &str) -> Part {
    let mut part = Part::default();
    let mut plain = None;
    let mut extended = None;
    for line in text.split("\r\n") {
        let Some((name, value)) = line.split_once(':') else { continue };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-type") {
            part.content_type = Some(value.to_string());
        } else if name.eq_ignore_ascii_case("content-disposition") {
            for (key, v) in params(value) {
                match key.to_ascii_lowercase().as_str() {
                    "name" => part.name = v,
                    "filename" => plain = Some(v),
                    "filename*" => {
                        extended = v.strip_prefix("utf-8''").or(v.strip_prefix("UTF-8''")).map(percent_decode)
                    }
                    _ => {}
                }
            }
        }
    }
    part.filename = extended.or(plain);
    part
}

/// `key=value` and `key="value"` parameters after the disposition type. A quoted value runs to
/// its closing quote (a `\` escapes the next character), so a `;` inside it stays in it.
fn params(value: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = value.split_once(';').map_or("", |(_, r)| r);
    loop {
        rest = rest.trim_start_matches([' ', ';', '\t']);
        let Some((key, after)) = rest.split_once('=') else { return out };
        let key = key.trim().to_string();
        if let Some(quoted) = after.strip_prefix('"') {
            let mut v = String::new();
            let mut chars = quoted.char_indices();
            let mut end = quoted.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, n)) = chars.next() {
                            v.push(n);
                        }
                    }
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    c => v.push(c),
                }
            }
            out.push((key, v));
            rest = &quoted[end.min(quoted.len())..];
        } else {
            let (v, r) = after.split_once(';').unwrap_or((after, ""));
            out.push((key, v.trim().to_string()));
            rest = r;
        }
    }
}

fn percent_decode(s: &str) -> String {
    url::form_urlencoded::parse(format!("x={}", s.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: &str = "DAYTONA-FILE-BOUNDARY";

    fn answer() -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(
            format!(
                "--{B}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"/h/a;b.md\"; \
                 filename*=utf-8''%2Fh%2Fa%3Bb%20c.md\r\nContent-Type: text/markdown\r\n\r\nhi\r\n--x\r\n"
            )
            .as_bytes(),
        );
        out.extend_from_slice(
            format!("--{B}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"/h/big\"\r\n\r\n").as_bytes(),
        );
        out.extend_from_slice(&[7u8; 100]);
        out.extend_from_slice(
            format!(
                "\r\n--{B}\r\nContent-Disposition: form-data; name=\"error\"; filename=\"/h/gone\"\r\n\
                 Content-Type: text/plain\r\n\r\nfile not found or invalid: /h/gone\r\n--{B}\r\n\
                 Content-Disposition: form-data; name=\"file\"; filename=\"/h/empty\"\r\n\r\n\r\n--{B}--\r\n"
            )
            .as_bytes(),
        );
        out
    }

    fn read_in(chunk: usize) -> Vec<Part> {
        let mut r = PartReader::new(B, 50);
        let mut parts = Vec::new();
        for c in answer().chunks(chunk) {
            r.feed(c).unwrap();
            parts.extend(r.take());
        }
        r.finish().unwrap();
        parts
    }

    #[test]
    fn parts_come_out_whole_whatever_the_chunks_and_a_long_one_is_over() {
        for chunk in [1, 2, 3, 7, 64, 10_000] {
            let parts = read_in(chunk);
            assert_eq!(parts.len(), 4, "chunks of {chunk}");
            assert_eq!(parts[0].name, "file");
            assert_eq!(parts[0].filename.as_deref(), Some("/h/a;b c.md"));
            assert_eq!(parts[0].content_type.as_deref(), Some("text/markdown"));
            assert_eq!(parts[0].body, b"hi\r\n--x");
            assert!(parts[1].over && parts[1].body.is_empty());
            assert_eq!((parts[2].name.as_str(), parts[2].filename.as_deref()), ("error", Some("/h/gone")));
            assert_eq!(parts[2].body, b"file not found or invalid: /h/gone");
            assert!(parts[3].body.is_empty() && !parts[3].over);
        }
    }

    #[test]
    fn a_cut_answer_is_an_error() {
        let whole = answer();
        let mut r = PartReader::new(B, 50);
        r.feed(&whole[..whole.len() - 10]).unwrap();
        assert!(r.finish().is_err());
    }
}
