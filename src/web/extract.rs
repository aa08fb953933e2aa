//! Body extractor configuration: malformed JSON or forms are a 422 naming the field, never a 500.

use actix_web::error::{JsonPayloadError, UrlencodedError};
use actix_web::{web, HttpMessage, HttpRequest};

pub use super::body::PeekedBody;
use super::error::{AppError, FieldErrors, Kind};
use super::page_error::PageError;
use super::problem::ApiError;

pub fn json_config() -> web::JsonConfig {
    web::JsonConfig::default().limit(1024 * 1024).error_handler(|err, req: &HttpRequest| {
        let app = match &err {
            JsonPayloadError::Deserialize(e) => {
                // serde names a missing or unknown field itself; for a value of the wrong type it
                // gives a position, and the body the edge read names the key written there.
                let named = Some(field_of(&e.to_string())).filter(|f| f != "body");
                let at_position = || {
                    let ext = req.extensions();
                    let body = ext.get::<PeekedBody>()?;
                    key_at(std::str::from_utf8(&body.0).ok()?, e.line(), e.column())
                };
                let field = named.or_else(at_position).unwrap_or_else(|| "body".to_string());
                let mut fields = FieldErrors::new();
                fields.add(&field, readable(&e.to_string()));
                AppError::invalid(fields)
            }
            JsonPayloadError::ContentType => AppError::new(Kind::Invalid, "Send the body as application/json."),
            JsonPayloadError::Overflow { .. } | JsonPayloadError::OverflowKnownLength { .. } => {
                AppError::new(Kind::PayloadTooLarge, "The body is larger than 1 MiB.")
            }
            other => {
                let mut fields = FieldErrors::new();
                fields.add("body", readable(&other.to_string()));
                AppError::invalid(fields)
            }
        };
        ApiError(app).into()
    })
}

pub fn form_config() -> web::FormConfig {
    web::FormConfig::default().limit(1024 * 1024).error_handler(|err, _req: &HttpRequest| {
        let app = match &err {
            UrlencodedError::Parse(_) | UrlencodedError::ContentType => {
                let text = err.to_string();
                let mut fields = FieldErrors::new();
                fields.add(&field_of(&text), "This value is missing or not valid.");
                AppError::invalid(fields)
            }
            other => AppError::new(Kind::Invalid, readable(&other.to_string())),
        };
        PageError(app).into()
    })
}

pub fn query_config() -> web::QueryConfig {
    web::QueryConfig::default().error_handler(|err, req: &HttpRequest| {
        let mut fields = FieldErrors::new();
        fields.add(&field_of(&err.to_string()), readable(&err.to_string()));
        let app = AppError::invalid(fields);
        if req.path().starts_with("/api/") {
            ApiError(app).into()
        } else {
            PageError(app).into()
        }
    })
}

/// A parser's message as people read it: its `quoted` words in typographic quotes instead of
/// backticks.
fn readable(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut open = false;
    for c in message.chars() {
        if c == '`' {
            out.push(if open { '”' } else { '“' });
            open = !open;
        } else {
            out.push(c);
        }
    }
    out
}

/// The field a serde message names (`missing field `email``, `unknown variant` …), else `body`.
fn field_of(message: &str) -> String {
    if let Some(start) = message.find('`') {
        if let Some(len) = message[start + 1..].find('`') {
            let name = &message[start + 1..start + 1 + len];
            if message.contains("field") && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return name.to_string();
            }
        }
    }
    "body".to_string()
}

/// The key of the innermost member whose value starts before `line`:`column` (1-based, as
/// serde_json reports an error) — the field a wrong-typed value was written for.
fn key_at(body: &str, line: usize, column: usize) -> Option<String> {
    let offset = body.split_inclusive('\n').take(line.saturating_sub(1)).map(str::len).sum::<usize>() + column;
    let before = body.get(..offset.min(body.len()))?;
    // The last `"key":` before the position, scanning back over the value itself.
    let colon = before.rfind(':')?;
    let head = before[..colon].trim_end();
    let head = head.strip_suffix('"')?;
    let start = head.rfind('"')?;
    let key = &head[start + 1..];
    (!key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')).then(|| key.to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_wrong_typed_value_is_named_by_its_key() {
        let body = r#"{"argv":["ls"],"timeout_seconds":"soon"}"#;
        let e = serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(body).err();
        assert!(e.is_none());
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct Exec {
            argv: Vec<String>,
            timeout_seconds: u64,
        }
        let e = serde_json::from_str::<Exec>(body).expect_err("wrong type");
        assert_eq!(super::key_at(body, e.line(), e.column()).as_deref(), Some("timeout_seconds"));
        let body = "{\n  \"name\": \"x\",\n  \"shell_enabled\": \"yes\"\n}";
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct Agent {
            name: String,
            shell_enabled: bool,
        }
        let e = serde_json::from_str::<Agent>(body).expect_err("wrong type");
        assert_eq!(super::key_at(body, e.line(), e.column()).as_deref(), Some("shell_enabled"));
    }

    #[test]
    fn a_parser_message_quotes_without_backticks() {
        assert_eq!(super::readable("missing field `email` at line 1"), "missing field “email” at line 1");
    }

    #[test]
    fn a_missing_field_is_named() {
        assert_eq!(super::field_of("missing field `email` at line 1 column 2"), "email");
        assert_eq!(super::field_of("expected value at line 1 column 1"), "body");
    }
}
