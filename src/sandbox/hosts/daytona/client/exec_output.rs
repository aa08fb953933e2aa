//! Reading `process/execute`'s answer (`{"exitCode": 0, "result": "…"}`) as it streams in, so a
//! command that printed 60 MB is never held whole: `result` is decoded up to a limit and the rest
//! only scanned past (for `exitCode`, which may come after it). Daytona caps nothing itself.

/// What a scan found.
#[derive(Debug, Default, PartialEq)]
pub struct Scanned {
    /// `exitCode` (else the SDK's fallback `code`).
    pub exit: Option<i32>,
    /// `result`'s text, at most the limit's bytes (a character cut at the limit dropped).
    pub result: String,
    /// `result` was longer than the limit.
    pub limited: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum At {
    /// Before the object's `{`.
    Start,
    /// Inside the object, where a key or `}` comes.
    Key,
    /// Inside a key's string.
    InKey,
    /// After a key, before its value.
    Value,
    /// Inside a string value (`capture`: it is `result`).
    InString { capture: bool },
    /// Inside a number, `true`, `false` or `null`.
    Scalar,
    /// Inside an object or array value, `depth` deep (`in_string`, `escaped`: inside a string
    /// there).
    Nested { depth: usize, in_string: bool, escaped: bool },
    /// After the object's `}`.
    End,
}

/// A streaming reader of one `ExecuteResponse` object.
pub struct ExecScan {
    limit: usize,
    at: At,
    key: Vec<u8>,
    scalar: Vec<u8>,
    /// A `\…` escape being read (its bytes from the backslash on).
    escape: Vec<u8>,
    out: Vec<u8>,
    limited: bool,
    exit_code: Option<i32>,
    code: Option<i32>,
    /// Not JSON as Daytona writes it.
    broken: bool,
}

impl ExecScan {
    pub fn new(limit: usize) -> Self {
        ExecScan {
            limit,
            at: At::Start,
            key: Vec::new(),
            scalar: Vec::new(),
            escape: Vec::new(),
            out: Vec::new(),
            limited: false,
            exit_code: None,
            code: None,
            broken: false,
        }
    }

    /// Reads the next bytes of the answer.
    pub fn feed(&mut self, chunk: &[u8]) {
        for &b in chunk {
            if self.broken {
                return;
            }
            self.byte(b);
        }
    }

    /// What the answer said; `None` when it was not a whole `ExecuteResponse` object.
    pub fn finish(mut self) -> Option<Scanned> {
        if self.broken || self.at != At::End {
            return None;
        }
        // A character the limit cut in two is dropped, not half-kept.
        if let Err(e) = std::str::from_utf8(&self.out) {
            if e.error_len().is_none() {
                self.out.truncate(e.valid_up_to());
            }
        }
        let result = String::from_utf8_lossy(&self.out).into_owned();
        Some(Scanned { exit: self.exit_code.or(self.code), result, limited: self.limited })
    }

    fn byte(&mut self, b: u8) {
        match self.at {
            At::Start => match b {
                b'{' => self.at = At::Key,
                _ if b.is_ascii_whitespace() => {}
                _ => self.broken = true,
            },
            At::Key => match b {
                b'"' => {
                    self.key.clear();
                    self.at = At::InKey;
                }
                b'}' => self.at = At::End,
                b',' => {}
                _ if b.is_ascii_whitespace() => {}
                _ => self.broken = true,
            },
            At::InKey => match b {
                b'"' => self.at = At::Value,
                _ => self.key.push(b),
            },
            At::Value => match b {
                b':' => {}
                _ if b.is_ascii_whitespace() => {}
                b'"' => self.at = At::InString { capture: self.key == b"result" },
                b'{' | b'[' => self.at = At::Nested { depth: 1, in_string: false, escaped: false },
                _ => {
                    self.scalar.clear();
                    self.scalar.push(b);
                    self.at = At::Scalar;
                }
            },
            At::InString { capture } => self.string_byte(b, capture),
            At::Scalar => match b {
                b',' | b'}' => {
                    self.end_scalar();
                    self.at = if b == b'}' { At::End } else { At::Key };
                }
                _ if b.is_ascii_whitespace() => {}
                _ if self.scalar.len() < 32 => self.scalar.push(b),
                _ => {}
            },
            At::Nested { depth, in_string, escaped } => {
                self.at = match (in_string, escaped, b) {
                    (true, true, _) => At::Nested { depth, in_string, escaped: false },
                    (true, false, b'\\') => At::Nested { depth, in_string, escaped: true },
                    (true, false, b'"') => At::Nested { depth, in_string: false, escaped: false },
                    (true, false, _) => At::Nested { depth, in_string, escaped },
                    (false, _, b'"') => At::Nested { depth, in_string: true, escaped: false },
                    (false, _, b'{' | b'[') => At::Nested { depth: depth + 1, in_string, escaped },
                    (false, _, b'}' | b']') if depth == 1 => At::Key,
                    (false, _, b'}' | b']') => At::Nested { depth: depth - 1, in_string, escaped },
                    _ => At::Nested { depth, in_string, escaped },
                }
            }
            At::End => {
                if !b.is_ascii_whitespace() {
                    self.broken = true;
                }
            }
        }
    }

