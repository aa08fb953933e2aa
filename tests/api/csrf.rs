use crate::db_test;
use crate::helpers::{OWNER_EMAIL, OWNER_PASSWORD};

db_test! {
    async fn a_form_without_its_csrf_token_gets_403_and_changes_nothing(app: TestApp) {
        app.setup_owner().await;
        let r = app.web.post_form_without_csrf("/members", &[("email", "x@example.com"), ("role", "member")]).await;
        assert_eq!(r.status, 403);
        assert!(r.body.contains("This form has expired"));
        let r = app.web.post_form_without_csrf("/members", &[("email", "x@example.com"), ("role", "member"), ("csrf_token", "forged")]).await;
        assert_eq!(r.status, 403);
        assert_eq!(app.count("memberships").await, 1);
        let r = app.web.post_form_without_csrf("/logout", &[]).await;
        assert_eq!(r.status, 403);
        assert_eq!(app.count("login_sessions").await, 1);
    }
}

db_test! {
    async fn the_login_form_is_csrf_protected_too(app: TestApp) {
        app.setup_owner().await;
        let c = app.new_client();
        let r = c.post_form_without_csrf("/login", &[("email", OWNER_EMAIL), ("password", OWNER_PASSWORD)]).await;
        assert_eq!(r.status, 403);
        assert_eq!(app.count("login_sessions").await, 1);
    }
}

db_test! {
    async fn the_api_with_a_session_cookie_needs_the_csrf_header_but_a_bearer_token_does_not(app: TestApp) {
        app.setup_owner().await;
        let raw = app.web.send(app.web.http.post(app.web.url("/api/v1/organizations")).json(&serde_json::json!({"name": "X"}))).await;
        raw.problem(403);
        let ok = app.web.api(reqwest::Method::POST, "/api/v1/organizations", Some(serde_json::json!({"name": "X"}))).await;
        assert_eq!(ok.status, 201, "{}", ok.body);
        let token = app.web.create_token_in_page("ci", "admin").await;
        let r = app.web.bearer(&token, reqwest::Method::POST, "/api/v1/organizations", Some(serde_json::json!({"name": "Y"}))).await;
        assert_eq!(r.status, 201, "{}", r.body);
        // An htmx-style header carries the token as well as a hidden field does.
        let tok = app.web.csrf().await;
        let r = app.web.send(app.web.http.post(app.web.url("/orgs")).header("x-csrf-token", tok).form(&[("name", "Z")])).await;
        assert_eq!(r.status, 303);
    }
}

db_test! {
    async fn an_api_write_without_any_credential_is_401_not_the_csrf_refusal(app: TestApp) {
        app.setup_owner().await;
        let anonymous = app.new_client();
        let r = anonymous
            .send(anonymous.http.post(anonymous.url("/api/v1/organizations")).json(&serde_json::json!({"name": "X"})))
            .await;
        let p = r.problem(401);
        assert_eq!(p["type"], "https://agenticos.dev/problems/unauthenticated");
        assert_eq!(r.header("www-authenticate").as_deref(), Some("Bearer"));
        assert_eq!(app.count("organizations").await, 1, "nothing was written");
    }
}
