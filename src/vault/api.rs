//! JSON: vault secrets. No route returns a value.

use actix_web::web::{Data, Json, Path};
use actix_web::HttpResponse;
use secrecy::SecretString;
use serde::Deserialize;

use super::model::Secret;
use super::service::{self, NewSecret};
use crate::api_route;
use crate::state::AppState;
use crate::web::error::Problem;
use crate::web::route::ApiRoute;
use crate::web::{ApiCaller, ApiError};

pub fn routes() -> Vec<ApiRoute> {
    vec![
        api_route!(GET "/api/v1/vault/secrets" => list_secrets),
        api_route!(POST "/api/v1/vault/secrets" => create_secret),
        api_route!(GET "/api/v1/vault/secrets/{id}" => get_secret),
        api_route!(POST "/api/v1/vault/secrets/{id}/rotate" => rotate_secret),
        api_route!(DELETE "/api/v1/vault/secrets/{id}" => delete_secret),
    ]
}

#[utoipa::path(get, path = "/api/v1/vault/secrets", tag = "vault",
    responses((status = 200, body = [Secret]), (status = 403, body = Problem, content_type = "application/problem+json")))]
pub async fn list_secrets(st: Data<AppState>, ApiCaller(c): ApiCaller) -> Result<Json<Vec<Secret>>, ApiError> {
    Ok(Json(service::list(&st, &c).await?))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewSecretBody {
    #[serde(default)]
    pub name: String,
    /// sandboxd, daytona or other.
    #[serde(default)]
    pub purpose: String,
    #[serde(default)]
    #[schema(value_type = String, format = Password)]
    pub value: SecretString,
    /// The only host address the key is ever sent to (`http(s)://host:port`). Omitted: the key
    /// is bound to the first address it is saved with or sent to.
    #[serde(default)]
    pub address: Option<String>,
}

#[utoipa::path(post, path = "/api/v1/vault/secrets", tag = "vault", request_body = NewSecretBody,
    responses((status = 201, body = Secret), (status = 422, body = Problem, content_type = "application/problem+json")))]
pub async fn create_secret(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    body: Json<NewSecretBody>,
) -> Result<HttpResponse, ApiError> {
    let b = body.into_inner();
    let input = NewSecret { name: b.name, purpose: b.purpose, value: b.value, address: b.address.unwrap_or_default() };
    let s = service::create(&st, &c, input).await?;
    Ok(HttpResponse::Created().json(s))
}

#[utoipa::path(get, path = "/api/v1/vault/secrets/{id}", tag = "vault",
    params(("id" = String, Path, description = "secret id")),
    responses((status = 200, body = Secret), (status = 404, body = Problem, content_type = "application/problem+json")))]
pub async fn get_secret(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    id: Path<String>,
) -> Result<Json<Secret>, ApiError> {
    Ok(Json(service::get(&st, &c, &id).await?))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RotateBody {
    #[serde(default)]
    #[schema(value_type = String, format = Password)]
    pub value: SecretString,
}

#[utoipa::path(post, path = "/api/v1/vault/secrets/{id}/rotate", tag = "vault", request_body = RotateBody,
    params(("id" = String, Path, description = "secret id")),
    responses((status = 200, body = Secret), (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json")))]
pub async fn rotate_secret(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    id: Path<String>,
    body: Json<RotateBody>,
) -> Result<Json<Secret>, ApiError> {
    Ok(Json(service::rotate(&st, &c, &id, body.into_inner().value).await?))
}

#[utoipa::path(delete, path = "/api/v1/vault/secrets/{id}", tag = "vault",
    params(("id" = String, Path, description = "secret id")),
    responses((status = 204), (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, body = Problem, content_type = "application/problem+json",
            description = "a connection uses the secret as its key (the detail names it)")))]
pub async fn delete_secret(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    service::delete(&st, &c, &id).await?;
    Ok(HttpResponse::NoContent().finish())
}
