//! JSON: `/api/v1/sandbox-connections`.

use actix_web::web::{Data, Json, Path, Query};
use actix_web::HttpResponse;
use secrecy::SecretString;
use serde::Deserialize;

use super::error::ConnectionError;
use super::model::Connection;
use super::service::{self, ConnectionInput, Probe, ProbeInput};
use crate::api_route;
use crate::state::AppState;
use crate::web::openapi_errors::Problems;
use crate::web::route::ApiRoute;
use crate::web::{ApiCaller, ApiError};

pub fn routes() -> Vec<ApiRoute> {
    vec![
        api_route!(GET "/api/v1/sandbox-connections" => list_connections),
        api_route!(POST "/api/v1/sandbox-connections" => create_connection),
        api_route!(POST "/api/v1/sandbox-connections/probe" => probe_address),
        // Before `{id}`, which would also match it.
        api_route!(GET "/api/v1/sandbox-connections/discovered" => super::discovered_api::discovered_containers),
        api_route!(GET "/api/v1/sandbox-connections/{id}" => get_connection),
        api_route!(PATCH "/api/v1/sandbox-connections/{id}" => update_connection),
        api_route!(DELETE "/api/v1/sandbox-connections/{id}" => delete_connection),
        api_route!(POST "/api/v1/sandbox-connections/{id}/probe" => probe_connection),
    ]
}

crate::error_subset! {
    /// Listing reads our rows only: no host is asked.
    pub struct Listing: ConnectionError only ConnectionError::Forbidden | ConnectionError::Internal(_)
}

crate::error_subset! {
    /// Reading one connection reads our rows only: no host is asked.
    pub struct Reading: ConnectionError only
        ConnectionError::NotFound | ConnectionError::Forbidden | ConnectionError::Internal(_)
}

crate::error_subset! {
    /// Deleting asks no host: refused while an agent is pinned to the connection or its key is
    /// used, or while sandboxes may still run there.
    pub struct Deleting: ConnectionError only ConnectionError::NotFound
        | ConnectionError::Forbidden
        | ConnectionError::InUse(_)
        | ConnectionError::SandboxesLeft { .. }
        | ConnectionError::Internal(_)
}

/// The organization's sandbox connections, the default first, then by name (operators and
/// above, as the Sandboxes page): each host's kind, address, key (its vault name, never a value),
/// default runtime, and whether it is switched on.
#[utoipa::path(get, path = "/api/v1/sandbox-connections", tag = "sandbox connections",
    responses((status = 200, body = [Connection]), Problems<Listing>))]
pub async fn list_connections(st: Data<AppState>, ApiCaller(c): ApiCaller) -> Result<Json<Vec<Connection>>, ApiError> {
    Ok(Json(service::list(&st, &c).await?))
}

/// A new connection. The credential is a vault secret id, or a token in `new_key` that is stored in
/// the vault in the same transaction.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewConnection {
    /// 1 to 100 characters, unique in the organization; no control or invisible characters.
    #[serde(default)]
    pub name: String,
    /// `sandboxd` (default) or `daytona`.
    #[serde(default)]
    pub kind: String,
    /// `http(s)://host:port` (required for sandboxd; for Daytona its API URL, absent:
    /// `https://app.daytona.io/api`): no credentials, query or fragment, never a link-local or
    /// cloud-metadata address.
    #[serde(default)]
    pub address: String,
    /// A vault key of the host's purpose (`sandboxd`, `daytona` for Daytona) saved for this
    /// address, or not yet bound to any (it is bound to this one now).
    #[serde(default)]
    pub credential_secret_id: Option<String>,
    /// The host's token, stored in the vault as "<name> token" and bound to this address; it is
    /// never returned. Without it or a `credential_secret_id`, one of this deployment's compose
    /// addresses (`SANDBOXD_LOCAL_ADDRESSES`) gets its own `SANDBOXD_TOKEN`, when set.
    #[serde(default)]
    #[schema(value_type = Option<String>, format = Password)]
    pub new_key: Option<SecretString>,
    /// The runtime alias new workspaces get (lower-case letters, digits and dashes); for Daytona
    /// a snapshot name (checked to exist). Absent or empty: the host's own default (Daytona: the
    /// organization's default snapshot).
    #[serde(default)]
    pub default_runtime: Option<String>,
    /// The host is checked before the connection is saved (its key, its routes, the default
    /// runtime); a failed check answers 422 with the reason at its field unless this is `true`.
    #[serde(default)]
    pub save_anyway: bool,
}

