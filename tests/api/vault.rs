use reqwest::Method;

use crate::db_test;
use crate::helpers::captured_logs;

const VALUE: &str = "sbx-SECRET-value-7f3a9c1e55b2";
const ROTATED: &str = "sbx-ROTATED-value-0d1e2f3a4b5c";

db_test! {
    async fn a_secret_value_appears_in_no_response_page_or_log_line(app: TestApp) {
        app.setup_owner().await;
        // Page: create.
        let r = app.web.post_form("/vault", &[("name", "host-a"), ("purpose", "sandboxd"), ("value", VALUE)]).await;
        assert_eq!(r.status, 303, "{}", r.body);
        let page = app.web.get("/vault").await;
        let row = page.select_text("#secrets-table tbody tr").expect("listed");
        assert!(row.contains("host-a") && row.contains("…55b2"), "{row}");
        // API: create, list, get, rotate.
        let token = app.web.create_token_in_page("t", "owner").await;
        let r = app.web.bearer(&token, Method::POST, "/api/v1/vault/secrets", Some(serde_json::json!({"name": "dt", "purpose": "daytona", "value": VALUE}))).await;
        assert_eq!(r.status, 201, "{}", r.body);
        let id = r.json()["id"].as_str().expect("id").to_string();
        assert_eq!(r.json()["hint"], "…55b2");
        app.web.bearer(&token, Method::GET, "/api/v1/vault/secrets", None).await;
        app.web.bearer(&token, Method::GET, &format!("/api/v1/vault/secrets/{id}"), None).await;
        let r = app.web.bearer(&token, Method::POST, &format!("/api/v1/vault/secrets/{id}/rotate"), Some(serde_json::json!({"value": ROTATED}))).await;
        assert_eq!(r.status, 200);
        assert_eq!(r.json()["hint"], "…4b5c");
        let page_id = app.scalar_strings("SELECT id FROM vault_secrets WHERE name = 'host-a'").await.remove(0);
        assert_eq!(app.web.post_form(&format!("/vault/{page_id}/rotate"), &[("value", ROTATED)]).await.status, 303);
        app.web.get("/vault").await;
        app.web.get("/audit").await;
        app.web.bearer(&token, Method::GET, "/api/v1/audit-events", None).await;

        // Stored encrypted, decryptable by the product itself.
        let mut c = app.state.db.conn().await.expect("conn");
        let cts: Vec<Vec<u8>> = sqlx::query_scalar("SELECT ciphertext FROM vault_secrets").fetch_all(&mut *c).await.expect("q");
        for ct in &cts {
            assert!(!String::from_utf8_lossy(ct).contains("value"), "ciphertext holds plaintext");
        }
        let org_id = app.scalar_strings(&format!("SELECT organization_id FROM vault_secrets WHERE id = '{id}'")).await.remove(0);
        let revealed = agenticos::vault::service::reveal(&app.state, &mut c, &org_id, &id).await.expect("reveal").expect("some");
        assert_eq!(secrecy::ExposeSecret::expose_secret(&revealed), ROTATED);

        let bodies = app.web.all_bodies();
        assert!(!bodies.is_empty());
        for v in [VALUE, ROTATED] {
            assert!(!bodies.contains(v), "a response body contains the secret value");
            assert!(!captured_logs().contains(v), "a log line contains the secret value");
        }
        let actions = app.scalar_strings("SELECT action FROM audit_events WHERE action LIKE 'vault.%' ORDER BY created_at").await;
        assert_eq!(actions, vec!["vault.secret_created", "vault.secret_created", "vault.secret_rotated", "vault.secret_rotated"]);
        let r = app.web.bearer(&token, Method::DELETE, &format!("/api/v1/vault/secrets/{id}"), None).await;
        assert_eq!(r.status, 204);
        assert_eq!(app.count("vault_secrets").await, 1);
        assert_eq!(app.scalar_strings("SELECT action FROM audit_events WHERE action = 'vault.secret_deleted'").await.len(), 1);
    }
}

db_test! {
    async fn secret_names_are_unique_per_organization_and_shown_inline(app: TestApp) {
        app.setup_owner().await;
        assert_eq!(app.web.post_form("/vault", &[("name", "k"), ("purpose", "other"), ("value", "v1")]).await.status, 303);
        let r = app.web.post_form("/vault", &[("name", "k"), ("purpose", "nope"), ("value", "")]).await;
        assert_eq!(r.status, 422);
        assert!(r.field_error("secret-purpose").is_some());
        assert!(r.field_error("secret-value").is_some());
        let r = app.web.post_form("/vault", &[("name", "k"), ("purpose", "other"), ("value", "v2")]).await;
        assert_eq!(r.status, 422);
        assert!(r.field_error("secret-name").is_some_and(|m| m.contains("exists already")));
        assert_eq!(app.count("vault_secrets").await, 1);
        let id = app.scalar_strings("SELECT id FROM vault_secrets").await.remove(0);
        let r = app.web.post_form(&format!("/vault/{id}/rotate"), &[("value", "  ")]).await;
        assert_eq!(r.status, 422);
        assert!(r.field_error(&format!("rotate-{id}")).is_some());
        // Another organization may use the same name.
        let other = app.other_org_user("b@example.com", "B").await;
        assert_eq!(other.post_form("/vault", &[("name", "k"), ("purpose", "other"), ("value", "v3")]).await.status, 303);
    }
}
