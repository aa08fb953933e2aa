//! Issue 30: Home's Getting started follows what the organization has done — each role its own
//! steps, a step marked done once there is a host, an agent, a run, a second member or a live API
//! token, the first one left marked "Next" (on SQLite and PostgreSQL).

use crate::db_test;
use crate::helpers::Resp;

/// `(id, class, badge)` of each Getting started step on `home`.
fn steps(home: &Resp) -> Vec<(String, String, String)> {
    let html = home.html();
    let li = scraper::Selector::parse("#getting-started li").expect("selector");
    let badge = scraper::Selector::parse(".badge").expect("selector");
    html.select(&li)
        .map(|e| {
            let attr = |a: &str| e.value().attr(a).unwrap_or_default().to_string();
            let b = e.select(&badge).next().map(|b| b.text().collect::<String>()).unwrap_or_default();
            (attr("id"), attr("class"), b.trim().to_string())
        })
        .collect()
}

fn ids_done(home: &Resp) -> Vec<(String, bool)> {
    steps(home).into_iter().map(|(id, class, _)| (id, class == "step-done")).collect()
}

db_test! {
    async fn getting_started_marks_what_is_done_for_each_role(app: TestApp) {
        app.setup_owner().await;
        let home = app.web.get("/").await;
        assert_eq!(home.select_text("#getting-started-count").as_deref(), Some("0 of 5 done."));
        let s = steps(&home);
        let ids: Vec<&str> = s.iter().map(|(id, _, _)| id.as_str()).collect();
        assert_eq!(ids, ["start-host", "start-agent", "start-run", "start-team", "start-token"]);
        assert_eq!(s[0].2, "Next");
        assert!(s[1..].iter().all(|(_, class, badge)| class == "step-todo" && badge == "To do"), "{s:?}");

        // A host, then a second member: both marked done, the agent next.
        app.insert_idle_sandboxd_connection("idle").await;
        let member = app.member_with_role("mia@example.com", "member").await;
        let home = app.web.get("/").await;
        assert_eq!(home.select_text("#getting-started-count").as_deref(), Some("2 of 5 done."));
        assert_eq!(
            ids_done(&home),
            [("start-host", true), ("start-agent", false), ("start-run", false), ("start-team", true), ("start-token", false)]
                .map(|(i, d)| (i.to_string(), d))
        );
        assert_eq!(steps(&home)[1].2, "Next");

        // A revoked or expired token does not count; a live one does.
        let now = agenticos::db::now_ms();
        let org = app.scalar_strings("SELECT id FROM organizations").await.remove(0);
        for (i, (revoked, expires)) in [("1", "NULL"), ("NULL", "1")].iter().enumerate() {
            app.execute(&format!(
                "INSERT INTO api_tokens (id, organization_id, name, prefix, token_hash, role, created_at, revoked_at, expires_at) \
                 VALUES ('t{i}', '{org}', 'old {i}', 'p{i}', 'h{i}', 'operator', {now}, {revoked}, {expires})"
            ))
            .await;
        }
        assert!(!ids_done(&app.web.get("/").await)[4].1, "a revoked or expired token is not a live one");
        app.web.create_token_in_page("runtime", "operator").await;
        assert!(ids_done(&app.web.get("/").await)[4].1);

        // A member's list is the step they take: a first run.
        let home = member.get("/").await;
        assert_eq!(ids_done(&home), [("start-run".to_string(), false)]);
        assert_eq!(home.select_text("#getting-started-count").as_deref(), Some("0 of 1 done."));
    }
}
