//! Agents, conversations and runs — only what the sandbox needs.

use serde::{Deserialize, Serialize};

use super::manifest::{Manifest, WorkspaceFile};
use crate::vocabulary::scope::Scope;

/// Where an agent's workspace lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// A document in our database: files only, no commands.
    State,
    /// A sandbox host (a connection): files and a shell.
    Service,
}

impl Backend {
    pub fn parse(s: &str) -> Option<Backend> {
        match s.trim() {
            "state" => Some(Backend::State),
            "service" => Some(Backend::Service),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::State => "state",
            Backend::Service => "service",
        }
    }
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Agent {
    /// The agent's id (a UUID).
    pub id: String,
    /// Unique in the organization.
    pub name: String,
    /// Where its workspace lives.
    pub backend: Backend,
    /// None: the organization's default connection.
    pub connection_id: Option<String>,
    /// Who shares its workspace's files.
    pub scope: Scope,
    /// None: the connection's default runtime.
    pub runtime: Option<String>,
    /// Whether its runs may run commands (a `service` agent's shell).
    pub shell_enabled: bool,
    /// Written under `skills/` at each run's first workspace operation.
    pub skills: Vec<WorkspaceFile>,
    /// What a new workspace starts with (files, folders, repositories) and the environment of
    /// every command. An `env` secret shows its name and secret id only, never its value.
    pub manifest: Manifest,
    /// Epoch milliseconds (UTC).
    pub created_at: i64,
    /// Epoch milliseconds (UTC).
    pub updated_at: i64,
}

/// An agent as lists show it (the agents page, `GET /api/v1/agents`): its sandbox settings
/// without the contents of its skills and manifest files, which only the agent itself carries.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct AgentSummary {
    /// The agent's id (a UUID).
    pub id: String,
    /// Unique in the organization.
    pub name: String,
    /// Where its workspace lives.
    pub backend: Backend,
    /// None: the organization's default connection.
    pub connection_id: Option<String>,
    /// Who shares its workspace's files.
    pub scope: Scope,
    /// None: the connection's default runtime.
    pub runtime: Option<String>,
    /// Whether its runs may run commands (a `service` agent's shell).
    pub shell_enabled: bool,
    /// Epoch milliseconds (UTC).
    pub created_at: i64,
    /// Epoch milliseconds (UTC).
    pub updated_at: i64,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Conversation {
    /// The conversation's id (a UUID).
    pub id: String,
    /// The agent it is with.
    pub agent_id: String,
    /// Its title.
    pub title: String,
    /// The person who started it; null when it has none.
    pub owner_user_id: Option<String>,
    /// The channel it belongs to (for `channel` scope); null for none.
    pub channel_key: Option<String>,
    /// Its members' account ids (the owner included): who sees it besides operators and above.
    pub member_user_ids: Vec<String>,
    /// Epoch milliseconds (UTC).
    pub created_at: i64,
}

/// Who started a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum StartedBy {
    /// A signed-in member.
    Member,
    /// A visitor of a published widget (no account).
    Widget,
    /// A trigger (schedule, webhook); `trigger_as_creator` says whether it runs as its creator.
    Trigger,
    /// A sender on a channel, known by a platform id.
    Channel,
    /// An API client acting for a user.
    Api,
}

impl StartedBy {
    pub fn parse(s: &str) -> Option<StartedBy> {
        [StartedBy::Member, StartedBy::Widget, StartedBy::Trigger, StartedBy::Channel, StartedBy::Api]
            .into_iter()
            .find(|x| x.as_str() == s.trim())
    }
    pub fn as_str(self) -> &'static str {
        match self {
            StartedBy::Member => "member",
            StartedBy::Widget => "widget",
            StartedBy::Trigger => "trigger",
            StartedBy::Channel => "channel",
            StartedBy::Api => "api",
        }
    }
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Run {
    /// The run's id (a UUID).
    pub id: String,
    /// The agent it is a run of.
    pub agent_id: String,
    /// The conversation it is a turn of; null for a run outside one.
    pub conversation_id: Option<String>,
    /// Who started it.
    pub started_by: StartedBy,
    /// The person it acts for (a member, an API client's person, a trigger's creator); null for
    /// a widget visitor or a channel sender.
    pub user_id: Option<String>,
    /// The person's name as the console shows it (their account's e-mail), while they are a
    /// member of the run's organization (docs/design.md §4, "Who is named"); null for a run
    /// without a person, or once they left the organization.
    pub user_name: Option<String>,
    /// The agent's name; null once the agent was deleted.
    pub agent_name: Option<String>,
    /// Whether a trigger's run acts as the trigger's creator (`user` scope needs it).
    pub trigger_as_creator: bool,
    /// A channel sender's platform id (channel runs only).
    pub channel_sender: Option<String>,
    /// `running` or `finished`.
    pub status: String,
    /// Whether its workspace is open for it (the host may close an idle one: the next operation
    /// attaches again).
    pub workspace_opened: bool,
    /// Epoch milliseconds (UTC).
    pub created_at: i64,
    /// Epoch milliseconds (UTC); null while running.
    pub finished_at: Option<i64>,
    /// What finishing could not do with the run's `state` workspace, in words (null when all went
    /// well): its changes did not fit together with what other runs saved meanwhile, or a file it
    /// changed was changed first by a run that finished earlier. Names the recovery copy.
    pub workspace_error: Option<String>,
    /// The workspace id of the recovery copy that keeps this run's files when finishing could not
    /// merge them all into the shared `state` workspace (see `workspace_error`); null otherwise,
    /// and null again once the copy is deleted.
    pub recovery_workspace_id: Option<String>,
    /// The manifest this run brought for its new workspace (`POST /runs` `manifest`), replacing
    /// its agent's; not shown.
    #[serde(skip)]
    pub manifest: Option<Manifest>,
}

