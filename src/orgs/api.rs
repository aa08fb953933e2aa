//! JSON: who am I, organizations, members.

use actix_web::web::{Data, Json, Path};
use actix_web::HttpResponse;
use serde::{Deserialize, Serialize};

use super::error::OrgError;
use super::invitations::error::InvitationError;
use super::invitations::model::Invitation;
use super::invitations::service::{self as invitations, NewInvitation};
use super::model::{Member, OrgChoice, Organization, Role};
use super::service;
use crate::access::Via;
use crate::api_route;
use crate::state::AppState;
use crate::web::openapi_errors::Problems;
use crate::web::route::ApiRoute;
use crate::web::{paths, ApiCaller, ApiError};

pub fn routes() -> Vec<ApiRoute> {
    vec![
        api_route!(GET "/api/v1/me" => me),
        api_route!(GET "/api/v1/organizations" => list_organizations),
        api_route!(POST "/api/v1/organizations" => create_organization),
        api_route!(GET "/api/v1/members" => list_members),
        api_route!(POST "/api/v1/members" => add_member),
        api_route!(PATCH "/api/v1/members/{id}" => change_member_role),
        api_route!(DELETE "/api/v1/members/{id}" => remove_member),
    ]
}

crate::error_subset! {
    /// The caller's organizations: rows only.
    pub struct Choosing: OrgError only OrgError::Internal(_)
}

crate::error_subset! {
    /// A new organization: anyone may found one; only its name is checked.
    pub struct Founding: OrgError only OrgError::Invalid(_) | OrgError::Internal(_)
}

crate::error_subset! {
    /// The members: admins and owners.
    pub struct Listing: OrgError only OrgError::Forbidden | OrgError::Internal(_)
}

crate::error_subset! {
    /// An invitation: its address and role are checked, and a pending one above the caller's role
    /// is not replaced; accepting it is another route.
    pub struct Inviting: InvitationError only InvitationError::Forbidden
        | InvitationError::Invalid(_)
        | InvitationError::Outranked { .. }
        | InvitationError::Internal(_)
}

crate::error_subset! {
    /// Removing a member takes no input to refuse.
    pub struct Removing: OrgError except OrgError::Invalid(_) | OrgError::AboveOwnRole(_)
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct OrgRef {
    /// The organization's id (a UUID).
    pub id: String,
    /// Its name.
    pub name: String,
}

/// The caller: account, organization and role, and how they authenticated.
#[derive(Serialize, utoipa::ToSchema)]
pub struct Me {
    /// The caller's account id (a token's: its creator's).
    pub user_id: String,
    /// The account's e-mail address.
    pub email: String,
    /// The organization the request acts in.
    pub organization: OrgRef,
    /// The role it acts with (a token's: the lower of its own and its creator's).
    pub role: Role,
    /// `session` or `token`.
    pub authenticated_by: String,
    /// The API token's name when `authenticated_by` is `token`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_name: Option<String>,
}

/// Who is calling: the account, the organization acted on, the role, and how they authenticated.
#[utoipa::path(get, path = "/api/v1/me", tag = "account",
    responses((status = 200, body = Me)))]
pub async fn me(ApiCaller(c): ApiCaller) -> Result<Json<Me>, ApiError> {
    let (by, token_name) = match &c.via {
        Via::Session { .. } | Via::CommandLine => ("session", None),
        Via::Token { name, .. } => ("token", Some(name.clone())),
    };
    Ok(Json(Me {
        user_id: c.user_id,
        email: c.email,
        organization: OrgRef { id: c.org_id, name: c.org_name },
        role: c.role,
        authenticated_by: by.to_string(),
        token_name,
    }))
}

/// The caller's organizations (a token sees only its own).
#[utoipa::path(get, path = "/api/v1/organizations", tag = "account",
    responses((status = 200, body = [OrgChoice]), Problems<Choosing>))]
pub async fn list_organizations(st: Data<AppState>, ApiCaller(c): ApiCaller) -> Result<Json<Vec<OrgChoice>>, ApiError> {
    match c.via {
        Via::Session { .. } | Via::CommandLine => Ok(Json(service::choices(&st.db, &c.user_id).await?)),
        // A token belongs to one organization and sees only it.
        Via::Token { .. } => Ok(Json(vec![OrgChoice {
            organization_id: c.org_id,
            name: c.org_name,
            role: c.role,
            requires_two_factor: false,
        }])),
    }
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewOrganization {
    /// 1 to 100 characters; no control or invisible characters.
    #[serde(default)]
    pub name: String,
}

/// Creates another organization with the caller as its owner. One person's organizations have
/// different names, compared without regard to case.
#[utoipa::path(post, path = "/api/v1/organizations", tag = "account", request_body = NewOrganization,
    responses((status = 201, body = Organization), Problems<Founding>))]
