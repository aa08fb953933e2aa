//! Listing a connection's orphans (`running::orphans`): each kind's listing in its folder
//! (`hosts/<kind>/running/orphans.rs`); their destroy is [`super::destroy`].

use crate::sandbox::connections::model::{Connection, ConnectionKind};
use crate::sandbox::hosts::{daytona, sandboxd};
use crate::sandbox::running::orphaned::Listed;
use crate::state::AppState;

/// The (id, name) of each of `org_id`'s orphans on `conn` at `now` (epoch milliseconds); the inner
/// `Err` says why the host could not be read.
pub async fn list(st: &AppState, org_id: &str, conn: &Connection, now: i64) -> Listed {
    match conn.kind {
        ConnectionKind::Sandboxd => sandboxd::running::orphans::list(st, org_id, conn, now).await,
        ConnectionKind::Daytona => daytona::running::orphans::list(st, org_id, conn, now).await,
    }
}
