use serde::Serialize;

/// What a secret is for.
pub const PURPOSES: [&str; 3] = ["sandboxd", "daytona", "other"];

/// A vault secret as every route shows it: never its value.
#[derive(Debug, Clone, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct Secret {
    pub id: String,
    pub name: String,
    pub purpose: String,
    /// The last 4 characters of the value (for values of 12 characters or more), else `••••`.
    pub hint: String,
    pub created_at: i64,
    pub updated_at: i64,
}
