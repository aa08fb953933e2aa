use serde::Serialize;

/// An API token as lists show it; the value itself is shown once, at creation.
#[derive(Debug, Clone, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct ApiToken {
    /// The token's id (a UUID; not its value).
    pub id: String,
    /// Its name, as its creator gave it.
    pub name: String,
    /// What it is for, as its creator described it; empty when they did not.
    pub description: String,
    /// The first characters of the value, to recognise it.
    pub prefix: String,
    /// The role it acts with (never above its creator's current role).
    pub role: String,
    /// Who created it; it stops working when they leave the organization.
    pub created_by_email: String,
    /// Epoch milliseconds (UTC).
    pub created_at: i64,
    /// Epoch milliseconds (UTC) of its last use, to the minute; null if never used.
    pub last_used_at: Option<i64>,
    /// Epoch milliseconds (UTC); null while it is live.
    pub revoked_at: Option<i64>,
    /// Epoch milliseconds (UTC) from which it no longer authenticates (a `token-expired` 401);
    /// null if it never expires.
    pub expires_at: Option<i64>,
}

impl ApiToken {
    pub fn is_revoked(&self) -> bool {
        self.revoked_at.is_some()
    }
    /// Past its expiry (and not revoked, which lists say first).
    pub fn is_expired(&self) -> bool {
        !self.is_revoked() && self.expires_at.is_some_and(|t| t <= crate::db::now_ms())
    }
    /// Neither revoked nor expired.
    pub fn is_live(&self) -> bool {
        !self.is_revoked() && !self.is_expired()
    }
}

/// How long a new token works: the choices the page and the API offer, in days.
pub const EXPIRY_DAYS: [i64; 3] = [30, 90, 365];

/// What a bearer value comes to.
#[derive(Debug, Clone)]
pub enum TokenCheck {
    /// A live token of a member.
    Valid(TokenCaller),
    /// A token that was valid until its expiry.
    Expired,
    /// Unknown, revoked, or its creator left.
    Invalid,
}

/// A token that authenticated a request.
#[derive(Debug, Clone)]
pub struct TokenCaller {
    pub token_id: String,
    pub name: String,
    pub org_id: String,
    pub org_name: String,
    pub user_id: String,
    pub email: String,
    pub role: crate::orgs::model::Role,
    /// When it stops authenticating, if ever (checked on every use, cached or not).
    pub expires_at: Option<i64>,
}

/// An API token a person created, in any organization they belong to (their account page).
#[derive(Debug, Clone)]
pub struct OwnToken {
    pub token: ApiToken,
    pub org_id: String,
    pub org_name: String,
    /// The person's current role in the token's organization.
    pub member_role: crate::orgs::model::Role,
}

impl OwnToken {
    /// Whether the person may revoke it: the tokens page's rule, in its organization.
    pub fn can_revoke(&self) -> bool {
        !self.token.is_revoked() && self.member_role.can_manage_members()
    }
}
