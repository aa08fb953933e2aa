//! SQL for the audit log.

use super::filter::Filter;
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

pub async fn page(c: &mut Conn, org_id: &str, filter: &Filter, req: PageRequest) -> DbResult<Vec<AuditEvent>> {
    let mut conditions = vec!["organization_id = $1".to_string()];
    let mut n = 1;
    let mut next = || {
        n += 1;
        n
    };
    if filter.actor.is_some() {
        conditions.push(format!("LOWER(actor_label) LIKE ${} ESCAPE '\\'", next()));
    }
    if filter.event.is_some() {
        conditions.push(format!("action = ${}", next()));
    }
    if filter.from_ms.is_some() {
        conditions.push(format!("created_at >= ${}", next()));
    }
    if filter.to_ms.is_some() {
        conditions.push(format!("created_at <= ${}", next()));
    }
    let (limit, offset) = (next(), next());
    let sql = format!(
        "SELECT id, actor_label, action, target, detail, created_at FROM audit_events WHERE {} \
         ORDER BY created_at DESC, seq DESC, id DESC LIMIT ${limit} OFFSET ${offset}",
        conditions.join(" AND ")
    );
    let mut q = sqlx::query_as(&sql).bind(org_id);
    if let Some(actor) = &filter.actor {
        q = q.bind(format!("%{}%", db::like_escaped(actor)));
    }
    if let Some(event) = &filter.event {
        q = q.bind(event);
    }
    if let Some(from) = filter.from_ms {
        q = q.bind(from);
    }
    if let Some(to) = filter.to_ms {
        q = q.bind(to);
    }
    Ok(q.bind(req.fetch_limit()).bind(req.offset()).fetch_all(c).await?)
}

#[cfg(test)]
mod tests {
    #[test]
    fn like_wildcards_are_taken_literally() {
        assert_eq!(crate::db::like_escaped(r"50%_a\b"), r"50\%\_a\\b");
    }
}
