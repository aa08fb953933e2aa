//! The audit log's filters (the page's form and the API's query): who, which event, from when,
//! until when. Every refused filter is reported at once, by its field.

use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::{Date, OffsetDateTime, PrimitiveDateTime, Time};

use super::events;
use crate::validate::FieldErrors;

/// The filters as typed; an empty value filters nothing.
#[derive(Debug, Clone, Default)]
pub struct FilterInput {
    pub actor: String,
    pub event: String,
    pub from: String,
    pub to: String,
}

/// The filters the store applies.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Part of the actor's label, lower-cased.
    pub actor: Option<String>,
    pub event: Option<String>,
    /// Epoch milliseconds, inclusive.
    pub from_ms: Option<i64>,
    /// Epoch milliseconds, inclusive: the end of the minute, second or day `to` names.
    pub to_ms: Option<i64>,
}

const ACTOR_MAX: usize = 254;
const TIME_HELP: &str =
    "Write a UTC time like 2026-12-02, 2026-12-02 14:30, 2026-12-02 14:30:05 or 2026-12-02T14:30:05Z.";

pub fn parse(input: &FilterInput) -> Result<Filter, FieldErrors> {
    let mut errors = FieldErrors::new();
    let actor = input.actor.trim();
    if actor.chars().count() > ACTOR_MAX {
        errors.add("actor", format!("Write at most {ACTOR_MAX} characters of who did it."));
    } else if actor.chars().any(char::is_control) {
        errors.add("actor", "Who did it cannot contain control characters.");
    }
    let event = input.event.trim();
    if !event.is_empty() && !events::is_known(event) {
        errors.add("event", "Choose an event from the list.");
    }
    let mut time = |field: &str, raw: &str, end: bool| match parse_time(raw.trim(), end) {
        Ok(t) => t,
        Err(()) => {
            errors.add(field, TIME_HELP);
            None
        }
    };
    let from_ms = time("from", &input.from, false);
    let to_ms = time("to", &input.to, true);
    if let (Some(f), Some(t)) = (from_ms, to_ms) {
        if t < f {
            errors.add("to", "The end is before the start.");
        }
    }
    errors.into_result()?;
    Ok(Filter {
        actor: (!actor.is_empty()).then(|| actor.to_lowercase()),
        event: (!event.is_empty()).then(|| event.to_string()),
        from_ms,
        to_ms,
    })
}

/// Epoch milliseconds of a UTC time (or epoch milliseconds themselves); `None` for an empty
/// value. With `end`, the last millisecond of the day, minute or second it names.
#[allow(clippy::result_unit_err)] // `()`: the caller says what a time should look like.
pub fn parse_time(raw: &str, end: bool) -> Result<Option<i64>, ()> {
    if raw.is_empty() {
        return Ok(None);
    }
    if raw.len() <= 15 && raw.bytes().all(|b| b.is_ascii_digit()) {
        return raw.parse().map(Some).map_err(|_| ());
    }
    let ms = |t: OffsetDateTime| (t.unix_timestamp_nanos() / 1_000_000) as i64;
    let last = |step_ms: i64| if end { step_ms - 1 } else { 0 };
    if let Ok(t) = OffsetDateTime::parse(raw, &Rfc3339) {
        return Ok(Some(ms(t) + if raw.contains('.') { 0 } else { last(1000) }));
    }
    let text = raw.replacen(' ', "T", 1);
    if let Ok(d) = Date::parse(&text, format_description!("[year]-[month]-[day]")) {
        return Ok(Some(ms(PrimitiveDateTime::new(d, Time::MIDNIGHT).assume_utc()) + last(86_400_000)));
    }
    let minutes = format_description!("[year]-[month]-[day]T[hour]:[minute]");
    if let Ok(t) = PrimitiveDateTime::parse(&text, minutes) {
        return Ok(Some(ms(t.assume_utc()) + last(60_000)));
    }
    let seconds = format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]");
    if let Ok(t) = PrimitiveDateTime::parse(&text, seconds) {
        return Ok(Some(ms(t.assume_utc()) + last(1000)));
    }
    Err(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(actor: &str, event: &str, from: &str, to: &str) -> FilterInput {
        FilterInput { actor: actor.into(), event: event.into(), from: from.into(), to: to.into() }
    }

    #[test]
    fn times_are_utc_and_an_end_takes_in_what_it_names() {
        let day = 1_764_633_600_000; // 2025-12-02T00:00:00Z
        assert_eq!(parse_time("2025-12-02", false), Ok(Some(day)));
        assert_eq!(parse_time("2025-12-02", true), Ok(Some(day + 86_400_000 - 1)));
        assert_eq!(parse_time("2025-12-02 00:01", true), Ok(Some(day + 120_000 - 1)));
        assert_eq!(parse_time("2025-12-02T00:00:05", false), Ok(Some(day + 5000)));
        assert_eq!(parse_time("2025-12-02T01:00:00+01:00", false), Ok(Some(day)));
        assert_eq!(parse_time("2025-12-02T00:00:00.250Z", true), Ok(Some(day + 250)));
        assert_eq!(parse_time(&day.to_string(), false), Ok(Some(day)));
        assert_eq!(parse_time("", true), Ok(None));
        assert_eq!(parse_time("yesterday", false), Err(()));
        assert_eq!(parse_time("2025-13-02", false), Err(()));
    }

    #[test]
    fn every_refused_filter_is_named_at_once() {
        let errors = parse(&input("a\u{7}b", "member.eaten", "soon", "")).expect_err("refused");
        let fields: Vec<&str> = errors.0.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["actor", "event", "from"]);
        let errors = parse(&input("", "", "2025-12-03", "2025-12-02")).expect_err("refused");
        assert_eq!(errors.get("to"), Some("The end is before the start."));
    }

    #[test]
    fn empty_filters_filter_nothing() {
        assert_eq!(parse(&FilterInput::default()), Ok(Filter::default()));
        let f = parse(&input(" Owner@Example.com ", "member.invited", "", "")).expect("valid");
        assert_eq!(f.actor.as_deref(), Some("owner@example.com"));
        assert_eq!(f.event.as_deref(), Some("member.invited"));
    }
}
