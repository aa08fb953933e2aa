//! Whose files a workspace holds: an agent's setting, the first part of a workspace's session key
//! (`sandbox/workspaces/key.rs`), and what the console shows of a workspace.

/// Whose files a workspace holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    Run,
    Conversation,
    Channel,
    User,
    Agent,
}

impl Scope {
    pub const ALL: [Scope; 5] = [Scope::Run, Scope::Conversation, Scope::Channel, Scope::User, Scope::Agent];

    pub fn parse(s: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|x| x.as_str() == s.trim())
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Run => "run",
            Scope::Conversation => "conversation",
            Scope::Channel => "channel",
            Scope::User => "user",
            Scope::Agent => "agent",
        }
    }
    /// The scope in words, for people choosing it or reading a workspace's row.
    pub fn access_label(self) -> &'static str {
        match self {
            Scope::Run => "this run only",
            Scope::Conversation => "whoever is in this conversation",
            Scope::Channel => "everyone in this channel",
            Scope::User => "one person, across their conversations",
            Scope::Agent => "anyone who talks to this agent",
        }
    }
}
