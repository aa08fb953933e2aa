//! How many rows each batch of an export asks for (`export.rs` streams them; `service.rs` reads
//! them): small first, growing while the export goes on.

/// The rows of the first batch: a small export is one short statement, and the first bytes of a
/// long one come as soon as a walk has found 1,000 rows.
pub const BATCH: u32 = 1_000;
/// The most rows of a batch: each batch after the first reads [`GROWTH`] times as many as the one
/// before, up to this. One batch's rows and its encoded bytes are what the export holds (about
/// 1 KB a row in all, so ~10 MB, and as much again for the batch read ahead while this one is
/// sent), whatever the size of the log.
pub const MAX_BATCH: u32 = 10_000;
/// How much each full batch's successor grows: a statement costs a fixed part (a connection, on
/// PostgreSQL the walk's transaction, planning) besides its rows, so a long export pays it once
/// every 10,000 rows instead of every 1,000.
const GROWTH: u32 = 4;

/// How many rows the batch after one of `asked` rows asks for ([`BATCH`], ×[`GROWTH`], at most
/// [`MAX_BATCH`]). A read that costs its every match whatever its LIMIT (on PostgreSQL a search
/// narrowed to its rare trigrams, or an equality filter: the index's candidates are read and
/// sorted by time each time) asks for [`MAX_BATCH`] from the first batch on
/// (`LogStore::export_reads_every_match`): a term in 1 % of a million rows was 10 statements each
/// reading its 10,000 candidates, and is one.
pub fn batch_size(asked: Option<u32>, reads_every_match: bool) -> u32 {
    match asked {
        _ if reads_every_match => MAX_BATCH,
        None => BATCH,
        Some(n) => n.saturating_mul(GROWTH).min(MAX_BATCH),
    }
}
