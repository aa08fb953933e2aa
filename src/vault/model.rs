use serde::Serialize;

/// What a secret is for.
pub const PURPOSES: [&str; 3] = ["sandboxd", "daytona", "other"];

/// The `bound_address` of this deployment's own token: any of `SANDBOXD_LOCAL_ADDRESSES`.
pub const BOUND_TO_LOCAL: &str = "local";

impl Secret {
    /// Where the key may be sent, in words.
    pub fn binding(&self) -> String {
        match self.bound_address.as_deref() {
            Some(BOUND_TO_LOCAL) => "this deployment's own sandbox service".into(),
            Some(a) => a.to_string(),
            None => "nowhere yet (an admin or owner binds it to an address)".into(),
        }
    }
}

/// A vault secret as every route shows it: never its value.
#[derive(Debug, Clone, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct Secret {
    /// The secret's id (a UUID).
    pub id: String,
    /// Unique in the organization.
    pub name: String,
    /// `sandboxd`, `daytona` or `other`: a host is sent only a key of its own kind's purpose.
    pub purpose: String,
    /// The last 4 characters of the value (for values of 12 characters or more), else `••••`.
    pub hint: String,
    /// The only address this key is ever sent to: a host's address, `local` for this
    /// deployment's own sandbox service, or none: sent nowhere until an admin or owner binds it.
    pub bound_address: Option<String>,
    /// Epoch milliseconds (UTC).
    pub created_at: i64,
    /// Epoch milliseconds (UTC) of its last rotation (its creation until then).
    pub updated_at: i64,
}
