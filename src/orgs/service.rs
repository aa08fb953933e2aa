//! Organizations and their members: create, switch, change role, remove. People join through
//! invitations (`invitations/`).

use super::error::OrgError;
use super::model::{Member, OrgChoice, Organization, Role};
use super::store;
use crate::access::{Caller, Via};
use crate::audit::service::{self as audit, Actor};
use crate::auth::accounts;
use crate::db::{self, Db, DbError};
use crate::sandbox::workspaces::removal;
use crate::state::AppState;
use crate::tokens::cache::TokenCallers;
use crate::validate::{self, FieldErrors};

/// Creates an organization with `user_id` as its first member, inside the caller's transaction.
pub async fn create_in(c: &mut db::Conn, name: &str, user_id: &str, role: Role) -> Result<Organization, DbError> {
    let now = db::now_ms();
    let org = store::insert_org(c, &db::new_id(), name, now).await?;
    store::insert_membership(c, &db::new_id(), &org.id, user_id, role, now).await?;
    Ok(org)
}

/// Whether `user_id` already belongs to an organization called `name`, compared without regard
/// to case: one person's organizations have different names, so the switcher tells them apart.
/// On PostgreSQL the person's row is locked until the transaction ends, so two creations at once
/// cannot both pass.
pub async fn name_taken_by(c: &mut db::Conn, kind: db::DbKind, user_id: &str, name: &str) -> Result<bool, DbError> {
    store::lock_user(c, kind, user_id).await?;
    let wanted = name.trim().to_lowercase();
    Ok(store::choices_of(c, user_id).await?.iter().any(|o| o.name.trim().to_lowercase() == wanted))
}

/// The message for a name [`name_taken_by`] found.
pub fn name_taken_message(name: &str) -> String {
    format!("You already belong to an organization named “{name}”. Choose another name.")
}

/// A signed-in person creates another organization and becomes its owner.
pub async fn create(db: &Db, user_id: &str, email: &str, name: &str) -> Result<Organization, OrgError> {
    let mut errors = FieldErrors::new();
    let name = validate::name(&mut errors, "name", name, "name");
    errors.into_result().map_err(OrgError::Invalid)?;
    let mut tx = db.begin().await?;
    if name_taken_by(&mut tx, db.kind(), user_id, &name).await? {
        return Err(OrgError::Invalid(FieldErrors::one("name", name_taken_message(&name))));
    }
    let org = create_in(&mut tx, &name, user_id, Role::Owner).await?;
    audit::record(&mut tx, &org.id, &Actor::user(user_id, email), "organization.created", &org.name, "").await?;
    tx.commit().await.map_err(DbError::from)?;
    Ok(org)
}

pub async fn organization_ids_of(c: &mut db::Conn, user_id: &str) -> Result<Vec<String>, DbError> {
    Ok(store::choices_of(c, user_id).await?.into_iter().map(|o| o.organization_id).collect())
}

/// Sets the owners' switch "Require two-factor sign-in for members" (the rules, who may and
/// when, are `auth::two_factor`'s).
pub async fn set_require_two_factor(c: &mut db::Conn, org_id: &str, on: bool) -> Result<(), DbError> {
    store::set_require_two_factor(c, org_id, on).await
}

pub async fn requires_two_factor(db: &Db, org_id: &str) -> Result<bool, OrgError> {
    let mut c = db.conn().await?;
    Ok(store::requires_two_factor(&mut c, org_id).await?)
}

pub async fn choices(db: &Db, user_id: &str) -> Result<Vec<OrgChoice>, OrgError> {
    let mut c = db.conn().await?;
    Ok(store::choices_of(&mut c, user_id).await?)
}

/// The organization a session acts on: its chosen one if still a member, else the oldest.
pub fn current(choices: &[OrgChoice], preferred: Option<&str>) -> Option<OrgChoice> {
    preferred.and_then(|p| choices.iter().find(|o| o.organization_id == p)).or_else(|| choices.first()).cloned()
}

pub async fn role_of(db: &Db, org_id: &str, user_id: &str) -> Result<Option<Role>, OrgError> {
    let mut c = db.conn().await?;
    Ok(store::role_of(&mut c, org_id, user_id).await?)
}

/// Switching to an organization the caller does not belong to is `NotFound`.
pub async fn switch(db: &Db, session_id: &str, user_id: &str, org_id: &str) -> Result<(), OrgError> {
    if role_of(db, org_id, user_id).await?.is_none() {
        return Err(OrgError::NotFound);
    }
    accounts::set_current_org(db, session_id, org_id).await?;
    Ok(())
}

pub async fn members(db: &Db, caller: &Caller) -> Result<Vec<Member>, OrgError> {
    if !caller.role.can_manage_members() {
        return Err(OrgError::Forbidden);
    }
    let mut c = db.conn().await?;
    Ok(store::members(&mut c, &caller.org_id).await?)
}

