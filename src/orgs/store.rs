//! SQL for organizations and memberships.

use super::model::{Member, OrgChoice, Organization, Role};
use crate::db::{self, Conn, DbResult};

#[derive(sqlx::FromRow)]
struct ChoiceRow {
    organization_id: String,
    name: String,
    role: String,
    require_two_factor: i64,
}

#[derive(sqlx::FromRow)]
struct MemberRow {
    id: String,
    user_id: String,
    email: String,
    role: String,
    created_at: i64,
    last_sign_in_at: Option<i64>,
}

fn role(s: &str) -> Role {
    Role::parse(s).unwrap_or(Role::Member)
}

pub async fn insert_org(c: &mut Conn, id: &str, name: &str, now: i64) -> DbResult<Organization> {
    sqlx::query("INSERT INTO organizations (id, name, created_at) VALUES ($1, $2, $3)")
        .bind(id)
        .bind(name)
        .bind(now)
        .execute(c)
        .await?;
    Ok(Organization { id: id.to_string(), name: name.to_string(), created_at: now })
}

pub async fn insert_membership(
    c: &mut Conn,
    id: &str,
    org_id: &str,
    user_id: &str,
    role: Role,
    now: i64,
) -> DbResult<()> {
    sqlx::query("INSERT INTO memberships (id, organization_id, user_id, role, created_at) VALUES ($1, $2, $3, $4, $5)")
        .bind(id)
        .bind(org_id)
        .bind(user_id)
        .bind(role.as_str())
        .bind(now)
        .execute(c)
        .await?;
    Ok(())
}

/// The caller's organizations, oldest membership first.
pub async fn choices_of(c: &mut Conn, user_id: &str) -> DbResult<Vec<OrgChoice>> {
    let rows: Vec<ChoiceRow> = sqlx::query_as(
        "SELECT m.organization_id, o.name, m.role, o.require_two_factor FROM memberships m \
         JOIN organizations o ON o.id = m.organization_id \
         WHERE m.user_id = $1 ORDER BY m.created_at, o.name",
    )
    .bind(user_id)
    .fetch_all(c)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| OrgChoice {
            organization_id: r.organization_id,
            name: r.name,
            role: role(&r.role),
            requires_two_factor: r.require_two_factor == 1,
        })
        .collect())
}

pub async fn members(c: &mut Conn, org_id: &str) -> DbResult<Vec<Member>> {
    let rows: Vec<MemberRow> = sqlx::query_as(
        "SELECT m.id, m.user_id, u.email, m.role, m.created_at, u.last_sign_in_at FROM memberships m JOIN users u ON u.id = m.user_id \
         WHERE m.organization_id = $1 ORDER BY m.created_at, u.email",
    )
    .bind(org_id)
    .fetch_all(c)
    .await?;
    Ok(rows.into_iter().map(to_member).collect())
}

fn to_member(r: MemberRow) -> Member {
    Member {
        id: r.id,
        user_id: r.user_id,
        email: r.email,
        role: role(&r.role),
        created_at: r.created_at,
        last_sign_in_at: r.last_sign_in_at,
    }
}

pub async fn member(c: &mut Conn, org_id: &str, membership_id: &str) -> DbResult<Option<Member>> {
    let q = sqlx::query_as(
        "SELECT m.id, m.user_id, u.email, m.role, m.created_at, u.last_sign_in_at FROM memberships m JOIN users u ON u.id = m.user_id \
         WHERE m.organization_id = $1 AND m.id = $2",
    );
    let row: Option<MemberRow> = db::fetch_org_row(c, q, org_id, membership_id).await?;
    Ok(row.map(to_member))
}

