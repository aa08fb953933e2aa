use crate::db_test;
use crate::helpers::TestApp;
use crate::support::metrics::pending_delete;

db_test! {
    async fn healthz_and_readyz_answer_without_authentication(app: TestApp) {
        let r = app.web.get("/healthz").await;
        assert_eq!(r.status, 200);
        assert_eq!(r.json()["status"], "ok");
        let r = app.web.get("/readyz").await;
        assert_eq!(r.status, 200);
        assert_eq!(r.json()["database"], "ok");
    }
}

db_test! {
    async fn every_response_carries_the_security_headers(app: TestApp) {
        for path in ["/healthz", "/login", "/setup", "/nope", "/api/v1/me", "/static/css/app.css"] {
            let r = app.web.get(path).await;
            let csp = r.header("content-security-policy").unwrap_or_else(|| panic!("{path}: no CSP"));
            assert!(csp.contains("frame-ancestors 'none'"), "{path}: {csp}");
            assert!(csp.contains("script-src 'self'"), "{path}: {csp}");
            assert!(!csp.contains("unsafe-inline"), "{path}: {csp}");
            assert_eq!(r.header("x-content-type-options").as_deref(), Some("nosniff"), "{path}");
            assert!(r.header("referrer-policy").is_some(), "{path}");
            assert!(r.header("x-request-id").is_some_and(|v| v.len() == 32), "{path}");
        }
    }
}

db_test! {
    async fn an_unknown_page_is_a_404_page_and_an_unknown_api_route_a_problem(app: TestApp) {
        let r = app.web.get("/does-not-exist").await;
        assert_eq!(r.status, 404);
        assert!(r.body.contains("There is no page at this address."));
        let r = app.web.get("/api/v1/does-not-exist").await;
        let p = r.problem(404);
        assert!(p["detail"].as_str().is_some_and(|d| d.contains("/api/v1/does-not-exist")));
    }
}

/// A failed workspace operation of `org_id`, `ago_ms` ago.
pub(crate) async fn failed_operation(app: &TestApp, org_id: &str, ago_ms: i64) {
    let at = agenticos::db::now_ms() - ago_ms;
    app.execute(&format!(
        "INSERT INTO sandbox_operations (id, organization_id, workspace_id, session_key, connection_id, agent_id, \
         run_id, operation, target, ok, detail, duration_ms, created_at, seq) VALUES ('{}', '{org_id}', NULL, 's', \
         NULL, NULL, NULL, 'read', '/workspace/x', 0, 'No such file', 3, {at}, {at})",
        uuid::Uuid::new_v4()
    ))
    .await;
}

/// A pending delete on `connection` whose last attempt failed (as the sweep leaves one).
pub(crate) async fn failing_tombstone(app: &TestApp, org_id: &str, connection: &str) {
    let now = agenticos::db::now_ms();
    pending_delete(app, org_id, connection, Some("The sandbox service did not answer"), now + 120_000).await;
}

db_test! {
    async fn the_health_route_answers_the_callers_connections_pending_deletes_sweeps_and_failures(app: TestApp) {
        use crate::support::Org;
        let peer = crate::peer::shared().await;
        let o = Org::new(&app).await;
        // Written first: it is the organization's default, which one connection is.
        let idle = app.insert_idle_sandboxd_connection("never asked").await;
        let checked = o.connect(peer).await;
        failed_operation(&app, &o.org_id, 60_000).await;
        failed_operation(&app, &o.org_id, 2 * 3_600_000).await;

        // All well: the saved host was checked at its save, the other not yet asked.
        agenticos::monitoring::sweeps::operation_log(&app.state, agenticos::db::now_ms()).await;
        let h = o.call(reqwest::Method::GET, "/api/v1/health", None).await;
        assert_eq!(h.status, 200, "{}", h.body);
        let h = h.json();
        assert_eq!(h["ok"], true, "{h}");
        let state = |id: &str| h["connections"].as_array().and_then(|cs| cs.iter().find(|c| c["id"] == id).cloned());
        assert_eq!(state(&checked).map(|c| c["state"].clone()), Some(serde_json::json!("healthy")), "{h}");
        assert_eq!(state(&idle).map(|c| c["state"].clone()), Some(serde_json::Value::Null), "{h}");
        assert_eq!(h["failed_operations_last_hour"], 1, "the older failure is outside the hour: {h}");
        assert_eq!(h["tombstones_pending"], 0);
        let sweeps = h["sweeps"].as_array().cloned().unwrap_or_default();
        assert!(sweeps.iter().any(|s| s["sweep"] == "operation-log-retention" && s["ok"] == true), "{h}");

        // A delete that keeps failing at its host makes it not OK, on that connection.
        failing_tombstone(&app, &o.org_id, &checked).await;
        let h = o.call(reqwest::Method::GET, "/api/v1/health", None).await.json();
        assert_eq!(h["ok"], false, "{h}");
        assert_eq!(h["tombstones_pending"], 1);
        assert_eq!(h["connections_with_failed_deletes"], 1);
        let c = h["connections"].as_array().and_then(|cs| cs.iter().find(|c| c["id"] == checked.as_str()).cloned());
        assert_eq!(c.map(|c| c["pending"]["count"].clone()), Some(serde_json::json!(1)), "{h}");

        // Another organization sees none of it.
        let other = app.other_org_user("other@example.com", "Other Org").await;
        let theirs = other.get("/api/v1/health").await;
        assert_eq!(theirs.status, 200, "{}", theirs.body);
        let theirs = theirs.json();
        assert_eq!(theirs["connections"], serde_json::json!([]), "{theirs}");
        assert_eq!(theirs["tombstones_pending"], 0);
        assert_eq!(theirs["failed_operations_last_hour"], 0);
        assert_eq!(theirs["ok"], true);
        assert!(!theirs.to_string().contains(&checked), "{theirs}");

        // A member may not see sandboxes.
        let member = app.member_with_role("member@example.com", "member").await;
        member.get("/api/v1/health").await.problem(403);
    }
}

