//! JSON: API tokens.

use actix_web::web::{Data, Json, Path};
use actix_web::HttpResponse;
use serde::{Deserialize, Serialize};

use super::error::TokenError;
use super::model::ApiToken;
use super::service::{self, NewToken};
use crate::api_route;
use crate::state::AppState;
use crate::web::openapi_errors::Problems;
use crate::web::route::ApiRoute;
use crate::web::{ApiCaller, ApiError};

pub fn routes() -> Vec<ApiRoute> {
    vec![
        api_route!(GET "/api/v1/tokens" => list_tokens),
        api_route!(POST "/api/v1/tokens" => create_token),
        api_route!(DELETE "/api/v1/tokens/{id}" => revoke_token),
    ]
}

crate::error_subset! {
    /// The tokens: admins and owners.
    pub struct Listing: TokenError only TokenError::Forbidden | TokenError::Internal(_)
}

crate::error_subset! {
    /// A new token: nothing to find.
    pub struct Creating: TokenError except TokenError::NotFound
}

crate::error_subset! {
    /// Revoking takes no input to refuse.
    pub struct Revoking: TokenError except TokenError::Invalid(_)
}

/// The organization's API tokens, revoked ones included; never their values (admins and owners).
#[utoipa::path(get, path = "/api/v1/tokens", tag = "tokens",
    responses((status = 200, body = [ApiToken]), Problems<Listing>))]
pub async fn list_tokens(st: Data<AppState>, ApiCaller(c): ApiCaller) -> Result<Json<Vec<ApiToken>>, ApiError> {
    Ok(Json(service::list(&st.db, &c).await?))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewTokenBody {
    /// 1 to 100 characters; no control or invisible characters.
    #[serde(default)]
    pub name: String,
    /// The role the token acts with; at most the creator's own.
    #[serde(default)]
    pub role: String,
    /// What the token is for, where it is used: optional, at most 300 characters on one line.
    #[serde(default)]
    pub description: String,
    /// How many days the token works: 30, 90 or 365; absent or null, it never expires. Once
    /// expired it is a 401 `token-expired` problem everywhere.
    #[serde(default)]
    pub expires_in_days: Option<i64>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct CreatedTokenBody {
    /// The token as lists show it.
    pub token: ApiToken,
    /// The token value. It is shown only in this response.
    pub value: String,
}

/// Creates an API token carrying a role no higher than the caller's, for 30, 90 or 365 days or
/// without expiry; its value is in this response only (admins and owners).
#[utoipa::path(post, path = "/api/v1/tokens", tag = "tokens", request_body = NewTokenBody,
    responses((status = 201, body = CreatedTokenBody), Problems<Creating>))]
pub async fn create_token(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    body: Json<NewTokenBody>,
) -> Result<HttpResponse, ApiError> {
    let b = body.into_inner();
    let expiry = b.expires_in_days.map(|d| (d, "expires_in_days"));
    let created = service::create_expiring(
        &st.db,
        &c,
        NewToken { name: b.name, role: b.role, description: b.description },
        expiry,
    )
    .await?;
    Ok(HttpResponse::Created().json(CreatedTokenBody { token: created.token, value: created.value }))
}

/// Revokes a token at once (admins and owners); revoking twice answers the same.
#[utoipa::path(delete, path = "/api/v1/tokens/{id}", tag = "tokens",
    params(("id" = String, Path, description = "token id")),
    responses((status = 200, body = ApiToken, description = "the revoked token"), Problems<Revoking>))]
pub async fn revoke_token(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    id: Path<String>,
) -> Result<Json<ApiToken>, ApiError> {
    Ok(Json(service::revoke(&st.db, &st.token_callers, &c, &id).await?))
}
