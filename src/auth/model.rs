//! What the account rules hand out.

/// One live sign-in of an account, as its account page lists it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SessionInfo {
    pub id: String,
    pub created_at: i64,
    pub expires_at: i64,
    /// When it was last used, to the minute; `None` before its first page.
    pub last_seen_at: Option<i64>,
    /// The browser that last used it.
    pub user_agent: Option<String>,
}
