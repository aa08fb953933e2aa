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
/// anchor's partition, then 1, 2, 4, 8, 16 and 32 partitions.
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
/// cursor's time, or now) asks in turn, cut at the partitions' `bounds` (`partition_store::bounds`): newest first
/// (`After`) or oldest first (`Before`), the anchor's partition first (open on the side the read
/// starts from: the cursor bounds it, and a row of a clock ahead, in the default partition, is not
/// missed), then 1, 2, 4, 8, 16 and 32 partitions, then the rest (open: the default partition's
/// older rows). The ranges cover all time once whatever the bounds, so a read is exact even with
/// bounds a moment old; each is a few partitions (the planner reads no other), so a read reads
/// the candidates of the partitions it needs, not of the whole log, and a term with few matches
/// costs a handful of statements, not one a partition.
pub fn windows(bounds: &[i64], anchor: i64, direction: Direction) -> Vec<(Option<i64>, Option<i64>)> {
    let mut out = Vec::with_capacity(WINDOWS + 1);
    let at = bounds.partition_point(|&b| b <= anchor);
    let mut width = 1;
    match direction {
        Direction::After => {
            if at == 0 {
                return vec![(None, None)];
            }
            let mut low = at - 1;
            out.push((Some(bounds[low]), None));
            while low > 0 && out.len() < WINDOWS {
                let next = low.saturating_sub(width);
                out.push((Some(bounds[next]), Some(bounds[low])));
                low = next;
                width *= 2;
            }
            out.push((None, Some(bounds[low])));
        }
        Direction::Before => {
            if at == bounds.len() {
                return vec![(None, None)];
            }
            let mut high = at;
            out.push((None, Some(bounds[high])));
            while high + 1 < bounds.len() && out.len() < WINDOWS {
                let next = (high + width).min(bounds.len() - 1);
                out.push((Some(bounds[high]), Some(bounds[next])));
                high = next;
                width *= 2;
            }
            out.push((Some(bounds[high]), None));
        }
    }
    out
}

/// Whether a window holds no row of `since..=until` (a filter's range): it is not asked.
pub fn outside(window: (Option<i64>, Option<i64>), since: Option<i64>, until: Option<i64>) -> bool {
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
        assert_eq!(windows(&bounds, 15, Direction::After), [(Some(10), None), (Some(0), Some(10)), (None, Some(0))]);
        assert_eq!(windows(&bounds, 5_000, Direction::After)[..2], [(Some(1000), None), (Some(990), Some(1000))]);
        assert_eq!(windows(&bounds, -5, Direction::After), [(None, None)]);
        assert_eq!(windows(&bounds, 1_000, Direction::Before), [(None, None)]);
        assert_eq!(windows(&[], 7, Direction::After), [(None, None)]);
        assert_eq!(windows(&[], 7, Direction::Before), [(None, None)]);
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