/// Registers a sandbox host (builders and above). The organization's first connection is its
/// default. A vault key given is checked (its purpose, the address it was saved for); one bound to
/// no address yet is bound to this one.
#[utoipa::path(post, path = "/api/v1/sandbox-connections", tag = "sandbox connections", request_body = NewConnection,
    responses((status = 201, body = Connection), Problems<ConnectionError>))]
pub async fn create_connection(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    body: Json<NewConnection>,
) -> Result<HttpResponse, ApiError> {
    let b = body.into_inner();
    let input = ConnectionInput {
        name: b.name,
        kind: if b.kind.is_empty() { "sandboxd".into() } else { b.kind },
        address: b.address,
        credential_secret_id: b.credential_secret_id.unwrap_or_default(),
        new_key: b.new_key,
        default_runtime: b.default_runtime.unwrap_or_default(),
        save_anyway: b.save_anyway,
    };
    let conn = service::create(&st, &c, input).await?;
    Ok(HttpResponse::Created().json(conn))
}

/// One connection (operators and above).
#[utoipa::path(get, path = "/api/v1/sandbox-connections/{id}", tag = "sandbox connections",
    params(("id" = String, Path, description = "connection id")),
    responses((status = 200, body = Connection), Problems<Reading>))]
pub async fn get_connection(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    id: Path<String>,
) -> Result<Json<Connection>, ApiError> {
    Ok(Json(service::get(&st, &c, &id).await?))
}

/// A partial update: absent fields keep their value.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConnectionPatch {
    /// A new name, unique in the organization.
    pub name: Option<String>,
    /// A new address needs the host's key again (`new_key`), or a vault key saved for it: a
    /// stored key is sent only to the address it was saved for.
    pub address: Option<String>,
    /// A vault key of purpose `sandboxd` (`daytona` for Daytona) saved for this address, or not
    /// yet bound to any (it is bound to this one). Absent keeps the stored key.
    pub credential_secret_id: Option<String>,
    /// The host's token again (required with a new address unless a vault key saved for it is
    /// chosen): stored in the vault, bound to the address; never returned.
    #[schema(value_type = Option<String>, format = Password)]
    pub new_key: Option<SecretString>,
    /// An alias, or `""` for the host's own default.
    pub default_runtime: Option<String>,
    /// Switched on or off: off stops new work, not the destroying of its sandboxes.
    pub is_enabled: Option<bool>,
    /// `true` makes it the organization's default (there is always exactly one).
    pub is_default: Option<bool>,
    /// An edit of the settings above checks the host first, as a new connection does: `true`
    /// saves it even when the check fails.
    pub save_anyway: Option<bool>,
}

/// Changes a connection (builders and above): absent fields keep their value. A stored key is
/// sent only to the address it was saved for, so a new address needs the host's key again
/// (`new_key`) or a vault key saved for it. An address change is audited with both addresses.
#[utoipa::path(patch, path = "/api/v1/sandbox-connections/{id}", tag = "sandbox connections", request_body = ConnectionPatch,
    params(("id" = String, Path, description = "connection id")),
    responses((status = 200, body = Connection), Problems<ConnectionError>))]
pub async fn update_connection(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    id: Path<String>,
    body: Json<ConnectionPatch>,
) -> Result<Json<Connection>, ApiError> {
    let b = body.into_inner();
    let conn = service::get(&st, &c, &id).await?;
    let edits = b.name.is_some()
        || b.address.is_some()
        || b.credential_secret_id.is_some()
        || b.new_key.is_some()
        || b.default_runtime.is_some();
    let settings = edits.then(|| ConnectionInput {
        name: b.name.unwrap_or(conn.name.clone()),
        kind: conn.kind.as_str().into(),
        address: b.address.unwrap_or(conn.address.clone().unwrap_or_default()),
        // Absent keeps the stored key, while it may go to the (new) address.
        credential_secret_id: b.credential_secret_id.unwrap_or_default(),
        new_key: b.new_key,
        default_runtime: b.default_runtime.unwrap_or(conn.default_runtime.clone().unwrap_or_default()),
        save_anyway: b.save_anyway.unwrap_or(false),
    });
    let change = service::Change { settings, enabled: b.is_enabled, make_default: b.is_default == Some(true) };
    let conn = service::change(&st, &c, &id, change).await?;
    Ok(Json(conn))
}

