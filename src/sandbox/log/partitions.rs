//! The PostgreSQL operation log's partitions, sized by rows (migration
//! `20270122090000_operation_log_partitions`; docs/benchmarks.md "The log partitioned by rows").
//!
//! **Why by rows**: a page asks the partitions newest first and stops when it is full
//! ([`windows`]), so what a page reads is bounded by what a partition holds. A partition of a
//! day held many times a page's matches in a busy log (two cases still grew 1.7-2.2x from 1M to
//! 5M rows); a partition of about [`TARGET_ROWS`] rows holds the same whatever the log's rate.
//!
//! **How**: the partitions follow one another without a gap, each `[start, end)` of `created_at`.
//! When a batch reaches past the newest one's end, the writer makes the next
//! (`partition_store::extend`),
//! starting at that end, its span the previous partition's rows' extent times the target over the
//! rows it got (so about the target at the same rate), clamped to [`MIN_SPAN_MS`] ..
//! [`MAX_SPAN_MS`], and stretched over the batch's newest row after an idle gap. The partition is
//! made without an ACCESS EXCLUSIVE lock on the log (`operation_log_make_partition`: created apart,
//! a CHECK of its range, then ATTACH), under an advisory lock so that two consoles writing at once
//! make it once. Rows no partition covers (older than the first, or of a clock more than
//! [`AHEAD_MS`] ahead) go to the default partition and move into their partition when it is made.
//!
//! **The registry** `operation_log_partitions (start_ms, end_ms)` is what a reader asks for the
//! bounds (`partition_store::bounds`): one short index read, written in the same transaction as
//! the partition. The SQL is in `partition_store.rs`; this file is the sizing and the windows.

use crate::sandbox::operations::cursor::Direction;

/// A range of `created_at` a statement is kept to, `from <= created_at < to` (`None` open): one
/// of a read's [`Windows`]; `(None, None)` is the whole log.
pub type Window = (Option<i64>, Option<i64>);

/// A day in ms.
pub const DAY_MS: i64 = 86_400_000;

/// The rows a partition is sized to hold (`partition_store::extend`); tests ask for fewer
/// (`LogStore::set_partition_rows`).
pub const TARGET_ROWS: i64 = 100_000;
/// The narrowest span a partition is made with: a log writing thousands of rows a second does not
/// make a partition a few seconds.
pub const MIN_SPAN_MS: i64 = 60_000;
/// The widest span a partition is made with (unless an idle gap stretches it): a quiet log still
/// gets a partition a week, so retention drops whole weeks.
pub const MAX_SPAN_MS: i64 = 7 * DAY_MS;
/// A row further ahead of this clock than this makes no partition (a client's clock far ahead
/// would make a partition of the future): it waits in the default partition.
pub const AHEAD_MS: i64 = DAY_MS;
/// The windows a read asks one after the other before it asks for all the rest at once: the
/// anchor's partition and six more ([`windows`]: 1, 2, 4, 8, 16 and 32 partitions).
const WINDOWS: usize = 7;

/// The span of the partition after one of `span` ms that got `rows` rows spread over `extent` ms
/// (its newest row's time less its oldest's, plus one): the time the same rate takes to write
/// `target_rows`, within [`MIN_SPAN_MS`] .. [`MAX_SPAN_MS`]. The extent, not the span: after an
/// idle gap a partition's rows sit at its end, and its span would overstate the time they took.
/// An empty partition passes its span on.
pub fn next_span(span: i64, rows: i64, extent: i64, target_rows: i64) -> i64 {
    if rows <= 0 {
        return span.clamp(MIN_SPAN_MS, MAX_SPAN_MS);
    }
    let measured = if rows >= 2 && extent > 1 { extent } else { span };
    let next = measured as f64 * target_rows.max(1) as f64 / rows as f64;
    (next.min(MAX_SPAN_MS as f64) as i64).clamp(MIN_SPAN_MS, MAX_SPAN_MS)
}

/// The ranges of `created_at` (`from <= created_at < to`, `None` open) a read from `anchor` (its
/// cursor's time, or now) asks in turn, cut at the partitions' `bounds`
/// (`partition_store::bounds`): newest first (`After`) or oldest first (`Before`), the anchor's
/// partition first (open on the side the read starts from: the cursor bounds it, and a row of a
/// clock ahead, in the default partition, is not missed), then windows as wide as the reader asks
/// ([`Windows::next`]; [`windows`]: 1, 2, 4, 8, 16 and 32 partitions), then the rest (open: the
/// default partition's older rows). The ranges cover all time once whatever the bounds, so a read
/// is exact even with bounds a moment old; each is a few partitions (the planner reads no other),
/// so a read reads the candidates of the partitions it needs, not of the whole log, and a term
/// with few matches costs a handful of statements, not one a partition.
pub struct Windows<'a> {
    bounds: &'a [i64],
    direction: Direction,
    /// The bound the next window starts from (`After`: its end; `Before`: its start), `None`
    /// before the first window.
    edge: Option<usize>,
    asked: usize,
    done: bool,
}

