//! SQL for sandbox connections.

use super::model::{Connection, ConnectionKind, SecretUse};
use crate::db::{self, Conn, DbResult};

#[derive(sqlx::FromRow)]
struct Row {
    id: String,
    name: String,
    kind: String,
    address: Option<String>,
    credential_secret_id: Option<String>,
    credential_name: Option<String>,
    default_runtime: Option<String>,
    is_default: i64,
    is_enabled: i64,
    created_at: i64,
    updated_at: i64,
    credential_updated_at: Option<i64>,
}

/// A stored kind this binary does not know (a newer console wrote it, or the row was edited by
/// hand) is an error, never read as some other kind: the row's host would take that kind's
/// branches (issue 48).
impl TryFrom<Row> for Connection {
    type Error = db::DbError;
    fn try_from(r: Row) -> Result<Self, Self::Error> {
        let kind = ConnectionKind::parse(&r.kind).ok_or_else(|| unknown_kind(&r.id, &r.kind))?;
        Ok(Connection {
            id: r.id,
            name: r.name,
            kind,
            address: r.address,
            credential: if r.credential_name.is_some() { "in the vault" } else { "missing" },
            credential_secret_id: r.credential_secret_id,
            credential_name: r.credential_name,
            default_runtime: r.default_runtime,
            is_default: r.is_default == 1,
            is_enabled: r.is_enabled == 1,
            created_at: r.created_at,
            updated_at: r.updated_at,
            credential_updated_at: r.credential_updated_at,
        })
    }
}

fn unknown_kind(id: &str, kind: &str) -> db::DbError {
    db::DbError::Other(sqlx::Error::Decode(
        format!("sandbox connection {id} has kind {kind:?}, which this version does not know").into(),
    ))
}

/// The values a connection is written with.
pub struct Values<'a> {
    pub name: &'a str,
    pub kind: ConnectionKind,
    pub address: Option<&'a str>,
    pub credential_secret_id: Option<&'a str>,
    pub default_runtime: Option<&'a str>,
}

const SELECT: &str = "SELECT c.id, c.name, c.kind, c.address, c.credential_secret_id, v.name AS credential_name, \
    c.default_runtime, c.is_default, c.is_enabled, c.created_at, c.updated_at, v.updated_at AS credential_updated_at \
    FROM sandbox_connections c \
    LEFT JOIN vault_secrets v ON v.id = c.credential_secret_id AND v.organization_id = c.organization_id";

pub async fn list(c: &mut Conn, org_id: &str) -> DbResult<Vec<Connection>> {
    let rows: Vec<Row> =
        sqlx::query_as(&format!("{SELECT} WHERE c.organization_id = $1 ORDER BY c.is_default DESC, c.name"))
            .bind(org_id)
            .fetch_all(c)
            .await?;
    rows.into_iter().map(Connection::try_from).collect()
}

pub async fn get(c: &mut Conn, org_id: &str, id: &str) -> DbResult<Option<Connection>> {
    let sql = format!("{SELECT} WHERE c.organization_id = $1 AND c.id = $2");
    let row: Option<Row> = db::fetch_org_row(c, sqlx::query_as(&sql), org_id, id).await?;
    row.map(Connection::try_from).transpose()
}

pub async fn count(c: &mut Conn, org_id: &str) -> DbResult<i64> {
    Ok(sqlx::query_scalar("SELECT COUNT(*) FROM sandbox_connections WHERE organization_id = $1")
        .bind(org_id)
        .fetch_one(c)
        .await?)
}

pub async fn insert(c: &mut Conn, id: &str, org_id: &str, v: &Values<'_>, is_default: bool, now: i64) -> DbResult<()> {
    sqlx::query(
        "INSERT INTO sandbox_connections (id, organization_id, name, kind, address, credential_secret_id, \
         default_runtime, is_default, is_enabled, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 1, $9, $9)",
    )
    .bind(id)
    .bind(org_id)
    .bind(v.name)
    .bind(v.kind.as_str())
    .bind(v.address)
    .bind(v.credential_secret_id)
    .bind(v.default_runtime)
    .bind(i64::from(is_default))
    .bind(now)
    .execute(c)
    .await?;
    Ok(())
}

pub async fn update(c: &mut Conn, org_id: &str, id: &str, v: &Values<'_>, now: i64) -> DbResult<u64> {
    let q = sqlx::query(
        "UPDATE sandbox_connections SET name = $1, kind = $2, address = $3, credential_secret_id = $4, \
         default_runtime = $5, updated_at = $6 WHERE organization_id = $7 AND id = $8",
    )
    .bind(v.name)
    .bind(v.kind.as_str())
    .bind(v.address)
    .bind(v.credential_secret_id)
    .bind(v.default_runtime)
    .bind(now);
    db::execute_on_org_row(c, q, org_id, id).await
}

pub async fn set_enabled(c: &mut Conn, org_id: &str, id: &str, enabled: bool, now: i64) -> DbResult<u64> {
    let q = sqlx::query(
        "UPDATE sandbox_connections SET is_enabled = $1, updated_at = $2 WHERE organization_id = $3 AND id = $4",
    )
    .bind(i64::from(enabled))
    .bind(now);
    db::execute_on_org_row(c, q, org_id, id).await
}

