//! JSON: vault secrets. No route returns a value.

use actix_web::web::{Data, Json, Path};
use actix_web::HttpResponse;
use secrecy::SecretString;
use serde::Deserialize;

use super::error::VaultError;
use super::model::Secret;
use super::service::{self, NewSecret};
use crate::api_route;
use crate::state::AppState;
use crate::web::openapi_errors::Problems;
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

crate::error_subset! {
    /// The secrets: builders and above.
    pub struct Listing: VaultError only VaultError::Forbidden | VaultError::Internal(_)
}

crate::error_subset! {
    /// One secret: no input to refuse, and it is not deleted.
    pub struct Reading: VaultError except VaultError::Invalid(_) | VaultError::InUse(_)
}

crate::error_subset! {
    /// A secret created or changed, never deleted.
    pub struct Changing: VaultError except VaultError::InUse(_)
}

crate::error_subset! {
    /// Deleting: refused while a connection or a manifest uses the secret.
    pub struct Deleting: VaultError except VaultError::Invalid(_)
}

/// The organization's vault secrets by name (builders and above): each one's purpose, a hint of
/// its value and the address it is bound to, never a value.
#[utoipa::path(get, path = "/api/v1/vault/secrets", tag = "vault",
    responses((status = 200, body = [Secret]), Problems<Listing>))]
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
    responses((status = 201, body = Secret), Problems<Changing>))]
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
    responses((status = 200, body = Secret), Problems<Reading>))]
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
    responses((status = 200, body = Secret), Problems<Changing>))]
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
    responses((status = 200, body = Secret), Problems<Changing>))]
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
    responses((status = 204, description = "deleted"), Problems<Deleting>))]
pub async fn delete_secret(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    service::delete(&st, &c, &id).await?;
    Ok(HttpResponse::NoContent().finish())
}
