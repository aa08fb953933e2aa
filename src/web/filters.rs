//! Template helpers: formatting only.

use crate::access::Role;

/// Epoch milliseconds as `2026-11-29 21:12 UTC`.
pub fn datetime(ms: &i64) -> String {
    let ms = *ms;
    let fmt = time::macros::format_description!("[year]-[month]-[day] [hour]:[minute] UTC");
    time::OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000)
        .ok()
        .and_then(|t| t.format(&fmt).ok())
        .unwrap_or_else(|| "-".to_string())
}

/// `1 member`, `3 members` (see [`crate::words::count`]).
pub fn count(n: usize, one: &str, many: &str) -> String {
    crate::words::count(n, one, many)
}

/// Epoch milliseconds as `2026-11-29 21:12:05 UTC`.
pub fn datetime_seconds(ms: &i64) -> String {
    let fmt = time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]:[second] UTC");
    time::OffsetDateTime::from_unix_timestamp_nanos(*ms as i128 * 1_000_000)
        .ok()
        .and_then(|t| t.format(&fmt).ok())
        .unwrap_or_else(|| "-".to_string())
}

/// Epoch milliseconds exactly, as `2026-11-29T21:12:05.123Z` (a `<time>`'s `datetime` and title;
/// see [`crate::words::timestamp_utc`]).
pub fn timestamp_utc(ms: &i64) -> String {
    crate::words::timestamp_utc(*ms)
}

/// How far `ms` is from now, as people say it: `12 s ago`, `5 min ago`, `3 h ago`, `2 d ago`,
/// or `in 5 min` for a time to come (the exact time goes in the title).
pub fn ago(ms: &i64) -> String {
    let now = (time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as i64;
    relative(now - *ms)
}

fn relative(diff_ms: i64) -> String {
    let s = diff_ms.abs() / 1000;
    let span = match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min", s / 60),
        3600..=86_399 => format!("{} h", s / 3600),
        _ => format!("{} d", s / 86_400),
    };
    if diff_ms < 0 {
        format!("in {span}")
    } else {
        format!("{span} ago")
    }
}

pub fn datetime_opt(ms: &Option<i64>) -> String {
    ms.as_ref().map(datetime).unwrap_or_else(|| "never".to_string())
}

/// One `<option>` of a select (`components/form.html`): the value it posts and the text it shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub value: String,
    pub label: String,
}

impl Choice {
    pub fn new(value: impl Into<String>, label: impl Into<String>) -> Choice {
        Choice { value: value.into(), label: label.into() }
    }

    /// Whether this is the option the form shows selected.
    pub fn is(&self, selected: &str) -> bool {
        self.value == selected
    }

    /// Options that show what they post.
    pub fn plain(values: &[&str]) -> Vec<Choice> {
        values.iter().map(|v| Choice::new(*v, *v)).collect()
    }

    /// The roles, by their labels.
    pub fn roles(roles: &[Role]) -> Vec<Choice> {
        roles.iter().map(|r| Choice::new(r.as_str(), r.label())).collect()
    }
}

/// For page tests: how a rendered form wires its messages to its controls.
#[cfg(test)]
pub mod aria {
    use std::collections::HashSet;

    /// Fails naming the control when its `aria-describedby` names an id the fragment lacks, or
    /// when a message (`.field-error`) is named by no control marked `aria-invalid`. Returns
    /// how many messages the fragment shows.
    pub fn assert_wired(html: &str) -> usize {
        let doc = scraper::Html::parse_fragment(html);
        let select = |css: &str| scraper::Selector::parse(css).expect("selector");
        let ids: HashSet<&str> = doc.select(&select("[id]")).filter_map(|e| e.value().id()).collect();
        let mut named_by_invalid = HashSet::new();
        for control in doc.select(&select("[aria-describedby]")) {
            let v = control.value();
            for id in v.attr("aria-describedby").unwrap_or_default().split_whitespace() {
                assert!(ids.contains(id), "#{} names #{id}, which is not there", v.id().unwrap_or("?"));
                if v.attr("aria-invalid") == Some("true") {
                    named_by_invalid.insert(id);
                }
            }
        }
        let messages: Vec<&str> = doc.select(&select(".field-error")).filter_map(|e| e.value().id()).collect();
        for m in &messages {
            assert!(named_by_invalid.contains(m), "no control marked aria-invalid names #{m}");
        }
        messages.len()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn times_read_as_how_far_from_now() {
        assert_eq!(super::relative(300_000), "5 min ago");
        assert_eq!(super::relative(-7_200_000), "in 2 h");
        assert_eq!(super::relative(3 * 86_400_000), "3 d ago");
    }

    use super::Choice;
    use crate::access::Role;

    #[test]
    fn times_read_to_the_second_and_exactly() {
        let ms = 1_764_681_125_123; // 2025-12-02 13:12:05.123 UTC
        assert_eq!(super::datetime_seconds(&ms), "2025-12-02 13:12:05 UTC");
        assert_eq!(super::timestamp_utc(&ms), "2025-12-02T13:12:05.123Z");
    }

    #[test]
    fn a_choice_is_selected_by_its_value() {
        let roles = Choice::roles(&[Role::Admin, Role::Member]);
        assert_eq!(roles[0].value, Role::Admin.as_str());
        assert_eq!(roles[0].label, Role::Admin.label());
        assert!(roles[1].is("member"));
        assert!(!roles[1].is("admin"));
        assert_eq!(Choice::plain(&["a"]), vec![Choice::new("a", "a")]);
    }
}