/// The member of an organization with this e-mail address.
pub async fn member_by_email(c: &mut Conn, org_id: &str, email: &str) -> DbResult<Option<Member>> {
    let row: Option<MemberRow> = sqlx::query_as(
        "SELECT m.id, m.user_id, u.email, m.role, m.created_at, u.last_sign_in_at FROM memberships m JOIN users u ON u.id = m.user_id \
         WHERE m.organization_id = $1 AND u.email = $2",
    )
    .bind(org_id)
    .bind(email)
    .fetch_optional(c)
    .await?;
    Ok(row.map(to_member))
}

pub async fn role_of(c: &mut Conn, org_id: &str, user_id: &str) -> DbResult<Option<Role>> {
    let r: Option<String> =
        sqlx::query_scalar("SELECT role FROM memberships WHERE organization_id = $1 AND user_id = $2")
            .bind(org_id)
            .bind(user_id)
            .fetch_optional(c)
            .await?;
    Ok(r.as_deref().map(role))
}

pub async fn count_owners(c: &mut Conn, org_id: &str) -> DbResult<i64> {
    Ok(sqlx::query_scalar("SELECT COUNT(*) FROM memberships WHERE organization_id = $1 AND role = 'owner'")
        .bind(org_id)
        .fetch_one(c)
        .await?)
}

pub async fn set_role(c: &mut Conn, org_id: &str, membership_id: &str, role: Role) -> DbResult<u64> {
    let q = sqlx::query("UPDATE memberships SET role = $1 WHERE organization_id = $2 AND id = $3");
    db::execute_on_org_row(c, q.bind(role.as_str()), org_id, membership_id).await
}

pub async fn delete_membership(c: &mut Conn, org_id: &str, membership_id: &str) -> DbResult<u64> {
    let q = sqlx::query("DELETE FROM memberships WHERE organization_id = $1 AND id = $2");
    db::execute_on_org_row(c, q, org_id, membership_id).await
}

/// Serialises membership changes of one organization on PostgreSQL (the last-owner rule).
pub async fn lock_org(c: &mut Conn, kind: crate::db::DbKind, org_id: &str) -> DbResult<()> {
    if kind == crate::db::DbKind::Postgres {
        sqlx::query("SELECT id FROM organizations WHERE id = $1 FOR UPDATE").bind(org_id).fetch_optional(c).await?;
    }
    Ok(())
}

/// Serialises one person's organization changes on PostgreSQL (unique names per person).
pub async fn lock_user(c: &mut Conn, kind: crate::db::DbKind, user_id: &str) -> DbResult<()> {
    if kind == crate::db::DbKind::Postgres {
        sqlx::query("SELECT id FROM users WHERE id = $1 FOR UPDATE").bind(user_id).fetch_optional(c).await?;
    }
    Ok(())
}

/// The organizations whose id or name is `id_or_name`.
pub async fn find_by_id_or_name(c: &mut Conn, id_or_name: &str) -> DbResult<Vec<Organization>> {
    #[derive(sqlx::FromRow)]
    struct Row {
        id: String,
        name: String,
        created_at: i64,
    }
    let rows: Vec<Row> =
        sqlx::query_as("SELECT id, name, created_at FROM organizations WHERE id = $1 OR name = $1 ORDER BY created_at")
            .bind(id_or_name)
            .fetch_all(c)
            .await?;
    Ok(rows.into_iter().map(|r| Organization { id: r.id, name: r.name, created_at: r.created_at }).collect())
}

/// The owners' switch: members must use two-factor sign-in (`on`) or need not.
pub async fn set_require_two_factor(c: &mut Conn, org_id: &str, on: bool) -> DbResult<()> {
    sqlx::query("UPDATE organizations SET require_two_factor = $1 WHERE id = $2")
        .bind(i64::from(on))
        .bind(org_id)
        .execute(c)
        .await?;
    Ok(())
}

pub async fn requires_two_factor(c: &mut Conn, org_id: &str) -> DbResult<bool> {
    let v: Option<i64> = sqlx::query_scalar("SELECT require_two_factor FROM organizations WHERE id = $1")
        .bind(org_id)
        .fetch_optional(c)
        .await?;
    Ok(v == Some(1))
}
