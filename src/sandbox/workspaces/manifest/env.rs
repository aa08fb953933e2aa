//! A manifest's `env` entries as the environment of every command of a run: plain values, and
//! vault secrets read at each command (a rotated secret applies at once). The values go into the
//! `/run` request's `env` only: never a file, an operation row (which shows the command line),
//! the audit log, a log line or an API answer.

use std::collections::BTreeMap;

use super::effective;
use crate::agents::manifest::ManifestEntry;
use crate::sandbox::workspaces::backend::Result;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::sandbox::workspaces::model::Resolved;
use crate::state::AppState;

/// The run's manifest environment, secrets revealed. An empty map when it has none (no
/// database call then).
pub async fn resolve(st: &AppState, r: &Resolved) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    let mut conn = None;
    for (i, e) in effective(r).entries.iter().enumerate() {
        let ManifestEntry::Env { name, value, secret_id, .. } = e else { continue };
        if let Some(v) = value {
            out.insert(name.clone(), v.clone());
            continue;
        }
        let Some(id) = secret_id else { continue };
        if conn.is_none() {
            conn = Some(st.db.conn().await?);
        }
        let c = conn.as_mut().expect("opened above");
        let secret = crate::vault::service::reveal(st, c, &r.org_id, id)
            .await
            .map_err(|e| WorkspaceError::Internal(anyhow::anyhow!("reading an env secret: {e}")))?;
        match secret {
            Some(s) => {
                out.insert(name.clone(), secrecy::ExposeSecret::expose_secret(&s).to_string());
            }
            None => {
                return Err(WorkspaceError::Manifest(format!(
                    "manifest.entries[{i}] (env {name}): its vault secret no longer exists; edit the agent's manifest."
                )))
            }
        }
    }
    Ok(out)
}
