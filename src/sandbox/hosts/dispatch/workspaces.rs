//! The backend a run's workspace gets, by where it lives (docs/architecture.md, "Workspaces").

use crate::agents::model::Backend;
use crate::sandbox::connections::model::ConnectionKind;
use crate::sandbox::hosts::daytona::workspaces::DaytonaBackend;
use crate::sandbox::hosts::sandboxd::workspaces::SandboxdBackend;
use crate::sandbox::hosts::state::workspaces::StateBackend;
use crate::sandbox::workspaces::backend::WorkspaceBackend;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::sandbox::workspaces::model::Resolved;
use crate::state::AppState;

/// The backend of `r`: the document for a `state` agent, else the one of its connection's kind. A
/// service workspace resolves with its connection; one without is an error, never a guess.
pub fn backend<'a>(st: &'a AppState, r: Resolved) -> Result<Box<dyn WorkspaceBackend + 'a>, WorkspaceError> {
    let kind = match r.agent.backend {
        Backend::State => return Ok(Box::new(StateBackend::new(st, r))),
        Backend::Service => r.connection.as_ref().map(|c| c.kind),
    };
    Ok(match kind {
        Some(ConnectionKind::Sandboxd) => Box::new(SandboxdBackend::new(st, r)),
        Some(ConnectionKind::Daytona) => Box::new(DaytonaBackend::new(st, r)),
        None => {
            return Err(WorkspaceError::Internal(anyhow::anyhow!(
                "a service workspace resolved without its connection"
            )))
        }
    })
}
