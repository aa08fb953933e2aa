//! How an export's rows after its first batch are cut into ranges of time, read
//! [`IN_FLIGHT`] at a time (`export.rs` streams them in order).
//!
//! One batch after the other, an export is one statement at a time: the database walks (or reads
//! its index) on one core while the console encodes and compresses on another, and a large
//! searched export left about 40 % of the machine idle (docs/benchmarks.md). A batch cannot start
//! before the one before it ends (it starts after that batch's last row), but a range of time can:
//! the rows from the first batch's last row down are cut into ranges `since..=until` (epoch
//! milliseconds, both included, so the rows of one millisecond are in one range), each read by
//! its own batches on its own connection, two at once, and sent in order. Whatever the cut, the
//! ranges cover every millisecond from the first batch's last row down to the filter's `since`
//! once (the last range is open below), so the rows and their order are exactly the batches'.
//!
//! **How wide a range is**: as wide as [`TARGET_ROWS`] rows at the rate the rows came so far (the
//! first batch, then each range read), so a range is about one statement of the largest batch
//! whatever the filter, and a filter of few rows costs a handful of ranges: a range at most
//! [`MAX_GROWTH`] times as wide as the one before, and one that came back empty followed by one
//! that much wider. No range starts before the organization's oldest row (or the filter's
//! `since`): once the rest down to it would be one range (it is reached, or at the rate seen it
//! holds a range's rows or fewer), it is cut in two halves, read at once, the second open below.

use super::batches::MAX_BATCH;

/// How many ranges are read at once by default (`LogStore::export_ranges_at_once`): the one
/// being sent and the next.
pub const IN_FLIGHT: u32 = 2;

/// The rows a range is sized for by default (`LogStore::export_range_rows`): one batch of
/// [`MAX_BATCH`].
pub const TARGET_ROWS: u32 = MAX_BATCH;

/// How much wider a range may be than the one before it.
pub const MAX_GROWTH: i64 = 8;

/// A range of `created_at`, both ends included; `since: None` is open below (the last range of
/// a filter without `since`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub since: Option<i64>,
    pub until: i64,
}

/// The ranges still to read, newest first.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The next range's newest millisecond.
    until: i64,
    /// Below this no range needs to start: the filter's `since`, else the organization's oldest row.
    floor: i64,
    /// The filter's `since`: where the last range starts.
    since: Option<i64>,
    /// The width of the last range handed out, in milliseconds.
    span: i64,
    /// Rows a millisecond, as last learned (the first batch, then each range read).
    rate: f64,
    /// The rows a range is sized for.
    target: f64,
    /// The rest was cut in two halves (the next range is the last).
    halved: bool,
    done: bool,
}

impl Plan {
    /// The ranges after a first batch of `rows` rows from `newest` down to `last` (the
    /// milliseconds of its first and last rows): the first range ends at `last` (it is read after
    /// the batch's last row, which keeps the rest of that millisecond), then on down to `floor`.
    pub fn after_first(newest: i64, last: i64, rows: usize, floor: i64, since: Option<i64>) -> Plan {
        let span = newest.saturating_sub(last).saturating_add(1).max(1);
        let rate = rows as f64 / span as f64;
        Plan { until: last, floor, since, span, rate, target: f64::from(TARGET_ROWS), halved: false, done: false }
    }

    /// The same ranges sized for `rows` rows each.
    pub fn sized_for(mut self, rows: u32) -> Plan {
        self.target = f64::from(rows.max(1));
        self
    }

    /// The next range to read, `None` once every millisecond down to `since` was handed out.
    pub fn next_range(&mut self) -> Option<Range> {
        if self.done {
            return None;
        }
        let widest = self.span.saturating_mul(MAX_GROWTH).max(1);
        let remaining = self.until.saturating_sub(self.floor).saturating_add(1);
        // The milliseconds a range of `target` rows spans at the rate seen (all that is left
        // when no row came yet).
        let sized =
            if self.rate > 0.0 { (self.target / self.rate).ceil().min(i64::MAX as f64) as i64 } else { remaining };
        self.span = sized.clamp(1, widest);
        let since = self.until.saturating_sub(self.span - 1);
        // What is left holds a range's rows or fewer at that rate: two halves read at once, not
        // one range alone, even where a range may not yet grow that wide (a ~1 % word's rest
        // after its first batch is one range's rows; read by one connection it was half the
        // machine's speed, docs/benchmarks.md).
        let fits = sized >= remaining;
        let range = if (since <= self.floor || fits) && !self.halved && remaining >= 2 {
            // The rest in two halves read at once, not in one range alone: a read that costs its
            // partitions more than its rows (a rare term's index) takes half the time.
            self.halved = true;
            let half = remaining / 2;
            self.until -= half;
            return Some(Range { since: Some(self.until + 1), until: self.until + half });
        } else if since <= self.floor || self.halved {
            self.done = true;
            Range { since: self.since, until: self.until }
        } else {
            Range { since: Some(since), until: self.until }
        };
        self.until = since.saturating_sub(1);
        Some(range)
    }

