//! SQL for API tokens.

use super::model::ApiToken;
use crate::db::{self, Conn, DbResult};

#[derive(sqlx::FromRow)]
pub struct TokenAuthRow {
    pub id: String,
    pub name: String,
    pub organization_id: String,
    pub org_name: String,
    pub token_role: String,
    pub user_id: String,
    pub email: String,
    pub member_role: String,
    pub last_used_at: Option<i64>,
    pub expires_at: Option<i64>,
}

/// The values a token is written with.
pub struct Values<'a> {
    pub name: &'a str,
    pub description: &'a str,
    pub prefix: &'a str,
    pub token_hash: &'a str,
    pub role: &'a str,
    pub created_by: &'a str,
    pub expires_at: Option<i64>,
}

pub async fn insert(c: &mut Conn, id: &str, org_id: &str, v: &Values<'_>, now: i64) -> DbResult<()> {
    sqlx::query(
        "INSERT INTO api_tokens (id, organization_id, name, prefix, token_hash, role, created_by, created_at, \
         expires_at, description) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
    )
    .bind(id)
    .bind(org_id)
    .bind(v.name)
    .bind(v.prefix)
    .bind(v.token_hash)
    .bind(v.role)
    .bind(v.created_by)
    .bind(now)
    .bind(v.expires_at)
    .bind(v.description)
    .execute(c)
    .await?;
    Ok(())
}

const COLUMNS: &str =
    "t.id, t.name, t.description, t.prefix, t.role, COALESCE(u.email, '') AS created_by_email, t.created_at, \
                       t.last_used_at, t.revoked_at, t.expires_at";

pub async fn list(c: &mut Conn, org_id: &str) -> DbResult<Vec<ApiToken>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM api_tokens t LEFT JOIN users u ON u.id = t.created_by \
         WHERE t.organization_id = $1 ORDER BY t.revoked_at IS NOT NULL, t.created_at DESC"
    ))
    .bind(org_id)
    .fetch_all(c)
    .await?)
}

pub async fn get(c: &mut Conn, org_id: &str, id: &str) -> DbResult<Option<ApiToken>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM api_tokens t LEFT JOIN users u ON u.id = t.created_by \
         WHERE t.organization_id = $1 AND t.id = $2"
    );
    db::fetch_org_row(c, sqlx::query_as(&sql), org_id, id).await
}

pub async fn revoke(c: &mut Conn, org_id: &str, id: &str, now: i64) -> DbResult<u64> {
    let q = sqlx::query(
        "UPDATE api_tokens SET revoked_at = $1 WHERE organization_id = $2 AND id = $3 AND revoked_at IS NULL",
    )
    .bind(now);
    db::execute_on_org_row(c, q, org_id, id).await
}

#[derive(sqlx::FromRow)]
pub struct OwnTokenRow {
    #[sqlx(flatten)]
    pub token: ApiToken,
    pub organization_id: String,
    pub org_name: String,
    pub member_role: String,
}

/// The tokens `user_id` created in the organizations they still belong to, with their role
/// there; live ones first, newest first.
pub async fn created_by(c: &mut Conn, user_id: &str) -> DbResult<Vec<OwnTokenRow>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS}, t.organization_id, o.name AS org_name, m.role AS member_role FROM api_tokens t \
         JOIN users u ON u.id = t.created_by \
         JOIN organizations o ON o.id = t.organization_id \
         JOIN memberships m ON m.organization_id = t.organization_id AND m.user_id = t.created_by \
         WHERE t.created_by = $1 ORDER BY t.revoked_at IS NOT NULL, t.created_at DESC, t.id"
    ))
    .bind(user_id)
    .fetch_all(c)
    .await?)
}

/// A live token by hash, with its creator's current membership in the token's organization.
pub async fn find_for_auth(c: &mut Conn, token_hash: &str) -> DbResult<Option<TokenAuthRow>> {
    Ok(sqlx::query_as(
        "SELECT t.id, t.name, t.organization_id, o.name AS org_name, t.role AS token_role, u.id AS user_id, u.email, \
         m.role AS member_role, t.last_used_at, t.expires_at FROM api_tokens t \
         JOIN organizations o ON o.id = t.organization_id \
         JOIN users u ON u.id = t.created_by \
         JOIN memberships m ON m.organization_id = t.organization_id AND m.user_id = t.created_by \
         WHERE t.token_hash = $1 AND t.revoked_at IS NULL",
    )
    .bind(token_hash)
    .fetch_optional(c)
    .await?)
}

pub async fn touch(c: &mut Conn, id: &str, now: i64) -> DbResult<()> {
    sqlx::query("UPDATE api_tokens SET last_used_at = $1 WHERE id = $2").bind(now).bind(id).execute(c).await?;
    Ok(())
}