db_test! {
    async fn home_answers_is_everything_ok_with_links_to_where_each_problem_is_fixed(app: TestApp) {
        use crate::support::Org;
        let peer = crate::peer::shared().await;
        let o = Org::new(&app).await;
        let idle = app.insert_idle_sandboxd_connection("never asked").await;
        let checked = o.connect(peer).await;

        let home = app.web.get("/").await;
        assert_eq!(home.status, 200);
        // The capacity cards ask the hosts now: the one never checked does not answer there, so
        // the verdict is not "Yes" beside that card, and names it (issue 49).
        let card = home.select_text(&format!("#capacity-{idle} .capacity-problem")).expect("the card's problem");
        let verdict = home.select_text("#health-verdict").expect("the verdict");
        assert!(verdict.starts_with("Not quite"), "{verdict} beside {card}");
        assert!(home.select_text(&format!("#health-unreadable-{idle}")).is_some(), "the unreadable host is named");
        let hosts = home.select_text("#health-hosts").expect("hosts");
        assert!(hosts.contains("1 healthy") && hosts.contains("1 not checked yet"), "{hosts}");
        assert_eq!(home.select_attr("#health-hosts", "href").as_deref(), Some("/sandboxes"));

        failing_tombstone(&app, &o.org_id, &checked).await;
        failed_operation(&app, &o.org_id, 60_000).await;
        app.state.sweeps.record(agenticos::instruments::SweepRun {
            sweep: agenticos::instruments::SWEEP_SIGN_INS,
            at: agenticos::db::now_ms(),
            ok: false,
            removed: 0,
            problem: Some("Expired sign-ins could not be swept (the server log has why).".into()),
        });
        let home = app.web.get("/").await;
        let verdict = home.select_text("#health-verdict").expect("the verdict");
        assert!(verdict.starts_with("Not quite"), "{verdict}");
        let deletes = home.select_text("#health-deletes").expect("pending deletes");
        assert!(deletes.contains('1') && deletes.contains("failing on 1 host"), "{deletes}");
        assert_eq!(home.select_attr("#health-deletes", "href").as_deref(), Some("/sandboxes"));
        let failed = home.select_text("#health-failed-operations .stat-value").expect("failed operations");
        assert_eq!(failed.trim(), "1");
        let link = home.select_attr("#health-failed-operations", "href").expect("a link");
        assert_eq!(link, "/sandboxes/activity?failed_only=true");
        let activity = app.web.get(&link).await;
        assert_eq!(activity.status, 200, "the link leads to the failed operations");
        let sweep = home.select_text("#health-sweep-sign-in-expiry").expect("the failed sweep");
        assert!(sweep.contains("could not be swept"), "{sweep}");

        // A member's Home has no such section (it may not see sandboxes).
        let member = app.member_with_role("member@example.com", "member").await;
        let theirs = member.get("/").await;
        assert_eq!(theirs.status, 200);
        assert!(theirs.select_text("#everything-ok").is_none());
    }
}
