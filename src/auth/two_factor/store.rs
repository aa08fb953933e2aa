//! SQL for two-factor sign-in: the encrypted TOTP secret of an account, its recovery codes (only
//! their hashes) and the second step of a sign-in (only its token's hash).

use crate::db::{Conn, DbResult};

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SecretRow {
    pub nonce: Vec<u8>,
    pub ciphertext: Vec<u8>,
    /// `None` while the enrolment waits for its first code.
    pub enabled_at: Option<i64>,
    pub last_step: i64,
}

pub async fn find(c: &mut Conn, user_id: &str) -> DbResult<Option<SecretRow>> {
    Ok(sqlx::query_as("SELECT nonce, ciphertext, enabled_at, last_step FROM user_two_factor WHERE user_id = $1")
        .bind(user_id)
        .fetch_optional(c)
        .await?)
}

/// A new enrolment (switched off until confirmed), replacing one that waited.
pub async fn insert_pending(c: &mut Conn, user_id: &str, nonce: &[u8], ciphertext: &[u8], now: i64) -> DbResult<()> {
    sqlx::query("DELETE FROM user_two_factor WHERE user_id = $1 AND enabled_at IS NULL")
        .bind(user_id)
        .execute(&mut *c)
        .await?;
    sqlx::query(
        "INSERT INTO user_two_factor (user_id, nonce, ciphertext, enabled_at, last_step, created_at) \
         VALUES ($1, $2, $3, NULL, 0, $4)",
    )
    .bind(user_id)
    .bind(nonce)
    .bind(ciphertext)
    .bind(now)
    .execute(c)
    .await?;
    Ok(())
}

/// Switches a waiting enrolment on, its first code's step used; false when none waited.
pub async fn enable(c: &mut Conn, user_id: &str, step: i64, now: i64) -> DbResult<bool> {
    let n = sqlx::query(
        "UPDATE user_two_factor SET enabled_at = $1, last_step = $2 WHERE user_id = $3 AND enabled_at IS NULL",
    )
    .bind(now)
    .bind(step)
    .bind(user_id)
    .execute(c)
    .await?
    .rows_affected();
    Ok(n == 1)
}

/// Takes the code of `step`: true only when no code of that step or a later one was taken
/// before, so a code works once even when two requests send it at the same moment.
pub async fn take_step(c: &mut Conn, user_id: &str, step: i64) -> DbResult<bool> {
    let n = sqlx::query(
        "UPDATE user_two_factor SET last_step = $1 WHERE user_id = $2 AND enabled_at IS NOT NULL AND last_step < $1",
    )
    .bind(step)
    .bind(user_id)
    .execute(c)
    .await?
    .rows_affected();
    Ok(n == 1)
}

/// Switches two-factor sign-in off: the secret and the recovery codes are deleted. Returns
/// whether it was on.
pub async fn delete(c: &mut Conn, user_id: &str) -> DbResult<bool> {
    sqlx::query("DELETE FROM two_factor_recovery_codes WHERE user_id = $1").bind(user_id).execute(&mut *c).await?;
    sqlx::query("DELETE FROM sign_in_challenges WHERE user_id = $1").bind(user_id).execute(&mut *c).await?;
    let n = sqlx::query("DELETE FROM user_two_factor WHERE user_id = $1 AND enabled_at IS NOT NULL")
        .bind(user_id)
        .execute(&mut *c)
        .await?
        .rows_affected();
    sqlx::query("DELETE FROM user_two_factor WHERE user_id = $1").bind(user_id).execute(c).await?;
    Ok(n == 1)
}

/// The account's recovery codes become these (hashes); the old ones stop working.
pub async fn replace_recovery_codes(c: &mut Conn, user_id: &str, hashes: &[String], now: i64) -> DbResult<()> {
    sqlx::query("DELETE FROM two_factor_recovery_codes WHERE user_id = $1").bind(user_id).execute(&mut *c).await?;
    for h in hashes {
        sqlx::query(
            "INSERT INTO two_factor_recovery_codes (id, user_id, code_hash, used_at, created_at) \
             VALUES ($1, $2, $3, NULL, $4)",
        )
        .bind(crate::db::new_id())
        .bind(user_id)
        .bind(h)
        .bind(now)
        .execute(&mut *c)
        .await?;
    }
    Ok(())
}

/// Spends a recovery code: true only for an unused code of this account (then never again).
pub async fn use_recovery_code(c: &mut Conn, user_id: &str, hash: &str, now: i64) -> DbResult<bool> {
    let n = sqlx::query(
        "UPDATE two_factor_recovery_codes SET used_at = $1 WHERE user_id = $2 AND code_hash = $3 AND used_at IS NULL",
    )
    .bind(now)
    .bind(user_id)
    .bind(hash)
    .execute(c)
    .await?
    .rows_affected();
    Ok(n == 1)
}

pub async fn recovery_codes_left(c: &mut Conn, user_id: &str) -> DbResult<i64> {
    Ok(sqlx::query_scalar("SELECT COUNT(*) FROM two_factor_recovery_codes WHERE user_id = $1 AND used_at IS NULL")
        .bind(user_id)
        .fetch_one(c)
        .await?)
}

/// A sign-in's second step, for `user_id`, until `expires_at`.
pub async fn insert_challenge(
    c: &mut Conn,
    token_hash: &str,
    user_id: &str,
    now: i64,
    expires_at: i64,
) -> DbResult<()> {
    crate::auth::store::insert_hashed_token(c, "sign_in_challenges", token_hash, user_id, now, expires_at).await
}

/// The account of a live second step.
pub async fn challenge_user(c: &mut Conn, token_hash: &str, now: i64) -> DbResult<Option<String>> {
    Ok(sqlx::query_scalar("SELECT user_id FROM sign_in_challenges WHERE token_hash = $1 AND expires_at > $2")
        .bind(token_hash)
        .bind(now)
        .fetch_optional(c)
        .await?)
}

/// Ends a second step (taken, or given up): true when this call ended it.
pub async fn delete_challenge(c: &mut Conn, token_hash: &str) -> DbResult<bool> {
    Ok(sqlx::query("DELETE FROM sign_in_challenges WHERE token_hash = $1")
        .bind(token_hash)
        .execute(c)
        .await?
        .rows_affected()
        == 1)
}

pub async fn delete_expired_challenges(c: &mut Conn, now: i64) -> DbResult<u64> {
    Ok(sqlx::query("DELETE FROM sign_in_challenges WHERE expires_at <= $1").bind(now).execute(c).await?.rows_affected())
}
