use reqwest::Method;

use crate::db_test;
use crate::helpers::{OWNER_EMAIL, OWNER_ORG};

db_test! {
    async fn a_token_created_in_the_page_authenticates_me_until_revoked(app: TestApp) {
        app.setup_owner().await;
        let token = app.web.create_token_in_page("runtime-1", "operator").await;
        assert!(token.starts_with("agos_"), "{token}");
        let stored = app.scalar_strings("SELECT token_hash FROM api_tokens").await;
        assert_eq!(stored.len(), 1);
        assert_ne!(stored[0], token, "stored hashed");

        let me = app.web.bearer(&token, Method::GET, "/api/v1/me", None).await;
        assert_eq!(me.status, 200, "{}", me.body);
        let me = me.json();
        assert_eq!(me["email"], OWNER_EMAIL);
        assert_eq!(me["organization"]["name"], OWNER_ORG);
        assert_eq!(me["role"], "operator");
        assert_eq!(me["authenticated_by"], "token");
        assert_eq!(me["token_name"], "runtime-1");

        let page = app.web.get("/tokens").await;
        assert!(!page.body.contains(&token), "the value is shown once only");
        let id = app.scalar_strings("SELECT id FROM api_tokens").await.remove(0);
        assert!(page.select_text(&format!("#token-{id}")).is_some_and(|t| t.contains("active")));
        let r = app.web.post_form(&format!("/tokens/{id}/revoke"), &[]).await;
        assert_eq!(r.status, 303);

        let denied = app.web.bearer(&token, Method::GET, "/api/v1/me", None).await;
        let p = denied.problem(401);
        assert!(p["detail"].as_str().is_some_and(|d| d.contains("not valid")));
        let page = app.web.get("/tokens").await;
        assert!(page.select_text(&format!("#token-{id}")).is_some_and(|t| t.contains("revoked")));
    }
}

db_test! {
    async fn garbage_or_missing_credentials_get_401_problems(app: TestApp) {
        app.setup_owner().await;
        app.web.bearer("agos_nope", Method::GET, "/api/v1/me", None).await.problem(401);
        app.web.bearer("not-even-prefixed", Method::GET, "/api/v1/me", None).await.problem(401);
        let anon = app.new_client();
        let r = anon.get("/api/v1/me").await;
        r.problem(401);
        assert_eq!(r.header("www-authenticate").as_deref(), Some("Bearer"));
    }
}

db_test! {
    async fn a_token_never_carries_more_than_its_creator_and_dies_when_they_leave(app: TestApp) {
        app.setup_owner().await;
        let admin = app.member_with_role("admin@example.com", "admin").await;
        let r = admin.post_form("/tokens", &[("name", "too-high"), ("role", "owner")]).await;
        assert_eq!(r.status, 422);
        assert!(r.field_error("token-role").is_some_and(|m| m.contains("above your own")));
        let token = admin.create_token_in_page("admin-token", "admin").await;
        assert_eq!(admin.bearer(&token, Method::GET, "/api/v1/me", None).await.json()["role"], "admin");

        // Demoted creator: the token acts with the lower role.
        let mid = app.scalar_strings("SELECT m.id FROM memberships m JOIN users u ON u.id = m.user_id WHERE u.email = 'admin@example.com'").await.remove(0);
        assert_eq!(app.web.post_form(&format!("/members/{mid}/role"), &[("role", "operator")]).await.status, 303);
        assert_eq!(admin.bearer(&token, Method::GET, "/api/v1/me", None).await.json()["role"], "operator");

        // Removed creator: the token stops working.
        assert_eq!(app.web.post_form(&format!("/members/{mid}/delete"), &[]).await.status, 303);
        admin.bearer(&token, Method::GET, "/api/v1/me", None).await.problem(401);
    }
}

db_test! {
    async fn tokens_are_managed_through_the_api_too(app: TestApp) {
        app.setup_owner().await;
        let token = app.web.create_token_in_page("admin", "admin").await;
        let r = app.web.bearer(&token, Method::POST, "/api/v1/tokens", Some(serde_json::json!({"name": "ci", "role": "builder"}))).await;
        assert_eq!(r.status, 201, "{}", r.body);
        let created = r.json();
        let value = created["value"].as_str().expect("value").to_string();
        let id = created["token"]["id"].as_str().expect("id").to_string();
        let list = app.web.bearer(&token, Method::GET, "/api/v1/tokens", None).await.json();
        assert_eq!(list.as_array().map(Vec::len), Some(2));
        assert!(!list.to_string().contains(&value), "values are never listed");
        let r = app.web.bearer(&token, Method::DELETE, &format!("/api/v1/tokens/{id}"), None).await;
        assert_eq!(r.status, 200);
        assert!(r.json()["revoked_at"].is_i64());
        app.web.bearer(&value, Method::GET, "/api/v1/me", None).await.problem(401);
    }
}