/// Makes `id` the organization's default; the partial unique index keeps it to one.
pub async fn make_default(c: &mut Conn, org_id: &str, id: &str, now: i64) -> DbResult<()> {
    let others = sqlx::query(
        "UPDATE sandbox_connections SET is_default = 0, updated_at = $1 \
         WHERE organization_id = $2 AND is_default = 1 AND id <> $3",
    );
    db::execute_on_org_row(&mut *c, others.bind(now), org_id, id).await?;
    let this = sqlx::query(
        "UPDATE sandbox_connections SET is_default = 1, updated_at = $1 WHERE organization_id = $2 AND id = $3",
    );
    db::execute_on_org_row(c, this.bind(now), org_id, id).await?;
    Ok(())
}

pub async fn delete(c: &mut Conn, org_id: &str, id: &str) -> DbResult<u64> {
    let q = sqlx::query("DELETE FROM sandbox_connections WHERE organization_id = $1 AND id = $2");
    db::execute_on_org_row(c, q, org_id, id).await
}

/// The oldest remaining connection, to inherit the default when the default is deleted.
pub async fn oldest(c: &mut Conn, org_id: &str) -> DbResult<Option<String>> {
    Ok(sqlx::query_scalar(
        "SELECT id FROM sandbox_connections WHERE organization_id = $1 ORDER BY created_at, id LIMIT 1",
    )
    .bind(org_id)
    .fetch_optional(c)
    .await?)
}

/// Every connection of every organization (for `agenticos doctor`), with its organization id.
pub async fn all(c: &mut Conn) -> DbResult<Vec<(String, Connection)>> {
    #[derive(sqlx::FromRow)]
    struct OrgRow {
        organization_id: String,
    }
    let rows: Vec<Row> =
        sqlx::query_as(&format!("{SELECT} ORDER BY c.organization_id, c.name")).fetch_all(&mut *c).await?;
    let orgs: Vec<OrgRow> =
        sqlx::query_as("SELECT organization_id FROM sandbox_connections ORDER BY organization_id, name")
            .fetch_all(c)
            .await?;
    orgs.into_iter().map(|o| o.organization_id).zip(rows).map(|(org, r)| Ok((org, Connection::try_from(r)?))).collect()
}

/// The id and name of every organization that has a connection (for `agenticos doctor`).
pub async fn organization_names(c: &mut Conn) -> DbResult<Vec<(String, String)>> {
    Ok(sqlx::query_as(
        "SELECT o.id, o.name FROM organizations o WHERE EXISTS \
         (SELECT 1 FROM sandbox_connections c WHERE c.organization_id = o.id) ORDER BY o.name",
    )
    .fetch_all(c)
    .await?)
}

/// The names of the connections of `org_id` whose credential is secret `secret_id`.
pub async fn names_using_secret(c: &mut Conn, org_id: &str, secret_id: &str) -> DbResult<Vec<String>> {
    Ok(sqlx::query_scalar(
        "SELECT name FROM sandbox_connections WHERE organization_id = $1 AND credential_secret_id = $2 ORDER BY name",
    )
    .bind(org_id)
    .bind(secret_id)
    .fetch_all(c)
    .await?)
}

/// Every connection of `org_id` that has a key: (secret id, connection id, name), by secret then
/// name.
pub async fn secret_uses(c: &mut Conn, org_id: &str) -> DbResult<Vec<SecretUse>> {
    Ok(sqlx::query_as(
        "SELECT credential_secret_id AS secret_id, id AS connection_id, name AS connection_name \
         FROM sandbox_connections WHERE organization_id = $1 AND credential_secret_id IS NOT NULL \
         ORDER BY credential_secret_id, name",
    )
    .bind(org_id)
    .fetch_all(c)
    .await?)
}

/// PostgreSQL: holds the organization's row until the transaction ends, so two saves of the
/// organization's connections at once are checked one after the other (one address, one
/// connection). SQLite's write transactions take the database's lock at their start already.
pub async fn lock_organization(c: &mut Conn, org_id: &str) -> DbResult<()> {
    if !c.backend_name().eq_ignore_ascii_case("sqlite") {
        sqlx::query("SELECT id FROM organizations WHERE id = $1 FOR UPDATE").bind(org_id).fetch_optional(c).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(kind: &str) -> Row {
        Row {
            id: "c1".into(),
            name: "host".into(),
            kind: kind.into(),
            address: Some("http://sandboxd:8080".into()),
            credential_secret_id: None,
            credential_name: None,
            default_runtime: None,
            is_default: 1,
            is_enabled: 1,
            created_at: 1,
            updated_at: 1,
            credential_updated_at: None,
        }
    }

    #[test]
    fn a_stored_kind_this_version_does_not_know_is_an_error_not_sandboxd() {
        let e = Connection::try_from(row("kubernetes")).expect_err("an unknown kind was read as some kind");
        assert!(e.to_string().contains("\"kubernetes\""), "{e}");
        for kind in ConnectionKind::all() {
            let c = Connection::try_from(row(kind.as_str())).expect("a known kind");
            assert_eq!(c.kind.as_str(), kind.as_str());
        }
    }
}
