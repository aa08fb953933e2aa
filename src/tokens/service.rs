//! API tokens for REST clients: shown once, stored hashed, carry a role, revocable.

pub use super::cache::{TokenCallers, AUTH_CACHE_TTL};
use super::error::TokenError;
use super::model::{ApiToken, OwnToken, TokenCaller, TokenCheck, EXPIRY_DAYS};
use super::store::{self, Values};
use crate::access::{Caller, Via};
use crate::audit::service as audit;
use crate::auth::secrets;
use crate::db::{self, Db, DbError};
use crate::orgs::model::Role;
use crate::validate::{self, FieldErrors};

type Result<T> = std::result::Result<T, TokenError>;

fn ensure_can_manage(caller: &Caller) -> Result<()> {
    if caller.role.can_manage_members() {
        Ok(())
    } else {
        Err(TokenError::Forbidden)
    }
}

pub const TOKEN_PREFIX: &str = "agos_";

pub struct NewToken {
    pub name: String,
    pub role: String,
    /// What it is for, where it is used (may be empty).
    pub description: String,
}

/// A created token and its value, which is never shown again.
pub struct CreatedToken {
    pub token: ApiToken,
    pub value: String,
}

pub async fn list(db: &Db, caller: &Caller) -> Result<Vec<ApiToken>> {
    ensure_can_manage(caller)?;
    let mut c = db.conn().await?;
    Ok(store::list(&mut c, &caller.org_id).await?)
}

/// A token that never expires.
pub async fn create(db: &Db, caller: &Caller, input: NewToken) -> Result<CreatedToken> {
    create_expiring(db, caller, input, None).await
}

/// A token that works for `expires_in_days` (one of [`EXPIRY_DAYS`]; `None`: no expiry), the
/// refusal named at `expiry_field`.
pub async fn create_expiring(
    db: &Db,
    caller: &Caller,
    input: NewToken,
    expiry: Option<(i64, &str)>,
) -> Result<CreatedToken> {
    ensure_can_manage(caller)?;
    let mut errors = FieldErrors::new();
    let name = validate::name(&mut errors, "name", &input.name, "token name");
    let role = validate::role(&mut errors, "role", &input.role);
    let description = validate::description(&mut errors, "description", &input.description, "A description");
    if let Some(r) = role {
        if r.outranks(caller.role) {
            errors.add("role", format!("A token cannot carry a role above your own ({}).", caller.role));
        }
    }
    if let Some((days, field)) = expiry {
        if !EXPIRY_DAYS.contains(&days) {
            errors.add(field, "Choose 30, 90 or 365 days, or no expiry.");
        }
    }
    errors.into_result().map_err(TokenError::Invalid)?;
    let now = db::now_ms();
    let expires_at = expiry.map(|(days, _)| now + days * 24 * 3600 * 1000);
    let role = role.unwrap_or(Role::Member);
    let value = format!("{TOKEN_PREFIX}{}", secrets::random_token(32));
    let prefix: String = value.chars().take(TOKEN_PREFIX.len() + 6).collect();
    let id = db::new_id();
    let mut tx = db.begin().await?;
    let token_hash = secrets::sha256_hex(&value);
    let values = Values {
        name: &name,
        description: &description,
        prefix: &prefix,
        token_hash: &token_hash,
        role: role.as_str(),
        created_by: &caller.user_id,
        expires_at,
    };
    store::insert(&mut tx, &id, &caller.org_id, &values, now).await?;
    let lasting = match expiry {
        Some((days, _)) => format!("expires in {days} days"),
        None => "no expiry".to_string(),
    };
    let detail = format!("role {role}, {prefix}…, {lasting}");
    audit::record(&mut tx, &caller.org_id, &caller.actor(), "token.created", &name, &detail).await?;
    let token = store::get(&mut tx, &caller.org_id, &id).await?.ok_or(TokenError::NotFound)?;
    tx.commit().await.map_err(DbError::from)?;
    Ok(CreatedToken { token, value })
}