    /// A range was read whole and held `rows` rows: the next ranges are sized by its rate.
    pub fn learned(&mut self, range: Range, rows: usize) {
        if let Some(since) = range.since {
            let span = range.until.saturating_sub(since).saturating_add(1).max(1);
            self.rate = rows as f64 / span as f64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(mut plan: Plan, rows_per_ms: f64) -> Vec<Range> {
        let mut out = Vec::new();
        while let Some(r) = plan.next_range() {
            let span = r.since.map_or(1, |s| r.until - s + 1);
            plan.learned(r, (span as f64 * rows_per_ms) as usize);
            out.push(r);
            assert!(out.len() < 10_000, "the ranges end");
        }
        out
    }

    #[test]
    fn the_ranges_cover_every_millisecond_down_to_since_once() {
        for (rate, floor, since) in [(0.5, 1_000, None), (0.001, 1_000, Some(1_000)), (40.0, 990_000, Some(990_000))] {
            let ranges = all(Plan::after_first(1_000_000, 999_000, 1_000, floor, since), rate);
            assert_eq!(ranges[0].until, 999_000, "the first range keeps the last row's millisecond");
            for pair in ranges.windows(2) {
                assert_eq!(pair[1].until, pair[0].since.unwrap() - 1, "no gap, no overlap: {pair:?}");
            }
            assert_eq!(ranges.last().unwrap().since, since, "the last is open below, or at since");
        }
    }

    #[test]
    fn a_range_is_sized_for_a_batch_at_the_rate_seen() {
        // 1,000 rows in 1,000 ms: one a millisecond, so 10,000 ms would hold a batch, but a range
        // is at most 8 times as wide as what came before (the first batch's 1,000 ms).
        let mut plan = Plan::after_first(100_000_000, 99_999_001, 1_000, 0, None);
        let first = plan.next_range().unwrap();
        assert_eq!(first, Range { since: Some(99_991_002), until: 99_999_001 });
        // It held 8,000 rows: the next holds 10,000 at that rate.
        plan.learned(first, 8_000);
        assert_eq!(plan.next_range(), Some(Range { since: Some(99_981_002), until: 99_991_001 }));
        // One that held a hundredth as many: the next is at most 8 times as wide (the 99,981,001
        // ms left hold many ranges at that rate).
        plan.learned(Range { since: Some(99_981_002), until: 99_991_001 }, 100);
        let r = plan.next_range().unwrap();
        assert_eq!(r.until - r.since.unwrap() + 1, 80_000);
    }

    #[test]
    fn the_rest_is_read_in_two_halves_at_once() {
        // 1,000 rows in the newest 10,000 ms: a range 8 times as wide would reach the oldest row
        // (20,000), so the 70,002 ms left are two ranges of 35,001, the second open below.
        let mut plan = Plan::after_first(100_000, 90_001, 1_000, 20_000, None).sized_for(1_000_000);
        assert_eq!(plan.next_range(), Some(Range { since: Some(55_001), until: 90_001 }));
        assert_eq!(plan.next_range(), Some(Range { since: None, until: 55_000 }));
        assert_eq!(plan.next_range(), None);
    }

    #[test]
    fn a_rest_of_one_ranges_rows_is_read_in_two_halves_even_before_ranges_may_grow_that_wide() {
        // A word in ~1 % of a month's rows: the first 1,000 in the newest 3 days, 9,000 more in
        // the 27 before. At that rate the rest is one range's 10,000 rows, wider than the 8 × 3
        // days a range may yet be: it is read as two halves at once, not 24 days alone and then
        // 3 days.
        let day = 86_400_000;
        let mut plan = Plan::after_first(30 * day, 27 * day, 1_000, 0, None);
        assert_eq!(plan.next_range(), Some(Range { since: Some(27 * day / 2 + 1), until: 27 * day }));
        assert_eq!(plan.next_range(), Some(Range { since: None, until: 27 * day / 2 }));
        assert_eq!(plan.next_range(), None);
        // Ten times the rows: the rest is ten ranges' worth, read range by range.
        let mut plan = Plan::after_first(30 * day, 27 * day, 1_000, 0, None).sized_for(1_000);
        let first = plan.next_range().unwrap();
        assert_eq!(first.until - first.since.unwrap() + 1, 3 * day + 1, "a range of 1,000 rows at the rate seen");
    }

    #[test]
    fn few_rows_cost_a_handful_of_ranges() {
        // 1,000 rows in the newest second, then almost nothing over 30 days.
        let day = 86_400_000;
        let ranges = all(Plan::after_first(30 * day, 30 * day - 999, 1_000, 0, None), 0.000_01);
        assert!(ranges.len() <= 10, "{} ranges", ranges.len());
        let empty = all(Plan::after_first(30 * day, 30 * day - 999, 1_000, 0, None), 0.0);
        assert!(empty.len() <= 10, "{} ranges", empty.len());
    }
}
