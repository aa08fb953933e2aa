//! SQL for the audit log.

use super::model::{Actor, AuditEvent};
use crate::db::{self, Conn, DbResult, PageRequest};

/// Increasing in this process (start-up time in microseconds, then one a call), so events of
/// the same millisecond are listed in the order they were written.
fn next_seq() -> i64 {
    use std::sync::atomic::{AtomicI64, Ordering};
    use std::sync::LazyLock;
    static SEQ: LazyLock<AtomicI64> = LazyLock::new(|| AtomicI64::new(db::now_ms() * 1000));
    SEQ.fetch_add(1, Ordering::Relaxed)
}

/// Writes an entry under a new id.
pub async fn insert(
    c: &mut Conn,
    org_id: &str,
    actor: &Actor,
    action: &str,
    target: &str,
    detail: &str,
    now: i64,
) -> DbResult<()> {
    sqlx::query(
        "INSERT INTO audit_events (id, organization_id, actor_user_id, actor_label, action, target, detail, created_at, seq) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(db::new_id())
    .bind(org_id)
    .bind(actor.user_id.as_deref())
    .bind(&actor.label)
    .bind(action)
    .bind(target)
    .bind(detail)
    .bind(now)
    .bind(next_seq())
    .execute(c)
    .await?;
    Ok(())
}

pub async fn page(c: &mut Conn, org_id: &str, req: PageRequest) -> DbResult<Vec<AuditEvent>> {
    Ok(sqlx::query_as(
        "SELECT id, actor_label, action, target, detail, created_at FROM audit_events WHERE organization_id = $1 \
         ORDER BY created_at DESC, seq DESC, id DESC LIMIT $2 OFFSET $3",
    )
    .bind(org_id)
    .bind(req.fetch_limit())
    .bind(req.offset())
    .fetch_all(c)
    .await?)
}
