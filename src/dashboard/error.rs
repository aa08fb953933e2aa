//! What building the home page can come to.

use crate::orgs::invitations::error::InvitationError;
use crate::sandbox::connections::error::ConnectionError;
use crate::sandbox::running::error::RunningError;

#[derive(Debug, thiserror::Error)]
pub enum DashboardError {
    /// The capacity cards could not be read.
    #[error(transparent)]
    Capacity(#[from] RunningError),
    /// The "is everything OK?" figures could not be read.
    #[error(transparent)]
    Health(#[from] ConnectionError),
    /// The caller's pending invitations could not be read.
    #[error(transparent)]
    Invitations(#[from] InvitationError),
    /// What the organization has made so far (Getting started) could not be read.
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl From<crate::db::DbError> for DashboardError {
    fn from(e: crate::db::DbError) -> Self {
        DashboardError::Internal(e.into())
    }
}
