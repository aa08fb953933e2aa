//! Organizations, memberships and the five roles of docs/design.md §4.

use serde::Serialize;

pub use crate::access::Role;

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Organization {
    /// The organization's id (a UUID).
    pub id: String,
    /// Its name.
    pub name: String,
    /// Epoch milliseconds (UTC).
    pub created_at: i64,
}

/// One of the caller's organizations, for the switcher.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct OrgChoice {
    /// The organization's id (a UUID).
    pub organization_id: String,
    /// Its name.
    pub name: String,
    /// The caller's role there.
    pub role: Role,
    /// Whether its owners require two-factor sign-in of its members (the pages send a member
    /// without it to enrol); not part of the API, whose tokens it does not concern.
    #[serde(skip)]
    pub requires_two_factor: bool,
}

/// A member of the current organization, as the members page and API show it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Member {
    /// The membership id.
    pub id: String,
    /// The person's account id.
    pub user_id: String,
    /// The person's e-mail address.
    pub email: String,
    /// Their role in this organization.
    pub role: Role,
    /// Epoch milliseconds (UTC).
    pub created_at: i64,
    /// Epoch milliseconds (UTC) of the person's last sign-in with their password (in any
    /// organization: an account is one); null before their first.
    pub last_sign_in_at: Option<i64>,
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
