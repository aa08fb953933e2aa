//! The `/api/v1` surface: every route is registered from the table below, and the OpenAPI
//! document is generated from the same handlers' annotations; a test compares the two.

use actix_web::{web, HttpResponse};
use utoipa::OpenApi;

use crate::web::error::{Kind, Problem};
use crate::web::openapi_errors::problem_response;
use crate::web::route::ApiRoute;

/// Every API route of the product.
pub fn routes() -> Vec<ApiRoute> {
    let mut all = Vec::new();
    // First: a request walks the table in order and every `{param}` route it passes costs a
    // pattern match, so the routes an agent runtime calls on every operation come before the rest.
    all.extend(crate::sandbox::workspaces::api::routes());
    // Before `/api/v1/members/{id}`, which would also match `/api/v1/members/invitations`.
    all.extend(crate::orgs::invitations::api::routes());
    all.extend(crate::orgs::api::routes());
    all.extend(crate::tokens::api::routes());
    all.extend(crate::vault::api::routes());
    all.extend(crate::audit::api::routes());
    all.extend(crate::sandbox::connections::api::routes());
    all.extend(crate::agents::api::routes());
    all.extend(crate::sandbox::workspaces::removal_api::routes());
    all.extend(crate::sandbox::policy::api_routes());
    all.extend(crate::sandbox::running::api_routes());
    all.extend(crate::sandbox::operations::api_routes());
    all.extend(crate::documents::api::routes());
    all.extend(crate::sandbox::snapshots::api::routes());
    all.extend(crate::monitoring::api::routes());
    all
}

/// The prefix of the routes an agent runtime calls on every operation, registered as one scope.
const WORKSPACE: &str = "/api/v1/runs/{run_id}/workspace";

/// Registers [`routes`] in their order, the ones under [`WORKSPACE`] first as one scope: actix
/// matches a `{param}` pattern by running its regex, one route after another, so a scope costs
/// every request one such match where its routes cost up to ten (about 3 % of the console's CPU
/// under load in a profile); inside it the routes are plain text.
pub fn configure(cfg: &mut web::ServiceConfig) {
    let (workspace, rest): (Vec<ApiRoute>, Vec<ApiRoute>) = routes()
        .into_iter()
        .partition(|r| r.path.strip_prefix(WORKSPACE).is_some_and(|p| p.is_empty() || p.starts_with('/')));
    let mut scope = web::scope(WORKSPACE);
    for r in workspace {
        scope = scope.route(&r.path[WORKSPACE.len()..], r.route());
    }
    cfg.service(scope);
    for r in rest {
        cfg.route(r.path, r.route());
    }
    cfg.route("/api/v1/openapi.json", web::get().to(openapi_json));
}

async fn openapi_json() -> HttpResponse {
    HttpResponse::Ok().content_type("application/json").body(document().to_json().unwrap_or_default())
}