pub async fn create_organization(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    body: Json<NewOrganization>,
) -> Result<HttpResponse, ApiError> {
    let org = service::create(&st.db, &c.user_id, &c.email, &body.name).await?;
    Ok(HttpResponse::Created().json(org))
}

/// The organization's members and their roles (admins and owners).
#[utoipa::path(get, path = "/api/v1/members", tag = "members",
    responses((status = 200, body = [Member]), Problems<Listing>))]
pub async fn list_members(st: Data<AppState>, ApiCaller(c): ApiCaller) -> Result<Json<Vec<Member>>, ApiError> {
    Ok(Json(service::members(&st.db, &c).await?))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewMemberBody {
    /// The e-mail address to invite; trimmed and lower-cased.
    #[serde(default)]
    pub email: String,
    /// owner, admin, builder, operator or member.
    #[serde(default)]
    pub role: String,
}

/// An invitation just created: the same shape whether or not the e-mail address has an account.
#[derive(Serialize, utoipa::ToSchema)]
pub struct CreatedInvitationBody {
    /// The pending invitation.
    pub invitation: Invitation,
    /// The invitation's code (43 URL-safe characters). It is shown only in this answer: the
    /// console stores its SHA-256, never the code. Whoever has it can accept, so give it only to
    /// the invited person.
    pub invitation_code: String,
    /// The link to give the person: `AGENTICOS_PUBLIC_URL` + `/invitations/{invitation_code}`.
    /// It shows the organization, the role and the e-mail address; the person accepts signed in
    /// as that address, or by entering its account's password (or choosing one when new).
    pub accept_url: String,
}

/// Invites a person by e-mail with a role no higher than the caller's (admins and owners).
///
/// Nobody is added now and no account is created: the answer is a pending invitation, its
/// one-time code and the link to accept it, in the same shape whether or not the address has an
/// account. The invitation is valid for 7 days. Inviting an address again replaces its pending
/// invitation (the old code stops working). An address that is already a member is 422 on
/// `email`; a role above the caller's is 422 on `role`.
#[utoipa::path(post, path = "/api/v1/members", tag = "members", request_body = NewMemberBody,
    responses((status = 201, body = CreatedInvitationBody), Problems<Inviting>))]
pub async fn add_member(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    body: Json<NewMemberBody>,
) -> Result<HttpResponse, ApiError> {
    let b = body.into_inner();
    let created = invitations::invite(&st.db, &c, NewInvitation { email: b.email, role: b.role }).await?;
    let accept_url = paths::invitation_link(&st.config.http.public_url, &created.code);
    Ok(HttpResponse::Created().json(CreatedInvitationBody {
        invitation: created.invitation,
        invitation_code: created.code,
        accept_url,
    }))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RoleBody {
    /// owner, admin, builder, operator or member.
    #[serde(default)]
    pub role: String,
}

/// Changes a member's role: never someone who outranks the caller, never above the caller's own
/// role, never the last owner away from owner.
#[utoipa::path(patch, path = "/api/v1/members/{id}", tag = "members", request_body = RoleBody,
    params(("id" = String, Path, description = "membership id")),
    responses((status = 200, body = Member), Problems<OrgError>))]
pub async fn change_member_role(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    id: Path<String>,
    body: Json<RoleBody>,
) -> Result<Json<Member>, ApiError> {
    Ok(Json(service::change_role(&st.db, &st.token_callers, &c, &id, &body.role).await?))
}

/// Removes a member (never someone who outranks the caller, never the last owner).
#[utoipa::path(delete, path = "/api/v1/members/{id}", tag = "members",
    params(("id" = String, Path, description = "membership id")),
    responses((status = 200, body = crate::sandbox::workspaces::removal::Removal, description = "removed, with their `user` workspaces: how many, how many sandboxes at a host, destroyed now and still pending removal"),
        Problems<Removing>))]
pub async fn remove_member(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    let (_, removal) = service::remove_member_and_workspaces(&st, &c, &id).await?;
    Ok(HttpResponse::Ok().json(removal))
}
