//! The edge (src/web/edge.rs) as an attacker probes it: every route, API and page, with a NUL or
//! a CR/LF in an id, a malformed id, a NUL in a query value and in a body. Nothing may answer 5xx
//! (PostgreSQL refuses a NUL in text with an error the app would turn into a 500); a malformed id
//! is a 404, a NUL in a value a 422 naming the field.

use reqwest::Method;
use serde_json::json;

use crate::db_test;
#[allow(unused_imports)]
use crate::helpers::TestApp;
use crate::support::source_files::source_files;

/// Every page route (`method path`), as registered by the capabilities' `routes()` functions; a
/// test below fails when a registration is missing here.
const PAGE_ROUTES: &[&str] = &[
    "GET /",
    "GET /account",
    "GET /account/password",
    "GET /account/two-factor",
    "GET /agents",
    "GET /agents/_runtime_field",
    "GET /agents/_scope_field",
    "GET /agents/new",
    "GET /agents/{id}",
    "GET /agents/{id}/delete",
    "GET /api-reference",
    "GET /audit",
    "GET /conversations",
    "GET /conversations/{id}",
    "GET /conversations/{id}/workspace",
    "GET /conversations/{id}/delete",
    "GET /documents",
    "GET /documents/workspaces/{id}",
    "GET /documents/workspaces/{id}/file",
    "GET /documents/workspaces/{id}/snapshots",
    "GET /forgot-password",
    "GET /invitations/{code}",
    "GET /login",
    "GET /login/two-factor",
    "GET /members",
    "GET /members/{id}/delete",
    "GET /members/{id}/password-reset",
    "GET /orgs/new",
    "GET /reset-password/{token}",
    "GET /sandboxes",
    "GET /sandboxes/health",
    "GET /sandboxes/new",
    "GET /sandboxes/running",
    "GET /sandboxes/activity",
    "GET /sandboxes/activity/new",
    "GET /sandboxes/{connection_id}/sessions/{session_id}/activity",
    "GET /sandboxes/{id}/delete",
    "GET /sandboxes/{connection_id}/sessions/{session_id}/delete",
    "GET /sandboxes/{id}/edit",
    "GET /sandboxes/{id}/policy",
    "GET /setup",
    "GET /tokens",
    "GET /vault",
    "POST /account",
    "POST /account/password",
    "POST /account/sessions/{id}/end",
    "POST /account/tokens/{id}/revoke",
    "POST /account/two-factor",
    "POST /account/two-factor/disable",
    "POST /agents",
    "POST /agents/{id}",
    "POST /agents/{id}/delete",
    "POST /conversations/{id}/delete",
    "POST /conversations/{id}/files",
    "POST /documents/workspaces/{id}/snapshots",
    "POST /documents/workspaces/{id}/snapshots/{snapshot_id}/restore",
    "POST /forgot-password",
    "POST /invitations/{code}",
    "POST /invitations/{id}/accept",
    "POST /invitations/{id}/decline",
    "POST /login",
    "POST /login/two-factor",
    "POST /logout",
    "POST /members",
    "POST /members/invitations/{id}/revoke",
    "POST /members/two-factor",
    "POST /members/{id}/delete",
    "POST /members/{id}/password-reset",
    "POST /members/{id}/role",
    "POST /orgs",
    "POST /orgs/new",
    "POST /orgs/switch",
    "POST /reset-password/{token}",
    "POST /sandboxes",
    "POST /sandboxes/kind",
    "POST /sandboxes/probe",
    "POST /sandboxes/{connection_id}/sessions/{session_id}/close",
    "POST /sandboxes/{connection_id}/sessions/{session_id}/delete",
    "POST /sandboxes/{id}",
    "POST /sandboxes/{id}/default",
    "POST /sandboxes/{id}/delete",
    "POST /sandboxes/{id}/disable",
    "POST /sandboxes/{id}/enable",
    "POST /setup",
    "POST /tokens",
    "POST /tokens/{id}/revoke",
    "POST /vault",
    "POST /vault/{id}/delete",
    "POST /vault/{id}/rotate",
    "POST /vault/{id}/bind",
];

/// Routes that are not org-scoped pages or API operations (health, assets, the document).
const OTHER_ROUTES: &[&str] =
    &["GET /healthz", "GET /readyz", "GET /metrics", "GET /api/v1/openapi.json", "GET /static/{path:.*}"];

/// Every `(method, pattern)` of the product: the API table plus the page list.
fn all_routes() -> Vec<(Method, String)> {
    let mut out: Vec<(Method, String)> = agenticos::api::routes()
        .into_iter()
        .map(|r| (r.method.as_str().parse().expect("method"), r.path.to_string()))
        .collect();
    for line in PAGE_ROUTES {
        let (m, p) = line.split_once(' ').expect("method path");
        out.push((m.parse().expect("method"), p.to_string()));
    }
    out
}

/// The pattern with every `{param}` replaced by `value`.
fn fill(pattern: &str, value: &str) -> String {
    pattern
        .split('/')
        .map(|seg| if seg.starts_with('{') && seg.ends_with('}') { value } else { seg })
        .collect::<Vec<_>>()
        .join("/")
}

fn has_params(pattern: &str) -> bool {
    pattern.contains('{')
}

