//! The Activity page's time range (`range=` in the URL beside the other filters): the last hour,
//! day or week, resolved to a `since` when the page is asked for, or a custom `since`/`until`.

use super::filter::FilterInput;

const HOUR_MS: i64 = 3_600_000;

/// Which window of the log the page shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Range {
    /// Every row the log keeps.
    Any,
    Hour,
    Day,
    Week,
    /// The `since` and `until` typed.
    Custom,
}

impl Range {
    /// `range=` of `query`; without it, `Custom` when `since` or `until` is set, else `Any`.
    /// `Err` names a value we do not offer.
    pub fn from_query(query: &str, input: &FilterInput) -> Result<Range, String> {
        let raw = url::form_urlencoded::parse(query.as_bytes())
            .find(|(k, _)| k == "range")
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_default();
        match raw.as_str() {
            "" if !input.since.trim().is_empty() || !input.until.trim().is_empty() => Ok(Range::Custom),
            "" | "any" => Ok(Range::Any),
            "hour" => Ok(Range::Hour),
            "day" => Ok(Range::Day),
            "week" => Ok(Range::Week),
            "custom" => Ok(Range::Custom),
            _ => Err("Choose the last hour, day or week, any time, or a custom range.".to_string()),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Range::Any => "any",
            Range::Hour => "hour",
            Range::Day => "day",
            Range::Week => "week",
            Range::Custom => "custom",
        }
    }

    fn span_ms(self) -> Option<i64> {
        match self {
            Range::Hour => Some(HOUR_MS),
            Range::Day => Some(24 * HOUR_MS),
            Range::Week => Some(7 * 24 * HOUR_MS),
            Range::Any | Range::Custom => None,
        }
    }

    /// A preset becomes `since` (now minus its span, to the millisecond) and no `until`; any time
    /// clears both; a custom range keeps what was typed.
    pub fn apply(self, input: &mut FilterInput, now_ms: i64) {
        if let Some(span) = self.span_ms() {
            input.since = (now_ms - span).to_string();
            input.until.clear();
        } else if self == Range::Any {
            input.since.clear();
            input.until.clear();
        }
    }

    /// How the count names the window: ` in the last hour`, or nothing.
    pub fn words(self) -> &'static str {
        match self {
            Range::Hour => " in the last hour",
            Range::Day => " in the last 24 hours",
            Range::Week => " in the last 7 days",
            Range::Custom => " in this range",
            Range::Any => "",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolved(query: &str, now: i64) -> (Result<Range, String>, FilterInput) {
        let mut input = FilterInput::from_query(query);
        let range = Range::from_query(query, &input);
        if let Ok(r) = range {
            r.apply(&mut input, now);
        }
        (range, input)
    }

    #[test]
    fn a_preset_becomes_since_and_a_custom_range_is_kept() {
        let now = 1_800_000_000_000;
        let (r, i) = resolved("range=hour&since=2026-01-01&until=2026-01-02", now);
        assert_eq!((r, i.since.as_str(), i.until.as_str()), (Ok(Range::Hour), "1799996400000", ""));
        let (r, i) = resolved("range=week", now);
        assert_eq!((r, i.since), (Ok(Range::Week), (now - 7 * 24 * HOUR_MS).to_string()));
        let (r, i) = resolved("since=2026-01-01", now);
        assert_eq!((r, i.since.as_str()), (Ok(Range::Custom), "2026-01-01"));
        let (r, i) = resolved("range=any&since=2026-01-01", now);
        assert_eq!((r, i.since.as_str()), (Ok(Range::Any), ""));
        assert_eq!(resolved("", now).0, Ok(Range::Any));
        assert!(resolved("range=year", now).0.is_err());
    }
}
