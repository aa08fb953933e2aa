//! The SQL of the PostgreSQL operation log's partitions (`partitions.rs` sizes them and cuts the
//! reads' windows): the registry read, the next partition made, the oldest dropped.

use super::partitions::{next_span, MIN_SPAN_MS};
use crate::db::{Conn, DbResult};

/// The advisory lock the writers (and retention's drop) take to change the partitions: a number
/// of the log's own (`operation_log_partitions` as 64 bits of text).
const LOCK: i64 = 0x6f70_6c6f_6770_6172;

/// The partitions' bounds, sorted, each once (a partition's start and its end): what a read's
/// [`windows`] are cut at.
pub async fn bounds(c: &mut Conn) -> DbResult<Vec<i64>> {
    let rows: Vec<(i64, i64)> =
        sqlx::query_as("SELECT start_ms, end_ms FROM operation_log_partitions ORDER BY start_ms")
            .persistent(false)
            .fetch_all(&mut *c)
            .await?;
    let mut out: Vec<i64> = rows.into_iter().flat_map(|(s, e)| [s, e]).collect();
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Makes sure a partition covers `newest` (a batch's newest row, `oldest` its oldest): when it is
/// past the newest partition's end, the next partition is made ([`next_span`]); with no
/// partition yet, the first starts at `oldest`'s minute, a minute long (the next is sized by
/// the rows it got). Returns the newest partition's end, which
/// the writer keeps so that a batch below it asks nothing. Two writers at once: the advisory
/// lock makes the second wait and then find the partition made.
pub async fn extend(c: &mut Conn, oldest: i64, newest: i64, target_rows: i64) -> DbResult<i64> {
    let mut tx = sqlx::Connection::begin(&mut *c).await?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)").bind(LOCK).execute(&mut *tx).await?;
    let last: Option<(i64, i64)> =
        sqlx::query_as("SELECT start_ms, end_ms FROM operation_log_partitions ORDER BY start_ms DESC LIMIT 1")
            .fetch_optional(&mut *tx)
            .await?;
    let (start, span) = match last {
        None => (oldest.min(newest).div_euclid(MIN_SPAN_MS) * MIN_SPAN_MS, MIN_SPAN_MS),
        Some((_, end)) if newest < end => {
            tx.commit().await?;
            return Ok(end);
        }
        Some((start, end)) => {
            let (rows, low, high): (i64, Option<i64>, Option<i64>) = sqlx::query_as(
                "SELECT COUNT(*), MIN(created_at), MAX(created_at) FROM sandbox_operations \
                 WHERE created_at >= $1 AND created_at < $2",
            )
            .bind(start)
            .bind(end)
            .fetch_one(&mut *tx)
            .await?;
            let extent = high.zip(low).map_or(0, |(h, l)| h - l + 1);
            (end, next_span(end - start, rows, extent, target_rows))
        }
    };
    // After an idle gap the partition reaches a span past the batch's newest row.
    let end = if start + span > newest { start + span } else { newest + span };
    sqlx::query("SELECT operation_log_make_partition($1, $2)").bind(start).bind(end).execute(&mut *tx).await?;
    tx.commit().await?;
    Ok(end)
}

/// Retention: drops the oldest partition if it ends at or before `cutoff_ms` (DETACH, then DROP,
/// and its registry row, in one transaction) and returns how many rows it held; `None` when there
/// is none to drop or another console is changing the partitions (it takes the writers' advisory
/// lock without waiting), or the log is too busy to be detached within a second (DETACH takes an
/// ACCESS EXCLUSIVE lock on the log for that moment; PostgreSQL 15's `CONCURRENTLY` is refused
/// beside a default partition): the rows are then deleted by batch as before.
pub async fn drop_oldest_before(c: &mut Conn, cutoff_ms: i64) -> DbResult<Option<u64>> {
    let mut tx = sqlx::Connection::begin(&mut *c).await?;
    let (locked,): (bool,) =
        sqlx::query_as("SELECT pg_try_advisory_xact_lock($1)").bind(LOCK).fetch_one(&mut *tx).await?;
    if !locked {
        return Ok(None);
    }
    let oldest: Option<(i64, i64)> = sqlx::query_as(
        "SELECT start_ms, end_ms FROM operation_log_partitions WHERE end_ms <= $1 ORDER BY start_ms LIMIT 1",
    )
    .bind(cutoff_ms)
    .fetch_optional(&mut *tx)
    .await?;
    let Some((start, end)) = oldest else { return Ok(None) };
    let (rows,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM sandbox_operations WHERE created_at >= $1 AND created_at < $2")
            .bind(start)
            .bind(end)
            .fetch_one(&mut *tx)
            .await?;
    let part = name(start);
    sqlx::query("SET LOCAL lock_timeout = '1s'").execute(&mut *tx).await?;
    if let Err(e) =
        sqlx::query(&format!("ALTER TABLE sandbox_operations DETACH PARTITION {part}")).execute(&mut *tx).await
    {
        tracing::warn!(error = %e, event = "operations_partition_kept", "a partition past retention was not detached");
        return Ok(None);
    }
    sqlx::query(&format!("DROP TABLE {part}")).execute(&mut *tx).await?;
    sqlx::query("DELETE FROM operation_log_partitions WHERE start_ms = $1").bind(start).execute(&mut *tx).await?;
    tx.commit().await?;
    Ok(Some(rows.max(0) as u64))
}

/// The table of the partition starting at `start_ms` (`operation_log_make_partition`).
fn name(start_ms: i64) -> String {
    if start_ms < 0 {
        format!("sandbox_operations_pm{}", start_ms.unsigned_abs())
    } else {
        format!("sandbox_operations_p{start_ms}")
    }
}

/// The autovacuum daemon kept from analysing the log's partitions, each of them (a partitioned
/// table takes no storage option of its own): for the plan tests and the bench's `--no-analyze`,
/// which measure a freshly loaded log made without statistics. Partitions made later are not.
pub async fn autovacuum_off(c: &mut Conn) -> DbResult<()> {
    sqlx::query(
        "DO $$ DECLARE p regclass; BEGIN FOR p IN SELECT relid FROM pg_partition_tree('sandbox_operations') \
         WHERE isleaf LOOP EXECUTE format('ALTER TABLE %s SET (autovacuum_enabled = false)', p); END LOOP; END $$",
    )
    .execute(&mut *c)
    .await?;
    Ok(())
}
