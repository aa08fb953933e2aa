//! Template helpers: formatting only.

/// Epoch milliseconds as `2026-11-29 21:12 UTC`.
pub fn datetime(ms: &i64) -> String {
    let ms = *ms;
    let fmt = time::macros::format_description!("[year]-[month]-[day] [hour]:[minute] UTC");
    time::OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000)
        .ok()
        .and_then(|t| t.format(&fmt).ok())
        .unwrap_or_else(|| "-".to_string())
}

pub fn datetime_opt(ms: &Option<i64>) -> String {
    ms.as_ref().map(datetime).unwrap_or_else(|| "never".to_string())
}
