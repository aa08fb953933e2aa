//! Human dates (issue 30): the console's tables say when as people do ("3 min ago", "in 2 d"),
//! the exact UTC time on hover, and the audit log's When stays on one line — on both databases.

use reqwest::Method;
use serde_json::json;

use crate::db_test;

db_test! {
    async fn tables_say_when_as_people_do_with_the_exact_time_on_hover(app: TestApp) -> anyhow::Result<()> {
        app.setup_owner().await;
        app.web.create_token_in_page("runtime", "owner").await;
        let secret = json!({"name": "deploy key", "purpose": "sandboxd", "value": "s3cret-value"});
        assert_eq!(app.web.api(Method::POST, "/api/v1/vault/secrets", Some(secret)).await.status, 201);
        for (page, cell) in [("/tokens", "td time.when"), ("/vault", "#secrets-table td time.when"), ("/members", "td time.when")] {
            let r = app.web.get(page).await;
            assert_eq!(r.status, 200, "{page}");
            let text = r.select_text(cell).unwrap_or_default();
            assert!(text.ends_with(" ago"), "{page}: {text:?}");
            let title = r.select_attr(cell, "title").unwrap_or_default();
            assert!(title.ends_with(" UTC") && title.len() == "2026-12-03 10:00:05 UTC".len(), "{page}: {title:?}");
        }
        let audit = app.web.get("/audit").await;
        assert!(audit.select_attr("#audit-table tbody td.when-cell", "class").is_some_and(|c| c.contains("nowrap")), "{}", audit.body);
        Ok(())
    }
}
