//! SQL for invitations. A pending invitation is one neither accepted nor revoked; the partial
//! unique index `invitations_one_pending` keeps one per organization and e-mail.

use super::model::{InvitationRecord, Role};
use crate::db::{self, Conn, DbResult};

#[derive(sqlx::FromRow)]
struct Row {
    id: String,
    organization_id: String,
    organization_name: String,
    email: String,
    role: String,
    created_at: i64,
    expires_at: i64,
    accepted_at: Option<i64>,
    revoked_at: Option<i64>,
}

const SELECT: &str = "SELECT i.id, i.organization_id, o.name AS organization_name, i.email, i.role, i.created_at, \
     i.expires_at, i.accepted_at, i.revoked_at FROM invitations i JOIN organizations o ON o.id = i.organization_id";

fn record(r: Row) -> InvitationRecord {
    InvitationRecord {
        id: r.id,
        organization_id: r.organization_id,
        organization_name: r.organization_name,
        email: r.email,
        role: Role::parse(&r.role).unwrap_or(Role::Member),
        created_at: r.created_at,
        expires_at: r.expires_at,
        accepted_at: r.accepted_at,
        revoked_at: r.revoked_at,
    }
}

/// The values an invitation is written with.
pub struct Values<'a> {
    pub id: &'a str,
    pub org_id: &'a str,
    pub email: &'a str,
    pub role: Role,
    pub code_hash: &'a str,
    pub created_by: &'a str,
    pub created_at: i64,
    pub expires_at: i64,
}

pub async fn insert(c: &mut Conn, v: &Values<'_>) -> DbResult<()> {
    sqlx::query(
        "INSERT INTO invitations (id, organization_id, email, role, code_hash, created_by, created_at, expires_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(v.id)
    .bind(v.org_id)
    .bind(v.email)
    .bind(v.role.as_str())
    .bind(v.code_hash)
    .bind(v.created_by)
    .bind(v.created_at)
    .bind(v.expires_at)
    .execute(c)
    .await?;
    Ok(())
}

/// One invitation of an organization.
pub async fn get(c: &mut Conn, org_id: &str, id: &str) -> DbResult<Option<InvitationRecord>> {
    let sql = format!("{SELECT} WHERE i.organization_id = $1 AND i.id = $2");
    let row: Option<Row> = db::fetch_org_row(c, sqlx::query_as(&sql), org_id, id).await?;
    Ok(row.map(record))
}

/// The invitation a code's hash names, whatever its state.
pub async fn by_code_hash(c: &mut Conn, code_hash: &str) -> DbResult<Option<InvitationRecord>> {
    let sql = format!("{SELECT} WHERE i.code_hash = $1");
    let row: Option<Row> = sqlx::query_as(&sql).bind(code_hash).fetch_optional(c).await?;
    Ok(row.map(record))
}

/// The pending invitation of an organization for an e-mail address, expired or not.
pub async fn pending_of(c: &mut Conn, org_id: &str, email: &str) -> DbResult<Option<InvitationRecord>> {
    let sql = format!(
        "{SELECT} WHERE i.organization_id = $1 AND i.email = $2 AND i.accepted_at IS NULL AND i.revoked_at IS NULL"
    );
    let row: Option<Row> = sqlx::query_as(&sql).bind(org_id).bind(email).fetch_optional(c).await?;
    Ok(row.map(record))
}

/// An organization's pending invitations (expired ones too), newest first.
pub async fn open_in(c: &mut Conn, org_id: &str) -> DbResult<Vec<InvitationRecord>> {
    let sql = format!(
        "{SELECT} WHERE i.organization_id = $1 AND i.accepted_at IS NULL AND i.revoked_at IS NULL \
         ORDER BY i.created_at DESC, i.email"
    );
    let rows: Vec<Row> = sqlx::query_as(&sql).bind(org_id).fetch_all(c).await?;
    Ok(rows.into_iter().map(record).collect())
}

/// The unexpired pending invitations for an e-mail address, in every organization, oldest first.
pub async fn pending_for(c: &mut Conn, email: &str, now: i64) -> DbResult<Vec<InvitationRecord>> {
    let sql = format!(
        "{SELECT} WHERE i.email = $1 AND i.accepted_at IS NULL AND i.revoked_at IS NULL AND i.expires_at > $2 \
         ORDER BY i.created_at, o.name"
    );
    let rows: Vec<Row> = sqlx::query_as(&sql).bind(email).bind(now).fetch_all(c).await?;
    Ok(rows.into_iter().map(record).collect())
}

/// Marks a pending, unexpired invitation accepted. 1 when this call took it, 0 when it was
/// accepted, revoked or expired meanwhile: on PostgreSQL a concurrent accept waits for the row
/// lock and then finds `accepted_at` set, so a code is used once.
pub async fn mark_accepted(c: &mut Conn, id: &str, now: i64) -> DbResult<u64> {
    Ok(sqlx::query(
        "UPDATE invitations SET accepted_at = $1 \
         WHERE id = $2 AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > $1",
    )
    .bind(now)
    .bind(id)
    .execute(c)
    .await?
    .rows_affected())
}

/// Revokes a pending invitation (expired or not). 1 when it was pending.
pub async fn mark_revoked(c: &mut Conn, id: &str, now: i64) -> DbResult<u64> {
    Ok(sqlx::query(
        "UPDATE invitations SET revoked_at = $1 WHERE id = $2 AND accepted_at IS NULL AND revoked_at IS NULL",
    )
    .bind(now)
    .bind(id)
    .execute(c)
    .await?
    .rows_affected())
}

/// An invitation by id, in any organization (the caller checks whose it is).
pub async fn by_id(c: &mut Conn, id: &str) -> DbResult<Option<InvitationRecord>> {
    let sql = format!("{SELECT} WHERE i.id = $1");
    let row: Option<Row> = sqlx::query_as(&sql).bind(id).fetch_optional(c).await?;
    Ok(row.map(record))
}
