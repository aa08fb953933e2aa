//! The orphans of a sandboxd connection (`running::orphans`, docs/workspaces.md, "Orphans"): its
//! sessions of the organization's tenant that [`is_orphan`] names, by their idle time as the host
//! measures it.

use crate::sandbox::connections::model::Connection;
use crate::sandbox::hosts::sandboxd::connections::client_for;
use crate::sandbox::running::orphaned::{is_orphan, Listed};
use crate::state::AppState;

/// The sessions of a sandboxd connection that are `org_id`'s orphans: of its tenant and
/// [`is_orphan`] with their idle time at `now` (the host's idle time, read at the listing, gives
/// the last activity on our clock). Their (id, name), the same; `Err` says why the host could not be
/// read.
pub async fn list(st: &AppState, org_id: &str, conn: &Connection, now: i64) -> Listed {
    let list = match client_for(st, org_id, conn).await {
        Ok(client) => client.sessions(false).await.map_err(|e| e.in_words()),
        Err(e) => Err(e.to_string()),
    };
    let list = match list {
        Ok(list) => list,
        Err(problem) => return Ok(Err(problem)),
    };
    let listed_at = crate::db::now_ms();
    let mut orphans = Vec::new();
    for s in list.sessions.iter().filter(|s| s.tenant.as_deref() == Some(org_id)) {
        let last_active = listed_at - (s.idle_seconds.max(0.0) * 1000.0) as i64;
        if is_orphan(st, org_id, conn, &s.session_id, now - last_active).await? {
            orphans.push((s.session_id.clone(), s.session_id.clone()));
        }
    }
    Ok(Ok(orphans))
}
