//! The orphans of a Daytona connection (`running::orphans`, docs/workspaces.md, "Orphans"): its
//! sandboxes labelled for this deployment, the organization and the connection, older than
//! [`min_age_ms`] (Daytona's list is eventually consistent) and named by nothing of ours.

use crate::sandbox::connections::model::Connection;
use crate::sandbox::hosts::daytona::connections;
use crate::sandbox::running::orphaned::{epoch_ms, min_age_ms, Listed};
use crate::sandbox::workspaces::claims;
use crate::state::AppState;

/// The sandboxes of a Daytona connection that are `org_id`'s orphans: listed by this deployment's
/// and this organization's labels (following the cursor), each one's labels checked again (never
/// another deployment's or organization's), older than [`min_age_ms`], and named by no workspace
/// row, tombstone or claim. Their (id, name); `Err` says why Daytona could not be read.
pub async fn list(st: &AppState, org_id: &str, conn: &Connection, now: i64) -> Listed {
    let client = match connections::client_for(st, org_id, conn).await {
        Ok(c) => c,
        Err(e) => return Ok(Err(e.to_string())),
    };
    let mut labels = connections::owner_labels(st, org_id);
    labels.insert(connections::CONNECTION_LABEL.to_string(), conn.id.clone());
    let listed = match client.list_all_sandboxes(&labels, 10_000).await {
        Ok(l) => l,
        Err(e) => return Ok(Err(connections::words(&e))),
    };
    let mut orphans = Vec::new();
    let mut c = st.db.conn().await?;
    for sb in listed {
        let ours = labels.iter().all(|(k, v)| sb.labels.get(k) == Some(v));
        let created = sb.created_at.as_deref().and_then(epoch_ms);
        if !ours || created.is_none_or(|at| now - at < min_age_ms(st)) {
            continue;
        }
        if !claims::is_known(&mut c, &sb.name, &sb.id, crate::db::now_ms()).await? {
            orphans.push((sb.id, sb.name));
        }
    }
    Ok(Ok(orphans))
}
