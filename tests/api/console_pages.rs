//! The console around the pages: what a member's navigation offers, the API reference as a page,
//! nothing cached for Back after signing out, and signing in returns to the page that asked for
//! it — only ever a path on this site.

use reqwest::Method;
use serde_json::json;

use crate::db_test;
use crate::helpers::{Client, Resp, OWNER_EMAIL, OWNER_PASSWORD};

/// Signs in through the form with `next` (as the sign-in page posts it).
async fn sign_in_then(c: &Client, next: &str) -> Resp {
    let page = c.get("/login").await;
    let token = page.select_attr("input[name=csrf_token]", "value").expect("a CSRF token");
    let form = [("email", OWNER_EMAIL), ("password", OWNER_PASSWORD), ("csrf_token", &token), ("next", next)];
    c.send(c.http.post(c.url("/login")).form(&form)).await
}

db_test! {
    async fn a_member_finds_their_conversations_and_a_readable_api_reference(app: TestApp) {
        app.setup_owner().await;
        let member = app.member_with_role("m@example.com", "member").await;
        let member_id = member.api(Method::GET, "/api/v1/me", None).await.json()["user_id"].as_str().expect("id").to_string();
        let agent = app.web.api(Method::POST, "/api/v1/agents", Some(json!({"name": "helper", "backend": "state", "scope": "conversation"}))).await.json();
        let agent = agent["id"].as_str().expect("agent");
        for (title, members) in [("Theirs", json!([member_id])), ("Not theirs", json!([]))] {
            let body = json!({"agent_id": agent, "title": title, "member_user_ids": members});
            assert_eq!(app.web.api(Method::POST, "/api/v1/conversations", Some(body)).await.status, 201);
        }

        let home = member.get("/").await;
        let nav = home.select_all("nav.sidebar-nav a");
        assert!(nav.contains(&"Conversations".to_string()) && nav.contains(&"API reference".to_string()), "{nav:?}");
        assert_eq!(home.select_attr("nav.sidebar-nav a[href='/conversations']", "aria-current").as_deref(), Some("false"));
        let list = member.get("/conversations").await;
        assert_eq!(list.status, 200);
        assert_eq!(list.select_all("#conversations-table td strong"), ["Theirs"]);
        assert_eq!(list.select_attr("nav.sidebar-nav a[href='/conversations']", "aria-current").as_deref(), Some("page"));
        assert!(list.select_text(".page-header p").is_some_and(|t| t.starts_with("The conversations you are in")));

        // The reference: every operation, grouped by tag, with its parameters, body and problems.
        let r = member.get("/api-reference").await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.header("cache-control").as_deref(), Some("no-store"));
        assert_eq!(r.select_all("article.operation").len(), agenticos::api::routes().len());
        assert_eq!(r.select_attr("nav.sidebar-nav a[href='/api-reference']", "aria-current").as_deref(), Some("page"));
        let close = "article#op-close-sandbox-session";
        assert_eq!(r.select_attr(close, "data-method").as_deref(), Some("DELETE"));
        assert_eq!(r.select_attr(close, "data-path").as_deref(), Some("/api/v1/sandbox-sessions/{connection_id}/{session_id}"));
        assert!(r.select_text(&format!("{close} .operation-description")).is_some_and(|t| t.contains("delete_files=true")));
        let params = r.select_all(&format!("{close} table.parameters tbody tr td:first-child"));
        assert_eq!(params.len(), 3, "{params:?}");
        assert!(params[2].starts_with("delete_files"), "{params:?}");
        let not_found = r.select_text(&format!("{close} tr.response[data-status='404'] .problem-type")).unwrap_or_default();
        assert_eq!(not_found, "Problem type: https://agenticos.dev/problems/not-found");
        assert_eq!(r.select_attr(&format!("{close} tr.response[data-status='200'] a"), "href").as_deref(), Some("#schema-closedsession"));
        assert!(r.select_text("#schema-closedsession table.properties").is_some_and(|t| t.contains("files_deleted")));
        let create = "article#op-create-agent";
        assert!(r.select_text(&format!("{create} .request-body")).is_some_and(|t| t.contains("application/json")));
        // Rendered here, from our own files only.
        let scripts = crate::support::htmx::attrs(&r, "script", "src");
        assert!(scripts.iter().all(|s| s.starts_with("/static/")), "{scripts:?}");
        assert!(!r.body.contains("cdn") && !r.body.contains("swagger"));
        // The document itself stays where it was.
        let doc = member.get("/api/v1/openapi.json").await;
        assert_eq!(doc.status, 200);
        assert!(doc.json()["paths"]["/api/v1/sandbox-sessions/{connection_id}/{session_id}"]["delete"].is_object());
    }
}