    fn string_byte(&mut self, b: u8, capture: bool) {
        if !self.escape.is_empty() {
            self.escape.push(b);
            self.try_escape(capture);
            return;
        }
        match b {
            b'"' => self.at = At::Key,
            b'\\' => self.escape.push(b),
            _ if capture => self.emit(&[b]),
            _ => {}
        }
    }

    /// Decodes the escape read so far once it is whole (`\n`, `\u00e9`, a surrogate pair).
    fn try_escape(&mut self, capture: bool) {
        let e = &self.escape;
        let whole = match e.get(1) {
            Some(b'u') => match e.len() {
                6 => !is_high_surrogate(&e[2..6]),
                7 => e[6] != b'\\',
                8 => e[7] != b'u',
                12 => true,
                _ => false,
            },
            Some(_) => true,
            None => false,
        };
        if !whole {
            return;
        }
        let escape = std::mem::take(&mut self.escape);
        // A high surrogate followed by something else: U+FFFD, then that something again.
        let (decode, rest): (&[u8], &[u8]) =
            if escape.len() == 7 || escape.len() == 8 { (&escape[..6], &escape[6..]) } else { (&escape, &[]) };
        let mut quoted = Vec::with_capacity(decode.len() + 2);
        quoted.push(b'"');
        quoted.extend_from_slice(decode);
        quoted.push(b'"');
        let text = serde_json::from_slice::<String>(&quoted).unwrap_or_else(|_| "\u{fffd}".into());
        if capture {
            self.emit(text.as_bytes());
        }
        for &b in rest {
            self.string_byte(b, capture);
        }
    }

    fn emit(&mut self, bytes: &[u8]) {
        let room = self.limit.saturating_sub(self.out.len());
        if bytes.len() > room {
            self.out.extend_from_slice(&bytes[..room]);
            self.limited = true;
        } else {
            self.out.extend_from_slice(bytes);
        }
    }

    fn end_scalar(&mut self) {
        let value = std::str::from_utf8(&self.scalar).ok().and_then(|s| s.parse::<i32>().ok());
        match self.key.as_slice() {
            b"exitCode" => self.exit_code = value,
            b"code" => self.code = value,
            _ => {}
        }
    }
}

fn is_high_surrogate(hex: &[u8]) -> bool {
    std::str::from_utf8(hex)
        .ok()
        .and_then(|h| u16::from_str_radix(h, 16).ok())
        .is_some_and(|u| (0xD800..0xDC00).contains(&u))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(json: &str, limit: usize, chunk: usize) -> Option<Scanned> {
        let mut s = ExecScan::new(limit);
        for part in json.as_bytes().chunks(chunk) {
            s.feed(part);
        }
        s.finish()
    }

    #[test]
    fn an_answer_reads_in_any_chunking_with_escapes_and_either_key_order() {
        let text = "a\"b\\c\nd é 😀 \u{1}";
        let json = serde_json::json!({"exitCode": 3, "result": text}).to_string();
        for chunk in [1, 2, 3, 7, 1000] {
            let s = scan(&json, 1 << 20, chunk).expect("scanned");
            assert_eq!((s.exit, s.result.as_str(), s.limited), (Some(3), text, false), "chunk {chunk}");
        }
        let later = r#"{"result":"x\ud83d\ude00y","extra":{"a":["}",1]},"exitCode":-1}"#;
        assert_eq!(scan(later, 100, 1), Some(Scanned { exit: Some(-1), result: "x😀y".into(), limited: false }));
        assert_eq!(scan(r#"{"code":2,"result":""}"#, 10, 1).map(|s| s.exit), Some(Some(2)));
        assert_eq!(scan(r#"{"result":"\ud83dx"}"#, 10, 1).map(|s| s.result), Some("\u{fffd}x".into()));
    }

    #[test]
    fn a_long_result_is_cut_at_the_limit_on_a_character_boundary() {
        let json = serde_json::json!({"result": "ééééé", "exitCode": 0}).to_string();
        let s = scan(&json, 5, 3).expect("scanned");
        assert_eq!((s.result.as_str(), s.limited, s.exit), ("éé", true, Some(0)));
    }

    #[test]
    fn what_is_not_an_answer_is_none() {
        assert_eq!(scan("<html>", 10, 1), None);
        assert_eq!(scan(r#"{"result":"cut"#, 10, 1), None);
    }
}