pub async fn revoke(db: &Db, callers: &TokenCallers, caller: &Caller, id: &str) -> Result<ApiToken> {
    ensure_can_manage(caller)?;
    let mut tx = db.begin().await?;
    let token = store::get(&mut tx, &caller.org_id, id).await?.ok_or(TokenError::NotFound)?;
    if store::revoke(&mut tx, &caller.org_id, id, db::now_ms()).await? > 0 {
        callers.forget_all();
        audit::record(
            &mut tx,
            &caller.org_id,
            &caller.actor(),
            "token.revoked",
            &token.name,
            &format!("{}…", token.prefix),
        )
        .await?;
    }
    let token = store::get(&mut tx, &caller.org_id, id).await?.ok_or(TokenError::NotFound)?;
    tx.commit().await.map_err(DbError::from)?;
    Ok(token)
}

/// The tokens a person created, in every organization they belong to (their account page).
pub async fn created_by(db: &Db, user_id: &str) -> Result<Vec<OwnToken>> {
    let mut c = db.conn().await?;
    Ok(store::created_by(&mut c, user_id)
        .await?
        .into_iter()
        .map(|r| OwnToken {
            token: r.token,
            org_id: r.organization_id,
            org_name: r.org_name,
            member_role: Role::parse(&r.member_role).unwrap_or(Role::Member),
        })
        .collect())
}

/// Revokes a token `person` created, in whichever of their organizations it lives, under the
/// tokens page's rule there (their role in that organization manages tokens). A token they did
/// not create is [`TokenError::NotFound`]. The person is signed in as `session_id`.
pub async fn revoke_own(
    db: &Db,
    callers: &TokenCallers,
    user_id: &str,
    email: &str,
    session_id: &str,
    id: &str,
) -> Result<ApiToken> {
    let own = created_by(db, user_id).await?.into_iter().find(|t| t.token.id == id);
    let own = own.ok_or(TokenError::NotFound)?;
    let caller = Caller {
        user_id: user_id.to_string(),
        email: email.to_string(),
        org_id: own.org_id,
        org_name: own.org_name,
        role: own.member_role,
        via: Via::Session { session_id: session_id.to_string() },
    };
    revoke(db, callers, &caller, id).await
}

/// The caller behind a bearer value: live token, not expired, creator still a member; the role
/// is the lower of the token's and the creator's current one. An expired token is
/// [`TokenCheck::Expired`] (never a caller), whether its answer was cached or not.
///
/// Answers are kept for [`AUTH_CACHE_TTL`]: a revoke, a role change or a removal in this process
/// clears them at once; another replica notices within the TTL.
pub async fn authenticate(db: &Db, callers: &TokenCallers, value: &str) -> Result<TokenCheck> {
    if !value.starts_with(TOKEN_PREFIX) || value.len() > 200 {
        return Ok(TokenCheck::Invalid);
    }
    let expired = |at: Option<i64>| at.is_some_and(|t| t <= db::now_ms());
    let hash = secrets::sha256_hex(value);
    if let Some(hit) = callers.get(&hash) {
        if expired(hit.expires_at) {
            return Ok(TokenCheck::Expired);
        }
        return Ok(TokenCheck::Valid(hit));
    }
    let generation = callers.generation();
    let mut c = db.conn().await?;
    let Some(row) = store::find_for_auth(&mut c, &hash).await? else {
        return Ok(TokenCheck::Invalid);
    };
    if expired(row.expires_at) {
        return Ok(TokenCheck::Expired);
    }
    let now = db::now_ms();
    if row.last_used_at.is_none_or(|t| now - t > 60_000) {
        store::touch(&mut c, &row.id, now).await?;
    }
    let role = match (Role::parse(&row.token_role), Role::parse(&row.member_role)) {
        (Some(t), Some(m)) => t.min(m),
        _ => return Ok(TokenCheck::Invalid),
    };
    let caller = TokenCaller {
        token_id: row.id,
        name: row.name,
        org_id: row.organization_id,
        org_name: row.org_name,
        user_id: row.user_id,
        email: row.email,
        role,
        expires_at: row.expires_at,
    };
    callers.put_unless_forgotten(hash, caller.clone(), generation);
    Ok(TokenCheck::Valid(caller))
}
