//! SQL for the operation record.

use super::Record;
use crate::db::{Db, DbError};

pub async fn insert_batch(db: &Db, rows: &[Record]) -> Result<(), DbError> {
    let mut tx = db.begin().await?;
    for r in rows {
        sqlx::query(
            "INSERT INTO sandbox_operations (id, organization_id, workspace_id, session_key, connection_id, agent_id, run_id, \
             operation, target, ok, detail, duration_ms, created_at, seq, conversation_id) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
        )
        .bind(crate::db::new_id())
        .bind(&r.organization_id)
        .bind(&r.workspace_id)
        .bind(&r.session_key)
        .bind(&r.connection_id)
        .bind(&r.agent_id)
        .bind(&r.run_id)
        .bind(r.operation.as_str())
        .bind(&r.target)
        .bind(i64::from(r.ok))
        .bind(&r.detail)
        .bind(r.duration_ms)
        .bind(r.created_at)
        .bind(r.seq)
        .bind(&r.conversation_id)
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(())
}