impl Run {
    /// Who started it, in words, naming the person where there is one (`user_name`): "mia@example.com",
    /// "the API for mia@example.com", "a trigger as mia@example.com", "a widget visitor", "channel
    /// sender U123"; a person no longer in the organization is "a former member".
    pub fn starter_words(&self) -> String {
        let person = || self.user_name.clone().unwrap_or_else(|| "a former member".to_string());
        match self.started_by {
            StartedBy::Member => person(),
            StartedBy::Api if self.user_id.is_some() => format!("the API for {}", person()),
            StartedBy::Api => "the API".to_string(),
            StartedBy::Trigger if self.trigger_as_creator && self.user_id.is_some() => {
                format!("a trigger as {}", person())
            }
            StartedBy::Trigger => "a trigger".to_string(),
            StartedBy::Widget => "a widget visitor".to_string(),
            StartedBy::Channel => match &self.channel_sender {
                Some(sender) => format!("channel sender {sender}"),
                None => "a channel sender".to_string(),
            },
        }
    }
}

/// `?limit=N&offset=M`: one page of a list, newest first.
#[derive(Debug, Default, Clone, Copy, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Paging {
    /// How many entries to return: 1 to 200 (default 50).
    #[serde(default)]
    pub limit: Option<u32>,
    /// How many of the newest entries to skip (default 0); the previous page's `next_offset`.
    #[serde(default)]
    pub offset: Option<u32>,
}

impl Paging {
    pub const MAX: u32 = 200;
    pub const DEFAULT: u32 = 50;

    /// (limit, offset), or a message at `limit`.
    pub fn bounds(&self, errors: &mut crate::validate::FieldErrors) -> (u32, u32) {
        let limit = self.limit.unwrap_or(Self::DEFAULT);
        if limit == 0 || limit > Self::MAX {
            errors.add("limit", format!("A page holds 1 to {} entries.", Self::MAX));
        }
        (limit.clamp(1, Self::MAX), self.offset.unwrap_or(0))
    }

    /// The next page's offset when `fetched` (asked for `limit + 1`) shows there is one.
    pub fn next_offset(limit: u32, offset: u32, fetched: usize) -> Option<u32> {
        (fetched > limit as usize).then(|| offset.saturating_add(limit))
    }
}

/// A conversation as lists show it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ConversationSummary {
    /// The conversation's id (a UUID).
    pub id: String,
    /// Its title.
    pub title: String,
    /// The agent it is with.
    pub agent_id: String,
    /// The agent's name (null if it cannot be read).
    pub agent_name: Option<String>,
    /// When it was started: epoch milliseconds (UTC).
    pub created_at: i64,
}

/// One page of conversations, newest first.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ConversationList {
    /// This page's conversations, newest first.
    pub conversations: Vec<ConversationSummary>,
    /// The `offset` of the next page; null on the last page.
    pub next_offset: Option<u32>,
}

/// One page of runs, newest first.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct RunList {
    /// This page's runs, newest first.
    pub runs: Vec<Run>,
    /// The `offset` of the next page; null on the last page.
    pub next_offset: Option<u32>,
}

#[cfg(test)]
mod tests {
    use super::Paging;
    use crate::validate::FieldErrors;

    fn bounds(limit: Option<u32>, offset: Option<u32>) -> ((u32, u32), Vec<String>) {
        let mut errors = FieldErrors::new();
        let b = Paging { limit, offset }.bounds(&mut errors);
        (b, errors.0.into_iter().map(|e| e.field).collect())
    }

    #[test]
    fn a_page_holds_1_to_200_entries_and_says_where_the_next_starts() {
        assert_eq!(bounds(None, None), ((50, 0), vec![]));
        assert_eq!(bounds(Some(200), Some(400)), ((200, 400), vec![]));
        assert_eq!(bounds(Some(0), None).1, ["limit"]);
        assert_eq!(bounds(Some(201), None).1, ["limit"]);
        // Asked for limit + 1: one more than the limit means another page.
        assert_eq!(Paging::next_offset(50, 100, 51), Some(150));
        assert_eq!(Paging::next_offset(50, 100, 50), None);
        assert_eq!(Paging::next_offset(50, u32::MAX, 51), Some(u32::MAX));
    }
}
