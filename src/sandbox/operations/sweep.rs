//! Retention: rows older than `OPERATION_RETENTION_DAYS` are deleted in batches of 1,000 by id,
//! each its own short statement, so no lock is held for long and the table stays writable. On
//! PostgreSQL each batch locks the rows it takes with `FOR UPDATE SKIP LOCKED`: several replicas
//! sweeping at once share the work and delete each row once.

use crate::db::DbResult;
use crate::sandbox::log::LogStore;

pub const BATCH: i64 = 1_000;
pub const DAY_MS: i64 = 86_400_000;

/// Deletes the rows created before `cutoff_ms` (epoch milliseconds); returns how many it deleted.
pub async fn sweep_before(log: &LogStore, cutoff_ms: i64) -> DbResult<u64> {
    let mut total = 0u64;
    loop {
        let n = log.delete_batch_before(cutoff_ms, BATCH).await?;
        total += n;
        if n == 0 {
            break;
        }
        // Let other work in between batches.
        tokio::task::yield_now().await;
    }
    Ok(total)
}

/// Deletes the rows older than `retention_days` before `now_ms`, and logs how many.
pub async fn sweep(log: &LogStore, retention_days: u32, now_ms: i64) -> DbResult<u64> {
    let cutoff = now_ms - i64::from(retention_days) * DAY_MS;
    let n = sweep_before(log, cutoff).await?;
    tracing::info!(
        event = "operations_swept",
        rows = n,
        retention_days,
        "deleted {n} operation rows older than {retention_days} days"
    );
    Ok(n)
}
