//! SQL for users, sign-in sessions and sign-in failures.

use super::model::SessionInfo;
use crate::db::{Conn, DbKind, DbResult};

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
    /// 1 while the account's password was issued to it (a one-time password), not chosen.
    pub must_change_password: i64,
    /// 1 while the account has two-factor sign-in on.
    pub two_factor_on: i64,
    pub last_seen_at: Option<i64>,
    pub user_agent: Option<String>,
}

pub async fn count_users(c: &mut Conn) -> DbResult<i64> {
    Ok(sqlx::query_scalar("SELECT COUNT(*) FROM users").fetch_one(c).await?)
}

/// Holds first-run setup to one at a time until the transaction ends: on PostgreSQL a
/// transaction-scoped advisory lock; a SQLite transaction (`BEGIN IMMEDIATE`) holds the write
/// lock from its start already.
pub async fn lock_setup(c: &mut Conn, kind: DbKind) -> DbResult<()> {
    if kind == DbKind::Postgres {
        sqlx::query("SELECT pg_advisory_xact_lock(7311001)").execute(c).await?;
    }
    Ok(())
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

/// The account signed in with its password at `now` (Members' "Last sign-in").
pub async fn note_sign_in(c: &mut Conn, user_id: &str, now: i64) -> DbResult<()> {
    sqlx::query("UPDATE users SET last_sign_in_at = $1 WHERE id = $2").bind(now).bind(user_id).execute(c).await?;
    Ok(())
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
        "SELECT s.id, s.user_id, u.email, s.current_organization_id, u.must_change_password, \
         CAST(CASE WHEN t.enabled_at IS NULL THEN 0 ELSE 1 END AS BIGINT) AS two_factor_on, s.last_seen_at, s.user_agent \
         FROM login_sessions s JOIN users u ON u.id = s.user_id LEFT JOIN user_two_factor t ON t.user_id = u.id \
         WHERE s.token_hash = $1 AND s.expires_at > $2",
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

/// Notes that a sign-in was used now, by this browser.
pub async fn touch_session(c: &mut Conn, id: &str, now: i64, user_agent: Option<&str>) -> DbResult<()> {
    sqlx::query("UPDATE login_sessions SET last_seen_at = $1, user_agent = $2 WHERE id = $3")
        .bind(now)
        .bind(user_agent)
        .bind(id)
        .execute(c)
        .await?;
    Ok(())
}

/// The live sign-ins of an account, the most recently used first.
pub async fn sessions_of(c: &mut Conn, user_id: &str, now: i64) -> DbResult<Vec<SessionInfo>> {
    Ok(sqlx::query_as(
        "SELECT id, created_at, expires_at, last_seen_at, user_agent FROM login_sessions \
         WHERE user_id = $1 AND expires_at > $2 ORDER BY COALESCE(last_seen_at, created_at) DESC, created_at DESC, id",
    )
    .bind(user_id)
    .bind(now)
    .fetch_all(c)
    .await?)
}

/// Ends one sign-in of an account (0 when it is not one of theirs).
pub async fn delete_session_of(c: &mut Conn, user_id: &str, session_id: &str) -> DbResult<u64> {
    Ok(sqlx::query("DELETE FROM login_sessions WHERE user_id = $1 AND id = $2")
        .bind(user_id)
        .bind(session_id)
        .execute(c)
        .await?
        .rows_affected())
}

/// Ends every sign-in of an account but `keep`.
pub async fn delete_other_sessions(c: &mut Conn, user_id: &str, keep: &str) -> DbResult<u64> {
    Ok(sqlx::query("DELETE FROM login_sessions WHERE user_id = $1 AND id <> $2")
        .bind(user_id)
        .bind(keep)
        .execute(c)
        .await?
        .rows_affected())
}

pub async fn find_user_by_id(c: &mut Conn, id: &str) -> DbResult<Option<UserRow>> {
    Ok(sqlx::query_as("SELECT id, email, password_hash, created_at FROM users WHERE id = $1")
        .bind(id)
        .fetch_optional(c)
        .await?)
}

/// A password the person chose: stored, and the account no longer has to change it.
pub async fn set_password(c: &mut Conn, user_id: &str, password_hash: &str) -> DbResult<()> {
    sqlx::query("UPDATE users SET password_hash = $1, must_change_password = 0 WHERE id = $2")
        .bind(password_hash)
        .bind(user_id)
        .execute(&mut *c)
        .await?;
    delete_reset_links_of(c, user_id).await?;
    Ok(())
}

/// A password issued to the account (an admin's reset): stored, and it must choose its own at
/// its next sign-in.
pub async fn set_issued_password(c: &mut Conn, user_id: &str, password_hash: &str) -> DbResult<()> {
    sqlx::query("UPDATE users SET password_hash = $1, must_change_password = 1 WHERE id = $2")
        .bind(password_hash)
        .bind(user_id)
        .execute(&mut *c)
        .await?;
    delete_reset_links_of(c, user_id).await?;
    Ok(())
}

/// Ends every sign-in of an account.
pub async fn delete_sessions_of(c: &mut Conn, user_id: &str) -> DbResult<u64> {
    Ok(sqlx::query("DELETE FROM login_sessions WHERE user_id = $1").bind(user_id).execute(c).await?.rows_affected())
}

/// Marks an account whose password was issued to it: it must choose its own at its next sign-in.
pub async fn require_password_change(c: &mut Conn, user_id: &str) -> DbResult<()> {
    sqlx::query("UPDATE users SET must_change_password = 1 WHERE id = $1").bind(user_id).execute(c).await?;
    Ok(())
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

/// A password-reset link: only its token's hash is kept.
pub async fn insert_reset_link(
    c: &mut Conn,
    token_hash: &str,
    user_id: &str,
    now: i64,
    expires_at: i64,
) -> DbResult<()> {
    insert_hashed_token(c, "password_reset_links", token_hash, user_id, now, expires_at).await
}

/// A one-time token of `user_id` kept as its hash until `expires_at`, in `table` (a table of this
/// module's schema with those columns: reset links, sign-in challenges; never a caller's text).
pub(crate) async fn insert_hashed_token(
    c: &mut Conn,
    table: &'static str,
    token_hash: &str,
    user_id: &str,
    now: i64,
    expires_at: i64,
) -> DbResult<()> {
    sqlx::query(&format!(
        "INSERT INTO {table} (id, token_hash, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)"
    ))
    .bind(crate::db::new_id())
    .bind(token_hash)
    .bind(user_id)
    .bind(now)
    .bind(expires_at)
    .execute(c)
    .await?;
    Ok(())
}

/// How many reset links the account was sent since `since`.
/// Holds the account's row until the transaction ends (PostgreSQL; a SQLite transaction holds the
/// write lock from its start), so its reset links are counted and issued one request at a time.
pub async fn lock_user_for_reset(c: &mut Conn, kind: crate::db::DbKind, user_id: &str) -> DbResult<()> {
    if kind == crate::db::DbKind::Postgres {
        sqlx::query("SELECT id FROM users WHERE id = $1 FOR UPDATE").bind(user_id).fetch_optional(c).await?;
    }
    Ok(())
}

pub async fn reset_links_since(c: &mut Conn, user_id: &str, since: i64) -> DbResult<i64> {
    Ok(sqlx::query_scalar("SELECT COUNT(*) FROM password_reset_links WHERE user_id = $1 AND created_at > $2")
        .bind(user_id)
        .bind(since)
        .fetch_one(c)
        .await?)
}

/// The account of a live reset link (not expired at `now`).
pub async fn find_reset_link_user(c: &mut Conn, token_hash: &str, now: i64) -> DbResult<Option<UserRow>> {
    Ok(sqlx::query_as(
        "SELECT u.id, u.email, u.password_hash, u.created_at FROM password_reset_links l \
         JOIN users u ON u.id = l.user_id WHERE l.token_hash = $1 AND l.expires_at > $2",
    )
    .bind(token_hash)
    .bind(now)
    .fetch_optional(c)
    .await?)
}

/// Takes a live reset link: deleted, so that it works once even when two tabs send it at once
/// (only the one that deletes it goes on). Returns whether this call took it.
pub async fn take_reset_link(c: &mut Conn, token_hash: &str, user_id: &str, now: i64) -> DbResult<bool> {
    let taken =
        sqlx::query("DELETE FROM password_reset_links WHERE token_hash = $1 AND user_id = $2 AND expires_at > $3")
            .bind(token_hash)
            .bind(user_id)
            .bind(now)
            .execute(c)
            .await?
            .rows_affected();
    Ok(taken == 1)
}

/// Ends every reset link of an account (any new password does).
pub async fn delete_reset_links_of(c: &mut Conn, user_id: &str) -> DbResult<u64> {
    Ok(sqlx::query("DELETE FROM password_reset_links WHERE user_id = $1")
        .bind(user_id)
        .execute(c)
        .await?
        .rows_affected())
}

/// Deletes reset links that expired before `before`.
pub async fn delete_expired_reset_links(c: &mut Conn, before: i64) -> DbResult<u64> {
    Ok(sqlx::query("DELETE FROM password_reset_links WHERE expires_at <= $1")
        .bind(before)
        .execute(c)
        .await?
        .rows_affected())
}