impl<'a> Windows<'a> {
    pub fn new(bounds: &'a [i64], anchor: i64, direction: Direction) -> Windows<'a> {
        Windows { bounds, direction, edge: None, asked: 0, done: false }.anchored(anchor)
    }

    fn anchored(mut self, anchor: i64) -> Windows<'a> {
        let at = self.bounds.partition_point(|&b| b <= anchor);
        self.edge = match self.direction {
            Direction::After => at.checked_sub(1),
            Direction::Before => (at < self.bounds.len()).then_some(at),
        };
        self
    }

    /// The next range, `width` partitions wide (the first is the anchor's partition, whatever
    /// `width`; after [`WINDOWS`] ranges, or where fewer than `width` partitions are left, the
    /// rest at once), `None` once all time is asked.
    pub fn next(&mut self, width: usize) -> Option<Window> {
        if self.done {
            return None;
        }
        self.asked += 1;
        let last = self.bounds.len().saturating_sub(1);
        let Some(edge) = self.edge else {
            self.done = true;
            return Some((None, None));
        };
        let b = |i: usize| Some(self.bounds[i]);
        let window = match self.direction {
            Direction::After if self.asked == 1 => (b(edge), None),
            Direction::Before if self.asked == 1 => (None, b(edge)),
            Direction::After if edge > width && self.asked <= WINDOWS => {
                self.edge = Some(edge - width);
                (b(edge - width), b(edge))
            }
            Direction::Before if edge + width < last && self.asked <= WINDOWS => {
                self.edge = Some(edge + width);
                (b(edge), b(edge + width))
            }
            Direction::After => {
                self.done = true;
                (None, b(edge))
            }
            Direction::Before => {
                self.done = true;
                (b(edge), None)
            }
        };
        Some(window)
    }
}

/// Every range of [`Windows`] from `anchor`, 1, 2, 4, 8, 16 and 32 partitions wide after the
/// anchor's, then the rest: for the reads that cannot tell how far they must go (the timeline,
/// the search's probe, the oldest row).
pub fn windows(bounds: &[i64], anchor: i64, direction: Direction) -> Vec<Window> {
    let mut all = Windows::new(bounds, anchor, direction);
    let mut out = Vec::with_capacity(WINDOWS + 1);
    let mut width = 1;
    while let Some(w) = all.next(width) {
        if !out.is_empty() {
            width *= 2;
        }
        out.push(w);
    }
    out
}

/// How many partitions the next window of a read asks for, the windows so far having spanned
/// `spanned` partitions (the anchor's counted as one) and found `found` rows of the `wanted`
/// still missing, the last `width` wide: twice the last, or more where the rows found so far say
/// the rest is further (the partitions that would hold the missing rows at the rate found, and
/// half as many again), so that a term with few matches asks three or four windows, not eight.
/// Not from the anchor's window alone: it is part of a partition (from a cursor, or the newest
/// partition still filling), and its rate would send the next window much too far (an export's
/// batches of 10,000 rows of a word in 1 % of 20,000,000 read 3.5x the partitions they needed).
pub fn next_width(width: usize, spanned: usize, found: usize, wanted: usize) -> usize {
    let doubled = if spanned <= 1 { 1 } else { width * 2 };
    if found == 0 || spanned <= 1 {
        return doubled;
    }
    let further = (wanted * spanned).div_ceil(found) * 3 / 2;
    doubled.max(further)
}

