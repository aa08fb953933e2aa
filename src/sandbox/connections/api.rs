//! JSON: `/api/v1/sandbox-connections`.

use actix_web::web::{Data, Json, Path, Query};
use actix_web::HttpResponse;
use secrecy::SecretString;
use serde::Deserialize;

use super::model::Connection;
use super::service::{self, ConnectionInput, Probe, ProbeInput};
use crate::api_route;
use crate::state::AppState;
use crate::web::error::Problem;
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

/// The organization's sandbox connections, the default first, then by name (operators and
/// above, as the Sandboxes page): each host's kind, address, key (its vault name, never a value),
/// default runtime, and whether it is switched on.
#[utoipa::path(get, path = "/api/v1/sandbox-connections", tag = "sandbox connections",
    responses((status = 200, body = [Connection]),
        (status = 401, description = "No valid API token or session: `https://agenticos.dev/problems/unauthenticated`.", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "A member may not see sandbox hosts: `https://agenticos.dev/problems/forbidden`.", body = Problem, content_type = "application/problem+json")))]
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
    /// `http(s)://host:port` (required for sandboxd): no credentials, query or fragment, never a
    /// link-local or cloud-metadata address.
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
    /// The runtime alias new workspaces get (lower-case letters, digits and dashes); absent or
    /// empty: the host's own default.
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
    responses((status = 201, body = Connection),
        (status = 401, description = "No valid API token or session: `https://agenticos.dev/problems/unauthenticated`.", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Only builders and above add connections: `https://agenticos.dev/problems/forbidden`.", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A name taken or missing, an unknown kind (a Daytona connection is refused at `kind`: not supported yet), a bad or blocked address, a runtime alias that is not one, a blank `new_key`, a vault key of another purpose or saved for another address (at `credential_secret_id`): `https://agenticos.dev/problems/invalid-input`, each message at its field. Or the host's check failed: `https://agenticos.dev/problems/host-check-failed`, the reason at `address`, `new_key`, `credential_secret_id` or `default_runtime`; send `save_anyway: true` to save it anyway.", body = Problem, content_type = "application/problem+json")))]
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
    responses((status = 200, body = Connection),
        (status = 401, description = "No valid API token or session: `https://agenticos.dev/problems/unauthenticated`.", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "A member may not see sandbox hosts: `https://agenticos.dev/problems/forbidden`.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such connection in this organization: `https://agenticos.dev/problems/not-found`.", body = Problem, content_type = "application/problem+json")))]
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
    responses((status = 200, body = Connection),
        (status = 401, description = "No valid API token or session: `https://agenticos.dev/problems/unauthenticated`.", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Only builders and above edit connections: `https://agenticos.dev/problems/forbidden`.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such connection in this organization: `https://agenticos.dev/problems/not-found`.", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "As for adding a connection, and a new address without its key (at `new_key`): `https://agenticos.dev/problems/invalid-input`, each message at its field; or the host's check failed: `https://agenticos.dev/problems/host-check-failed`, the reason at its field (`save_anyway: true` saves it anyway).", body = Problem, content_type = "application/problem+json")))]
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
    responses((status = 204, description = "deleted"),
        (status = 401, description = "No valid API token or session: `https://agenticos.dev/problems/unauthenticated`.", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Only builders and above delete connections: `https://agenticos.dev/problems/forbidden`.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such connection in this organization: `https://agenticos.dev/problems/not-found`.", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Agents are pinned to the connection (the detail names them), or sandboxes may still run at its host and `forget_sandboxes` does not repeat their count (the detail names it and what to do): `https://agenticos.dev/problems/conflict`.", body = Problem, content_type = "application/problem+json")))]
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
    /// `http(s)://host:port` of the host to ask.
    #[serde(default)]
    pub address: String,
    /// A vault key of purpose `sandboxd`: sent only when it was saved for this address (an unbound
    /// key is bound to it now); otherwise 422 naming this field and no request is sent.
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
        (status = 401, description = "No valid API token or session: `https://agenticos.dev/problems/unauthenticated`.", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Only builders and above probe hosts: `https://agenticos.dev/problems/forbidden`.", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A bad or blocked address (also one whose name resolves to a link-local or cloud-metadata address), a vault key of another purpose or saved for another address (at `credential_secret_id`): `https://agenticos.dev/problems/invalid-input`; no request was sent.", body = Problem, content_type = "application/problem+json")))]
pub async fn probe_address(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    body: Json<ProbeBody>,
) -> Result<Json<Probe>, ApiError> {
    let b = body.into_inner();
    let input = ProbeInput {
        address: b.address,
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
        (status = 401, description = "No valid API token or session: `https://agenticos.dev/problems/unauthenticated`.", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Only builders and above probe hosts: `https://agenticos.dev/problems/forbidden`.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such connection in this organization: `https://agenticos.dev/problems/not-found`.", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The stored key may not go to the connection's address (another purpose, saved for another address, gone from the vault): `https://agenticos.dev/problems/conflict`; no request was sent.", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "The connection has no address (Daytona), or its name now resolves to a blocked address: `https://agenticos.dev/problems/invalid-input`, at `address`; no request was sent.", body = Problem, content_type = "application/problem+json")))]
pub async fn probe_connection(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    id: Path<String>,
) -> Result<Json<Probe>, ApiError> {
    Ok(Json(service::probe_saved(&st, &c, &id).await?))
}
