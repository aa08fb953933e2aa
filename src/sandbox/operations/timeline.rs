//! Activity as a timeline: the operations and failures of the chosen range in bars above the
//! table, and the total for the filters. Both come from one statement
//! ([`crate::sandbox::log::Reader::timeline`]) that reads at most [`CAP`] + 1 of the newest
//! matching rows the way a page reads them and counts them by bar: exact up to the cap; beyond
//! it the bars older than the rows read are not counted and the total is "about N", the rows read
//! scaled to the whole range by the time they span.

use super::model::thousands;

/// The most matching rows the timeline counts exactly (it reads one more to know there are more).
pub const CAP: u64 = 5_000;

/// At most this many bars over a range.
const MAX_BARS: i64 = 60;

const MINUTE_MS: i64 = 60_000;

/// The widths a bar may have, narrowest first: a bar starts at a multiple of its width (UTC).
const WIDTHS_MS: [i64; 16] = [
    MINUTE_MS,
    2 * MINUTE_MS,
    5 * MINUTE_MS,
    10 * MINUTE_MS,
    15 * MINUTE_MS,
    30 * MINUTE_MS,
    60 * MINUTE_MS,
    2 * 60 * MINUTE_MS,
    3 * 60 * MINUTE_MS,
    6 * 60 * MINUTE_MS,
    12 * 60 * MINUTE_MS,
    24 * 60 * MINUTE_MS,
    2 * 24 * 60 * MINUTE_MS,
    7 * 24 * 60 * MINUTE_MS,
    14 * 24 * 60 * MINUTE_MS,
    28 * 24 * 60 * MINUTE_MS,
];

/// The bars of a range: the first starts at `start`, each is `width` ms wide, `count` of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bars {
    pub start: i64,
    pub width: i64,
    pub count: i64,
}

impl Bars {
    /// The bars over `from..=to` (epoch ms): the narrowest width that covers it in at most
    /// [`MAX_BARS`] bars, the first bar starting at a multiple of it at or before `from`.
    pub fn over(from: i64, to: i64) -> Bars {
        let to = to.max(from);
        for width in WIDTHS_MS {
            let start = from.div_euclid(width) * width;
            let count = (to - start) / width + 1;
            if count <= MAX_BARS {
                return Bars { start, width, count };
            }
        }
        let width = (to - from) / MAX_BARS + 1;
        Bars { start: from, width, count: (to - from) / width + 1 }
    }
}

/// What the statement counted in one bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::FromRow)]
pub struct Counted {
    /// The bar's index from the range's first.
    pub bar: i64,
    #[sqlx(rename = "matched")]
    pub rows: i64,
    pub failed: i64,
    /// The oldest row read into it.
    pub oldest: i64,
}

/// One bar as the page draws it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bar {
    /// Its first and last millisecond, within the range.
    pub from: i64,
    pub to: i64,
    pub rows: u64,
    pub failed: u64,
    /// Whether its rows were all read (not older than the cap's last row).
    pub counted: bool,
}

/// The timeline of a range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timeline {
    pub bars: Vec<Bar>,
    /// The rows matching, exactly when `exact`, else an estimate.
    pub total: u64,
    pub exact: bool,
}

impl Timeline {
    /// The bars of `from..=to` filled with what the statement counted, at most `cap` + 1 rows
    /// ([`CAP`]). More than `cap` rows read: the bars older than the oldest row read are not
    /// counted, and the total is the rows read times the range's span over the span they cover.
    pub fn of(from: i64, to: i64, bars: Bars, counted: &[Counted], cap: u64) -> Timeline {
        let read: u64 = counted.iter().map(|c| c.rows.max(0) as u64).sum();
        let exact = read <= cap;
        let oldest_read = counted.iter().map(|c| c.oldest).min().unwrap_or(from);
        let mut out: Vec<Bar> = (0..bars.count)
            .map(|i| {
                let start = bars.start + i * bars.width;
                Bar {
                    from: start.max(from),
                    to: (start + bars.width - 1).min(to),
                    rows: 0,
                    failed: 0,
                    counted: exact || start > oldest_read,
                }
            })
            .collect();
        for c in counted {
            let i = c.bar.clamp(0, bars.count - 1) as usize;
            out[i].rows += c.rows.max(0) as u64;
            out[i].failed += c.failed.max(0) as u64;
        }
        let total = if exact {
            read
        } else {
            let newest = to.max(oldest_read + 1);
            let scaled = read as f64 * (newest - from) as f64 / (newest - oldest_read).max(1) as f64;
            (scaled as u64).max(read)
        };
        Timeline { bars: out, total, exact }
    }

    /// `12,431`, or `about 1,200,000` (two significant digits) beyond the cap.
    pub fn total_label(&self) -> String {
        if self.exact {
            thousands(self.total)
        } else {
            format!("about {}", thousands(two_significant(self.total)))
        }
    }

    /// `12,431 rows`, `1 row`, `about 1,200,000 rows`.
    pub fn total_words(&self) -> String {
        let noun = if self.exact && self.total == 1 { "row" } else { "rows" };
        format!("{} {noun}", self.total_label())
    }

    /// The largest bar's rows (at least 1), which the bars are drawn against.
    pub fn peak(&self) -> u64 {
        self.bars.iter().map(|b| b.rows).max().unwrap_or(0).max(1)
    }
}

fn two_significant(n: u64) -> u64 {
    let mut unit = 1;
    while n / unit >= 100 {
        unit *= 10;
    }
    (n + unit / 2) / unit * unit
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: i64 = 60 * MINUTE_MS;

    #[test]
    fn a_range_gets_the_narrowest_width_that_fits_sixty_bars() {
        let t0 = 1_800_000_000_000; // 2027-01-15T08:00:00Z
        let hour = Bars::over(t0 + 123, t0 + H);
        assert_eq!((hour.start, hour.width, hour.count), (t0, 2 * MINUTE_MS, 31));
        let day = Bars::over(t0, t0 + 24 * H - 1);
        assert_eq!((day.width, day.count), (30 * MINUTE_MS, 48));
        let week = Bars::over(t0, t0 + 7 * 24 * H);
        assert_eq!(week.width, 3 * H);
        assert!(week.count <= 60 && week.start <= t0);
        let same = Bars::over(t0, t0);
        assert_eq!((same.width, same.count), (MINUTE_MS, 1));
    }

    #[test]
    fn beyond_the_cap_old_bars_are_not_counted_and_the_total_is_about() {
        let bars = Bars { start: 0, width: 100, count: 10 };
        let exact = Timeline::of(0, 999, bars, &[Counted { bar: 9, rows: 3, failed: 1, oldest: 950 }], CAP);
        assert!(exact.exact && exact.bars.iter().all(|b| b.counted));
        assert_eq!((exact.total_words(), exact.bars[9].rows, exact.bars[9].failed), ("3 rows".to_string(), 3, 1));
        // CAP + 1 rows read, the oldest at 500 of a range 0..=999: about twice as many.
        let rows = CAP as i64 + 1;
        let more = Timeline::of(0, 999, bars, &[Counted { bar: 5, rows, failed: 0, oldest: 500 }], CAP);
        assert!(!more.exact);
        assert_eq!(more.total_label(), "about 10,000");
        assert!(more.bars[6].counted && !more.bars[5].counted && !more.bars[0].counted);
        assert_eq!(super::two_significant(1_234_567), 1_200_000);
        assert_eq!(super::two_significant(99), 99);
        assert_eq!(super::two_significant(12_431), 12_000);
    }
}