db_test! {
    async fn signing_in_returns_to_the_page_that_asked_and_only_to_a_path_here(app: TestApp) {
        app.setup_owner().await;
        let c = app.new_client();
        let r = c.get("/members").await;
        assert_eq!((r.status.as_u16(), r.location().as_deref()), (303, Some("/login?next=%2Fmembers")));
        let r = c.get("/sandboxes/running?usage=1").await;
        assert_eq!(r.location().as_deref(), Some("/login?next=%2Fsandboxes%2Frunning%3Fusage%3D1"));
        assert_eq!(c.get("/").await.location().as_deref(), Some("/login"));
        // An htmx request (a poll, a boosted link) returns to the page it was sent from, by its path only.
        for (current, next) in [
            (format!("{}/agents?x=1", app.address), "/login?next=%2Fagents%3Fx%3D1"),
            ("https://evil.example/members".to_string(), "/login?next=%2Fmembers"),
        ] {
            let r = c.send(c.http.get(c.url("/sandboxes/running")).header("HX-Request", "true").header("HX-Current-URL", current)).await;
            assert_eq!(r.header("hx-redirect").as_deref(), Some(next));
        }
        // The API answers 401, never a redirect.
        c.get("/api/v1/me").await.problem(401);

        let page = c.get("/login?next=%2Fmembers").await;
        assert_eq!(page.select_attr("input[name=next]", "value").as_deref(), Some("/members"));
        assert_eq!(page.header("cache-control").as_deref(), Some("no-store"));
        for bad in ["//evil.example", "https://evil.example/", "/%5Cevil.example", "javascript:alert(1)"] {
            let page = c.get(&format!("/login?next={bad}")).await;
            assert_eq!(page.status, 200);
            assert!(page.select_attr("input[name=next]", "value").is_none(), "{bad} kept: {}", page.body);
        }

        let r = sign_in_then(&c, "/members").await;
        assert_eq!((r.status.as_u16(), r.location().as_deref()), (303, Some("/members")));
        for bad in [
            "//evil.example/x",
            "///evil.example",
            "https://evil.example/",
            "/\\evil.example",
            "\\\\evil.example",
            "/a\tb",
            "/members\r\nSet-Cookie: x=y",
            "javascript:alert(1)",
            "members",
            "/\u{202e}lmth.live",
        ] {
            let r = sign_in_then(&app.new_client(), bad).await;
            assert_eq!((r.status.as_u16(), r.location().as_deref()), (303, Some("/")), "{bad:?}");
        }
    }
}

db_test! {
    async fn signed_in_pages_and_answers_are_not_kept_for_back_but_static_files_are(app: TestApp) {
        app.setup_owner().await;
        for path in ["/", "/members", "/sandboxes/running", "/conversations", "/api-reference", "/api/v1/me"] {
            let r = app.web.get(path).await;
            assert_eq!(r.status, 200, "{path}");
            assert_eq!(r.header("cache-control").as_deref(), Some("no-store"), "{path}");
        }
        let css = app.web.get("/static/css/app.css").await;
        assert_eq!(css.header("cache-control").as_deref(), Some("public, max-age=3600"));
        // Signing out ends the session: the same pages send the next visitor to sign in.
        let r = app.web.post_form("/logout", &[]).await;
        assert_eq!(r.location().as_deref(), Some("/login"));
        assert_eq!(app.web.get("/members").await.location().as_deref(), Some("/login?next=%2Fmembers"));
    }
}
