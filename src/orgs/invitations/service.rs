//! Invitations: an admin invites an e-mail address with a role, and nobody becomes a member
//! without accepting. The person accepts with the link's code — signed in as that address, or
//! entering (or choosing) a password, see `auth::joining` — or, signed in, from the notice of
//! their pending invitations. An invite answers the same whether the address has an account.

use super::error::{Gone, InvitationError};
use super::model::{Invitation, InvitationRecord, InvitationStatus, Role, VALID_DAYS, VALID_MS};
use super::store::{self, Values};
use crate::access::Caller;
use crate::audit::service::{self as audit, Actor};
use crate::auth::{accounts, secrets};
use crate::db::{self, Conn, Db, DbError};
use crate::orgs::store as orgs_store;
use crate::validate::{self, FieldErrors};

type Result<T> = std::result::Result<T, InvitationError>;

fn ensure_can_manage(caller: &Caller) -> Result<()> {
    if caller.role.can_manage_members() {
        Ok(())
    } else {
        Err(InvitationError::Forbidden)
    }
}

pub struct NewInvitation {
    pub email: String,
    pub role: String,
}

/// A created invitation and its code, which is shown only this once.
pub struct CreatedInvitation {
    pub invitation: Invitation,
    pub code: String,
}

/// Invites `email` with a role no higher than the caller's. Inviting an address again replaces
/// its pending invitation (the old code stops working). An address already a member is refused.
pub async fn invite(db: &Db, caller: &Caller, input: NewInvitation) -> Result<CreatedInvitation> {
    ensure_can_manage(caller)?;
    let mut errors = FieldErrors::new();
    let email = validate::email(&mut errors, "email", &input.email);
    let role = validate::role(&mut errors, "role", &input.role);
    if role.is_some_and(|r| r.outranks(caller.role)) {
        errors.0.extend(InvitationError::above_own_role_errors(caller.role).0);
    }
    errors.into_result().map_err(InvitationError::Invalid)?;
    let role = role.unwrap_or(Role::Member);

    let code = secrets::random_token(32);
    let code_hash = secrets::sha256_hex(&code);
    let now = db::now_ms();
    let id = db::new_id();
    let mut tx = db.begin().await?;
    orgs_store::lock_org(&mut tx, db.kind(), &caller.org_id).await?;
    if orgs_store::member_by_email(&mut tx, &caller.org_id, &email).await?.is_some() {
        return Err(InvitationError::Invalid(FieldErrors::one("email", "This person is already a member.")));
    }
    let replaced = store::pending_of(&mut tx, &caller.org_id, &email).await?;
    if let Some(old) = &replaced {
        if old.role.outranks(caller.role) {
            return Err(InvitationError::Outranked { email, action: "invite them again" });
        }
        store::mark_revoked(&mut tx, &old.id, now).await?;
    }
    let values = Values {
        id: &id,
        org_id: &caller.org_id,
        email: &email,
        role,
        code_hash: &code_hash,
        created_by: &caller.user_id,
        created_at: now,
        expires_at: now + VALID_MS,
    };
    store::insert(&mut tx, &values).await?;
    let replaces = if replaced.is_some() { "; replaces the earlier invitation" } else { "" };
    let detail = format!("as {role}, valid {VALID_DAYS} days{replaces}");
    audit::record(&mut tx, &caller.org_id, &caller.actor(), "member.invited", &email, &detail).await?;
    let record = store::get(&mut tx, &caller.org_id, &id).await?.ok_or(InvitationError::NotFound)?;
    tx.commit().await.map_err(DbError::from)?;
    Ok(CreatedInvitation { invitation: record.view(now), code })
}

/// The organization's pending invitations, expired ones included (admins and owners).
pub async fn list(db: &Db, caller: &Caller) -> Result<Vec<Invitation>> {
    ensure_can_manage(caller)?;
    let now = db::now_ms();
    let mut c = db.conn().await?;
    Ok(store::open_in(&mut c, &caller.org_id).await?.iter().map(|r| r.view(now)).collect())
}

/// Revokes a pending invitation: its code stops working. Revoking it again changes nothing.
pub async fn revoke(db: &Db, caller: &Caller, id: &str) -> Result<Invitation> {
    ensure_can_manage(caller)?;
    let now = db::now_ms();
    let mut tx = db.begin().await?;
    let inv = store::get(&mut tx, &caller.org_id, id).await?.ok_or(InvitationError::NotFound)?;
    if inv.accepted_at.is_some() {
        return Err(InvitationError::AlreadyAccepted);
    }
    if inv.role.outranks(caller.role) {
        return Err(InvitationError::Outranked { email: inv.email, action: "revoke it" });
    }
    if store::mark_revoked(&mut tx, id, now).await? > 0 {
        let detail = format!("was {}", inv.role);
        audit::record(&mut tx, &caller.org_id, &caller.actor(), "member.invitation_revoked", &inv.email, &detail)
            .await?;
    }
    let inv = store::get(&mut tx, &caller.org_id, id).await?.ok_or(InvitationError::NotFound)?;
    tx.commit().await.map_err(DbError::from)?;
    Ok(inv.view(now))
}

