//! SQL for the home page's Getting started: what an organization has made so far.

use crate::db::{Conn, DbResult};

/// How many of each thing a newcomer's first steps make the organization has.
#[derive(Debug, Clone, Copy, Default, sqlx::FromRow)]
pub struct Made {
    pub connections: i64,
    pub agents: i64,
    pub runs: i64,
    pub members: i64,
    /// API tokens that still authenticate (not revoked, not expired at `now`).
    pub live_tokens: i64,
}

pub async fn made(c: &mut Conn, org_id: &str, now: i64) -> DbResult<Made> {
    Ok(sqlx::query_as(
        "SELECT \
           (SELECT COUNT(*) FROM sandbox_connections WHERE organization_id = $1) AS connections, \
           (SELECT COUNT(*) FROM agents WHERE organization_id = $1) AS agents, \
           (SELECT COUNT(*) FROM runs WHERE organization_id = $1) AS runs, \
           (SELECT COUNT(*) FROM memberships WHERE organization_id = $1) AS members, \
           (SELECT COUNT(*) FROM api_tokens WHERE organization_id = $1 AND revoked_at IS NULL \
              AND (expires_at IS NULL OR expires_at > $2)) AS live_tokens",
    )
    .bind(org_id)
    .bind(now)
    .fetch_one(c)
    .await?)
}