#[derive(OpenApi)]
#[openapi(
    info(title = "agenticos", description = "The sandbox control plane's REST API. Authenticate with `Authorization: Bearer <API token>`, or a console session cookie plus its `X-CSRF-Token` header. Errors are `application/problem+json`."),
    paths(
        crate::orgs::api::me,
        crate::orgs::api::list_organizations,
        crate::orgs::api::create_organization,
        crate::orgs::api::list_members,
        crate::orgs::api::add_member,
        crate::orgs::api::change_member_role,
        crate::orgs::api::remove_member,
        crate::orgs::invitations::api::list_invitations,
        crate::orgs::invitations::api::revoke_invitation,
        crate::tokens::api::list_tokens,
        crate::tokens::api::create_token,
        crate::tokens::api::revoke_token,
        crate::vault::api::list_secrets,
        crate::vault::api::create_secret,
        crate::vault::api::get_secret,
        crate::vault::api::rotate_secret,
        crate::vault::api::bind_secret,
        crate::vault::api::delete_secret,
        crate::audit::api::list_events,
        crate::sandbox::connections::api::list_connections,
        crate::sandbox::connections::api::create_connection,
        crate::sandbox::connections::api::probe_address,
        crate::sandbox::connections::discovered_api::discovered_containers,
        crate::sandbox::connections::api::get_connection,
        crate::sandbox::connections::api::update_connection,
        crate::sandbox::connections::api::delete_connection,
        crate::sandbox::connections::api::probe_connection,
        crate::agents::api::list_agents,
        crate::agents::api::create_agent,
        crate::agents::api::get_agent,
        crate::agents::api::update_agent,
        crate::agents::api::agent_runtimes,
        crate::sandbox::workspaces::removal_api::delete_agent,
        crate::agents::api::list_conversations,
        crate::agents::api::create_conversation,
        crate::agents::api::get_conversation,
        crate::sandbox::workspaces::removal_api::delete_conversation,
        crate::agents::api::list_runs,
        crate::agents::api::create_run,
        crate::agents::api::get_run,
        crate::sandbox::workspaces::api::exec,
        crate::sandbox::workspaces::api::read_file,
        crate::sandbox::workspaces::api::write_file,
        crate::sandbox::workspaces::api::list_dir,
        crate::sandbox::workspaces::api::make_dir,
        crate::sandbox::workspaces::api::remove_path,
        crate::sandbox::workspaces::api::stat_path,
        crate::sandbox::workspaces::api::briefing,
        crate::sandbox::workspaces::api::workspace_state,
        crate::sandbox::workspaces::api::finish_run,
        crate::sandbox::policy::api::get_connection_policy,
        crate::sandbox::running::api::list_sandbox_sessions,
        crate::sandbox::running::api::session_events,
        crate::sandbox::running::api::close_sandbox_session,
        crate::sandbox::operations::api::list_operations,
        crate::sandbox::operations::api::export_operations,
        crate::documents::api::list_documents,
        crate::documents::api::workspace_documents,
        crate::documents::api::document_file,
        crate::sandbox::snapshots::api::list_snapshots,
        crate::sandbox::snapshots::api::take_snapshot,
        crate::sandbox::snapshots::api::snapshot_archive,
        crate::sandbox::snapshots::api::get_snapshot_settings,
        crate::sandbox::snapshots::api::put_snapshot_settings,
        crate::monitoring::api::health,
    ),
    // The host's report in each Running row (`RunningRow<H>` flattens it: not collected from the rows).
    components(schemas(
        Problem,
        crate::sandbox::running::model::SessionFacts,
        crate::sandbox::hosts::daytona::running::model::SandboxFacts
    )),
    tags((name = "workspace", description = "The workspace of a run, for agent runtimes: every route needs a token or session with the operator role or above (403). Paths are relative to the workspace root or absolute under `/workspace`; one that leaves it is 400 before anything reaches a host. A finished run's routes answer 409 and reach no host, as do a switched-off or unusable connection and a scope that gives the run no workspace. A workspace whose files are gone (the host's workspace TTL removed them, or the host was rebuilt) answers 410 once, to the run that met the loss; the next run opens fresh. A host at its per-organization session cap answers 429 in its own words.")),
    modifiers(&BearerAuth, &Unauthenticated),
)]
struct ApiDoc;

struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
        openapi.security =
            Some(vec![utoipa::openapi::security::SecurityRequirement::new("bearer", Vec::<String>::new())]);
    }
}

/// What every operation's entry carries even where a handler's annotation leaves it out: the 401
/// every `/api/v1` route answers without a valid token or session (its error responses come from
/// its error type, `Problems<E>`: web/openapi_errors.rs), and a description (a handler's
/// one-paragraph doc comment becomes only the summary).
struct Unauthenticated;

impl utoipa::Modify for Unauthenticated {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let response = problem_response(&[Kind::Unauthenticated, Kind::TokenExpired]);
        for item in openapi.paths.paths.values_mut() {
            let operations = [&mut item.get, &mut item.put, &mut item.post, &mut item.delete, &mut item.patch];
            for op in operations.into_iter().flatten() {
                if op.description.is_none() {
                    op.description = op.summary.clone();
                }
                op.responses.responses.entry("401".to_string()).or_insert_with(|| response.clone().into());
            }
        }
    }
}

pub fn document() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}
