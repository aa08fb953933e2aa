//! Small wording helpers shared by messages, exports and templates.

/// `1 runtime`, `3 runtimes`, `0 runtimes`: a count with its noun, never `runtime(s)`.
pub fn count(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// An epoch-milliseconds time as `2026-12-03 05:31:28 UTC`.
pub fn utc_time(ms: i64) -> String {
    let fmt = time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]:[second] UTC");
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(fmt).ok())
        .unwrap_or_default()
}

/// Epoch milliseconds exactly, as `2026-11-29T21:12:05.123Z` (`-` for a time out of range): the
/// operation log's export and a page's `<time>` (web/filters.rs).
pub fn timestamp_utc(ms: i64) -> String {
    let fmt = time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&fmt).ok())
        .unwrap_or_else(|| "-".to_string())
}

#[cfg(test)]
mod tests {
    use super::count;

    #[test]
    fn a_count_takes_the_plural_unless_it_is_one() {
        assert_eq!(count(0, "member", "members"), "0 members");
        assert_eq!(count(1, "member", "members"), "1 member");
        assert_eq!(count(2, "sandbox", "sandboxes"), "2 sandboxes");
    }
}
