use reqwest::Method;

use crate::db_test;

db_test! {
    async fn bad_api_input_gets_422_naming_the_field_and_writes_nothing(app: TestApp) {
        app.setup_owner().await;
        let t = app.web.create_token_in_page("t", "owner").await;
        let before = (app.count("memberships").await, app.count("api_tokens").await, app.count("vault_secrets").await, app.count("organizations").await);

        let r = app.web.bearer(&t, Method::POST, "/api/v1/members", Some(serde_json::json!({"email": "", "role": "member"}))).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), vec!["email"]);

        let r = app.web.bearer(&t, Method::POST, "/api/v1/members", Some(serde_json::json!({"email": "x@example.com", "role": "emperor"}))).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), vec!["role"]);

        let r = app.web.bearer(&t, Method::POST, "/api/v1/tokens", Some(serde_json::json!({"name": "n".repeat(101), "role": "member"}))).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), vec!["name"]);

        let r = app.web.bearer(&t, Method::POST, "/api/v1/organizations", Some(serde_json::json!({"name": "   "}))).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), vec!["name"]);

        let r = app.web.bearer_raw(&t, Method::POST, "/api/v1/vault/secrets", "{\"name\": \"x\", ").await;
        let p = r.problem(422);
        assert!(!r.problem_fields().is_empty(), "{p}");

        let r = app.web.bearer_raw(&t, Method::POST, "/api/v1/members", r#"{"email": "x@example.com", "role": "member", "admin": true}"#).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), vec!["admin"]);

        let r = app.web.bearer_raw(&t, Method::POST, "/api/v1/vault/secrets", r#"{"purpose": "other", "value": "v"}"#).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), vec!["name"]);

        let after = (app.count("memberships").await, app.count("api_tokens").await, app.count("vault_secrets").await, app.count("organizations").await);
        assert_eq!(before, after, "nothing was written");
    }
}

db_test! {
    async fn bad_form_input_is_shown_inline_with_422(app: TestApp) {
        app.setup_owner().await;
        let r = app.web.post_form("/members", &[("email", ""), ("role", "emperor")]).await;
        assert_eq!(r.status, 422);
        assert!(r.field_error("member-email").is_some());
        assert!(r.field_error("member-role").is_some_and(|m| m.contains("owner, admin")));
        let r = app.web.post_form("/tokens", &[("name", &"n".repeat(101)), ("role", "member")]).await;
        assert_eq!(r.status, 422);
        assert!(r.field_error("token-name").is_some_and(|m| m.contains("100")));
        assert_eq!(r.select_attr("#token-name", "value").map(|v| v.len()), Some(101), "the input is kept");
        let r = app.web.post_form("/orgs", &[("name", "")]).await;
        assert_eq!(r.status, 422);
        assert!(r.field_error("name").is_some());
        assert_eq!(app.count("memberships").await, 1);
        assert_eq!(app.count("api_tokens").await, 0);
        assert_eq!(app.count("organizations").await, 1);
    }
}
