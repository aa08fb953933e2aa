//! JSON: the organization's pending invitations. Creating one is `POST /api/v1/members`
//! (orgs/api.rs), since that is how a person is added.

use actix_web::web::{Data, Json, Path};

use super::error::InvitationError;
use super::model::Invitation;
use super::service;
use crate::api_route;
use crate::state::AppState;
use crate::web::openapi_errors::Problems;
use crate::web::route::ApiRoute;
use crate::web::{ApiCaller, ApiError};

/// Registered before `/api/v1/members/{id}`: the edge reads the first pattern a path matches,
/// and `invitations` is no membership id.
pub fn routes() -> Vec<ApiRoute> {
    vec![
        api_route!(GET "/api/v1/members/invitations" => list_invitations),
        api_route!(DELETE "/api/v1/members/invitations/{id}" => revoke_invitation),
    ]
}

crate::error_subset! {
    /// The pending invitations: admins and owners.
    pub struct Listing: InvitationError only InvitationError::Forbidden | InvitationError::Internal(_)
}

crate::error_subset! {
    /// Revoking: never one accepted already, or one above the caller's role.
    pub struct Revoking: InvitationError only InvitationError::NotFound
        | InvitationError::Forbidden
        | InvitationError::AlreadyAccepted
        | InvitationError::Outranked { .. }
        | InvitationError::Internal(_)
}

/// The organization's pending invitations, newest first (admins and owners).
///
/// Pending means neither accepted nor revoked; one past its `expires_at` is listed with status
/// `expired` until it is revoked or the address is invited again. Codes are never listed: each is
/// shown once, in the answer of `POST /api/v1/members`.
#[utoipa::path(get, path = "/api/v1/members/invitations", tag = "members",
    responses((status = 200, body = [Invitation]), Problems<Listing>))]
pub async fn list_invitations(st: Data<AppState>, ApiCaller(c): ApiCaller) -> Result<Json<Vec<Invitation>>, ApiError> {
    Ok(Json(service::list(&st.db, &c).await?))
}

/// Revokes a pending invitation: its link and code stop working at once (admins and owners).
///
/// Answers the invitation with status `revoked`; revoking it again answers the same. Another
/// organization's invitation is 404; an accepted one is 409 (remove the member instead), as is
/// an invitation carrying a role above the caller's.
#[utoipa::path(delete, path = "/api/v1/members/invitations/{id}", tag = "members",
    params(("id" = String, Path, description = "invitation id")),
    responses((status = 200, body = Invitation, description = "the revoked invitation"), Problems<Revoking>))]
pub async fn revoke_invitation(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    id: Path<String>,
) -> Result<Json<Invitation>, ApiError> {
    Ok(Json(service::revoke(&st.db, &c, &id).await?))
}
