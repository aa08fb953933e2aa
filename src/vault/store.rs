//! SQL for vault secrets.

use super::model::Secret;
use crate::db::{self, Conn, DbResult};

#[derive(sqlx::FromRow)]
pub struct SealedRow {
    pub nonce: Vec<u8>,
    pub ciphertext: Vec<u8>,
}

const COLUMNS: &str = "id, name, purpose, hint, bound_address, created_at, updated_at";

pub async fn list(c: &mut Conn, org_id: &str) -> DbResult<Vec<Secret>> {
    Ok(sqlx::query_as(&format!("SELECT {COLUMNS} FROM vault_secrets WHERE organization_id = $1 ORDER BY name"))
        .bind(org_id)
        .fetch_all(c)
        .await?)
}

pub async fn get(c: &mut Conn, org_id: &str, id: &str) -> DbResult<Option<Secret>> {
    let sql = format!("SELECT {COLUMNS} FROM vault_secrets WHERE organization_id = $1 AND id = $2");
    db::fetch_org_row(c, sqlx::query_as(&sql), org_id, id).await
}

pub async fn sealed(c: &mut Conn, org_id: &str, id: &str) -> DbResult<Option<SealedRow>> {
    let sql = "SELECT nonce, ciphertext FROM vault_secrets WHERE organization_id = $1 AND id = $2";
    db::fetch_org_row(c, sqlx::query_as(sql), org_id, id).await
}

/// A value as it is stored: its hint, and the ciphertext with its nonce.
pub struct Sealed {
    pub hint: String,
    pub nonce: Vec<u8>,
    pub ciphertext: Vec<u8>,
}

/// What a new secret is written with (its value sealed).
pub struct NewRow<'a> {
    pub name: &'a str,
    pub purpose: &'a str,
    pub bound_address: Option<&'a str>,
}

pub async fn insert(c: &mut Conn, id: &str, org_id: &str, row: &NewRow<'_>, v: &Sealed, now: i64) -> DbResult<()> {
    sqlx::query(
        "INSERT INTO vault_secrets (id, organization_id, name, purpose, hint, nonce, ciphertext, bound_address, \
         created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)",
    )
    .bind(id)
    .bind(org_id)
    .bind(row.name)
    .bind(row.purpose)
    .bind(&v.hint)
    .bind(&v.nonce)
    .bind(&v.ciphertext)
    .bind(row.bound_address)
    .bind(now)
    .execute(c)
    .await?;
    Ok(())
}

/// Binds an unbound secret to `address`; 0 when it is bound already (or not there).
pub async fn bind(c: &mut Conn, org_id: &str, id: &str, address: &str) -> DbResult<u64> {
    let q = sqlx::query(
        "UPDATE vault_secrets SET bound_address = $1 WHERE bound_address IS NULL AND organization_id = $2 AND id = $3",
    )
    .bind(address);
    db::execute_on_org_row(c, q, org_id, id).await
}

/// The secret of `org_id` called `name`, if any.
pub async fn named(c: &mut Conn, org_id: &str, name: &str) -> DbResult<Option<Secret>> {
    let sql = format!("SELECT {COLUMNS} FROM vault_secrets WHERE organization_id = $1 AND name = $2");
    db::fetch_org_row(c, sqlx::query_as(&sql), org_id, name).await
}

pub async fn replace_value(c: &mut Conn, org_id: &str, id: &str, v: &Sealed, now: i64) -> DbResult<u64> {
    let q = sqlx::query(
        "UPDATE vault_secrets SET hint = $1, nonce = $2, ciphertext = $3, updated_at = $4 \
         WHERE organization_id = $5 AND id = $6",
    )
    .bind(&v.hint)
    .bind(&v.nonce)
    .bind(&v.ciphertext)
    .bind(now);
    db::execute_on_org_row(c, q, org_id, id).await
}

pub async fn delete(c: &mut Conn, org_id: &str, id: &str) -> DbResult<u64> {
    let q = sqlx::query("DELETE FROM vault_secrets WHERE organization_id = $1 AND id = $2");
    db::execute_on_org_row(c, q, org_id, id).await
}

/// Every agent of `org_id` whose manifest text mentions `id`, as (name, manifest): the candidates
/// the vault service reads for an `env` entry naming the secret (the text test is only a filter).
pub async fn manifests_mentioning(c: &mut Conn, org_id: &str, id: &str) -> DbResult<Vec<(String, String)>> {
    let sql = "SELECT name, manifest FROM agents WHERE organization_id = $1 AND manifest LIKE '%' || $2 || '%' \
               ORDER BY name";
    Ok(sqlx::query_as(sql).bind(org_id).bind(id).fetch_all(c).await?)
}
