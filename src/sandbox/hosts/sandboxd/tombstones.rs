//! Destroying a sandboxd session, files and all, for the destroy sweep (a tombstone) and the
//! orphan purge: a session already gone counts as destroyed; one the host closed (idle) keeps its
//! files on disk and is unknown to `DELETE`, so it is attached again first, then purged.

use crate::sandbox::hosts::sandboxd::client::{OpenSession, SandboxdClient, SandboxdError, OPEN_WAIT};

/// Purges session `session_id` of tenant `org_id`; the error in our words (never a token or an
/// address).
pub async fn destroy(client: &SandboxdClient, org_id: &str, session_id: &str) -> Result<(), String> {
    match client.delete_session(session_id, true).await {
        Ok(()) => return Ok(()),
        Err(SandboxdError::NotFound { .. } | SandboxdError::Gone { .. }) => {}
        Err(e) => return Err(e.in_words()),
    }
    let attach = OpenSession::attach(session_id.to_string()).tenant(org_id.to_string());
    match client.open_session(&attach, OPEN_WAIT).await {
        Ok(_) => {}
        // Nothing to attach to: its files are gone too.
        Err(SandboxdError::NotFound { .. } | SandboxdError::Gone { .. }) => return Ok(()),
        Err(e) => return Err(e.in_words()),
    }
    match client.delete_session(session_id, true).await {
        Ok(()) | Err(SandboxdError::NotFound { .. } | SandboxdError::Gone { .. }) => Ok(()),
        Err(e) => Err(e.in_words()),
    }
}
