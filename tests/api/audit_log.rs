use reqwest::Method;

use crate::db_test;

db_test! {
    async fn the_audit_log_is_paged_newest_first(app: TestApp) {
        app.setup_owner().await;
        let t = app.web.create_token_in_page("t", "owner").await;
        for i in 0..55 {
            let r = app.web.bearer(&t, Method::POST, "/api/v1/vault/secrets", Some(serde_json::json!({"name": format!("s{i:02}"), "purpose": "other", "value": "v"}))).await;
            assert_eq!(r.status, 201);
        }
        let first = app.web.get("/audit").await;
        let rows = first.select_all("#audit-table tbody tr");
        assert_eq!(rows.len(), 50);
        assert!(rows[0].contains("vault.secret_created") && rows[0].contains("s54"), "{}", rows[0]);
        assert_eq!(first.select_attr("a[rel=next]", "href").as_deref(), Some("/audit?page=2"));
        let second = app.web.get("/audit?page=2").await;
        let rows2 = second.select_all("#audit-table tbody tr");
        // 55 secrets + token created + organization created.
        assert_eq!(rows2.len(), 7);
        assert!(second.select_attr("a[rel=next]", "href").is_none());
        assert!(rows2.last().is_some_and(|r| r.contains("organization.created")));
        let api = app.web.bearer(&t, Method::GET, "/api/v1/audit-events?page=2", None).await.json();
        assert_eq!(api["items"].as_array().map(Vec::len), Some(7));
        assert_eq!(api["has_next"], false);
        let r = app.web.bearer(&t, Method::GET, "/api/v1/audit-events?page=abc", None).await;
        r.problem(422);
        let empty = app.web.get("/audit?page=9").await;
        assert!(empty.body.contains("Nothing recorded on this page"));
    }
}
