//! Each host's last known state is kept and refreshed by the background check (issue 49): the
//! health report and Home read it ("not checked yet" only before the first check), and replicas
//! sharing a database share the work (each due host is asked by one of them).

use std::time::Duration;

use agenticos::sandbox::connections::checks;
use reqwest::Method;

use crate::db_test;
use crate::support::Org;

const INTERVAL: Duration = Duration::from_secs(30);

/// The connection `id`'s entry in the health report.
fn entry(h: &serde_json::Value, id: &str) -> serde_json::Value {
    h["connections"].as_array().and_then(|cs| cs.iter().find(|c| c["id"] == id).cloned()).unwrap_or_default()
}

db_test! {
    async fn not_checked_yet_lasts_only_until_the_first_check_which_is_kept_with_its_time(app: TestApp) {
        let o = Org::new(&app).await;
        // A host nobody asked: its address refuses connections.
        let idle = app.insert_idle_sandboxd_connection("never asked").await;
        let h = o.call(Method::GET, "/api/v1/health", None).await.json();
        assert_eq!(entry(&h, &idle)["state"], serde_json::Value::Null, "{h}");
        let home = app.web.get("/").await;
        assert!(home.select_text("#health-hosts").is_some_and(|t| t.contains("1 not checked yet")));

        let now = agenticos::db::now_ms();
        let round = checks::round(&app.state, now, INTERVAL).await.expect("a round");
        assert_eq!(round, checks::Round { checked: 1, skipped: 0 });
        let h = o.call(Method::GET, "/api/v1/health", None).await.json();
        let e = entry(&h, &idle);
        assert_eq!(e["state"], "no_answer", "{h}");
        assert_eq!((e["checked_at"].as_i64(), e["since"].as_i64()), (Some(now), Some(now)), "{h}");
        assert_eq!(h["ok"], false, "{h}");
        let home = app.web.get("/").await;
        let hosts = home.select_text("#health-hosts").unwrap_or_default();
        assert!(hosts.contains("1 no answer") && !hosts.contains("not checked yet"), "{hosts}");
        assert!(home.select_text("#health-verdict").is_some_and(|v| v.starts_with("Not quite")));
        assert!(home.select_text(&format!("#health-connection-{idle}")).is_some(), "the problem is named");

        // Long after (the 30 s cache of old is long gone), the state is still what was found: a
        // later check keeps `since` and moves `checked_at`.
        let later = now + INTERVAL.as_millis() as i64;
        checks::round(&app.state, later, INTERVAL).await.expect("a round");
        let h = o.call(Method::GET, "/api/v1/health", None).await.json();
        let e = entry(&h, &idle);
        assert_eq!((e["state"].as_str(), e["checked_at"].as_i64(), e["since"].as_i64()), (Some("no_answer"), Some(later), Some(now)), "{h}");

        // Another organization sees none of it.
        let other = app.other_org_user("other@example.com", "Other Org").await;
        let theirs = other.get("/api/v1/health").await.json();
        assert_eq!(theirs["connections"], serde_json::json!([]), "{theirs}");
    }
}

db_test! {
    async fn replicas_sharing_a_database_ask_each_due_host_once_a_check_interval(app: TestApp) {
        let o = Org::new(&app).await;
        let a = app.insert_idle_sandboxd_connection("first").await;
        // One default a organization: the helper writes each as the default.
        app.execute(&format!("UPDATE sandbox_connections SET is_default = 0 WHERE id = '{a}'")).await;
        let b = app.insert_idle_sandboxd_connection("second").await;
        let now = agenticos::db::now_ms();
        // Three replicas' rounds at once: every host is asked by exactly one of them.
        let (r1, r2, r3) = tokio::join!(
            checks::round(&app.state, now, INTERVAL),
            checks::round(&app.state, now, INTERVAL),
            checks::round(&app.state, now, INTERVAL),
        );
        let rounds = [r1.expect("round"), r2.expect("round"), r3.expect("round")];
        assert_eq!(rounds.iter().map(|r| r.checked).sum::<usize>(), 2, "{rounds:?}");
        assert_eq!(rounds.iter().map(|r| r.skipped).sum::<usize>(), 4, "{rounds:?}");
        // Not due again before the interval (less its slack), due after it.
        let early = now + (INTERVAL - checks::slack(INTERVAL)).as_millis() as i64 - 1;
        assert_eq!(checks::round(&app.state, early, INTERVAL).await.expect("round").checked, 0);
        let due = now + INTERVAL.as_millis() as i64;
        assert_eq!(checks::round(&app.state, due, INTERVAL).await.expect("round").checked, 2);
        // A claim another replica holds (it crashed mid-check) is waited out, then taken over.
        app.execute(&format!("UPDATE sandbox_host_checks SET claimed_until = {} WHERE connection_id = '{a}'", due + 90_000))
            .await;
        let next = due + INTERVAL.as_millis() as i64;
        assert_eq!(checks::round(&app.state, next, INTERVAL).await.expect("round").checked, 1, "only {b}");
        let after = due + 90_000;
        assert_eq!(checks::round(&app.state, after, INTERVAL).await.expect("round").checked, 2);
        let h = o.call(Method::GET, "/api/v1/health", None).await.json();
        assert_eq!(entry(&h, &a)["checked_at"].as_i64(), Some(after), "{h}");
    }
}

db_test! {
    async fn a_switched_off_host_is_not_asked_and_is_no_problem(app: TestApp) {
        let o = Org::new(&app).await;
        let idle = app.insert_idle_sandboxd_connection("off").await;
        app.execute(&format!("UPDATE sandbox_connections SET is_enabled = 0 WHERE id = '{idle}'")).await;
        let round = checks::round(&app.state, agenticos::db::now_ms(), INTERVAL).await.expect("a round");
        assert_eq!(round, checks::Round::default());
        let h = o.call(Method::GET, "/api/v1/health", None).await.json();
        assert_eq!(entry(&h, &idle)["state"], "switched_off", "{h}");
        assert_eq!(h["ok"], true, "{h}");
    }
}