#[test]
fn the_page_list_names_every_registered_page_route() {
    let files: Vec<String> = source_files().iter().map(|p| std::fs::read_to_string(p).expect("read")).collect();
    let mut missing = Vec::new();
    for text in &files {
        for (i, _) in text.match_indices(".route(\"") {
            let rest = &text[i + 8..];
            let Some(end) = rest.find('"') else { continue };
            let path = &rest[..end];
            let method = rest[end..].split("web::").nth(1).and_then(|m| m.split('(').next()).unwrap_or("");
            let line = format!("{} {path}", method.to_ascii_uppercase());
            if !PAGE_ROUTES.contains(&line.as_str()) && !OTHER_ROUTES.contains(&line.as_str()) {
                missing.push(line);
            }
        }
    }
    assert!(missing.is_empty(), "add these routes to PAGE_ROUTES in tests/api/edge.rs: {missing:?}");
}

db_test! {
    async fn no_route_answers_5xx_to_a_nul_a_line_break_or_a_malformed_id(app: TestApp) {
        app.setup_owner().await;
        let token = app.web.create_token_in_page("edge sweep", "owner").await;
        let mut checked = 0;
        for (method, pattern) in all_routes() {
            let is_api = pattern.starts_with("/api/");
            let send = |path: String, body: Option<serde_json::Value>| {
                let method = method.clone();
                let token = token.clone();
                let web = &app.web;
                async move {
                    if is_api {
                        web.bearer(&token, method, &path, body).await
                    } else if method == Method::GET {
                        web.get(&path).await
                    } else {
                        web.post_form(&path, &[("name", "x")]).await
                    }
                }
            };
            if has_params(&pattern) {
                for bad in ["not-a-uuid", "a%00b", "a%0D%0ALocation:%20x", "%00"] {
                    let path = fill(&pattern, bad);
                    let r = send(path.clone(), None).await;
                    assert!(r.status.as_u16() < 500, "{method} {path}: {} {}", r.status, r.body);
                    // Only `session_id` (the host's) and a reset link's `token` are not our UUIDs
                    // (an unknown token is the link page's 410); every other id is refused at the edge.
                    let not_ours = pattern.contains("{session_id}") || pattern.contains("{token}");
                    if !not_ours || bad.contains('%') {
                        assert_eq!(r.status.as_u16(), 404, "{method} {path}: {}", r.body);
                    }
                    checked += 1;
                }
            }
            let real = fill(&pattern, &uuid::Uuid::new_v4().to_string());
            let r = send(format!("{real}?path=a%00b"), None).await;
            assert_eq!(r.status.as_u16(), 422, "{method} {real}?path=a%00b: {}", r.body);
            if is_api {
                assert_eq!(r.problem_fields(), vec!["path".to_string()], "{method} {real}");
            }
            if is_api && matches!(method, Method::POST | Method::PUT | Method::PATCH) {
                let r = send(real.clone(), Some(json!({ "name": "a\u{0}b", "argv": ["ls", "\u{0}"] }))).await;
                assert_eq!(r.status.as_u16(), 422, "{method} {real} with a NUL in the body: {}", r.body);
                assert_eq!(r.problem(422)["errors"][0]["field"], "argv[1]", "{method} {real}");
            }
            checked += 1;
        }
        assert!(checked > 100, "swept {checked} requests");
    }
}

db_test! {
    async fn signing_in_with_a_nul_is_a_clear_refusal_not_a_500(app: TestApp) {
        app.setup_owner().await;
        let c = app.new_client();
        let r = c.post_login("owner@example.com\u{0}", "x").await;
        assert_eq!(r.status.as_u16(), 422, "{}", r.body);
        assert!(r.body.contains("NUL"), "{}", r.body);
        let r = c.post_form("/setup", &[("email", "a\u{0}@b.c"), ("password", "long enough!"), ("organization", "x")]).await;
        assert!(r.status.as_u16() < 500, "{}", r.body);
    }
}

db_test! {
    async fn a_write_over_the_limit_is_a_413_problem_naming_the_limit(app: TestApp) {
        app.setup_owner().await;
        let token = app.web.create_token_in_page("big writer", "operator").await;
        let run = uuid::Uuid::new_v4();
        let body = vec![b'x'; agenticos::sandbox::workspaces::backend::WRITE_MAX + 1];
        let r = app
            .web
            .send(
                reqwest::Client::new()
                    .put(app.web.url(&format!("/api/v1/runs/{run}/workspace/files?path=big.bin")))
                    .bearer_auth(&token)
                    .header("content-type", "application/octet-stream")
                    .body(body),
            )
            .await;
        let p = r.problem(413);
        assert_eq!(p["detail"], "The body is larger than 8 MiB, the most one file write takes.");
    }
}

db_test! {
    async fn a_wrong_typed_json_field_is_named(app: TestApp) {
        app.setup_owner().await;
        let token = app.web.create_token_in_page("typist", "owner").await;
        let r = app
            .web
            .bearer_raw(&token, Method::POST, "/api/v1/organizations", r#"{"name": 42}"#)
            .await;
        r.problem(422);
        assert_eq!(r.problem_fields(), vec!["name".to_string()], "{}", r.body);
    }
}
