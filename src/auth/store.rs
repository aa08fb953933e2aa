//! SQL for users, sign-in sessions and sign-in failures.

use crate::db::{Conn, DbResult};

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct UserRow {
    pub id: String,
    pub email: String,
    pub password_hash: String,
    pub created_at: i64,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SessionRow {
    pub id: String,
    pub user_id: String,
    pub email: String,
    pub current_organization_id: Option<String>,
}

pub async fn count_users(c: &mut Conn) -> DbResult<i64> {
    Ok(sqlx::query_scalar("SELECT COUNT(*) FROM users").fetch_one(c).await?)
}

pub async fn insert_user(c: &mut Conn, id: &str, email: &str, password_hash: &str, now: i64) -> DbResult<()> {
    sqlx::query("INSERT INTO users (id, email, password_hash, created_at) VALUES ($1, $2, $3, $4)")
        .bind(id)
        .bind(email)
        .bind(password_hash)
        .bind(now)
        .execute(c)
        .await?;
    Ok(())
}

pub async fn find_user_by_email(c: &mut Conn, email: &str) -> DbResult<Option<UserRow>> {
    Ok(sqlx::query_as("SELECT id, email, password_hash, created_at FROM users WHERE email = $1")
        .bind(email)
        .fetch_optional(c)
        .await?)
}

pub async fn insert_session(
    c: &mut Conn,
    id: &str,
    token_hash: &str,
    user_id: &str,
    organization_id: Option<&str>,
    now: i64,
    expires_at: i64,
) -> DbResult<()> {
    sqlx::query(
        "INSERT INTO login_sessions (id, token_hash, user_id, current_organization_id, created_at, expires_at) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(id)
    .bind(token_hash)
    .bind(user_id)
    .bind(organization_id)
    .bind(now)
    .bind(expires_at)
    .execute(c)
    .await?;
    Ok(())
}

pub async fn find_session(c: &mut Conn, token_hash: &str, now: i64) -> DbResult<Option<SessionRow>> {
    Ok(sqlx::query_as(
        "SELECT s.id, s.user_id, u.email, s.current_organization_id FROM login_sessions s \
         JOIN users u ON u.id = s.user_id WHERE s.token_hash = $1 AND s.expires_at > $2",
    )
    .bind(token_hash)
    .bind(now)
    .fetch_optional(c)
    .await?)
}

pub async fn delete_session(c: &mut Conn, token_hash: &str) -> DbResult<u64> {
    Ok(sqlx::query("DELETE FROM login_sessions WHERE token_hash = $1")
        .bind(token_hash)
        .execute(c)
        .await?
        .rows_affected())
}

pub async fn delete_expired_sessions(c: &mut Conn, now: i64) -> DbResult<u64> {
    Ok(sqlx::query("DELETE FROM login_sessions WHERE expires_at <= $1").bind(now).execute(c).await?.rows_affected())
}

pub async fn set_session_org(c: &mut Conn, session_id: &str, organization_id: &str) -> DbResult<()> {
    sqlx::query("UPDATE login_sessions SET current_organization_id = $1 WHERE id = $2")
        .bind(organization_id)
        .bind(session_id)
        .execute(c)
        .await?;
    Ok(())
}

/// (count, oldest) of the failures for `email` since `since`.
pub async fn failures_since(c: &mut Conn, email: &str, since: i64) -> DbResult<(i64, Option<i64>)> {
    let row: (i64, Option<i64>) =
        sqlx::query_as("SELECT COUNT(*), MIN(created_at) FROM login_failures WHERE email = $1 AND created_at > $2")
            .bind(email)
            .bind(since)
            .fetch_one(c)
            .await?;
    Ok(row)
}

pub async fn insert_failure(c: &mut Conn, email: &str, now: i64) -> DbResult<()> {
    sqlx::query("INSERT INTO login_failures (id, email, created_at) VALUES ($1, $2, $3)")
        .bind(crate::db::new_id())
        .bind(email)
        .bind(now)
        .execute(c)
        .await?;
    Ok(())
}

pub async fn clear_failures(c: &mut Conn, email: &str, before: Option<i64>) -> DbResult<()> {
    match before {
        Some(t) => sqlx::query("DELETE FROM login_failures WHERE created_at <= $1").bind(t).execute(c).await?,
        None => sqlx::query("DELETE FROM login_failures WHERE email = $1").bind(email).execute(c).await?,
    };
    Ok(())
}
