//! Invitations to an organization: what the members page, the API and the invitee see. The code
//! itself appears nowhere here: it is shown once when created and stored only as its SHA-256.

use serde::Serialize;

pub use crate::access::Role;

/// How long an invitation can be accepted.
pub const VALID_DAYS: i64 = 7;
pub const VALID_MS: i64 = VALID_DAYS * 24 * 3600 * 1000;

/// Where an invitation stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum InvitationStatus {
    /// Waiting for the person to accept it.
    Pending,
    /// Not accepted within 7 days; invite again to send a new code.
    Expired,
    /// The person joined.
    Accepted,
    /// Revoked by an admin, declined by the person, or replaced by a newer invitation.
    Revoked,
}

/// An invitation as the members page and the API show it (never its code).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Invitation {
    /// The invitation's id (not its code): for listing and revoking.
    pub id: String,
    /// The invited e-mail address, trimmed and lower-cased as accounts are.
    pub email: String,
    /// The role the person gets when they accept.
    pub role: Role,
    /// `pending` until the person accepts; `accepted`, `revoked` (or declined) or `expired` after.
    pub status: InvitationStatus,
    /// Epoch milliseconds (UTC).
    pub created_at: i64,
    /// Epoch milliseconds (UTC): 7 days after `created_at`.
    pub expires_at: i64,
}

impl Invitation {
    pub fn is_expired(&self) -> bool {
        self.status == InvitationStatus::Expired
    }
}

/// One invitation with its organization's name, as accepting and the invitee's notices need it.
#[derive(Debug, Clone)]
pub struct InvitationRecord {
    pub id: String,
    pub organization_id: String,
    pub organization_name: String,
    pub email: String,
    pub role: Role,
    pub created_at: i64,
    pub expires_at: i64,
    pub accepted_at: Option<i64>,
    pub revoked_at: Option<i64>,
}

impl InvitationRecord {
    pub fn status(&self, now: i64) -> InvitationStatus {
        if self.accepted_at.is_some() {
            InvitationStatus::Accepted
        } else if self.revoked_at.is_some() {
            InvitationStatus::Revoked
        } else if self.expires_at <= now {
            InvitationStatus::Expired
        } else {
            InvitationStatus::Pending
        }
    }

    pub fn view(&self, now: i64) -> Invitation {
        Invitation {
            id: self.id.clone(),
            email: self.email.clone(),
            role: self.role,
            status: self.status(now),
            created_at: self.created_at,
            expires_at: self.expires_at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(accepted_at: Option<i64>, revoked_at: Option<i64>) -> InvitationRecord {
        InvitationRecord {
            id: "i".into(),
            organization_id: "o".into(),
            organization_name: "Acme".into(),
            email: "a@example.com".into(),
            role: Role::Builder,
            created_at: 0,
            expires_at: VALID_MS,
            accepted_at,
            revoked_at,
        }
    }

    #[test]
    fn the_status_follows_acceptance_revocation_and_expiry() {
        assert_eq!(record(None, None).status(1), InvitationStatus::Pending);
        assert_eq!(record(None, None).status(VALID_MS), InvitationStatus::Expired);
        assert_eq!(record(Some(5), None).status(VALID_MS + 1), InvitationStatus::Accepted);
        assert_eq!(record(None, Some(5)).status(1), InvitationStatus::Revoked);
        assert_eq!(VALID_MS, 604_800_000);
    }
}
