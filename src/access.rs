//! Who is calling and what their role allows: the plain caller type every service takes instead
//! of an HTTP type. The web layer builds a [`Caller`] from a session cookie or an API token.

use serde::{Deserialize, Serialize};

use crate::audit::model::Actor;

/// How the caller proved who they are.
#[derive(Debug, Clone)]
pub enum Via {
    Session {
        session_id: String,
    },
    Token {
        token_id: String,
        name: String,
    },
    /// `agenticos admin …` on the server, acting as an owner or admin it names.
    CommandLine,
}

/// A person or token acting in one organization.
#[derive(Debug, Clone)]
pub struct Caller {
    pub user_id: String,
    pub email: String,
    pub org_id: String,
    pub org_name: String,
    pub role: Role,
    pub via: Via,
}

impl Caller {
    /// Who the audit log names for this caller.
    pub fn actor(&self) -> Actor {
        match &self.via {
            Via::Session { .. } => Actor::user(&self.user_id, &self.email),
            Via::Token { name, .. } => {
                Actor { user_id: Some(self.user_id.clone()), label: format!("{} (token {name})", self.email) }
            }
            Via::CommandLine => {
                Actor { user_id: Some(self.user_id.clone()), label: format!("{} (command line)", self.email) }
            }
        }
    }
}

/// A role in one organization, highest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Owner,
    Admin,
    Builder,
    Operator,
    Member,
}

impl Role {
    pub const ALL: [Role; 5] = [Role::Owner, Role::Admin, Role::Builder, Role::Operator, Role::Member];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::Admin => "admin",
            Role::Builder => "builder",
            Role::Operator => "operator",
            Role::Member => "member",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == s.trim().to_ascii_lowercase())
    }

    /// Owner 5 … member 1.
    pub fn rank(self) -> u8 {
        match self {
            Role::Owner => 5,
            Role::Admin => 4,
            Role::Builder => 3,
            Role::Operator => 2,
            Role::Member => 1,
        }
    }

    pub fn outranks(self, other: Role) -> bool {
        self.rank() > other.rank()
    }

    pub fn at_least(self, other: Role) -> bool {
        self.rank() >= other.rank()
    }

    /// The lower of two roles (a token never carries more than its creator holds).
    pub fn min(self, other: Role) -> Role {
        if self.rank() <= other.rank() {
            self
        } else {
            other
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Role::Owner => "Owner",
            Role::Admin => "Admin",
            Role::Builder => "Builder",
            Role::Operator => "Operator",
            Role::Member => "Member",
        }
    }

    /// What the role may do, in one line (docs/console.md, "Roles"), shown wherever a role is chosen.
    pub fn summary(self) -> &'static str {
        match self {
            Role::Owner => "everything an admin does, and changing or removing other owners.",
            Role::Admin => "manages members and API tokens and reads the audit log, besides all a builder does.",
            Role::Builder => "adds and edits sandbox connections, vault keys and agents' sandbox settings.",
            Role::Operator => "sees connections, running sessions, policy and the operation log.",
            Role::Member => "browses Documents and the conversations they are in.",
        }
    }

    /// See connections, sessions, policy, operation log.
    pub fn can_see_sandboxes(self) -> bool {
        self.at_least(Role::Operator)
    }
    /// Add, edit, delete connections; probe; vault keys.
    pub fn can_manage_connections(self) -> bool {
        self.at_least(Role::Builder)
    }
    /// Edit agents' sandbox settings.
    pub fn can_edit_agents(self) -> bool {
        self.at_least(Role::Builder)
    }
    /// Manage members and API tokens, read the audit log.
    pub fn can_manage_members(self) -> bool {
        self.at_least(Role::Admin)
    }
    pub fn can_read_audit(self) -> bool {
        self.at_least(Role::Admin)
    }
    pub fn can_manage_vault(self) -> bool {
        self.can_manage_connections()
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