/// Whether a window holds no row of `since..=until` (a filter's range): it is not asked.
pub fn outside(window: Window, since: Option<i64>, until: Option<i64>) -> bool {
    let (from, to) = window;
    matches!((to, since), (Some(to), Some(since)) if to <= since)
        || matches!((from, until), (Some(from), Some(until)) if from > until)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_windows_cover_all_time_once_from_the_anchors_partition_outwards() {
        let bounds: Vec<i64> = (0..=100).map(|i| i * 10).collect();
        let older = windows(&bounds, 995, Direction::After);
        assert_eq!(older[0], (Some(990), None), "the anchor's partition, open towards the newer rows");
        let widths: Vec<i64> = older[1..older.len() - 1].iter().map(|w| (w.1.unwrap() - w.0.unwrap()) / 10).collect();
        assert_eq!(widths, [1, 2, 4, 8, 16, 32]);
        assert_eq!(older.last(), Some(&(None, Some(990 - 630))), "then the rest at once");
        assert!(older.windows(2).all(|w| w[1].1 == w[0].0), "each window ends where the one before began");
        let newer = windows(&bounds, 5, Direction::Before);
        assert_eq!(newer[0], (None, Some(10)));
        assert_eq!(newer.last(), Some(&(Some(640), None)));
        assert!(newer.windows(2).all(|w| w[1].0 == w[0].1));
        // A bound is its partition's start: a row at 990 is in [990, 1000).
        assert_eq!(windows(&bounds, 990, Direction::After)[0], (Some(990), None));
        assert_eq!(windows(&bounds, 990, Direction::Before)[0], (None, Some(1000)));
        // Near the ends, and beyond them (the default partition's rows).
        // Where fewer partitions are left than a window's width, the rest at once (with the
        // default partition's older rows).
        assert_eq!(windows(&bounds, 15, Direction::After), [(Some(10), None), (None, Some(10))]);
        assert_eq!(
            windows(&bounds, 975, Direction::Before),
            [(None, Some(980)), (Some(980), Some(990)), (Some(990), None)]
        );
        assert_eq!(windows(&bounds, 5_000, Direction::After)[..2], [(Some(1000), None), (Some(990), Some(1000))]);
        assert_eq!(windows(&bounds, -5, Direction::After), [(None, None)]);
        assert_eq!(windows(&bounds, 1_000, Direction::Before), [(None, None)]);
        assert_eq!(windows(&[], 7, Direction::After), [(None, None)]);
        assert_eq!(windows(&[], 7, Direction::Before), [(None, None)]);
    }

    #[test]
    fn a_read_asks_as_far_as_the_rows_it_found_say_the_rest_is() {
        // Nothing found yet: 1, then twice the last.
        assert_eq!(next_width(1, 1, 0, 51), 1);
        assert_eq!(next_width(1, 2, 0, 51), 2);
        assert_eq!(next_width(4, 8, 0, 51), 8);
        // The anchor's window alone, a part of a partition, says nothing of the rate.
        assert_eq!(next_width(1, 1, 8, 43), 1);
        // 8 rows in two partitions, 43 missing: about 11 partitions, and half again.
        assert_eq!(next_width(1, 2, 8, 43), 16);
        // Dense: doubling is enough.
        assert_eq!(next_width(2, 4, 40, 11), 4);
        // Windows as wide as asked, then the rest.
        let bounds: Vec<i64> = (0..=100).map(|i| i * 10).collect();
        let mut w = Windows::new(&bounds, 995, Direction::After);
        assert_eq!(w.next(40), Some((Some(990), None)));
        assert_eq!(w.next(9), Some((Some(900), Some(990))));
        assert_eq!(w.next(200), Some((None, Some(900))));
        assert_eq!(w.next(1), None);
    }

    #[test]
    fn a_partition_is_sized_by_the_rows_the_one_before_got() {
        // 200,000 rows over an hour: half an hour for 100,000.
        assert_eq!(next_span(3_600_000, 200_000, 3_600_000, TARGET_ROWS), 1_800_000);
        // After an idle gap the rows' extent counts, not the partition's span.
        assert_eq!(next_span(10 * DAY_MS, 50_000, 1_800_000, TARGET_ROWS), 3_600_000);
        // Clamped both ways; an empty partition passes its span on.
        assert_eq!(next_span(3_600_000, 10_000_000, 3_600_000, TARGET_ROWS), MIN_SPAN_MS);
        assert_eq!(next_span(DAY_MS, 10, DAY_MS, TARGET_ROWS), MAX_SPAN_MS);
        assert_eq!(next_span(3_600_000, 0, 0, TARGET_ROWS), 3_600_000);
        assert_eq!(next_span(30 * DAY_MS, 0, 0, TARGET_ROWS), MAX_SPAN_MS);
    }

    #[test]
    fn a_window_outside_the_filters_range_is_not_asked() {
        assert!(outside((Some(0), Some(10)), Some(10), None));
        assert!(!outside((Some(0), Some(10)), Some(9), None));
        assert!(outside((Some(11), None), None, Some(10)));
        assert!(!outside((Some(10), None), None, Some(10)));
        assert!(!outside((None, None), Some(5), Some(6)));
    }
}