/// `Ok` while an invitation can be accepted; why not otherwise.
fn usable(inv: InvitationRecord, now: i64) -> Result<InvitationRecord> {
    match inv.status(now) {
        InvitationStatus::Pending => Ok(inv),
        InvitationStatus::Accepted => Err(InvitationError::Gone(Gone::Accepted)),
        InvitationStatus::Revoked => Err(InvitationError::Gone(Gone::Revoked)),
        InvitationStatus::Expired => Err(InvitationError::Gone(Gone::Expired)),
    }
}

/// The invitation a link's code names, while it can be accepted: an unknown code is
/// [`InvitationError::UnknownCode`], a used, revoked or expired one [`InvitationError::Gone`].
pub async fn by_code(db: &Db, code: &str) -> Result<InvitationRecord> {
    if code.is_empty() || code.len() > 100 {
        return Err(InvitationError::UnknownCode);
    }
    let mut c = db.conn().await?;
    let inv = store::by_code_hash(&mut c, &secrets::sha256_hex(code)).await?.ok_or(InvitationError::UnknownCode)?;
    usable(inv, db::now_ms())
}

/// The unexpired pending invitations for an account's e-mail address, in every organization.
pub async fn pending_for(db: &Db, email: &str) -> Result<Vec<InvitationRecord>> {
    let mut c = db.conn().await?;
    Ok(store::pending_for(&mut c, email, db::now_ms()).await?)
}

/// A signed-in person accepting: their account, and the sign-in that moves to the organization.
pub struct Invitee<'a> {
    pub user_id: &'a str,
    pub email: &'a str,
    pub session_id: &'a str,
}

/// Accepts the invitation of a link while signed in as its e-mail address.
pub async fn accept_by_code(db: &Db, who: &Invitee<'_>, code: &str) -> Result<InvitationRecord> {
    let inv = by_code(db, code).await?;
    if inv.email != who.email {
        return Err(InvitationError::NotYours);
    }
    accept_signed_in(db, who, inv).await
}

/// Accepts one of the signed-in person's pending invitations (another address's is not found).
pub async fn accept_by_id(db: &Db, who: &Invitee<'_>, id: &str) -> Result<InvitationRecord> {
    let inv = invitees(db, who.email, id).await?;
    accept_signed_in(db, who, usable(inv, db::now_ms())?).await
}

/// Declines one of the signed-in person's pending invitations: it is revoked.
pub async fn decline(db: &Db, who: &Invitee<'_>, id: &str) -> Result<InvitationRecord> {
    let inv = usable(invitees(db, who.email, id).await?, db::now_ms())?;
    let mut tx = db.begin().await?;
    if store::mark_revoked(&mut tx, &inv.id, db::now_ms()).await? == 0 {
        return Err(InvitationError::Gone(Gone::Revoked));
    }
    let actor = Actor::user(who.user_id, who.email);
    let detail = format!("was {}", inv.role);
    audit::record(&mut tx, &inv.organization_id, &actor, "member.invitation_declined", &inv.email, &detail).await?;
    tx.commit().await.map_err(DbError::from)?;
    Ok(inv)
}

/// An invitation by id, only when it is for `email`.
async fn invitees(db: &Db, email: &str, id: &str) -> Result<InvitationRecord> {
    let mut c = db.conn().await?;
    store::by_id(&mut c, id).await?.filter(|i| i.email == email).ok_or(InvitationError::NotFound)
}

async fn accept_signed_in(db: &Db, who: &Invitee<'_>, inv: InvitationRecord) -> Result<InvitationRecord> {
    let mut tx = db.begin().await?;
    accept_in(&mut tx, &inv, who.user_id, who.email, "").await?;
    tx.commit().await.map_err(DbError::from)?;
    accounts::set_current_org(db, who.session_id, &inv.organization_id)
        .await
        .map_err(|e| InvitationError::Internal(e.into()))?;
    Ok(inv)
}

/// Inside the caller's transaction: takes the invitation (once — a concurrent accept finds it
/// taken and gets [`InvitationError::Gone`]), adds the membership with its role and records
/// `member.joined`. `note` is added to the audit detail (`account created`).
pub async fn accept_in(c: &mut Conn, inv: &InvitationRecord, user_id: &str, email: &str, note: &str) -> Result<()> {
    let now = db::now_ms();
    if store::mark_accepted(c, &inv.id, now).await? == 0 {
        let now_state = store::by_id(c, &inv.id).await?.map(|i| i.status(now));
        let why = match now_state {
            Some(InvitationStatus::Accepted) => Gone::Accepted,
            Some(InvitationStatus::Expired) => Gone::Expired,
            _ => Gone::Revoked,
        };
        return Err(InvitationError::Gone(why));
    }
    let mut detail = format!("as {}", inv.role);
    match orgs_store::role_of(c, &inv.organization_id, user_id).await? {
        Some(kept) => detail = format!("was a member already, as {kept}"),
        None => {
            orgs_store::insert_membership(c, &db::new_id(), &inv.organization_id, user_id, inv.role, now).await?;
        }
    }
    if !note.is_empty() {
        detail = format!("{detail}; {note}");
    }
    audit::record(c, &inv.organization_id, &Actor::user(user_id, email), "member.joined", email, &detail).await?;
    Ok(())
}
