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
        api_route!(POST "/api/v1/vault/secrets/{id}/bind" => bind_secret),
        api_route!(DELETE "/api/v1/vault/secrets/{id}" => delete_secret),
    ]
}

/// The organization's vault secrets by name (builders and above): each one's purpose, a hint of
/// its value and the address it is bound to, never a value.
#[utoipa::path(get, path = "/api/v1/vault/secrets", tag = "vault",
    responses((status = 200, body = [Secret]),
        (status = 401, description = "No valid API token or session: `https://agenticos.dev/problems/unauthenticated`.", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Only builders and above manage vault keys: `https://agenticos.dev/problems/forbidden`.", body = Problem, content_type = "application/problem+json")))]
pub async fn list_secrets(st: Data<AppState>, ApiCaller(c): ApiCaller) -> Result<Json<Vec<Secret>>, ApiError> {
    Ok(Json(service::list(&st, &c).await?))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewSecretBody {
    /// 1 to 100 characters, unique in the organization; no control or invisible characters.
    #[serde(default)]
    pub name: String,
    /// `sandboxd`, `daytona` or `other`: a host is sent only a key of its own kind's purpose.
    #[serde(default)]
    pub purpose: String,
    /// The value, at most 16 KiB; stored encrypted, never returned.
    #[serde(default)]
    #[schema(value_type = String, format = Password)]
    pub value: SecretString,
    /// The only host address the key is ever sent to (`http(s)://host:port`). Omitted: the key
    /// is sent nowhere until an admin or owner binds it (`/bind`, or by saving a connection with
    /// it).
    #[serde(default)]
    pub address: Option<String>,
}

/// Stores a secret, encrypted (builders and above); audited without its value.
#[utoipa::path(post, path = "/api/v1/vault/secrets", tag = "vault", request_body = NewSecretBody,
    responses((status = 201, body = Secret),
        (status = 401, description = "No valid API token or session: `https://agenticos.dev/problems/unauthenticated`.", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Only builders and above manage vault keys: `https://agenticos.dev/problems/forbidden`.", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A name taken or missing, an unknown purpose, an empty or too long value, a line break (CR or LF) in a host's key (purpose `sandboxd` or `daytona`), a bad or blocked address: `https://agenticos.dev/problems/invalid-input`, each message at its field.", body = Problem, content_type = "application/problem+json")))]
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

/// One secret, without its value (builders and above).
#[utoipa::path(get, path = "/api/v1/vault/secrets/{id}", tag = "vault",
    params(("id" = String, Path, description = "secret id")),
    responses((status = 200, body = Secret),
        (status = 401, description = "No valid API token or session: `https://agenticos.dev/problems/unauthenticated`.", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Only builders and above manage vault keys: `https://agenticos.dev/problems/forbidden`.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such secret in this organization: `https://agenticos.dev/problems/not-found`.", body = Problem, content_type = "application/problem+json")))]
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
    /// The new value, at most 16 KiB; never returned.
    #[serde(default)]
    #[schema(value_type = String, format = Password)]
    pub value: SecretString,
}

/// Replaces a secret's value (builders and above); its name, purpose and bound address stay, and
/// connections using it send the new value from now on. Audited without the value.
#[utoipa::path(post, path = "/api/v1/vault/secrets/{id}/rotate", tag = "vault", request_body = RotateBody,
    params(("id" = String, Path, description = "secret id")),
    responses((status = 200, body = Secret),
        (status = 401, description = "No valid API token or session: `https://agenticos.dev/problems/unauthenticated`.", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Only builders and above manage vault keys: `https://agenticos.dev/problems/forbidden`.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such secret in this organization: `https://agenticos.dev/problems/not-found`.", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "An empty or too long value, or a line break (CR or LF) in a host's key (purpose `sandboxd` or `daytona`): `https://agenticos.dev/problems/invalid-input`, at `value`.", body = Problem, content_type = "application/problem+json")))]
pub async fn rotate_secret(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    id: Path<String>,
    body: Json<RotateBody>,
) -> Result<Json<Secret>, ApiError> {
    Ok(Json(service::rotate(&st, &c, &id, body.into_inner().value).await?))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BindBody {
    /// The only host address the key is sent to from now on (`http(s)://host:port`).
    #[serde(default)]
    pub address: String,
}

/// Binds a key stored without an address to one (admins and owners): from now on it is sent to
/// that address and nowhere else. Binding is this deliberate act (or an admin's or owner's save
/// of a connection with the key); a probe or a builder's save never binds a key. Audited as
/// `vault.secret_bound`. A bound key is never moved.
#[utoipa::path(post, path = "/api/v1/vault/secrets/{id}/bind", tag = "vault", request_body = BindBody,
    params(("id" = String, Path, description = "secret id")),
    responses((status = 200, body = Secret),
        (status = 401, description = "No valid API token or session: `https://agenticos.dev/problems/unauthenticated`.", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Only admins and owners bind a stored key to an address: `https://agenticos.dev/problems/forbidden`.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such secret in this organization: `https://agenticos.dev/problems/not-found`.", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A bad or blocked address, or a key bound already (it is never moved): `https://agenticos.dev/problems/invalid-input`, at `address`.", body = Problem, content_type = "application/problem+json")))]
pub async fn bind_secret(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    id: Path<String>,
    body: Json<BindBody>,
) -> Result<Json<Secret>, ApiError> {
    Ok(Json(service::bind(&st, &c, &id, &body.into_inner().address).await?))
}

/// Deletes a secret no connection uses as its key and no agent's manifest gives its commands
/// (builders and above).
#[utoipa::path(delete, path = "/api/v1/vault/secrets/{id}", tag = "vault",
    params(("id" = String, Path, description = "secret id")),
    responses((status = 204, description = "deleted"),
        (status = 401, description = "No valid API token or session: `https://agenticos.dev/problems/unauthenticated`.", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Only builders and above manage vault keys: `https://agenticos.dev/problems/forbidden`.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such secret in this organization: `https://agenticos.dev/problems/not-found`.", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "A connection uses the secret as its key, or an agent's manifest gives it to its commands (an `env` entry): the detail names them. `https://agenticos.dev/problems/conflict`.", body = Problem, content_type = "application/problem+json")))]
pub async fn delete_secret(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    service::delete(&st, &c, &id).await?;
    Ok(HttpResponse::NoContent().finish())
}
