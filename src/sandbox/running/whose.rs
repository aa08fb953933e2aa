//! Whose a row of the Running tab is, in words, for every host kind's row type. Its own file so
//! that the two row models do not import each other.

use crate::sandbox::workspaces::sessions::SessionOwner;

/// Whose a listed workspace is on its host (a sandboxd session, a Daytona sandbox), in the words
/// the Running tab and its dialogs use for every host kind: each row type names the workspace row
/// that opened it, the words come from here.
pub trait Whose {
    /// The workspace row that names it; none when no workspace of this organization does.
    fn owner(&self) -> Option<&SessionOwner>;

    /// The agent's name, or what is known instead.
    fn agent_words(&self) -> String {
        SessionOwner::agent_words(self.owner())
    }

    /// Who shares the files, in words; empty when unknown.
    fn access_words(&self) -> &'static str {
        self.owner().map_or("", |w| w.access_label)
    }

    /// The person of a `user` workspace; empty for every other scope.
    fn owner_words(&self) -> &str {
        self.owner().and_then(|w| w.owner_name.as_deref()).unwrap_or("")
    }
}

/// A session or sandbox as the confirmation of "Close and delete files" shows it, for every host
/// kind.
#[derive(Debug, Clone)]
pub struct Closing {
    /// What the close names in its path: a sandboxd session's key, a Daytona sandbox's id.
    pub session_id: String,
    /// The workspace's session key on the host (a Daytona sandbox's name).
    pub key: String,
    /// What deleting removes there, in words (after "On the host X,").
    pub deletes: &'static str,
    /// The workspace row that names it; none when no workspace of this organization does.
    pub workspace: Option<SessionOwner>,
}

impl Whose for Closing {
    fn owner(&self) -> Option<&SessionOwner> {
        self.workspace.as_ref()
    }
}
