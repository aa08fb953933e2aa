//! How many rows each batch of an export asks for (`export.rs` streams them; `service.rs` reads
//! them).

/// The rows of the first batch ([`first_batch`]): a small export is one short statement, and the
/// first bytes of a long one come as soon as they are found. When it is full, the rest is read in
/// ranges of time, two at once (`segments.rs`), each in batches of [`MAX_BATCH`].
///
/// On PostgreSQL a page's worth ([`FIRST_BATCH`]): a read that costs every candidate it asks
/// whatever its LIMIT (a search narrowed to its rare trigrams, an equality filter) asks them of
/// its range's partitions only, so nothing is read twice, and a rare term's partitions are read by
/// two ranges at once rather than by the first batch alone (at 10,000,000 rows a first batch of
/// 1,000 of a term in 1,697 rows read some 60 % of the partitions before its first byte, 105 ms).
pub const FIRST_BATCH: u32 = 200;
/// On SQLite 1,000 ([`BATCH`]): its search index is one, not one a partition, and a range of a
/// search with an equality filter reads the term's candidates again (a word in one session's 396
/// rows of 1,000,000: 21 ms as one batch of 1,000, 110 ms as 200 and then ranges).
pub fn first_batch(kind: crate::db::DbKind) -> u32 {
    match kind {
        crate::db::DbKind::Postgres => FIRST_BATCH,
        crate::db::DbKind::Sqlite => BATCH,
    }
}
/// The rows an export's search is narrowed for (`Reader::search_narrowing_for`): the larger the
/// read, the more common a term must be to be walked to; a term in 1 % of the rows is read from its
/// rare trigrams' index for an export, walked to for a page.
pub const BATCH: u32 = 1_000;
/// The most rows of a batch of a range (and what a range is sized for). One batch's rows and its
/// encoded bytes are about 1 KB a row, so ~10 MB; an export holds at most two a range, two ranges
/// at once, whatever the size of the log.
pub const MAX_BATCH: u32 = 10_000;
