//! Body extractor configuration: malformed JSON or forms are a 422 naming the field, never a 500.

use actix_web::error::{JsonPayloadError, UrlencodedError};
use actix_web::{web, HttpRequest};

use super::error::{AppError, FieldErrors, Kind};
use super::page_error::PageError;
use super::problem::ApiError;

pub fn json_config() -> web::JsonConfig {
    web::JsonConfig::default().limit(1024 * 1024).error_handler(|err, _req: &HttpRequest| {
        let app = match &err {
            JsonPayloadError::Deserialize(e) => {
                let mut fields = FieldErrors::new();
                fields.add(&field_of(&e.to_string()), e.to_string());
                AppError::invalid(fields)
            }
            JsonPayloadError::ContentType => AppError::new(Kind::Invalid, "Send the body as application/json."),
            JsonPayloadError::Overflow { .. } | JsonPayloadError::OverflowKnownLength { .. } => {
                AppError::new(Kind::PayloadTooLarge, "The body is larger than 1 MiB.")
            }
            other => {
                let mut fields = FieldErrors::new();
                fields.add("body", other.to_string());
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
            other => AppError::new(Kind::Invalid, other.to_string()),
        };
        PageError(app).into()
    })
}

pub fn query_config() -> web::QueryConfig {
    web::QueryConfig::default().error_handler(|err, req: &HttpRequest| {
        let mut fields = FieldErrors::new();
        fields.add(&field_of(&err.to_string()), err.to_string());
        let app = AppError::invalid(fields);
        if req.path().starts_with("/api/") {
            ApiError(app).into()
        } else {
            PageError(app).into()
        }
    })
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

#[cfg(test)]
mod tests {
    #[test]
    fn a_missing_field_is_named() {
        assert_eq!(super::field_of("missing field `email` at line 1 column 2"), "email");
        assert_eq!(super::field_of("expected value at line 1 column 1"), "body");
    }
}
