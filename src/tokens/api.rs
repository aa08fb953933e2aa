//! JSON: API tokens.

use actix_web::web::{Data, Json, Path};
use actix_web::HttpResponse;
use serde::{Deserialize, Serialize};

use super::model::ApiToken;
use super::service::{self, NewToken};
use crate::api_route;
use crate::state::AppState;
use crate::web::error::Problem;
use crate::web::route::ApiRoute;
use crate::web::{ApiCaller, ApiError};

pub fn routes() -> Vec<ApiRoute> {
    vec![
        api_route!(GET "/api/v1/tokens" => list_tokens),
        api_route!(POST "/api/v1/tokens" => create_token),
        api_route!(DELETE "/api/v1/tokens/{id}" => revoke_token),
    ]
}

/// The organization's API tokens, revoked ones included; never their values (admins and owners).
#[utoipa::path(get, path = "/api/v1/tokens", tag = "tokens",
    responses((status = 200, body = [ApiToken]),
        (status = 401, description = "No valid API token or session: `https://agenticos.dev/problems/unauthenticated`.", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Only admins and owners manage API tokens: `https://agenticos.dev/problems/forbidden`.", body = Problem, content_type = "application/problem+json")))]
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
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct CreatedTokenBody {
    /// The token as lists show it.
    pub token: ApiToken,
    /// The token value. It is shown only in this response.
    pub value: String,
}

/// Creates an API token carrying a role no higher than the caller's; its value is in this
/// response only (admins and owners).
#[utoipa::path(post, path = "/api/v1/tokens", tag = "tokens", request_body = NewTokenBody,
    responses((status = 201, body = CreatedTokenBody),
        (status = 401, description = "No valid API token or session: `https://agenticos.dev/problems/unauthenticated`.", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Only admins and owners manage API tokens: `https://agenticos.dev/problems/forbidden`.", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A name missing or too long, an unknown role or one above the caller's: `https://agenticos.dev/problems/invalid-input`.", body = Problem, content_type = "application/problem+json")))]
pub async fn create_token(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    body: Json<NewTokenBody>,
) -> Result<HttpResponse, ApiError> {
    let b = body.into_inner();
    let created = service::create(&st.db, &c, NewToken { name: b.name, role: b.role }).await?;
    Ok(HttpResponse::Created().json(CreatedTokenBody { token: created.token, value: created.value }))
}

/// Revokes a token at once (admins and owners); revoking twice answers the same.
#[utoipa::path(delete, path = "/api/v1/tokens/{id}", tag = "tokens",
    params(("id" = String, Path, description = "token id")),
    responses((status = 200, body = ApiToken, description = "the revoked token"),
        (status = 401, description = "No valid API token or session: `https://agenticos.dev/problems/unauthenticated`.", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Only admins and owners manage API tokens: `https://agenticos.dev/problems/forbidden`.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such token in this organization: `https://agenticos.dev/problems/not-found`.", body = Problem, content_type = "application/problem+json")))]
pub async fn revoke_token(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    id: Path<String>,
) -> Result<Json<ApiToken>, ApiError> {
    Ok(Json(service::revoke(&st.db, &c, &id).await?))
}