/// Changes a member's role: never someone who outranks the caller, never above the caller's own
/// role, never the last owner away from owner.
pub async fn change_role(
    db: &Db,
    callers: &TokenCallers,
    caller: &Caller,
    membership_id: &str,
    role: &str,
) -> Result<Member, OrgError> {
    if !caller.role.can_manage_members() {
        return Err(OrgError::Forbidden);
    }
    let mut errors = FieldErrors::new();
    let new_role = validate::role(&mut errors, "role", role);
    errors.into_result().map_err(OrgError::Invalid)?;
    let new_role = new_role.unwrap_or(Role::Member);
    let mut tx = db.begin().await?;
    store::lock_org(&mut tx, db.kind(), &caller.org_id).await?;
    let target = store::member(&mut tx, &caller.org_id, membership_id).await?.ok_or(OrgError::NotFound)?;
    if target.role.outranks(caller.role) {
        return Err(OrgError::Outranked { email: target.email, action: "change their role" });
    }
    if new_role.outranks(caller.role) {
        return Err(OrgError::AboveOwnRole(caller.role));
    }
    if target.role == Role::Owner && new_role != Role::Owner && store::count_owners(&mut tx, &caller.org_id).await? <= 1
    {
        return Err(OrgError::LastOwner("demoted"));
    }
    store::set_role(&mut tx, &caller.org_id, membership_id, new_role).await?;
    callers.forget_all();
    audit::record(
        &mut tx,
        &caller.org_id,
        &caller.actor(),
        "member.role_changed",
        &target.email,
        &format!("{} → {}", target.role, new_role),
    )
    .await?;
    let member = store::member(&mut tx, &caller.org_id, membership_id).await?.ok_or(OrgError::NotFound)?;
    tx.commit().await.map_err(DbError::from)?;
    Ok(member)
}

pub async fn remove_member(
    db: &Db,
    callers: &TokenCallers,
    caller: &Caller,
    membership_id: &str,
) -> Result<Member, OrgError> {
    let mut tx = db.begin().await?;
    let target = remove_member_in(&mut tx, db.kind(), callers, caller, membership_id).await?;
    tx.commit().await.map_err(DbError::from)?;
    Ok(target)
}

/// Removes a member and, in the same transaction, their `user` workspaces (a tombstone for each
/// sandbox); the sandboxes are destroyed after the commit, or by the sweep.
pub async fn remove_member_and_workspaces(
    st: &AppState,
    caller: &Caller,
    membership_id: &str,
) -> Result<(Member, removal::Removal), OrgError> {
    let now = db::now_ms();
    let mut tx = st.db.begin().await?;
    let target = remove_member_in(&mut tx, st.db.kind(), &st.token_callers, caller, membership_id).await?;
    let (rows, removal) = removal::user_workspaces_in(&mut tx, &caller.org_id, &target.user_id, now)
        .await
        .map_err(|e| OrgError::Internal(e.into()))?;
    tx.commit().await.map_err(DbError::from)?;
    let removal = removal::destroy_now(st, &rows, removal, now).await;
    Ok((target, removal))
}

/// [`remove_member`] in the caller's transaction (which also removes their `user` workspaces).
pub async fn remove_member_in(
    tx: &mut db::Conn,
    kind: db::DbKind,
    callers: &TokenCallers,
    caller: &Caller,
    membership_id: &str,
) -> Result<Member, OrgError> {
    if !caller.role.can_manage_members() {
        return Err(OrgError::Forbidden);
    }
    store::lock_org(&mut *tx, kind, &caller.org_id).await?;
    let target = store::member(&mut *tx, &caller.org_id, membership_id).await?.ok_or(OrgError::NotFound)?;
    if target.role.outranks(caller.role) {
        return Err(OrgError::Outranked { email: target.email, action: "remove them" });
    }
    if target.role == Role::Owner && store::count_owners(&mut *tx, &caller.org_id).await? <= 1 {
        return Err(OrgError::LastOwner("removed"));
    }
    store::delete_membership(&mut *tx, &caller.org_id, membership_id).await?;
    callers.forget_all();
    audit::record(
        &mut *tx,
        &caller.org_id,
        &caller.actor(),
        "member.removed",
        &target.email,
        &format!("was {}", target.role),
    )
    .await?;
    Ok(target)
}

/// Whom `agenticos admin …` acts as in an organization (its id or name): the owner or admin
/// `email` names, else the organization's first owner (the oldest owner membership). Anyone
/// else — another role, a stranger — is refused naming `email`.
pub async fn command_line_caller(db: &Db, organization: &str, email: Option<&str>) -> Result<Caller, OrgError> {
    let mut c = db.conn().await?;
    let orgs = store::find_by_id_or_name(&mut c, organization.trim()).await?;
    let org = match orgs.as_slice() {
        [] => {
            return Err(OrgError::Invalid(FieldErrors::one(
                "organization",
                format!("No organization is named “{organization}”."),
            )))
        }
        [one] => one.clone(),
        _ => {
            return Err(OrgError::Invalid(FieldErrors::one(
                "organization",
                format!("Several organizations are named “{organization}”; pass its id instead."),
            )))
        }
    };
    let members = store::members(&mut c, &org.id).await?;
    let acting = match email {
        Some(e) => {
            let m = members.iter().find(|m| m.email.eq_ignore_ascii_case(e.trim()));
            match m {
                Some(m) if m.role.can_manage_members() => m,
                Some(m) => {
                    return Err(OrgError::Invalid(FieldErrors::one(
                        "email",
                        format!(
                            "{} is {} of {}; only an owner or admin can create API tokens.",
                            m.email,
                            with_article(m.role),
                            org.name
                        ),
                    )))
                }
                None => {
                    return Err(OrgError::Invalid(FieldErrors::one(
                        "email",
                        format!("{e} is not a member of {}.", org.name),
                    )))
                }
            }
        }
        None => members.iter().find(|m| m.role == Role::Owner).ok_or_else(|| {
            OrgError::Invalid(FieldErrors::one(
                "organization",
                format!("{} has no owner; pass --email of an admin.", org.name),
            ))
        })?,
    };
    Ok(Caller {
        user_id: acting.user_id.clone(),
        email: acting.email.clone(),
        org_id: org.id.clone(),
        org_name: org.name.clone(),
        role: acting.role,
        via: Via::CommandLine,
    })
}

/// `an owner`, `a builder`, …
fn with_article(role: Role) -> String {
    let word = role.as_str();
    let article = if word.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" };
    format!("{article} {word}")
}
