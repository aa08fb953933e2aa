use reqwest::Method;

use crate::db_test;
use crate::support::source_files::source_files;

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
        assert!(rows[0].contains("Vault key created") && rows[0].contains("s54"), "{}", rows[0]);
        assert_eq!(first.select_attr("a[rel=next]", "href").as_deref(), Some("/audit?page=2"));
        let second = app.web.get("/audit?page=2").await;
        let rows2 = second.select_all("#audit-table tbody tr");
        // 55 secrets + token created + organization created.
        assert_eq!(rows2.len(), 7);
        assert!(second.select_attr("a[rel=next]", "href").is_none());
        assert!(rows2.last().is_some_and(|r| r.contains("Organization created")));
        let api = app.web.bearer(&t, Method::GET, "/api/v1/audit-events?page=2", None).await.json();
        assert_eq!(api["items"].as_array().map(Vec::len), Some(7));
        assert_eq!(api["has_next"], false);
        let r = app.web.bearer(&t, Method::GET, "/api/v1/audit-events?page=abc", None).await;
        r.problem(422);
        let empty = app.web.get("/audit?page=9").await;
        assert!(empty.body.contains("Nothing recorded on this page"));
    }
}

/// Times of the log as the API gives them, newest first.
async fn times(app: &crate::helpers::TestApp, action: &str) -> Vec<i64> {
    let mut c = app.state.db.conn().await.expect("conn");
    sqlx::query_scalar("SELECT created_at FROM audit_events WHERE action = $1 ORDER BY created_at DESC, seq DESC")
        .bind(action)
        .fetch_all(&mut *c)
        .await
        .expect("times")
}

db_test! {
    async fn the_audit_log_filters_by_actor_event_and_time_and_pages_with_its_filters(app: TestApp) {
        app.setup_owner().await;
        let t = app.web.create_token_in_page("robot", "owner").await;
        for i in 0..53 {
            let body = serde_json::json!({"name": format!("s{i:02}"), "purpose": "other", "value": "v"});
            assert_eq!(app.web.bearer(&t, Method::POST, "/api/v1/vault/secrets", Some(body)).await.status, 201);
        }
        assert_eq!(app.new_client().post_login(crate::helpers::OWNER_EMAIL, "wrong password!").await.status, 401);

        // By event: readable names, the code kept on the row.
        let r = app.web.get("/audit?event=sign_in.failed").await;
        assert_eq!(r.status, 200);
        let rows = r.select_all("#audit-table tbody tr");
        assert_eq!(rows.len(), 1, "{rows:?}");
        assert!(rows[0].contains("Sign-in failed") && rows[0].contains("sign-in"), "{rows:?}");
        assert_eq!(r.select_attr("#audit-table tbody tr", "data-event").as_deref(), Some("sign_in.failed"));
        assert_eq!(r.select_attr("#audit-event option[selected]", "value").as_deref(), Some("sign_in.failed"));
        // From and To are empty when empty: no example dates inside them that read as values
        // (issue 49); the formats are said under the form.
        for field in ["#audit-from", "#audit-to"] {
            assert_eq!((r.select_attr(field, "value").as_deref(), r.select_attr(field, "placeholder")), (Some(""), None), "{field}");
        }
        assert!(r.select_text(".audit-filters .hint").is_some_and(|h| h.contains("2026-12-02 14:30")));

        // By actor, any case, part of the label: the token's writes only.
        let r = app.web.get("/audit?actor=TOKEN+ROBOT").await;
        assert_eq!(r.select_all("#audit-table tbody tr").len(), 50);
        assert_eq!(
            r.select_attr("a[rel=next]", "href").as_deref(),
            Some("/audit?actor=TOKEN+ROBOT&page=2"),
            "the next page keeps the filters"
        );
        let r = app.web.get("/audit?actor=TOKEN+ROBOT&page=2").await;
        assert_eq!(r.select_all("#audit-table tbody tr").len(), 3);
        assert_eq!(r.select_attr("a[rel=prev]", "href").as_deref(), Some("/audit?actor=TOKEN+ROBOT&page=1"));
        assert_eq!(r.select_attr("#audit-actor", "value").as_deref(), Some("TOKEN ROBOT"));
        // A LIKE wildcard is taken literally.
        assert_eq!(app.web.get("/audit?actor=%25").await.select_all("#audit-table tbody tr").len(), 0);

        // By time: inclusive bounds, to the millisecond; the exact time on hover.
        let created = times(&app, "token.created").await[0];
        let exact = |ms: i64| agenticos::web::filters::timestamp_utc(&ms);
        let r = app.web.get(&format!("/audit?event=token.created&from={created}&to={created}")).await;
        assert_eq!(r.select_all("#audit-table tbody tr").len(), 1);
        assert_eq!(r.select_attr("#audit-table time", "title"), Some(exact(created)));
        assert_eq!(r.select_text("#audit-table time"), Some(agenticos::web::filters::datetime_seconds(&created)));
        let r = app.web.get(&format!("/audit?event=token.created&to={}", created - 1)).await;
        assert!(r.select_all("#audit-table tbody tr").is_empty());
        assert!(r.select_text("#audit-empty h2").is_some_and(|h| h.contains("matches these filters")));
        let r = app.web.get("/audit?to=2000-01-01").await;
        assert!(r.select_all("#audit-table tbody tr").is_empty());
        let r = app.web.get("/audit?from=2000-01-01+00%3A00&event=organization.created").await;
        assert_eq!(r.select_all("#audit-table tbody tr").len(), 1);

        // Refused filters: 422, each at its field, all at once, the first focused.
        let r = app.web.get("/audit?event=member.eaten&from=soon&to=2000-01-01").await;
        assert_eq!(r.status, 422);
        assert_eq!(r.field_error("audit-event").as_deref(), Some("Choose an event from the list."));
        assert!(r.field_error("audit-from").is_some_and(|m| m.contains("UTC")));
        assert!(r.field_error("audit-actor").is_none());
        assert_eq!(r.select_attr("#audit-event", "autofocus").as_deref(), Some(""));
        assert!(r.select_text("#audit-refused").is_some());
        assert!(r.select_all("#audit-table").is_empty());
        let r = app.web.get("/audit?from=2030-01-01&to=2020-01-01").await;
        assert_eq!(r.field_error("audit-to").as_deref(), Some("The end is before the start."));

        // The same filters in the API.
        let api = app.web.bearer(&t, Method::GET, "/api/v1/audit-events?actor=token%20robot&page=2", None).await.json();
        assert_eq!(api["items"].as_array().map(Vec::len), Some(3));
        let api = app.web.bearer(&t, Method::GET, "/api/v1/audit-events?event=vault.secret_created&from=2000-01-01T00:00:00Z", None).await.json();
        assert_eq!(api["items"].as_array().map(Vec::len), Some(50));
        assert_eq!(api["has_next"], true);
        assert!(api["items"].as_array().is_some_and(|a| a.iter().all(|e| e["action"] == "vault.secret_created")));
        let r = app.web.bearer(&t, Method::GET, "/api/v1/audit-events?event=nope&to=later", None).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), ["event", "to"]);
        let r = app.web.bearer(&t, Method::GET, "/api/v1/audit-events?from=2030-01-01&to=2020-01-01", None).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), ["to"]);
    }
}

