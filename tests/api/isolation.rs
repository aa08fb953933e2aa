//! A member of organization A asking for any of organization B's ids gets 404 on every
//! org-owned route.

use reqwest::Method;

use crate::db_test;

db_test! {
    async fn every_org_owned_route_answers_404_for_another_organizations_ids(app: TestApp) {
        app.setup_owner().await;
        // Organization A (the owner's): a second member, a token, a secret.
        app.member_with_role("a2@example.com", "member").await;
        app.web.create_token_in_page("a-token", "admin").await;
        assert_eq!(app.web.post_form("/vault", &[("name", "a-secret"), ("purpose", "other"), ("value", "a-value-123456")]).await.status, 303);
        let q = |sql: &'static str| sql;
        let a_member = app.scalar_strings(q("SELECT m.id FROM memberships m JOIN users u ON u.id = m.user_id WHERE u.email = 'a2@example.com'")).await.remove(0);
        let a_token = app.scalar_strings(q("SELECT id FROM api_tokens")).await.remove(0);
        let a_secret = app.scalar_strings(q("SELECT id FROM vault_secrets")).await.remove(0);
        let a_org = app.scalar_strings(q("SELECT id FROM organizations WHERE name = 'Acme'")).await.remove(0);

        // Organization B's owner, by session and by token.
        let b = app.other_org_user("b@example.com", "B Corp").await;
        let b_token = b.create_token_in_page("b-token", "owner").await;

        let page_posts = [
            (format!("/members/{a_member}/role"), vec![("role", "member")]),
            (format!("/members/{a_member}/delete"), vec![]),
            (format!("/tokens/{a_token}/revoke"), vec![]),
            (format!("/vault/{a_secret}/rotate"), vec![("value", "stolen-value-123")]),
            (format!("/vault/{a_secret}/delete"), vec![]),
        ];
        for (path, form) in &page_posts {
            let r = b.post_form(path, form).await;
            assert_eq!(r.status, 404, "page POST {path}: {}", r.body);
        }
        let r = b.post_form("/orgs/switch", &[("organization_id", &a_org)]).await;
        assert_eq!(r.status, 404, "switching into a foreign organization");

        let api_calls: Vec<(Method, String, Option<serde_json::Value>)> = vec![
            (Method::PATCH, format!("/api/v1/members/{a_member}"), Some(serde_json::json!({"role": "member"}))),
            (Method::DELETE, format!("/api/v1/members/{a_member}"), None),
            (Method::DELETE, format!("/api/v1/tokens/{a_token}"), None),
            (Method::GET, format!("/api/v1/vault/secrets/{a_secret}"), None),
            (Method::POST, format!("/api/v1/vault/secrets/{a_secret}/rotate"), Some(serde_json::json!({"value": "stolen-value-123"}))),
            (Method::DELETE, format!("/api/v1/vault/secrets/{a_secret}"), None),
        ];
        for (method, path, body) in &api_calls {
            b.bearer(&b_token, method.clone(), path, body.clone()).await.problem(404);
            b.api(method.clone(), path, body.clone()).await.problem(404);
        }
        // Lists show only B's own rows.
        let members = b.bearer(&b_token, Method::GET, "/api/v1/members", None).await.json();
        assert_eq!(members.as_array().map(Vec::len), Some(1));
        let tokens = b.bearer(&b_token, Method::GET, "/api/v1/tokens", None).await.json();
        assert!(tokens.as_array().is_some_and(|t| t.len() == 1 && t[0]["name"] == "b-token"));
        let secrets = b.bearer(&b_token, Method::GET, "/api/v1/vault/secrets", None).await.json();
        assert_eq!(secrets.as_array().map(Vec::len), Some(0));
        let audit = b.bearer(&b_token, Method::GET, "/api/v1/audit-events", None).await.json();
        assert!(!audit.to_string().contains("a-secret"));
        assert!(!b.get("/audit").await.body.contains("a2@example.com"));

        // Nothing of A changed.
        assert_eq!(app.count("vault_secrets").await, 1);
        assert_eq!(app.scalar_strings("SELECT role FROM memberships m JOIN users u ON u.id = m.user_id WHERE u.email = 'a2@example.com'").await, vec!["member".to_string()]);
        assert_eq!(app.scalar_strings("SELECT id FROM api_tokens WHERE revoked_at IS NOT NULL").await.len(), 0);
    }
}
