//! SQL for the audit log.

use super::model::AuditEvent;
use crate::db::{Conn, DbResult, PageRequest};

#[allow(clippy::too_many_arguments)]
pub async fn insert(
    c: &mut Conn,
    id: &str,
    org_id: &str,
    actor_user_id: Option<&str>,
    actor_label: &str,
    action: &str,
    target: &str,
    detail: &str,
    now: i64,
) -> DbResult<()> {
    sqlx::query(
        "INSERT INTO audit_events (id, organization_id, actor_user_id, actor_label, action, target, detail, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(id)
    .bind(org_id)
    .bind(actor_user_id)
    .bind(actor_label)
    .bind(action)
    .bind(target)
    .bind(detail)
    .bind(now)
    .execute(c)
    .await?;
    Ok(())
}

pub async fn page(c: &mut Conn, org_id: &str, req: PageRequest) -> DbResult<Vec<AuditEvent>> {
    Ok(sqlx::query_as(
        "SELECT id, actor_label, action, target, detail, created_at FROM audit_events WHERE organization_id = $1 \
         ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3",
    )
    .bind(org_id)
    .bind(req.fetch_limit())
    .bind(req.offset())
    .fetch_all(c)
    .await?)
}