/// Every event code written anywhere in `src/` has its readable name in the one table (and so is
/// in the log page's Event list and accepted by its filter): every literal shaped
/// `subject.what_happened`, whatever its subject, is taken for a code unless it is a file name or
/// a column of a one-letter SQL alias.
#[test]
fn every_recorded_event_has_a_name() {
    const FILE_ENDINGS: [&str; 5] = ["json", "version", "ndjson", "csv", "goog"];
    let is_word = |w: &str| !w.is_empty() && w.chars().all(|c| c.is_ascii_lowercase() || c == '_');
    let mut missing = Vec::new();
    for f in source_files() {
        let text = std::fs::read_to_string(&f).expect("read");
        // Unit tests name made-up events on purpose.
        let text = text.split("#[cfg(test)]").next().unwrap_or_default();
        for literal in text.split('"').skip(1).step_by(2) {
            let Some((subject, what)) = literal.split_once('.') else { continue };
            let is_code = is_word(subject) && is_word(what) && subject.len() > 1 && !FILE_ENDINGS.contains(&what);
            if is_code && !agenticos::audit::events::is_known(literal) {
                missing.push(format!("{literal} ({})", f.display()));
            }
        }
    }
    assert!(missing.is_empty(), "audit events without a name in src/audit/events.rs: {missing:?}");
}

db_test! {
    async fn closing_a_sandbox_session_can_be_chosen_in_the_event_list_and_filtered(app: TestApp) {
        app.setup_owner().await;
        let t = app.web.create_token_in_page("t", "owner").await;
        for (code, name) in [
            ("sandbox_session.closed", "Sandbox session closed"),
            ("sandbox_session.files_deleted", "Sandbox session closed and its files deleted"),
        ] {
            let page = app.web.get(&format!("/audit?event={code}")).await;
            assert_eq!(page.status, 200, "{code}: {}", page.body);
            assert!(page.field_error("audit-event").is_none(), "{code} is a choice, not an error: {}", page.body);
            let option = page.select_text(&format!("select[name=event] option[value=\"{code}\"]"));
            assert_eq!(option.as_deref(), Some(name), "{code} is in the Event list");
            let api = app.web.bearer(&t, Method::GET, &format!("/api/v1/audit-events?event={code}"), None).await;
            assert_eq!(api.status, 200, "{code}: {}", api.body);
            assert_eq!(api.json()["items"].as_array().map(Vec::len), Some(0));
        }
    }
}