/// `?delete_key=true`: the connection's key goes too.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DeleteQuery {
    /// Delete the connection's vault key with it, unless another connection uses that key (then
    /// it is kept). Default false.
    #[serde(default)]
    pub delete_key: bool,
    /// Needed when sandboxes may still run at the host (removed ones pending their destroy, and
    /// workspaces holding a session): the count the 409 names, repeated to confirm that they were
    /// deleted at the host by hand. Their tombstones are forgotten and the audit event
    /// (`connection.deleted`) carries the count. Another number is refused like none.
    #[serde(default)]
    pub forget_sandboxes: Option<i64>,
}

/// Deletes a connection no agent is pinned to (builders and above); its vault key stays unless
/// `delete_key=true` and no other connection uses it (both in one transaction, audited). When it
/// was the default, the oldest remaining connection becomes the default.
#[utoipa::path(delete, path = "/api/v1/sandbox-connections/{id}", tag = "sandbox connections",
    params(("id" = String, Path, description = "connection id"), DeleteQuery),
    responses((status = 204, description = "deleted"), Problems<Deleting>))]
pub async fn delete_connection(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    id: Path<String>,
    query: Query<DeleteQuery>,
) -> Result<HttpResponse, ApiError> {
    service::delete(&st, &c, &id, query.delete_key, query.forget_sandboxes).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Ask a host before saving it. A typed address is asked only with a key.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProbeBody {
    /// `sandboxd` (default) or `daytona`.
    #[serde(default)]
    pub kind: String,
    /// `http(s)://host:port` of the host to ask; for Daytona its API URL (absent:
    /// `https://app.daytona.io/api`).
    #[serde(default)]
    pub address: String,
    /// Daytona only: the snapshot new sandboxes would start from, checked to exist (absent: the
    /// Daytona organization's default snapshot).
    #[serde(default)]
    pub default_runtime: Option<String>,
    /// A vault key of the host's purpose (`sandboxd`, `daytona`): sent only when it was saved for
    /// this address; otherwise 422 naming this field and no request is sent.
    #[serde(default)]
    pub credential_secret_id: Option<String>,
    /// A token to try, sent only to this address and not stored.
    #[serde(default)]
    #[schema(value_type = Option<String>, format = Password)]
    pub new_key: Option<SecretString>,
}

/// "Test this host" before saving it (builders and above): asks the host's policy and routes with
/// a key — a pasted one, a vault key saved for this address, or this deployment's own token for
/// its compose addresses; without a key no request is sent (`not_asked`). A host that fails
/// answers 200 with `status` `failed` and why. Every probe is audited (`connection.probed`) with
/// its address and outcome, a refused one with the reason; never a key.
#[utoipa::path(post, path = "/api/v1/sandbox-connections/probe", tag = "sandbox connections", request_body = ProbeBody,
    responses((status = 200, body = Probe, description = "`status` says whether the host was asked and what it answered"),
        Problems<ConnectionError>))]
pub async fn probe_address(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    body: Json<ProbeBody>,
) -> Result<Json<Probe>, ApiError> {
    let b = body.into_inner();
    let input = ProbeInput {
        kind: b.kind,
        address: b.address,
        default_runtime: b.default_runtime,
        credential_secret_id: b.credential_secret_id.unwrap_or_default(),
        new_key: b.new_key,
        connection_id: None,
    };
    Ok(Json(service::probe(&st, &c, input).await?))
}

/// Asks a saved connection's host with its stored key (builders and above), only when that key
/// is of the host's purpose and was saved for the connection's address. Audited like a probe of a
/// typed address.
#[utoipa::path(post, path = "/api/v1/sandbox-connections/{id}/probe", tag = "sandbox connections",
    params(("id" = String, Path, description = "connection id")),
    responses((status = 200, body = Probe, description = "`status` says whether the host was asked and what it answered"),
        Problems<ConnectionError>))]
pub async fn probe_connection(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    id: Path<String>,
) -> Result<Json<Probe>, ApiError> {
    Ok(Json(service::probe_saved(&st, &c, &id).await?))
}
