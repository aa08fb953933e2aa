//! Organizations, memberships and the five roles of DESIGN.md §4.

use serde::{Deserialize, Serialize};

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

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Organization {
    pub id: String,
    pub name: String,
    pub created_at: i64,
}

/// One of the caller's organizations, for the switcher.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct OrgChoice {
    pub organization_id: String,
    pub name: String,
    pub role: Role,
}

/// A member of the current organization, as the members page and API show it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Member {
    /// The membership id.
    pub id: String,
    pub user_id: String,
    pub email: String,
    pub role: Role,
    pub created_at: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permissions_follow_the_design_table() {
        let see: Vec<_> = Role::ALL.iter().map(|r| r.can_see_sandboxes()).collect();
        assert_eq!(see, [true, true, true, true, false]);
        let manage: Vec<_> = Role::ALL.iter().map(|r| r.can_manage_connections()).collect();
        assert_eq!(manage, [true, true, true, false, false]);
        let members: Vec<_> = Role::ALL.iter().map(|r| r.can_manage_members()).collect();
        assert_eq!(members, [true, true, false, false, false]);
    }

    #[test]
    fn roles_parse_and_rank() {
        assert_eq!(Role::parse("Admin"), Some(Role::Admin));
        assert_eq!(Role::parse("root"), None);
        assert!(Role::Owner.outranks(Role::Admin));
        assert!(!Role::Admin.outranks(Role::Admin));
        assert_eq!(Role::Builder.min(Role::Owner), Role::Builder);
    }
}
